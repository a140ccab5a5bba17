//! The tool contract: a name, a description, a bounded input schema, a risk, the capabilities
//! it uses and the classification of what it returns. A spec that breaks a bound is refused with
//! the reason, never offered to a model in a thinned form.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Capability, Classification};

/// Longest serialised input schema, in bytes.
pub const MAX_SCHEMA_BYTES: usize = 8 * 1024;
/// Deepest nesting of an input schema (objects and arrays).
pub const MAX_SCHEMA_DEPTH: usize = 8;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// What kind of harm a tool can do; modes give defaults by risk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only.
    Read,
    /// Changes files.
    Write,
    /// Runs processes.
    Process,
    /// Talks to the network.
    Network,
    /// Calls a model.
    Model,
}

impl Risk {
    /// Every risk, in order.
    pub const ALL: [Risk; 5] = [
        Risk::Read,
        Risk::Write,
        Risk::Process,
        Risk::Network,
        Risk::Model,
    ];
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Process => "process",
            Self::Network => "network",
            Self::Model => "model",
        })
    }
}

/// Why a tool spec was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    /// The name does not match `^[a-z][a-z0-9_]{0,63}$`.
    #[error("invalid tool name `{0}`: use 1-64 characters a-z, 0-9 and _, starting with a letter")]
    BadName(String),
    /// Empty description.
    #[error("the description is empty: describe what the tool does in 1-1024 characters")]
    EmptyDescription,
    /// Description longer than the bound.
    #[error("the description has {0} characters: shorten it to at most 1024")]
    LongDescription(usize),
    /// A control, bidi or zero-width character.
    #[error(
        "the description holds the invisible or control character U+{0:04X} at character {1}: remove it"
    )]
    HiddenCharacter(u32, usize),
    /// Schema serialised over 8 KiB.
    #[error("the input schema is {0} bytes serialised: keep it within 8192")]
    SchemaTooLarge(usize),
    /// Schema nested deeper than 8.
    #[error("the input schema nests {0} levels deep: keep it within 8")]
    SchemaTooDeep(usize),
    /// A string or key of the schema holds a hidden character.
    #[error(
        "the input schema holds the invisible or control character U+{code:04X} ({name}) at {path}: remove it"
    )]
    HiddenInSchema {
        /// JSON Pointer of the string or key.
        path: String,
        /// The code point.
        code: u32,
        /// Its name.
        name: &'static str,
    },
    /// The schema is not valid JSON Schema (`minLength: "zero"`).
    #[error("the input schema is not valid JSON Schema: {0}")]
    SchemaInvalid(String),
    /// The schema's root is not an object schema.
    #[error("the input schema must be a JSON object with \"type\": \"object\"")]
    SchemaNotObject,
}

/// A validated tool name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ToolName(String);

impl ToolName {
    /// Checks `^[a-z][a-z0-9_]{0,63}$`.
    pub fn new(name: impl Into<String>) -> Result<Self, SpecError> {
        let name = name.into();
        let mut chars = name.chars();
        let valid = name.len() <= 64
            && chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if valid {
            Ok(Self(name))
        } else {
            Err(SpecError::BadName(name))
        }
    }

    /// A name the host composes for a plugin's tool, such as Triggerfish's
    /// `plugin_<plugin>_<tool>`: `^[a-z][a-zA-Z0-9_-]{0,63}$`. Every model provider accepts
    /// these characters; plugins never choose such names themselves.
    pub fn namespaced(name: impl Into<String>) -> Result<Self, SpecError> {
        let name = name.into();
        let mut chars = name.chars();
        let valid = name.len() <= 64
            && chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if valid {
            Ok(Self(name))
        } else {
            Err(SpecError::BadName(name))
        }
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ToolName::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a description: 1–1,024 characters, no control, bidi or zero-width characters.
pub fn check_description(description: &str) -> Result<(), SpecError> {
    if description.trim().is_empty() {
        return Err(SpecError::EmptyDescription);
    }
    if let Some(hidden) = crate::hidden::find_hidden(description) {
        return Err(SpecError::HiddenCharacter(hidden.c as u32, hidden.at));
    }
    let count = description.chars().count();
    if count > MAX_DESCRIPTION_CHARS {
        return Err(SpecError::LongDescription(count));
    }
    Ok(())
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Checks an input schema: an object schema, ≤ 8 KiB serialised, nesting ≤ 8, no hidden
/// character in any key or string, and a valid JSON Schema (its meta-schema accepts it and it
/// compiles).
pub fn check_schema(schema: &Value) -> Result<(), SpecError> {
    check_schema_bounds(schema)?;
    if let Err(e) = jsonschema::validator_for(schema) {
        return Err(SpecError::SchemaInvalid(crate::hidden::escape_hidden(
            &e.to_string(),
        )));
    }
    Ok(())
}

/// Every check of [`check_schema`] but compiling the schema.
fn check_schema_bounds(schema: &Value) -> Result<(), SpecError> {
    let Some(root) = schema.as_object() else {
        return Err(SpecError::SchemaNotObject);
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SpecError::SchemaNotObject);
    }
    let size = serde_json::to_vec(schema)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > MAX_SCHEMA_BYTES {
        return Err(SpecError::SchemaTooLarge(size));
    }
    let d = depth(schema);
    if d > MAX_SCHEMA_DEPTH {
        return Err(SpecError::SchemaTooDeep(d));
    }
    check_schema_strings(schema, &mut String::new())
}

/// Every key and string in a schema (property names, descriptions, titles, enum values,
/// defaults, examples) reaches the model: none may hold a hidden character.
fn check_schema_strings(value: &Value, path: &mut String) -> Result<(), SpecError> {
    let hidden_at = |text: &str, path: &str| {
        crate::hidden::find_hidden(text).map(|h| SpecError::HiddenInSchema {
            path: if path.is_empty() {
                "/".to_owned()
            } else {
                path.to_owned()
            },
            code: h.c as u32,
            name: h.name,
        })
    };
    match value {
        Value::String(text) => hidden_at(text, path).map_or(Ok(()), Err),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                check_schema_strings(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(&crate::hidden::escape_hidden(key));
                if let Some(e) = hidden_at(key, path) {
                    return Err(e);
                }
                check_schema_strings(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Everything the host and the model know about a tool. Construct with [`ToolSpec::builder`],
/// which enforces every bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: ToolName,
    /// What it does, for the model and for review.
    pub description: String,
    /// JSON Schema of its input.
    pub input_schema: Value,
    /// Its risk.
    pub risk: Risk,
    /// The capabilities it uses, each judged by policy on every call.
    pub capabilities: Vec<Capability>,
    /// The classification of what it returns.
    pub classification: Classification,
}

impl ToolSpec {
    /// Starts a spec; `build` checks it.
    pub fn builder(name: ToolName, description: impl Into<String>) -> ToolSpecBuilder {
        ToolSpecBuilder {
            spec: ToolSpec {
                name,
                description: description.into(),
                input_schema: serde_json::json!({"type": "object"}),
                risk: Risk::Read,
                capabilities: Vec::new(),
                classification: Classification::Public,
            },
        }
    }
}

/// Builds a checked [`ToolSpec`].
#[derive(Debug)]
pub struct ToolSpecBuilder {
    spec: ToolSpec,
}

impl ToolSpecBuilder {
    /// Sets the input schema.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.spec.input_schema = schema;
        self
    }

    /// Sets the risk.
    pub fn risk(mut self, risk: Risk) -> Self {
        self.spec.risk = risk;
        self
    }

    /// Adds a capability.
    pub fn capability(mut self, capability: Capability) -> Self {
        if !self.spec.capabilities.contains(&capability) {
            self.spec.capabilities.push(capability);
        }
        self
    }

    /// Sets the classification of results.
    pub fn classification(mut self, classification: Classification) -> Self {
        self.spec.classification = classification;
        self
    }

    /// Checks every bound and returns the spec.
    pub fn build(self) -> Result<ToolSpec, SpecError> {
        check_description(&self.spec.description)?;
        check_schema(&self.spec.input_schema)?;
        Ok(self.spec)
    }

    /// For Bosun's built-in tools, whose schemas are constants of the source: every check of
    /// [`ToolSpecBuilder::build`] except compiling the schema. Building the meta-schema's
    /// validator and compiling seven schemas was the largest single item of a command's start-up
    /// (about 8 % of `bosun tools call read_file`). Each built-in's schema is still compiled
    /// with [`check_schema`] by the built-ins' tests, and by the chokepoint when the tool is
    /// first called; a plugin's or server's tool always goes through [`ToolSpecBuilder::build`].
    pub fn build_builtin(self) -> Result<ToolSpec, SpecError> {
        check_description(&self.spec.description)?;
        check_schema_bounds(&self.spec.input_schema)?;
        Ok(self.spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_pattern() {
        assert!(ToolName::new("read_file").is_ok());
        assert!(ToolName::new("a").is_ok());
        assert!(ToolName::new("a".repeat(64)).is_ok());
        for bad in ["", "Read", "1abc", "a-b", "a.b", "é", &"a".repeat(65)] {
            assert!(ToolName::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn descriptions_refuse_hidden_characters() {
        assert_eq!(check_description(""), Err(SpecError::EmptyDescription));
        assert_eq!(check_description("  "), Err(SpecError::EmptyDescription));
        assert!(check_description("Reads a file.\nSecond line.").is_ok());
        assert_eq!(
            check_description("a\u{200B}b"),
            Err(SpecError::HiddenCharacter(0x200B, 1))
        );
        assert_eq!(
            check_description("x\u{202E}y"),
            Err(SpecError::HiddenCharacter(0x202E, 1))
        );
        assert_eq!(
            check_description("\u{7}"),
            Err(SpecError::HiddenCharacter(7, 0))
        );
        assert_eq!(check_description(&"é".repeat(1024)), Ok(()));
        assert_eq!(
            check_description(&"é".repeat(1025)),
            Err(SpecError::LongDescription(1025))
        );
    }

    #[test]
    fn schemas_are_bounded() {
        let name = || ToolName::new("t").unwrap();
        let ok = ToolSpec::builder(name(), "d")
            .input_schema(json!({"type": "object"}))
            .build();
        assert!(ok.is_ok());
        let big = json!({"type": "object", "description": "x".repeat(9000)});
        assert!(matches!(
            ToolSpec::builder(name(), "d").input_schema(big).build(),
            Err(SpecError::SchemaTooLarge(_))
        ));
        let mut deep = json!({"type": "string"});
        for _ in 0..8 {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        assert!(matches!(
            ToolSpec::builder(name(), "d").input_schema(deep).build(),
            Err(SpecError::SchemaTooDeep(_))
        ));
        assert_eq!(
            ToolSpec::builder(name(), "d")
                .input_schema(json!({"type": "string"}))
                .build(),
            Err(SpecError::SchemaNotObject)
        );
    }
}
