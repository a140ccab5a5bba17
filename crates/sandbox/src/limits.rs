//! The bounds on what one plugin instance may consume: linear memory and tables (enforced by
//! wasmtime through [`ResourceLimiter`]), resource handles, captured output and log volume.
//!
//! Time is bounded separately by epoch interruption (see `instance.rs`). This module never
//! grants anything; it only counts and refuses.

use wasmtime::ResourceLimiter;

/// Bounds on what a plugin hands back to the host. Part of
/// [`SandboxConfig`](crate::SandboxConfig).
#[derive(Debug, Clone)]
pub struct OutputLimits {
    /// Largest tool output accepted, in bytes (default 16 MiB); larger output is refused as
    /// [`CallErrorKind::OutputTooLarge`](crate::CallErrorKind::OutputTooLarge).
    pub max_output_bytes: usize,
    /// Longest log line kept, in bytes (default 4 KiB); longer lines are cut at a character
    /// boundary and marked truncated.
    pub max_log_line_bytes: usize,
    /// Most log lines kept per call (default 1,000); later lines are counted and dropped.
    pub max_log_lines: usize,
    /// Bytes of stdout and of stderr kept per call (default 64 KiB each); the rest is counted
    /// and dropped.
    pub max_stdio_bytes: usize,
    /// Most live resource handles (streams, HTTP requests, descriptors) per instance
    /// (default 10,000).
    pub max_resources: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            max_output_bytes: 16 << 20,
            max_log_line_bytes: 4 << 10,
            max_log_lines: 1_000,
            max_stdio_bytes: 64 << 10,
            max_resources: 10_000,
        }
    }
}

/// Caps the total linear memory of one instance (every memory of every core instance in the
/// component counts) and remembers whether the cap was hit, so a failed call can be reported as
/// [`CallErrorKind::MemoryExceeded`](crate::CallErrorKind::MemoryExceeded) rather than a crash.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    limit: usize,
    used: usize,
    table_elements: usize,
    pub(crate) exceeded: bool,
}

/// Table elements any one table may grow to (JavaScript engines need tens of thousands).
const MAX_TABLE_ELEMENTS: usize = 200_000;

impl MemoryLimiter {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            used: 0,
            table_elements: MAX_TABLE_ELEMENTS,
            exceeded: false,
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes of linear memory the instance has grown to so far.
    pub(crate) fn used(&self) -> usize {
        self.used
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let extra = desired.saturating_sub(current);
        let total = self.used.saturating_add(extra);
        if total > self.limit {
            self.exceeded = true;
            // An error (rather than `Ok(false)`) traps at the `memory.grow`, so the guest's
            // allocator never gets to run on after a failed growth.
            wasmtime::bail!(
                "memory limit of {} bytes reached (the plugin asked for {total})",
                self.limit
            );
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_elements {
            wasmtime::bail!("table limit of {} elements reached", self.table_elements);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        16
    }
}
