//! Processes a JavaScript plugin starts through the host (`node:child_process`,
//! `Deno.Command`): the engine's `runtime` imports `spawn`, `process-write`,
//! `process-close-stdin`, `process-kill` and `process-poll` reach this table.
//!
//! The host decides and starts each process ([`JsProcesses::start`]: policy, approval, the OS
//! sandbox); this table owns its pipes from then on. Output is read in chunks into one bounded
//! queue per call, so a chatty child waits on its pipe instead of filling memory, and the
//! engine's event loop takes what is there with `process-poll`. Every process of a call is
//! killed (its whole process group) when the call ends, whatever the plugin did.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinHandle};

/// Most processes one call may have started.
pub const MAX_PROCESSES_PER_CALL: usize = 16;
/// The largest single write to a child's stdin.
pub const MAX_WRITE_BYTES: usize = 1 << 20;
/// The most output one `process-poll` hands back.
const MAX_POLL_BYTES: usize = 1 << 20;
/// Chunks read from a pipe at a time, and how many may wait in the queue.
const CHUNK_BYTES: usize = 16 * 1024;
const QUEUED_CHUNKS: usize = 64;
/// The longest one `process-poll` waits (the engine asks again after checking cancellation).
const MAX_POLL_WAIT: Duration = Duration::from_millis(100);

/// A process a JavaScript plugin asked to start, as the engine sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    /// The program, a name looked up on `PATH` or a path.
    pub program: String,
    /// Its arguments, each passed as is (no shell).
    pub args: Vec<String>,
    /// The working directory as the plugin named it (`/workspace/...` or relative).
    pub cwd: Option<String>,
    /// Environment variables the plugin passes; the host keeps only those it may pass.
    pub env: BTreeMap<String, String>,
}

/// A process the host started for a plugin.
pub struct Spawned {
    /// The child, with stdin, stdout and stderr piped, in its own process group.
    pub child: Child,
    /// Held while the child lives and dropped after it is killed (the host's sandbox guard).
    pub guard: Box<dyn Send + Sync>,
}

impl fmt::Debug for Spawned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Spawned")
            .field("pid", &self.child.id())
            .finish_non_exhaustive()
    }
}

/// The future [`JsProcesses::start`] returns.
pub type StartFuture<'a> = Pin<Box<dyn Future<Output = Result<Spawned, StartError>> + Send + 'a>>;

/// Why the host did not start a process a plugin asked for; the message is what the plugin's
/// `error` event carries.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The host refused the request (not a program, too many arguments, denied by policy or a
    /// person, a directory outside the workspace), saying why.
    #[error("{0}")]
    Refused(String),
    /// No program by that name or at that path.
    #[error("no such program `{program}` on PATH or at that path")]
    NotFound {
        /// The program as asked for.
        program: String,
    },
    /// The program exists but could not be started.
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program as asked for.
        program: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The OS sandbox could not be set up around it.
    #[error("{0}")]
    Confinement(String),
}

/// Why a plugin's `spawn` or `process-write` failed; the plugin sees the message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProcessError {
    /// The call has no one to start processes.
    #[error(
        "this plugin may not start processes here: only a tool of risk `process`, called through Bosun's policy, can"
    )]
    NotHere,
    /// The call already runs as many processes as it may.
    #[error(
        "this call already runs {live} processes; end one first (at most {MAX_PROCESSES_PER_CALL})"
    )]
    TooMany {
        /// How many run.
        live: usize,
    },
    /// The engine's spawn request is malformed.
    #[error("{0}")]
    Request(&'static str),
    /// The spawn request is not JSON.
    #[error("the spawn request is not JSON: {0}")]
    NotJson(serde_json::Error),
    /// The host did not start it.
    #[error(transparent)]
    Start(#[from] StartError),
    /// A write over [`MAX_WRITE_BYTES`].
    #[error("a write of {0} bytes is too large: write at most {MAX_WRITE_BYTES} at a time")]
    WriteTooLarge(usize),
    /// No such process in this call.
    #[error("there is no process {0} in this call")]
    Unknown(u32),
    /// Its stdin was closed.
    #[error("the process's stdin is closed")]
    StdinClosed,
    /// Writing to its stdin failed.
    #[error("writing to the process failed: {0}")]
    Write(std::io::Error),
}

/// Starts processes for one call of a JavaScript plugin: judges each (policy, a person), and
/// starts it confined. The error is the message the plugin's `error` event carries.
pub trait JsProcesses: Send + Sync + fmt::Debug {
    /// Decides on and starts `request`.
    fn start(&self, request: SpawnRequest) -> StartFuture<'_>;
}

/// One output event, as `process-poll` hands it to the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProcessEvent {
    Stdout(u32, Vec<u8>),
    Stderr(u32, Vec<u8>),
    Exit {
        id: u32,
        code: Option<i32>,
        signal: Option<String>,
    },
}

struct Entry {
    stdin: Option<ChildStdin>,
    pgid: Option<i32>,
    tasks: Vec<AbortHandle>,
    _guard: Box<dyn Send + Sync>,
    exited: bool,
}

/// The processes of the current call.
pub(crate) struct ProcessTable {
    starter: Option<Arc<dyn JsProcesses>>,
    next_id: u32,
    entries: HashMap<u32, Entry>,
    events: mpsc::Receiver<ProcessEvent>,
    sender: mpsc::Sender<ProcessEvent>,
}

impl fmt::Debug for ProcessTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessTable")
            .field("processes", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl Default for ProcessTable {
    fn default() -> ProcessTable {
        let (sender, events) = mpsc::channel(QUEUED_CHUNKS);
        ProcessTable {
            starter: None,
            next_id: 1,
            entries: HashMap::new(),
            events,
            sender,
        }
    }
}

impl ProcessTable {
    /// Starts a call: who may start processes in it (none: spawning is refused).
    pub(crate) fn begin(&mut self, starter: Option<Arc<dyn JsProcesses>>) {
        self.end();
        self.starter = starter;
    }

    /// Ends a call: kills every process it started (their whole groups) and forgets them.
    pub(crate) fn end(&mut self) {
        self.starter = None;
        // Only a call that started a process handed out the sender (every clone goes to that
        // process's tasks, and every started process has an entry): a call that started none
        // leaves nothing in the queue, and its fresh channel is kept for the next call.
        if self.entries.is_empty() {
            return;
        }
        for (_, entry) in self.entries.drain() {
            kill_group(entry.pgid, libc_signal("SIGKILL"));
            for task in entry.tasks {
                task.abort();
            }
        }
        let (sender, events) = mpsc::channel(QUEUED_CHUNKS);
        self.sender = sender;
        self.events = events;
    }

    pub(crate) async fn spawn(&mut self, request: &str) -> Result<u32, ProcessError> {
        let Some(starter) = self.starter.clone() else {
            return Err(ProcessError::NotHere);
        };
        let live = self.entries.values().filter(|e| !e.exited).count();
        if live >= MAX_PROCESSES_PER_CALL {
            return Err(ProcessError::TooMany { live });
        }
        let request = parse_request(request)?;
        let Spawned { mut child, guard } = starter.start(request).await?;
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        let mut readers: Vec<JoinHandle<()>> = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(pump(out, id, self.sender.clone(), true)));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(pump(err, id, self.sender.clone(), false)));
        }
        let stdin = child.stdin.take();
        let sender = self.sender.clone();
        let mut tasks: Vec<AbortHandle> = readers.iter().map(JoinHandle::abort_handle).collect();
        // The exit comes after both pipes are drained, so a plugin sees all output first.
        let waiter = tokio::spawn(async move {
            for reader in readers {
                let _ = reader.await;
            }
            let status = child.wait().await;
            let (code, signal) = match status {
                Ok(status) => {
                    use std::os::unix::process::ExitStatusExt;
                    (status.code(), status.signal().map(signal_name))
                }
                Err(_) => (None, None),
            };
            let _ = sender.send(ProcessEvent::Exit { id, code, signal }).await;
        });
        tasks.push(waiter.abort_handle());
        self.entries.insert(
            id,
            Entry {
                stdin,
                pgid,
                tasks,
                _guard: guard,
                exited: false,
            },
        );
        Ok(id)
    }

    pub(crate) async fn write(&mut self, id: u32, data: &[u8]) -> Result<(), ProcessError> {
        if data.len() > MAX_WRITE_BYTES {
            return Err(ProcessError::WriteTooLarge(data.len()));
        }
        let entry = self.entries.get_mut(&id).ok_or(ProcessError::Unknown(id))?;
        let stdin = entry.stdin.as_mut().ok_or(ProcessError::StdinClosed)?;
        stdin.write_all(data).await.map_err(ProcessError::Write)?;
        stdin.flush().await.map_err(ProcessError::Write)
    }

    pub(crate) fn close_stdin(&mut self, id: u32) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.stdin = None;
        }
    }

    pub(crate) fn kill(&mut self, id: u32, signal: &str) {
        if let Some(entry) = self.entries.get(&id)
            && !entry.exited
        {
            kill_group(entry.pgid, libc_signal(signal));
        }
    }

    /// What the processes said, waiting at most `wait` (and at most 100 ms) for something.
    pub(crate) async fn poll(&mut self, wait: Duration) -> Vec<ProcessEvent> {
        let mut events = Vec::new();
        if self.entries.values().all(|e| e.exited) {
            return events;
        }
        let first = tokio::time::timeout(wait.min(MAX_POLL_WAIT), self.events.recv()).await;
        let Ok(Some(first)) = first else {
            return events;
        };
        let mut bytes = 0usize;
        let mut next = Some(first);
        while let Some(event) = next {
            match &event {
                ProcessEvent::Stdout(_, data) | ProcessEvent::Stderr(_, data) => {
                    bytes += data.len();
                }
                ProcessEvent::Exit { id, .. } => {
                    if let Some(entry) = self.entries.get_mut(id) {
                        entry.exited = true;
                        entry.stdin = None;
                    }
                }
            }
            events.push(event);
            if bytes >= MAX_POLL_BYTES {
                break;
            }
            next = self.events.try_recv().ok();
        }
        events
    }
}

impl Drop for ProcessTable {
    fn drop(&mut self) {
        self.end();
    }
}

/// Reads a pipe to its end in chunks, each queued for the engine (waiting when the queue is
/// full, which leaves the child blocked on its pipe).
async fn pump(
    mut pipe: impl tokio::io::AsyncRead + Unpin,
    id: u32,
    sender: mpsc::Sender<ProcessEvent>,
    stdout: bool,
) {
    let mut chunk = vec![0u8; CHUNK_BYTES];
    loop {
        let n = match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let data = chunk[..n].to_vec();
        let event = if stdout {
            ProcessEvent::Stdout(id, data)
        } else {
            ProcessEvent::Stderr(id, data)
        };
        if sender.send(event).await.is_err() {
            return;
        }
    }
}

/// The request JSON the engine sends: `{program, args, cwd, env}`.
fn parse_request(text: &str) -> Result<SpawnRequest, ProcessError> {
    const MAX_REQUEST_BYTES: usize = 1 << 20;
    if text.len() > MAX_REQUEST_BYTES {
        return Err(ProcessError::Request("the spawn request is over 1 MiB"));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(ProcessError::NotJson)?;
    let program = value
        .get("program")
        .and_then(serde_json::Value::as_str)
        .filter(|p| !p.is_empty())
        .ok_or(ProcessError::Request("the spawn request names no program"))?
        .to_owned();
    let args = match value.get("args") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|a| {
                a.as_str()
                    .map(str::to_owned)
                    .ok_or(ProcessError::Request("every argument must be a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ProcessError::Request("args must be an array of strings"));
        }
    };
    let cwd = value
        .get("cwd")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    let env = match value.get("env") {
        Some(serde_json::Value::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
            .collect(),
        _ => BTreeMap::new(),
    };
    for text in std::iter::once(&program).chain(&args) {
        if text.contains('\0') {
            return Err(ProcessError::Request(
                "the program or an argument contains a NUL byte",
            ));
        }
    }
    Ok(SpawnRequest {
        program,
        args,
        cwd,
        env,
    })
}

fn libc_signal(name: &str) -> i32 {
    match name.trim_start_matches("SIG") {
        "INT" => 2,
        "HUP" => 1,
        "QUIT" => 3,
        "KILL" => 9,
        "USR1" => 10,
        "USR2" => 12,
        _ => 15,
    }
}

fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return format!("SIG{signal}"),
    }
    .to_owned()
}

/// Signals a child's process group (never 0 or 1).
fn kill_group(pgid: Option<i32>, signal: i32) {
    let Some(pgid) = pgid.filter(|p| *p > 1) else {
        return;
    };
    // SAFETY: kill(2) takes two integers and touches no memory of this process. The host
    // starts every plugin process in a session (and group) of its own, so `-pgid` addresses
    // that group only; ESRCH (already gone) is ignored.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(-pgid, signal);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// A started process as `spawn` records it, without a child: its tasks hold the sender.
    fn started(table: &mut ProcessTable, id: u32) -> mpsc::Sender<ProcessEvent> {
        table.entries.insert(
            id,
            Entry {
                stdin: None,
                pgid: None,
                tasks: Vec::new(),
                _guard: Box::new(()),
                exited: false,
            },
        );
        table.sender.clone()
    }

    #[test]
    fn a_call_that_started_no_process_keeps_its_queue_and_one_that_did_leaves_nothing_behind() {
        let mut table = ProcessTable::default();
        let kept = table.sender.clone();
        // Calls that start nothing: the one channel stays (nothing was handed out).
        table.begin(None);
        table.end();
        table.begin(None);
        assert!(table.sender.same_channel(&kept));

        // A call that started a process: what its tasks queued never reaches the next call.
        let pump = started(&mut table, 7);
        pump.try_send(ProcessEvent::Stdout(7, b"late".to_vec()))
            .unwrap();
        table.end();
        assert!(table.entries.is_empty());
        assert!(!table.sender.same_channel(&kept));
        table.begin(None);
        assert!(table.events.try_recv().is_err());
        // The old channel is closed to the new call: a late send from the old task goes nowhere.
        assert!(
            pump.try_send(ProcessEvent::Stdout(7, b"later".to_vec()))
                .is_err()
        );
        table.end();
        assert!(table.events.try_recv().is_err());
    }
}
