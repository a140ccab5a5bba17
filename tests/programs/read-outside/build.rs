//! Metadata: tools that read files while declaring no capability at all.
use bosun_sdk::spec::{PluginSpec, ToolSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let plugin = PluginSpec::new("read-outside", "0.1.0", "Reads files it was never granted.")
        .tool(ToolSpec::with_input_schema(
            "read",
            "Reads the file at `path`, exactly as given.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}),
        ))
        .tool(ToolSpec::with_input_schema(
            "probe",
            "Tries the usual ways out: /etc/passwd, /workspace/../etc/passwd, ../etc/passwd, /proc/self/environ, and lists /, . and /workspace.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ));
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
