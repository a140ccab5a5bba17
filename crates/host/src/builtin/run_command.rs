//! `run_command`: runs one program with arguments, without a shell, in the workspace.
//!
//! The child gets no stdin and only the environment in `ctx.env` (already scrubbed of secrets:
//! nothing from Bosun's own environment is added back). It runs in its own process group, so
//! on timeout or cancellation the whole group gets SIGTERM, then SIGKILL 500 ms later. Stdout
//! and stderr are read concurrently to the end, keeping at most `max_output_bytes` of the two
//! together, so a chatty child never blocks on a full pipe. A non-zero exit is a normal result:
//! the model reads `exitCode`. If the program exits but something it started keeps its output
//! pipes open, the group is killed after a short grace so the call can end; if the call itself
//! is dropped mid-run, the group is killed as well.
//!
//! The child starts through the host's launcher (`bosun-launch`): it writes only the workspace
//! and a private `TMPDIR`, the workspace's protected paths stay read-only, it reads nothing of
//! `$HOME` beyond toolchains and `[sandbox] read`, cannot read Bosun's environment, and has no
//! network unless the call names hosts in `network` and policy grants `net.http` for each —
//! then TCP reaches only the granted ports. `setsid` is refused inside, so the process group
//! holds the whole tree; the pids cgroup catches anything else when the call ends.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bosun_core::{
    Authority, Capability, CapabilityRequest, ErrorCode, Risk, Scope, SpecError, ToolError,
    ToolOutput, ToolSpec,
};
use bosun_launch::Jail;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::{AbortHandle, JoinHandle};

use super::{bounded_output, cancelled, display_text, parse_input, spec, trim_partial_utf8};
use crate::tool::{Tool, ToolContext};

const NAME: &str = "run_command";
const MAX_PROGRAM_CHARS: usize = 512;
const MAX_ARGS: usize = 100;
const MAX_ARG_CHARS: usize = 8192;
const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// Characters a shell would treat specially; refused in `program` so nobody mistakes it for a
/// shell command line.
const SHELL_CHARS: &[char] = &['|', '&', ';', '<', '>', '(', ')', '$', '`'];
/// Between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);
/// How long output pipes may stay open after the program exits before its group is killed.
const PIPE_GRACE: Duration = Duration::from_millis(500);
/// How long to wait for a killed process to be reaped and its pipes to close.
const REAP_WAIT: Duration = Duration::from_secs(5);
/// Longest approval summary, in characters.
const MAX_SUMMARY_CHARS: usize = 2000;
/// Most hosts one command may ask to reach.
const MAX_HOSTS: usize = 16;

/// Runs a program.
#[derive(Debug)]
pub struct RunCommand {
    spec: ToolSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Input {
    program: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    network: Vec<String>,
}

impl Input {
    fn parse(input: &Value) -> Result<Input, ToolError> {
        let input: Input = parse_input(NAME, input)?;
        let program = &input.program;
        let chars = program.chars().count();
        if chars == 0 || chars > MAX_PROGRAM_CHARS {
            return Err(super::invalid(format!(
                "program has {chars} characters: give a program name or path of 1 to {MAX_PROGRAM_CHARS}"
            )));
        }
        if let Some(c) = program
            .chars()
            .find(|c| c.is_whitespace() || c.is_control() || SHELL_CHARS.contains(c))
        {
            return Err(super::invalid(format!(
                "program contains {}: give only the program's name or path (there is no shell), \
                 and put each argument in args",
                display_text(&format!("{c:?}"))
            )));
        }
        if input.args.len() > MAX_ARGS {
            return Err(super::invalid(format!(
                "{} args given: pass at most {MAX_ARGS}",
                input.args.len()
            )));
        }
        for (i, arg) in input.args.iter().enumerate() {
            let chars = arg.chars().count();
            if chars > MAX_ARG_CHARS {
                return Err(super::invalid(format!(
                    "args[{i}] has {chars} characters: keep each argument within {MAX_ARG_CHARS}"
                )));
            }
            if arg.contains('\0') {
                return Err(super::invalid(format!(
                    "args[{i}] contains a NUL byte: remove it"
                )));
            }
        }
        if input.network.len() > MAX_HOSTS {
            return Err(super::invalid(format!(
                "{} hosts in network: name at most {MAX_HOSTS}",
                input.network.len()
            )));
        }
        input.hosts()?;
        if let Some(ms) = input.timeout_ms
            && !(1..=MAX_TIMEOUT_MS).contains(&ms)
        {
            return Err(super::invalid(format!(
                "timeoutMs {ms} is out of range: use 1 to {MAX_TIMEOUT_MS}"
            )));
        }
        Ok(input)
    }

    /// The hosts the command asks to reach, each `host` or `host:port`.
    fn hosts(&self) -> Result<Vec<Authority>, ToolError> {
        self.network
            .iter()
            .map(|text| {
                Authority::parse(text).map_err(|e| {
                    super::invalid(format!(
                        "network entry `{}` is not a host or host:port: {e}",
                        display_text(text)
                    ))
                })
            })
            .collect()
    }

    /// The directory to run in: `cwd` resolved inside the workspace, or the workspace's cwd.
    fn dir(&self, ctx: &ToolContext) -> Result<PathBuf, ToolError> {
        let Some(cwd) = &self.cwd else {
            return Ok(ctx.workspace.cwd().to_path_buf());
        };
        let dir = ctx.workspace.resolve(cwd)?;
        if !dir.is_dir() {
            return Err(ToolError::new(
                ErrorCode::NotDirectory,
                format!(
                    "cwd `{}` is not a directory: give a directory in the workspace",
                    ctx.workspace.relative(&dir)
                ),
            ));
        }
        Ok(dir)
    }
}

impl RunCommand {
    /// The tool with its checked spec.
    pub fn new() -> Result<RunCommand, SpecError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "program": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_PROGRAM_CHARS,
                    "pattern": "^[^\\s|&;<>()$`]+$",
                    "description": "Program name (looked up on PATH) or path. No shell: no pipes, redirections or variables."
                },
                "args": {
                    "type": "array",
                    "maxItems": MAX_ARGS,
                    "items": {"type": "string", "maxLength": MAX_ARG_CHARS},
                    "description": "Arguments, each passed as is."
                },
                "cwd": {
                    "type": "string",
                    "description": "Directory to run in, relative to the workspace. Default: the workspace's working directory."
                },
                "timeoutMs": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT_MS,
                    "description": "Time limit in milliseconds, capped by the configured command timeout."
                },
                "network": {
                    "type": "array",
                    "maxItems": MAX_HOSTS,
                    "items": {"type": "string", "maxLength": 300},
                    "description": "Hosts the program must reach, as host or host:port (ports 80 and 443 when none is given). Without this the program has no network."
                }
            },
            "required": ["program"],
            "additionalProperties": false
        });
        let description = "Run a program with arguments in the workspace, without a shell, and \
            return its exit code, stdout and stderr (bounded together). A non-zero exit code is \
            returned as a result, not an error. The program is stopped at the time limit.";
        Ok(RunCommand {
            spec: spec(
                NAME,
                description,
                Risk::Process,
                Capability::ProcessSpawn,
                schema,
            )?,
        })
    }
}

#[async_trait]
impl Tool for RunCommand {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        "builtin.tool.run_command"
    }

    fn capability_requests(
        &self,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        let input = Input::parse(input)?;
        // Only what the text shows is checked before policy judges: whether `cwd` exists or is
        // a directory is told once the call is allowed, never to a call that is denied.
        if let Some(cwd) = &input.cwd {
            ctx.workspace.judged(cwd)?;
        }
        let mut requests = vec![CapabilityRequest {
            capability: Capability::ProcessSpawn,
            scope: Scope {
                program: Some(input.program.clone()),
                ..Scope::default()
            },
        }];
        requests.extend(
            input
                .hosts()?
                .into_iter()
                .map(|authority| CapabilityRequest {
                    capability: Capability::NetHttp,
                    scope: Scope::authority(authority),
                }),
        );
        Ok(requests)
    }

    fn summarize(&self, input: &Value) -> String {
        let program = input.get("program").and_then(Value::as_str).unwrap_or("?");
        let mut line = format!("$ {program}");
        for arg in input
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let arg = arg.as_str().map_or_else(|| arg.to_string(), str::to_owned);
            line.push_str(" '");
            line.push_str(&arg.replace('\'', r"'\''"));
            line.push('\'');
        }
        let hosts: Vec<&str> = input
            .get("network")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !hosts.is_empty() {
            line.push_str(" with network to ");
            line.push_str(&hosts.join(", "));
        }
        if let Some(cwd) = input.get("cwd").and_then(Value::as_str) {
            line.push_str(" in ");
            line.push_str(cwd);
            if !cwd.ends_with('/') {
                line.push('/');
            }
        }
        let line = display_text(&line);
        let total = line.chars().count();
        match super::truncate_chars(&line, MAX_SUMMARY_CHARS) {
            (head, true) => format!("{head}… ({} more characters)", total - MAX_SUMMARY_CHARS),
            (whole, false) => whole.to_owned(),
        }
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input = Input::parse(&input)?;
        let dir = input.dir(ctx)?;
        let cap = ctx.limits.command_timeout_ms.max(1);
        let timeout_ms = input.timeout_ms.unwrap_or(cap).min(cap);
        if ctx.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let (mut child, _jail) = spawn(&input, &dir, ctx, timeout_ms)?;
        let pgid = child.id();
        let captured = Arc::new(Mutex::new(Captured::new(ctx.limits.max_output_bytes)));
        // Someone watches the run (the terminal): the output goes to them as it comes.
        let live = |stream| {
            ctx.run
                .observed()
                .then(|| LiveOutput::new(ctx.run.clone(), ctx.call_id.clone(), stream))
        };
        let mut drains = [
            tokio::spawn(drain(
                child.stdout.take(),
                captured.clone(),
                Stream::Stdout,
                live(Stream::Stdout),
            )),
            tokio::spawn(drain(
                child.stderr.take(),
                captured.clone(),
                Stream::Stderr,
                live(Stream::Stderr),
            )),
        ];
        // If this future is dropped mid-run (by a caller's own deadline, say), the group dies
        // and the readers stop too.
        let mut guard = RunGuard {
            pgid,
            drains: drains.each_ref().map(JoinHandle::abort_handle),
        };
        let ending = tokio::select! {
            status = child.wait() => Ending::Exited(status),
            () = tokio::time::sleep(Duration::from_millis(timeout_ms)) => Ending::TimedOut,
            () = ctx.cancel.cancelled() => Ending::Cancelled,
        };
        let status = match ending {
            Ending::Exited(status) => {
                guard.disarm();
                status
            }
            stopped => {
                signal_group(pgid, libc::SIGTERM);
                let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
                // Also reaches what the program started and whatever ignored SIGTERM.
                signal_group(pgid, libc::SIGKILL);
                let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
                guard.disarm();
                stop_drains(&mut drains).await;
                // What it printed before it was stopped is part of what happened: the model
                // and the stored session see it with the error.
                let so_far =
                    output_so_far(&captured.lock().unwrap_or_else(PoisonError::into_inner));
                return Err(match stopped {
                    Ending::Cancelled => ToolError::new(
                        ErrorCode::Cancelled,
                        format!("{}{so_far}", cancelled().message),
                    ),
                    _ => ToolError::new(
                        ErrorCode::TimedOut,
                        format!(
                            "`{}` did not finish within {timeout_ms} ms and was stopped: raise \
                             timeoutMs (at most {cap}) or run something shorter{so_far}",
                            input.program
                        ),
                    ),
                });
            }
        };
        let status = status.map_err(|err| {
            ToolError::new(
                ErrorCode::ProcessError,
                format!("waiting for `{}` failed: {err}", input.program),
            )
        })?;
        // The program has exited; its pipes close unless something it started still holds them.
        if !drains_done(&mut drains, PIPE_GRACE).await {
            signal_group(pgid, libc::SIGKILL);
            stop_drains(&mut drains).await;
        }
        let captured =
            std::mem::take(&mut *captured.lock().unwrap_or_else(PoisonError::into_inner));
        let truncated = captured.dropped;
        let text = |bytes: &[u8]| {
            let bytes = if truncated {
                trim_partial_utf8(bytes)
            } else {
                bytes
            };
            String::from_utf8_lossy(bytes).into_owned()
        };
        let mut value = json!({
            "exitCode": status.code(),
            "stdout": text(&captured.stdout),
            "stderr": text(&captured.stderr),
            "truncated": truncated,
        });
        if let (Some(signal), Some(map)) = (status.signal(), value.as_object_mut()) {
            map.insert("signal".to_owned(), Value::String(signal_name(signal)));
        }
        bounded_output(value, truncated, &ctx.limits)
    }
}

enum Ending {
    Exited(io::Result<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

fn spawn(
    input: &Input,
    dir: &Path,
    ctx: &ToolContext,
    timeout_ms: u64,
) -> Result<(tokio::process::Child, Jail), ToolError> {
    let mut command = tokio::process::Command::new(&input.program);
    let bins = ctx.session.plugin_bin();
    command
        .args(&input.args)
        .current_dir(dir)
        .env_clear()
        .envs(ctx.env.iter())
        .envs(with_plugin_bin(&bins, ctx.env.get("PATH")).map(|path| ("PATH", path)))
        .envs(crate::telemetry::traceparent(ctx).map(|t| ("TRACEPARENT", t)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut confinement = crate::process::confinement(
        ctx.workspace.root(),
        &ctx.granted,
        timeout_ms.div_ceil(1000) + 1,
    );
    // A granted plugin's `bin/` is readable (so its programs start), never writable.
    confinement.read.extend(bins.iter().cloned());
    // The files the approved command line names are its to read.
    confinement.name_arguments(std::iter::once(&input.program).chain(&input.args));
    // The launcher starts it in a session (and so a process group) of its own.
    ctx.launcher.spawn(command, &confinement).map_err(|err| {
        let err = match err {
            bosun_launch::LaunchError::Spawn(err) => err,
            other => return ToolError::new(ErrorCode::ProcessError, other.to_string()),
        };
        let program = &input.program;
        let message = match err.kind() {
            io::ErrorKind::NotFound => format!(
                "could not start `{program}`: no such program on PATH or at that path; check the name, or use list_files to find it"
            ),
            io::ErrorKind::PermissionDenied => {
                format!(
                    "could not start `{program}`: it is not executable, or the sandbox does not \
                     let it be read (a program outside the system directories and the workspace \
                     needs its directory in [sandbox] read)"
                )
            }
            _ => format!("could not start `{program}`: {err}"),
        };
        ToolError::new(ErrorCode::ProcessError, message)
    })
}

/// `PATH` with the granted plugins' `bin/` folders before `path` (the child's own lookup
/// finds them first, as Claude Code puts a plugin's `bin/` on its Bash tool's PATH); `None`
/// when none is granted.
fn with_plugin_bin(bins: &[PathBuf], path: Option<&String>) -> Option<String> {
    if bins.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = bins.iter().map(|b| b.display().to_string()).collect();
    parts.extend(path.filter(|p| !p.is_empty()).cloned());
    Some(parts.join(":"))
}

/// Output kept from both pipes, within one shared budget.
#[derive(Debug, Default)]
struct Captured {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    left: usize,
    dropped: bool,
}

impl Captured {
    fn new(budget: usize) -> Captured {
        Captured {
            left: budget,
            ..Captured::default()
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

/// The output a stopped program printed, for its error: empty when it printed nothing, else
/// each stream that has something under its name (already bounded by the output budget).
fn output_so_far(captured: &Captured) -> String {
    let mut text = String::new();
    for (name, bytes) in [("stdout", &captured.stdout), ("stderr", &captured.stderr)] {
        if bytes.is_empty() {
            continue;
        }
        let bytes = if captured.dropped {
            trim_partial_utf8(bytes)
        } else {
            bytes
        };
        text.push_str(&format!(
            "\n{name} so far:\n{}",
            String::from_utf8_lossy(bytes).trim_end()
        ));
    }
    if captured.dropped {
        text.push_str("\n(truncated: more was printed than the output limit keeps)");
    }
    text
}

/// Reads a pipe to its end, keeping what fits the shared budget and dropping the rest; what
/// is kept also goes to `live`, when someone watches.
async fn drain(
    pipe: Option<impl AsyncRead + Unpin>,
    captured: Arc<Mutex<Captured>>,
    stream: Stream,
    mut live: Option<LiveOutput>,
) {
    let Some(mut pipe) = pipe else { return };
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let keep = {
            let mut captured = captured.lock().unwrap_or_else(PoisonError::into_inner);
            let keep = n.min(captured.left);
            captured.left -= keep;
            if keep < n {
                captured.dropped = true;
            }
            let sink = match stream {
                Stream::Stdout => &mut captured.stdout,
                Stream::Stderr => &mut captured.stderr,
            };
            sink.extend_from_slice(&chunk[..keep]);
            keep
        };
        if let Some(live) = &mut live {
            live.push(&chunk[..keep]);
        }
    }
    if let Some(live) = &mut live {
        live.flush();
    }
}

/// A stream's output on its way to the run's observers: whole lines, so that redaction sees
/// a secret whole, and a long line in pieces of at most [`LIVE_PIECE`] bytes.
struct LiveOutput {
    run: Arc<crate::trace::RunInfo>,
    call_id: String,
    stream: bosun_core::OutputStream,
    pending: Vec<u8>,
}

/// Most bytes held back waiting for the end of a line.
const LIVE_PIECE: usize = 8 * 1024;

impl LiveOutput {
    fn new(run: Arc<crate::trace::RunInfo>, call_id: String, stream: Stream) -> Self {
        Self {
            run,
            call_id,
            stream: match stream {
                Stream::Stdout => bosun_core::OutputStream::Stdout,
                Stream::Stderr => bosun_core::OutputStream::Stderr,
            },
            pending: Vec::new(),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        let end = match self.pending.iter().rposition(|b| *b == b'\n') {
            Some(at) => at + 1,
            None if self.pending.len() >= LIVE_PIECE => trim_partial_utf8(&self.pending).len(),
            None => return,
        };
        let rest = self.pending.split_off(end);
        let piece = std::mem::replace(&mut self.pending, rest);
        self.send(&piece);
    }

    fn flush(&mut self) {
        let piece = std::mem::take(&mut self.pending);
        self.send(&piece);
    }

    fn send(&self, piece: &[u8]) {
        if piece.is_empty() {
            return;
        }
        self.run.live(bosun_core::Event::ToolOutput {
            call_id: self.call_id.clone(),
            stream: self.stream,
            text: String::from_utf8_lossy(piece).into_owned(),
        });
    }
}

/// Whether both readers reached the end of their pipes within `grace`.
async fn drains_done(drains: &mut [JoinHandle<()>; 2], grace: Duration) -> bool {
    let both = async {
        for drain in drains.iter_mut() {
            // A finished handle must not be polled again.
            if !drain.is_finished() {
                let _ = drain.await;
            }
        }
    };
    tokio::time::timeout(grace, both).await.is_ok()
}

/// Lets the readers take what the killed processes left in the pipes, then stops them: a
/// process that left the group may hold a pipe open for ever.
async fn stop_drains(drains: &mut [JoinHandle<()>; 2]) {
    if !drains_done(drains, PIPE_GRACE).await {
        for drain in drains.iter() {
            drain.abort();
        }
    }
}

/// Cleans up a run when dropped: kills the child's process group unless disarmed, and stops
/// the pipe readers (a no-op once they have finished).
struct RunGuard {
    pgid: Option<u32>,
    drains: [AbortHandle; 2],
}

impl RunGuard {
    /// The group has been dealt with; dropping the guard no longer signals it.
    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        signal_group(self.pgid, libc::SIGKILL);
        for drain in &self.drains {
            drain.abort();
        }
    }
}

/// Sends `signal` to the process group led by the child.
#[allow(unsafe_code)]
fn signal_group(pgid: Option<u32>, signal: libc::c_int) {
    let Some(pgid) = pgid.and_then(|id| libc::pid_t::try_from(id).ok()) else {
        return;
    };
    // Never 0 or 1: kill(0) would signal Bosun's own group and kill(-1) every process.
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) takes two integers and reads or writes no memory of this process. The
    // child was started in a session of its own (the launcher's `setsid`), so its pid is its group's id and `-pgid`
    // addresses that group only. The result is ignored: ESRCH means the group is already gone.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}
