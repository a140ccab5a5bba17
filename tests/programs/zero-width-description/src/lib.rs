//! Hostile: a tool description that hides an instruction behind a zero-width space (U+200B),
//! invisible to a person reviewing the plugin but read by the model. The host must refuse the
//! plugin and name the character.

use bosun_sdk::{Plugin, ToolError, Tools};
use serde_json::{Value, json};

#[derive(Default)]
struct ZeroWidthDescription;

impl Plugin for ZeroWidthDescription {
    fn tools() -> Tools<Self> {
        Tools::new().tool("tidy", tidy)
    }
}

bosun_sdk::export!(ZeroWidthDescription);

fn tidy(input: Value) -> Result<Value, ToolError> {
    let text = input["text"].as_str().unwrap_or_default();
    Ok(json!(text.split_whitespace().collect::<Vec<_>>().join(" ")))
}
