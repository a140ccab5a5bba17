//! Metadata: one tool that recurses without bound.
use bosun_sdk::spec::{PluginSpec, ToolSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let plugin = PluginSpec::new("deep-recursion", "0.1.0", "Overflows its stack.").tool(
        ToolSpec::with_input_schema(
            "recurse",
            "Recurses until the stack overflows.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
    );
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
