//! What this plugin declares: its tools, their inputs, their risk and what they reach beyond
//! their input. build.rs reads this file too, to write the metadata; keep it free of anything
//! but declarations.

use bosun_sdk::spec::{PluginSpec, Risk, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;

/// The `count_words` tool's name.
pub const COUNT_WORDS: &str = "count_words";

/// Input of `count_words`. Doc comments become the schema's descriptions, which the model reads.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountWordsInput {
    /// The text to count.
    pub text: String,
}

/// The plugin as its metadata declares it.
pub fn plugin() -> PluginSpec {
    bosun_sdk::plugin_spec!()
        // A tool that touches nothing but its input: risk `read`, no capabilities. A tool that
        // fetches a URL would add `.risk(Risk::Network)` and
        // `.capability(Capability::net_http().host_from_input("/url"))`.
        .tool(
            ToolSpec::new::<CountWordsInput>(
                COUNT_WORDS,
                "Counts the words, lines and characters of a text.",
            )
            .risk(Risk::Read),
        )
}
