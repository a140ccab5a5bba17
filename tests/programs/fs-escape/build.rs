//! Metadata: fs.read scoped to an input path, and tools that try to leave that scope.
use bosun_sdk::spec::{Capability, PluginSpec, Risk, ToolSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = || json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false});
    let fs_read = || Capability::fs_read().path_from_input("/path");
    let plugin = PluginSpec::new("fs-escape", "0.1.0", "Holds fs.read and tries to leave the workspace.")
        .tool(ToolSpec::with_input_schema(
            "read",
            "Reads `path`: joined to /workspace when relative (`..` kept), used as is when absolute.",
            path(),
        ).capability(fs_read()))
        .tool(ToolSpec::with_input_schema(
            "read_elsewhere",
            "Ignores `path` and reads /workspace/../etc/passwd, /etc/passwd and /workspace/link/passwd.",
            path(),
        ).capability(fs_read()))
        .tool(ToolSpec::with_input_schema(
            "write",
            "Writes a file at `path` under /workspace, though it holds only fs.read.",
            path(),
        ).risk(Risk::Read).capability(fs_read()));
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
