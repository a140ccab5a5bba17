//! `bosun doctor`: one report of everything a first run depends on — the config files, the
//! models and whether their keys are set (never the keys), the sandbox, skills, plugins, MCP
//! servers and the JavaScript engine — each line with the fix when something is wrong. Reads
//! only; starts no plugin, no MCP server and no model request.

use anyhow::Result;
use bosun_models::KeyStatus;
use serde::Serialize;
use serde_json::json;

use crate::env::Env;
use crate::exit;
use crate::term::{Paint, outln, paint};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Health {
    /// Works.
    Ok,
    /// Works, with something worth knowing.
    Warn,
    /// Does not work until fixed.
    Broken,
}

/// One line of the report.
#[derive(Debug, Serialize)]
struct Check {
    /// `config`, `models`, `sandbox`, `skills`, `plugins`, `mcp`, `js-engine`.
    area: &'static str,
    health: Health,
    /// What was found.
    detail: String,
    /// What to do, when something is wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

fn check(area: &'static str, health: Health, detail: String, fix: Option<String>) -> Check {
    Check {
        area,
        health,
        detail,
        fix,
    }
}

/// `bosun doctor [--json]`. Exit code 1 when something is broken, else 0.
pub fn doctor(json: bool) -> Result<u8> {
    let checks = match crate::env::load() {
        Ok(env) => checks(&env),
        Err(e) => vec![check(
            "config",
            Health::Broken,
            format!("{e:#}"),
            Some("fix the file named above; `bosun config check` checks it again".to_owned()),
        )],
    };
    let broken = checks.iter().any(|c| c.health == Health::Broken);
    if json {
        crate::env::print_json(&json!({"ok": !broken, "checks": checks}))?;
    } else {
        let colour = crate::term::colour_on_stdout();
        for c in &checks {
            let word = match c.health {
                Health::Ok => paint("ok    ", Paint::Green, colour),
                Health::Warn => paint("warn  ", Paint::Yellow, colour),
                Health::Broken => paint("BROKEN", Paint::Red, colour),
            };
            // The word is painted by Bosun; everything else passes through the escape.
            crate::term::write_stdout(&format!(
                "{word} {}\n",
                crate::term::escape(&format!("{:<10} {}", c.area, c.detail))
            ));
            if let Some(fix) = &c.fix {
                outln!("       {:<10} fix: {fix}", "");
            }
        }
    }
    Ok(if broken { exit::TOOL_ERROR } else { exit::OK })
}

fn checks(env: &Env) -> Vec<Check> {
    let mut checks = Vec::new();
    let config_path = crate::env::config_path(env);
    checks.push(match &env.config.user_file {
        Some(file) => check(
            "config",
            Health::Ok,
            format!("{} parses", file.path.display()),
            None,
        ),
        None => check(
            "config",
            Health::Warn,
            format!("no user config at {config_path}; defaults apply"),
            Some("`bosun config init` writes a commented starter config".to_owned()),
        ),
    });
    if let Some((_, file)) = &env.config.project {
        checks.push(check(
            "config",
            Health::Ok,
            format!(
                "{} parses ({})",
                file.path.display(),
                if env.config.trusted {
                    "trusted workspace"
                } else {
                    "untrusted workspace: it can only tighten"
                }
            ),
            None,
        ));
    }
    if let Err(e) = env
        .known_risks()
        .and_then(|risks| Ok(env.config.policy(risks)?))
    {
        checks.push(check(
            "config",
            Health::Broken,
            format!("the policy does not load: {e:#}"),
            Some(format!("fix the rule in {config_path}")),
        ));
    }
    model_checks(env, &config_path, &mut checks);
    let launcher = bosun_launch::Launcher::new(env.config.user.sandbox.clone());
    let status = launcher.status();
    checks.push(if status.is_full() {
        check("sandbox", Health::Ok, status.summary(), None)
    } else {
        check(
            "sandbox",
            if env.config.user.sandbox.require {
                Health::Broken
            } else {
                Health::Warn
            },
            status.summary(),
            Some("`bosun sandbox status` says what each missing layer needs".to_owned()),
        )
    });
    let skills = bosun_host::skills::Skills::of(&env.config, env.workspace.root());
    checks.push(check(
        "skills",
        Health::Ok,
        format!("{} skill(s) offered", skills.all().len()),
        None,
    ));
    for d in skills.diagnostics() {
        checks.push(check(
            "skills",
            Health::Warn,
            format!("{}: {}", d.path, d.message),
            None,
        ));
    }
    plugin_checks(env, &mut checks);
    mcp_checks(env, &config_path, &mut checks);
    checks.push(match env.js_engine_notice() {
        Some(_) => check(
            "js-engine",
            Health::Warn,
            "an enabled JavaScript plugin needs the engine, not yet compiled for this machine"
                .to_owned(),
            Some("nothing to do: it compiles once, in seconds, on first use".to_owned()),
        ),
        None => check(
            "js-engine",
            Health::Ok,
            if bosun_host::js_engine_ready(&env.config.home) {
                "compiled for this machine".to_owned()
            } else {
                "not compiled yet (no enabled JavaScript plugin needs it)".to_owned()
            },
            None,
        ),
    });
    checks
}

fn model_checks(env: &Env, config_path: &str, checks: &mut Vec<Check>) {
    let models = env.config.user.models_config();
    let listing = models.list(bosun_models::process_env);
    if listing.is_empty() {
        checks.push(check(
            "models",
            Health::Broken,
            "no model configured".to_owned(),
            Some(crate::first_run::hint(
                &crate::first_run::detect(),
                config_path,
            )),
        ));
        return;
    }
    for model in &listing {
        let key = match (&model.key, &model.api_key_env) {
            (KeyStatus::NotNeeded, _) => "no key needed".to_owned(),
            (KeyStatus::Present, Some(var)) => format!("key: {var} is set"),
            (_, Some(var)) => format!("key: {var} is NOT set"),
            (_, None) => "key missing".to_owned(),
        };
        let detail = format!(
            "[models.{}] {} {} at {}{}; {key}",
            model.name,
            model.provider,
            model.model,
            model.base_url,
            if model.is_default { " (default)" } else { "" },
        );
        checks.push(match model.key {
            KeyStatus::Missing => check(
                "models",
                Health::Broken,
                detail,
                Some(format!(
                    "export {}=… in the shell that starts bosun, or change api_key_env in [models.{}]",
                    model.api_key_env.as_deref().unwrap_or("THE_VARIABLE"),
                    model.name
                )),
            ),
            _ => check("models", Health::Ok, detail, None),
        });
    }
    if listing.len() > 1 && models.default_model.is_none() {
        checks.push(check(
            "models",
            Health::Warn,
            "several models and no default_model: each run needs --model NAME".to_owned(),
            Some(format!("set default_model in {config_path}")),
        ));
    }
}

fn plugin_checks(env: &Env, checks: &mut Vec<Check>) {
    let catalog = match env.listing() {
        Ok(catalog) => catalog,
        Err(e) => {
            checks.push(check(
                "plugins",
                Health::Broken,
                format!("the plugin catalog cannot be read: {e:#}"),
                None,
            ));
            return;
        }
    };
    if catalog.entries().is_empty() {
        checks.push(check("plugins", Health::Ok, "no plugins".to_owned(), None));
    }
    for entry in catalog.entries() {
        let name = &entry.local_name;
        let (health, fix) = match &entry.state {
            bosun_plugins::PluginState::Enabled | bosun_plugins::PluginState::Disabled => {
                (Health::Ok, None)
            }
            bosun_plugins::PluginState::Untrusted | bosun_plugins::PluginState::Changed { .. } => (
                Health::Warn,
                Some(format!(
                    "review it with `bosun plugins info {name}`, then `bosun plugins trust {name}`"
                )),
            ),
            bosun_plugins::PluginState::Invalid { reason } => {
                (Health::Broken, Some(reason.clone()))
            }
        };
        checks.push(check(
            "plugins",
            health,
            format!("{name}: {}", entry.state),
            fix,
        ));
    }
}

fn mcp_checks(env: &Env, config_path: &str, checks: &mut Vec<Check>) {
    let servers = &env.config.user.mcp;
    if servers.is_empty() {
        checks.push(check(
            "mcp",
            Health::Ok,
            format!("no MCP servers (add one as [mcp.<name>] in {config_path})"),
            None,
        ));
        return;
    }
    let pins = match bosun_mcp::pins::PinStore::load(&env.config.home) {
        Ok(pins) => pins,
        Err(e) => {
            checks.push(check(
                "mcp",
                Health::Broken,
                format!("the MCP approvals cannot be read: {e:#}"),
                None,
            ));
            return;
        }
    };
    for (name, config) in servers {
        let (health, detail, fix) = match bosun_mcp::server_state(name, config, &pins) {
            bosun_mcp::ServerState::Disabled => (Health::Ok, "disabled".to_owned(), None),
            bosun_mcp::ServerState::Approved(n) => {
                (Health::Ok, format!("pinned, {n} tool(s) approved"), None)
            }
            bosun_mcp::ServerState::NotApproved => (
                Health::Warn,
                "configured, not approved: its tools are not offered".to_owned(),
                Some(format!("`bosun mcp trust {name}`")),
            ),
            bosun_mcp::ServerState::Changed => (
                Health::Warn,
                "changed since approved: its tools are not offered".to_owned(),
                Some(format!("`bosun mcp trust {name}` shows what changed")),
            ),
        };
        checks.push(check("mcp", health, format!("{name}: {detail}"), fix));
    }
}
