//! Hostile: never returns. `spin` burns CPU without ever calling the host (only epoch
//! interruption stops it); `block` parks in one host call (`wasi:clocks` via `thread::sleep`),
//! where epochs cannot reach, so the host must stop it from outside; `spin_until_cancelled` is
//! the well-behaved loop that polls `is-cancelled`.

use std::hint::black_box;
use std::time::Duration;

use bosun_sdk::{NoInput, Plugin, ToolError, Tools, host};

#[derive(Default)]
struct SpinForever;

impl Plugin for SpinForever {
    fn tools() -> Tools<Self> {
        Tools::new()
            .tool("spin", spin)
            .tool("block", block)
            .tool("spin_until_cancelled", spin_until_cancelled)
    }
}

bosun_sdk::export!(SpinForever);

fn spin(_: NoInput) -> Result<(), ToolError> {
    let mut n = 0u64;
    loop {
        n = black_box(n.wrapping_add(1));
    }
}

fn block(_: NoInput) -> Result<(), ToolError> {
    std::thread::sleep(Duration::from_secs(3600));
    Ok(())
}

fn spin_until_cancelled(_: NoInput) -> Result<u64, ToolError> {
    let mut n = 0u64;
    loop {
        n = black_box(n.wrapping_add(1));
        if n.is_multiple_of(100_000) {
            host::check_cancelled()?;
        }
    }
}
