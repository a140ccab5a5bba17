//! `bosun acp`: Bosun as the agent of an editor's agent panel, over the Agent Client Protocol
//! on stdin and stdout (`bosun_acp`). stdout is the connection, so nothing else is printed
//! there; a failure to start is said on stderr, which editors keep in their agent log.

use anyhow::{Context, Result};

use crate::exit;

/// Serves the editor that started this process until it closes the connection; running turns
/// are then cancelled and saved.
pub fn acp() -> Result<u8> {
    let home = bosun_host::config::bosun_home()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = runtime.block_on(bosun_acp::serve_stdio(home));
    // A write to an editor that stopped reading (or a read of its open stdin) blocks a thread
    // for good; the sessions are saved by now, so the process does not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served?;
    Ok(exit::OK)
}
