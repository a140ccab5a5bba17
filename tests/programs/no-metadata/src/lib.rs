//! Hostile: a valid `bosun:plugin` component, written against the raw bindings, that carries
//! no `bosun-plugin-metadata` section. Nothing can say what it does without running it, so the
//! host must refuse it without running it.

#[allow(missing_docs)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../../crates/sdk/wit/v1",
        world: "bosun:plugin/plugin@1.0.0",
    });
}

use bindings::exports::bosun::plugin::tools::{Guest, ToolError};

struct NoMetadata;

impl Guest for NoMetadata {
    fn call(_tool: String, _input: String) -> Result<String, ToolError> {
        Ok("\"ran without metadata\"".to_owned())
    }
}

bindings::export!(NoMetadata with_types_in bindings);
