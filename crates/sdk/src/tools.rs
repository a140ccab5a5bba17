//! Dispatch: from `tools.call(tool, input-json)` to a typed Rust function and back to JSON.
//!
//! A plugin is a type implementing [`Plugin`]: its value is the instance's state (kept for as
//! long as the host keeps the instance), and [`Plugin::tools`] maps each declared tool name to a
//! handler. Handlers are plain functions `fn(Input) -> Result<Output, ToolError>` or methods
//! `fn(&mut self, Input) -> Result<Output, ToolError>`, where `Input: Deserialize` and
//! `Output: Serialize`. Input that does not deserialise is answered `invalid_input`; a name with
//! no handler `unknown_tool`.

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ToolError;

/// A plugin: its state and its tools.
pub trait Plugin: Default + 'static {
    /// The handler of each tool the metadata declares, by name.
    fn tools() -> Tools<Self>;
}

type BoxedHandler<P> = Box<dyn Fn(&mut P, &str) -> Result<String, ToolError>>;

/// The tools of a plugin `P`, by name.
pub struct Tools<P> {
    handlers: Vec<(&'static str, BoxedHandler<P>)>,
}

impl<P: 'static> Default for Tools<P> {
    fn default() -> Self {
        Self {
            handlers: Vec::new(),
        }
    }
}

impl<P: 'static> Tools<P> {
    /// No tools yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool: `name` as the metadata declares it, and its handler — a function of the
    /// input, or a method of `P` taking `&mut self` and the input. A later handler for the same
    /// name replaces an earlier one.
    pub fn tool<M, H: Handler<P, M>>(mut self, name: &'static str, handler: H) -> Self {
        self.handlers.retain(|(n, _)| *n != name);
        self.handlers.push((
            name,
            Box::new(move |plugin, input| handler.handle(plugin, input)),
        ));
        self
    }

    /// The names, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.handlers.iter().map(|(name, _)| *name)
    }

    /// Runs `tool` with `input` (JSON text) against `plugin`.
    pub fn call(&self, plugin: &mut P, tool: &str, input: &str) -> Result<String, ToolError> {
        let (_, handler) = self
            .handlers
            .iter()
            .find(|(name, _)| *name == tool)
            .ok_or_else(|| ToolError::unknown_tool(tool))?;
        handler(plugin, input)
    }
}

/// Something that can handle a tool call for plugin `P`. Implemented for
/// `Fn(I) -> Result<O, ToolError>` and `Fn(&mut P, I) -> Result<O, ToolError>`; `M` only tells
/// the two apart.
pub trait Handler<P, M>: 'static {
    /// Deserialises `input`, runs, serialises the output.
    fn handle(&self, plugin: &mut P, input: &str) -> Result<String, ToolError>;
}

/// Marks a handler that is a function of its input alone.
pub struct OfInput<I, O>(PhantomData<fn(I) -> O>);

/// Marks a handler that is a method of the plugin's state.
pub struct OfState<I, O>(PhantomData<fn(I) -> O>);

impl<P, I, O, F> Handler<P, OfInput<I, O>> for F
where
    F: Fn(I) -> Result<O, ToolError> + 'static,
    I: DeserializeOwned,
    O: Serialize,
{
    fn handle(&self, _plugin: &mut P, input: &str) -> Result<String, ToolError> {
        encode(self(decode(input)?)?)
    }
}

impl<P, I, O, F> Handler<P, OfState<I, O>> for F
where
    F: Fn(&mut P, I) -> Result<O, ToolError> + 'static,
    I: DeserializeOwned,
    O: Serialize,
{
    fn handle(&self, plugin: &mut P, input: &str) -> Result<String, ToolError> {
        encode(self(plugin, decode(input)?)?)
    }
}

fn decode<I: DeserializeOwned>(input: &str) -> Result<I, ToolError> {
    serde_json::from_str(input).map_err(|e| ToolError::invalid_input(format!("input: {e}")))
}

fn encode<O: Serialize>(output: O) -> Result<String, ToolError> {
    serde_json::to_string(&output)
        .map_err(|e| ToolError::plugin_error(format!("serialising the output: {e}")))
}

/// A plugin's state together with its tools, as one sandbox instance holds them.
pub struct Instance<P> {
    plugin: P,
    tools: Tools<P>,
}

impl<P: Plugin> Default for Instance<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Plugin> Instance<P> {
    /// A fresh instance: `P::default()` and `P::tools()`.
    pub fn new() -> Self {
        Self {
            plugin: P::default(),
            tools: P::tools(),
        }
    }

    /// Runs `tool` with `input` (JSON text).
    pub fn call(&mut self, tool: &str, input: &str) -> Result<String, ToolError> {
        self.tools.call(&mut self.plugin, tool, input)
    }

    /// The tool names it answers to.
    pub fn tool_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tools.names()
    }

    /// The plugin's state.
    pub fn plugin(&self) -> &P {
        &self.plugin
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Default)]
    struct Counter {
        total: u64,
    }

    #[derive(Deserialize)]
    struct Add {
        n: u64,
    }

    fn echo(input: serde_json::Value) -> Result<serde_json::Value, ToolError> {
        Ok(input)
    }

    impl Counter {
        fn add(&mut self, input: Add) -> Result<u64, ToolError> {
            self.total += input.n;
            Ok(self.total)
        }
    }

    impl Plugin for Counter {
        fn tools() -> Tools<Self> {
            Tools::new().tool("echo", echo).tool("add", Counter::add)
        }
    }

    #[test]
    fn dispatches_by_name_and_keeps_state() {
        let mut instance = Instance::<Counter>::new();
        assert_eq!(instance.call("add", r#"{"n": 2}"#).unwrap(), "2");
        assert_eq!(instance.call("add", r#"{"n": 3}"#).unwrap(), "5");
        assert_eq!(instance.call("echo", r#"{"a":1}"#).unwrap(), r#"{"a":1}"#);
        assert_eq!(instance.plugin().total, 5);
        assert_eq!(instance.tool_names().collect::<Vec<_>>(), ["echo", "add"]);
    }

    #[test]
    fn bad_input_and_unknown_tools_have_their_codes() {
        let mut instance = Instance::<Counter>::new();
        assert_eq!(
            instance.call("add", r#"{"n": "x"}"#).unwrap_err().code,
            "invalid_input"
        );
        assert_eq!(
            instance.call("nope", "{}").unwrap_err().code,
            "unknown_tool"
        );
    }
}
