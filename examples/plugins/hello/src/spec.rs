//! What `hello` declares: one pure tool. Shared by build.rs (metadata) and the library (input
//! types and tool names).

use bosun_sdk::spec::{PluginSpec, Risk, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;

/// The `greet` tool's name.
pub const GREET: &str = "greet";

/// Input of `greet`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GreetInput {
    /// Who to greet.
    pub name: String,
}

/// The plugin as its metadata declares it.
pub fn plugin() -> PluginSpec {
    bosun_sdk::plugin_spec!()
        .tool(ToolSpec::new::<GreetInput>(GREET, "Greets someone by name.").risk(Risk::Read))
}
