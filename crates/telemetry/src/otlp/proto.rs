//! OTLP protobuf, written by hand: field numbers from `opentelemetry-proto` v1.x
//! (`common/v1/common.proto`, `resource/v1`, `trace/v1`, `metrics/v1`, `logs/v1`).

use crate::otlp::{Body, Origin};
use crate::signal::{Attribute, LogRecord, MetricData, MetricsSnapshot, Span, Value};

/// A protobuf message being written.
#[derive(Default)]
pub struct Writer {
    buf: Vec<u8>,
}

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const FIXED32: u64 = 5;

impl Writer {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    fn tag(&mut self, field: u64, wire: u64) {
        self.varint((field << 3) | wire);
    }

    fn uint(&mut self, field: u64, value: u64) {
        if value != 0 {
            self.tag(field, VARINT);
            self.varint(value);
        }
    }

    fn bool(&mut self, field: u64, value: bool) {
        self.tag(field, VARINT);
        self.varint(u64::from(value));
    }

    fn fixed64(&mut self, field: u64, value: u64) {
        self.tag(field, FIXED64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    fn fixed32(&mut self, field: u64, value: u32) {
        self.tag(field, FIXED32);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    fn double(&mut self, field: u64, value: f64) {
        self.fixed64(field, value.to_bits());
    }

    fn bytes(&mut self, field: u64, value: &[u8]) {
        self.tag(field, LEN);
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value);
    }

    fn string(&mut self, field: u64, value: &str) {
        if !value.is_empty() {
            self.bytes(field, value.as_bytes());
        }
    }

    fn message(&mut self, field: u64, write: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        write(&mut inner);
        self.bytes(field, &inner.buf);
    }
}

/// The finished bytes as a request body.
pub fn body(writer: Writer) -> Body {
    Body {
        content_type: "application/x-protobuf",
        bytes: writer.buf,
    }
}

fn any_value(w: &mut Writer, value: &Value) {
    match value {
        Value::Str(s) => w.bytes(1, s.as_bytes()),
        Value::Bool(b) => w.bool(2, *b),
        Value::Int(i) => {
            w.tag(3, VARINT);
            w.varint(*i as u64);
        }
        Value::Double(d) => w.double(4, *d),
        Value::StrArray(items) => w.message(5, |array| {
            for item in items {
                array.message(1, |v| v.bytes(1, item.as_bytes()));
            }
        }),
    }
}

fn key_value(w: &mut Writer, field: u64, key: &str, value: &Value) {
    w.message(field, |kv| {
        kv.string(1, key);
        kv.message(2, |v| any_value(v, value));
    });
}

fn attributes(w: &mut Writer, field: u64, attributes: &[Attribute]) {
    for (key, value) in attributes {
        key_value(w, field, key, value);
    }
}

/// `resource = 1` and the scope message's head, shared by the three requests.
fn resource(w: &mut Writer, origin: &Origin) {
    w.message(1, |r| {
        for (key, value) in &origin.resource {
            key_value(r, 1, key, &Value::Str(value.clone()));
        }
    });
}

fn scope(w: &mut Writer, origin: &Origin) {
    w.message(1, |s| {
        s.string(1, origin.scope);
        s.string(2, origin.version);
    });
}

/// `ExportTraceServiceRequest`.
pub fn traces(origin: &Origin, spans: &[Span]) -> Writer {
    let mut w = Writer::default();
    w.message(1, |rs| {
        resource(rs, origin);
        rs.message(2, |ss| {
            scope(ss, origin);
            for span in spans {
                ss.message(2, |s| write_span(s, span));
            }
        });
    });
    w
}

fn write_span(s: &mut Writer, span: &Span) {
    s.bytes(1, &span.trace_id.0);
    s.bytes(2, &span.span_id.0);
    if let Some(parent) = span.parent_span_id {
        s.bytes(4, &parent.0);
    }
    s.string(5, &span.name);
    s.uint(6, span.kind as u64);
    s.fixed64(7, span.start_ns);
    s.fixed64(8, span.end_ns);
    attributes(s, 9, &span.attributes);
    for event in &span.events {
        s.message(11, |e| {
            e.fixed64(1, event.time_ns);
            e.string(2, &event.name);
            attributes(e, 3, &event.attributes);
        });
    }
    s.message(15, |status| {
        status.string(2, &span.status_message);
        status.uint(3, span.status as u64);
    });
    // SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK (0x100) with is_remote = false, trace flags sampled.
    s.fixed32(16, 0x100 | 0x01);
}

/// `ExportMetricsServiceRequest`.
pub fn metrics(origin: &Origin, snapshot: &MetricsSnapshot) -> Writer {
    const CUMULATIVE: u64 = 2;
    let mut w = Writer::default();
    w.message(1, |rm| {
        resource(rm, origin);
        rm.message(2, |sm| {
            scope(sm, origin);
            for metric in &snapshot.metrics {
                sm.message(2, |m| {
                    m.string(1, metric.name);
                    m.string(2, metric.description);
                    m.string(3, metric.unit);
                    match &metric.data {
                        MetricData::Counter(points) => m.message(7, |sum| {
                            for point in points {
                                sum.message(1, |p| {
                                    p.fixed64(2, snapshot.start_ns);
                                    p.fixed64(3, snapshot.time_ns);
                                    // as_int: sfixed64.
                                    p.fixed64(6, point.value);
                                    attributes(p, 7, &point.attributes);
                                });
                            }
                            sum.uint(2, CUMULATIVE);
                            sum.bool(3, true);
                        }),
                        MetricData::Histogram { bounds, points } => m.message(9, |h| {
                            for point in points {
                                h.message(1, |p| {
                                    p.fixed64(2, snapshot.start_ns);
                                    p.fixed64(3, snapshot.time_ns);
                                    p.fixed64(4, point.count);
                                    p.double(5, point.sum);
                                    p.message(6, |packed| {
                                        for count in &point.bucket_counts {
                                            packed.buf.extend_from_slice(&count.to_le_bytes());
                                        }
                                    });
                                    p.message(7, |packed| {
                                        for bound in bounds {
                                            packed.buf.extend_from_slice(&bound.to_le_bytes());
                                        }
                                    });
                                    attributes(p, 9, &point.attributes);
                                    p.double(11, point.min);
                                    p.double(12, point.max);
                                });
                            }
                            h.uint(2, CUMULATIVE);
                        }),
                    }
                });
            }
        });
    });
    w
}

/// `ExportLogsServiceRequest`.
pub fn logs(origin: &Origin, records: &[LogRecord]) -> Writer {
    let mut w = Writer::default();
    w.message(1, |rl| {
        resource(rl, origin);
        rl.message(2, |sl| {
            scope(sl, origin);
            for record in records {
                sl.message(2, |r| {
                    r.fixed64(1, record.time_ns);
                    r.uint(2, record.severity as u64);
                    r.string(3, record.severity_text);
                    r.message(5, |v| any_value(v, &Value::Str(record.body.clone())));
                    attributes(r, 6, &record.attributes);
                    if let Some((trace, span)) = record.span {
                        r.bytes(9, &trace.0);
                        r.bytes(10, &span.0);
                    }
                    r.fixed64(11, record.time_ns);
                    r.string(12, &record.event_name);
                });
            }
        });
    });
    w
}

/// A minimal reader of protobuf messages, for this crate's tests and the receivers of other
/// crates' tests: a message as its fields, each varint, fixed or length-delimited.
pub mod read {
    /// A field's value as it is on the wire.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Field {
        /// A varint.
        Varint(u64),
        /// 8 bytes.
        Fixed64(u64),
        /// Length-delimited: a string, bytes, or a nested message.
        Len(Vec<u8>),
        /// 4 bytes.
        Fixed32(u32),
    }

    /// The fields of a message, in order; `None` when it is not well-formed protobuf.
    pub fn fields(mut bytes: &[u8]) -> Option<Vec<(u64, Field)>> {
        fn varint(bytes: &mut &[u8]) -> Option<u64> {
            let mut value = 0u64;
            for shift in (0..64).step_by(7) {
                let (&byte, rest) = bytes.split_first()?;
                *bytes = rest;
                value |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    return Some(value);
                }
            }
            None
        }
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let key = varint(&mut bytes)?;
            let field = match key & 7 {
                0 => Field::Varint(varint(&mut bytes)?),
                1 => {
                    let (head, rest) = bytes.split_at_checked(8)?;
                    bytes = rest;
                    Field::Fixed64(u64::from_le_bytes(head.try_into().ok()?))
                }
                2 => {
                    let len = usize::try_from(varint(&mut bytes)?).ok()?;
                    let (head, rest) = bytes.split_at_checked(len)?;
                    bytes = rest;
                    Field::Len(head.to_vec())
                }
                5 => {
                    let (head, rest) = bytes.split_at_checked(4)?;
                    bytes = rest;
                    Field::Fixed32(u32::from_le_bytes(head.try_into().ok()?))
                }
                _ => return None,
            };
            out.push((key >> 3, field));
        }
        Some(out)
    }
}
