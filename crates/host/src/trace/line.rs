//! A trace line's JSON, written by hand: exactly the bytes serde_json writes for an
//! [`bosun_core::Envelope`] (tested against it for every kind of value), without serde's
//! per-field machinery. A line is on every tool call's path four times, so its fixed parts are
//! literals, the run's part is built once per trace, strings are copied in runs between the
//! bytes JSON escapes, and nothing is allocated.
//!
//! Only a call's own four events are written here field by field; any other event, and the
//! decision's capabilities and explanation, go through serde_json into the same buffer.

use bosun_core::{Decision, Explanation, Layer};
use serde_json::Value;

use super::{CallEvent, Recorded};

/// The part of every line of one trace before its sequence number:
/// `{"schema_version":1,"run_id":"…","parent_run_id":"…","sequence":`.
pub(super) fn prefix(schema_version: u32, run_id: &str, parent_run_id: Option<&str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(b"{\"schema_version\":");
    uint(&mut out, u64::from(schema_version));
    out.extend_from_slice(b",\"run_id\":");
    string(&mut out, run_id);
    if let Some(parent) = parent_run_id {
        out.extend_from_slice(b",\"parent_run_id\":");
        string(&mut out, parent);
    }
    out.extend_from_slice(b",\"sequence\":");
    out
}

/// Appends one line (without its newline) to `out`. `timestamp` is RFC 3339 text, which holds
/// no byte JSON escapes.
pub(super) fn write(
    out: &mut Vec<u8>,
    prefix: &[u8],
    sequence: u64,
    timestamp: &str,
    event: &Recorded<'_>,
) -> Result<(), serde_json::Error> {
    out.extend_from_slice(prefix);
    uint(out, sequence);
    out.extend_from_slice(b",\"timestamp\":\"");
    out.extend_from_slice(timestamp.as_bytes());
    out.extend_from_slice(b"\",\"event\":");
    match event {
        Recorded::Owned(event) => serde_json::to_writer(&mut *out, event)?,
        Recorded::Call(event) => call_event(out, event)?,
    }
    out.push(b'}');
    Ok(())
}

/// A call's event, with the tags, field names and order of its [`bosun_core::Event`] variant.
fn call_event(out: &mut Vec<u8>, event: &CallEvent<'_>) -> Result<(), serde_json::Error> {
    let (tag, call_id, tool) = match event {
        CallEvent::Proposed { call_id, tool, .. } => ("tool.proposed", call_id, tool),
        CallEvent::Decided { call_id, tool, .. } => ("tool.decided", call_id, tool),
        CallEvent::Started { call_id, tool } => ("tool.started", call_id, tool),
        CallEvent::Completed { call_id, tool, .. } => ("tool.completed", call_id, tool),
    };
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(tag.as_bytes());
    out.extend_from_slice(b"\",\"call_id\":");
    string(out, call_id);
    out.extend_from_slice(b",\"tool\":");
    string(out, tool);
    match event {
        CallEvent::Proposed { input, .. } => {
            out.extend_from_slice(b",\"input\":");
            value(out, input);
        }
        CallEvent::Decided {
            action,
            capabilities,
            explanation,
            ..
        } => {
            out.extend_from_slice(b",\"action\":");
            string(out, action);
            out.extend_from_slice(b",\"capabilities\":");
            if capabilities.is_empty() {
                out.extend_from_slice(b"[]");
            } else {
                serde_json::to_writer(&mut *out, capabilities)?;
            }
            out.extend_from_slice(b",\"explanation\":");
            explanation_(out, explanation);
        }
        CallEvent::Started { .. } => {}
        CallEvent::Completed {
            output,
            truncated,
            duration_us,
            ..
        } => {
            out.extend_from_slice(b",\"output\":");
            value(out, output);
            out.extend_from_slice(if *truncated {
                b",\"truncated\":true,\"duration_us\":"
            } else {
                b",\"truncated\":false,\"duration_us\":"
            });
            uint(out, *duration_us);
        }
    }
    out.push(b'}');
    Ok(())
}

/// A decision's explanation, as its derived serialisation writes it.
fn explanation_(out: &mut Vec<u8>, explanation: &Explanation) {
    out.extend_from_slice(b"{\"decision\":\"");
    out.extend_from_slice(decision(explanation.decision));
    out.extend_from_slice(b"\",\"deciding\":");
    uint(out, explanation.deciding as u64);
    out.extend_from_slice(b",\"checks\":[");
    for (i, check) in explanation.checks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"subject\":");
        string(out, &check.subject);
        out.extend_from_slice(b",\"layer\":\"");
        out.extend_from_slice(layer(check.layer));
        out.extend_from_slice(b"\",\"rule\":");
        string(out, &check.rule);
        if let Some(source) = &check.source {
            out.extend_from_slice(b",\"source\":");
            string(out, source);
        }
        out.extend_from_slice(b",\"decision\":\"");
        out.extend_from_slice(decision(check.decision));
        out.extend_from_slice(b"\"}");
    }
    out.extend_from_slice(b"]}");
}

/// A decision's serialised name (`snake_case`).
fn decision(decision: Decision) -> &'static [u8] {
    match decision {
        Decision::Allow => b"allow",
        Decision::Review => b"review",
        Decision::Ask => b"ask",
        Decision::Deny => b"deny",
    }
}

/// A layer's serialised name (`snake_case`).
fn layer(layer: Layer) -> &'static [u8] {
    match layer {
        Layer::Fallback => b"fallback",
        Layer::Mode => b"mode",
        Layer::User => b"user",
        Layer::Project => b"project",
        Layer::Hook => b"hook",
        Layer::Promise => b"promise",
        Layer::SessionGrant => b"session_grant",
        Layer::Flow => b"flow",
        Layer::Managed => b"managed",
    }
}

/// A JSON value as serde_json writes it compactly (objects in their map's order).
fn value(out: &mut Vec<u8>, value_: &Value) {
    match value_ {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => {
            if let Some(n) = number.as_u64() {
                uint(out, n);
            } else if let Some(n) = number.as_i64() {
                out.push(b'-');
                uint(out, n.unsigned_abs());
            } else {
                // A float: `Number`'s `Display` is the formatter its serialisation uses.
                use std::io::Write as _;
                let _ = write!(out, "{number}");
            }
        }
        Value::String(text) => string(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string(out, key);
                out.push(b':');
                value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// An unsigned integer in decimal.
fn uint(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0_u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes is one JSON escapes: below 0x20, `"` or `\`. (Bytes of
/// multi-byte UTF-8 characters have their high bit set and never match.)
fn escapes_any(word: u64) -> bool {
    let below_space = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v;
    (below_space | zero_in(quote) | zero_in(backslash)) & HIGHS != 0
}

/// A JSON string with serde_json's escapes: `\"`, `\\`, `\b`, `\t`, `\n`, `\f`, `\r`, and
/// `\u00xx` (lower-case hex) for the other control characters; everything else as it is.
fn string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(word) = bytes.get(at..at + 8)
            && let Ok(word) = <[u8; 8]>::try_from(word)
            && !escapes_any(u64::from_le_bytes(word))
        {
            at += 8;
            continue;
        }
        let byte = bytes[at];
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            _ => {
                at += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[copied..at]);
        out.extend_from_slice(escape);
        at += 1;
        copied = at;
    }
    out.extend_from_slice(&bytes[copied..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_string(text: &str) -> String {
        serde_json::to_string(text).unwrap()
    }

    fn ours(text: &str) -> String {
        let mut out = Vec::new();
        string(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    /// Every byte serde_json escapes, at every position of an eight-byte word and beside
    /// multi-byte characters, is escaped as serde_json escapes it.
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let specials: Vec<char> = (0_u8..0x20)
            .map(char::from)
            .chain(['"', '\\', '\u{7f}', 'é', '€', '😀', '\u{2028}', '/'])
            .collect();
        for special in &specials {
            for before in 0..17 {
                for after in [0, 1, 7, 8, 9] {
                    let text = format!("{}{special}{}", "a".repeat(before), "läs".repeat(after));
                    assert_eq!(ours(&text), serde_string(&text), "{text:?}");
                }
            }
        }
        // Every pair of bytes below 0x80, so no mask lets a neighbour hide an escape.
        for a in 0_u8..0x80 {
            for b in 0_u8..0x80 {
                let text = format!("0123456{}{}89abcdef", char::from(a), char::from(b));
                assert_eq!(ours(&text), serde_string(&text), "{a} {b}");
            }
        }
    }

    /// Numbers, nesting, key order and escaped keys as serde_json writes them.
    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        let values = [
            serde_json::json!(null),
            serde_json::json!([true, false, 0, 1, -1, u64::MAX, i64::MIN, i64::MAX]),
            serde_json::json!([1.5, -0.0, 1e20, 1e-7, 5e-324, f64::MAX, 0.1, 123456789.125]),
            serde_json::json!({"z": 1, "a": {"k\"ey\n": [[], {}, ""]}, "m": "x\u{1}y"}),
            serde_json::json!({"deep": [[[[{"a": [null, "é", 2.5]}]]]]}),
        ];
        for v in &values {
            let mut out = Vec::new();
            value(&mut out, v);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(v).unwrap()
            );
        }
    }

    /// Every decision and layer, with and without a source, as the derived serialisation
    /// writes them.
    #[test]
    fn explanations_are_written_as_serde_writes_them() {
        use bosun_core::MatchedRule;
        let decisions = [
            Decision::Allow,
            Decision::Review,
            Decision::Ask,
            Decision::Deny,
        ];
        let layers = [
            Layer::Fallback,
            Layer::Mode,
            Layer::User,
            Layer::Project,
            Layer::Hook,
            Layer::Promise,
            Layer::SessionGrant,
            Layer::Flow,
            Layer::Managed,
        ];
        let mut checks = Vec::new();
        for (i, layer) in layers.iter().enumerate() {
            for decision in decisions {
                checks.push(MatchedRule {
                    subject: format!("fs.read:src/\"{i}\"\n"),
                    layer: *layer,
                    rule: "action = \"builtin.tool.*\" decision = \"allow\" → ✓".into(),
                    source: (i % 2 == 0).then(|| format!("config.toml:{i}")),
                    decision,
                });
            }
        }
        for (deciding, decision) in decisions.into_iter().enumerate() {
            for checks in [Vec::new(), checks.clone()] {
                let explanation = Explanation {
                    decision,
                    deciding,
                    checks,
                };
                let mut out = Vec::new();
                explanation_(&mut out, &explanation);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    serde_json::to_string(&explanation).unwrap()
                );
            }
        }
    }

    #[test]
    fn integers_are_written_in_decimal() {
        for n in [0, 1, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            uint(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }
}
