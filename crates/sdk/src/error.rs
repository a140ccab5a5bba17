//! The error a tool returns: a stable code the model can act on, a message, and whether trying
//! again may help. The codes are Bosun's own (docs/plugins.md); the host passes them through.

use std::fmt;

/// A tool's failure, as `tool-error` carries it across the sandbox boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// A stable code: `invalid_input`, `not_found`, `io_error`, `denied`, `plugin_error`, …
    pub code: String,
    /// What went wrong and, where possible, what to do.
    pub message: String,
    /// Whether the same call may succeed later.
    pub retryable: bool,
}

impl ToolError {
    /// An error with any code.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            retryable: false,
        }
    }

    /// Marks the error as worth retrying.
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }

    /// `invalid_input`: the input is wrong; the message says how.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new("invalid_input", message)
    }

    /// `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new("not_found", message)
    }

    /// `outside_workspace`: a path leaves the workspace.
    pub fn outside_workspace(message: impl Into<String>) -> Self {
        Self::new("outside_workspace", message)
    }

    /// `denied`: the host or a service refused.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::new("denied", message)
    }

    /// `io_error`.
    pub fn io_error(message: impl Into<String>) -> Self {
        Self::new("io_error", message)
    }

    /// `timed_out` (retryable).
    pub fn timed_out(message: impl Into<String>) -> Self {
        Self::new("timed_out", message).retryable()
    }

    /// `cancelled`.
    pub fn cancelled() -> Self {
        Self::new("cancelled", "the call was cancelled")
    }

    /// `limit_reached`: a bound of the plugin's own was hit.
    pub fn limit_reached(message: impl Into<String>) -> Self {
        Self::new("limit_reached", message)
    }

    /// `plugin_error`: anything else that went wrong inside the plugin.
    pub fn plugin_error(message: impl Into<String>) -> Self {
        Self::new("plugin_error", message)
    }

    /// `unknown_tool`.
    pub fn unknown_tool(tool: &str) -> Self {
        Self::new(
            "unknown_tool",
            format!("this plugin has no tool named `{tool}`"),
        )
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> Self {
        use std::io::ErrorKind;
        let message = error.to_string();
        match error.kind() {
            ErrorKind::NotFound => Self::not_found(message),
            ErrorKind::PermissionDenied => Self::denied(message),
            ErrorKind::AlreadyExists => Self::new("already_exists", message),
            ErrorKind::NotADirectory => Self::new("not_directory", message),
            ErrorKind::IsADirectory => Self::new("not_file", message),
            ErrorKind::TimedOut => Self::timed_out(message),
            _ => Self::io_error(message),
        }
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(error: serde_json::Error) -> Self {
        Self::plugin_error(format!("JSON: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_keep_their_meaning() {
        let e = ToolError::from(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(e.code, "not_found");
        let e = ToolError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!((e.code.as_str(), e.retryable), ("timed_out", true));
    }
}
