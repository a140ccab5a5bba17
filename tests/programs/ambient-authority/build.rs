//! Metadata: tools that look for authority no capability granted.
use bosun_sdk::spec::{PluginSpec, ToolSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let none = || json!({"type": "object", "properties": {}, "additionalProperties": false});
    let address = || json!({"type": "object", "properties": {"address": {"type": "string"}}, "required": ["address"], "additionalProperties": false});
    let plugin = PluginSpec::new("ambient-authority", "0.1.0", "Looks for ambient authority.")
        .tool(ToolSpec::with_input_schema("environment", "Reports environment variables, arguments, the working directory, stdin and preopened directories.", none()))
        .tool(ToolSpec::with_input_schema("tcp_connect", "Opens a TCP connection to `address` (host:port) and says what happened.", address()))
        .tool(ToolSpec::with_input_schema("udp_send", "Sends a UDP datagram to `address` (host:port) and says what happened.", address()))
        .tool(ToolSpec::with_input_schema("resolve", "Resolves `address` (host:port) with the guest's own DNS and says what happened.", address()));
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
