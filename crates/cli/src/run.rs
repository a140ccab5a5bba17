//! `bosun run`, `bosun sessions list`, `bosun models list` and the hidden
//! `bosun demo-model serve`: load configuration, build the turn (`bosun_agent::turn`), run it
//! and print. No decision is made here.
//!
//! `bosun run` exit codes:
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | the model finished its answer (tool errors along the way do not count: the model saw them and carried on) |
//! | 2 | usage or configuration error, no model configured, a session that cannot be resumed |
//! | 5 | a budget ran out (`[agent] max_steps` or `max_tool_calls`); the session is saved and can be resumed |
//! | 6 | the model provider failed (unreachable, refused the key, broke the stream) after its retries |
//! | 130 | cancelled with Ctrl-C; the session is saved and can be resumed |

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use bosun_agent::assembly::TurnError;
use bosun_agent::conversation::Conversation;
use bosun_agent::run::RunEnd;
use bosun_agent::scripted::{Script, ScriptedModel};
use bosun_agent::session_store::{SessionStore, SessionSummary};
use bosun_agent::turn::TurnDone;
use bosun_core::{Envelope, Event};
use bosun_host::approval::sanitize_for_terminal;
use bosun_host::builtin::StepStatus;
use bosun_host::config::bosun_home;
use bosun_host::trace::Observer;
use bosun_models::{KeyStatus, process_env};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::env::{Env, config_path, load, print_json};
use crate::exit;
use crate::term::{errln, outln};

/// Exit code: a budget ran out.
pub const LIMIT_REACHED: u8 = 5;
/// Exit code: the model provider failed.
pub const MODEL_ERROR: u8 = 6;
/// Exit code: cancelled (128 + SIGINT, as shells report it).
pub const CANCELLED: u8 = 130;

/// Largest task read from stdin.
const MAX_TASK_BYTES: u64 = 1024 * 1024;
/// Largest scripted-model script.
const MAX_SCRIPT_BYTES: u64 = 4 * 1024 * 1024;

fn no_model_message(env: &Env) -> String {
    TurnError::NoModel {
        config: config_path(env),
    }
    .to_string()
}

fn read_task(task: Option<&str>) -> Result<String> {
    let task = match task {
        Some(task) if task != "-" => task.to_owned(),
        None if std::io::stdin().is_terminal() => bail!(
            "bosun run needs a task: bosun run \"describe what you want done\" (or pipe it on stdin)"
        ),
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .take(MAX_TASK_BYTES + 1)
                .read_to_string(&mut text)
                .context("reading the task from stdin")?;
            if text.len() as u64 > MAX_TASK_BYTES {
                bail!(
                    "the task on stdin is over {} MiB; put large material in a file and name it in the task",
                    MAX_TASK_BYTES >> 20
                );
            }
            text
        }
    };
    if task.trim().is_empty() {
        bail!("the task is empty: say what you want done");
    }
    Ok(task)
}

/// The person's view on stderr: the model's text as it streams, a line per tool call, a running
/// command's output as it comes and, on a terminal, a spinner on the last line while the model
/// thinks or a tool runs (erased before anything else is written), coloured unless `NO_COLOR`
/// is set.
#[derive(Default)]
struct Terminal {
    screen: Mutex<Screen>,
    /// Whether a running command's output is shown as it comes (stderr is a terminal).
    live: bool,
    /// Whether marks are coloured (stderr is a terminal and `NO_COLOR` is unset).
    colour: bool,
}

/// What is on stderr now.
#[derive(Default)]
struct Screen {
    /// Whether the cursor is after streamed text, not at the start of a line.
    mid_line: bool,
    /// What the run waits on (the model, a tool) and since when, for the spinner.
    waiting: Option<(String, Instant)>,
    /// Whether the spinner's line is drawn now.
    spinner_shown: bool,
    /// The spinner's next frame.
    frame: usize,
}

/// The spinner's frames.
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// How often the spinner turns.
const SPINNER_TICK: Duration = Duration::from_millis(100);

impl Screen {
    /// Erases the spinner's line, if drawn, so what comes next starts on a clean line.
    fn erase_spinner(&mut self, err: &mut impl Write) {
        if self.spinner_shown {
            let _ = write!(err, "\r\x1b[2K");
            self.spinner_shown = false;
        }
    }
}

impl Terminal {
    fn screen(&self) -> std::sync::MutexGuard<'_, Screen> {
        self.screen.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn line(&self, text: &str) {
        let mut screen = self.screen();
        let mut err = std::io::stderr().lock();
        screen.erase_spinner(&mut err);
        if screen.mid_line {
            let _ = writeln!(err);
        }
        let _ = writeln!(err, "{text}");
        let _ = err.flush();
        screen.mid_line = false;
    }

    /// Ends the streamed text's last line, if it is open, and stops the spinner.
    fn end_line(&self) {
        let mut screen = self.screen();
        let mut err = std::io::stderr().lock();
        screen.waiting = None;
        screen.erase_spinner(&mut err);
        if screen.mid_line {
            let _ = writeln!(err);
        }
        let _ = err.flush();
        screen.mid_line = false;
    }

    /// What the run waits on now (`None`: nothing, the spinner goes).
    fn wait_on(&self, what: Option<String>) {
        let mut screen = self.screen();
        if what.is_none() {
            let mut err = std::io::stderr().lock();
            screen.erase_spinner(&mut err);
            let _ = err.flush();
        }
        screen.waiting = what.map(|what| (what, Instant::now()));
    }

    /// One turn of the spinner, when the run waits and the cursor is at the start of a line.
    fn tick(&self) {
        let mut screen = self.screen();
        if screen.mid_line {
            return;
        }
        let Some((what, since)) = &screen.waiting else {
            return;
        };
        let frame = SPINNER[screen.frame % SPINNER.len()];
        let text = format!(
            "\r\x1b[2K{} {} {}s  (Ctrl-C cancels)",
            crate::term::paint(&frame.to_string(), crate::term::Paint::Cyan, self.colour),
            sanitize_for_terminal(what),
            since.elapsed().as_secs()
        );
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
        screen.frame += 1;
        screen.spinner_shown = true;
    }

    fn paint(&self, text: &str, paint: crate::term::Paint) -> String {
        crate::term::paint(text, paint, self.colour)
    }
}

/// Turns the spinner every [`SPINNER_TICK`] until dropped.
struct Spinner {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    fn start(terminal: Arc<Terminal>) -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(SPINNER_TICK);
                terminal.tick();
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Observer for Terminal {
    fn observe(&self, envelope: &Envelope) {
        use crate::term::Paint;
        // What a subagent does is its own business: the spinner follows this run.
        let own = envelope.parent_run_id.is_none();
        match &envelope.event {
            Event::ModelStarted { .. } if own => self.wait_on(Some("thinking".to_owned())),
            Event::ModelText { text, .. } => {
                let mut screen = self.screen();
                let mut err = std::io::stderr().lock();
                screen.erase_spinner(&mut err);
                if own {
                    screen.waiting = None;
                }
                let _ = write!(err, "{}", crate::term::escape(text));
                let _ = err.flush();
                screen.mid_line = !text.ends_with('\n');
            }
            Event::ModelRetrying {
                attempt,
                attempts,
                delay_ms,
                reason,
                ..
            } => self.line(&self.paint(&format!(
                "  … the model's provider failed ({reason}); retrying in {:.0} s (attempt {} of {attempts})",
                (*delay_ms as f64 / 1000.0).ceil(),
                attempt + 1
            ), Paint::Yellow)),
            Event::ContextElided { tool, bytes, .. } => self.line(&format!(
                "  (elided {bytes} bytes of an earlier {tool} output to fit the context window)"
            )),
            Event::ContextCompacted {
                summarised, error, ..
            } => self.line(&match error {
                None => format!(
                    "  (compacted {summarised} earlier messages into a summary to fit the context window)"
                ),
                Some(error) => format!(
                    "  (the conversation could not be compacted: {})",
                    sanitize_for_terminal(error)
                ),
            }),
            Event::ModelReasoning { text, .. } => {
                // One line of it, as a glimpse of what the model is doing; the trace has it all.
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let shown: String = first.chars().take(160).collect();
                let more = if shown.len() < text.trim().len() { "…" } else { "" };
                self.line(&self.paint(
                    &format!("  ✻ {}{more}", sanitize_for_terminal(&shown)),
                    Paint::Dim,
                ));
            }
            Event::ToolProposed { tool, input, .. } => {
                if own {
                    self.wait_on(None);
                }
                let input = input.to_string();
                let shown: String = input.chars().take(120).collect();
                let more = if shown.len() < input.len() { "…" } else { "" };
                self.line(&format!(
                    "{} {} {}{more}",
                    self.paint("→", Paint::Cyan),
                    sanitize_for_terminal(tool),
                    sanitize_for_terminal(&shown)
                ));
            }
            Event::ToolStarted { tool, .. } if own => self.wait_on(Some(format!("running {tool}"))),
            Event::ToolCompleted { tool, output, .. } if own => {
                self.wait_on(None);
                // The plan the model keeps, whole, each time it changes.
                if let Some(plan) = bosun_host::builtin::Plan::from_result(tool, output) {
                    self.line(&format!("  Plan ({}):", plan.progress()));
                    if let Some(explanation) = &plan.explanation {
                        self.line(&format!("    {}", sanitize_for_terminal(explanation)));
                    }
                    for step in &plan.plan {
                        let mark = match step.status {
                            StepStatus::Completed => self.paint(step.status.mark(), Paint::Green),
                            StepStatus::InProgress => self.paint(step.status.mark(), Paint::Cyan),
                            StepStatus::Pending => step.status.mark().to_owned(),
                        };
                        self.line(&format!("    {mark} {}", sanitize_for_terminal(&step.step)));
                    }
                }
            }
            // A running command's output, as it comes, under its call: on a terminal only,
            // and only the run's own (a subagent's calls are its own business).
            Event::ToolOutput { text, .. } if self.live && own => {
                for line in text.lines() {
                    self.line(&format!(
                        "  {} {}",
                        self.paint("│", Paint::Dim),
                        sanitize_for_terminal(line)
                    ));
                }
            }
            Event::ToolFailed { error, .. } => {
                if own {
                    self.wait_on(None);
                }
                self.line(&format!(
                    "  {} {}",
                    self.paint(&format!("✗ {}:", error.code), Paint::Red),
                    sanitize_for_terminal(&error.message)
                ));
            }
            Event::RunFinished { .. } if own => self.wait_on(None),
            _ => {}
        }
    }
}

/// `--json`: each trace envelope as one line on stdout, as it happens (the lines the trace
/// file gets), and each model step's text as one `model.text` envelope before the step's
/// `model.completed` — or, with `--stream`, every piece of text as it arrives.
#[derive(Default)]
struct JsonLines {
    stream: bool,
    /// The current step's text so far, in the envelope of its first piece.
    text: std::sync::Mutex<Option<Envelope>>,
    /// The next sequence number of each run's lines. The trace numbers the events it records
    /// and gives live ones (text as it streams) the number of the next; printed lines are
    /// numbered here, one each, so no two lines of a run share a number.
    numbers: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl JsonLines {
    /// The next number of a line of run `run_id`.
    fn number(&self, run_id: &str) -> u64 {
        let mut numbers = self
            .numbers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let next = numbers.entry(run_id.to_owned()).or_insert(0);
        let number = *next;
        *next += 1;
        number
    }

    /// Prints `event` (a `run.result`) in the envelope every other line has: the run's id,
    /// the sequence after its last line, the time now.
    fn print_result(&self, run_id: &str, event: Value) {
        let sequence = self.number(run_id);
        let line = json!({
            "schema_version": bosun_core::TRACE_SCHEMA_VERSION,
            "run_id": run_id,
            "sequence": sequence,
            "timestamp": chrono::Utc::now(),
            "event": event,
        });
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", crate::term::json_safe(&line.to_string()));
        let _ = out.flush();
    }

    fn print(&self, envelope: &Envelope) {
        let numbered = Envelope {
            sequence: self.number(&envelope.run_id),
            ..envelope.clone()
        };
        if let Ok(line) = serde_json::to_string(&numbered) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", crate::term::json_safe(&line));
            let _ = out.flush();
        }
    }
}

impl Observer for JsonLines {
    fn observe(&self, envelope: &Envelope) {
        match &envelope.event {
            Event::ModelText { text, .. } => {
                if self.stream {
                    self.print(envelope);
                } else if let Ok(mut buffered) = self.text.lock() {
                    match &mut *buffered {
                        Some(Envelope {
                            event: Event::ModelText { text: so_far, .. },
                            ..
                        }) => so_far.push_str(text),
                        _ => *buffered = Some(envelope.clone()),
                    }
                }
                return;
            }
            Event::ModelCompleted { .. } if !self.stream => {
                let step_text = self.text.lock().ok().and_then(|mut t| t.take());
                if let Some(step_text) = step_text {
                    self.print(&step_text);
                }
            }
            event if event.is_live() => return,
            _ => {}
        }
        self.print(envelope);
    }
}

/// Opens the conversation to run in: `resume` (an id, a unique prefix or `last`) continues a
/// stored one of this workspace, else a new one starts; `model` overrides its model entry.
pub(crate) fn open_session(
    env: &Env,
    resume: Option<&str>,
    model: Option<&str>,
) -> Result<Conversation> {
    Ok(Conversation::open(
        &env.config,
        env.workspace.root(),
        resume,
        model,
    )?)
}

/// Ctrl-C, listened for from the moment this is made: a signal that comes right after is
/// delivered here, never to the default handler that would kill the process unsaved.
struct Interrupts(tokio::signal::unix::Signal);

impl Interrupts {
    /// Call inside the runtime.
    fn listen() -> std::io::Result<Self> {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).map(Self)
    }

    /// The next Ctrl-C; false when no more can come.
    async fn next(&mut self) -> bool {
        self.0.recv().await.is_some()
    }
}

/// The switches of `bosun run`.
pub struct Flags {
    /// `--json`.
    pub json: bool,
    /// `--stream`.
    pub stream: bool,
    /// `--yes`.
    pub yes: bool,
    /// `--trust-workspace`.
    pub trust_workspace: bool,
}

/// `bosun run [TASK] [--model NAME] [--resume ID] [--image FILE]… [--json] [--yes]
/// [--trust-workspace]`.
///
/// Runs the task with the configured model (`--model`, else the resumed session's, else
/// `default_model`, else the only model configured), every tool call through the chokepoint, and
/// stores the conversation in `$BOSUN_HOME/sessions/<id>.json`. `TASK` of `-` (or none, with
/// stdin not a terminal) reads the task from stdin.
///
/// Output: the model's text streams to stderr as it comes, with a line per tool call (`→ tool
/// input`, and `✗ code: message` when it fails); the final answer goes to stdout — unless stdout
/// and stderr are the same terminal, where it was just shown. Then the session and trace ids on
/// stderr. With `--json`, stdout is JSON lines instead: every trace envelope as it happens, then
/// a `run.result` event in the same envelope (run id, next sequence, time) with the outcome,
/// exit code, final text, session id, model entry, steps, tool calls and token usage.
///
/// Exit codes: see the module docs (0, 2, 5, 6, 130). The first Ctrl-C cancels the run (the
/// running tool sees `cancelled`, the session is saved); a second exits at once with 130.
pub fn run(
    task: Option<&str>,
    model: Option<&str>,
    resume: Option<&str>,
    image_paths: &[String],
    flags: Flags,
) -> Result<u8> {
    let Flags {
        json,
        stream,
        yes,
        trust_workspace,
    } = flags;
    let task = read_task(task)?;
    let mut env = crate::workspace_trust::settle(load()?, trust_workspace)?;
    if env.config.user.models.is_empty() {
        match crate::first_run::prepare_run(&env) {
            Ok(Some(configured)) => env = configured,
            Ok(None) => {}
            Err(hint) => bail!("{}\n{hint:#}", no_model_message(&env)),
        }
    }
    // Each image read beneath the workspace root and checked by its bytes before anything runs.
    let images = image_paths
        .iter()
        .map(|path| bosun_agent::attach::attach_image(&env.workspace, path))
        .collect::<Result<Vec<_>, _>>()?;
    let mut open = open_session(&env, resume, model)?;
    let name = open.stored.model.clone();

    let terminal = Arc::new(Terminal {
        live: std::io::stderr().is_terminal(),
        colour: crate::term::colour_on_stderr(),
        ..Terminal::default()
    });
    // A spinner only where a person watches the text stream: never into a file, never with
    // `--json`.
    let spinner =
        (!json && std::io::stderr().is_terminal()).then(|| Spinner::start(terminal.clone()));
    let json_lines = json.then(|| {
        Arc::new(JsonLines {
            stream,
            ..JsonLines::default()
        })
    });
    let observer: Arc<dyn Observer> = match &json_lines {
        Some(lines) => lines.clone(),
        None => terminal.clone(),
    };
    let command = match resume {
        Some(_) => format!("run --resume {}", open.stored.id),
        None => "run".to_owned(),
    };
    let turn = env
        .turn()
        .broker(crate::env::broker(yes))
        .observe(observer)
        .on_js_engine_compile(Arc::new(|notice: &str| errln!("{notice}")))
        .command(command)
        .ends_session()
        .images(images)
        .build(&open, &task)?;
    for warning in &turn.warnings {
        errln!("warning: {warning}");
    }

    let cancel = CancellationToken::new();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let done = runtime.block_on(async {
        let mut interrupts = Interrupts::listen().context("listening for Ctrl-C")?;
        let first = cancel.clone();
        tokio::spawn(async move {
            if !interrupts.next().await {
                return;
            }
            errln!("\nbosun: cancelling the run; press Ctrl-C again to exit at once");
            first.cancel();
            if interrupts.next().await {
                std::process::exit(i32::from(CANCELLED));
            }
        });
        Ok::<_, anyhow::Error>(turn.run(&mut open, &task, &cancel).await)
    })?;
    drop(spinner);
    terminal.end_line();
    for warning in &done.warnings {
        errln!("warning: {warning}");
    }
    let TurnDone { report, saved, .. } = done;
    let stored = &open.stored;
    let run_id = turn.run_id.clone();

    let (code, error) = match &report.end {
        RunEnd::Completed => (exit::OK, None),
        RunEnd::LimitReached { budget, limit } => (
            LIMIT_REACHED,
            Some(format!(
                "the run used its budget of {limit} {budget}; continue with `bosun run --resume {} \"continue\"` or raise [agent] {} in {}",
                stored.id,
                match budget {
                    bosun_agent::run::Budget::Steps => "max_steps",
                    bosun_agent::run::Budget::ToolCalls => "max_tool_calls",
                },
                config_path(&env)
            )),
        ),
        RunEnd::Cancelled => (
            CANCELLED,
            Some(format!(
                "cancelled; continue with `bosun run --resume {} \"…\"`",
                stored.id
            )),
        ),
        RunEnd::ModelFailed(e) => (
            MODEL_ERROR,
            Some(if bosun_agent::compaction::is_overflow(e) {
                // The run compacted once already; what is left is over the window.
                format!(
                    "model `{name}`: {e}; the conversation is over the model's context window even after compacting the earlier turns: start a new session (without --resume), or set `context_window` in [models.{name}] in {} so Bosun compacts in time",
                    config_path(&env)
                )
            } else {
                format!("model `{name}`: {e}")
            }),
        ),
        RunEnd::Stopped { plugin, reason } => (
            exit::DENIED,
            Some(format!(
                "a hook of the plugin `{plugin}` stopped the run: {reason}"
            )),
        ),
    };
    if let Some(lines) = &json_lines {
        let outcome = serde_json::to_value(report.end.trace_outcome())?;
        // `model_entry` is the `[models.NAME]` the run used; `model.started` names the
        // provider's model id.
        let result = json!({
            "type": "run.result",
            "outcome": outcome,
            "exit_code": code,
            "error": error,
            "text": report.text,
            "session_id": saved.then_some(&stored.id),
            "model_entry": name,
            "steps": report.steps,
            "tool_calls": report.tool_calls,
            "usage": report.usage,
        });
        lines.print_result(&run_id, result);
        if let Some(error) = &error {
            errln!("bosun: {error}");
        }
    } else {
        let stdout = std::io::stdout();
        let shown = stdout.is_terminal() && std::io::stderr().is_terminal();
        terminal.end_line();
        if report.end == RunEnd::Completed && !shown {
            // The model's own text goes raw only to a file or pipe, never to a terminal.
            let text = report.text.trim_end();
            let text = if stdout.is_terminal() {
                crate::term::escape(text)
            } else {
                text.to_owned()
            };
            let mut out = stdout.lock();
            writeln!(out, "{text}")?;
            out.flush()?;
        }
        if let Some(error) = &error {
            errln!("bosun: {error}");
        }
        if saved {
            errln!("session {}  trace: bosun inspect {run_id}", stored.id);
        }
    }
    Ok(code)
}

/// `bosun sessions list [--all] [--json]`: this workspace's stored sessions (every workspace's
/// with `--all`), most recently used first.
pub fn sessions_list(all: bool, json: bool) -> Result<u8> {
    let store = SessionStore::in_home(&bosun_home()?);
    let (mut sessions, warnings) = store.list()?;
    if !all {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        let here = bosun_host::Workspace::discover(&cwd)
            .with_context(|| format!("finding the workspace of {}", cwd.display()))?;
        sessions.retain(|s| s.workspace == here.root());
    }
    for warning in warnings {
        errln!("warning: {warning}");
    }
    if json {
        print_json(&sessions)?;
    } else {
        for line in session_lines(&store, &sessions, all) {
            outln!("{line}");
        }
    }
    Ok(exit::OK)
}

/// One line per stored session (id, last use, model, messages, title), or a line saying there
/// are none yet: what `bosun sessions list` prints and the terminal UI's `/sessions` shows.
pub(crate) fn session_lines(
    store: &SessionStore,
    sessions: &[SessionSummary],
    all: bool,
) -> Vec<String> {
    if sessions.is_empty() {
        return vec![if all {
            format!(
                "no sessions yet in {}; `bosun run \"…\"` starts one",
                store.dir().display()
            )
        } else {
            "no sessions in this workspace yet; `bosun run \"…\"` starts one, `bosun sessions \
             list --all` shows every workspace's"
                .to_owned()
        }];
    }
    sessions
        .iter()
        .map(|s| {
            let mut line = format!(
                "{}  {}  {:<12} {:>4} msgs  {}",
                s.id,
                s.updated_at.format("%Y-%m-%d %H:%M"),
                sanitize_for_terminal(&s.model),
                s.messages,
                sanitize_for_terminal(&s.title)
            );
            if all {
                line.push_str(&format!(
                    "  ({})",
                    sanitize_for_terminal(&s.workspace.display().to_string())
                ));
            }
            line
        })
        .collect()
}

/// `bosun models list [--json]`: configured models and whether each one's key is set. Never
/// prints a key.
pub fn models_list(json: bool) -> Result<u8> {
    let env = load()?;
    let listing = env.config.user.models_config().list(process_env);
    if json {
        print_json(&listing)?;
    } else if listing.is_empty() {
        outln!("{}", no_model_message(&env));
    } else {
        for m in &listing {
            let key = match (m.key, &m.api_key_env) {
                (KeyStatus::NotNeeded, _) => "no key".to_owned(),
                (KeyStatus::Present, Some(var)) => format!("key in {var}"),
                (KeyStatus::Missing, Some(var)) => format!("key MISSING: set {var}"),
                (_, None) => "no key".to_owned(),
            };
            outln!(
                "{} {:<12} {:<16} {:<24} {}  ({key})",
                if m.is_default { "*" } else { " " },
                m.name,
                m.provider.as_str(),
                m.model,
                m.base_url
            );
        }
    }
    Ok(exit::OK)
}

/// `bosun demo-model serve SCRIPT [--port PORT]` (hidden): serves a scripted model — **not a
/// real model** — on `127.0.0.1:PORT` (0: any free port) until Ctrl-C. Prints the base URL to
/// configure (`http://127.0.0.1:PORT/v1`) as the first line of stdout, and a banner saying what
/// it is on stderr. For the README's demo and for trying Bosun without an API key.
pub fn demo_model_serve(script: &Path, port: u16) -> Result<u8> {
    let file = std::fs::File::open(script)
        .with_context(|| format!("opening the script {}", script.display()))?;
    let mut text = String::new();
    file.take(MAX_SCRIPT_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("reading the script {}", script.display()))?;
    if text.len() as u64 > MAX_SCRIPT_BYTES {
        bail!(
            "the script {} is over {} MiB",
            script.display(),
            MAX_SCRIPT_BYTES >> 20
        );
    }
    let parsed = Script::from_json(&text).map_err(|e| anyhow!("{}: {e}", script.display()))?;
    let steps = parsed.steps.len();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = ScriptedModel::serve_on(parsed, port)
            .await
            .with_context(|| format!("listening on 127.0.0.1:{port}"))?;
        errln!(
            "bosun: serving a SCRIPTED model (not a real model: it replays the {steps} steps of {}) at {}; Ctrl-C stops it",
            script.display(),
            server.base_url()
        );
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", server.base_url())?;
            out.flush()?;
        }
        tokio::signal::ctrl_c()
            .await
            .context("waiting for Ctrl-C")?;
        drop(server);
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(exit::OK)
}
