//! Hostile: grows linear memory until the host's cap. `grow` uses infallible allocation, so the
//! guest aborts (or the host traps the failing `memory.grow`); `grow_gracefully` uses
//! `try_reserve` and reports `{"allocated_mib": n}` when refused, so a test can compare `n`
//! with the configured cap. Every page is written, so nothing stays lazily unbacked.

use std::hint::black_box;

use bosun_sdk::{NoInput, Plugin, ToolError, Tools};

const MIB: usize = 1024 * 1024;

#[derive(Default)]
struct MemoryBomb;

impl Plugin for MemoryBomb {
    fn tools() -> Tools<Self> {
        Tools::new()
            .tool("grow", grow)
            .tool("grow_gracefully", grow_gracefully)
    }
}

bosun_sdk::export!(MemoryBomb);

fn grow(_: NoInput) -> Result<(), ToolError> {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(vec![0xA5; MIB]);
        black_box(&hoard);
    }
}

fn grow_gracefully(_: NoInput) -> Result<serde_json::Value, ToolError> {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = Vec::new();
        if chunk.try_reserve_exact(MIB).is_err() || hoard.try_reserve(1).is_err() {
            let allocated_mib = hoard.len();
            drop(black_box(hoard));
            return Ok(serde_json::json!({ "allocated_mib": allocated_mib }));
        }
        chunk.resize(MIB, 0xA5);
        hoard.push(black_box(chunk));
    }
}
