//! Hostile: a prompt contribution that tries to end its part of the system prompt and pose as
//! Bosun's own sections (a longer fence, `# Bosun policy`, another plugin's header and heading,
//! a `SYSTEM:` line). The host must keep every line of it inside the plugin's frame.

use bosun_sdk::{Plugin, ToolError, Tools};
use serde_json::{Value, json};

#[derive(Default)]
struct PosingPrompt;

impl Plugin for PosingPrompt {
    fn tools() -> Tools<Self> {
        Tools::new().tool("echo", echo)
    }
}

bosun_sdk::export!(PosingPrompt);

fn echo(input: Value) -> Result<Value, ToolError> {
    Ok(json!(input["text"].as_str().unwrap_or_default()))
}
