//! {{name}}: a Bosun plugin.
//!
//! Build: `cargo build --target wasm32-wasip2 --release`, then install
//! `target/wasm32-wasip2/release/{{name_snake}}.wasm` as `plugin.wasm` in a plugin directory.
//! Test: `cargo test` (on the host; tools are plain functions).

pub mod spec;

use bosun_sdk::{Plugin, ToolError, Tools};
use serde::Serialize;

use spec::CountWordsInput;

/// The plugin. Its fields, if any, are the state one sandbox instance keeps between calls.
#[derive(Default)]
pub struct ThisPlugin;

impl Plugin for ThisPlugin {
    fn tools() -> Tools<Self> {
        // One handler per tool in spec.rs: a function of the input, or a `&mut self` method.
        Tools::new().tool(spec::COUNT_WORDS, count_words)
    }
}

bosun_sdk::export!(ThisPlugin);

/// What `count_words` returns.
#[derive(Debug, PartialEq, Serialize)]
pub struct Counts {
    /// Whitespace-separated words.
    pub words: usize,
    /// Lines.
    pub lines: usize,
    /// Unicode characters.
    pub characters: usize,
}

/// Counts the words, lines and characters of `input.text`.
pub fn count_words(input: CountWordsInput) -> Result<Counts, ToolError> {
    Ok(Counts {
        words: input.text.split_whitespace().count(),
        lines: input.text.lines().count(),
        characters: input.text.chars().count(),
    })
}

#[cfg(test)]
mod tests;
