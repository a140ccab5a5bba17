//! The doctor's report: everything a first run depends on — the config files, the models and
//! whether their keys are set (never the keys), the sandbox, skills, plugins, MCP servers and
//! the JavaScript engine — each check with the fix when something is wrong. `bosun doctor`
//! prints it; an embedding program can show it its own way.
//!
//! Reads only: starts no plugin, no MCP server and no model request (a local model server is
//! only probed on loopback, when no model is configured, to say what could be).

use std::path::Path;

use bosun_host::config::LoadedConfig;
use bosun_host::{Host, Workspace, model_setup};
use bosun_models::KeyStatus;
use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// Works.
    Ok,
    /// Works, with something worth knowing.
    Warn,
    /// Does not work until fixed.
    Broken,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `config`, `models`, `sandbox`, `skills`, `plugins`, `mcp`, `js-engine`.
    pub area: &'static str,
    /// How it came out.
    pub health: Health,
    /// What was found.
    pub detail: String,
    /// What to do, when something is wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(area: &'static str, health: Health, detail: String, fix: Option<String>) -> Check {
    Check {
        area,
        health,
        detail,
        fix,
    }
}

/// Every check, in the order a person reads them. Serialised as `{"ok": …, "checks": […]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorReport {
    /// Whether nothing is broken.
    pub ok: bool,
    /// The checks.
    pub checks: Vec<Check>,
}

impl DoctorReport {
    /// The report for the workspace holding `cwd`, with `home` as `$BOSUN_HOME`. A config that
    /// does not load is itself the report's broken check.
    pub fn for_dir(cwd: &Path, home: &Path) -> Self {
        let loaded = Workspace::discover(cwd)
            .map_err(|e| format!("finding the workspace of {}: {e}", cwd.display()))
            .and_then(|workspace| {
                LoadedConfig::load(home, &workspace)
                    .map(|config| (workspace, config))
                    .map_err(|e| e.to_string())
            });
        match loaded {
            Ok((workspace, config)) => Self::of(&workspace, &config),
            Err(e) => Self::unloadable(e),
        }
    }

    /// The report when the configuration cannot be loaded at all: that, and what to do.
    pub fn unloadable(why: String) -> Self {
        Self::from_checks(vec![check(
            "config",
            Health::Broken,
            why,
            Some("fix the file named above; `bosun config check` checks it again".to_owned()),
        )])
    }

    /// The report for a loaded workspace and configuration.
    pub fn of(workspace: &Workspace, config: &LoadedConfig) -> Self {
        Self::from_checks(checks(workspace, config))
    }

    fn from_checks(checks: Vec<Check>) -> Self {
        Self {
            ok: !checks.iter().any(|c| c.health == Health::Broken),
            checks,
        }
    }
}

fn checks(workspace: &Workspace, config: &LoadedConfig) -> Vec<Check> {
    let mut checks = Vec::new();
    let config_path = crate::assembly::config_path(config);
    checks.push(match &config.user_file {
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
    if let Some((_, file)) = &config.project {
        checks.push(check(
            "config",
            Health::Ok,
            format!(
                "{} parses ({})",
                file.path.display(),
                if config.trusted {
                    "trusted workspace"
                } else {
                    "untrusted workspace: it can only tighten"
                }
            ),
            None,
        ));
    }
    let policy = Host::catalog_for(workspace, config)
        .map_err(|e| e.to_string())
        .and_then(|(_, catalog)| {
            config
                .policy(Host::known_risks_in(&catalog))
                .map_err(|e| e.to_string())
        });
    if let Err(e) = policy {
        checks.push(check(
            "config",
            Health::Broken,
            format!("the policy does not load: {e}"),
            Some(format!("fix the rule in {config_path}")),
        ));
    }
    model_checks(config, &config_path, &mut checks);
    let launcher = bosun_launch::Launcher::new(config.user.sandbox.clone());
    let status = launcher.status();
    checks.push(if status.is_full() {
        check("sandbox", Health::Ok, status.summary(), None)
    } else {
        check(
            "sandbox",
            if config.user.sandbox.require {
                Health::Broken
            } else {
                Health::Warn
            },
            status.summary(),
            Some("`bosun sandbox status` says what each missing layer needs".to_owned()),
        )
    });
    let skills = bosun_host::skills::Skills::of(config, workspace.root());
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
    plugin_checks(workspace, config, &mut checks);
    mcp_checks(config, &config_path, &mut checks);
    checks.push(match bosun_host::js_engine_notice(workspace, config) {
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
            if bosun_host::js_engine_ready(&config.home) {
                "compiled for this machine".to_owned()
            } else {
                "not compiled yet (no enabled JavaScript plugin needs it)".to_owned()
            },
            None,
        ),
    });
    checks
}

fn model_checks(config: &LoadedConfig, config_path: &str, checks: &mut Vec<Check>) {
    let models = config.user.models_config();
    let listing = models.list(bosun_models::process_env);
    if listing.is_empty() {
        checks.push(check(
            "models",
            Health::Broken,
            "no model configured".to_owned(),
            Some(model_setup::hint(&model_setup::detect(), config_path)),
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

fn plugin_checks(workspace: &Workspace, config: &LoadedConfig, checks: &mut Vec<Check>) {
    let catalog = match Host::catalog_for_listing(workspace, config) {
        Ok((_, catalog)) => catalog,
        Err(e) => {
            checks.push(check(
                "plugins",
                Health::Broken,
                format!("the plugin catalog cannot be read: {e}"),
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

fn mcp_checks(config: &LoadedConfig, config_path: &str, checks: &mut Vec<Check>) {
    let servers = &config.user.mcp;
    if servers.is_empty() {
        checks.push(check(
            "mcp",
            Health::Ok,
            format!("no MCP servers (add one as [mcp.<name>] in {config_path})"),
            None,
        ));
        return;
    }
    let pins = match bosun_mcp::pins::PinStore::load(&config.home) {
        Ok(pins) => pins,
        Err(e) => {
            checks.push(check(
                "mcp",
                Health::Broken,
                format!("the MCP approvals cannot be read: {e}"),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(config: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        std::fs::create_dir_all(work.join(".git")).unwrap();
        let home = root.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), config).unwrap();
        (root, work, home)
    }

    #[test]
    fn a_config_that_does_not_load_is_the_one_broken_check() {
        let (_root, work, home) = dirs("mode = \"sideways\"\n");
        let report = DoctorReport::for_dir(&work, &home);
        assert!(!report.ok);
        assert_eq!(report.checks.len(), 1, "{report:?}");
        assert_eq!(report.checks[0].area, "config");
        assert!(
            report.checks[0].detail.contains("config.toml"),
            "{report:?}"
        );
    }

    #[test]
    fn a_missing_key_is_broken_and_named_never_shown() {
        let (_root, work, home) = dirs(
            "[models.m]\nprovider = \"anthropic\"\nmodel = \"x\"\napi_key_env = \"BOSUN_DOCTOR_TEST_UNSET_KEY\"\n",
        );
        let report = DoctorReport::for_dir(&work, &home);
        assert!(!report.ok, "{report:?}");
        let models: Vec<&Check> = report
            .checks
            .iter()
            .filter(|c| c.area == "models")
            .collect();
        assert_eq!(models.len(), 1, "{report:?}");
        assert_eq!(models[0].health, Health::Broken);
        assert!(
            models[0]
                .detail
                .contains("BOSUN_DOCTOR_TEST_UNSET_KEY is NOT set"),
            "{report:?}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["ok"], false);
        assert!(json["checks"][0].get("area").is_some(), "{json}");
    }
}
