//! Where a command runs: the workspace and configuration it loads, the host built from them,
//! who answers approvals, and JSON printing. Every command group starts here.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use bosun_host::approval::{ApprovalBroker, AutoApprove, NonInteractive, TerminalBroker};
use bosun_host::config::{LoadedConfig, bosun_home};
use bosun_host::{Host, Workspace};

/// Everything a command needs about where it runs.
pub struct Env {
    pub workspace: Arc<Workspace>,
    pub config: Arc<LoadedConfig>,
}

pub fn load() -> Result<Env> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    load_in(&cwd, &bosun_home()?)
}

/// The [`Env`] of the workspace holding `cwd`, with `home` as `$BOSUN_HOME`.
pub fn load_in(cwd: &Path, home: &Path) -> Result<Env> {
    let workspace = Workspace::discover(cwd)
        .with_context(|| format!("finding the workspace of {}", cwd.display()))?;
    let config = LoadedConfig::load(home, &workspace)?;
    Ok(Env {
        workspace: Arc::new(workspace),
        config: Arc::new(config),
    })
}

impl Env {
    /// The host for this workspace and configuration, leaving its warnings for the caller to
    /// show (the terminal UI cannot print on stderr); `notice` is told just before Bosun's
    /// JavaScript engine is compiled for this machine (seconds, once).
    pub(crate) fn build_host(&self, notice: bosun_host::EngineNotice) -> Result<Host> {
        Ok(bosun_agent::assembly::open_host(
            self.workspace.clone(),
            self.config.clone(),
            notice,
        )?)
    }

    /// The next turn's builder for this workspace and configuration.
    pub(crate) fn turn(&self) -> bosun_agent::turn::TurnBuilder {
        bosun_agent::turn::TurnBuilder::new(self.workspace.clone(), self.config.clone())
    }

    /// When an enabled JavaScript plugin will need Bosun's JavaScript engine and the engine is
    /// not compiled for this machine yet: what to tell the person before the seconds it takes.
    pub fn js_engine_notice(&self) -> Option<String> {
        bosun_host::js_engine_notice(&self.workspace, &self.config).map(str::to_owned)
    }

    /// Compiles the JavaScript engine now if an enabled JavaScript plugin will need it, saying
    /// so and how long it took (after enabling or trusting such a plugin).
    pub fn prepare_js_engine(&self) -> Result<()> {
        if let Some(notice) = self.js_engine_notice() {
            crate::term::errln!("{notice}");
            let started = std::time::Instant::now();
            bosun_host::prepare_js_engine(&self.config.home)?;
            crate::term::errln!("ready in {:.1} s", started.elapsed().as_secs_f64());
        }
        Ok(())
    }

    /// The host, with its warnings printed on stderr.
    pub fn host(&self) -> Result<Host> {
        // Said when the engine is really compiled, by the sandbox that compiles it: asking
        // beforehand cost a second catalog and a second wasmtime engine on every command.
        let host = self.build_host(Arc::new(|notice: &str| {
            crate::term::errln!("{notice}");
        }))?;
        Ok(with_warnings_printed(host))
    }

    /// [`Env::host`] for a command that ends with the process (`tools call`, `tools list`, a
    /// plugin's command): no instance pool is reserved for the one or few plugin instances it
    /// makes (`HostBuilder::for_one_command`).
    pub fn host_for_one_command(&self) -> Result<Host> {
        let host = bosun_agent::assembly::open_host_for_one_command(
            self.workspace.clone(),
            self.config.clone(),
            Arc::new(|notice: &str| {
                crate::term::errln!("{notice}");
            }),
        )?;
        Ok(with_warnings_printed(host))
    }

    /// The trust store and the plugin catalog (metadata only; no plugin code runs).
    pub fn catalog(&self) -> Result<(bosun_plugins::TrustStore, bosun_plugins::Catalog)> {
        Ok(Host::catalog_for(&self.workspace, &self.config)?)
    }

    /// The catalog to show a person, never to load from (see [`Host::catalog_for_listing`]).
    pub fn listing(&self) -> Result<bosun_plugins::Catalog> {
        Ok(Host::catalog_for_listing(&self.workspace, &self.config)?.1)
    }

    /// The risk of every tool action known from metadata: built-ins and enabled plugins' tools.
    pub fn known_risks(&self) -> Result<Vec<(String, bosun_core::Risk)>> {
        let (_, catalog) = self.catalog()?;
        Ok(Host::known_risks_in(&catalog))
    }
}

pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let text = crate::term::json_safe(&serde_json::to_string_pretty(value)?);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    Ok(())
}

/// Who answers approvals: `--yes` approves what policy asks about (never what it denies), a
/// terminal asks the person, and otherwise nobody can and the call is refused.
pub(crate) fn broker(yes: bool) -> Arc<dyn ApprovalBroker> {
    if yes {
        Arc::new(AutoApprove)
    } else if let Some(terminal) = TerminalBroker::open() {
        Arc::new(terminal)
    } else {
        Arc::new(NonInteractive)
    }
}

pub(crate) fn config_path(env: &Env) -> String {
    bosun_agent::assembly::config_path(&env.config)
}

/// `host`, after printing its warnings on stderr.
fn with_warnings_printed(host: Host) -> Host {
    for warning in host.warnings() {
        crate::term::errln!("warning: {warning}");
    }
    host
}
