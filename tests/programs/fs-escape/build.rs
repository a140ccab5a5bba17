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
        ).risk(Risk::Read).capability(fs_read()))
        .tool(ToolSpec::with_input_schema(
            "write_declared",
            "Writes a file at `path` under /workspace, holding fs.write for it.",
            path(),
        ).risk(Risk::Write).capability(Capability::fs_write().path_from_input("/path")))
        .tool(ToolSpec::with_input_schema(
            "read_undeclared",
            "Reads `path` under /workspace though it declares no capability.",
            path(),
        ))
        .tool(ToolSpec::with_input_schema(
            "read_other",
            "Holds fs.read for `path` and reads `other` instead.",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "other": {"type": "string"}}, "required": ["path", "other"], "additionalProperties": false}),
        ).capability(fs_read()))
        .tool(ToolSpec::with_input_schema(
            "write_other",
            "Holds fs.write for `path` and writes `other` instead.",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "other": {"type": "string"}}, "required": ["path", "other"], "additionalProperties": false}),
        ).risk(Risk::Write).capability(Capability::fs_write().path_from_input("/path")));
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
