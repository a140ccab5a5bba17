//! Installed Claude Code plugins in the host: their `PreToolUse` command hooks as policy hooks
//! (which can only tighten: a hook's `allow` never loosens a decision), run in the OS sandbox
//! with Claude Code's stdin JSON, exit codes and JSON answers. They enter the host as one more
//! [`Runtime`]: installed plugins are checked against what was reviewed at every assembly, and a
//! changed one is left out with a warning. The plugins found intact are kept for the turn: their
//! skills, commands and agents are read from them by `skills.rs`, `plugin_commands.rs` and
//! `plugin_agents.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_claude::LoadedPlugin;
use bosun_claude::hooks::{Group, HookOutcome, HookPlace, matches, run_handler};
use bosun_core::{Decision, ToolCall};
use bosun_policy::HookVerdict;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::claude_config::ClaudeConfig;
use crate::hooks::{HookFailure, PolicyHook, SessionLabels};
use crate::mcp_config::{McpSandbox, McpServerConfig, ProvidedServer, plugin_server_name};
use crate::plugin_runtime::contract::{Assembly, Offer, Runtime};
use crate::plugin_runtime::error::RuntimeError;
use crate::tool::Tool;

/// One plugin's `PreToolUse` hooks, asked about every call.
pub struct PreToolUse {
    plugin: LoadedPlugin,
    groups: Vec<Group>,
    launcher: Arc<bosun_launch::Launcher>,
    workspace: PathBuf,
}

impl std::fmt::Debug for PreToolUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreToolUse")
            .field("plugin", &self.plugin.record.id)
            .finish_non_exhaustive()
    }
}

/// Installed Claude Code plugins (`$BOSUN_HOME/claude`), as a runtime: they offer policy
/// hooks, never tools. The plugins it found intact are kept for the turn's skills, commands
/// and subagents ([`crate::Host::claude_plugins`]).
#[derive(Debug, Default)]
pub struct ClaudeRuntime {
    plugins: Vec<LoadedPlugin>,
    withheld: Vec<bosun_claude::Withheld>,
    bins: Vec<PathBuf>,
}

impl ClaudeRuntime {
    /// The plugins checked against what was reviewed at this assembly.
    pub fn plugins(&self) -> &[LoadedPlugin] {
        &self.plugins
    }

    /// The installed plugins this assembly did not load, and why.
    pub fn withheld(&self) -> &[bosun_claude::Withheld] {
        &self.withheld
    }

    /// The `bin/` folders a person granted ([`granted_bins`]).
    pub fn bins(&self) -> &[PathBuf] {
        &self.bins
    }
}

/// The `bin/` folders of `plugins` that go on `run_command`'s PATH: the person grants it in
/// their config (`[claude.plugins."<id>"] bin = true`) *and* installed the plugin with that
/// grant shown in its review. A grant the review did not show is not in effect: it is named in
/// a warning saying to install again. A plugin whose files changed since the review is not
/// among `plugins` at all (it is withheld), so neither is its `bin/`.
pub fn granted_bins(
    plugins: &[LoadedPlugin],
    claude: &ClaudeConfig,
) -> (Vec<PathBuf>, Vec<String>) {
    let mut bins = Vec::new();
    let mut warnings = Vec::new();
    for plugin in plugins {
        let id = &plugin.record.id;
        if !claude.bin(id) || plugin.layout.bin.is_empty() {
            continue;
        }
        if plugin.record.bin_granted {
            bins.push(plugin.root.join("bin"));
        } else {
            warnings.push(format!(
                "`bin = true` for the plugin `{id}` is not what you reviewed when you installed it: its bin/ stays off run_command's PATH until you install it again (bosun plugins install {id}) and review it with the grant"
            ));
        }
    }
    (bins, warnings)
}

#[async_trait::async_trait]
impl Runtime for ClaudeRuntime {
    fn offer(&mut self, at: &Assembly<'_>) -> Result<Offer, RuntimeError> {
        let mut loaded = bosun_claude::Loaded::load(at.home);
        if let Some(gate) = at.managed {
            withhold_managed(&mut loaded, gate);
        }
        for plugin in &mut loaded.plugins {
            // A plugin whose secrets cannot be read has its servers left out below, saying
            // why; its hooks get no answers.
            plugin.options = answers(plugin, at.home, at.claude)
                .map(|answers| answers.values)
                .unwrap_or_default();
            plugin.hook_sink = hook_sink(at.launcher, at.claude, &plugin.record.id);
        }
        let mut warnings = loaded.refused;
        for plugin in &loaded.plugins {
            for hook in &plugin.layout.hooks_not_run {
                warnings.push(format!(
                    "the plugin `{}`: found, not supported: {hook}",
                    plugin.record.id
                ));
            }
        }
        let (mcp_servers, left_out) = mcp_servers(&loaded.plugins, at.home, at.claude);
        warnings.extend(left_out);
        let (bins, unreviewed) = granted_bins(&loaded.plugins, at.claude);
        warnings.extend(unreviewed);
        let offer = Offer {
            hooks: pre_tool_use_hooks(&loaded.plugins, at.launcher, at.workspace),
            warnings,
            mcp_servers,
            ..Offer::default()
        };
        self.plugins = loaded.plugins;
        self.withheld = loaded.withheld;
        self.bins = bins;
        Ok(offer)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Where the hooks of the plugin `id` may put what they are handed, as a sink. The OS sandbox
/// holds a hook to its data folder with no network; where it does so on this machine, the
/// folder (labelled) and the hook's words (carrying that label) are all it leaves. Where it
/// cannot — the sandbox off or not fully enforced here, `[sandbox] write` — the hook is a sink
/// at `[claude.plugins."<id>"] classification`, `PUBLIC` unless the person set one, as an MCP
/// server is.
pub fn hook_sink(
    launcher: &bosun_launch::Launcher,
    claude: &ClaudeConfig,
    id: &str,
) -> bosun_claude::hooks::HookSink {
    let Some(outlet) = launcher.outlet() else {
        return bosun_claude::hooks::HookSink::Confined;
    };
    let (level, source) = match claude.classification(id) {
        Some(level) => (
            level,
            format!("[claude.plugins.\"{id}\"] classification = \"{level}\""),
        ),
        None => (
            bosun_core::Classification::Public,
            format!("no [claude.plugins.\"{id}\"] classification labels them"),
        ),
    };
    bosun_claude::hooks::HookSink::Open {
        level,
        why: format!("{outlet}; {source}"),
    }
}

/// Moves the installed plugins the machine's managed policy refuses (a blocked name, a
/// source under a blocked prefix) from `loaded.plugins` to what is withheld, naming the rule:
/// a plugin installed before the rule was written stops loading with it.
fn withhold_managed(loaded: &mut bosun_claude::Loaded, gate: &crate::managed::ManagedGate) {
    let plugins = std::mem::take(&mut loaded.plugins);
    for plugin in plugins {
        let record = &plugin.record;
        let checked = gate.check(&crate::managed::PluginArrival {
            name: &record.name,
            how: crate::managed::PluginPath::ClaudeMarketplace,
            dir: None,
            // The record keeps the source as the review showed it: `git URL ...`.
            source: Some(record.source.strip_prefix("git ").unwrap_or(&record.source)),
        });
        match checked {
            Ok(()) => loaded.plugins.push(plugin),
            Err(refusal) => {
                let why = format!("{}: {refusal}", record.id);
                loaded.withheld.push(bosun_claude::Withheld {
                    id: record.id.clone(),
                    name: record.name.clone(),
                    commands: record
                        .files
                        .files
                        .keys()
                        .filter_map(|path| path.strip_prefix("commands/"))
                        .filter_map(|file| file.strip_suffix(".md"))
                        .filter(|stem| !stem.contains('/'))
                        .map(str::to_owned)
                        .collect(),
                    why: why.clone(),
                });
                loaded.refused.push(why);
            }
        }
    }
}

/// The policy hooks of `plugins`' `PreToolUse` command hooks.
pub fn pre_tool_use_hooks(
    plugins: &[LoadedPlugin],
    launcher: &Arc<bosun_launch::Launcher>,
    workspace: &std::path::Path,
) -> Vec<Arc<dyn PolicyHook>> {
    plugins
        .iter()
        .filter_map(|plugin| {
            let groups = plugin.layout.hooks.get("PreToolUse")?.clone();
            (!groups.is_empty()).then(|| {
                Arc::new(PreToolUse {
                    plugin: plugin.clone(),
                    groups,
                    launcher: launcher.clone(),
                    workspace: workspace.to_path_buf(),
                }) as Arc<dyn PolicyHook>
            })
        })
        .collect()
}

#[async_trait::async_trait]
impl PolicyHook for PreToolUse {
    async fn verdict(
        &self,
        call: &ToolCall,
        _tool: &dyn Tool,
        labels: &SessionLabels,
        said_by: &crate::tool::InstanceLabel,
        cancel: &CancellationToken,
    ) -> Result<Option<HookVerdict>, HookFailure> {
        let tool_name = bosun_claude::tools::to_claude(&call.name);
        let input = json!({
            "session_id": "bosun",
            "transcript_path": "",
            "cwd": self.workspace,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool_name,
            "tool_input": bosun_claude::tools::to_claude_input(&call.input),
            "tool_use_id": call.id,
        });
        let place = HookPlace {
            launcher: &self.launcher,
            root: &self.plugin.root,
            data: &self.plugin.data,
            workspace: &self.workspace,
            options: &self.plugin.options,
        };
        let mut strictest: Option<HookVerdict> = None;
        let handlers: Vec<_> = self
            .groups
            .iter()
            .filter(|g| matches(g.matcher.as_deref(), &tool_name))
            .flat_map(|g| g.hooks.iter())
            .filter(|h| {
                bosun_claude::tools::hook_condition_holds(
                    h.condition.as_deref(),
                    call.name.as_str(),
                    &call.input,
                )
            })
            .collect();
        if handlers.is_empty() {
            return Ok(None);
        }
        let id = &self.plugin.record.id;
        // The hook would be handed the call's input, which may hold anything the session
        // holds: above the hook's sink that is a write-down, so it is not run — and since it
        // might have denied the call, a person decides instead (refused with nobody to ask).
        if let Some(why) = self.plugin.hook_sink.refuses(labels.level) {
            return Ok(Some(HookVerdict {
                plugin: id.clone(),
                decision: Decision::Ask,
                reason: format!(
                    "the PreToolUse hook of the plugin `{id}` was not run, so it could not judge \
                     this call: {why}"
                ),
            }));
        }
        // The hook gets the call's input and may keep it in its data folder, which outlives
        // the session: the folder's label takes in the session's before the hook runs, and its
        // reason (read by the session and the person) carries the label as it is after.
        crate::data_folder::meet(&self.plugin.label, id, Some(labels));
        for handler in handlers {
            let outcome = tokio::select! {
                outcome = run_handler(place, handler, &input) => outcome,
                () = cancel.cancelled() => return Ok(None),
            };
            // The hook's words are framed, so nothing in them can end the frame and pass
            // for Bosun's explanation or another plugin's.
            let verdict = match outcome {
                HookOutcome::Block(reason) => Some((Decision::Deny, framed_reason(id, &reason))),
                HookOutcome::Ask(reason) => Some((Decision::Ask, framed_reason(id, &reason))),
                // As in Claude Code, a hook that fails without exit 2 does not block; policy
                // still decides.
                HookOutcome::Failed(_) | HookOutcome::Continue | HookOutcome::Context(_) => None,
            };
            if let Some((decision, reason)) = verdict {
                let label = crate::data_folder::meet(&self.plugin.label, id, None);
                crate::data_folder::told(said_by, id, &label);
                let stricter = strictest
                    .as_ref()
                    .is_none_or(|s| s.decision == Decision::Ask && decision == Decision::Deny);
                if stricter {
                    strictest = Some(HookVerdict {
                        plugin: id.clone(),
                        decision,
                        reason,
                    });
                }
                if decision == Decision::Deny {
                    return Ok(strictest);
                }
            }
        }
        Ok(strictest)
    }
}

/// A `PreToolUse` hook's reason as it reaches a decision: framed under a header naming the
/// plugin ([`bosun_core::text::framed`]).
fn framed_reason(plugin: &str, reason: &str) -> String {
    bosun_core::text::framed(
        &format!("reason given by the PreToolUse hook of the plugin `{plugin}`"),
        reason,
    )
}

/// `plugin`'s `userConfig` answers: the user config's (`[claude.plugins."<id>".config]`), its
/// secrets (kept apart) and the defaults.
///
/// # Errors
/// The secrets file cannot be read.
pub fn answers(
    plugin: &LoadedPlugin,
    home: &Path,
    claude: &ClaudeConfig,
) -> Result<bosun_claude::user_config::Answers, bosun_claude::ClaudeError> {
    let secrets = bosun_claude::user_config::load_secrets(home, &plugin.record.id)?;
    Ok(bosun_claude::user_config::Answers::resolve(
        &plugin.layout.manifest.user_config,
        &claude.values(&plugin.record.id),
        &secrets,
    ))
}

/// The MCP servers the installed plugins provide, as config entries named `<plugin>:<server>`
/// ([`plugin_server_name`]), with `${CLAUDE_PLUGIN_ROOT}`, `${CLAUDE_PLUGIN_DATA}` and
/// `${user_config.KEY}` expanded; and why any is left out. Nothing starts here: the MCP layer
/// offers a server's tools once a person approved them (`bosun mcp trust <plugin>:<server>`).
pub fn mcp_servers(
    plugins: &[LoadedPlugin],
    home: &Path,
    claude: &ClaudeConfig,
) -> (Vec<(String, McpServerConfig)>, Vec<String>) {
    let mut servers = Vec::new();
    let mut warnings = Vec::new();
    for plugin in plugins {
        if plugin.layout.mcp_servers.is_empty() {
            continue;
        }
        let id = &plugin.record.id;
        let answers = match answers(plugin, home, claude) {
            Ok(answers) => answers,
            Err(e) => {
                warnings.push(format!(
                    "the MCP servers of the plugin `{id}` are left out: {e}"
                ));
                continue;
            }
        };
        if !answers.missing.is_empty() {
            warnings.push(format!(
                "the MCP servers of the plugin `{id}` are left out: it needs {} (answers that are not secrets go in `[claude.plugins.\"{id}\"] config = {{ KEY = VALUE }}` in the user's config.toml, secrets in $BOSUN_HOME/claude/secrets/{id}.json as {{\"KEY\": \"VALUE\"}}, mode 0600)",
                answers.missing.join(", ")
            ));
            continue;
        }
        for (server_name, server) in &plugin.layout.mcp_servers {
            let Some(name) = plugin_server_name(plugin.name(), server_name) else {
                warnings.push(format!(
                    "the MCP server `{}` of the plugin `{id}` is left out: Bosun names it `<plugin>:<server>`, and both must be 1-32 of a-z, 0-9 and -, starting with a letter",
                    bosun_core::escape_hidden(server_name)
                ));
                continue;
            };
            match provided(
                plugin,
                server,
                &answers,
                claude.network(&plugin.record.id, server_name),
                claude.classification(&plugin.record.id),
            ) {
                Ok(config) => servers.push((name, config)),
                Err(why) => warnings.push(format!(
                    "the MCP server `{name}` of the plugin `{id}` is left out: {why}"
                )),
            }
        }
    }
    (servers, warnings)
}

/// The config entry of one plugin server.
fn provided(
    plugin: &LoadedPlugin,
    server: &bosun_claude::mcp::McpServer,
    answers: &bosun_claude::user_config::Answers,
    network: &[String],
    classification: Option<bosun_core::Classification>,
) -> Result<McpServerConfig, String> {
    for host in network {
        if let Err(e) = bosun_core::Authority::parse(host) {
            return Err(format!(
                "its network grant `{}` in [claude.plugins.\"{}\".mcp] is not host or host:port: {e}",
                bosun_core::escape_hidden(host),
                plugin.record.id
            ));
        }
    }
    let (root, data) = (&plugin.root, &plugin.data);
    let public = answers.public();
    let full = |text: &str| bosun_claude::mcp::expand(text, root, data, &answers.values);
    let shown = |text: &str| bosun_claude::mcp::expand(text, root, data, &public);
    let map = |values: &BTreeMap<String, String>, f: &dyn Fn(&str) -> String| {
        values
            .iter()
            .map(|(k, v)| (k.clone(), f(v)))
            .collect::<BTreeMap<_, _>>()
    };
    let (command, args, url) = match (server.kind.as_str(), &server.command, &server.url) {
        ("stdio", Some(command), _) => (
            Some(full(command)),
            server.args.iter().map(|a| full(a)).collect(),
            None,
        ),
        (kind @ ("http" | "sse"), None, Some(url)) => {
            let url = full(url);
            if !url.starts_with("https://") && !url.starts_with("http://") {
                return Err(format!(
                    "`{}` is not an http:// or https:// URL",
                    bosun_core::escape_hidden(&shown(server.url.as_deref().unwrap_or_default()))
                ));
            }
            let transport = if kind == "sse" {
                crate::mcp_config::UrlTransport::Sse
            } else {
                crate::mcp_config::UrlTransport::StreamableHttp
            };
            (None, Vec::new(), Some((url, transport)))
        }
        ("ws", _, _) => {
            return Err(
                "its transport `ws` (WebSocket) is not one MCP defines nor one Bosun speaks: Bosun speaks stdio, Streamable HTTP (`http`) and HTTP+SSE (`sse`); ask the plugin's author for one of those"
                    .to_owned(),
            );
        }
        (kind, _, _) => {
            return Err(format!(
                "a `{}` server needs {}",
                bosun_core::escape_hidden(kind),
                if kind == "stdio" {
                    "a command"
                } else {
                    "a url"
                }
            ));
        }
    };
    let mut declared = match (&server.command, &server.url) {
        (Some(command), _) => {
            let mut line = shown(command);
            for arg in &server.args {
                line.push(' ');
                line.push_str(&shown(arg));
            }
            format!("stdio: {line}")
        }
        (None, url) => format!(
            "{}: {}",
            server.kind,
            shown(url.as_deref().unwrap_or_default())
        ),
    };
    for (key, value) in map(&server.env, &shown) {
        declared.push_str(&format!(" env {key}={value}"));
    }
    for (key, value) in map(&server.headers, &shown) {
        declared.push_str(&format!(" header {key}: {value}"));
    }
    // A grant of network is part of what is approved: another grant, another approval.
    if !network.is_empty() && command.is_some() {
        declared.push_str(&format!(" network {}", network.join(",")));
    }
    Ok(McpServerConfig {
        command,
        args,
        cwd: None,
        env: Vec::new(),
        transport: url
            .as_ref()
            .map(|(_, transport)| *transport)
            .unwrap_or_default(),
        url: url.map(|(url, _)| url),
        headers: BTreeMap::new(),
        given_headers: BTreeMap::new(),
        bearer_token_env: None,
        trusted: false,
        enabled: true,
        timeout_ms: None,
        sandbox: McpSandbox {
            network: network.to_vec(),
            ..McpSandbox::default()
        },
        classification,
        provided: Some(ProvidedServer {
            plugin: plugin.record.id.clone(),
            root: root.clone(),
            data: data.clone(),
            label: plugin.label.clone(),
            env: map(&server.env, &full),
            headers: map(&server.headers, &full),
            declared: bosun_core::escape_hidden(&declared),
            secrets: answers.secret_values(),
        }),
    })
}

/// The MCP servers of the plugins installed under `home` (what `bosun mcp list` and
/// `bosun mcp trust` show beside `[mcp.<name>]`), and why any is left out.
pub fn installed_mcp_servers(
    home: &Path,
    claude: &ClaudeConfig,
) -> (Vec<(String, McpServerConfig)>, Vec<String>) {
    let loaded = bosun_claude::Loaded::load(home);
    let (servers, mut warnings) = mcp_servers(&loaded.plugins, home, claude);
    warnings.extend(loaded.refused);
    (servers, warnings)
}
