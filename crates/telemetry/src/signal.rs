//! What is exported, independent of the wire: spans, metric points and log records as OTLP
//! models them (`opentelemetry/proto/{trace,metrics,logs}/v1`, OTLP 1.x).

use crate::context::{SpanId, TraceId};

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A float.
    Double(f64),
    /// A boolean.
    Bool(bool),
    /// A list of strings.
    StrArray(Vec<String>),
}

/// A key and its value.
pub type Attribute = (String, Value);

/// `SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// In process.
    Internal = 1,
    /// Serving a remote caller.
    Server = 2,
    /// Calling a remote service.
    Client = 3,
}

/// `Status.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusCode {
    /// Not set.
    Unset = 0,
    /// Succeeded.
    Ok = 1,
    /// Failed.
    Error = 2,
}

/// Something that happened during a span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    /// When, in nanoseconds since the epoch.
    pub time_ns: u64,
    /// What.
    pub name: String,
    /// Its attributes.
    pub attributes: Vec<Attribute>,
}

/// A finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Its trace.
    pub trace_id: TraceId,
    /// Its id.
    pub span_id: SpanId,
    /// Its parent, if any.
    pub parent_span_id: Option<SpanId>,
    /// Its name (`execute_tool read_file`).
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// Start, in nanoseconds since the epoch.
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
    /// Attributes.
    pub attributes: Vec<Attribute>,
    /// Events.
    pub events: Vec<SpanEvent>,
    /// Outcome.
    pub status: StatusCode,
    /// Why it failed, when it did.
    pub status_message: String,
}

/// A log record.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    /// When it happened, in nanoseconds since the epoch.
    pub time_ns: u64,
    /// `SeverityNumber` (9 = INFO, 13 = WARN, 17 = ERROR).
    pub severity: i32,
    /// `INFO`, `WARN`, ...
    pub severity_text: &'static str,
    /// `event.name` (`bosun.tool.decided`).
    pub event_name: String,
    /// The body: a short line for a person.
    pub body: String,
    /// Attributes.
    pub attributes: Vec<Attribute>,
    /// The span it belongs to.
    pub span: Option<(TraceId, SpanId)>,
}

/// A metric's data: cumulative since the process started.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricData {
    /// A monotonic sum.
    Counter(Vec<CounterPoint>),
    /// A histogram with explicit bounds.
    Histogram {
        /// Bucket upper bounds.
        bounds: Vec<f64>,
        /// Points.
        points: Vec<HistogramPoint>,
    },
}

/// One metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Its name (`bosun.tool.calls`).
    pub name: &'static str,
    /// What it counts.
    pub description: &'static str,
    /// UCUM unit (`s`, `{call}`, `{token}`).
    pub unit: &'static str,
    /// Its points.
    pub data: MetricData,
}

/// A counter's value for one attribute set.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterPoint {
    /// The attribute set.
    pub attributes: Vec<Attribute>,
    /// The total.
    pub value: u64,
}

/// A histogram's buckets for one attribute set.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramPoint {
    /// The attribute set.
    pub attributes: Vec<Attribute>,
    /// Values recorded.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// One count per bucket (`bounds.len() + 1`).
    pub bucket_counts: Vec<u64>,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

/// Metrics as of one moment: cumulative from `start_ns`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSnapshot {
    /// When counting began (the process's start).
    pub start_ns: u64,
    /// Now.
    pub time_ns: u64,
    /// The metrics with at least one point.
    pub metrics: Vec<Metric>,
}
