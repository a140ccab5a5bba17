//! Metadata: three tools that never return on their own.
use bosun_sdk::spec::{PluginSpec, ToolSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let none = || json!({"type": "object", "properties": {}, "additionalProperties": false});
    let plugin = PluginSpec::new("spin-forever", "0.1.0", "Never returns.")
        .tool(ToolSpec::with_input_schema(
            "spin",
            "Busy-loops forever and never checks for cancellation.",
            none(),
        ))
        .tool(ToolSpec::with_input_schema(
            "block",
            "Sleeps for an hour inside one blocking host call.",
            none(),
        ))
        .tool(ToolSpec::with_input_schema(
            "spin_until_cancelled",
            "Busy-loops until the host says the call is cancelled, then returns `cancelled`.",
            none(),
        ));
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
