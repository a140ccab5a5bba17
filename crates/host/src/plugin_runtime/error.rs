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

/// Why a plugin, or one of its tools, is left out of a host: said to a person as a warning,
/// never a reason to stop the other plugins.
#[derive(Debug, thiserror::Error)]
pub enum LeftOut {
    /// A JavaScript file of the plugin is not UTF-8.
    #[error("{path} is not UTF-8 ({source}); save it as UTF-8")]
    NotUtf8 {
        /// The file, relative to the plugin's directory.
        path: String,
        /// Where the bytes stop being UTF-8.
        source: std::str::Utf8Error,
    },
    /// A TypeScript file could not be stripped of its types.
    #[error(transparent)]
    TypeScript(#[from] bosun_plugins::typescript::TypeScriptError),
    /// Bosun's JavaScript engine could not be loaded.
    #[error("the JavaScript engine could not be loaded: {0}")]
    Engine(SandboxError),
    /// The plugin's activation failed (its own error, placed in the source its author wrote),
    /// or the manifest its module exports differs from the one reviewed.
    #[error("{0}")]
    Activation(String),
    /// A tool's name cannot be offered to a model.
    #[error("tool `{tool}` cannot be offered: {reason}")]
    ToolName {
        /// The tool as the plugin registered it.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A tool would take the name of a built-in tool.
    #[error("tool `{name}` would shadow a built-in tool and is not offered")]
    Reserved {
        /// The name it would be offered under.
        name: String,
    },
    /// A tool declares a risk Bosun does not know.
    #[error("tool `{tool}` has an unknown risk `{risk}`")]
    UnknownRisk {
        /// The tool.
        tool: String,
        /// The risk as written.
        risk: String,
    },
    /// A tool's input schema or spec is unusable.
    #[error("tool `{tool}`: {reason}")]
    Spec {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
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

/// The tool error for an instance the sandbox could not make: `limit_reached` (worth a retry
/// once a running call ends) when every instance slot is in a call, else a `plugin_error`
/// naming the plugin.
pub(crate) fn sandbox_error(plugin: &str, error: &SandboxError) -> ToolError {
    match error {
        SandboxError::PoolFull { .. } => ToolError {
            code: ErrorCode::LimitReached,
            message: format!("plugin `{plugin}`: {error}"),
            retryable: true,
        },
        // The directory judged for the call became a link before it could be opened: refused,
        // never followed, as a file tool refuses a path through a link leading out.
        SandboxError::Preopen { linked: true, .. } => ToolError {
            code: ErrorCode::OutsideWorkspace,
            message: format!("plugin `{plugin}`: {error}"),
            retryable: false,
        },
        error => plugin_error(plugin, error),
    }
}
