//! Metadata: two tools that allocate without end.
use bosun_sdk::spec::{PluginSpec, ToolSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let none = || json!({"type": "object", "properties": {}, "additionalProperties": false});
    let plugin = PluginSpec::new("memory-bomb", "0.1.0", "Allocates until it cannot.")
        .tool(ToolSpec::with_input_schema("grow", "Allocates and touches 1 MiB at a time, forever; aborts when an allocation fails.", none()))
        .tool(ToolSpec::with_input_schema("grow_gracefully", "Allocates and touches 1 MiB at a time until an allocation fails, then returns how many MiB it got.", none()));
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
