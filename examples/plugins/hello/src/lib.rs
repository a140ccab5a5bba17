//! `hello`: the smallest Bosun plugin. One pure tool, no capabilities: it reaches nothing
//! beyond its input.

pub mod spec;

use bosun_sdk::{Plugin, ToolError, Tools};
use serde::Serialize;

use spec::GreetInput;

/// The plugin; it keeps no state.
#[derive(Default)]
pub struct Hello;

impl Plugin for Hello {
    fn tools() -> Tools<Self> {
        Tools::new().tool(spec::GREET, greet)
    }
}

bosun_sdk::export!(Hello);

/// What `greet` returns.
#[derive(Debug, PartialEq, Serialize)]
pub struct Greeting {
    /// The greeting.
    pub message: String,
}

/// Greets `name`.
pub fn greet(input: GreetInput) -> Result<Greeting, ToolError> {
    let name = input.name.trim();
    if name.is_empty() {
        return Err(ToolError::invalid_input(
            "`name` is empty: say who to greet",
        ));
    }
    Ok(Greeting {
        message: format!("Hello, {name}!"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_sdk::testing;
    use serde_json::json;

    #[test]
    fn greets_through_the_json_dispatch() {
        let out = testing::call::<Hello>("greet", json!({"name": "Ada"})).unwrap();
        assert_eq!(out, json!({"message": "Hello, Ada!"}));
    }

    #[test]
    fn an_empty_name_is_invalid_input() {
        let err = greet(GreetInput { name: " ".into() }).unwrap_err();
        assert_eq!(err.code, "invalid_input");
    }

    #[test]
    fn metadata_declares_exactly_the_handled_tools() {
        let doc = testing::check_metadata::<Hello>(bosun_sdk::metadata!()).unwrap();
        assert_eq!(doc["name"], "hello");
        assert_eq!(doc["tools"][0]["input_schema"]["required"], json!(["name"]));
    }
}
