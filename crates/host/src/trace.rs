//! Run traces: `$BOSUN_HOME/runs/<run-id>.jsonl`, one [`Envelope`] per line (trace schema
//! version [`TRACE_SCHEMA_VERSION`]). Secret values are redacted before an event is written or
//! handed to an observer; nothing unredacted leaves this module.
//!
//! Lines are kept in memory and written with one `write` for many of them. What reaches the
//! kernel when (the durability contract, docs/security.md):
//! - every line of a call before the call's result leaves the host — the agent loop writes
//!   before each model request, `serve` before each response, `tools call` and the terminal
//!   before they show it ([`Trace::flush`]);
//! - at the end of a call that took [`Trace::write_delay`] (1 ms) or longer, or once the
//!   oldest line waiting is that old, or 64 KiB wait;
//! - when the trace is finished or dropped (also while a panic unwinds).
//!
//! So a crash never loses a line of a call whose result anyone was given; it can lose the
//! calls whose results were not handed out yet, as it always could lose the call in flight.
//!
//! Recording is on every call's path, so a line is encoded by hand (`line.rs`) from borrowed
//! fields straight into the buffer of lines not written yet, with the time formatted from a
//! per-second prefix; the four events of every call ([`Trace::record_call`]) are borrowed from
//! the call itself. An owned [`Envelope`] is built only for observers or when a line holds a
//! secret. Whichever way, the line is the one serialising the envelope writes (tested).

mod line;
mod render;
mod runs;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bosun_core::{Envelope, Event, Redactor, TRACE_SCHEMA_VERSION};
use chrono::Utc;

pub use render::{EMPTY, Labels, Timeline, render};
pub use runs::{Envelopes, children_of, envelopes, find_run, read_run};

/// A trace that could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Creating or writing the trace file failed.
    #[error("cannot write the run trace {path}: {source}; check that $BOSUN_HOME is writable")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Reading a trace failed.
    #[error("cannot read the run trace {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not a trace envelope.
    #[error(
        "{path}:{line}: not a Bosun trace line ({message}); the file is damaged or from a newer Bosun"
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// No run with that id, or no runs at all.
    #[error("{0}")]
    NotFound(String),
}

/// Receives every event of a run, already redacted.
pub trait Observer: Send + Sync {
    /// Called once per event, in order.
    fn observe(&self, envelope: &Envelope);

    /// Whether this observer takes recorded events as the lines the trace writes
    /// ([`Observer::observe_line`]) instead: no envelope is built for it. Live events still
    /// come through [`Observer::observe`].
    fn reads_lines(&self) -> bool {
        false
    }

    /// A recorded event as the trace wrote it (one JSON envelope, redacted, no newline), for an
    /// observer that [`reads_lines`](Observer::reads_lines). Called under the trace's lock, in
    /// order: it must only copy the bytes.
    fn observe_line(&self, _line: &[u8]) {}

    /// A subagent's run `run_id`, whose events this observer will get too (marked by that run
    /// id), runs in `session`: an observer that hands events to a plugin labels them with the
    /// session that recorded them, not the one it was made for.
    fn child_run(&self, _run_id: &str, _session: std::sync::Arc<dyn crate::labels::Reader>) {}
}

struct Writer {
    file: Option<File>,
    /// Lines not written to the file yet (a call's lines until the call ends), each encoded in
    /// place at the end, so recording allocates nothing and a call costs one `write`.
    pending: Vec<u8>,
    sequence: u64,
    error: Option<std::io::Error>,
    clock: Clock,
    /// When the oldest line in `pending` was recorded, and when the newest.
    oldest: Option<Timestamp>,
    newest: Timestamp,
}

/// Lines kept before they are written whatever else holds (a burst of calls, a long stretch of
/// other events).
const PENDING_LIMIT: usize = 64 * 1024;

/// How long a finished call's lines may wait for the calls after it before they are written
/// (unless its result is handed out first, which writes them).
pub const DEFAULT_WRITE_DELAY: Duration = Duration::from_millis(1);

impl Writer {
    fn new(file: Option<File>) -> Self {
        Self {
            file,
            // A call's four lines fit; it grows for larger ones and keeps what it grew to.
            pending: Vec::with_capacity(8 * 1024),
            sequence: 0,
            error: None,
            clock: Clock::default(),
            oldest: None,
            newest: Timestamp { secs: 0, nanos: 0 },
        }
    }

    /// How long the oldest line waiting has waited, as of the newest.
    fn waited(&self) -> Duration {
        self.oldest
            .map_or(Duration::ZERO, |oldest| self.newest.since(oldest))
    }

    /// Writes the pending lines to the file in one `write` (from then on the kernel holds
    /// them, whatever becomes of this process).
    fn write_out(&mut self) {
        if let Some(file) = self.file.as_mut()
            && !self.pending.is_empty()
        {
            if let Err(e) = file.write_all(&self.pending) {
                self.error.get_or_insert(e);
            }
            self.pending.clear();
        }
        self.oldest = None;
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.write_out();
    }
}

/// An event to record: owned, or one of a call's own events borrowed from the call.
enum Recorded<'a> {
    Owned(Event),
    Call(CallEvent<'a>),
}

impl Recorded<'_> {
    fn into_event(self) -> Event {
        match self {
            Recorded::Owned(event) => event,
            Recorded::Call(event) => event.to_event(),
        }
    }
}

/// The four events of every tool call, borrowed: the same tags, fields and order as their
/// [`Event`] variants, so a line is the same whichever records it (tested).
#[derive(Debug, Clone, Copy)]
pub(crate) enum CallEvent<'a> {
    Proposed {
        call_id: &'a str,
        tool: &'a str,
        input: &'a serde_json::Value,
    },
    Decided {
        call_id: &'a str,
        tool: &'a str,
        action: &'a str,
        capabilities: &'a [bosun_core::CapabilityRequest],
        explanation: &'a bosun_core::Explanation,
    },
    Started {
        call_id: &'a str,
        tool: &'a str,
    },
    Completed {
        call_id: &'a str,
        tool: &'a str,
        output: &'a serde_json::Value,
        truncated: bool,
        duration_us: u64,
    },
}

impl CallEvent<'_> {
    fn to_event(self) -> Event {
        match self {
            CallEvent::Proposed {
                call_id,
                tool,
                input,
            } => Event::ToolProposed {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                input: input.clone(),
            },
            CallEvent::Decided {
                call_id,
                tool,
                action,
                capabilities,
                explanation,
            } => Event::ToolDecided {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                action: action.to_owned(),
                capabilities: capabilities.to_vec(),
                explanation: explanation.clone(),
            },
            CallEvent::Started { call_id, tool } => Event::ToolStarted {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
            },
            CallEvent::Completed {
                call_id,
                tool,
                output,
                truncated,
                duration_us,
            } => Event::ToolCompleted {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                output: output.clone(),
                truncated,
                duration_us,
            },
        }
    }
}

/// A moment read from the system clock, as whole seconds since 1970 and nanoseconds.
#[derive(Debug, Clone, Copy)]
struct Timestamp {
    secs: i64,
    nanos: u32,
}

impl Timestamp {
    fn now() -> Self {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self {
            secs: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
            nanos: since.subsec_nanos(),
        }
    }

    /// The time from `earlier` to this moment; zero if the clock went back.
    fn since(self, earlier: Timestamp) -> Duration {
        let this = Duration::new(u64::try_from(self.secs).unwrap_or(0), self.nanos);
        let then = Duration::new(u64::try_from(earlier.secs).unwrap_or(0), earlier.nanos);
        this.saturating_sub(then)
    }

    fn utc(self) -> chrono::DateTime<Utc> {
        chrono::DateTime::from_timestamp(self.secs, self.nanos).unwrap_or_default()
    }
}

/// Formats timestamps exactly as serialising a `chrono::DateTime<Utc>` does (RFC 3339, `Z`,
/// no fraction or 3, 6 or 9 digits, whichever is shortest and exact), computing the calendar
/// part once per second.
#[derive(Default)]
struct Clock {
    second: Option<i64>,
    text: String,
    /// Length of the whole-second part of `text`.
    prefix: usize,
}

impl Clock {
    fn format(&mut self, at: Timestamp) -> &str {
        if self.second != Some(at.secs) {
            // chrono's own RFC 3339 writer for the whole second (whatever the year's width),
            // without its `Z`.
            let whole = Timestamp { nanos: 0, ..at }.utc();
            self.text = whole.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            self.text.pop();
            self.prefix = self.text.len();
            self.second = Some(at.secs);
        }
        self.text.truncate(self.prefix);
        let nanos = at.nanos;
        let (value, digits) = if nanos == 0 {
            (0, 0)
        } else if nanos.is_multiple_of(1_000_000) {
            (nanos / 1_000_000, 3)
        } else if nanos.is_multiple_of(1_000) {
            (nanos / 1_000, 6)
        } else {
            (nanos, 9)
        };
        if digits > 0 {
            let mut fraction = [b'0'; 9];
            let mut rest = value;
            for slot in fraction[..digits].iter_mut().rev() {
                *slot = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            self.text.push('.');
            self.text
                .push_str(std::str::from_utf8(&fraction[..digits]).unwrap_or_default());
        }
        self.text.push('Z');
        &self.text
    }
}

/// The trace of one run.
pub struct Trace {
    run_id: String,
    parent_run_id: Option<String>,
    path: Option<PathBuf>,
    redactor: Arc<Redactor>,
    observers: Vec<Arc<dyn Observer>>,
    /// Those of `observers` that take recorded events as lines, and those that take envelopes.
    line_observers: Vec<Arc<dyn Observer>>,
    typed_observers: Vec<Arc<dyn Observer>>,
    writer: Mutex<Writer>,
    info: Arc<RunInfo>,
    /// Every line's bytes up to its sequence number (the run's part, encoded once).
    prefix: Vec<u8>,
    write_delay: Duration,
}

/// What a tool call may know of the run it belongs to (a subagent's trace goes beside it, and
/// its events reach the same observers — the terminal shows a running child).
pub struct RunInfo {
    /// The run.
    pub run_id: String,
    /// The run that started it, for a subagent's.
    pub parent_run_id: Option<String>,
    /// Where its trace is written, if anywhere.
    pub runs_dir: Option<PathBuf>,
    /// Its redaction.
    pub redactor: Arc<Redactor>,
    /// Who watches the run's events.
    pub observers: Vec<Arc<dyn Observer>>,
    /// The sequence number the trace's next recorded event will have, which a live event
    /// carries (as one recorded through [`Trace::record`] does).
    pub next_sequence: Arc<AtomicU64>,
}

impl RunInfo {
    /// Whether anyone watches the run: a call with no observer skips its live events.
    pub fn observed(&self) -> bool {
        !self.observers.is_empty()
    }

    /// Hands a live event ([`Event::is_live`]: a running call's output) to the run's observers,
    /// redacted as every event is; the trace never gets it. Nothing happens (nothing is copied
    /// or scanned) when nobody observes the run.
    pub fn live(&self, event: Event) {
        if self.observers.is_empty() || !event.is_live() {
            return;
        }
        let envelope = Envelope {
            schema_version: TRACE_SCHEMA_VERSION,
            run_id: self.run_id.clone(),
            parent_run_id: self.parent_run_id.clone(),
            // Live events are not numbered in the trace: each carries the number the next
            // recorded event will have, so observers can place it between two recorded ones.
            sequence: self.next_sequence.load(Ordering::Relaxed),
            timestamp: Timestamp::now().utc(),
            event,
        };
        let envelope = match serde_json::to_string(&envelope.event) {
            Ok(line) if !self.redactor.finds(&line) => envelope,
            Ok(_) => match redacted(&self.redactor, &envelope) {
                Some((envelope, _)) => envelope,
                None => return,
            },
            Err(_) => return,
        };
        for observer in &self.observers {
            observer.observe(&envelope);
        }
    }
}

impl std::fmt::Debug for RunInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunInfo")
            .field("run_id", &self.run_id)
            .field("runs_dir", &self.runs_dir)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("run_id", &self.run_id)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A new run id: a UUIDv7, so ids sort by creation time.
pub fn new_run_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

impl Trace {
    /// Creates `<runs_dir>/<run_id>.jsonl` (directory mode 0700, file mode 0600).
    pub fn create(
        runs_dir: &Path,
        run_id: String,
        parent_run_id: Option<String>,
        redactor: Arc<Redactor>,
    ) -> Result<Self, TraceError> {
        let path = runs_dir.join(format!("{run_id}.jsonl"));
        let err = |source| TraceError::Write {
            path: path.clone(),
            source,
        };
        create_private_dir(runs_dir).map_err(err)?;
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(err)?;
        let info = Arc::new(RunInfo {
            run_id: run_id.clone(),
            parent_run_id: parent_run_id.clone(),
            runs_dir: Some(runs_dir.to_path_buf()),
            redactor: redactor.clone(),
            observers: Vec::new(),
            next_sequence: Arc::default(),
        });
        Ok(Self {
            info,
            prefix: line::prefix(TRACE_SCHEMA_VERSION, &run_id, parent_run_id.as_deref()),
            run_id,
            parent_run_id,
            path: Some(path),
            redactor,
            observers: Vec::new(),
            line_observers: Vec::new(),
            typed_observers: Vec::new(),
            writer: Mutex::new(Writer::new(Some(file))),
            write_delay: DEFAULT_WRITE_DELAY,
        })
    }

    /// A trace that records to observers only (embedding, tests).
    pub fn in_memory(run_id: String, redactor: Arc<Redactor>) -> Self {
        Self::in_memory_of(run_id, None, redactor)
    }

    /// A trace that records to observers only, of a run started by run `parent_run_id` (a
    /// subagent's): its envelopes name the parent as a written trace's do, so what watches them
    /// (the exporter, a face) places the run under its parent.
    pub fn in_memory_of(
        run_id: String,
        parent_run_id: Option<String>,
        redactor: Arc<Redactor>,
    ) -> Self {
        Self {
            info: Arc::new(RunInfo {
                run_id: run_id.clone(),
                parent_run_id: parent_run_id.clone(),
                runs_dir: None,
                redactor: redactor.clone(),
                observers: Vec::new(),
                next_sequence: Arc::default(),
            }),
            prefix: line::prefix(TRACE_SCHEMA_VERSION, &run_id, parent_run_id.as_deref()),
            run_id,
            parent_run_id,
            path: None,
            redactor,
            observers: Vec::new(),
            line_observers: Vec::new(),
            typed_observers: Vec::new(),
            writer: Mutex::new(Writer::new(None)),
            write_delay: DEFAULT_WRITE_DELAY,
        }
    }

    /// Sets how long a finished call's lines may wait in memory for the calls after it
    /// ([`DEFAULT_WRITE_DELAY`]); `Duration::ZERO` writes every call's lines at its end. Lines
    /// are written before a call's result is handed out whatever this is.
    pub fn with_write_delay(mut self, delay: Duration) -> Self {
        self.write_delay = delay;
        self
    }

    /// How long a finished call's lines may wait for the calls after it.
    pub fn write_delay(&self) -> Duration {
        self.write_delay
    }

    /// Adds an observer.
    pub fn observe(mut self, observer: Arc<dyn Observer>) -> Self {
        if observer.reads_lines() {
            self.line_observers.push(observer.clone());
        } else {
            self.typed_observers.push(observer.clone());
        }
        self.observers.push(observer);
        self.info = Arc::new(RunInfo {
            run_id: self.info.run_id.clone(),
            parent_run_id: self.info.parent_run_id.clone(),
            runs_dir: self.info.runs_dir.clone(),
            redactor: self.info.redactor.clone(),
            observers: self.observers.clone(),
            next_sequence: self.info.next_sequence.clone(),
        });
        self
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The run, as a tool call sees it (shared, so a call copies nothing).
    pub fn info(&self) -> &Arc<RunInfo> {
        &self.info
    }

    /// The redaction every event passes.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// The file the trace is written to (none in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Redacts secrets from a piece of text shown outside the trace (approval prompts).
    pub fn redact_text(&self, text: &str) -> String {
        self.redactor.redact_str(text)
    }

    /// Records one event: redacts it, numbers it, buffers the line and tells observers. A live
    /// event ([`Event::is_live`]) is redacted and handed to observers only; it carries the
    /// sequence number the next recorded event will have.
    ///
    /// The line is serialised from borrowed fields into a buffer the trace keeps, with the time
    /// formatted from a per-second prefix: an owned [`Envelope`] is built only when someone
    /// observes the run or the line holds a secret. The line is exactly what serialising the
    /// envelope writes (tested).
    pub fn record(&self, event: Event) {
        let live = event.is_live();
        self.write(Recorded::Owned(event), live);
    }

    /// Records one of the events every tool call writes, from the call's own data: nothing is
    /// copied unless someone observes the run or the line holds a secret. The line is the one
    /// [`Trace::record`] writes for the same event.
    pub(crate) fn record_call(&self, event: CallEvent<'_>) {
        self.write(Recorded::Call(event), false);
    }

    fn write(&self, event: Recorded<'_>, live: bool) {
        if live && self.observers.is_empty() {
            return;
        }
        let Ok(mut guard) = self.writer.lock() else {
            return;
        };
        let writer = &mut *guard;
        let now = Timestamp::now();
        let sequence = writer.sequence;
        if !live {
            writer.sequence += 1;
            self.info
                .next_sequence
                .store(writer.sequence, Ordering::Relaxed);
        }
        let Writer { pending, clock, .. } = writer;
        let start = pending.len();
        let written = line::write(pending, &self.prefix, sequence, clock.format(now), &event);
        if let Err(e) = written {
            pending.truncate(start);
            writer.error.get_or_insert(std::io::Error::other(e));
            return;
        }
        let envelope = |event: Recorded<'_>| Envelope {
            schema_version: TRACE_SCHEMA_VERSION,
            run_id: self.run_id.clone(),
            parent_run_id: self.parent_run_id.clone(),
            sequence,
            timestamp: now.utc(),
            event: event.into_event(),
        };
        // The common case has no secret in it: one scan. Otherwise redact every string of the
        // value (never the raw line, where a replacement could break the JSON) and rebuild.
        // The encoder writes whole UTF-8 strings only, so the check cannot fail; were it to,
        // the line is treated as holding a secret and rebuilt.
        let finds =
            std::str::from_utf8(&pending[start..]).map_or(true, |line| self.redactor.finds(line));
        // A live event goes to every observer as an envelope; a recorded one as its line to
        // those that read lines.
        let typed = if live {
            &self.observers
        } else {
            &self.typed_observers
        };
        let observed = if finds {
            pending.truncate(start);
            match redacted(&self.redactor, &envelope(event)) {
                Some((redacted_envelope, line)) => {
                    pending.extend_from_slice(line.as_bytes());
                    Some(redacted_envelope)
                }
                None => return,
            }
        } else if typed.is_empty() {
            None
        } else {
            Some(envelope(event))
        };
        if !live {
            for observer in &self.line_observers {
                observer.observe_line(&writer.pending[start..]);
            }
        }
        if live || writer.file.is_none() {
            // Encoded only to be scanned and observed: a live event is never written, nor is
            // anything without a file.
            writer.pending.truncate(start);
        } else {
            writer.pending.push(b'\n');
            writer.oldest.get_or_insert(now);
            writer.newest = now;
            if writer.pending.len() >= PENDING_LIMIT {
                writer.write_out();
            }
        }
        drop(guard);
        let Some(envelope) = observed else {
            return;
        };
        for observer in typed {
            observer.observe(&envelope);
        }
    }

    /// The end of a tool call that took `took`: its lines are written now if it was slow
    /// (a `write` is then nothing beside it) or the oldest line waiting has waited
    /// [`Trace::write_delay`]; otherwise they wait for the calls after it, for whoever hands
    /// the result out ([`Trace::flush`]), or for 64 KiB of lines.
    pub(crate) fn call_ended(&self, took: Duration) {
        let Ok(mut writer) = self.writer.lock() else {
            return;
        };
        if took >= self.write_delay || writer.waited() >= self.write_delay {
            writer.write_out();
        }
    }

    /// Writes the pending lines to the file, in one `write`. Whoever hands a tool call's result
    /// on — to the model, an MCP or ACP client, the terminal — calls this first, so no line of
    /// a call whose result was seen is ever only in memory.
    pub fn flush(&self) {
        if let Ok(mut writer) = self.writer.lock() {
            writer.write_out();
        }
    }

    /// Flushes, syncs and reports the first write error, if any.
    pub fn finish(&self) -> Result<(), TraceError> {
        let Ok(mut writer) = self.writer.lock() else {
            return Ok(());
        };
        writer.write_out();
        if let Some(file) = writer.file.as_ref()
            && let Err(e) = file.sync_data()
        {
            writer.error.get_or_insert(e);
        }
        match (writer.error.take(), &self.path) {
            (Some(source), Some(path)) => Err(TraceError::Write {
                path: path.clone(),
                source,
            }),
            _ => Ok(()),
        }
    }
}

fn redacted(redactor: &Redactor, envelope: &Envelope) -> Option<(Envelope, String)> {
    let mut value = serde_json::to_value(envelope).ok()?;
    redactor.redact_value(&mut value);
    let line = serde_json::to_string(&value).ok()?;
    let envelope = match serde_json::from_value(value) {
        Ok(envelope) => envelope,
        // A count the host computed happened to hold a secret's digits: observers get the
        // typed event with its strings redacted; the trace line above has the number redacted.
        Err(_) => {
            let mut value = serde_json::to_value(envelope).ok()?;
            redactor.redact_strings(&mut value);
            serde_json::from_value(value).ok()?
        }
    };
    Some((envelope, line))
}

/// Creates a directory (and parents) readable only by the owner.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-second clock writes what chrono's own serialisation writes, for every kind of
    /// fraction and across second, day, month and year boundaries.
    #[test]
    fn the_fast_clock_writes_what_chrono_writes() {
        let mut clock = Clock::default();
        let seconds = [
            0_i64,
            59,
            60,
            86_399,
            86_400,
            951_782_399,
            1_798_761_599,
            1_798_761_600,
            // Years of five digits are written with a sign.
            253_402_300_799,
            253_402_300_800,
        ];
        let nanos = [
            0_u32,
            1,
            7,
            1_000,
            120_000,
            5_000_000,
            999_000_000,
            123_456_789,
            999_999_999,
        ];
        for secs in seconds {
            for nanos in nanos {
                let at = Timestamp { secs, nanos };
                let chrono = serde_json::to_string(&at.utc()).unwrap();
                assert_eq!(
                    format!("\"{}\"", clock.format(at)),
                    chrono,
                    "{secs}.{nanos}"
                );
            }
        }
    }

    /// A line written from borrowed fields is byte for byte the serialised envelope, with and
    /// without a parent run, for an owned event and for each of a call's borrowed events.
    #[test]
    fn a_line_is_the_serialised_envelope() {
        use bosun_core::{CapabilityRequest, Decision, Explanation, Layer, MatchedRule};
        let input = serde_json::json!({"path": "src/läs.rs", "n": 1.5, "nested": [null, true]});
        let capabilities = vec![
            CapabilityRequest::parse("fs.read:src/läs.rs").unwrap(),
            CapabilityRequest::parse("net.http:example.com").unwrap(),
        ];
        let explanation = Explanation {
            decision: Decision::Allow,
            deciding: 0,
            checks: vec![MatchedRule {
                subject: "builtin.tool.read_file".into(),
                layer: Layer::User,
                rule: "action = \"builtin.tool.*\" decision = \"allow\"".into(),
                source: Some("config.toml:3".into()),
                decision: Decision::Allow,
            }],
        };
        let call_events = [
            CallEvent::Proposed {
                call_id: "c1",
                tool: "read_file",
                input: &input,
            },
            CallEvent::Decided {
                call_id: "c1",
                tool: "read_file",
                action: "builtin.tool.read_file",
                capabilities: &capabilities,
                explanation: &explanation,
            },
            CallEvent::Started {
                call_id: "c1",
                tool: "read_file",
            },
            CallEvent::Completed {
                call_id: "c1",
                tool: "read_file",
                output: &input,
                truncated: true,
                duration_us: 17,
            },
        ];
        let mut clock = Clock::default();
        for parent in [None, Some("parent-run".to_owned())] {
            let owned = call_events.iter().map(|e| Recorded::Owned(e.to_event()));
            let borrowed = call_events.iter().map(|e| Recorded::Call(*e));
            for recorded in owned.chain(borrowed) {
                let at = Timestamp::now();
                let prefix =
                    line::prefix(TRACE_SCHEMA_VERSION, "run \"quoted\"", parent.as_deref());
                let mut bytes = Vec::new();
                line::write(&mut bytes, &prefix, 7, clock.format(at), &recorded).unwrap();
                let line = String::from_utf8(bytes).unwrap();
                let envelope = Envelope {
                    schema_version: TRACE_SCHEMA_VERSION,
                    run_id: "run \"quoted\"".into(),
                    parent_run_id: parent.clone(),
                    sequence: 7,
                    timestamp: at.utc(),
                    event: recorded.into_event(),
                };
                assert_eq!(line, serde_json::to_string(&envelope).unwrap());
                let back: Envelope = serde_json::from_str(&line).unwrap();
                assert_eq!(back, envelope);
            }
        }
    }

    /// Every time in a trace file replaced by `T`: the only bytes a run cannot fix.
    fn masked_times(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find("\"timestamp\":\"") {
            let (head, tail) = rest.split_at(at + "\"timestamp\":\"".len());
            out.push_str(head);
            out.push('T');
            rest = &tail[tail.find('"').unwrap()..];
        }
        out.push_str(rest);
        out
    }

    /// The bytes of a call's four lines and of a recorded event as the file holds them, pinned:
    /// a change to the encoding or the write path that moves one byte (order of fields, escaping,
    /// numbers, the redacted spelling of a secret, the line ends) fails here, whatever both
    /// paths agree on.
    #[test]
    fn the_trace_file_is_pinned_byte_for_byte() {
        use bosun_core::{CapabilityRequest, Decision, Explanation, Layer, MatchedRule};
        let dir = tempfile::tempdir().unwrap();
        let redactor = Arc::new(Redactor::new([("API_KEY", "sk-secret-123456")]));
        let trace = Trace::create(
            dir.path(),
            "run-1".into(),
            Some("parent-0".into()),
            redactor,
        )
        .unwrap();
        let input = serde_json::json!({"path": "src/läs \"q\".rs", "n": 1.5, "big": 18446744073709551615_u64, "list": [null, true, -3]});
        let output = serde_json::json!({"content": "line\twith\u{1b}[31m escape and key sk-secret-123456", "bytes": 42});
        let capabilities = vec![CapabilityRequest::parse("fs.read:src/läs.rs").unwrap()];
        let explanation = Explanation {
            decision: Decision::Allow,
            deciding: 0,
            checks: vec![MatchedRule {
                subject: "builtin.tool.read_file".into(),
                layer: Layer::User,
                rule: "action = \"builtin.tool.*\" decision = \"allow\"".into(),
                source: Some("config.toml:3".into()),
                decision: Decision::Allow,
            }],
        };
        trace.record_call(CallEvent::Proposed {
            call_id: "c1",
            tool: "read_file",
            input: &input,
        });
        trace.record_call(CallEvent::Decided {
            call_id: "c1",
            tool: "read_file",
            action: "builtin.tool.read_file",
            capabilities: &capabilities,
            explanation: &explanation,
        });
        trace.record_call(CallEvent::Started {
            call_id: "c1",
            tool: "read_file",
        });
        trace.record_call(CallEvent::Completed {
            call_id: "c1",
            tool: "read_file",
            output: &output,
            truncated: false,
            duration_us: 1234,
        });
        trace.record(Event::BudgetExhausted {
            budget: bosun_core::Budget::ToolCalls,
            limit: 7,
        });
        trace.finish().unwrap();
        let text = fs::read_to_string(dir.path().join("run-1.jsonl")).unwrap();
        let expected = concat!(
            r#"{"schema_version":1,"run_id":"run-1","parent_run_id":"parent-0","sequence":0,"timestamp":"T","event":{"type":"tool.proposed","call_id":"c1","tool":"read_file","input":{"path":"src/läs \"q\".rs","n":1.5,"big":18446744073709551615,"list":[null,true,-3]}}}"#,
            "\n",
            r#"{"schema_version":1,"run_id":"run-1","parent_run_id":"parent-0","sequence":1,"timestamp":"T","event":{"type":"tool.decided","call_id":"c1","tool":"read_file","action":"builtin.tool.read_file","capabilities":[{"capability":"fs.read","scope":{"path":"src/läs.rs"}}],"explanation":{"decision":"allow","deciding":0,"checks":[{"subject":"builtin.tool.read_file","layer":"user","rule":"action = \"builtin.tool.*\" decision = \"allow\"","source":"config.toml:3","decision":"allow"}]}}}"#,
            "\n",
            r#"{"schema_version":1,"run_id":"run-1","parent_run_id":"parent-0","sequence":2,"timestamp":"T","event":{"type":"tool.started","call_id":"c1","tool":"read_file"}}"#,
            "\n",
            r#"{"schema_version":1,"run_id":"run-1","parent_run_id":"parent-0","sequence":3,"timestamp":"T","event":{"type":"tool.completed","call_id":"c1","tool":"read_file","output":{"content":"line\twith\u001b[31m escape and key [REDACTED:API_KEY]","bytes":42},"truncated":false,"duration_us":1234}}"#,
            "\n",
            r#"{"schema_version":1,"run_id":"run-1","parent_run_id":"parent-0","sequence":4,"timestamp":"T","event":{"type":"budget.exhausted","budget":"tool_calls","limit":7}}"#,
            "\n",
        );
        assert_eq!(masked_times(&text), expected, "\n{}", masked_times(&text));
    }

    /// The durability contract's three writes: a fast call's lines wait in memory (for the
    /// calls after it), a call as slow as the write delay is written at its end together with
    /// what waited, and `flush` (whoever hands a result out) and dropping the trace write
    /// whatever waits. Nothing is lost or written twice.
    #[test]
    fn a_fast_calls_lines_wait_a_slow_call_or_a_flush_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run-w.jsonl");
        let trace = Trace::create(dir.path(), "run-w".into(), None, Arc::default())
            .unwrap()
            .with_write_delay(Duration::from_secs(3600));
        let input = serde_json::json!({});
        let call = |id: &str| {
            trace.record_call(CallEvent::Proposed {
                call_id: id,
                tool: "noop",
                input: &input,
            });
            trace.record_call(CallEvent::Started {
                call_id: id,
                tool: "noop",
            });
        };
        let lines = || fs::read_to_string(&path).unwrap().lines().count();
        call("c1");
        trace.call_ended(Duration::from_micros(3));
        assert_eq!(lines(), 0, "a fast call waits");
        call("c2");
        trace.call_ended(Duration::from_secs(3600));
        assert_eq!(lines(), 4, "a slow call writes itself and what waited");
        call("c3");
        trace.call_ended(Duration::ZERO);
        assert_eq!(lines(), 4);
        trace.flush();
        assert_eq!(lines(), 6, "handing a result out writes it");
        call("c4");
        trace.call_ended(Duration::ZERO);
        drop(trace);
        let text = fs::read_to_string(&path).unwrap();
        let sequences: Vec<u64> = text
            .lines()
            .map(|l| serde_json::from_str::<Envelope>(l).unwrap().sequence)
            .collect();
        assert_eq!(
            sequences,
            (0..8).collect::<Vec<_>>(),
            "dropping writes the rest"
        );
    }

    /// Lines wait no longer than the write delay while calls keep ending: once the oldest line
    /// waiting is that old, the next call's end writes them.
    #[test]
    fn lines_wait_no_longer_than_the_write_delay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run-d.jsonl");
        let trace = Trace::create(dir.path(), "run-d".into(), None, Arc::default())
            .unwrap()
            .with_write_delay(Duration::from_millis(20));
        let input = serde_json::json!({});
        let lines = || fs::read_to_string(&path).unwrap().lines().count();
        trace.record_call(CallEvent::Proposed {
            call_id: "c1",
            tool: "noop",
            input: &input,
        });
        trace.call_ended(Duration::ZERO);
        assert_eq!(lines(), 0);
        std::thread::sleep(Duration::from_millis(30));
        trace.record_call(CallEvent::Proposed {
            call_id: "c2",
            tool: "noop",
            input: &input,
        });
        trace.call_ended(Duration::ZERO);
        assert_eq!(lines(), 2);
    }

    /// A secret holding a quote, a backslash or a control character is spelled differently in
    /// the encoded line (`"` as `\"`); whichever spelling the hand-written encoder produces,
    /// in a value, a key, a tool input or an output, the file holds neither the secret nor its
    /// escaped spelling.
    #[test]
    fn a_secret_with_characters_json_escapes_never_reaches_the_file() {
        let secret = "pa\"ss\\wo\nrd\u{7}-42";
        let dir = tempfile::tempdir().unwrap();
        let redactor = Arc::new(Redactor::new([("ODD_TOKEN", secret)]));
        let trace = Trace::create(dir.path(), "run-odd".into(), None, redactor).unwrap();
        let input = serde_json::json!({"command": format!("curl -H 'x: {secret}'"), secret: 1});
        let output =
            serde_json::json!({"content": format!("echoed {secret} back"), "list": [secret]});
        trace.record_call(CallEvent::Proposed {
            call_id: "c1",
            tool: "run_command",
            input: &input,
        });
        trace.record_call(CallEvent::Completed {
            call_id: "c1",
            tool: "run_command",
            output: &output,
            truncated: false,
            duration_us: 1,
        });
        trace.finish().unwrap();
        let text = fs::read_to_string(dir.path().join("run-odd.jsonl")).unwrap();
        let escaped = serde_json::to_string(secret).unwrap();
        let escaped = &escaped[1..escaped.len() - 1];
        assert!(!text.contains(secret), "{text}");
        assert!(!text.contains(escaped), "{text}");
        assert!(!text.contains("wo\\nrd"), "{text}");
        assert_eq!(text.matches("[REDACTED:ODD_TOKEN]").count(), 4, "{text}");
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line).expect("each line stays JSON");
        }
    }

    /// A live event carries the number the next recorded event will have, whichever way it
    /// reaches the observers: recorded through the trace (`--json`) or handed on by a running
    /// call through its run's info (the terminal, the editor face, telemetry).
    #[test]
    fn a_live_event_carries_the_next_sequence_by_either_path() {
        struct Seen(Mutex<Vec<(String, u64)>>);
        impl Observer for Seen {
            fn observe(&self, envelope: &Envelope) {
                self.0
                    .lock()
                    .unwrap()
                    .push((envelope.event.kind().to_owned(), envelope.sequence));
            }
        }
        let seen = Arc::new(Seen(Mutex::new(Vec::new())));
        let trace =
            Trace::in_memory("run-1".into(), Arc::new(Redactor::default())).observe(seen.clone());
        let output = |text: &str| Event::ToolOutput {
            call_id: "c1".into(),
            stream: bosun_core::OutputStream::Stdout,
            text: text.into(),
        };
        trace.info().live(output("before any"));
        for limit in [1, 2] {
            trace.record(Event::BudgetExhausted {
                budget: bosun_core::Budget::ToolCalls,
                limit,
            });
        }
        trace.info().live(output("through the call"));
        trace.record(output("through the trace"));
        trace.record(Event::BudgetExhausted {
            budget: bosun_core::Budget::ToolCalls,
            limit: 3,
        });
        let seen = seen.0.lock().unwrap().clone();
        let numbers: Vec<u64> = seen.iter().map(|(_, n)| *n).collect();
        assert_eq!(numbers, [0, 0, 1, 2, 2, 2], "{seen:?}");
    }
}
