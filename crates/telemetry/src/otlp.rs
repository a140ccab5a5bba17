//! The OTLP/HTTP request bodies (OTLP 1.x, `opentelemetry/proto/collector/*/v1`): an export
//! request of one resource and one scope, as protobuf ([`proto`], hand-encoded: the three
//! requests need a few dozen fields, not a code generator) or as OTLP/JSON ([`json`]).

pub mod json;
pub mod proto;

use crate::config::Protocol;
use crate::signal::{LogRecord, MetricsSnapshot, Span};

/// Who exports: the resource attributes and the instrumentation scope.
#[derive(Debug, Clone)]
pub struct Origin {
    /// `service.name`, `service.instance.id`, ...
    pub resource: Vec<(String, String)>,
    /// The scope's name (`bosun`).
    pub scope: &'static str,
    /// The scope's version.
    pub version: &'static str,
}

/// A request body and its content type.
pub struct Body {
    /// `application/x-protobuf` or `application/json`.
    pub content_type: &'static str,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// `ExportTraceServiceRequest`.
pub fn traces(origin: &Origin, spans: &[Span], protocol: Protocol) -> Body {
    match protocol {
        Protocol::Binary => proto::body(proto::traces(origin, spans)),
        Protocol::Json => json::body(&json::traces(origin, spans)),
    }
}

/// `ExportMetricsServiceRequest`.
pub fn metrics(origin: &Origin, snapshot: &MetricsSnapshot, protocol: Protocol) -> Body {
    match protocol {
        Protocol::Binary => proto::body(proto::metrics(origin, snapshot)),
        Protocol::Json => json::body(&json::metrics(origin, snapshot)),
    }
}

/// `ExportLogsServiceRequest`.
pub fn logs(origin: &Origin, records: &[LogRecord], protocol: Protocol) -> Body {
    match protocol {
        Protocol::Binary => proto::body(proto::logs(origin, records)),
        Protocol::Json => json::body(&json::logs(origin, records)),
    }
}
