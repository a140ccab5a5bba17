//! Configuration: `$BOSUN_HOME/config.toml` (the user's) and `<workspace>/.bosun/config.toml`
//! (the project's). Unknown keys are refused; every error names the file, line and key. The
//! project file may only carry policy, and its rules only tighten unless the user trusted the
//! workspace in their own config — a repository cannot grant itself anything.

use std::path::{Path, PathBuf};

use bosun_core::{Limits, Redactor};
use bosun_policy::{Mode, Policy, PolicyError, PolicyFile, Source};
use serde::Deserialize;

use crate::Workspace;
use crate::workspace_trust::WorkspaceTrust;

/// A configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Malformed TOML, an unknown key or a bad value.
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong and, where the parser knows, what it expected.
        message: String,
    },
    /// A value is out of range.
    #[error("{path}: {key}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// What to do.
        message: String,
    },
    /// A policy rule or example is wrong.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// `$BOSUN_HOME` cannot be determined.
    #[error("cannot find a home directory: set BOSUN_HOME or HOME")]
    NoHome,
    /// A setting the managed policy does not allow.
    #[error("{path}: {key}: refused by the managed policy ({rule}): {message}")]
    Managed {
        /// The file holding the refused setting.
        path: PathBuf,
        /// The setting.
        key: String,
        /// The managed rule: `file:line: what it says`.
        rule: String,
        /// What to do.
        message: String,
    },
}

impl ConfigError {
    fn managed(path: &Path, refusal: crate::managed::Refusal) -> Self {
        Self::Managed {
            path: path.to_owned(),
            key: refusal.key,
            rule: refusal.rule,
            message: refusal.message,
        }
    }
}

/// `[trace]` settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Names of environment variables whose values are secrets, beyond those ending in
    /// `_KEY`, `_TOKEN`, `_SECRET` or `_PASSWORD`.
    #[serde(default)]
    pub redact_env: Vec<String>,
}

/// `[agent]`: budgets of a run (shared with subagents).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Most model steps in one run.
    pub max_steps: u32,
    /// Most tool calls in one run.
    pub max_tool_calls: u32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_steps: 24,
            max_tool_calls: 60,
        }
    }
}

/// `[serve]`: how `bosun serve --http` runs as one of several instances behind a load balancer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// The environment variable holding the key (at least 32 bytes) that seals 2026-07-28
    /// request states; set the same key on every instance so a retry may reach any of them.
    /// Without it each process seals with a random key of its own.
    #[serde(default)]
    pub state_key_env: Option<String>,
    /// How long a request state may be answered, in seconds (10–3600; default 300). Without
    /// `state_redemptions_dir` it is also how long a state replayed to another instance could
    /// be accepted there.
    #[serde(default)]
    pub state_ttl_secs: Option<u64>,
    /// A directory every instance shares (created if missing), where each redeemed request
    /// state is recorded as a file created exclusively, so a state replayed to any instance is
    /// refused.
    #[serde(default)]
    pub state_redemptions_dir: Option<PathBuf>,
    /// A directory every instance shares (created if missing), where a call made with an
    /// idempotency key is claimed before it runs and its result kept after, so a retry that
    /// reaches another instance gets the result instead of running the call again. Needs
    /// `state_key_env` (results are named and authenticated with that key).
    #[serde(default)]
    pub idempotency_dir: Option<PathBuf>,
    /// How long a claim in `idempotency_dir` holds before it is taken for an instance that died
    /// mid-call, in seconds (1–86400; default 600): longer than any call may run.
    #[serde(default)]
    pub idempotency_claim_secs: Option<u64>,
    /// `Host` header values served besides the listening address, e.g. the load balancer's
    /// `lb.example.com` or `127.0.0.1:8080`.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// `[serve.clients.NAME]`: the clients `bosun serve --http` serves, each with its own
    /// token and its own share of what the server holds (docs/mcp.md).
    #[serde(default)]
    pub clients: std::collections::BTreeMap<String, ServeClient>,
}

/// `[serve.clients.NAME]`: one client of `bosun serve --http`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeClient {
    /// The SHA-256 of its bearer token, in hex (`printf %s "$TOKEN" | sha256sum`): the token
    /// itself is written nowhere Bosun reads.
    pub token_sha256: String,
    /// Connections it may hold open at once (default: an even share of the server's 512).
    #[serde(default)]
    pub connections: Option<usize>,
    /// Sessions it may hold open at once (default: an even share of the server's 256).
    #[serde(default)]
    pub sessions: Option<usize>,
}

/// The user's configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Permission mode: `read-only`, `workspace-write` (default) or `full`.
    #[serde(default)]
    pub mode: Mode,
    /// Workspaces (canonical paths) whose project config may loosen policy.
    #[serde(default)]
    pub trusted_workspaces: Vec<PathBuf>,
    /// Limits on every tool call.
    #[serde(default)]
    pub limits: Limits,
    /// Trace settings.
    #[serde(default)]
    pub trace: TraceConfig,
    /// Policy rules and examples.
    #[serde(default)]
    pub policy: PolicyFile,
    /// The model used when none is named.
    #[serde(default)]
    pub default_model: Option<String>,
    /// Models, by name: `[models.<name>] provider = ..., model = ..., api_key_env = ...`.
    #[serde(default)]
    pub models: std::collections::BTreeMap<String, bosun_models::ModelConfig>,
    /// Run-loop budgets.
    #[serde(default)]
    pub agent: AgentConfig,
    /// User plugins, by the local name the user gave each.
    #[serde(default)]
    pub plugins: std::collections::BTreeMap<String, bosun_plugins::PluginConfig>,
    /// MCP servers whose tools Bosun offers, by name: `[mcp.<name>]`.
    #[serde(default)]
    pub mcp: std::collections::BTreeMap<String, crate::mcp_config::McpServerConfig>,
    /// What the person chose for installed Claude Code plugins: `[claude.plugins."<id>"]`.
    #[serde(default)]
    pub claude: crate::claude_config::ClaudeConfig,
    /// Plugin registries, by name: `[registries.<name>]`, with their pinned keys.
    #[serde(default)]
    pub registries: std::collections::BTreeMap<String, bosun_registry::RegistryConfig>,
    /// The OS sandbox for every child process: `[sandbox]`.
    #[serde(default)]
    pub sandbox: bosun_launch::SandboxConfig,
    /// Labels for information flow: `[classification]`.
    #[serde(default)]
    pub classification: crate::flow::ClassificationConfig,
    /// Hooks before calls and on results: `[[hooks.pre_tool_call]]`,
    /// `[[hooks.post_tool_response]]`.
    #[serde(default)]
    pub hooks: crate::hooks::HooksConfig,
    /// OpenTelemetry export: `[telemetry]`, off unless a signal names an exporter.
    #[serde(default)]
    pub telemetry: bosun_telemetry::TelemetryConfig,
    /// `bosun serve` behind a load balancer: `[serve]`.
    #[serde(default)]
    pub serve: ServeConfig,
}

impl Config {
    /// The models section, as the models crate reads it.
    pub fn models_config(&self) -> bosun_models::ModelsConfig {
        bosun_models::ModelsConfig {
            default_model: self.default_model.clone(),
            models: self.models.clone(),
        }
    }
}

/// A project's `.bosun/config.toml`: policy only.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// Policy rules and examples.
    #[serde(default)]
    pub policy: PolicyFile,
    /// Hooks, which can only tighten: `[[hooks.pre_tool_call]]`, `[[hooks.post_tool_response]]`.
    #[serde(default)]
    pub hooks: crate::hooks::HooksConfig,
    /// Labels of the project's own paths, as sources only: `[[classification.paths]]`.
    #[serde(default)]
    pub classification: crate::flow::ClassificationConfig,
    /// Which of the user's registries this project uses (`[registries] allow = [...]`): it can
    /// narrow them, never add one.
    #[serde(default)]
    pub registries: bosun_registry::ProjectRegistries,
    /// Read only to be refused with the fix: a project may never turn telemetry on or choose
    /// where it goes.
    #[serde(default)]
    telemetry: Option<toml::Value>,
    /// Read only to be refused with the fix: a project may never choose a model, where it is
    /// or what it may be sent (`[models.<name>] classification`).
    #[serde(default)]
    models: Option<toml::Value>,
    /// See `models`.
    #[serde(default)]
    default_model: Option<toml::Value>,
}

/// One file as read: its path and text (kept to turn spans into line numbers).
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// Where it is.
    pub path: PathBuf,
    /// What it says.
    pub text: String,
}

/// Every configuration Bosun would read for a workspace.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// `$BOSUN_HOME`.
    pub home: PathBuf,
    /// The user's config (defaults when the file is absent).
    pub user: Config,
    /// The user's file, if present.
    pub user_file: Option<ConfigFile>,
    /// The project's config, if present.
    pub project: Option<(ProjectConfig, ConfigFile)>,
    /// Whether the user trusts this workspace: it answered yes to the workspace question, or
    /// lists it in `trusted_workspaces`. The project's config may then loosen policy, and its
    /// skills and agents load.
    pub trusted: bool,
    /// What the person answered for this folder ([`crate::workspace_trust`]); a refused one
    /// gets no project config, no project instructions and read-only mode.
    pub workspace_trust: WorkspaceTrust,
    /// Approvals remembered for this workspace (`$BOSUN_HOME/approvals/…`, see
    /// [`crate::remembered`]), added as user rules.
    pub remembered: Option<ConfigFile>,
    /// The system's managed policy ([`crate::managed`]), already applied to `user`.
    pub managed: Option<crate::managed::Managed>,
}

/// `$BOSUN_HOME`, or `~/.bosun`.
pub fn bosun_home() -> Result<PathBuf, ConfigError> {
    if let Some(home) = std::env::var_os("BOSUN_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".bosun"))
        .ok_or(ConfigError::NoHome)
}

fn read_optional(path: &Path) -> Result<Option<ConfigFile>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(ConfigFile {
            path: path.to_owned(),
            text,
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The project's `.bosun/config.toml`, which whoever wrote the workspace wrote: read as a
/// regular file only (a link, a FIFO or a device in its place is refused, never followed or
/// waited on), at most [`MAX_PROJECT_CONFIG_BYTES`].
fn read_project(path: &Path) -> Result<Option<ConfigFile>, ConfigError> {
    match bosun_fsio::read_text(path, MAX_PROJECT_CONFIG_BYTES) {
        Ok(text) => Ok(Some(ConfigFile {
            path: path.to_owned(),
            text,
        })),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(ConfigError::Read {
            path: path.to_owned(),
            source: e.into_io(),
        }),
    }
}

/// The largest project `.bosun/config.toml` read (1 MiB).
pub const MAX_PROJECT_CONFIG_BYTES: u64 = 1 << 20;

pub use bosun_core::text::line_col;

fn parse<T: serde::de::DeserializeOwned>(file: &ConfigFile) -> Result<T, ConfigError> {
    toml::from_str(&file.text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| line_col(&file.text, s.start))
            .unwrap_or((1, 1));
        ConfigError::Parse {
            path: file.path.clone(),
            line,
            column,
            message: e.message().trim().to_owned(),
        }
    })
}

impl LoadedConfig {
    /// The information-flow rules of this configuration: the user's `[classification]`, with
    /// the project's path labels as sources.
    pub fn flow(&self) -> crate::flow::Flow {
        let flow = crate::flow::Flow::new(&self.user.classification);
        match &self.project {
            Some((project, _)) => flow.with_project_sources(&project.classification.paths),
            None => flow,
        }
    }

    /// Reads the user's and the project's config for `workspace`.
    pub fn load(home: &Path, workspace: &Workspace) -> Result<Self, ConfigError> {
        let managed =
            crate::managed::managed_path(std::env::var_os(crate::managed::PATH_ENV).as_deref());
        Self::load_with(home, workspace, managed.as_deref())
    }

    /// Reads the user's and the project's config for `workspace` under the managed policy in
    /// `managed` (none when `None`); [`LoadedConfig::load`] finds the machine's.
    pub fn load_with(
        home: &Path,
        workspace: &Workspace,
        managed: Option<&Path>,
    ) -> Result<Self, ConfigError> {
        let managed = managed
            .map(crate::managed::Managed::read)
            .transpose()
            .map_err(|e| match e {
                crate::managed::LoadError::Read(path, source) => ConfigError::Read { path, source },
                crate::managed::LoadError::Parse(path, line, column, message) => {
                    ConfigError::Parse {
                        path,
                        line,
                        column,
                        message,
                    }
                }
                crate::managed::LoadError::Invalid(path, key, message) => {
                    ConfigError::Invalid { path, key, message }
                }
            })?;
        let user_file = read_optional(&home.join("config.toml"))?;
        let mut user: Config = match &user_file {
            Some(file) => parse(file)?,
            None => Config::default(),
        };
        if let Some(file) = &user_file {
            validate_limits(&user.limits, &file.path)?;
            user.models_config()
                .validate()
                .map_err(|e| ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "models".to_owned(),
                    message: e.to_string(),
                })?;
            if user
                .serve
                .state_ttl_secs
                .is_some_and(|ttl| !(10..=3600).contains(&ttl))
            {
                return Err(ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "serve.state_ttl_secs".to_owned(),
                    message: "use a value between 10 and 3600 seconds".to_owned(),
                });
            }
            if user
                .serve
                .idempotency_claim_secs
                .is_some_and(|secs| !(1..=86_400).contains(&secs))
            {
                return Err(ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "serve.idempotency_claim_secs".to_owned(),
                    message: "use a value between 1 and 86400 seconds, longer than any call runs"
                        .to_owned(),
                });
            }
            for (name, client) in &user.serve.clients {
                let digest = &client.token_sha256;
                if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(ConfigError::Invalid {
                        path: file.path.clone(),
                        key: format!("serve.clients.{name}.token_sha256"),
                        message: "give the SHA-256 of the client's token as 64 hex digits: `printf %s \"$TOKEN\" | sha256sum`, the token made with `openssl rand -hex 32`".to_owned(),
                    });
                }
            }
            if user.serve.idempotency_dir.is_some() && user.serve.state_key_env.is_none() {
                return Err(ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "serve.idempotency_dir".to_owned(),
                    message: "a shared idempotency directory needs the instances' shared key: set state_key_env too (results are named and authenticated with it)".to_owned(),
                });
            }
            if user.agent.max_steps == 0 || user.agent.max_tool_calls == 0 {
                return Err(ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "agent".to_owned(),
                    message: "max_steps and max_tool_calls must be at least 1".to_owned(),
                });
            }
            user.classification
                .check()
                .map_err(|message| ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "classification".to_owned(),
                    message: message.to_string(),
                })?;
            if user.policy.review_asks && user.policy.reviewer.is_none() {
                return Err(ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "policy.review_asks".to_owned(),
                    message: "review_asks needs a reviewer: set [policy] reviewer to a configured \
                              model, or remove review_asks"
                        .to_owned(),
                });
            }
            user.hooks.check().map_err(|message| ConfigError::Invalid {
                path: file.path.clone(),
                key: "hooks".to_owned(),
                message: message.to_string(),
            })?;
            user.telemetry.check().map_err(|e| ConfigError::Invalid {
                path: file.path.clone(),
                key: "telemetry".to_owned(),
                message: e.to_string(),
            })?;
            user.sandbox.validate().map_err(|e| ConfigError::Invalid {
                path: file.path.clone(),
                key: "sandbox".to_owned(),
                message: e.to_string(),
            })?;
            crate::mcp_config::check_mcp_configs(&user.mcp).map_err(|(key, message)| {
                ConfigError::Invalid {
                    path: file.path.clone(),
                    key,
                    message,
                }
            })?;
            bosun_registry::config::check(&user.registries).map_err(|e| ConfigError::Invalid {
                path: file.path.clone(),
                key: "registries".to_owned(),
                message: e.to_string(),
            })?;
            bosun_plugins::check_plugin_configs(&user.plugins).map_err(|e| match e {
                bosun_plugins::PluginError::Config { key, message } => ConfigError::Invalid {
                    path: file.path.clone(),
                    key,
                    message,
                },
                other => ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "plugins".to_owned(),
                    message: other.to_string(),
                },
            })?;
        }
        if let Some(managed) = &managed {
            let path = user_file
                .as_ref()
                .map_or_else(|| home.join("config.toml"), |f| f.path.clone());
            let refused = |refusal| ConfigError::managed(&path, refusal);
            managed.check_mode(user.mode).map_err(refused)?;
            let require_written = user_file
                .as_ref()
                .is_some_and(|f| line_of_key(&f.text, &["sandbox", "require"]).is_some());
            managed
                .apply_sandbox(&mut user.sandbox, require_written)
                .map_err(refused)?;
            managed.check_mcp(&user.mcp).map_err(refused)?;
            managed
                .apply_registries(&mut user.registries)
                .map_err(refused)?;
            managed
                .check_plugins(&user.plugins, home)
                .map_err(refused)?;
            let written = |key: &str| {
                user_file.as_ref().is_some_and(|file| {
                    let mut path = vec!["telemetry"];
                    path.extend(key.split('.'));
                    line_of_key(&file.text, &path).is_some()
                })
            };
            managed
                .apply_telemetry(&mut user.telemetry, &written)
                .map_err(refused)?;
            managed
                .check_reviewer_level(&user.policy)
                .map_err(refused)?;
            use bosun_core::escape_hidden;
            let models = user.models.iter().filter_map(|(name, model)| {
                model.classification.map(|level| {
                    (
                        format!("models.{}.classification", escape_hidden(name)),
                        "its [models.<name>]",
                        level,
                    )
                })
            });
            let servers = user.mcp.iter().filter_map(|(name, server)| {
                server.classification.map(|level| {
                    (
                        format!("mcp.{}.classification", escape_hidden(name)),
                        "its [mcp.<name>]",
                        level,
                    )
                })
            });
            let hosts = user.classification.hosts.iter().map(|host| {
                (
                    format!("classification.hosts ({})", escape_hidden(&host.host)),
                    "its [[classification.hosts]]",
                    host.level,
                )
            });
            let claude = user.claude.plugins.iter().filter_map(|(id, plugin)| {
                plugin.classification.map(|level| {
                    (
                        format!("claude.plugins.\"{}\".classification", escape_hidden(id)),
                        "its [claude.plugins.\"<id>\"]",
                        level,
                    )
                })
            });
            managed
                .check_sink_levels(models.chain(servers).chain(claude).chain(hosts))
                .map_err(refused)?;
            // A model left unlabelled on the default model's API root may be sent every level:
            // the cap lowers that default as it bounds what is written.
            if let Some(cap) = managed.sink_cap() {
                let levels = user.models_config();
                for (name, model) in &mut user.models {
                    if model.classification.is_none() && levels.level_of(name) > cap {
                        model.classification = Some(cap);
                    }
                }
            }
        }
        let workspace_trust =
            crate::workspace_trust::lookup(home, workspace.root()).map_err(|e| {
                ConfigError::Invalid {
                    path: home.join(crate::workspace_trust::RECORDS_FILE),
                    key: "workspaces".to_owned(),
                    message: e.to_string(),
                }
            })?;
        let refused = workspace_trust == WorkspaceTrust::Refused;
        if refused {
            // A folder the person said no to: read-only, whatever the user's default mode.
            user.mode = Mode::ReadOnly;
        }
        let project_file = if refused {
            None
        } else {
            read_project(&workspace.root().join(".bosun").join("config.toml"))?
        };
        let project = match project_file {
            Some(file) => {
                let project: ProjectConfig = parse(&file)?;
                if project.telemetry.is_some() {
                    return Err(ConfigError::Invalid {
                        path: file.path.clone(),
                        key: "telemetry".to_owned(),
                        message: "a project cannot turn telemetry on or choose where it goes: \
                                  remove [telemetry] here, and set it in your own config \
                                  ($BOSUN_HOME/config.toml)"
                            .to_owned(),
                    });
                }
                if project.models.is_some() || project.default_model.is_some() {
                    return Err(ConfigError::Invalid {
                        path: file.path.clone(),
                        key: "models".to_owned(),
                        message: "a project cannot choose models, where they are or what they may \
                                  be sent (a model's classification): remove [models] and \
                                  default_model here, and set them in your own config \
                                  ($BOSUN_HOME/config.toml)"
                            .to_owned(),
                    });
                }
                let labels = &project.classification;
                if labels.write_down.is_some()
                    || !labels.hosts.is_empty()
                    || !labels.trusted_hosts.is_empty()
                {
                    return Err(ConfigError::Invalid {
                        path: file.path.clone(),
                        key: "classification".to_owned(),
                        message:
                            "a project may label its own paths only ([[classification.paths]]); \
                                  hosts, trusted_hosts and write_down belong in your own config"
                                .to_owned(),
                    });
                }
                labels.check().map_err(|message| ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "classification".to_owned(),
                    message: message.to_string(),
                })?;
                project
                    .hooks
                    .check()
                    .map_err(|message| ConfigError::Invalid {
                        path: file.path.clone(),
                        key: "hooks".to_owned(),
                        message: message.to_string(),
                    })?;
                if project.policy.reviewer.is_some()
                    || project.policy.review_asks
                    || project.policy.reviewer_classification.is_some()
                {
                    return Err(ConfigError::Invalid {
                        path: file.path.clone(),
                        key: "policy.reviewer".to_owned(),
                        message: "a project cannot choose who reviews its calls: set reviewer in your own config".to_owned(),
                    });
                }
                Some((project, file))
            }
            None => None,
        };
        let listed = user.trusted_workspaces.iter().any(|p| {
            std::fs::canonicalize(p)
                .map(|p| p == workspace.root())
                .unwrap_or(false)
        });
        // The person's answer for this very folder wins over a path listed in the config; a
        // listed path counts as a yes for a folder never asked about.
        let workspace_trust = match workspace_trust {
            WorkspaceTrust::Unasked if listed => WorkspaceTrust::Trusted,
            other => other,
        };
        let trusted = workspace_trust == WorkspaceTrust::Trusted;
        let remembered = read_optional(&crate::remembered::file_for(home, workspace.root()))?;
        Ok(Self {
            home: home.to_owned(),
            user,
            user_file,
            project,
            trusted,
            workspace_trust,
            remembered,
            managed,
        })
    }

    /// The hooks of the user's config and then the project's (both checked at load).
    ///
    /// # Errors
    /// A hook that does not compile (never after a successful load).
    pub fn hooks(&self) -> Result<crate::hooks::Hooks, crate::hooks::HookError> {
        let user = crate::hooks::Hooks::compile(&self.user.hooks, "user")?;
        Ok(match &self.project {
            Some((project, _)) => {
                user.and(crate::hooks::Hooks::compile(&project.hooks, "project")?)
            }
            None => user,
        })
    }

    /// Builds the policy: mode, user rules, project rules; checks every file's examples.
    pub fn policy(
        &self,
        known_risks: impl IntoIterator<Item = (String, bosun_core::Risk)>,
    ) -> Result<Policy, ConfigError> {
        let mut builder = Policy::builder(self.user.mode).known_risks(known_risks);
        if let Some(managed) = &self.managed {
            // A mode chosen at run time (a turn's `--mode`) passes here too.
            managed.check_mode(self.user.mode).map_err(|refusal| {
                ConfigError::managed(
                    self.user_file
                        .as_ref()
                        .map_or(&self.home.join("config.toml"), |f| &f.path),
                    refusal,
                )
            })?;
            builder = builder.managed(
                managed.config.policy.clone(),
                Source::with_text(managed.path.display().to_string(), managed.text.clone()),
            )?;
        }
        if let Some(file) = &self.user_file {
            builder = builder.user(self.user.policy.clone(), source(file))?;
        }
        if let Some(file) = &self.remembered {
            let rules = bosun_policy::PolicyFile::parse(&file.text).map_err(|e| {
                ConfigError::Invalid {
                    path: file.path.clone(),
                    key: "policy".to_owned(),
                    message: format!(
                        "{e}: this file holds approvals you answered with \"always\"; fix or delete it"
                    ),
                }
            })?;
            builder = builder.remembered(rules, source(file))?;
        }
        if let Some((project, file)) = &self.project {
            builder = builder.project(project.policy.clone(), source(file), self.trusted)?;
        }
        Ok(builder.build())
    }

    /// Each setting in force and the layer it came from (`managed`, `user`, `project`,
    /// `default`), with where it is written and the managed rule constraining it: what
    /// `bosun config check` shows.
    pub fn settings(&self) -> Vec<Setting> {
        let managed = self.managed.as_ref();
        let user_at = |path: &[&str]| -> Option<String> {
            let file = self.user_file.as_ref()?;
            let line = line_of_key(&file.text, path)?;
            Some(format!("{}:{line}", file.path.display()))
        };
        let from_user = |path: &[&str]| match user_at(path) {
            Some(at) => ("user", Some(at)),
            None => ("default", None),
        };
        let mut out = Vec::new();
        let (layer, at) = from_user(&["mode"]);
        out.push(Setting {
            key: "mode".to_owned(),
            value: self.user.mode.as_str().to_owned(),
            layer,
            at,
            constrained_by: managed
                .and_then(|m| m.config.allowed_modes.as_ref().map(|a| m.at(a.span()))),
        });
        for (key, value, managed_rule) in [
            (
                "enabled",
                self.user.sandbox.enabled,
                managed.and_then(|m| m.config.sandbox.enabled.as_ref().map(|s| m.at(s.span()))),
            ),
            (
                "require",
                self.user.sandbox.require,
                managed.and_then(|m| m.config.sandbox.require.as_ref().map(|s| m.at(s.span()))),
            ),
        ] {
            let (mut layer, mut at) = from_user(&["sandbox", key]);
            if at.is_none() && managed_rule.is_some() && key == "require" && value {
                (layer, at) = ("managed", managed_rule.clone());
            }
            out.push(Setting {
                key: format!("sandbox.{key}"),
                value: value.to_string(),
                layer,
                at,
                constrained_by: managed_rule,
            });
        }
        let (layer, at) = from_user(&["sandbox", "plugin_instances"]);
        out.push(Setting {
            key: "sandbox.plugin_instances".to_owned(),
            value: self.user.sandbox.plugin_instances.to_string(),
            layer,
            at,
            constrained_by: None,
        });
        if let Some(m) = managed {
            out.push(Setting {
                key: "policy.rules".to_owned(),
                value: format!("{} rules, judged last", m.config.policy.rules.len()),
                layer: "managed",
                at: Some(m.path.display().to_string()),
                constrained_by: None,
            });
        }
        if let Some(file) = &self.user_file {
            out.push(Setting {
                key: "policy.rules".to_owned(),
                value: format!("{} rules", self.user.policy.rules.len()),
                layer: "user",
                at: Some(file.path.display().to_string()),
                constrained_by: None,
            });
        }
        if let Some((project, file)) = &self.project {
            out.push(Setting {
                key: "policy.rules".to_owned(),
                value: format!(
                    "{} rules ({})",
                    project.policy.rules.len(),
                    if self.trusted {
                        "trusted workspace"
                    } else {
                        "only tighten"
                    }
                ),
                layer: "project",
                at: Some(file.path.display().to_string()),
                constrained_by: None,
            });
        }
        for (name, server) in &self.user.mcp {
            let value = server
                .command
                .as_ref()
                .map(|c| format!("command = {c:?}"))
                .or_else(|| server.url.as_ref().map(|u| format!("url = {u:?}")))
                .unwrap_or_default();
            out.push(Setting {
                key: format!("mcp.{name}"),
                value,
                layer: "user",
                at: user_at(&["mcp", name]),
                constrained_by: managed.and_then(|m| {
                    m.config.mcp.allowed.as_ref().and_then(|allowed| {
                        allowed
                            .iter()
                            .find(|a| a.get_ref().name == *name)
                            .map(|a| m.at(a.span()))
                    })
                }),
            });
        }
        for (name, source) in &self.user.registries {
            let keys_at = user_at(&["registries", name, "keys"]);
            let managed_entry = managed.and_then(|m| {
                m.config.registries.allowed.as_ref().and_then(|allowed| {
                    allowed
                        .iter()
                        .find(|a| {
                            (a.get_ref().url.is_some() && a.get_ref().url == source.url)
                                || (a.get_ref().path.is_some() && a.get_ref().path == source.path)
                        })
                        .map(|a| m.at(a.span()))
                })
            });
            let (layer, at) = match (&keys_at, &managed_entry) {
                (Some(at), _) => ("user", Some(at.clone())),
                (None, Some(entry)) if !source.keys.is_empty() => ("managed", Some(entry.clone())),
                _ => ("default", None),
            };
            out.push(Setting {
                key: format!("registries.{name}.keys"),
                value: format!("{} pinned", source.keys.len()),
                layer,
                at,
                constrained_by: managed_entry,
            });
        }
        self.telemetry_settings(&mut out);
        if let Some(var) = &self.user.serve.state_key_env {
            out.push(Setting {
                key: "serve.state_key_env".to_owned(),
                value: var.clone(),
                layer: "user",
                at: user_at(&["serve", "state_key_env"]),
                constrained_by: None,
            });
        }
        out
    }

    /// `[telemetry]` in force, each key with the layer that set it: a signal the managed file
    /// forces is the managed layer's, whatever the user wrote.
    fn telemetry_settings(&self, out: &mut Vec<Setting>) {
        let managed = self.managed.as_ref();
        let telemetry = &self.user.telemetry;
        let user_at = |key: &str| -> Option<String> {
            let file = self.user_file.as_ref()?;
            let mut path = vec!["telemetry"];
            path.extend(key.split('.'));
            let line = line_of_key(&file.text, &path)?;
            Some(format!("{}:{line}", file.path.display()))
        };
        let layer_of = |key: &str, forced: Option<String>| match (forced, user_at(key)) {
            (Some(at), _) => ("managed", Some(at)),
            (None, Some(at)) => ("user", Some(at)),
            (None, None) => ("default", None),
        };
        let rules = managed.map(|m| (m, &m.config.telemetry));
        for (signal, rule) in rules.map(|(_, t)| t.signals()).unwrap_or(
            [
                bosun_telemetry::Signal::Traces,
                bosun_telemetry::Signal::Metrics,
                bosun_telemetry::Signal::Logs,
            ]
            .map(|s| (s, None)),
        ) {
            let name = signal.as_str();
            let rule_at = rule.and_then(|r| managed.map(|m| m.at(r.span())));
            let forced = telemetry
                .forced
                .get(signal)
                .then(|| rule_at.clone())
                .flatten();
            let (layer, at) = layer_of(name, forced);
            let value = match telemetry.exporter(signal) {
                bosun_telemetry::ExporterConfig::None => "none".to_owned(),
                bosun_telemetry::ExporterConfig::OtlpHttp(otlp) => format!(
                    "otlp-http {}",
                    otlp.endpoint
                        .as_deref()
                        .unwrap_or("(from OTEL_EXPORTER_OTLP_*)")
                ),
            };
            out.push(Setting {
                key: format!("telemetry.{name}"),
                value,
                layer,
                at,
                constrained_by: rule_at,
            });
        }
        let content = rules.map(|(_, t)| &t.content);
        for (name, value, cap) in [
            (
                "tool-inputs",
                telemetry.content.tool_inputs,
                content.and_then(|c| c.tool_inputs.as_ref()),
            ),
            (
                "tool-outputs",
                telemetry.content.tool_outputs,
                content.and_then(|c| c.tool_outputs.as_ref()),
            ),
            (
                "model-output",
                telemetry.content.model_output,
                content.and_then(|c| c.model_output.as_ref()),
            ),
        ] {
            let key = format!("content.{name}");
            let (layer, at) = layer_of(&key, None);
            out.push(Setting {
                key: format!("telemetry.{key}"),
                value: value.to_string(),
                layer,
                at,
                constrained_by: cap.and_then(|c| managed.map(|m| m.at(c.span()))),
            });
        }
        for (name, value, rule) in [
            (
                "service-name",
                &telemetry.service_name,
                rules.and_then(|(_, t)| t.service_name.as_ref()),
            ),
            (
                "environment",
                &telemetry.environment,
                rules.and_then(|(_, t)| t.environment.as_ref()),
            ),
        ] {
            let rule_at = rule.and_then(|r| managed.map(|m| m.at(r.span())));
            let Some(value) = value else { continue };
            let (layer, at) = layer_of(name, rule_at.clone());
            out.push(Setting {
                key: format!("telemetry.{name}"),
                value: value.clone(),
                layer,
                at,
                constrained_by: rule_at,
            });
        }
        // The collector's level: content of a session holding more is withheld.
        let (layer, at) = layer_of("classification", None);
        out.push(Setting {
            key: "telemetry.classification".to_owned(),
            value: telemetry.classification.unwrap_or_default().to_string(),
            layer,
            at,
            constrained_by: None,
        });
    }

    /// The redactor for traces: secret-looking environment variables, those named in config,
    /// and the secrets a person gave installed Claude Code plugins (`$BOSUN_HOME/claude/secrets`).
    pub fn redactor(&self) -> Redactor {
        // The variables passed to plugins (`[plugins.<name>] env`) are redacted like secrets.
        let mut names = self.user.trace.redact_env.clone();
        names.extend(
            self.user
                .plugins
                .values()
                .flat_map(|p| p.env.iter().cloned()),
        );
        // Values an MCP entry holds in memory (an editor's header values) are secrets too.
        let given: Vec<(String, String)> = self
            .user
            .mcp
            .iter()
            .flat_map(|(name, server)| {
                server
                    .secret_values()
                    .map(move |value| (format!("mcp.{name}"), value.clone()))
            })
            .collect();
        Redactor::from_env_and(
            std::env::vars(),
            &names,
            bosun_claude::user_config::all_secrets(&self.home)
                .into_iter()
                .chain(given),
        )
    }

    /// The environment a child process gets: this process's, minus every secret.
    pub fn scrubbed_env(&self) -> std::collections::BTreeMap<String, String> {
        scrub_env(std::env::vars(), &self.user.trace.redact_env)
    }

    /// The telemetry in force: the user's `[telemetry]` (a project's is refused at load).
    pub fn telemetry(&self) -> &bosun_telemetry::TelemetryConfig {
        &self.user.telemetry
    }

    /// `$BOSUN_HOME/runs`.
    pub fn runs_dir(&self) -> PathBuf {
        self.home.join("runs")
    }
}

/// One setting in force, as `bosun config check` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Setting {
    /// The key, e.g. `mode` or `mcp.docs`.
    pub key: String,
    /// Its value, readable.
    pub value: String,
    /// Where it came from: `managed`, `user`, `project` or `default`.
    pub layer: &'static str,
    /// `file:line` (or the file) where it is written.
    pub at: Option<String>,
    /// The managed rule constraining it, `file:line`.
    pub constrained_by: Option<String>,
}

/// The 1-based line where the key `path` (tables, then the key) is written in `text`.
fn line_of_key(text: &str, path: &[&str]) -> Option<usize> {
    let document = toml_edit::Document::parse(text).ok()?;
    let (last, tables) = path.split_last()?;
    let mut table: &dyn toml_edit::TableLike = document.as_table();
    for name in tables {
        table = table.get(name)?.as_table_like()?;
    }
    let (key, item) = table.get_key_value(last)?;
    let span = key.span().or_else(|| item.span())?;
    Some(line_col(text, span.start).0)
}

/// Removes secret variables: names ending in `_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD` (any case)
/// and those named in `extra`.
pub fn scrub_env(
    vars: impl IntoIterator<Item = (String, String)>,
    extra: &[String],
) -> std::collections::BTreeMap<String, String> {
    vars.into_iter()
        .filter(|(name, _)| {
            let upper = name.to_ascii_uppercase();
            !bosun_core::redact::SECRET_ENV_SUFFIXES
                .iter()
                .any(|s| upper.ends_with(s))
                && !extra.contains(name)
        })
        .collect()
}

fn source(file: &ConfigFile) -> Source {
    Source {
        name: file.path.display().to_string(),
        text: Some(file.text.clone()),
    }
}

fn validate_limits(limits: &Limits, path: &Path) -> Result<(), ConfigError> {
    let invalid = |key: &str, message: &str| ConfigError::Invalid {
        path: path.to_owned(),
        key: format!("limits.{key}"),
        message: message.to_owned(),
    };
    if limits.max_output_bytes < Limits::MIN_OUTPUT_BYTES
        || limits.max_output_bytes > 64 * 1024 * 1024
    {
        return Err(invalid(
            "max_output_bytes",
            "use a value between 1024 and 67108864",
        ));
    }
    if limits.tool_timeout_ms == 0 || limits.command_timeout_ms == 0 {
        return Err(invalid("tool_timeout_ms", "timeouts must be at least 1 ms"));
    }
    if limits.command_timeout_ms > 3_600_000 || limits.tool_timeout_ms > 3_600_000 {
        return Err(invalid(
            "command_timeout_ms",
            "timeouts must be at most 3600000 ms (one hour)",
        ));
    }
    if limits.max_entries == 0 || limits.max_entries > 10_000 {
        return Err(invalid("max_entries", "use a value between 1 and 10000"));
    }
    Ok(())
}
