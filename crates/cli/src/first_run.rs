//! The way in when no model is configured: offer what `bosun_host::model_setup` finds on this
//! machine and write the accepted `[models.*]` entry, and otherwise open the terminal UI on the
//! scripted demo model so it can be tried without a key. Also `bosun config init`.
//!
//! Never prints a key and never asks without a terminal (it says what to run instead).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use bosun_agent::scripted::{Script, ScriptedModel, ScriptedServer};
use bosun_host::config::LoadedConfig;
use bosun_host::model_setup::{Candidate, detect, hint};
use bosun_host::model_setup::{add_model, entry};
use bosun_models::ProviderKind;

use crate::env::Env;
use crate::term::{err, errln};

/// The script of the demo model: what it says to every task.
const DEMO_SCRIPT: &str = include_str!("demo-model.json");

/// `bosun config init [--force]`: writes the starter config to `$BOSUN_HOME/config.toml`.
pub fn config_init(force: bool) -> Result<u8> {
    let home = bosun_host::config::bosun_home()?;
    let candidates = detect();
    let path = bosun_host::model_setup::write_starter_config(&home, &candidates, force)?;
    crate::term::outln!("wrote {}", path.display());
    match candidates.first() {
        Some(first) => crate::term::outln!("default model: {}", first.describe()),
        None => crate::term::outln!(
            "no model found (no OPENAI_API_KEY or ANTHROPIC_API_KEY, no local Ollama or vLLM): uncomment one of the [models.*] examples"
        ),
    }
    Ok(crate::exit::OK)
}

/// Asks on the terminal whether to use each candidate in turn and writes the first accepted.
/// Returns whether one was written.
fn offer(env: &Env, candidates: &[Candidate]) -> Result<bool> {
    let path = crate::env::config_path(env);
    errln!("No model is configured yet.");
    for candidate in candidates {
        errln!(
            "Found {}:\n{}",
            candidate.found,
            candidate.toml().trim_end()
        );
        err!("Add it to {path} as the default model? [Y/n] ");
        std::io::stderr().flush()?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        if matches!(line.trim().to_ascii_lowercase().as_str(), "" | "y" | "yes") {
            add_model(&env.config.home, candidate)?;
            errln!("wrote [models.{}] to {path}", candidate.name);
            return Ok(true);
        }
    }
    Ok(false)
}

/// The demo model running for this process, kept alive while it is used.
pub struct Demo {
    _server: ScriptedServer,
    _runtime: tokio::runtime::Runtime,
}

/// For `bosun` with no model configured: the first run. On a terminal it offers what
/// [`detect`] found and reloads the configuration after writing an entry; otherwise (declined,
/// nothing found) the configuration is given a `[models.demo]` entry on the scripted demo model,
/// for this process only (nothing is written).
pub fn prepare_interactive(env: Env) -> Result<(Env, Option<Demo>)> {
    if !env.config.user.models.is_empty() {
        return Ok((env, None));
    }
    let candidates = detect();
    if std::io::stdin().is_terminal() && !candidates.is_empty() && offer(&env, &candidates)? {
        return Ok((crate::env::load()?, None));
    }
    let (env, demo) = with_demo_model(env)?;
    errln!(
        "Opening on the scripted DEMO model (not a real model: it answers every task from a script). {}",
        hint(&candidates, &crate::env::config_path(&env))
    );
    Ok((env, Some(demo)))
}

/// For `bosun run` with no model configured: on a terminal, offers what [`detect`] found; returns
/// the reloaded configuration when an entry was written, `None` when the run cannot go on (the
/// caller reports that no model is configured, with [`hint`]).
pub fn prepare_run(env: &Env) -> Result<Option<Env>> {
    if !env.config.user.models.is_empty() {
        return Ok(None);
    }
    let candidates = detect();
    if std::io::stdin().is_terminal() && !candidates.is_empty() && offer(env, &candidates)? {
        return Ok(Some(crate::env::load()?));
    }
    bail!("{}", hint(&candidates, &crate::env::config_path(env)))
}

/// `env` with `[models.demo]` on a scripted model served on loopback by this process.
fn with_demo_model(env: Env) -> Result<(Env, Demo)> {
    let script =
        Script::from_json(DEMO_SCRIPT).map_err(|e| anyhow::anyhow!("the demo script: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the demo model")?;
    let server = runtime
        .block_on(ScriptedModel::serve(script))
        .context("starting the demo model on 127.0.0.1")?;
    let mut config: LoadedConfig =
        Arc::try_unwrap(env.config).map_err(|_| anyhow::anyhow!("the configuration is in use"))?;
    config.user.models.insert(
        "demo".to_owned(),
        entry(
            ProviderKind::OpenaiChat,
            Some(server.base_url()),
            bosun_agent::scripted::SCRIPTED_MODEL_ID,
            None,
        ),
    );
    config.user.default_model = Some("demo".to_owned());
    Ok((
        Env {
            workspace: env.workspace,
            config: Arc::new(config),
        },
        Demo {
            _server: server,
            _runtime: runtime,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_script_is_valid() {
        let script = Script::from_json(DEMO_SCRIPT).unwrap();
        assert!(script.each_task);
    }
}
