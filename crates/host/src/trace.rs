//! Run traces: `$BOSUN_HOME/runs/<run-id>.jsonl`, one [`Envelope`] per line (trace schema
//! version [`TRACE_SCHEMA_VERSION`]). Secret values are redacted before an event is written or
//! handed to an observer; nothing unredacted leaves this module.
//!
//! Lines are buffered and flushed at the end of every tool call and of the run, so a trace costs
//! one write per call; a crash loses at most the call in flight.
//!
//! Recording is on every call's path, so a line is serialised from borrowed fields into a
//! buffer the trace keeps, with the time formatted from a per-second prefix; the four events of
//! every call ([`Trace::record_call`]) are borrowed from the call itself. An owned [`Envelope`]
//! is built only for observers or when a line holds a secret. Whichever way, the line is the
//! one serialising the envelope writes (tested).

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bosun_core::{Classification, Envelope, Event, Redactor, TRACE_SCHEMA_VERSION};
use chrono::Utc;

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
}

struct Writer {
    file: Option<BufWriter<File>>,
    sequence: u64,
    error: Option<std::io::Error>,
    /// The line being written, kept between events so recording allocates no buffer.
    line: Vec<u8>,
    clock: Clock,
}

impl Writer {
    fn new(file: Option<BufWriter<File>>) -> Self {
        Self {
            file,
            sequence: 0,
            error: None,
            line: Vec::with_capacity(1024),
            clock: Clock::default(),
        }
    }
}

/// One trace line as written: [`Envelope`]'s fields, in its order and with its names, borrowed.
#[derive(serde::Serialize)]
struct Line<'a> {
    schema_version: u32,
    run_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_run_id: Option<&'a str>,
    sequence: u64,
    timestamp: &'a str,
    event: &'a Recorded<'a>,
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

impl serde::Serialize for Recorded<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Recorded::Owned(event) => event.serialize(serializer),
            Recorded::Call(event) => event.serialize(serializer),
        }
    }
}

/// The four events of every tool call, borrowed: the same tags, fields and order as their
/// [`Event`] variants, so a line is the same whichever records it (tested).
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[serde(tag = "type")]
pub(crate) enum CallEvent<'a> {
    #[serde(rename = "tool.proposed")]
    Proposed {
        call_id: &'a str,
        tool: &'a str,
        input: &'a serde_json::Value,
    },
    #[serde(rename = "tool.decided")]
    Decided {
        call_id: &'a str,
        tool: &'a str,
        action: &'a str,
        capabilities: &'a [bosun_core::CapabilityRequest],
        explanation: &'a bosun_core::Explanation,
    },
    #[serde(rename = "tool.started")]
    Started { call_id: &'a str, tool: &'a str },
    #[serde(rename = "tool.completed")]
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
    writer: Mutex<Writer>,
    info: Arc<RunInfo>,
}

/// What a tool call may know of the run it belongs to (a subagent's trace goes beside it, and
/// its events reach the same observers — the terminal shows a running child).
pub struct RunInfo {
    /// The run.
    pub run_id: String,
    /// Where its trace is written, if anywhere.
    pub runs_dir: Option<PathBuf>,
    /// Its redaction.
    pub redactor: Arc<Redactor>,
    /// Who watches the run's events.
    pub observers: Vec<Arc<dyn Observer>>,
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
            runs_dir: Some(runs_dir.to_path_buf()),
            redactor: redactor.clone(),
            observers: Vec::new(),
        });
        Ok(Self {
            info,
            run_id,
            parent_run_id,
            path: Some(path),
            redactor,
            observers: Vec::new(),
            writer: Mutex::new(Writer::new(Some(BufWriter::with_capacity(64 * 1024, file)))),
        })
    }

    /// A trace that records to observers only (embedding, tests).
    pub fn in_memory(run_id: String, redactor: Arc<Redactor>) -> Self {
        Self {
            info: Arc::new(RunInfo {
                run_id: run_id.clone(),
                runs_dir: None,
                redactor: redactor.clone(),
                observers: Vec::new(),
            }),
            run_id,
            parent_run_id: None,
            path: None,
            redactor,
            observers: Vec::new(),
            writer: Mutex::new(Writer::new(None)),
        }
    }

    /// Adds an observer.
    pub fn observe(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
        self.info = Arc::new(RunInfo {
            run_id: self.info.run_id.clone(),
            runs_dir: self.info.runs_dir.clone(),
            redactor: self.info.redactor.clone(),
            observers: self.observers.clone(),
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
        }
        writer.line.clear();
        let written = serde_json::to_writer(
            &mut writer.line,
            &Line {
                schema_version: TRACE_SCHEMA_VERSION,
                run_id: &self.run_id,
                parent_run_id: self.parent_run_id.as_deref(),
                sequence,
                timestamp: writer.clock.format(now),
                event: &event,
            },
        );
        if let Err(e) = written {
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
        let finds = match std::str::from_utf8(&writer.line) {
            Ok(line) => self.redactor.finds(line),
            Err(_) => true,
        };
        let observed = if finds {
            match redacted(&self.redactor, &envelope(event)) {
                Some((redacted_envelope, line)) => {
                    writer.line.clear();
                    writer.line.extend_from_slice(line.as_bytes());
                    Some(redacted_envelope)
                }
                None => return,
            }
        } else if self.observers.is_empty() {
            None
        } else {
            Some(envelope(event))
        };
        if !live && let Some(file) = writer.file.as_mut() {
            writer.line.push(b'\n');
            if let Err(e) = file.write_all(&writer.line) {
                writer.error.get_or_insert(e);
            }
        }
        drop(guard);
        let Some(envelope) = observed else {
            return;
        };
        for observer in &self.observers {
            observer.observe(&envelope);
        }
    }

    /// Writes buffered lines to the file.
    pub fn flush(&self) {
        if let Ok(mut writer) = self.writer.lock()
            && let Some(Err(e)) = writer.file.as_mut().map(|f| f.flush())
        {
            writer.error.get_or_insert(e);
        }
    }

    /// Flushes, syncs and reports the first write error, if any.
    pub fn finish(&self) -> Result<(), TraceError> {
        let Ok(mut writer) = self.writer.lock() else {
            return Ok(());
        };
        if let Some(file) = writer.file.as_mut()
            && let Err(e) = file.flush().and_then(|()| file.get_ref().sync_data())
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

/// Whether the trace at `path` is a subagent's (its first envelope names a parent run).
fn started_by_another(path: &Path) -> bool {
    use std::io::{BufRead as _, Read as _};
    let Ok(file) = fs::File::open(path) else {
        return false;
    };
    let mut first = String::new();
    let mut reader = std::io::BufReader::new(file.take(64 * 1024));
    if reader.read_line(&mut first).is_err() {
        return false;
    }
    serde_json::from_str::<serde_json::Value>(&first)
        .is_ok_and(|v| v.get("parent_run_id").is_some_and(|p| !p.is_null()))
}

/// Finds a run's trace: `last` is the newest run a person started (not a subagent's);
/// otherwise an id or a unique prefix of one.
pub fn find_run(runs_dir: &Path, which: &str) -> Result<PathBuf, TraceError> {
    let entries = fs::read_dir(runs_dir).map_err(|_| {
        TraceError::NotFound(format!("no runs recorded yet in {}", runs_dir.display()))
    })?;
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .map(str::to_owned)
        })
        .collect();
    ids.sort();
    let chosen = if which == "last" {
        // The newest run that no other run started: a subagent's run starts after its
        // parent's, but `last` means the run the person started.
        ids.iter()
            .rev()
            .find(|id| !started_by_another(&runs_dir.join(format!("{id}.jsonl"))))
            .cloned()
    } else {
        let matches: Vec<&String> = ids.iter().filter(|id| id.starts_with(which)).collect();
        match matches.as_slice() {
            [one] => Some((*one).clone()),
            [] => None,
            _ => {
                return Err(TraceError::NotFound(format!(
                    "run id prefix `{which}` matches {} runs; give more characters",
                    matches.len()
                )));
            }
        }
    };
    chosen
        .map(|id| runs_dir.join(format!("{id}.jsonl")))
        .ok_or_else(|| {
            TraceError::NotFound(format!(
                "no run `{which}` in {}; `bosun inspect last` shows the newest",
                runs_dir.display()
            ))
        })
}

/// Reads every envelope of a trace file.
pub fn read_run(path: &Path) -> Result<Vec<Envelope>, TraceError> {
    let file = File::open(path).map_err(|source| TraceError::Read {
        path: path.into(),
        source,
    })?;
    let mut envelopes = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| TraceError::Read {
            path: path.into(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let envelope = serde_json::from_str(&line).map_err(|e| TraceError::Parse {
            path: path.into(),
            line: i + 1,
            message: e.to_string(),
        })?;
        envelopes.push(envelope);
    }
    Ok(envelopes)
}

fn short(value: &serde_json::Value, max: usize) -> String {
    let text = crate::approval::sanitize_for_terminal(&value.to_string());
    if text.chars().count() <= max {
        text
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// The runs in `runs_dir` whose parent is `run_id` (its subagents), each as (run id, what
/// started it), oldest first. Reads only the first line of each trace.
pub fn children_of(runs_dir: &Path, run_id: &str) -> Vec<(String, String)> {
    use std::io::Read as _;
    let Ok(entries) = fs::read_dir(runs_dir) else {
        return Vec::new();
    };
    let mut children = Vec::new();
    for entry in entries.filter_map(Result::ok).take(100_000) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Ok(file) = fs::File::open(&path) else {
            continue;
        };
        let mut line = String::new();
        if std::io::BufReader::new(file)
            .take(64 * 1024)
            .read_line(&mut line)
            .is_err()
        {
            continue;
        }
        let Ok(envelope) = serde_json::from_str::<Envelope>(&line) else {
            continue;
        };
        if envelope.parent_run_id.as_deref() != Some(run_id) {
            continue;
        }
        let command = match &envelope.event {
            Event::RunStarted { command, .. } => command.clone(),
            _ => String::new(),
        };
        children.push((envelope.timestamp, envelope.run_id, command));
    }
    children.sort();
    children
        .into_iter()
        .map(|(_, id, command)| (id, command))
        .collect()
}

/// Renders a run for a person.
pub fn render(envelopes: &[Envelope]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let Some(first) = envelopes.first() else {
        return "empty trace\n".to_owned();
    };
    let start = first.timestamp;
    let _ = writeln!(out, "run {}", first.run_id);
    if let Some(parent) = &first.parent_run_id {
        let _ = writeln!(out, "  parent run {parent}");
    }
    for envelope in envelopes {
        let at = (envelope.timestamp - start).num_milliseconds();
        let _ = match &envelope.event {
            Event::RunStarted {
                command,
                workspace,
                mode,
                sandbox,
            } => writeln!(
                out,
                "  started {} — {command}\n  workspace {workspace}, mode {mode}{}",
                envelope.timestamp.format("%Y-%m-%d %H:%M:%S UTC"),
                if sandbox.is_empty() {
                    String::new()
                } else {
                    format!("\n  {sandbox}")
                }
            ),
            Event::RunFinished { outcome } => writeln!(
                out,
                "  [{at:>5} ms] finished: {}",
                serde_json::to_string(outcome)
                    .unwrap_or_default()
                    .trim_matches('"')
            ),
            Event::ToolProposed {
                call_id,
                tool,
                input,
            } => {
                writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} proposed {tool} {}",
                    short(input, 160)
                )
            }
            Event::ToolDecided {
                call_id,
                explanation,
                ..
            } => {
                writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} decided {}",
                    explanation.summary()
                )
            }
            Event::CapabilityDecided {
                call_id,
                capability,
                explanation,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} asked mid-call for {} — decided {}",
                capability.capability.as_action(),
                explanation.summary()
            ),
            Event::ReviewAnswered {
                call_id,
                reviewer,
                verdict,
                reason,
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} reviewed by {reviewer}: {verdict} — {reason}"
            ),
            Event::ApprovalAsked {
                call_id, reason, ..
            } => writeln!(out, "  [{at:>5} ms] {call_id} asked a person: {reason}"),
            Event::ApprovalAnswered { call_id, answer } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} answer: {}",
                serde_json::to_string(answer)
                    .unwrap_or_default()
                    .trim_matches('"')
            ),
            Event::PromptAssembled { sources } => {
                let parts: Vec<String> = sources
                    .iter()
                    .map(|p| {
                        format!(
                            "{} {} ({} B{})",
                            p.kind,
                            p.label,
                            p.bytes,
                            if p.truncated { ", cut" } else { "" }
                        )
                    })
                    .collect();
                writeln!(
                    out,
                    "  [{at:>5} ms] system prompt: {}",
                    crate::approval::sanitize_for_terminal(&parts.join("; "))
                )
            }
            Event::ModelStarted {
                step,
                model,
                messages,
                estimated_input_tokens,
            } => writeln!(
                out,
                "  [{at:>5} ms] model step {step}: {model}, {messages} messages, ~{estimated_input_tokens} tokens in"
            ),
            Event::ModelCompleted {
                step,
                finish,
                tool_calls,
                usage,
            } => writeln!(
                out,
                "  [{at:>5} ms] model step {step} done: {}, {tool_calls} tool call(s){}",
                finish.as_ref().map_or("?", |f| f.as_str()),
                usage
                    .map(|u| format!(", {} tokens in / {} out", u.input_tokens, u.output_tokens))
                    .unwrap_or_default()
            ),
            Event::ModelRetrying {
                step,
                attempt,
                attempts,
                delay_ms,
                reason,
            } => writeln!(
                out,
                "  [{at:>5} ms] model step {step}: attempt {attempt} of {attempts} failed ({}); retrying in {:.1} s",
                crate::approval::sanitize_for_terminal(reason),
                *delay_ms as f64 / 1000.0
            ),
            Event::ModelReasoning { step, text } => writeln!(
                out,
                "  [{at:>5} ms] model step {step} reasoning: {}",
                crate::approval::sanitize_for_terminal(text).replace('\n', "\n      ")
            ),
            Event::ModelFailed { step, error } => writeln!(
                out,
                "  [{at:>5} ms] model step {step} failed: {}",
                crate::approval::sanitize_for_terminal(error)
            ),
            // Never written to a trace file; a trace built by hand may hold it.
            Event::ModelText { step, text } => writeln!(
                out,
                "  [{at:>5} ms] model step {step} text: {}",
                short(&serde_json::Value::String(text.clone()), 120)
            ),
            Event::ContextElided {
                call_id,
                tool,
                bytes,
            } => {
                writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} elided {bytes} bytes of {tool} output to fit the context window"
                )
            }
            Event::ContextCompacted {
                summarised,
                kept,
                summary_bytes,
                error,
            } => match error {
                None => writeln!(
                    out,
                    "  [{at:>5} ms] compacted {summarised} messages into a summary of {summary_bytes} bytes; {kept} kept"
                ),
                Some(error) => writeln!(
                    out,
                    "  [{at:>5} ms] compaction failed: {}",
                    crate::approval::sanitize_for_terminal(error)
                ),
            },
            Event::BudgetExhausted { budget, limit } => writeln!(
                out,
                "  [{at:>5} ms] budget exhausted: {budget} (limit {limit})"
            ),
            Event::ToolLog {
                call_id,
                level,
                message,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} log {level}: {}",
                crate::approval::sanitize_for_terminal(message)
            ),
            Event::ToolStarted { call_id, tool } => {
                writeln!(out, "  [{at:>5} ms] {call_id} started {tool}")
            }
            Event::ToolCompleted {
                call_id,
                output,
                truncated,
                duration_us,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} completed in {:.1} ms{}: {}",
                *duration_us as f64 / 1000.0,
                if *truncated { " (truncated)" } else { "" },
                short(output, 160)
            ),
            Event::TaintRaised {
                call_id, from, to, ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} raised the session's taint {from} → {to}"
            ),
            Event::HookApplied {
                call_id,
                hooks,
                redactions,
                level,
                untrusted,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} {}: {redactions} redacted{}{}",
                hooks.join(", "),
                level.map(|l| format!(", level {l}")).unwrap_or_default(),
                if *untrusted { ", untrusted input" } else { "" }
            ),
            Event::UntrustedInput {
                call_id, source, ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} brought untrusted input into the session: {source}"
            ),
            Event::ApprovalRemembered {
                call_id,
                file,
                rules,
                error,
            } => match error {
                None => writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} remembered {} rule(s) in {}",
                    rules.len(),
                    crate::approval::sanitize_for_terminal(file)
                ),
                Some(error) => writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} could not remember the approval in {}: {}",
                    crate::approval::sanitize_for_terminal(file),
                    crate::approval::sanitize_for_terminal(error)
                ),
            },
            Event::ToolFailed { call_id, error, .. } => {
                writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} failed: {} — {}",
                    error.code,
                    crate::approval::sanitize_for_terminal(&error.message)
                )
            }
        };
    }
    out.push_str(&labels_timeline(envelopes, start));
    out
}

/// The session's labels over the run, apart: each rise of its level, the untrusted input it
/// read, a hook's label, and every decision information flow tightened — with why.
fn labels_timeline(envelopes: &[Envelope], start: chrono::DateTime<chrono::Utc>) -> String {
    use std::fmt::Write as _;
    let mut lines = String::new();
    let mut level = Classification::Public;
    let mut untrusted: Option<String> = None;
    for envelope in envelopes {
        let at = (envelope.timestamp - start).num_milliseconds();
        let state = |level: Classification, untrusted: &Option<String>| match untrusted {
            Some(_) => format!("{level}, untrusted"),
            None => level.to_string(),
        };
        match &envelope.event {
            Event::TaintRaised {
                call_id,
                tool,
                from,
                to,
            } => {
                level = level.max(*to);
                let _ = writeln!(
                    lines,
                    "  [{at:>5} ms] {call_id} {tool}: level {from} → {to}  (session: {})",
                    state(level, &untrusted)
                );
            }
            Event::UntrustedInput {
                call_id,
                tool,
                source,
            } => {
                untrusted.get_or_insert_with(|| source.clone());
                let _ = writeln!(
                    lines,
                    "  [{at:>5} ms] {call_id} {tool}: untrusted input from {}  (session: {})",
                    crate::approval::sanitize_for_terminal(source),
                    state(level, &untrusted)
                );
            }
            Event::HookApplied {
                call_id,
                tool,
                hooks,
                level: Some(hooked),
                ..
            } => {
                let _ = writeln!(
                    lines,
                    "  [{at:>5} ms] {call_id} {tool}: labelled {hooked} by {}",
                    hooks.join(", ")
                );
            }
            Event::ToolDecided {
                call_id,
                tool,
                explanation,
                ..
            }
            | Event::CapabilityDecided {
                call_id,
                tool,
                explanation,
                ..
            } => {
                for check in explanation
                    .checks
                    .iter()
                    .filter(|c| c.layer == bosun_core::Layer::Flow)
                {
                    let _ = writeln!(
                        lines,
                        "  [{at:>5} ms] {call_id} {tool}: {} {} — {}  (session: {})",
                        check.decision,
                        crate::approval::sanitize_for_terminal(&check.subject),
                        crate::approval::sanitize_for_terminal(&check.rule),
                        state(level, &untrusted)
                    );
                }
            }
            _ => {}
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("labels (the session's level and integrity, and what they decided):\n{lines}")
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
                let line = serde_json::to_string(&Line {
                    schema_version: TRACE_SCHEMA_VERSION,
                    run_id: "run \"quoted\"",
                    parent_run_id: parent.as_deref(),
                    sequence: 7,
                    timestamp: clock.format(at),
                    event: &recorded,
                })
                .unwrap();
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
}
