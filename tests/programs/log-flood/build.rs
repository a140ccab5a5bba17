//! Metadata: tools that write far too much to the log and to stdout/stderr.
use bosun_sdk::spec::{PluginSpec, ToolSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count = |name: &str, max: u64| {
        json!({
            "type": "object",
            "properties": {name: {"type": "integer", "minimum": 0, "maximum": max}},
            "additionalProperties": false
        })
    };
    let plugin = PluginSpec::new("log-flood", "0.1.0", "Floods every output it has.")
        .tool(ToolSpec::with_input_schema(
            "flood",
            "Writes `lines` log lines (default 5,000,000) through host.log.",
            count("lines", 100_000_000),
        ))
        .tool(ToolSpec::with_input_schema(
            "giant_line",
            "Writes one log line of `megabytes` MB (default 10).",
            count("megabytes", 1024),
        ))
        .tool(ToolSpec::with_input_schema(
            "flood_stdio",
            "Writes `megabytes` MB (default 100) to stdout and to stderr.",
            count("megabytes", 1024),
        ));
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
