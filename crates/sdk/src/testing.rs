//! Testing a plugin on the host target, without a sandbox: call its tools through the same
//! JSON dispatch the component uses, set its config, cancel it, read its logs, and check that
//! the metadata its build wrote matches its handlers.
//!
//! Everything here is per thread, as `cargo test` runs each test on its own thread.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::ToolError;
use crate::host::LogLevel;
use crate::host::imp::{CANCELLED, CONFIG, LOGS};
use crate::tools::{Instance, Plugin};

/// One plugin instance, called as the host would call it.
pub struct Session<P: Plugin> {
    instance: Instance<P>,
}

impl<P: Plugin> Default for Session<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Plugin> Session<P> {
    /// A fresh instance.
    pub fn new() -> Self {
        Self {
            instance: Instance::new(),
        }
    }

    /// Calls `tool` with `input`; the output parsed back into JSON.
    pub fn call(&mut self, tool: &str, input: Value) -> Result<Value, ToolError> {
        let output = self.instance.call(tool, &input.to_string())?;
        serde_json::from_str(&output)
            .map_err(|e| ToolError::plugin_error(format!("the output is not JSON: {e}")))
    }

    /// The plugin's state.
    pub fn plugin(&self) -> &P {
        self.instance.plugin()
    }
}

/// Calls `tool` on a fresh instance of `P`.
pub fn call<P: Plugin>(tool: &str, input: Value) -> Result<Value, ToolError> {
    Session::<P>::new().call(tool, input)
}

/// Sets a config value for this thread, as `[plugins.<name>.config]` would.
pub fn set_config(key: &str, value: Value) {
    CONFIG.with(|config| {
        config
            .borrow_mut()
            .insert(key.to_owned(), value.to_string())
    });
}

/// Clears every config value for this thread.
pub fn clear_config() {
    CONFIG.with(|config| config.borrow_mut().clear());
}

/// Turns cancellation on or off for this thread.
pub fn set_cancelled(cancelled: bool) {
    CANCELLED.with(|c| c.set(cancelled));
}

/// The lines logged on this thread so far, emptied.
pub fn take_logs() -> Vec<(LogLevel, String)> {
    LOGS.with(|logs| std::mem::take(&mut *logs.borrow_mut()))
}

/// Checks a plugin's metadata (as [`crate::metadata!`] gives it) against its handlers: it parses,
/// has the documented fields, and declares exactly the tools `P` handles.
pub fn check_metadata<P: Plugin>(metadata_json: &str) -> Result<Value, String> {
    let doc: Value = serde_json::from_str(metadata_json).map_err(|e| format!("not JSON: {e}"))?;
    for field in [
        "metadata_version",
        "api_version",
        "name",
        "version",
        "tools",
    ] {
        if doc.get(field).is_none() {
            return Err(format!("no `{field}` field"));
        }
    }
    let declared: BTreeSet<&str> = doc["tools"]
        .as_array()
        .ok_or("`tools` is not an array")?
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    let instance = Instance::<P>::new();
    let handled: BTreeSet<&str> = instance.tool_names().collect();
    if declared != handled {
        return Err(format!(
            "the metadata declares {declared:?} but the plugin handles {handled:?}"
        ));
    }
    Ok(doc)
}
