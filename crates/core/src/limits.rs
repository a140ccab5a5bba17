//! Limits every tool call runs under, whatever its origin.

use serde::{Deserialize, Serialize};

/// Bounds applied by the chokepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest serialised tool result, in bytes.
    pub max_output_bytes: usize,
    /// Deadline of one tool call, in milliseconds.
    pub tool_timeout_ms: u64,
    /// Default and upper bound for `run_command`'s `timeoutMs`.
    pub command_timeout_ms: u64,
    /// Most entries `list_files` returns.
    pub max_entries: usize,
}

impl Limits {
    /// Smallest output bound accepted from config: enough for any error result.
    pub const MIN_OUTPUT_BYTES: usize = 1024;
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_output_bytes: 64 * 1024,
            tool_timeout_ms: 120_000,
            command_timeout_ms: 60_000,
            max_entries: 200,
        }
    }
}
