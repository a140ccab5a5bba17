//! `bosun mcp list|trust|untrust`: the MCP servers of `[mcp.<name>]` and what the user approved
//! of each. Trusting starts the server once, lists its tools, shows them (and what changed
//! since the last approval) and pins exactly what was shown: each tool's review is rendered
//! from the pin it would record ([`bosun_mcp::pins::PinnedTool::review`]), every line of it, with its digest.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use bosun_host::approval::sanitize_for_terminal;
use bosun_host::mcp_config::{McpServerConfig, UrlTransport};
use bosun_host::plugin_runtime::claude::installed_mcp_servers;
use bosun_mcp::client::{Change, ReviewError, ServerReview};
use bosun_mcp::pins::PinStore;
use bosun_mcp::{ServerState, server_state};
use serde_json::json;

use crate::env::load;
use crate::exit;
use crate::term::{errln, outln};

fn transport(config: &McpServerConfig) -> String {
    // A plugin's server is shown as declared: its secrets as the placeholders it wrote.
    if let Some(provided) = &config.provided {
        return format!("{} (plugin {})", provided.declared, provided.plugin);
    }
    match (&config.command, &config.url) {
        (Some(command), _) => {
            let mut text = command.clone();
            for arg in &config.args {
                text.push(' ');
                text.push_str(arg);
            }
            format!("stdio: {text}")
        }
        (None, Some(url)) if config.transport == UrlTransport::Sse => format!("sse: {url}"),
        (None, Some(url)) => format!("http: {url}"),
        (None, None) => "?".to_owned(),
    }
}

/// Every server Bosun knows: `[mcp.<name>]` of the user's config, then those of installed
/// plugins (`<plugin>:<server>`).
fn servers(env: &crate::env::Env) -> Vec<(String, McpServerConfig)> {
    let mut servers: Vec<(String, McpServerConfig)> = env
        .config
        .user
        .mcp
        .iter()
        .map(|(name, config)| (name.clone(), config.clone()))
        .collect();
    let (provided, _) = installed_mcp_servers(&env.config.home, &env.config.user.claude);
    servers.extend(provided);
    servers
}

/// The server `name`, or an error saying how to add one.
fn server(env: &crate::env::Env, name: &str) -> Result<McpServerConfig> {
    if let Some(config) = env.config.user.mcp.get(name) {
        return Ok(config.clone());
    }
    if bosun_host::mcp_config::valid_plugin_server_name(name) {
        let (provided, warnings) = installed_mcp_servers(&env.config.home, &env.config.user.claude);
        if let Some((_, config)) = provided.into_iter().find(|(n, _)| n == name) {
            return Ok(config);
        }
        let why = warnings
            .iter()
            .find(|w| w.contains(&format!("`{name}`")))
            .cloned()
            .unwrap_or_else(|| "no installed plugin provides it".to_owned());
        bail!("no MCP server `{name}`: {why}");
    }
    bail!(
        "no MCP server `{name}` in {}: add it as [mcp.{name}] first",
        crate::env::config_path(env)
    )
}

pub fn list(json: bool) -> Result<u8> {
    let env = load()?;
    let pins = PinStore::load(&env.config.home)?;
    let servers = servers(&env);
    if json {
        let list: Vec<_> = servers
            .iter()
            .map(|(name, config)| {
                let state = server_state(name, config, &pins);
                let tools: Vec<String> = pins
                    .servers
                    .get(name)
                    .filter(|_| matches!(state, ServerState::Approved(_)))
                    .map(|pin| pin.tools.keys().cloned().collect())
                    .unwrap_or_default();
                json!({
                    "name": name,
                    "transport": transport(config),
                    "trusted": config.trusted,
                    "state": match state {
                        ServerState::Disabled => "disabled",
                        ServerState::NotApproved => "not_approved",
                        ServerState::Approved(_) => "approved",
                        ServerState::Changed => "changed",
                    },
                    "tools": tools,
                })
            })
            .collect();
        crate::env::print_json(&json!({ "servers": list }))?;
        return Ok(exit::OK);
    }
    for line in list_lines(&env)? {
        outln!("{line}");
    }
    Ok(exit::OK)
}

/// One line per configured server with its state, or how to add one: what `bosun mcp list`
/// prints and `/mcp` shows.
pub(crate) fn list_lines(env: &crate::env::Env) -> Result<Vec<String>> {
    let pins = PinStore::load(&env.config.home)?;
    let servers = servers(env);
    if servers.is_empty() {
        return Ok(vec![format!(
            "no MCP servers: add one as [mcp.<name>] in {}",
            crate::env::config_path(env)
        )]);
    }
    Ok(servers
        .iter()
        .map(|(name, config)| {
            let state = match server_state(name, config, &pins) {
                ServerState::Disabled => "disabled".to_owned(),
                ServerState::NotApproved => format!("not approved (bosun mcp trust {name})"),
                ServerState::Approved(n) => format!("approved, {n} tool(s)"),
                ServerState::Changed => {
                    format!("changed since approved (bosun mcp trust {name})")
                }
            };
            format!(
                "{name:<16} {state:<40} {}{}",
                sanitize_for_terminal(&transport(config)),
                if config.trusted {
                    "  [trusted annotations]"
                } else {
                    ""
                }
            )
        })
        .collect())
}

/// What approving a server would pin, and the review a person reads first.
pub(crate) struct Review {
    /// The review as text: for each tool a head line (changes marked, the review's digest)
    /// and everything the model will be given of it.
    pub text: String,
    /// How many tools would be offered.
    pub count: usize,
    reviewed: ServerReview,
}

/// Starts server `name`, lists its tools and compares them with what was approved before
/// ([`ServerReview::list`], the step the editor face shares), rendered for a terminal.
pub(crate) fn review(env: &crate::env::Env, name: &str) -> Result<Review> {
    let config = &server(env, name)?;
    let launcher = Arc::new(
        bosun_launch::Launcher::new(env.config.user.sandbox.clone())
            .private(&env.config.home)
            .cache_in(env.config.home.join("cache")),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let reviewed = runtime
        .block_on(ServerReview::list(
            name,
            config,
            env.workspace.root(),
            &env.config.home,
            launcher,
        ))
        .map_err(|e| match e {
            ReviewError::Client(e) => anyhow::anyhow!("MCP server `{name}`: {e}"),
            ReviewError::Pins(e) => anyhow::anyhow!(e),
        })?;
    let mut lines = Vec::new();
    for tool in &reviewed.tools {
        let Some((offered_as, pinned)) = &tool.offered else {
            lines.push(format!(
                "  ✗ {} — not offered: {}",
                sanitize_for_terminal(&tool.name),
                sanitize_for_terminal(tool.refused.as_deref().unwrap_or_default())
            ));
            continue;
        };
        let change = match tool.change {
            Change::First => "",
            Change::New => "new",
            Change::Unchanged => "unchanged",
            Change::Changed => "CHANGED",
        };
        let digest = pinned.reviewed.clone().unwrap_or_default();
        lines.push(format!(
            "  {} {offered_as} {}(review {})",
            if tool.change == Change::Changed {
                "!"
            } else {
                "•"
            },
            if change.is_empty() {
                String::new()
            } else {
                format!("[{change}] ")
            },
            digest.get(..16).unwrap_or(&digest)
        ));
        lines.push(pinned.review());
        if let Some(old) = &tool.previous {
            if old.description != pinned.description {
                lines.extend(
                    old.description
                        .split('\n')
                        .filter(|line| !line.trim().is_empty())
                        .map(|line| format!("      was: {}", sanitize_for_terminal(line))),
                );
            }
            if (&old.input_schema, &old.annotations, &old.output_schema)
                != (
                    &pinned.input_schema,
                    &pinned.annotations,
                    &pinned.output_schema,
                )
            {
                lines.push("    as approved before:".to_owned());
                lines.push(old.review());
            }
        }
    }
    for gone in &reviewed.removed {
        lines.push(format!("  - {} [removed]", sanitize_for_terminal(gone)));
    }
    if !reviewed.trusted {
        lines.push(format!(
            "Every tool is judged by policy as `process` risk (set trusted = true in [mcp.{name}] to let its annotations set the risk)."
        ));
    }
    Ok(Review {
        text: lines.join("\n"),
        count: reviewed.count(),
        reviewed,
    })
}

/// Pins what `review` showed as approved.
pub(crate) fn record(env: &crate::env::Env, name: &str, review: Review) -> Result<String> {
    let count = review.reviewed.record(&env.config.home)?;
    Ok(format!("approved {count} tool(s) of MCP server `{name}`"))
}

/// Forgets server `name`'s approval.
pub(crate) fn remove(env: &crate::env::Env, name: &str) -> Result<String> {
    let removed = PinStore::update(&env.config.home, |pins| {
        let removed = pins.servers.remove(name).is_some();
        (removed, removed)
    })?;
    if !removed {
        bail!("MCP server `{name}` is not approved; nothing to remove");
    }
    Ok(format!(
        "MCP server `{name}`: approval removed; its tools are no longer offered"
    ))
}

pub fn trust(name: &str, yes: bool) -> Result<u8> {
    let env = load()?;
    if let Ok(config) = server(&env, name) {
        errln!(
            "starting MCP server `{name}` ({}) to list its tools…",
            sanitize_for_terminal(&transport(&config))
        );
    }
    let review = review(&env, name)?;
    errln!("{}", review.text);
    if !crate::plugins::confirm(
        &format!(
            "Approve these {} tool(s) of `{name}` exactly as shown?",
            review.count
        ),
        yes,
    )? {
        errln!("nothing recorded (run in a terminal, or pass --yes)");
        return Ok(exit::NEEDS_APPROVAL);
    }
    outln!("{}", record(&env, name, review)?);
    Ok(exit::OK)
}

pub fn untrust(name: &str) -> Result<u8> {
    let env = load()?;
    outln!("{}", remove(&env, name)?);
    Ok(exit::OK)
}

/// `bosun mcp login NAME`: signs in to a URL server that requires OAuth, printing the address
/// to open and waiting for the browser to come back.
pub fn login(name: &str) -> Result<u8> {
    let env = load()?;
    let Some(config) = env.config.user.mcp.get(name) else {
        bail!(
            "no MCP server `{name}` in {}: add it as [mcp.{name}] first",
            crate::env::config_path(&env)
        );
    };
    let Some(url) = &config.url else {
        bail!("MCP server `{name}` is a command, not a URL: only URL servers sign in with OAuth");
    };
    if config.transport == UrlTransport::Sse {
        bail!(
            "MCP server `{name}` uses the older SSE transport, which Bosun does not sign in to with OAuth: give it headers or bearer_token_env in [mcp.{name}]"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime
        .block_on(bosun_mcp::oauth::login(&env.config.home, name, url, |address| {
            crate::term::errln!(
                "Open this address in a browser to let Bosun use `{name}` (waiting up to {} s):",
                bosun_mcp::oauth::LOGIN_TIMEOUT.as_secs()
            );
            crate::term::errln!("{}", sanitize_for_terminal(address));
        }))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    outln!(
        "signed in to {name}; its tokens are kept in {}",
        bosun_mcp::oauth::credentials_path(&env.config.home, name).display()
    );
    Ok(exit::OK)
}

/// `bosun mcp logout NAME`: forgets the tokens of a sign-in.
pub fn logout(name: &str) -> Result<u8> {
    let env = load()?;
    match bosun_mcp::oauth::logout(&env.config.home, name).map_err(|e| anyhow::anyhow!("{e}"))? {
        true => outln!("signed out of {name}"),
        false => outln!("{name} was not signed in"),
    }
    Ok(exit::OK)
}
