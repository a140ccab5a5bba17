//! OpenTelemetry export of Bosun's runs. The JSONL run trace stays the source of truth; this
//! crate projects its events ([`Projection`]) to GenAI spans (`invoke_agent` → `chat {model}` /
//! `execute_tool {tool}`), metrics and log records, and sends them over OTLP/HTTP (protobuf or
//! JSON, [`otlp`]) from one thread with a bounded queue ([`Exporter`]). The run's thread only
//! copies the trace's lines; parsing and projecting happen on the exporter's thread, and the
//! span ids a call hands on are derived where the call runs ([`ids`]). It never blocks a run and
//! never fails one: a collector that is down costs a warning. It reads `[telemetry]`
//! ([`TelemetryConfig`]) and the standard `OTEL_*` variables; it knows no tools and no policy.
//!
//! ```
//! use bosun_telemetry::{ExporterConfig, OtlpHttpConfig, TelemetryConfig};
//!
//! let config = TelemetryConfig {
//!     traces: ExporterConfig::OtlpHttp(OtlpHttpConfig {
//!         endpoint: Some("http://127.0.0.1:4318/v1/traces".into()),
//!         ..OtlpHttpConfig::default()
//!     }),
//!     ..TelemetryConfig::default()
//! };
//! let settings = config.resolve(&|_| None).expect("a valid section");
//! assert_eq!(settings.traces.map(|t| t.url).as_deref(), Some("http://127.0.0.1:4318/v1/traces"));
//! assert!(settings.metrics.is_none()); // each signal is off until it names an exporter
//! ```

pub mod config;
pub mod context;
pub mod export;
pub mod ids;
pub mod metrics;
pub mod otlp;
pub mod projection;
mod projector;
pub mod signal;

pub use config::{
    ContentConfig, Endpoint, ExporterConfig, Forced, HeaderValue, OtlpHttpConfig, Protocol,
    Settings, Signal, TelemetryConfig,
};
pub use context::{SpanContext, SpanId, TraceId};
pub use export::{Exporter, Warn, flush_global, global};
pub use ids::{adopt_parent, traceparent};
pub use projection::Projection;
