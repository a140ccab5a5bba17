//! `bosun plugins run NAME [ARGS]`: a command a Forge plugin registered with
//! `api.registerCommand`, run in the plugin's sandboxed instance.
//!
//! A command is something a person runs, so no model is involved and no approval is asked; it
//! runs with the plugin's instance grants (no filesystem) and no network at all, under the
//! plugin's deadline, and Ctrl-C cancels it. Its `write` output goes to stdout, `writeError` to
//! stderr, each bounded by the engine; its return value is the exit code (clamped to 0–255).
//!
//! Exit codes: the command's own, `2` when no enabled plugin has a command of that name.

use std::io::Write;

use anyhow::{Result, bail};
use tokio_util::sync::CancellationToken;

use crate::env::load;
use crate::term::{err, out};

/// Runs the command `name` with `args`.
pub fn run(name: &str, args: &[String]) -> Result<u8> {
    let env = load()?;
    let host = env.host_for_one_command()?;
    let Some(runtime) = host
        .js_runtimes()
        .iter()
        .find(|r| r.descriptor().commands.iter().any(|c| c.name == name))
    else {
        let known: Vec<String> = host
            .js_runtimes()
            .iter()
            .flat_map(|r| r.descriptor().commands.iter().map(|c| c.name.clone()))
            .collect();
        if known.is_empty() {
            bail!(
                "no enabled plugin registers a command named `{name}` (no plugin registers any command)"
            );
        }
        bail!(
            "no enabled plugin registers a command named `{name}`; commands: {}",
            known.join(", ")
        );
    };
    let runtime_handle = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let cancel = CancellationToken::new();
    let output = runtime_handle.block_on(async {
        let stop = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.cancel();
            }
        });
        runtime.command(name, args, cancel.clone()).await
    });
    match output {
        Ok(output) => {
            out!("{}", output.stdout);
            err!("{}", output.stderr);
            let _ = std::io::stdout().flush();
            Ok(u8::try_from(output.exit_code.clamp(0, 255)).unwrap_or(1))
        }
        Err(error) => bail!("{}", error.message),
    }
}
