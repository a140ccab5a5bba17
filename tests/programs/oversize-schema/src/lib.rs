//! Hostile: a tool whose input schema is about 30 KiB serialised, far over the 8 KiB bound,
//! enough to crowd a model's context. The host must refuse the plugin, not trim the schema.

use bosun_sdk::{Plugin, ToolError, Tools};
use serde_json::Value;

#[derive(Default)]
struct OversizeSchema;

impl Plugin for OversizeSchema {
    fn tools() -> Tools<Self> {
        Tools::new().tool("big_input", big_input)
    }
}

bosun_sdk::export!(OversizeSchema);

fn big_input(input: Value) -> Result<Value, ToolError> {
    Ok(input)
}
