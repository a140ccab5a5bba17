//! Hostile: unbounded, non-tail recursion with a frame the optimiser cannot remove. It exhausts
//! the wasm call stack (a trap in wasmtime) and the shadow stack in linear memory; either way
//! the host must report an error and drop the instance, not crash.

use std::hint::black_box;

use bosun_sdk::{NoInput, Plugin, ToolError, Tools};

#[derive(Default)]
struct DeepRecursion;

impl Plugin for DeepRecursion {
    fn tools() -> Tools<Self> {
        Tools::new().tool("recurse", recurse)
    }
}

bosun_sdk::export!(DeepRecursion);

fn recurse(_: NoInput) -> Result<u64, ToolError> {
    Ok(descend(0))
}

#[inline(never)]
#[allow(unconditional_recursion)] // The point of this program.
fn descend(depth: u64) -> u64 {
    let frame = black_box([depth; 16]);
    let below = descend(black_box(depth + 1));
    black_box(frame[(depth % 16) as usize]).wrapping_add(below)
}
