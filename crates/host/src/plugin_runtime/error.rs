//! The errors of the plugin runtimes: [`RuntimeError`] when a runtime cannot start at all, and
//! the tool errors a plugin call becomes — the same for every format.

use bosun_core::{ErrorCode, ToolError};
use bosun_sandbox::{CallErrorKind, SandboxError};

/// Why a plugin runtime could not start. A plugin that fails is never one of these: it is left
/// out with a warning, and the other plugins work.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The WebAssembly sandbox could not start (engine, artefact cache).
    #[error("starting the plugin sandbox: {0}")]
    Sandbox(#[from] SandboxError),
    /// The thread that activates plugins could not run.
    #[error("activating the plugins: {0}")]
    Activation(String),
}

/// The tool error for a failed sandbox call: the plugin's own error with its code (kept when it
/// is one of Bosun's stable codes that a plugin may report, else `plugin_error`: see
/// [`ToolError::from_plugin`]) and message; any other failure (trap, deadline, memory, output),
/// which the sandbox itself observed, with its stable code, named after the plugin.
pub(crate) fn call_error(plugin: &str, kind: &CallErrorKind) -> ToolError {
    match kind {
        CallErrorKind::Tool {
            code,
            message,
            retryable,
        } => ToolError::from_plugin(code, message.clone(), *retryable),
        kind => ToolError {
            code: kind.host_code().unwrap_or(ErrorCode::PluginError),
            message: format!("plugin `{plugin}`: {kind}"),
            retryable: kind.retryable(),
        },
    }
}

/// A `plugin_error` naming the plugin.
pub(crate) fn plugin_error(plugin: &str, message: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::PluginError,
        format!("plugin `{plugin}`: {message}"),
    )
}
