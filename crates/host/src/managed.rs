//! The managed policy: a system file (`/etc/bosun/requirements.toml`) of constraints that the
//! user's and the project's configs cannot loosen — permission modes, the OS sandbox, policy
//! rules, which MCP servers (by name and identity), registries (with their pinned keys) and
//! plugin directories may be used, and telemetry forced on to the machine's collector.
//!
//! Strictest wins. Where the user's config leaves a constrained setting at its default, the
//! managed value is applied (the sandbox's `require`, a registry's pinned keys); where the
//! user's or project's config *says* something looser, loading refuses it with an error naming
//! the managed rule's `file:line`. The policy rules are a layer of their own in `bosun-policy`
//! ([`bosun_policy::PolicyBuilder::managed`]), judged last at every call.
//!
//! `BOSUN_MANAGED_CONFIG` names the file on machines without the system file (containers,
//! tests). It never replaces a system file: when `/etc/bosun/requirements.toml` exists, it is
//! the managed policy, whatever the variable says, so a user cannot point Bosun elsewhere.
//! This module reads and checks; it never writes a config.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bosun_policy::{Mode, PolicyFile};
use serde::Deserialize;
use toml::Spanned;

use crate::mcp_config::McpServerConfig;

/// Where the managed policy lives.
pub const SYSTEM_PATH: &str = "/etc/bosun/requirements.toml";

/// The variable naming the managed file where there is no system file.
pub const PATH_ENV: &str = "BOSUN_MANAGED_CONFIG";

/// The managed file: every table optional; an absent one constrains nothing.
///
/// ```toml
/// allowed_modes = ["read-only", "workspace-write"]
///
/// [sandbox]
/// enabled = true     # users cannot turn the OS sandbox off
/// require = true     # every confinement layer enforced, or no child starts
///
/// [[policy.rules]]
/// action = "process.spawn"
/// program = "**/curl"
/// decision = "deny"
///
/// [[mcp.allowed]]
/// name = "docs"
/// command = "/usr/local/bin/docs-mcp"
///
/// [[registries.allowed]]
/// url = "https://plugins.example.com/"
/// keys = ["<64 hex digits>"]
///
/// [plugins]
/// allowed_dirs = ["/opt/bosun/plugins"]
/// allowed = ["weather", "docs"]   # when set, the only plugin names that may be used
///
/// [telemetry]
/// traces = { otlp-http = { endpoint = "https://otel.example.com/v1/traces" } }
/// [telemetry.content]
/// tool-inputs = false    # a cap: users may not turn it on
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedConfig {
    /// The permission modes a user may choose.
    #[serde(default)]
    pub allowed_modes: Option<Spanned<Vec<Mode>>>,
    /// The OS sandbox of every child process.
    #[serde(default)]
    pub sandbox: ManagedSandbox,
    /// Rules judged last, which only tighten: `review`, `ask` or `deny`.
    #[serde(default)]
    pub policy: PolicyFile,
    /// Which MCP servers may be configured.
    #[serde(default)]
    pub mcp: ManagedMcp,
    /// Which plugin registries may be configured, and their keys.
    #[serde(default)]
    pub registries: ManagedRegistries,
    /// Where user plugins may be loaded from.
    #[serde(default)]
    pub plugins: ManagedPlugins,
    /// Telemetry forced on (or off), and caps on the content it carries.
    #[serde(default)]
    pub telemetry: ManagedTelemetry,
    /// A cap on the level of every sink a user's config declares.
    #[serde(default)]
    pub classification: ManagedClassification,
}

/// `[classification]` of the managed file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedClassification {
    /// The most sensitive data any sink a user declares may be sent: a model (`[models.<name>]
    /// classification`, and the level a model on the default model's API root has unwritten),
    /// an MCP server (`[mcp.<name>] classification`), a Claude Code plugin (`[claude.plugins.
    /// "<id>"] classification`) and a labelled host
    /// (`[[classification.hosts]] level`). A level written above it is refused; a default above
    /// it is lowered to it.
    #[serde(default)]
    pub sinks: Option<Spanned<bosun_core::Classification>>,
}

/// `[telemetry]` of the managed file, spelled as the user's `[telemetry]` is.
///
/// A signal set to `{ otlp-http = {...} }` is forced on to that endpoint: a user config that
/// writes the signal otherwise is refused, the environment's off switches do not apply to it,
/// and where the user left it out the managed exporter applies. A signal set to `"none"` may
/// not be exported by anyone. `[telemetry.content]` caps what content goes with the spans:
/// `false` refuses a user config that turns that kind on.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ManagedTelemetry {
    /// Spans.
    #[serde(default)]
    pub traces: Option<Spanned<bosun_telemetry::ExporterConfig>>,
    /// Metrics.
    #[serde(default)]
    pub metrics: Option<Spanned<bosun_telemetry::ExporterConfig>>,
    /// Log records.
    #[serde(default)]
    pub logs: Option<Spanned<bosun_telemetry::ExporterConfig>>,
    /// Caps on content.
    #[serde(default)]
    pub content: ManagedContent,
    /// `service.name` every instance reports.
    #[serde(default)]
    pub service_name: Option<Spanned<String>>,
    /// `deployment.environment.name` every instance reports.
    #[serde(default)]
    pub environment: Option<Spanned<String>>,
    /// The highest level a collector may be sent: a cap on the user's `[telemetry]
    /// classification`, which may only be set lower.
    #[serde(default)]
    pub classification: Option<Spanned<bosun_core::Classification>>,
}

/// `[telemetry.content]` of the managed file: `false` forbids that kind of content.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ManagedContent {
    /// `gen_ai.tool.call.arguments`.
    #[serde(default)]
    pub tool_inputs: Option<Spanned<bool>>,
    /// `gen_ai.tool.call.result`.
    #[serde(default)]
    pub tool_outputs: Option<Spanned<bool>>,
    /// `gen_ai.output.messages`.
    #[serde(default)]
    pub model_output: Option<Spanned<bool>>,
}

impl ManagedTelemetry {
    /// Each signal's managed exporter, if the file sets one.
    pub fn signals(
        &self,
    ) -> [(
        bosun_telemetry::Signal,
        Option<&Spanned<bosun_telemetry::ExporterConfig>>,
    ); 3] {
        use bosun_telemetry::Signal;
        [
            (Signal::Traces, self.traces.as_ref()),
            (Signal::Metrics, self.metrics.as_ref()),
            (Signal::Logs, self.logs.as_ref()),
        ]
    }
}

/// `[sandbox]` of the managed file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedSandbox {
    /// `true`: the user's `[sandbox] enabled = false` is refused.
    #[serde(default)]
    pub enabled: Option<Spanned<bool>>,
    /// `true`: children start only when every confinement layer is enforced.
    #[serde(default)]
    pub require: Option<Spanned<bool>>,
}

/// `[mcp]` of the managed file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedMcp {
    /// When set, the only servers a user may configure: each by name **and** identity.
    #[serde(default)]
    pub allowed: Option<Vec<Spanned<McpIdentity>>>,
}

/// One allowed MCP server: its name and exactly what it runs or reaches.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpIdentity {
    /// The `[mcp.<name>]` it may be configured as.
    pub name: String,
    /// The program, exactly as the user's `command` must say it.
    #[serde(default)]
    pub command: Option<String>,
    /// The endpoint, exactly as the user's `url` must say it.
    #[serde(default)]
    pub url: Option<String>,
}

/// `[registries]` of the managed file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedRegistries {
    /// When set, the only sources a user may configure, by `url` or `path`.
    #[serde(default)]
    pub allowed: Option<Vec<Spanned<RegistryIdentity>>>,
    /// URL prefixes no source may have.
    #[serde(default)]
    pub blocked: Vec<Spanned<String>>,
}

/// One allowed registry and the root keys pinned for it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryIdentity {
    /// Its address.
    #[serde(default)]
    pub url: Option<String>,
    /// Its folder.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Root key ids: a user's `keys` for it must be among them; none written means these.
    #[serde(default)]
    pub keys: Vec<String>,
}

/// `[plugins]` of the managed file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedPlugins {
    /// When set, a user plugin's directory must lie beneath one of these (absolute; `~/` is
    /// the user's home, `$BOSUN_HOME` Bosun's).
    #[serde(default)]
    pub allowed_dirs: Option<Spanned<Vec<String>>>,
    /// Plugin names that may not be used, however they arrive.
    #[serde(default)]
    pub blocked: Vec<Spanned<String>>,
    /// When set, the only plugin names that may be used, however they arrive.
    #[serde(default)]
    pub allowed: Option<Spanned<Vec<String>>>,
}

/// The managed file as read: where, its text, and what it says.
#[derive(Debug, Clone)]
pub struct Managed {
    /// The file.
    pub path: PathBuf,
    /// Its text (for line numbers).
    pub text: String,
    /// Its constraints.
    pub config: ManagedConfig,
}

/// Why the managed file, or a setting against it, was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The setting refused, e.g. `mode` or `mcp.docs.command`.
    pub key: String,
    /// The managed rule: `file:line: what it says`.
    pub rule: String,
    /// What to do.
    pub message: String,
}

/// The managed file cannot be read or parsed.
#[derive(Debug)]
pub enum LoadError {
    /// Unreadable.
    Read(PathBuf, std::io::Error),
    /// Not valid (line and column, message).
    Parse(PathBuf, usize, usize, String),
    /// Parsed, but a setting cannot be used (the key, what to do).
    Invalid(PathBuf, String, String),
}

/// Which file holds the managed policy: the system file when it exists, else the one
/// `BOSUN_MANAGED_CONFIG` names, else none.
pub fn managed_path(var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let system = Path::new(SYSTEM_PATH);
    if system.exists() {
        return Some(system.to_owned());
    }
    var.filter(|v| !v.is_empty()).map(PathBuf::from)
}

impl Managed {
    /// Reads the managed file at `path` ([`managed_path`] finds this machine's).
    ///
    /// # Errors
    /// A file that cannot be read or parsed: Bosun does not run without the policy it was
    /// given.
    pub fn read(path: &Path) -> Result<Managed, LoadError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| LoadError::Read(path.to_owned(), e))?;
        let config: ManagedConfig = toml::from_str(&text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| bosun_core::text::line_col(&text, s.start))
                .unwrap_or((1, 1));
            LoadError::Parse(path.to_owned(), line, column, e.message().trim().to_owned())
        })?;
        check_telemetry(&config.telemetry)
            .map_err(|(key, message)| LoadError::Invalid(path.to_owned(), key, message))?;
        Ok(Managed {
            path: path.to_owned(),
            text,
            config,
        })
    }

    /// `file:line` of a managed entry.
    pub fn at(&self, span: std::ops::Range<usize>) -> String {
        format!(
            "{}:{}",
            self.path.display(),
            bosun_core::text::line_col(&self.text, span.start).0
        )
    }

    fn refusal(
        &self,
        key: impl Into<String>,
        span: std::ops::Range<usize>,
        says: &str,
        message: impl Into<String>,
    ) -> Refusal {
        Refusal {
            key: key.into(),
            rule: format!("{}: {says}", self.at(span)),
            message: message.into(),
        }
    }

    /// Refuses a permission mode the managed file does not allow.
    ///
    /// # Errors
    /// The mode is not among `allowed_modes`.
    pub fn check_mode(&self, mode: Mode) -> Result<(), Refusal> {
        let Some(allowed) = &self.config.allowed_modes else {
            return Ok(());
        };
        if allowed.get_ref().contains(&mode) {
            return Ok(());
        }
        let names: Vec<&str> = allowed.get_ref().iter().map(|m| m.as_str()).collect();
        Err(self.refusal(
            "mode",
            allowed.span(),
            &format!("allowed_modes = {names:?}"),
            format!(
                "mode `{}` is not allowed on this machine: use one of {}",
                mode.as_str(),
                names.join(", ")
            ),
        ))
    }

    /// Checks the user's sandbox settings and applies the managed ones the user left at their
    /// defaults. `require_written` says whether the user's file writes `[sandbox] require`
    /// (a `false` left out and one written read the same).
    ///
    /// # Errors
    /// The user turned the sandbox off, or wrote `require = false`, where the managed file keeps
    /// it on.
    pub fn apply_sandbox(
        &self,
        sandbox: &mut bosun_launch::SandboxConfig,
        require_written: bool,
    ) -> Result<(), Refusal> {
        if let Some(enabled) = &self.config.sandbox.enabled
            && *enabled.get_ref()
            && !sandbox.enabled
        {
            return Err(self.refusal(
                "sandbox.enabled",
                enabled.span(),
                "[sandbox] enabled = true",
                "the OS sandbox cannot be turned off on this machine: remove `enabled = false` from [sandbox]",
            ));
        }
        if let Some(require) = &self.config.sandbox.require
            && *require.get_ref()
        {
            if require_written && !sandbox.require {
                return Err(self.refusal(
                    "sandbox.require",
                    require.span(),
                    "[sandbox] require = true",
                    "every confinement layer is required on this machine: remove `require = false` from [sandbox]",
                ));
            }
            sandbox.require = true;
        }
        Ok(())
    }

    /// Refuses an MCP server the managed file does not allow by name and identity.
    ///
    /// # Errors
    /// A configured server (enabled or not) that no `[[mcp.allowed]]` entry names with the same
    /// `command` or `url`.
    pub fn check_mcp(&self, servers: &BTreeMap<String, McpServerConfig>) -> Result<(), Refusal> {
        let Some(allowed) = &self.config.mcp.allowed else {
            return Ok(());
        };
        for (name, server) in servers {
            let by_name: Vec<&Spanned<McpIdentity>> = allowed
                .iter()
                .filter(|a| a.get_ref().name == *name)
                .collect();
            let same = by_name.iter().any(|a| {
                let a = a.get_ref();
                match (&server.command, &server.url) {
                    (Some(command), None) => a.command.as_ref() == Some(command) && a.url.is_none(),
                    (None, Some(url)) => a.url.as_ref() == Some(url) && a.command.is_none(),
                    _ => false,
                }
            });
            if same {
                continue;
            }
            let (span, says, message) = match by_name.first() {
                Some(entry) => {
                    let identity = entry
                        .get_ref()
                        .command
                        .as_ref()
                        .map(|c| format!("command = {c:?}"))
                        .or_else(|| entry.get_ref().url.as_ref().map(|u| format!("url = {u:?}")))
                        .unwrap_or_default();
                    (
                        entry.span(),
                        format!("[[mcp.allowed]] name = {name:?} {identity}"),
                        format!(
                            "[mcp.{name}] is allowed only as {identity}: a server under an allowed name that runs or reaches something else is refused"
                        ),
                    )
                }
                None => (
                    allowed.first().map_or(0..0, Spanned::span),
                    "[[mcp.allowed]] (an allowlist)".to_owned(),
                    format!(
                        "[mcp.{name}] is not among the MCP servers allowed on this machine: remove it, or ask whoever manages this machine to allow it"
                    ),
                ),
            };
            return Err(self.refusal(format!("mcp.{name}"), span, &says, message));
        }
        Ok(())
    }

    /// Checks the user's registries against the allowlist, blocklist and pinned keys, and pins
    /// the managed keys where the user pinned none.
    ///
    /// # Errors
    /// A blocked or unlisted source, or keys the managed file does not pin.
    pub fn apply_registries(
        &self,
        sources: &mut BTreeMap<String, bosun_registry::RegistryConfig>,
    ) -> Result<(), Refusal> {
        let rules = &self.config.registries;
        for (name, source) in sources.iter_mut() {
            let key = format!("registries.{name}");
            if let Some(url) = &source.url
                && let Some(block) = rules.blocked.iter().find(|b| url.starts_with(b.get_ref()))
            {
                return Err(self.refusal(
                    key,
                    block.span(),
                    &format!("[registries] blocked = [{:?}]", block.get_ref()),
                    format!(
                        "the source {url} is blocked on this machine: remove [registries.{name}]"
                    ),
                ));
            }
            let Some(allowed) = &rules.allowed else {
                continue;
            };
            let entry = allowed.iter().find(|a| {
                let a = a.get_ref();
                (a.url.is_some() && a.url == source.url)
                    || (a.path.is_some() && a.path == source.path)
            });
            let Some(entry) = entry else {
                let identity = source
                    .url
                    .clone()
                    .or_else(|| source.path.as_ref().map(|p| p.display().to_string()))
                    .unwrap_or_default();
                return Err(self.refusal(
                    key,
                    allowed.first().map_or(0..0, Spanned::span),
                    "[[registries.allowed]] (an allowlist)",
                    format!(
                        "the source {identity} is not among the registries allowed on this machine: remove [registries.{name}], or ask whoever manages this machine to allow it"
                    ),
                ));
            };
            let pinned = &entry.get_ref().keys;
            if pinned.is_empty() {
                continue;
            }
            if let Some(stray) = source.keys.iter().find(|k| !pinned.contains(k)) {
                return Err(self.refusal(
                    format!("{key}.keys"),
                    entry.span(),
                    "[[registries.allowed]] keys = [...]",
                    format!(
                        "the root key {stray} is not one this machine pins for this source: remove it (the managed keys apply)"
                    ),
                ));
            }
            if source.keys.is_empty() {
                source.keys = pinned.clone();
            }
        }
        Ok(())
    }

    /// Checks the user's `[telemetry]` against the managed one and applies what the managed
    /// file forces. `written` says whether the user's file writes a key of `[telemetry]`
    /// (`traces`, `content.tool-inputs`, ...), since a signal left out and one written
    /// `"none"` read the same.
    ///
    /// # Errors
    /// A forced signal the user turned off or sent elsewhere, a signal the managed file turns
    /// off that the user exports, content beyond a cap, or another service name or environment.
    pub fn apply_telemetry(
        &self,
        user: &mut bosun_telemetry::TelemetryConfig,
        written: &dyn Fn(&str) -> bool,
    ) -> Result<(), Refusal> {
        use bosun_telemetry::ExporterConfig;
        let managed = &self.config.telemetry;
        for (signal, rule) in managed.signals() {
            let Some(rule) = rule else { continue };
            let name = signal.as_str();
            let key = format!("telemetry.{name}");
            match rule.get_ref() {
                ExporterConfig::OtlpHttp(otlp) => {
                    let endpoint = otlp.endpoint.clone().unwrap_or_default();
                    if written(name) && user.exporter(signal) != rule.get_ref() {
                        return Err(self.refusal(
                            key,
                            rule.span(),
                            &format!("[telemetry] {name} = {{ otlp-http = {{ endpoint = {endpoint:?} }} }}"),
                            format!(
                                "{name} are exported to {endpoint} on this machine and cannot be turned off or sent elsewhere: remove `{name}` from [telemetry]"
                            ),
                        ));
                    }
                    *user.exporter_mut(signal) = rule.get_ref().clone();
                    user.forced.set(signal);
                }
                ExporterConfig::None => {
                    if matches!(user.exporter(signal), ExporterConfig::OtlpHttp(_)) {
                        return Err(self.refusal(
                            key,
                            rule.span(),
                            &format!("[telemetry] {name} = \"none\""),
                            format!(
                                "{name} may not be exported from this machine: remove `{name}` from [telemetry]"
                            ),
                        ));
                    }
                }
            }
        }
        let caps = [
            (
                "tool-inputs",
                &managed.content.tool_inputs,
                user.content.tool_inputs,
            ),
            (
                "tool-outputs",
                &managed.content.tool_outputs,
                user.content.tool_outputs,
            ),
            (
                "model-output",
                &managed.content.model_output,
                user.content.model_output,
            ),
        ];
        for (name, cap, wanted) in caps {
            if let Some(cap) = cap
                && !*cap.get_ref()
                && wanted
            {
                return Err(self.refusal(
                    format!("telemetry.content.{name}"),
                    cap.span(),
                    &format!("[telemetry.content] {name} = false"),
                    format!(
                        "telemetry may not carry {} on this machine: remove `{name} = true` from [telemetry.content]",
                        name.replace('-', " ")
                    ),
                ));
            }
        }
        if let Some(cap) = &managed.classification
            && let Some(level) = user.classification
            && level > *cap.get_ref()
        {
            return Err(self.refusal(
                "telemetry.classification",
                cap.span(),
                &format!("[telemetry] classification = \"{}\"", cap.get_ref()),
                format!(
                    "a collector may be sent {} data at most on this machine: set `classification` in [telemetry] to {} or lower, or remove it",
                    cap.get_ref(),
                    cap.get_ref()
                ),
            ));
        }
        for (name, rule, value) in [
            (
                "service-name",
                &managed.service_name,
                &mut user.service_name,
            ),
            ("environment", &managed.environment, &mut user.environment),
        ] {
            let Some(rule) = rule else { continue };
            if value.as_ref().is_some_and(|v| v != rule.get_ref()) {
                return Err(self.refusal(
                    format!("telemetry.{name}"),
                    rule.span(),
                    &format!("[telemetry] {name} = {:?}", rule.get_ref()),
                    format!(
                        "telemetry reports {name} {:?} on this machine: remove `{name}` from [telemetry]",
                        rule.get_ref()
                    ),
                ));
            }
            *value = Some(rule.get_ref().clone());
        }
        Ok(())
    }

    /// The highest level a reviewer may be sent on this machine (the managed `[policy]
    /// reviewer_classification`), a cap on whatever level the user's config gives it.
    pub fn reviewer_cap(&self) -> Option<bosun_core::Classification> {
        self.config.policy.reviewer_classification
    }

    /// Refuses a user `[policy] reviewer_classification` above the managed one: the managed
    /// level may only be lowered.
    ///
    /// # Errors
    /// The user's level is above the managed cap.
    pub fn check_reviewer_level(&self, user: &PolicyFile) -> Result<(), Refusal> {
        let (Some(cap), Some(level)) = (self.reviewer_cap(), user.reviewer_classification) else {
            return Ok(());
        };
        if level <= cap {
            return Ok(());
        }
        Err(self.refusal(
            "policy.reviewer_classification",
            self.key_span(&["policy", "reviewer_classification"]),
            &format!("[policy] reviewer_classification = \"{cap}\""),
            format!(
                "a reviewer may be sent {cap} data at most on this machine: set `reviewer_classification` in [policy] to {cap} or lower, or remove it"
            ),
        ))
    }

    /// The highest level any sink a user declares may be sent on this machine (the managed
    /// `[classification] sinks`).
    pub fn sink_cap(&self) -> Option<bosun_core::Classification> {
        self.config
            .classification
            .sinks
            .as_ref()
            .map(|cap| *cap.get_ref())
    }

    /// Refuses a sink the user's config declares able to receive more than the managed
    /// `[classification] sinks`: each of `declared` is the key it is written at (`models.gpt.
    /// classification`), the table a person fixes it in, and its level.
    ///
    /// # Errors
    /// The first sink above the cap.
    pub fn check_sink_levels<'a>(
        &self,
        declared: impl IntoIterator<Item = (String, &'a str, bosun_core::Classification)>,
    ) -> Result<(), Refusal> {
        let Some(cap) = &self.config.classification.sinks else {
            return Ok(());
        };
        let cap_level = *cap.get_ref();
        for (key, table, level) in declared {
            if level > cap_level {
                return Err(self.refusal(
                    key.clone(),
                    cap.span(),
                    &format!("[classification] sinks = \"{cap_level}\""),
                    format!(
                        "no model, MCP server, Claude Code plugin or host may be sent more than {cap_level} data on this machine: set it to {cap_level} or lower in {table}, or remove it"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Where the key at `path` is written in the managed file (the start, when not found).
    fn key_span(&self, path: &[&str]) -> std::ops::Range<usize> {
        let found = || {
            let document = toml_edit::Document::parse(self.text.as_str()).ok()?;
            let (last, tables) = path.split_last()?;
            let mut table: &dyn toml_edit::TableLike = document.as_table();
            for name in tables {
                table = table.get(name)?.as_table_like()?;
            }
            let (key, item) = table.get_key_value(last)?;
            key.span().or_else(|| item.span())
        };
        found().unwrap_or(0..0)
    }

    /// Refuses a user plugin outside the allowed directories, or blocked by name. `home` is
    /// `$BOSUN_HOME`, against which relative plugin paths resolve.
    ///
    /// # Errors
    /// The first plugin refused.
    pub fn check_plugins(
        &self,
        plugins: &BTreeMap<String, bosun_plugins::PluginConfig>,
        home: &Path,
    ) -> Result<(), Refusal> {
        for (name, plugin) in plugins {
            let dir = home.join("plugins").join(&plugin.path);
            self.check_plugin(
                &PluginArrival {
                    name,
                    how: PluginPath::UserConfig,
                    dir: Some(&dir),
                    source: None,
                },
                home,
            )?;
        }
        Ok(())
    }

    /// Checks one plugin, however it arrives, against `[plugins]` (blocked names, allowed
    /// directories) and `[registries] blocked` (where its bytes come from). Every path by which
    /// a plugin reaches Bosun calls this before the plugin is installed or offered: the user's
    /// config, a project's plugin folder, a registry or OCI install, a Claude Code marketplace
    /// install and every load of it, a plugin the model builds, a folder a person installs.
    ///
    /// # Errors
    /// The rule that refuses it, with the managed file's `file:line`.
    pub fn check_plugin(&self, arrival: &PluginArrival<'_>, home: &Path) -> Result<(), Refusal> {
        let rules = &self.config.plugins;
        let name = arrival.name;
        let key = arrival.how.key(name);
        if let Some(block) = rules.blocked.iter().find(|b| b.get_ref() == name) {
            return Err(self.refusal(
                key,
                block.span(),
                &format!("[plugins] blocked = [{name:?}]"),
                format!(
                    "the plugin {name} ({}) is blocked on this machine: {}",
                    arrival.how.describe(),
                    arrival.how.remedy(name)
                ),
            ));
        }
        if let Some(allowed) = &rules.allowed
            && !allowed.get_ref().iter().any(|a| a == name)
        {
            return Err(self.refusal(
                key,
                allowed.span(),
                &format!("[plugins] allowed = {:?}", allowed.get_ref()),
                format!(
                    "the plugin {name} ({}) is not among the plugins allowed on this machine: {}, or ask whoever manages this machine to allow it",
                    arrival.how.describe(),
                    arrival.how.remedy(name)
                ),
            ));
        }
        if let Some(source) = arrival.source
            && let Some(block) = self
                .config
                .registries
                .blocked
                .iter()
                .find(|b| source.starts_with(b.get_ref()))
        {
            return Err(self.refusal(
                key,
                block.span(),
                &format!("[registries] blocked = [{:?}]", block.get_ref()),
                format!(
                    "the plugin {name} ({}) comes from {source}, which is blocked on this machine: {}",
                    arrival.how.describe(),
                    arrival.how.remedy(name)
                ),
            ));
        }
        if let (Some(dir), Some(spanned)) = (arrival.dir, &rules.allowed_dirs) {
            let user_home = std::env::var_os("HOME").map(PathBuf::from);
            let path = settled(dir);
            let inside = spanned
                .get_ref()
                .iter()
                .map(|d| settled(&expand(d, home, user_home.as_deref())))
                .any(|d| path.starts_with(d));
            if !inside {
                return Err(self.refusal(
                    key,
                    spanned.span(),
                    &format!("[plugins] allowed_dirs = {:?}", spanned.get_ref()),
                    format!(
                        "{} ({}) is not in a plugin directory allowed on this machine: install the plugin from an allowed registry, or ask whoever manages this machine",
                        path.display(),
                        arrival.how.describe()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The machine's managed policy and the `$BOSUN_HOME` its `[plugins]` rules are read against:
/// what each place a plugin arrives after the config has loaded is handed.
#[derive(Debug, Clone)]
pub struct ManagedGate {
    /// The policy.
    pub managed: Managed,
    /// `$BOSUN_HOME`.
    pub home: PathBuf,
}

impl ManagedGate {
    /// [`Managed::check_plugin`] against this home.
    ///
    /// # Errors
    /// The managed rule refusing the plugin.
    pub fn check(&self, arrival: &PluginArrival<'_>) -> Result<(), Refusal> {
        self.managed.check_plugin(arrival, &self.home)
    }
}

/// How a plugin reaches Bosun, for [`Managed::check_plugin`]: what a refusal names and asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginPath {
    /// `[plugins.<name>]` of the user's config.
    UserConfig,
    /// A folder of the project's `.bosun/plugins/`.
    Project,
    /// Installed from a configured registry (Reef, signed catalog, folder, OCI).
    Registry,
    /// A Claude Code plugin from a `kind = "claude-marketplace"` registry.
    ClaudeMarketplace,
    /// A plugin the model wrote and installs during a conversation (`plugin_install`).
    AgentBuilt,
    /// A folder a person installs (`bosun plugins install PATH`).
    Directory,
}

impl PluginPath {
    fn key(self, name: &str) -> String {
        match self {
            Self::UserConfig => format!("plugins.{name}"),
            Self::Project => format!("project plugin {name}"),
            Self::Registry => format!("registry plugin {name}"),
            Self::ClaudeMarketplace => format!("claude plugin {name}"),
            Self::AgentBuilt => format!("plugin_install {name}"),
            Self::Directory => format!("plugins install {name}"),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::UserConfig => "a plugin of your config",
            Self::Project => "a plugin of this project's .bosun/plugins",
            Self::Registry => "from a registry",
            Self::ClaudeMarketplace => "a Claude Code plugin",
            Self::AgentBuilt => "a plugin the model built",
            Self::Directory => "a plugin folder",
        }
    }

    fn remedy(self, name: &str) -> String {
        match self {
            Self::UserConfig => format!("remove [plugins.{name}]"),
            Self::Project => format!("remove .bosun/plugins/{name} from the project"),
            Self::ClaudeMarketplace => format!("uninstall it (`bosun plugins uninstall {name}`)"),
            Self::Registry | Self::AgentBuilt | Self::Directory => {
                "it cannot be installed here".to_owned()
            }
        }
    }
}

/// One plugin arriving, as [`Managed::check_plugin`] judges it.
#[derive(Debug, Clone, Copy)]
pub struct PluginArrival<'a> {
    /// Its name (local name, or a Claude Code plugin's name).
    pub name: &'a str,
    /// How it arrives.
    pub how: PluginPath,
    /// The folder it is loaded from (or will be, once installed), when it has one.
    pub dir: Option<&'a Path>,
    /// Where its bytes are fetched from (a registry's address, a Claude Code plugin's source).
    pub source: Option<&'a str>,
}

/// The optional managed policy's verdict on `arrival`: nothing to check without one.
///
/// # Errors
/// The managed rule refusing it.
pub fn check_plugin(
    managed: Option<&Managed>,
    arrival: &PluginArrival<'_>,
    home: &Path,
) -> Result<(), Refusal> {
    managed.map_or(Ok(()), |m| m.check_plugin(arrival, home))
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: refused by the managed policy ({}): {}",
            self.key, self.rule, self.message
        )
    }
}

/// `path` as it is on disk when it exists (links resolved, so a link inside an allowed
/// directory to a folder outside it is outside), else folded lexically.
/// A path not made yet (a registry install's folder) is its deepest existing ancestor settled,
/// with the rest appended.
fn settled(path: &Path) -> PathBuf {
    let folded = lexical(path);
    let mut existing = folded.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(part)) => {
                rest.push(part.to_owned());
                existing = parent;
            }
            _ => return folded,
        }
    }
}

/// A managed `[telemetry]` that cannot be enforced: a forced signal must name its endpoint
/// (else the environment would choose it) and pass the checks a user's does.
fn check_telemetry(telemetry: &ManagedTelemetry) -> Result<(), (String, String)> {
    let mut config = bosun_telemetry::TelemetryConfig::default();
    for (signal, rule) in telemetry.signals() {
        let Some(rule) = rule else { continue };
        if let bosun_telemetry::ExporterConfig::OtlpHttp(otlp) = rule.get_ref()
            && otlp.endpoint.is_none()
        {
            return Err((
                format!("telemetry.{}", signal.as_str()),
                "a managed exporter must name its endpoint, or the environment would choose where it goes: add endpoint = \"https://...\"".to_owned(),
            ));
        }
        *config.exporter_mut(signal) = rule.get_ref().clone();
    }
    config
        .check()
        .map_err(|e| ("telemetry".to_owned(), e.to_string()))
}

/// `~/` and `$BOSUN_HOME` expanded.
fn expand(dir: &str, home: &Path, user_home: Option<&Path>) -> PathBuf {
    if let Some(rest) = dir.strip_prefix("$BOSUN_HOME") {
        return home.join(rest.trim_start_matches('/'));
    }
    match (dir.strip_prefix("~/"), user_home) {
        (Some(rest), Some(user_home)) => user_home.join(rest),
        _ => PathBuf::from(dir),
    }
}

/// `path` with `.` dropped and `dir/..` folded, so `allowed/../elsewhere` is not beneath
/// `allowed`.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
