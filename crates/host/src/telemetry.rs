//! OpenTelemetry export wired into runs: the process's exporter, started from `[telemetry]`
//! the first time a run needs it, and the trace observer that hands each run's events to it
//! (`bosun_telemetry::Projection`) as the lines the trace writes, to be projected on the
//! exporter's thread. The trace stays the source of truth; nothing here can fail or slow a run
//! beyond copying a line into a bounded buffer.

use std::sync::Arc;
use std::time::Duration;

use bosun_core::Envelope;
use bosun_telemetry::{Exporter, Projection, SpanContext, TelemetryConfig};

use crate::config::LoadedConfig;
use crate::trace::Observer;

/// How long a process's exit waits for its last spans to be sent.
pub const EXIT_FLUSH: Duration = Duration::from_secs(3);

/// Watches a run (and its subagents, whose events reach the same watchers) for the exporter.
pub struct TelemetryObserver(Projection);

impl TelemetryObserver {
    /// Projects into `exporter`; the run's span is a child of `remote_parent` when a caller
    /// sent a `traceparent`.
    pub fn new(exporter: Arc<Exporter>, remote_parent: Option<SpanContext>) -> Self {
        Self(Projection::new(exporter, remote_parent))
    }

    /// Ends the spans still open (a trace read back without its `run.finished`).
    pub fn finish(&self) {
        self.0.finish(bosun_telemetry::export::now_ns());
    }
}

impl Observer for TelemetryObserver {
    fn observe(&self, envelope: &Envelope) {
        self.0.observe(envelope);
    }

    fn reads_lines(&self) -> bool {
        true
    }

    fn observe_line(&self, line: &[u8]) {
        self.0.observe_line(line);
    }
}

fn warn(message: &str) {
    eprintln!("warning: {message}");
}

/// The exporter `telemetry` asks for, with the environment applied; `None` when it exports
/// nothing. A section the environment makes unusable (a header naming an unset variable) is a
/// warning and no export, never a failed run.
pub fn exporter_for(telemetry: &TelemetryConfig) -> Option<Arc<Exporter>> {
    let settings = telemetry
        .resolve(&|name| std::env::var(name).ok())
        .map_err(|e| warn(&format!("telemetry is off: {e}")))
        .ok()?;
    Exporter::start(settings, Arc::new(warn))
}

/// The process's exporter for `config` (one per process, started at first use).
pub fn exporter(config: &LoadedConfig) -> Option<Arc<Exporter>> {
    let telemetry = config.telemetry();
    if !telemetry.enabled() {
        return None;
    }
    bosun_telemetry::global(
        || {
            telemetry
                .resolve(&|name| std::env::var(name).ok())
                .map_err(|e| warn(&format!("telemetry is off: {e}")))
                .ok()
        },
        || Arc::new(warn),
    )
}

/// A new watcher of run `run_id` for `config`'s exporter, if it has one; the run's span ids are
/// fixed now, so its calls can hand on their `traceparent` at once.
pub fn observer(
    config: &LoadedConfig,
    run_id: &str,
    remote_parent: Option<SpanContext>,
) -> Option<Arc<dyn Observer>> {
    let exporter = exporter(config)?;
    // The trusted digest of each plugin, for `bosun.plugin.digest` on its calls.
    let digests =
        bosun_plugins::TrustStore::load(bosun_plugins::TrustStore::default_path(&config.home))
            .map(|store| {
                store
                    .records()
                    .map(|(_, name, record)| (name.to_owned(), format!("sha256:{}", record.sha256)))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
    let projection = Projection::new(exporter, remote_parent).plugin_digests(digests);
    projection.open_run(run_id, None);
    Some(Arc::new(TelemetryObserver(projection)))
}

/// The `traceparent` a call hands on (an MCP request's `_meta`, a process's `TRACEPARENT`):
/// its `execute_tool` span's. `None` when nothing is exported.
pub fn traceparent(ctx: &crate::tool::ToolContext) -> Option<String> {
    bosun_telemetry::traceparent(
        &ctx.run.run_id,
        ctx.run.parent_run_id.as_deref(),
        &ctx.call_id,
    )
}

/// Makes call `call_id` of run `run_id`, recorded next, a child of the caller's span
/// `traceparent` (an incoming `bosun serve` request's), so one trace crosses the client, Bosun
/// and what the call reaches.
pub fn adopt_parent(run_id: &str, call_id: &str, traceparent: &str) {
    bosun_telemetry::adopt_parent(run_id, call_id, traceparent);
}

/// Sends what the process's exporter still holds, waiting at most [`EXIT_FLUSH`]: called once
/// as a command ends.
pub fn flush_at_exit() {
    bosun_telemetry::flush_global(EXIT_FLUSH);
}
