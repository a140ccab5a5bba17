//! The host side of `bosun:plugin/host@1.0.0` (`log`, `config`, `is-cancelled`) and the bounded
//! buffers that capture a plugin's stdout and stderr.
//!
//! Everything here is per instance and fixed by the grants; nothing reaches outside the store.
//! Logs are bounded per call (line length and line count) and the excess is counted, never
//! buffered.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::wit::v1::bosun::plugin::host;

/// Severity of a plugin log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal progress.
    Info,
    /// Something unexpected that the plugin handled.
    Warn,
    /// Something failed.
    Error,
}

/// The level's lowercase word (`trace`, `debug`, `info`, `warn`, `error`), as a run's log
/// shows it.
impl std::fmt::Display for LogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Trace => "trace",
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        })
    }
}

/// One line a plugin logged during a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Its severity.
    pub level: LogLevel,
    /// The message, cut to the line bound.
    pub message: String,
    /// Whether the message was cut.
    pub truncated: bool,
}

/// What the current call may still do: its deadline and cancellation.
#[derive(Debug, Clone)]
pub(crate) struct CallClock {
    pub(crate) deadline: Instant,
    pub(crate) cancel: CancellationToken,
}

impl CallClock {
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }
}

/// Per-instance state behind `bosun:plugin/host`.
#[derive(Debug)]
pub(crate) struct HostState {
    config: BTreeMap<String, String>,
    max_line_bytes: usize,
    max_lines: usize,
    pub(crate) logs: Vec<LogLine>,
    pub(crate) dropped_logs: usize,
    pub(crate) clock: Option<CallClock>,
}

impl HostState {
    pub(crate) fn new(
        config: BTreeMap<String, String>,
        max_line_bytes: usize,
        max_lines: usize,
    ) -> Self {
        Self {
            config,
            max_line_bytes,
            max_lines,
            logs: Vec::new(),
            dropped_logs: 0,
            clock: None,
        }
    }
}

impl host::Host for HostState {
    fn log(&mut self, level: host::LogLevel, message: String) {
        if self.logs.len() >= self.max_lines {
            self.dropped_logs = self.dropped_logs.saturating_add(1);
            return;
        }
        let (message, truncated) = truncate_at_char_boundary(message, self.max_line_bytes);
        self.logs.push(LogLine {
            level: level.into(),
            message,
            truncated,
        });
    }

    fn config(&mut self, key: String) -> Option<String> {
        self.config.get(&key).cloned()
    }

    fn is_cancelled(&mut self) -> bool {
        self.clock.as_ref().is_some_and(CallClock::is_cancelled)
    }
}

impl From<host::LogLevel> for LogLevel {
    fn from(level: host::LogLevel) -> Self {
        match level {
            host::LogLevel::Trace => Self::Trace,
            host::LogLevel::Debug => Self::Debug,
            host::LogLevel::Info => Self::Info,
            host::LogLevel::Warn => Self::Warn,
            host::LogLevel::Error => Self::Error,
        }
    }
}

/// Cuts `s` to at most `max` bytes without splitting a character.
fn truncate_at_char_boundary(mut s: String, max: usize) -> (String, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    (s, true)
}

/// A stdout/stderr sink that keeps the first `capacity` bytes and counts the rest.
///
/// Unlike wasmtime's `MemoryOutputPipe`, writing past the capacity never traps the guest: a
/// chatty plugin is bounded, not crashed.
#[derive(Debug, Clone)]
pub(crate) struct BoundedPipe {
    capacity: usize,
    inner: Arc<Mutex<PipeBuffer>>,
}

#[derive(Debug, Default)]
struct PipeBuffer {
    kept: Vec<u8>,
    dropped: usize,
}

impl BoundedPipe {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Arc::default(),
        }
    }

    fn append(&self, bytes: &[u8]) {
        let mut buf = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let room = self.capacity.saturating_sub(buf.kept.len());
        let keep = room.min(bytes.len());
        buf.kept.extend_from_slice(&bytes[..keep]);
        buf.dropped = buf.dropped.saturating_add(bytes.len() - keep);
    }

    /// Takes what was captured since the last call, as text, and how many bytes were dropped.
    pub(crate) fn take(&self) -> (String, usize) {
        let mut buf = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = std::mem::take(&mut *buf);
        (
            String::from_utf8_lossy(&taken.kept).into_owned(),
            taken.dropped,
        )
    }
}

impl IsTerminal for BoundedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for BoundedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// Writes are accepted in chunks of this size at most, so a guest cannot make the host copy a
/// huge buffer at once.
const PIPE_WRITE_CHUNK: usize = 64 << 10;

impl OutputStream for BoundedPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(PIPE_WRITE_CHUNK)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for BoundedPipe {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for BoundedPipe {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.append(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use wasmtime_wasi::p2::OutputStream;

    #[test]
    fn log_lines_are_cut_at_a_char_boundary() {
        let (s, cut) = truncate_at_char_boundary("aé".repeat(3), 4);
        assert_eq!((s.as_str(), cut), ("aéa", true));
        let (s, cut) = truncate_at_char_boundary("short".to_owned(), 4096);
        assert_eq!((s.as_str(), cut), ("short", false));
    }

    #[test]
    fn log_flood_is_counted_and_dropped() {
        use host::Host;
        let mut state = HostState::new(BTreeMap::new(), 8, 3);
        for i in 0..10 {
            state.log(host::LogLevel::Info, format!("line {i} and more"));
        }
        assert_eq!(state.logs.len(), 3);
        assert_eq!(state.dropped_logs, 7);
        assert_eq!(state.logs[0].message, "line 0 a");
        assert!(state.logs[0].truncated);
    }

    #[test]
    fn pipe_keeps_capacity_and_counts_the_rest() {
        let mut pipe = BoundedPipe::new(4);
        pipe.write(Bytes::from_static(b"abc")).unwrap();
        pipe.write(Bytes::from_static(b"defg")).unwrap();
        assert_eq!(pipe.take(), ("abcd".to_owned(), 3));
        assert_eq!(pipe.take(), (String::new(), 0));
    }
}
