//! Metadata: one tool with a huge answer.
use bosun_sdk::spec::{PluginSpec, ToolSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let plugin = PluginSpec::new("huge-output", "0.1.0", "Answers with far too much.").tool(
        ToolSpec::with_input_schema(
            "emit",
            "Returns a JSON string of `megabytes` MB (default 100).",
            json!({
                "type": "object",
                "properties": {"megabytes": {"type": "integer", "minimum": 0, "maximum": 1024}},
                "additionalProperties": false
            }),
        ),
    );
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
