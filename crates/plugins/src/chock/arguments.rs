//! What crosses into and out of a Chock tool call: the arguments as Chock's binary record, and
//! the answer's text cleaned for the model.

use bosun_core::{escape_hidden, find_hidden};
use serde_json::{Map, Value};

use crate::chock::{MAX_ARGUMENT_BYTES, Property, Shape};

/// Why a call's arguments cannot be written as Chock's record; said to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    /// The arguments are not a JSON object.
    #[error("the arguments must be a JSON object")]
    NotAnObject,
    /// The whole record is over the plugin's buffer.
    #[error(
        "the arguments take {0} bytes in Chock's record, and the plugin's buffer holds {MAX_ARGUMENT_BYTES}: send less"
    )]
    TooLarge(usize),
    /// The record outgrew the plugin's buffer while being written.
    #[error(
        "the arguments are larger than the plugin's {MAX_ARGUMENT_BYTES}-byte buffer: send less"
    )]
    OverBuffer,
    /// A required field is missing or `null`.
    #[error("leaves out the field \"{0}\", which this tool needs")]
    Missing(String),
    /// A field's value has the wrong shape.
    #[error("the field \"{field}\" must be {what}")]
    Wrong {
        /// The field.
        field: String,
        /// What it must be (`a string`, `a shorter array`, ...).
        what: &'static str,
    },
}

/// Chock's binary argument record for `input` (already validated against the tool's schema):
/// one field per declared property in declaration order, `u8 present` then the value; a JSON
/// `null` counts as absent.
///
/// # Errors
/// A sentence for the model when a value cannot be written (a required field missing, a
/// number out of range, a record over 64 KiB).
pub fn encode_arguments(properties: &[Property], input: &Value) -> Result<Vec<u8>, ArgumentError> {
    let mut out = Vec::new();
    let Some(object) = input.as_object() else {
        return Err(ArgumentError::NotAnObject);
    };
    encode_fields(properties, object, &mut out)?;
    if out.len() > MAX_ARGUMENT_BYTES {
        return Err(ArgumentError::TooLarge(out.len()));
    }
    Ok(out)
}

fn encode_fields(
    properties: &[Property],
    object: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<(), ArgumentError> {
    for p in properties {
        match object.get(&p.name) {
            None | Some(Value::Null) if p.required => {
                return Err(ArgumentError::Missing(p.name.clone()));
            }
            None | Some(Value::Null) => out.push(0),
            Some(value) => {
                out.push(1);
                encode_value(&p.shape, value, &p.name, out)?;
            }
        }
        if out.len() > MAX_ARGUMENT_BYTES {
            return Err(ArgumentError::OverBuffer);
        }
    }
    Ok(())
}

fn encode_value(
    shape: &Shape,
    value: &Value,
    field: &str,
    out: &mut Vec<u8>,
) -> Result<(), ArgumentError> {
    let wrong = |what: &'static str| ArgumentError::Wrong {
        field: field.to_owned(),
        what,
    };
    match shape {
        Shape::String => {
            let s = value.as_str().ok_or_else(|| wrong("a string"))?;
            let len = u32::try_from(s.len()).map_err(|_| wrong("a shorter string"))?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Shape::Boolean => out.push(u8::from(value.as_bool().ok_or_else(|| wrong("a boolean"))?)),
        Shape::Integer => {
            let n = match value.as_i64() {
                Some(n) => n,
                None => match value.as_f64() {
                    #[allow(clippy::cast_possible_truncation)]
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => f as i64,
                    _ => return Err(wrong("a whole number within 64 bits")),
                },
            };
            out.extend_from_slice(&n.to_le_bytes());
        }
        Shape::Number => {
            let f = value.as_f64().ok_or_else(|| wrong("a number"))?;
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Shape::Array { items } => {
            let list = value.as_array().ok_or_else(|| wrong("an array"))?;
            let count = u32::try_from(list.len()).map_err(|_| wrong("a shorter array"))?;
            out.extend_from_slice(&count.to_le_bytes());
            match items {
                Some(items) => {
                    for item in list {
                        encode_value(items, item, field, out)?;
                        if out.len() > MAX_ARGUMENT_BYTES {
                            return Err(wrong("a shorter array"));
                        }
                    }
                }
                None if list.is_empty() => {}
                None => return Err(wrong("an empty array (the plugin declares no item type)")),
            }
        }
        Shape::Object { properties } => {
            let object = value.as_object().ok_or_else(|| wrong("an object"))?;
            encode_fields(properties, object, out)?;
        }
    }
    Ok(())
}

/// Text from a Chock plugin as the model sees it: control characters other than newline and
/// tab removed, hidden characters made visible.
pub fn text_for_model(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect();
    if find_hidden(&cleaned).is_some() {
        escape_hidden(&cleaned)
    } else {
        cleaned
    }
}
