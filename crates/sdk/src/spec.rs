//! What a plugin declares about itself: its name, its tools, their input schemas, risks and
//! capabilities. A plugin writes this once (in `src/spec.rs`, shared by its `build.rs` and its
//! library); the build script serialises it into the metadata JSON that ends up in the
//! component's `bosun-plugin-metadata` section (docs/plugins.md, `metadata_version` 1).
//!
//! This module only describes. The host is the authority on every bound (name patterns,
//! description characters, schema size and depth, shadowing of built-ins) and refuses a plugin
//! that breaks one; the checks here are the structural ones a build can catch without it.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The WIT package version this SDK builds against (`bosun:plugin@1.0.0`).
pub const API_VERSION: &str = "1.0.0";

/// The metadata format this SDK writes.
pub const METADATA_VERSION: u32 = 1;

/// The custom section that carries the metadata.
pub const METADATA_SECTION: &str = "bosun-plugin-metadata";

/// The largest metadata document the host accepts, in bytes.
pub const MAX_METADATA_BYTES: usize = 256 * 1024;

/// The largest prompt contribution the host accepts, in bytes.
pub const MAX_PROMPT_BYTES: usize = 32 * 1024;

/// Why a spec could not be turned into metadata.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    /// Two tools share a name.
    #[error("tool `{0}` is declared twice: give each tool its own name")]
    DuplicateTool(String),
    /// The plugin declares no tools.
    #[error("the plugin declares no tools: add at least one with PluginSpec::tool")]
    NoTools,
    /// A JSON Pointer that does not start with `/`.
    #[error("tool `{tool}`: `{pointer}` is not a JSON Pointer into the input: start it with `/`")]
    BadPointer {
        /// The tool.
        tool: String,
        /// The pointer as written.
        pointer: String,
    },
    /// The prompt is over the host's bound.
    #[error("the prompt is {0} bytes: keep it within 32768")]
    PromptTooLong(usize),
    /// The metadata is over the host's bound.
    #[error("the metadata is {0} bytes serialised: keep it within 262144")]
    MetadataTooLarge(usize),
    /// Serialisation failed (cannot happen for the types here, but is not hidden).
    #[error("serialising the metadata: {0}")]
    Json(String),
}

/// What kind of harm a tool can do; the permission mode's defaults follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// How sensitive a tool's output is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Classification {
    /// Anyone may see it (the default).
    #[default]
    Public,
    /// Inside the organisation.
    Internal,
    /// A need-to-know audience.
    Confidential,
    /// The most sensitive.
    Restricted,
}

/// A capability a tool uses beyond its input, with its scope. Policy judges each one on every
/// call with the concrete host or path of that call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capability {
    /// `fs.read`, `fs.write`, `net.http`, `process.spawn`, `model.call` or `secret.<name>`.
    pub capability: String,
    /// `net.http`: fixed hosts the tool reaches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// `net.http`: a JSON Pointer to a URL in the input whose host the call reaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_from_input: Option<String>,
    /// `net.http`: a key of the plugin's config table whose value (a URL or host, or a list of
    /// them) names the hosts the tool reaches: for endpoints the user configures, unknown when
    /// the plugin is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts_from_config: Option<String>,
    /// `fs.read` / `fs.write`: a JSON Pointer to a workspace-relative path in the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_from_input: Option<String>,
}

impl Capability {
    /// A capability by name, unscoped.
    pub fn named(capability: impl Into<String>) -> Self {
        Self {
            capability: capability.into(),
            hosts: Vec::new(),
            host_from_input: None,
            hosts_from_config: None,
            path_from_input: None,
        }
    }

    /// `net.http`; scope it with [`host`](Self::host), [`host_from_input`](Self::host_from_input)
    /// or [`hosts_from_config`](Self::hosts_from_config): the sandbox reaches no other host.
    pub fn net_http() -> Self {
        Self::named("net.http")
    }

    /// `fs.read`; the workspace is preopened read-only at `/workspace`.
    pub fn fs_read() -> Self {
        Self::named("fs.read")
    }

    /// `fs.write`; the workspace is preopened read-write at `/workspace`.
    pub fn fs_write() -> Self {
        Self::named("fs.write")
    }

    /// `model.call`.
    pub fn model_call() -> Self {
        Self::named("model.call")
    }

    /// `process.spawn`.
    pub fn process_spawn() -> Self {
        Self::named("process.spawn")
    }

    /// `secret.<name>`.
    pub fn secret(name: &str) -> Self {
        Self::named(format!("secret.{name}"))
    }

    /// Adds a fixed host.
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.hosts.push(host.into());
        self
    }

    /// Takes the host from the URL at this JSON Pointer in the input, e.g. `/url`.
    pub fn host_from_input(mut self, pointer: impl Into<String>) -> Self {
        self.host_from_input = Some(pointer.into());
        self
    }

    /// Takes the hosts from this key of the plugin's config table (a URL or host, or a list).
    pub fn hosts_from_config(mut self, key: impl Into<String>) -> Self {
        self.hosts_from_config = Some(key.into());
        self
    }

    /// Takes the workspace-relative path from this JSON Pointer in the input, e.g. `/path`.
    pub fn path_from_input(mut self, pointer: impl Into<String>) -> Self {
        self.path_from_input = Some(pointer.into());
        self
    }
}

/// One tool as the metadata declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// `^[a-z][a-z0-9_]{0,63}$`, not a built-in's name.
    pub name: String,
    /// 1–1,024 characters, no control, bidi or zero-width characters.
    pub description: String,
    /// JSON Schema of the input (`"type": "object"`, ≤ 8 KiB, nesting ≤ 8).
    pub input_schema: Value,
    /// Its risk.
    pub risk: Risk,
    /// The classification of its output.
    pub classification: Classification,
    /// What it reaches beyond its input.
    pub capabilities: Vec<Capability>,
}

impl ToolSpec {
    /// A tool whose input is `I`; the schema is derived from `I`'s `JsonSchema` (as it
    /// deserialises). Risk defaults to `read`, classification to `PUBLIC`, no capabilities.
    pub fn new<I: JsonSchema>(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self::with_input_schema(name, description, schema_for::<I>())
    }

    /// A tool with a schema written by hand.
    pub fn with_input_schema(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            risk: Risk::Read,
            classification: Classification::Public,
            capabilities: Vec::new(),
        }
    }

    /// Sets the risk.
    pub fn risk(mut self, risk: Risk) -> Self {
        self.risk = risk;
        self
    }

    /// Sets the classification of the output.
    pub fn classification(mut self, classification: Classification) -> Self {
        self.classification = classification;
        self
    }

    /// Adds a capability.
    pub fn capability(mut self, capability: Capability) -> Self {
        self.capabilities.push(capability);
        self
    }
}

/// The whole plugin as the metadata declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginSpec {
    /// `^[a-z][a-z0-9-]{0,63}$`; usually `env!("CARGO_PKG_NAME")`.
    pub name: String,
    /// Semver; usually `env!("CARGO_PKG_VERSION")`.
    pub version: String,
    /// What the plugin is for.
    pub description: String,
    /// Text added to the system prompt, labelled with the plugin (≤ 32 KiB).
    pub prompt: Option<String>,
    /// Its tools.
    pub tools: Vec<ToolSpec>,
}

impl PluginSpec {
    /// A plugin with no tools yet.
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            description: description.into(),
            prompt: None,
            tools: Vec::new(),
        }
    }

    /// Sets the prompt contribution.
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: ToolSpec) -> Self {
        self.tools.push(tool);
        self
    }

    /// The metadata document, after the structural checks.
    pub fn metadata(&self) -> Result<Value, SpecError> {
        self.check()?;
        Ok(self.metadata_unchecked())
    }

    /// The metadata document as is, for test programs that must carry broken metadata.
    pub fn metadata_unchecked(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("metadata_version".into(), METADATA_VERSION.into());
        doc.insert("api_version".into(), API_VERSION.into());
        doc.insert("name".into(), self.name.clone().into());
        doc.insert("version".into(), self.version.clone().into());
        doc.insert("description".into(), self.description.clone().into());
        if let Some(prompt) = &self.prompt {
            doc.insert("prompt".into(), prompt.clone().into());
        }
        let tools = self
            .tools
            .iter()
            .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
            .collect();
        doc.insert("tools".into(), Value::Array(tools));
        Value::Object(doc)
    }

    /// The metadata serialised, checked against the bounds this side can see.
    pub fn metadata_json(&self) -> Result<String, SpecError> {
        let json = serde_json::to_string_pretty(&self.metadata()?)
            .map_err(|e| SpecError::Json(e.to_string()))?;
        if json.len() > MAX_METADATA_BYTES {
            return Err(SpecError::MetadataTooLarge(json.len()));
        }
        Ok(json)
    }

    fn check(&self) -> Result<(), SpecError> {
        if self.tools.is_empty() {
            return Err(SpecError::NoTools);
        }
        let mut seen = BTreeSet::new();
        for tool in &self.tools {
            if !seen.insert(tool.name.as_str()) {
                return Err(SpecError::DuplicateTool(tool.name.clone()));
            }
            for capability in &tool.capabilities {
                let pointers = [&capability.host_from_input, &capability.path_from_input];
                for pointer in pointers.into_iter().flatten() {
                    if !pointer.starts_with('/') {
                        return Err(SpecError::BadPointer {
                            tool: tool.name.clone(),
                            pointer: pointer.clone(),
                        });
                    }
                }
            }
        }
        if let Some(prompt) = &self.prompt
            && prompt.len() > MAX_PROMPT_BYTES
        {
            return Err(SpecError::PromptTooLong(prompt.len()));
        }
        Ok(())
    }
}

/// The input of a tool that takes none: `{}` and nothing else.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

/// The input schema of `I` as the metadata carries it: JSON Schema 2020-12 for what `I`
/// deserialises. The root loses `$schema`, `title` and `description` (the tool's own
/// description is what the model reads; the host validates with 2020-12 regardless) and always
/// has `properties`, which some model APIs require of an object.
pub fn schema_for<I: JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_deserialize()
        // Models read inline schemas best; only recursive types keep `$defs`.
        .with(|settings| settings.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<I>();
    let mut value = schema.to_value();
    if let Some(root) = value.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
        root.remove("description");
        if root.get("type").and_then(Value::as_str) == Some("object") {
            root.entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Greets someone.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Greet {
        /// Who to greet.
        name: String,
        /// How many times.
        times: Option<u32>,
    }

    #[test]
    fn metadata_follows_the_documented_shape() {
        let spec = PluginSpec::new("hello", "0.1.0", "Says hello.").tool(
            ToolSpec::new::<Greet>("greet", "Greets someone.")
                .capability(Capability::net_http().host_from_input("/url")),
        );
        let doc = spec.metadata().unwrap();
        assert_eq!(doc["metadata_version"], 1);
        assert_eq!(doc["api_version"], "1.0.0");
        assert_eq!(doc["name"], "hello");
        assert!(doc.get("prompt").is_none());
        let tool = &doc["tools"][0];
        assert_eq!(tool["name"], "greet");
        assert_eq!(tool["risk"], "read");
        assert_eq!(tool["classification"], "PUBLIC");
        assert_eq!(
            tool["capabilities"],
            json!([{"capability": "net.http", "host_from_input": "/url"}])
        );
        let schema = &tool["input_schema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["name"]));
        assert_eq!(schema["properties"]["name"]["description"], "Who to greet.");
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    }

    #[test]
    fn no_input_is_an_empty_closed_object() {
        assert_eq!(
            schema_for::<NoInput>(),
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }

    #[test]
    fn structural_mistakes_are_refused() {
        let tool = || ToolSpec::with_input_schema("t", "d", json!({"type": "object"}));
        let plugin = || PluginSpec::new("p", "0.1.0", "d");
        assert_eq!(plugin().metadata(), Err(SpecError::NoTools));
        assert_eq!(
            plugin().tool(tool()).tool(tool()).metadata(),
            Err(SpecError::DuplicateTool("t".into()))
        );
        assert!(matches!(
            plugin()
                .tool(tool().capability(Capability::fs_read().path_from_input("path")))
                .metadata(),
            Err(SpecError::BadPointer { .. })
        ));
        assert_eq!(
            plugin().tool(tool()).prompt("x".repeat(40_000)).metadata(),
            Err(SpecError::PromptTooLong(40_000))
        );
    }
}
