//! `bosun run`, `bosun sessions list`, `bosun models list` and the hidden
//! `bosun demo-model serve`: load configuration, build the chokepoint and the model, hand them
//! to the agent's run loop, store the session and print. No decision is made here.
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

use anyhow::{Context, Result, anyhow, bail};
use bosun_agent::run::{Agent, Budgets, ContextBudget, RunEnd, RunReport};
use bosun_agent::scripted::{Script, ScriptedModel};
use bosun_agent::session_store::{SessionStore, SessionSummary, StoredSession};
use bosun_agent::subagent::ChildModel;
use bosun_core::{Envelope, Event};
use bosun_host::Session;
use bosun_host::approval::{ApprovalBroker, sanitize_for_terminal};
use bosun_host::config::bosun_home;
use bosun_host::trace::{self, Observer, Trace};
use bosun_models::{ConfiguredModel, KeyStatus, ModelsConfig, process_env};
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

/// A whole model entry in one line of TOML, for the "no model" hint.
const MODEL_LINE: &str = r#"models.local = { provider = "openai-chat", base_url = "http://127.0.0.1:11434/v1", model = "qwen3:8b" }"#;
/// Largest task read from stdin.
const MAX_TASK_BYTES: u64 = 1024 * 1024;
/// Largest scripted-model script.
const MAX_SCRIPT_BYTES: u64 = 4 * 1024 * 1024;

fn no_model_message(env: &Env) -> String {
    format!(
        "no model configured: add one line to {}, for example (Ollama on this machine):\n  {MODEL_LINE}\nor see `bosun models list`",
        config_path(env)
    )
}

/// The model entry to use: `--model`, else the resumed session's, else `default_model`, else
/// the only entry there is.
fn choose_model(
    env: &Env,
    models: &ModelsConfig,
    asked: Option<&str>,
    session_model: Option<&str>,
) -> Result<String> {
    if let Some(name) = asked {
        return Ok(name.to_owned());
    }
    if let Some(name) = session_model {
        if models.models.contains_key(name) {
            return Ok(name.to_owned());
        }
        bail!(
            "the session used the model `{name}`, which is no longer in {}; pass --model NAME to continue with another",
            config_path(env)
        );
    }
    if let Some(name) = &models.default_model {
        return Ok(name.clone());
    }
    let mut names = models.models.keys();
    match (names.next(), names.next()) {
        (None, _) => bail!("{}", no_model_message(env)),
        (Some(only), None) => Ok(only.clone()),
        (Some(_), Some(_)) => bail!(
            "several models are configured ({}) and none is the default: pass --model NAME or add default_model = \"NAME\" at the top of {}",
            models.models.keys().cloned().collect::<Vec<_>>().join(", "),
            config_path(env)
        ),
    }
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

/// The person's view on stderr: the model's text as it streams and a line per tool call.
#[derive(Default)]
struct Terminal {
    /// Whether the cursor is at the start of a line.
    mid_line: Mutex<bool>,
}

impl Terminal {
    fn line(&self, text: &str) {
        let mut mid_line = self.mid_line.lock().unwrap_or_else(|e| e.into_inner());
        let mut err = std::io::stderr().lock();
        if *mid_line {
            let _ = writeln!(err);
        }
        let _ = writeln!(err, "{text}");
        *mid_line = false;
    }

    /// Ends the streamed text's last line, if it is open.
    fn end_line(&self) {
        let mut mid_line = self.mid_line.lock().unwrap_or_else(|e| e.into_inner());
        if *mid_line {
            let _ = writeln!(std::io::stderr().lock());
        }
        *mid_line = false;
    }
}

impl Observer for Terminal {
    fn observe(&self, envelope: &Envelope) {
        match &envelope.event {
            Event::ModelText { text, .. } => {
                let mut mid_line = self.mid_line.lock().unwrap_or_else(|e| e.into_inner());
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "{}", crate::term::escape(text));
                let _ = err.flush();
                *mid_line = !text.ends_with('\n');
            }
            Event::ModelRetrying {
                attempt,
                attempts,
                delay_ms,
                reason,
                ..
            } => self.line(&format!(
                "  … the model's provider failed ({reason}); retrying in {:.0} s (attempt {} of {attempts})",
                (*delay_ms as f64 / 1000.0).ceil(),
                attempt + 1
            )),
            Event::ContextElided { tool, bytes, .. } => self.line(&format!(
                "  (elided {bytes} bytes of an earlier {tool} output to fit the context window)"
            )),
            Event::ModelReasoning { text, .. } => {
                // One line of it, as a glimpse of what the model is doing; the trace has it all.
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let shown: String = first.chars().take(160).collect();
                let more = if shown.len() < text.trim().len() { "…" } else { "" };
                self.line(&format!(
                    "  ✻ {}{more}",
                    sanitize_for_terminal(&shown)
                ));
            }
            Event::ToolProposed { tool, input, .. } => {
                let input = input.to_string();
                let shown: String = input.chars().take(120).collect();
                let more = if shown.len() < input.len() { "…" } else { "" };
                self.line(&format!(
                    "→ {} {}{more}",
                    sanitize_for_terminal(tool),
                    sanitize_for_terminal(&shown)
                ));
            }
            Event::ToolFailed { error, .. } => self.line(&format!(
                "  ✗ {}: {}",
                error.code,
                sanitize_for_terminal(&error.message)
            )),
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
    /// The run's own last recorded envelope (not a subagent's): run id and sequence.
    last: std::sync::Mutex<Option<(String, u64)>>,
}

impl JsonLines {
    /// Prints `event` (a `run.result`) in the envelope every other line has: the run's id,
    /// the sequence after its last recorded event, the time now.
    fn print_result(&self, run_id: &str, event: Value) {
        let sequence = self
            .last
            .lock()
            .ok()
            .and_then(|last| last.as_ref().map(|(_, sequence)| sequence + 1))
            .unwrap_or(0);
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

    fn print(envelope: &Envelope) {
        if let Ok(line) = serde_json::to_string(envelope) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", crate::term::json_safe(&line));
            let _ = out.flush();
        }
    }
}

impl Observer for JsonLines {
    fn observe(&self, envelope: &Envelope) {
        if envelope.parent_run_id.is_none()
            && !envelope.event.is_live()
            && let Ok(mut last) = self.last.lock()
        {
            *last = Some((envelope.run_id.clone(), envelope.sequence));
        }
        match &envelope.event {
            Event::ModelText { text, .. } => {
                if self.stream {
                    Self::print(envelope);
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
                    Self::print(&step_text);
                }
            }
            event if event.is_live() => return,
            _ => {}
        }
        Self::print(envelope);
    }
}

/// A conversation to continue: the stored session (whose `model` is the entry its next run
/// uses) and the approvals given "for this session", which live in memory only. `bosun run`
/// opens one per process; the terminal UI keeps one across its turns.
pub(crate) struct OpenSession {
    pub store: SessionStore,
    pub stored: StoredSession,
    pub grants: Arc<Session>,
}

/// Opens the session to run in: `resume` (an id, a unique prefix or `last`) continues a stored
/// one of this workspace, else a new one starts. The model is `model`, else the resumed
/// session's, else `default_model`, else the only one configured; it is opened now so that a
/// missing entry or key fails before anything runs.
pub(crate) fn open_session(
    env: &Env,
    resume: Option<&str>,
    model: Option<&str>,
) -> Result<OpenSession> {
    let store = SessionStore::in_home(&env.config.home);
    let stored = match resume {
        Some(which) => {
            // `last` is the last session of this workspace, not of any.
            let which = if which == "last" {
                latest_here(&store, env.workspace.root())?
            } else {
                which.to_owned()
            };
            let stored = store.load(&which)?;
            stored.check_workspace(env.workspace.root())?;
            Some(stored)
        }
        None => None,
    };
    let models = env.config.user.models_config();
    let name = choose_model(
        env,
        &models,
        model,
        stored.as_ref().map(|s| s.model.as_str()),
    )?;
    open_model(env, &name)?;
    let stored = match stored {
        Some(mut stored) => {
            name.clone_into(&mut stored.model);
            stored
        }
        None => store.create(&name, env.workspace.root()),
    };
    let grants = Arc::new(Session::new(stored.id.clone()));
    Ok(OpenSession {
        store,
        stored,
        grants,
    })
}

/// The id of the session of `root` used last.
fn latest_here(store: &SessionStore, root: &Path) -> Result<String> {
    let (sessions, _) = store.list()?;
    sessions
        .into_iter()
        .find(|s| s.workspace == root)
        .map(|s| s.id)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no session in this workspace ({}) yet: `bosun run \"…\"` starts one, and \
                 `bosun sessions list --all` shows every workspace's",
                root.display()
            )
        })
}

/// Opens the model entry `name` of the user's config.
/// The reviewer of `review` decisions, when `[policy] reviewer` names a configured model.
pub(crate) fn reviewer(env: &Env) -> Result<Option<Arc<dyn bosun_host::review::Reviewer>>> {
    let Some(name) = &env.config.user.policy.reviewer else {
        return Ok(None);
    };
    let model = open_model(env, name).context("opening the reviewer ([policy] reviewer)")?;
    Ok(Some(Arc::new(bosun_agent::review::ModelReviewer::new(
        name,
        model.provider,
        &model.model,
    ))))
}

pub(crate) fn open_model(env: &Env, name: &str) -> Result<ConfiguredModel> {
    env.config
        .user
        .models_config()
        .open(name, process_env)
        .with_context(|| format!("opening the model `{name}` from {}", config_path(env)))
}

/// Who takes part in a turn besides the model: who answers approvals, and who watches the
/// run's events (recorded and live).
pub(crate) struct TurnIo {
    pub broker: Arc<dyn ApprovalBroker>,
    pub observer: Option<Arc<dyn Observer>>,
    /// Told just before Bosun's JavaScript engine is compiled for this machine (seconds, once).
    pub notice: bosun_host::EngineNotice,
}

/// One run of the agent in an open session, built and ready: the agent over a fresh
/// chokepoint (plugins and trust are read again for every turn) and the run's trace.
pub(crate) struct Turn {
    agent: Agent,
    /// The host the turn's tools come from: its servers are ended when the turn is.
    host: bosun_host::Host,
    trace: Trace,
    pub run_id: String,
    /// What the plugin catalog and the instructions files warned about.
    pub warnings: Vec<String>,
}

/// What a finished turn did to the session.
pub(crate) struct TurnDone {
    pub report: RunReport,
    /// Whether the session was stored.
    pub saved: bool,
    /// Whether it was left unstored on purpose (a new session whose model answered nothing).
    pub discarded: bool,
    /// Writing the trace or the session failed (the run itself is over).
    pub warnings: Vec<String>,
}

/// Builds the next turn of `open`: its model entry, the host, the chokepoint with `io.broker`,
/// the system prompt (with the plugins' contributions for `task`) and a new trace. `command` is
/// what the trace says started the run.
pub(crate) fn prepare_turn(
    env: &Env,
    open: &OpenSession,
    io: TurnIo,
    command: String,
    task: &str,
) -> Result<Turn> {
    let configured = open_model(env, &open.stored.model)?;
    let host = env.build_host(io.notice)?;
    let chokepoint = host.chokepoint_reviewed(io.broker, reviewer(env)?)?;
    let (contributions, mut warnings) = host.prompts_blocking(task)?;
    let (prompt, prompt_warnings) =
        bosun_agent::run::system_prompt(&env.config.home, env.workspace.root(), &contributions);
    // Subagents (Forge plugins' and the agent files'): delegate tools over the same host, each
    // child talking to this turn's model unless its file names another configured one.
    let child_model = |configured: &bosun_models::ConfiguredModel| ChildModel {
        provider: configured.provider.clone(),
        model: configured.model.clone(),
        context: ContextBudget {
            context_window: configured.context_window,
            max_output_tokens: configured.max_output_tokens,
        },
    };
    let subagent_warnings =
        bosun_agent::subagent::attach(&host, &child_model(&configured), &prompt, &|name: &str| {
            open_model(env, name)
                .map(|m| child_model(&m))
                .map_err(|e| format!("{e:#}"))
        });
    // Skills: the catalogue (and a person's `$name` selection) in the first request, bodies
    // through `load_skill`. Children get neither.
    let skills = Arc::new(bosun_host::skills::Skills::of(
        &env.config,
        env.workspace.root(),
    ));
    let mut prompt = prompt;
    let mut skill_warnings: Vec<String> = skills
        .diagnostics()
        .iter()
        .map(|d| format!("skill {}: {} ({})", d.path, d.message, d.kind))
        .collect();
    if !skills.all().is_empty() {
        let selected = skills.selected(task);
        let ids = selected.iter().map(|s| s.id.clone()).collect();
        if let Some(selection) = bosun_host::skills::Skills::selection(&selected) {
            prompt.append_section("Skills selected by the user", &selection);
        }
        if let Some(catalog) = skills.catalog() {
            prompt.append_section("Skills", &catalog);
        }
        match bosun_host::skills::LoadSkill::new(skills.clone(), ids) {
            Ok(tool) => {
                if let Err(e) = host.register_tool(Arc::new(tool)) {
                    skill_warnings.push(format!("load_skill is not offered: {}", e.message));
                }
            }
            Err(e) => skill_warnings.push(format!("load_skill is not offered: {e}")),
        }
    }
    warnings.splice(0..0, host.warnings().iter().cloned());
    // A sandbox that is not full is said at the start of every run, not only in the trace.
    warnings.splice(0..0, host.sandbox_warning());
    warnings.extend(prompt_warnings);
    warnings.extend(subagent_warnings);
    warnings.extend(skill_warnings);

    let run_id = trace::new_run_id();
    let mut trace = Trace::create(
        &env.config.runs_dir(),
        run_id.clone(),
        None,
        Arc::new(env.config.redactor()),
    )?;
    if let Some(observer) = io.observer {
        trace = trace.observe(observer);
    }
    // JavaScript plugins' `observeRunEvents`: redacted events, delivered off the run's path.
    if let Some(observer) = host.js_observer() {
        trace = trace.observe(observer);
    }
    let budgets = Budgets {
        max_steps: env.config.user.agent.max_steps,
        max_tool_calls: env.config.user.agent.max_tool_calls,
    };
    let builder = Agent::builder(
        configured.provider.clone(),
        configured.model.clone(),
        Arc::new(chokepoint),
    )
    .system_prompt(prompt)
    .budgets(budgets)
    .context(ContextBudget {
        context_window: configured.context_window,
        max_output_tokens: configured.max_output_tokens,
    })
    .command(command);
    Ok(Turn {
        agent: builder.build(),
        host,
        trace,
        run_id,
        warnings,
    })
}

impl Turn {
    /// Runs `task` after the session's conversation, then stores the session with this run
    /// added — whatever the ending, cancellation included, so it can be resumed.
    pub(crate) async fn run(
        &self,
        open: &mut OpenSession,
        task: &str,
        cancel: &CancellationToken,
    ) -> TurnDone {
        let conversation = std::mem::take(&mut open.stored.messages);
        let report = self
            .agent
            .run(conversation, task, &open.grants, &self.trace, cancel)
            .await;
        // Nothing the turn started (a stdio MCP server) outlives it.
        self.host.shutdown().await;
        let mut warnings = Vec::new();
        if let Err(e) = self.trace.finish() {
            warnings.push(e.to_string());
        }
        // A new session whose model failed before answering anything is not kept: there is
        // nothing to resume, and an empty session would only clutter the list.
        let nothing_answered = matches!(report.end, RunEnd::ModelFailed(_))
            && open.stored.run_ids.is_empty()
            && !report
                .messages
                .iter()
                .any(|m| matches!(m, bosun_models::Message::Assistant { .. }));
        if nothing_answered {
            return TurnDone {
                report,
                saved: false,
                discarded: true,
                warnings,
            };
        }
        open.stored.messages = report.messages.clone();
        open.stored.run_ids.push(self.run_id.clone());
        let saved = match open.store.save(&mut open.stored) {
            Ok(_) => true,
            Err(e) => {
                warnings.push(e.to_string());
                false
            }
        };
        TurnDone {
            report,
            saved,
            discarded: false,
            warnings,
        }
    }
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

/// `bosun run [TASK] [--model NAME] [--resume ID] [--json] [--yes]`.
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
    json: bool,
    stream: bool,
    yes: bool,
) -> Result<u8> {
    let task = read_task(task)?;
    let env = load()?;
    let mut open = open_session(&env, resume, model)?;
    let name = open.stored.model.clone();

    let terminal = Arc::new(Terminal::default());
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
    let turn = prepare_turn(
        &env,
        &open,
        TurnIo {
            broker: crate::env::broker(yes),
            observer: Some(observer),
            notice: Arc::new(|notice: &str| errln!("{notice}")),
        },
        command,
        &task,
    )?;
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
        RunEnd::ModelFailed(e) => (MODEL_ERROR, Some(format!("model `{name}`: {e}"))),
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
