//! A turn assembled once, for every face: [`TurnBuilder`] opens the conversation's model entry,
//! the host (with MCP tools, [`crate::assembly::open_host`]), the chokepoint with its broker and
//! reviewer, the system prompt (instructions files, plugins' contributions, skills and
//! `load_skill`), the subagents' delegate tools, the run's trace with its watchers, and the
//! budgets. `bosun run` and the terminal UI differ only in who answers approvals and who
//! watches. A task that runs an installed Claude Code plugin's command (`/plugin:command ARGS`)
//! is expanded here, for every face alike: the model is sent the command's prompt, and its
//! `allowed-tools` narrows the turn's host ([`Host::narrow`]). Nothing here prints: what the
//! parts warned about is returned.

use std::sync::Arc;

use bosun_core::ApprovalAnswer;
use bosun_host::approval::{ApprovalBroker, ApprovalRequest, NonInteractive};
use bosun_host::checkpoint::CheckpointStore;
use bosun_host::config::LoadedConfig;
use bosun_host::permission::PermissionMode;
use bosun_host::plugin_commands::PluginCommands;
use bosun_host::plugin_hooks::RunHooks;
use bosun_host::session::ModelSink;
use bosun_host::skills::{LoadSkill, Skills};
use bosun_host::trace::{Observer, Trace};
use bosun_host::workspace_trust::WorkspaceTrust;
use bosun_host::{EngineNotice, Host, TraceBuilder, Workspace};
use bosun_models::{ConfiguredModel, Image};
use tokio_util::sync::CancellationToken;

use crate::assembly::{TurnError, open_host, open_model, reviewer};
use crate::compaction::{CompactError, Compacted, compact};
use crate::context::ContextBudget;
use crate::conversation::Conversation;
use crate::instructions::{PromptKind, SystemPrompt};
use crate::run::{Agent, Budgets, RunReport, system_prompt};
use crate::subagent::ChildModel;

/// How the next turn of a conversation is built: where it runs, who answers approvals, who
/// watches its events, and what the trace says started it.
#[must_use]
pub struct TurnBuilder {
    workspace: Arc<Workspace>,
    config: Arc<LoadedConfig>,
    broker: Arc<dyn ApprovalBroker>,
    observers: Vec<Arc<dyn Observer>>,
    notice: EngineNotice,
    command: String,
    mode: Option<PermissionMode>,
    images: Vec<Image>,
    ends_session: bool,
}

/// What the model is told in plan mode; the chokepoint enforces it whatever the model does.
const PLAN_MODE: &str = "Plan mode is on: you may read and search the workspace, but every \
call that writes, runs a program or reaches the network is denied. Investigate, then answer \
with a numbered plan of the changes you propose (files, what changes, how to check it) and stop; \
the person leaves plan mode when they accept it.";

impl TurnBuilder {
    /// A turn in `workspace` under `config`; nobody answers approvals until
    /// [`TurnBuilder::broker`] says who does, and the trace says `run` started it.
    pub fn new(workspace: Arc<Workspace>, config: Arc<LoadedConfig>) -> Self {
        Self {
            workspace,
            config,
            broker: Arc::new(NonInteractive),
            observers: Vec::new(),
            notice: Arc::new(|_: &str| {}),
            command: "run".to_owned(),
            mode: None,
            images: Vec::new(),
            ends_session: false,
        }
    }

    /// This turn is the last of its session (`bosun run`, whose one turn is its session): the
    /// plugins' `SessionEnd` hooks run when it ends. Faces whose sessions hold many turns call
    /// [`crate::conversation::Conversation::end`] instead.
    pub fn ends_session(mut self) -> Self {
        self.ends_session = true;
        self
    }

    /// Images the person attached to this turn's request, sent before its text. Building
    /// fails, before anything runs, if the model entry takes no images
    /// ([`TurnError::ImagesNotTaken`]) or there are more than
    /// [`bosun_models::MAX_IMAGES_PER_MESSAGE`].
    pub fn images(mut self, images: Vec<Image>) -> Self {
        self.images = images;
        self
    }

    /// The permission mode of this turn, over the configured one: its policy mode builds the
    /// host, and plan mode is set on the session for the chokepoint to enforce.
    pub fn mode(mut self, mode: PermissionMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Who answers what policy asks about.
    pub fn broker(mut self, broker: Arc<dyn ApprovalBroker>) -> Self {
        self.broker = broker;
        self
    }

    /// Adds a watcher of the run's events, recorded and live (the terminal, the UI).
    pub fn observe(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Told just before Bosun's JavaScript engine is compiled for this machine (seconds, once).
    pub fn on_js_engine_compile(mut self, notice: EngineNotice) -> Self {
        self.notice = notice;
        self
    }

    /// What the trace says started the run.
    pub fn command(mut self, command: impl Into<String>) -> Self {
        self.command = command.into();
        self
    }

    /// Builds the next turn of `conversation` for `task`: a fresh host (plugins and trust are
    /// read again for every turn), its chokepoint, the system prompt with the plugins'
    /// contributions for `task`, the subagents and skills, and a new trace.
    pub fn build(mut self, conversation: &Conversation, task: &str) -> Result<Turn, TurnError> {
        let refused = self.config.workspace_trust == WorkspaceTrust::Refused;
        if let Some(mode) = self.mode
            && mode.policy_mode() != self.config.user.mode
            && !refused
        {
            // A folder the person refused to trust stays read-only whatever mode is chosen.
            let mut config = (*self.config).clone();
            config.user.mode = mode.policy_mode();
            self.config = Arc::new(config);
        }
        let config = &self.config;
        let mut host = open_host(self.workspace.clone(), config.clone(), self.notice)?;
        let mut command_notes = Vec::new();
        let expanded = if task.trim_start().starts_with('/') {
            let commands =
                PluginCommands::of(host.claude_plugins()).withholding(host.claude_withheld());
            command_notes.extend(commands.warnings().iter().cloned());
            commands.expand(task, &self.workspace, host.policy())?
        } else {
            None
        };
        let model = match expanded.as_ref().and_then(|e| e.model.as_deref()) {
            Some(model) if config.user.models.contains_key(model) => model.to_owned(),
            Some(model) => {
                command_notes.push(format!(
                    "the command asks for the model `{model}`, which is not a configured model here: it runs on the conversation's"
                ));
                conversation.stored.model.clone()
            }
            None => conversation.stored.model.clone(),
        };
        let configured = open_model(config, &model)?;
        if !self.images.is_empty() {
            if !configured.images {
                return Err(TurnError::ImagesNotTaken {
                    name: configured.name.clone(),
                    config: crate::assembly::config_path(config),
                });
            }
            if self.images.len() > bosun_models::MAX_IMAGES_PER_MESSAGE {
                return Err(bosun_models::ImageError::TooMany {
                    count: self.images.len(),
                }
                .into());
            }
        }
        let allowed = expanded.as_ref().and_then(|e| e.allowed.clone());
        if let Some(allowed) = &allowed {
            host.narrow(allowed);
        }
        if let Some(expanded) = &expanded {
            command_notes.extend(expanded.notes.iter().cloned());
        }
        let task = expanded.as_ref().map_or(task, |e| e.prompt.as_str());
        // The plugins' hooks of the run's moments; one for this turn and its subagents.
        let hooks = RunHooks::of(
            host.claude_plugins(),
            host.launcher(),
            self.workspace.root(),
            &conversation.stored.id,
            self.mode.is_some_and(PermissionMode::is_plan),
        );
        let broker: Arc<dyn ApprovalBroker> = match &hooks {
            Some(hooks) if hooks.has("Notification") => Arc::new(NotifyingBroker {
                inner: self.broker,
                hooks: hooks.clone(),
            }),
            _ => self.broker,
        };
        let chokepoint = host.chokepoint_reviewed(broker, reviewer(config)?)?;
        let contributions = host.prompts_blocking(task)?;
        let mut warnings = contributions.warnings.clone();
        let (prompt, prompt_warnings) = system_prompt(
            &config.home,
            self.workspace.root(),
            !refused,
            &contributions.texts,
        );
        // Subagents (Forge plugins' and the agent files'): delegate tools over the same host,
        // each child talking to this turn's model unless its file names another configured one.
        let subagent_warnings = crate::subagent::attach_with_hooks(
            &host,
            &child_model(&configured),
            &prompt,
            &|name: &str| open_model(config, name).map(|m| child_model(&m)),
            hooks.as_ref(),
        );
        let mut prompt = prompt;
        if self.mode.is_some_and(PermissionMode::is_plan) {
            prompt.append_section(PromptKind::BosunSection, "Plan mode", PLAN_MODE);
        }
        let skill_warnings = attach_skills(&host, config, self.workspace.root(), task, &mut prompt);
        // What the subagents and skills added is narrowed too.
        if let Some(allowed) = &allowed {
            host.narrow(allowed);
        }
        warnings.splice(0..0, host.warnings().iter().cloned());
        // A sandbox that is not full is said at the start of every run, not only in the trace.
        warnings.splice(0..0, host.sandbox_warning());
        warnings.extend(prompt_warnings);
        warnings.extend(subagent_warnings);
        warnings.extend(skill_warnings);
        warnings.extend(command_notes);

        let mut trace = TraceBuilder::for_config(config);
        for observer in self.observers {
            trace = trace.observe(observer);
        }
        // JavaScript plugins' `observeRunEvents`: redacted events, delivered off the run's path.
        if let Some(observer) = host.js_observer(&conversation.grants) {
            trace = trace.observe(observer);
        }
        let trace = trace.open()?;
        // The plugins' contributions came from their instances' module state: the session
        // reading them takes on their labels before its first step (its subagents inherit them).
        contributions.carry_to(conversation.grants.as_ref(), &trace);
        let budgets = Budgets {
            max_steps: config.user.agent.max_steps,
            max_tool_calls: config.user.agent.max_tool_calls,
        };
        let agent = Agent::builder(
            configured.provider.clone(),
            configured.model.clone(),
            Arc::new(chokepoint),
        )
        .sink(Some(sink_of(&configured)))
        .system_prompt(prompt)
        .budgets(budgets)
        .context(context_of(&configured))
        .command(self.command)
        .plugin_hooks(hooks.clone())
        .session_start(conversation.grants.start_hooks().then_some(
            if conversation.stored.messages.is_empty() {
                "startup"
            } else {
                "resume"
            },
        ))
        .build();
        conversation.grants.set_run_hooks(hooks.clone());
        conversation.grants.set_plugin_bin(host.claude_bins());
        Ok(Turn {
            agent,
            host,
            hooks,
            ends_session: self.ends_session,
            workspace: self.workspace.clone(),
            home: config.home.clone(),
            mode: self.mode,
            images: self.images,
            run_id: trace.run_id().to_owned(),
            trace,
            warnings,
            command: expanded.as_ref().map(|e| e.command.clone()),
            prompt: expanded.map(|e| e.prompt),
        })
    }
}

/// `/compact`: the conversation's earlier turns summarised by `model` — the `[models.<name>]`
/// entry the session uses now, which a person may have switched since the last turn (so never
/// read from the stored conversation, which names the last turn's) — judged at that model's
/// level; no tools offered, the recent turns kept, and the session stored so, naming `model`.
/// The conversation is unchanged when it fails.
pub async fn compact_conversation(
    config: &LoadedConfig,
    conversation: &mut Conversation,
    model: &str,
    cancel: &CancellationToken,
) -> Result<Compacted, CompactError> {
    let configured = open_model(config, model).map_err(|e| CompactError::Open(Box::new(e)))?;
    if let Some(hooks) = conversation
        .grants
        .run_hooks()
        .filter(|h| h.has("PreCompact"))
    {
        // Written into the next run's trace.
        if let Some((plugin, reason)) = hooks.pre_compact("manual", None, cancel).await {
            return Err(CompactError::Blocked { plugin, reason });
        }
    }
    // The conversation holds what its session holds: a model below that is sent none of it.
    let session = &conversation.grants;
    let mut sink = sink_of(&configured);
    if let Some(lifted) = session.model().filter(|m| m.name == sink.name) {
        sink.allowed = sink.allowed.max(lifted.allowed);
    }
    if let Some(error) = crate::run::above_level(session, &sink) {
        return Err(CompactError::Withheld(error));
    }
    let messages = &conversation.stored.messages;
    let (compacted, done) = compact(
        configured.provider.as_ref(),
        &configured.model,
        &context_of(&configured),
        messages,
        messages.len(),
        cancel,
    )
    .await?;
    let before = std::mem::replace(&mut conversation.stored.messages, compacted);
    let model_before = std::mem::replace(&mut conversation.stored.model, model.to_owned());
    // The summary holds what the turns it replaces held: the session keeps their labels.
    if let Err(e) = conversation.save() {
        conversation.stored.messages = before;
        conversation.stored.model = model_before;
        return Err(CompactError::Store(e));
    }
    Ok(done)
}

/// The size limits of a configured model.
fn context_of(configured: &ConfiguredModel) -> ContextBudget {
    ContextBudget::of(configured)
}

/// A configured model as a subagent talks to it.
fn child_model(configured: &ConfiguredModel) -> ChildModel {
    ChildModel {
        provider: configured.provider.clone(),
        model: configured.model.clone(),
        context: context_of(configured),
        sink: Some(sink_of(configured)),
    }
}

/// A configured model as a sink: its entry and its level.
fn sink_of(configured: &ConfiguredModel) -> ModelSink {
    ModelSink {
        name: configured.name.clone(),
        allowed: configured.level,
    }
}

/// Skills: the catalogue (and a person's `$name` selection) in the first request, bodies
/// through `load_skill`. Children get neither. Returns what was left out, and why.
fn attach_skills(
    host: &Host,
    config: &LoadedConfig,
    root: &std::path::Path,
    task: &str,
    prompt: &mut SystemPrompt,
) -> Vec<String> {
    let skills = Arc::new(Skills::of_host(config, root, host));
    let mut warnings: Vec<String> = skills
        .diagnostics()
        .iter()
        .map(|d| format!("skill {}: {} ({})", d.path, d.message, d.kind))
        .collect();
    if skills.all().is_empty() {
        return warnings;
    }
    let selected = skills.selected(task);
    let ids = selected.iter().map(|s| s.id.clone()).collect();
    if let Some(selection) = Skills::selection(&selected) {
        prompt.append_section(
            PromptKind::Skills,
            "Skills selected by the user",
            &selection,
        );
    }
    if let Some(catalog) = skills.catalog() {
        prompt.append_section(PromptKind::Skills, "Skills", &catalog);
    }
    match LoadSkill::new(skills.clone(), ids) {
        Ok(tool) => {
            if let Err(e) = host.register_tool(Arc::new(tool)) {
                warnings.push(format!("load_skill is not offered: {}", e.message));
            }
        }
        Err(e) => warnings.push(format!("load_skill is not offered: {e}")),
    }
    warnings
}

/// One run of the agent in a conversation, built and ready: the agent over a fresh chokepoint
/// and the run's trace.
pub struct Turn {
    agent: Agent,
    /// The plugins' hooks of the run's moments, when some plugin has one.
    hooks: Option<Arc<RunHooks>>,
    /// Whether the session ends with this turn (`SessionEnd`).
    ends_session: bool,
    /// The host the turn's tools come from: its servers are ended when the turn is.
    host: Host,
    trace: Trace,
    workspace: Arc<Workspace>,
    /// `$BOSUN_HOME`, where the run's checkpoint is kept.
    home: std::path::PathBuf,
    mode: Option<PermissionMode>,
    /// The images attached to the request.
    images: Vec<Image>,
    /// The run's id (`bosun inspect <run-id>`).
    pub run_id: String,
    /// What the plugin catalog, the instructions files, subagents and skills warned about.
    pub warnings: Vec<String>,
    /// The plugin command the task ran (`/plugin:command`), if it ran one.
    pub command: Option<String>,
    /// The command's expanded prompt, sent in place of the task.
    prompt: Option<String>,
}

/// What a finished turn did to the conversation.
pub struct TurnDone {
    /// How the run went.
    pub report: RunReport,
    /// Whether the session was stored.
    pub saved: bool,
    /// Whether it was left unstored on purpose (a new session whose model answered nothing).
    pub discarded: bool,
    /// Writing the trace or the session failed (the run itself is over).
    pub warnings: Vec<String>,
}

impl Turn {
    /// Runs `task` after the conversation so far, then stores the session with this run added
    /// — whatever the ending, cancellation included, so it can be resumed. Every file the
    /// run's file tools change is kept first in the run's checkpoint
    /// ([`bosun_host::checkpoint`]), sealed when the run ends, so the run can be undone.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        task: &str,
        cancel: &CancellationToken,
    ) -> TurnDone {
        let task = self.prompt.as_deref().unwrap_or(task);
        let mut messages = std::mem::take(&mut conversation.stored.messages);
        // What the person did since the last run, told before the request.
        let notes = std::mem::take(&mut conversation.stored.notes);
        messages.extend(
            notes
                .iter()
                .map(|note| bosun_models::Message::user(note.clone())),
        );
        let session = &conversation.grants;
        if let Some(mode) = self.mode {
            session.set_plan(mode.is_plan());
        }
        let checkpoint = CheckpointStore::of_session(&self.home, &conversation.stored.id).begin(
            &self.run_id,
            task,
            messages.len(),
        );
        session.set_checkpoint(Some(checkpoint.clone()));
        let report = self
            .agent
            .run_with_images(
                messages,
                task,
                self.images.clone(),
                session,
                &self.trace,
                cancel,
            )
            .await;
        session.set_checkpoint(None);
        let mut warnings = Vec::new();
        if self.ends_session
            && let Some(hooks) = self.hooks.as_ref().filter(|h| h.has("SessionEnd"))
        {
            warnings.extend(
                hooks
                    .session_end("other", Some(&self.trace), &CancellationToken::new())
                    .await,
            );
        }
        // Nothing the turn started (a stdio MCP server) outlives it.
        self.host.shutdown().await;
        if let Err(e) = checkpoint.seal(&self.workspace) {
            warnings.push(format!(
                "this run's file changes may not be undoable: sealing its checkpoint failed: {e}"
            ));
        }
        if let Err(e) = self.trace.finish() {
            warnings.push(e.to_string());
        }
        let kept = conversation.keep(&report, &self.run_id, &self.trace.info().redactor);
        if kept.discarded {
            // The run was not kept: its notes wait for the next one.
            conversation.stored.notes = notes;
        }
        warnings.extend(kept.warning);
        TurnDone {
            report,
            saved: kept.saved,
            discarded: kept.discarded,
            warnings,
        }
    }
}

/// The turn's broker, telling the plugins' `Notification` hooks when a person is asked to
/// approve a call (Claude Code's `permission_prompt`) before asking. The hooks are told, not
/// asked: they cannot answer for the person.
struct NotifyingBroker {
    inner: Arc<dyn ApprovalBroker>,
    hooks: Arc<RunHooks>,
}

#[async_trait::async_trait]
impl ApprovalBroker for NotifyingBroker {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        if self.inner.has_person() {
            self.hooks
                .notification(
                    "permission_prompt",
                    &format!("Bosun needs your permission to use {}", request.tool),
                    &CancellationToken::new(),
                )
                .await;
        }
        self.inner.ask(request).await
    }

    fn unanswered_hint(&self) -> &str {
        self.inner.unanswered_hint()
    }

    fn has_person(&self) -> bool {
        self.inner.has_person()
    }

    fn take_feedback(&self, call_id: &str) -> Option<String> {
        self.inner.take_feedback(call_id)
    }
}
