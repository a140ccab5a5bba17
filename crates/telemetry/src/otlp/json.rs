//! OTLP/JSON (the protobuf JSON mapping with OTLP's exceptions): lowerCamelCase names, trace
//! and span ids as hex, enums as integers, 64-bit integers as decimal strings.

use serde_json::{Value as Json, json};

use crate::otlp::{Body, Origin};
use crate::signal::{Attribute, LogRecord, MetricData, MetricsSnapshot, Span, Value};

/// The JSON as a request body.
pub fn body(value: &Json) -> Body {
    Body {
        content_type: "application/json",
        bytes: value.to_string().into_bytes(),
    }
}

fn any_value(value: &Value) -> Json {
    match value {
        Value::Str(s) => json!({ "stringValue": s }),
        Value::Bool(b) => json!({ "boolValue": b }),
        Value::Int(i) => json!({ "intValue": i.to_string() }),
        Value::Double(d) => json!({ "doubleValue": d }),
        Value::StrArray(items) => json!({ "arrayValue": {
            "values": items.iter().map(|s| json!({ "stringValue": s })).collect::<Vec<_>>()
        }}),
    }
}

fn attributes(attributes: &[Attribute]) -> Json {
    Json::Array(
        attributes
            .iter()
            .map(|(key, value)| json!({ "key": key, "value": any_value(value) }))
            .collect(),
    )
}

fn resource(origin: &Origin) -> Json {
    json!({ "attributes": origin.resource.iter().map(|(k, v)| {
        json!({ "key": k, "value": { "stringValue": v } })
    }).collect::<Vec<_>>() })
}

fn scope(origin: &Origin) -> Json {
    json!({ "name": origin.scope, "version": origin.version })
}

/// `ExportTraceServiceRequest`.
pub fn traces(origin: &Origin, spans: &[Span]) -> Json {
    let spans: Vec<Json> = spans
        .iter()
        .map(|span| {
            let mut out = json!({
                "traceId": span.trace_id.to_hex(),
                "spanId": span.span_id.to_hex(),
                "name": span.name,
                "kind": span.kind as i32,
                "startTimeUnixNano": span.start_ns.to_string(),
                "endTimeUnixNano": span.end_ns.to_string(),
                "attributes": attributes(&span.attributes),
                "events": span.events.iter().map(|e| json!({
                    "timeUnixNano": e.time_ns.to_string(),
                    "name": e.name,
                    "attributes": attributes(&e.attributes),
                })).collect::<Vec<_>>(),
                "status": { "code": span.status as i32, "message": span.status_message },
                "flags": 0x101,
            });
            if let (Some(parent), Some(map)) = (span.parent_span_id, out.as_object_mut()) {
                map.insert("parentSpanId".to_owned(), Json::String(parent.to_hex()));
            }
            out
        })
        .collect();
    json!({ "resourceSpans": [{
        "resource": resource(origin),
        "scopeSpans": [{ "scope": scope(origin), "spans": spans }],
    }]})
}

/// `ExportMetricsServiceRequest`.
pub fn metrics(origin: &Origin, snapshot: &MetricsSnapshot) -> Json {
    const CUMULATIVE: i32 = 2;
    let start = snapshot.start_ns.to_string();
    let time = snapshot.time_ns.to_string();
    let metrics: Vec<Json> = snapshot
        .metrics
        .iter()
        .map(|metric| {
            let mut out = json!({
                "name": metric.name,
                "description": metric.description,
                "unit": metric.unit,
            });
            let data = match &metric.data {
                MetricData::Counter(points) => (
                    "sum",
                    json!({
                        "dataPoints": points.iter().map(|p| json!({
                            "attributes": attributes(&p.attributes),
                            "startTimeUnixNano": start,
                            "timeUnixNano": time,
                            "asInt": p.value.to_string(),
                        })).collect::<Vec<_>>(),
                        "aggregationTemporality": CUMULATIVE,
                        "isMonotonic": true,
                    }),
                ),
                MetricData::Histogram { bounds, points } => (
                    "histogram",
                    json!({
                        "dataPoints": points.iter().map(|p| json!({
                            "attributes": attributes(&p.attributes),
                            "startTimeUnixNano": start,
                            "timeUnixNano": time,
                            "count": p.count.to_string(),
                            "sum": p.sum,
                            "bucketCounts": p.bucket_counts.iter().map(u64::to_string).collect::<Vec<_>>(),
                            "explicitBounds": bounds,
                            "min": p.min,
                            "max": p.max,
                        })).collect::<Vec<_>>(),
                        "aggregationTemporality": CUMULATIVE,
                    }),
                ),
            };
            if let Some(map) = out.as_object_mut() {
                map.insert(data.0.to_owned(), data.1);
            }
            out
        })
        .collect();
    json!({ "resourceMetrics": [{
        "resource": resource(origin),
        "scopeMetrics": [{ "scope": scope(origin), "metrics": metrics }],
    }]})
}

/// `ExportLogsServiceRequest`.
pub fn logs(origin: &Origin, records: &[LogRecord]) -> Json {
    let records: Vec<Json> = records
        .iter()
        .map(|record| {
            let mut out = json!({
                "timeUnixNano": record.time_ns.to_string(),
                "observedTimeUnixNano": record.time_ns.to_string(),
                "severityNumber": record.severity,
                "severityText": record.severity_text,
                "body": { "stringValue": record.body },
                "attributes": attributes(&record.attributes),
                "eventName": record.event_name,
            });
            if let (Some((trace, span)), Some(map)) = (record.span, out.as_object_mut()) {
                map.insert("traceId".to_owned(), Json::String(trace.to_hex()));
                map.insert("spanId".to_owned(), Json::String(span.to_hex()));
            }
            out
        })
        .collect();
    json!({ "resourceLogs": [{
        "resource": resource(origin),
        "scopeLogs": [{ "scope": scope(origin), "logRecords": records }],
    }]})
}
