//! What the host offers every plugin (`bosun:plugin/host`): log lines into the run's trace, the
//! plugin's config values, and whether the current call has been cancelled.
//!
//! Outside wasm (a plugin's own `cargo test`) these talk to a per-thread stand-in that
//! [`crate::testing`] controls: logs are collected, config is what the test set, and
//! cancellation is off unless the test turns it on.

use serde::de::DeserializeOwned;

use crate::ToolError;

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Very detailed.
    Trace,
    /// For debugging.
    Debug,
    /// Normal progress.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

/// Writes a line to the run's trace. The host bounds line length and lines per call.
pub fn log(level: LogLevel, message: &str) {
    imp::log(level, message);
}

/// A value from the plugin's `[plugins.<local-name>.config]` table, as JSON text.
pub fn config(key: &str) -> Option<String> {
    imp::config(key)
}

/// A config value deserialised as `T`; `Ok(None)` when unset, `plugin_error` when it is not a `T`.
pub fn config_value<T: DeserializeOwned>(key: &str) -> Result<Option<T>, ToolError> {
    config(key)
        .map(|json| {
            serde_json::from_str(&json).map_err(|e| {
                ToolError::plugin_error(format!("config value `{key}` is not what I expect: {e}"))
            })
        })
        .transpose()
}

/// True once the current call has been cancelled or has passed its deadline.
pub fn is_cancelled() -> bool {
    imp::is_cancelled()
}

/// `Err(cancelled)` once the call has been cancelled: `host::check_cancelled()?` in long loops.
pub fn check_cancelled() -> Result<(), ToolError> {
    if is_cancelled() {
        Err(ToolError::cancelled())
    } else {
        Ok(())
    }
}

/// Logs with `format!` arguments: `bosun_sdk::log!(Info, "fetched {} bytes", n)`.
#[macro_export]
macro_rules! log {
    ($level:ident, $($arg:tt)+) => {
        $crate::host::log($crate::host::LogLevel::$level, &::std::format!($($arg)+))
    };
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::LogLevel;
    use crate::__bindings::bosun::plugin::host;

    pub fn log(level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Trace => host::LogLevel::Trace,
            LogLevel::Debug => host::LogLevel::Debug,
            LogLevel::Info => host::LogLevel::Info,
            LogLevel::Warn => host::LogLevel::Warn,
            LogLevel::Error => host::LogLevel::Error,
        };
        host::log(level, message);
    }

    pub fn config(key: &str) -> Option<String> {
        host::config(key)
    }

    pub fn is_cancelled() -> bool {
        host::is_cancelled()
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod imp {
    use std::cell::{Cell, RefCell};
    use std::collections::BTreeMap;

    use super::LogLevel;

    thread_local! {
        pub static LOGS: RefCell<Vec<(LogLevel, String)>> = const { RefCell::new(Vec::new()) };
        pub static CONFIG: RefCell<BTreeMap<String, String>> = const { RefCell::new(BTreeMap::new()) };
        pub static CANCELLED: Cell<bool> = const { Cell::new(false) };
    }

    pub fn log(level: LogLevel, message: &str) {
        LOGS.with(|logs| logs.borrow_mut().push((level, message.to_owned())));
    }

    pub fn config(key: &str) -> Option<String> {
        CONFIG.with(|config| config.borrow().get(key).cloned())
    }

    pub fn is_cancelled() -> bool {
        CANCELLED.with(Cell::get)
    }
}
