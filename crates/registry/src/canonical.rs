//! Canonical JSON: the one byte form signatures are made over, so a catalog re-serialised by
//! any tool still verifies. Objects' keys sorted by their UTF-8 bytes, no whitespace, strings
//! escaped as `serde_json` escapes them (`"`, `\` and control characters only), integers only —
//! a float is refused, as in OLPC canonical JSON, so no two encoders can disagree about a number.

use serde_json::Value;

/// The canonical bytes of `value`, or why it has none (a float).
pub fn to_canonical(value: &Value) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    write(value, &mut out, 0)?;
    Ok(out)
}

/// Deepest nesting accepted, so hostile metadata cannot exhaust the stack.
const MAX_DEPTH: usize = 64;

fn write(value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => {
            if n.is_f64() {
                return Err(format!(
                    "{n} is not an integer: signed metadata holds integers only"
                ));
            }
            out.extend_from_slice(n.to_string().as_bytes());
        }
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, out, depth + 1)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string(key, out);
                out.push(b':');
                if let Some(v) = map.get(key) {
                    write(v, out, depth + 1)?;
                }
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn string(s: &str, out: &mut Vec<u8>) {
    // serde_json's string encoding is deterministic and escapes only what JSON requires.
    if let Ok(text) = serde_json::to_string(s) {
        out.extend_from_slice(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_and_floats_refused() {
        let value: Value =
            serde_json::from_str(r#"{ "b": [1, {"z": null, "a": true}], "a": "x\"\n" }"#).unwrap();
        assert_eq!(
            String::from_utf8(to_canonical(&value).unwrap()).unwrap(),
            r#"{"a":"x\"\n","b":[1,{"a":true,"z":null}]}"#
        );
        assert!(to_canonical(&serde_json::json!({"v": 1.5})).is_err());
    }
}
