//! The sandbox's errors: what went wrong setting up or loading a plugin ([`SandboxError`]) and
//! how a call ended when it did not return output ([`CallError`]).
//!
//! Every call error maps to one of Bosun's stable tool error codes ([`CallError::code`]) and
//! says whether the instance that ran it may be used again ([`CallError::poisons_instance`]).

use std::path::PathBuf;

use bosun_core::ErrorCode;

use crate::report::CallReport;

/// Setting up the engine, loading a component or instantiating it failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The wasmtime engine could not be built from the configuration.
    #[error(
        "could not start the wasmtime engine: {reason}; check SandboxConfig (pooling limits, memory sizes)"
    )]
    Engine {
        /// wasmtime's explanation.
        reason: String,
    },

    /// The artefact cache directory could not be created or secured.
    #[error(
        "cannot use {path} as the plugin cache: {reason}; fix its permissions or choose another cache_dir"
    )]
    CacheDir {
        /// The configured cache directory.
        path: PathBuf,
        /// What failed.
        reason: String,
    },

    /// The bytes are not a WebAssembly component this engine can compile.
    #[error(
        "{} is not a valid WebAssembly component: {reason}; rebuild it for wasm32-wasip2 against bosun:plugin@1.0.0",
        plugin_name(.plugin)
    )]
    InvalidComponent {
        /// The caller's label for the plugin, when given.
        plugin: Option<String>,
        /// wasmtime's explanation.
        reason: String,
    },

    /// The component imports something the sandbox does not offer, or does not export
    /// `bosun:plugin/tools@1.0.0` with the expected signature.
    #[error(
        "{} does not fit the bosun:plugin@1.0.0 contract: {reason}; build it with the Bosun SDK and import only WASI 0.2 and bosun:plugin/host",
        plugin_name(.plugin)
    )]
    Contract {
        /// The caller's label for the plugin, when given.
        plugin: Option<String>,
        /// wasmtime's explanation.
        reason: String,
    },

    /// The grants ask for more memory than the engine was configured to allow.
    #[error(
        "{} asks for {requested} bytes of memory but the sandbox allows at most {max}; lower memory_mib or raise SandboxConfig::max_memory_bytes",
        plugin_name(.plugin)
    )]
    MemoryGrantTooLarge {
        /// The caller's label for the plugin, when given.
        plugin: Option<String>,
        /// The requested memory cap.
        requested: usize,
        /// The engine's maximum.
        max: usize,
    },

    /// The directory granted for `/workspace` could not be opened.
    #[error("cannot give {} the directory {path}: {reason}", plugin_name(.plugin))]
    Preopen {
        /// The caller's label for the plugin, when given.
        plugin: Option<String>,
        /// The host directory.
        path: PathBuf,
        /// What failed.
        reason: String,
        /// Whether a symbolic link lay on the granted directory's path (made since the grant
        /// was judged): refused rather than followed.
        linked: bool,
    },

    /// Every slot of the instance pool is taken (or, for an engine without a pool, every one of
    /// the `max_instances` places the sandbox counts). Bosun's host first releases idle
    /// instances ([`crate::SlotRegistry`]), so from the host this means every slot is in a
    /// running call.
    #[error(
        "cannot start {}: all {max_instances} plugin instance slots are in use by calls still running ({reason}); wait for one to finish, or raise `plugin_instances` in the [sandbox] table of Bosun's config",
        plugin_name(.plugin)
    )]
    PoolFull {
        /// The caller's label for the plugin, when given.
        plugin: Option<String>,
        /// wasmtime's explanation (which pool ran out), or the sandbox's count's.
        reason: String,
        /// The size of the instance pool.
        max_instances: u32,
    },

    /// Instantiation failed: the component trapped or ran past its deadline while starting,
    /// or its initial memory exceeds the grant.
    #[error(
        "could not start {}: {reason}; check the plugin's start-up code and its memory grant",
        plugin_name(.plugin)
    )]
    Instantiate {
        /// The caller's label for the plugin, when given.
        plugin: Option<String>,
        /// wasmtime's explanation.
        reason: String,
    },
}

impl SandboxError {
    /// The stable tool error code a failed load or instantiation maps to: `limit_reached`
    /// when the pool is full or the memory grant too large, otherwise `plugin_error`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MemoryGrantTooLarge { .. } | Self::PoolFull { .. } => "limit_reached",
            _ => "plugin_error",
        }
    }
}

/// How a call failed. `kind` says what happened; `report` holds what the plugin logged and
/// which outgoing requests were refused before it failed.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", plugin_name(.plugin))]
pub struct CallError {
    /// What happened.
    pub kind: CallErrorKind,
    /// The caller's label for the plugin, when given.
    pub plugin: Option<String>,
    /// Logs, captured output and refused requests up to the failure.
    pub report: CallReport,
}

/// What ended a call without output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallErrorKind {
    /// The tool ran and returned its own error. The instance stays usable.
    #[error("tool error {code}: {message}")]
    Tool {
        /// The plugin's error code (one of Bosun's stable codes, as the plugin chose it).
        code: String,
        /// The plugin's message.
        message: String,
        /// Whether the plugin says retrying may help.
        retryable: bool,
    },
    /// The guest trapped (unreachable, stack overflow, out-of-bounds access, exit...).
    #[error("the plugin crashed: {message}")]
    Trap {
        /// wasmtime's description of the trap.
        message: String,
    },
    /// The call ran past its deadline and was stopped.
    #[error("the call ran past its {timeout_ms} ms deadline and was stopped")]
    TimedOut {
        /// The deadline, in milliseconds.
        timeout_ms: u64,
    },
    /// The plugin tried to grow its memory past the grant.
    #[error("the plugin tried to use more than its {limit_bytes} bytes of memory and was stopped")]
    MemoryExceeded {
        /// The memory cap, in bytes.
        limit_bytes: usize,
    },
    /// The plugin returned more output than the sandbox accepts.
    #[error(
        "the plugin returned {actual_bytes} bytes of output, more than the {limit_bytes} allowed"
    )]
    OutputTooLarge {
        /// The output size the plugin produced.
        actual_bytes: usize,
        /// The bound.
        limit_bytes: usize,
    },
    /// The caller cancelled the call.
    #[error("the call was cancelled")]
    Cancelled,
    /// The instance failed an earlier call and may not run again.
    #[error("this instance failed an earlier call; discard it and instantiate a fresh one")]
    Poisoned,
}

impl CallError {
    /// The stable tool error code for this failure: the plugin's own code for
    /// [`CallErrorKind::Tool`], otherwise `timed_out`, `cancelled`, `output_limit`,
    /// `limit_reached` (memory) or `plugin_error`.
    pub fn code(&self) -> &str {
        self.kind.code()
    }

    /// Whether the failure left the instance unusable (everything but a tool error).
    pub fn poisons_instance(&self) -> bool {
        self.kind.poisons_instance()
    }
}

impl CallErrorKind {
    /// See [`CallError::code`].
    pub fn code(&self) -> &str {
        match (self, self.host_code()) {
            (Self::Tool { code, .. }, _) => code,
            (_, Some(code)) => code.as_str(),
            (_, None) => ErrorCode::PluginError.as_str(),
        }
    }

    /// The stable code of a failure the sandbox itself observed (a trap, the deadline, the
    /// memory cap, the output bound, cancellation), typed; `None` for the plugin's own tool
    /// error, whose code is the plugin's claim (`Tool::code`) and is judged by the host.
    pub fn host_code(&self) -> Option<ErrorCode> {
        Some(match self {
            Self::Tool { .. } => return None,
            Self::Trap { .. } | Self::Poisoned => ErrorCode::PluginError,
            Self::TimedOut { .. } => ErrorCode::TimedOut,
            Self::MemoryExceeded { .. } => ErrorCode::LimitReached,
            Self::OutputTooLarge { .. } => ErrorCode::OutputLimit,
            Self::Cancelled => ErrorCode::Cancelled,
        })
    }

    /// See [`CallError::poisons_instance`].
    pub fn poisons_instance(&self) -> bool {
        !matches!(self, Self::Tool { .. })
    }

    /// Whether retrying the same call could succeed.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Tool { retryable, .. } => *retryable,
            Self::TimedOut { .. } | Self::Poisoned => true,
            Self::Trap { .. }
            | Self::MemoryExceeded { .. }
            | Self::OutputTooLarge { .. }
            | Self::Cancelled => false,
        }
    }
}

fn plugin_name(plugin: &Option<String>) -> String {
    match plugin {
        Some(name) => format!("plugin `{name}`"),
        None => "the plugin".to_owned(),
    }
}
