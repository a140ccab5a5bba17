//! What a call leaves behind besides its result: logs, captured output and refused requests.

use crate::host::LogLine;
use crate::http::RefusedRequest;

/// What a call left behind besides its result, for the trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallReport {
    /// Lines the plugin logged through `host.log`, bounded.
    pub logs: Vec<LogLine>,
    /// Log lines dropped past the per-call bound.
    pub dropped_logs: usize,
    /// What the plugin wrote to stdout, bounded (lossy UTF-8).
    pub stdout: String,
    /// What the plugin wrote to stderr, bounded (lossy UTF-8).
    pub stderr: String,
    /// Bytes of stdout and stderr dropped past the bound.
    pub dropped_stdio_bytes: usize,
    /// Outgoing requests the HTTP guard refused.
    pub refused_requests: Vec<RefusedRequest>,
}

/// A tool's successful result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutput {
    /// The tool's output, JSON text as the plugin returned it (not yet validated).
    pub output_json: String,
    /// Logs, captured output and refused requests.
    pub report: CallReport,
}
