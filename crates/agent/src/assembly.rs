//! What a turn is assembled from, opened from the configuration: the host with the configured
//! MCP servers' approved tools, the `[models.<name>]` entries and the reviewer of `review`
//! decisions. Every face (`bosun run`, the terminal UI, `bosun serve`, `bosun tools call`) opens
//! them here, so they are the same everywhere. Nothing here runs a model or prints.

use std::error::Error;
use std::sync::Arc;

use bosun_host::config::LoadedConfig;
use bosun_host::review::Reviewer;
use bosun_host::{EngineNotice, Host, HostError, TraceError, Workspace};
use bosun_models::{ConfiguredModel, process_env};

use crate::session_store::SessionError;

/// A whole model entry in one line of TOML, for the "no model" hint.
pub const MODEL_LINE: &str = r#"models.local = { provider = "openai-chat", base_url = "http://127.0.0.1:11434/v1", model = "qwen3:8b" }"#;

/// Why a turn could not be assembled. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// No `[models.<name>]` entry at all.
    #[error(
        "no model configured: add one line to {config}, for example (Ollama on this machine):\n  {MODEL_LINE}\nor see `bosun models list`"
    )]
    NoModel {
        /// The user config file.
        config: String,
    },
    /// A resumed session's model entry is gone.
    #[error(
        "the session used the model `{name}`, which is no longer in {config}; pass --model NAME to continue with another"
    )]
    ModelGone {
        /// The entry the session used.
        name: String,
        /// The user config file.
        config: String,
    },
    /// Several entries and no default.
    #[error(
        "several models are configured ({names}) and none is the default: pass --model NAME or add default_model = \"NAME\" at the top of {config}"
    )]
    NoDefaultModel {
        /// The entries, comma-separated.
        names: String,
        /// The user config file.
        config: String,
    },
    /// A model entry cannot be opened (unknown, or its key is missing).
    #[error("opening the model `{name}` from {config}")]
    Model {
        /// The entry.
        name: String,
        /// The user config file.
        config: String,
        /// Why.
        #[source]
        source: bosun_models::ConfigError,
    },
    /// The reviewer's model entry cannot be opened.
    #[error("opening the reviewer ([policy] reviewer)")]
    Reviewer(#[source] Box<TurnError>),
    /// `--resume last` in a workspace without a session.
    #[error(
        "no session in this workspace ({root}) yet: `bosun run \"…\"` starts one, and `bosun sessions list --all` shows every workspace's"
    )]
    NoSessionHere {
        /// The workspace root.
        root: String,
    },
    /// A stored session cannot be read or belongs elsewhere.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The host cannot be assembled.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The MCP servers' pins cannot be read.
    #[error(transparent)]
    Mcp(#[from] bosun_mcp::pins::PinError),
    /// The run's trace cannot be created.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// Images were attached for a model entry that takes none; nothing was sent.
    #[error(
        "the model `{name}` does not take images, so nothing was sent: set `images = true` in [models.{name}] of {config} if it reads images, or choose a model that does (/model, --model)"
    )]
    ImagesNotTaken {
        /// The entry.
        name: String,
        /// The user config file.
        config: String,
    },
    /// An attached image cannot be sent.
    #[error(transparent)]
    Image(#[from] bosun_models::ImageError),
    /// The task runs a plugin command that cannot run.
    #[error(transparent)]
    Command(#[from] bosun_host::plugin_commands::CommandError),
}

/// The user config file, as messages name it.
pub fn config_path(config: &LoadedConfig) -> String {
    config.home.join("config.toml").display().to_string()
}

/// The host for `workspace` and `config`, with the approved tools of the configured MCP
/// servers in its registry (no server starts here). Its warnings are left for the caller to
/// show; `notice` is told just before Bosun's JavaScript engine is compiled for this machine.
pub fn open_host(
    workspace: Arc<Workspace>,
    config: Arc<LoadedConfig>,
    notice: EngineNotice,
) -> Result<Host, TurnError> {
    attach_mcp(builder(workspace, config, notice))
}

/// [`open_host`] for a process that runs one command and exits: its plugin instances are
/// made one by one instead of from a pool reserved up front
/// ([`HostBuilder::for_one_command`](bosun_host::HostBuilder::for_one_command)).
pub fn open_host_for_one_command(
    workspace: Arc<Workspace>,
    config: Arc<LoadedConfig>,
    notice: EngineNotice,
) -> Result<Host, TurnError> {
    attach_mcp(builder(workspace, config, notice).for_one_command())
}

/// The host builder both share.
fn builder(
    workspace: Arc<Workspace>,
    config: Arc<LoadedConfig>,
    notice: EngineNotice,
) -> bosun_host::HostBuilder {
    Host::builder()
        .workspace(workspace)
        .config(config)
        .on_js_engine_compile(notice)
}

/// Builds the host and puts the approved tools of the configured MCP servers in its registry.
fn attach_mcp(builder: bosun_host::HostBuilder) -> Result<Host, TurnError> {
    let mut host = builder.build()?;
    let warnings = bosun_mcp::attach(&host)?;
    host.add_warnings(warnings);
    Ok(host)
}

/// Opens the model entry `name` of the user's config.
pub fn open_model(config: &LoadedConfig, name: &str) -> Result<ConfiguredModel, TurnError> {
    config
        .user
        .models_config()
        .open(name, process_env)
        .map_err(|source| TurnError::Model {
            name: name.to_owned(),
            config: config_path(config),
            source,
        })
}

/// The reviewer of `review` decisions, when `[policy] reviewer` names a configured model.
pub fn reviewer(config: &LoadedConfig) -> Result<Option<Arc<dyn Reviewer>>, TurnError> {
    let Some(name) = &config.user.policy.reviewer else {
        return Ok(None);
    };
    let model = open_model(config, name).map_err(|e| TurnError::Reviewer(Box::new(e)))?;
    Ok(Some(Arc::new(crate::review::ModelReviewer::new(
        name,
        model.provider,
        &model.model,
        reviewer_level(config, name),
    ))))
}

/// The most sensitive data the reviewer `name` may be sent: `[policy] reviewer_classification`,
/// else its model's level, by the rule of every model entry
/// ([`bosun_models::ModelsConfig::level_of`]: its `classification`, else every level on the
/// default model's API root, else `PUBLIC`). The machine's managed `[policy]
/// reviewer_classification`, when set, caps either.
fn reviewer_level(config: &LoadedConfig, name: &str) -> bosun_core::Classification {
    let level = config
        .user
        .policy
        .reviewer_classification
        .unwrap_or_else(|| config.user.models_config().level_of(name));
    match config.managed.as_ref().and_then(|m| m.reviewer_cap()) {
        Some(cap) => level.min(cap),
        None => level,
    }
}

/// `error` and its causes on one line, `outer: inner: …`.
pub(crate) fn chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
