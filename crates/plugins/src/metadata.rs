//! Plugin metadata: the `bosun-plugin-metadata` custom section of a component, found with a
//! WebAssembly parser and checked against the tool contract of docs/plugins.md.
//!
//! This module reads bytes; it never compiles, instantiates or runs them. A plugin that breaks
//! any rule is refused whole with the reason, never offered in a thinned form.

use std::collections::BTreeSet;

use bosun_core::{
    Capability, Classification, Risk, SpecError, ToolName, ToolSpec, check_description,
    escape_hidden,
};
use semver::Version;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasmparser::{Chunk, Encoding, Parser, Payload};

use crate::PluginError;

/// Name of the custom section that holds a plugin's metadata.
pub const SECTION_NAME: &str = "bosun-plugin-metadata";
/// Largest metadata section, in bytes.
pub const MAX_METADATA_BYTES: usize = 256 * 1024;
/// Largest prompt contribution, in bytes.
pub const MAX_PROMPT_BYTES: usize = 32 * 1024;
/// Most tools one plugin may declare.
pub const MAX_TOOLS: usize = 64;
/// The metadata format version this host reads.
pub const METADATA_VERSION: u32 = 1;
/// The newest WIT API (`bosun:plugin`) this host implements; every 1.x up to it is accepted.
pub const API_VERSION: Version = Version::new(1, 0, 0);
/// Longest JSON Pointer or config key in a capability scope.
const MAX_SCOPE_REF_BYTES: usize = 256;

/// The metadata document as a plugin writes it. Unknown fields are refused at every level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginMetadata {
    /// Always 1.
    pub metadata_version: u32,
    /// The `bosun:plugin` WIT version the plugin was built against.
    pub api_version: String,
    /// The plugin's own name, `^[a-z][a-z0-9-]{0,63}$`.
    pub name: String,
    /// The plugin's semantic version.
    pub version: String,
    /// What the plugin is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Text for the system prompt, labelled with the plugin (≤ 32 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The tools it serves.
    pub tools: Vec<ToolMetadata>,
}

/// One tool as declared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolMetadata {
    /// `^[a-z][a-z0-9_]{0,63}$`, not a built-in's name.
    pub name: String,
    /// 1–1,024 characters, nothing hidden.
    pub description: String,
    /// A JSON Schema object, ≤ 8 KiB, nesting ≤ 8.
    pub input_schema: Value,
    /// What kind of harm it can do.
    pub risk: Risk,
    /// Classification of its results.
    #[serde(default)]
    pub classification: Classification,
    /// What it reaches beyond its input.
    #[serde(default)]
    pub capabilities: Vec<CapabilityDecl>,
}

/// One capability a tool declares, with its optional scope. To add a scope field: add it here,
/// give it a [`ScopeField`] row in [`CapabilityDecl::scope_fields`], and say in [`ScopeField`]
/// which capabilities it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityDecl {
    /// Which capability.
    pub capability: Capability,
    /// `net.http`: fixed hosts the tool reaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
    /// `net.http`: JSON Pointer to a URL in the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_from_input: Option<String>,
    /// `fs.read` / `fs.write`: JSON Pointer to a workspace-relative path in the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_from_input: Option<String>,
    /// `net.http`: key of `[plugins.<local>.config]` whose value (a URL or host, or a list of
    /// them) names the hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts_from_config: Option<String>,
}

/// A scope field of a capability entry, and what it applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeField {
    /// `hosts`.
    Hosts,
    /// `host_from_input`.
    HostFromInput,
    /// `path_from_input`.
    PathFromInput,
    /// `hosts_from_config`.
    HostsFromConfig,
}

impl ScopeField {
    /// The field's name in the metadata.
    pub fn name(self) -> &'static str {
        match self {
            Self::Hosts => "hosts",
            Self::HostFromInput => "host_from_input",
            Self::PathFromInput => "path_from_input",
            Self::HostsFromConfig => "hosts_from_config",
        }
    }

    /// Whether the field scopes `capability`.
    pub fn applies_to(self, capability: &Capability) -> bool {
        match self {
            Self::Hosts | Self::HostFromInput | Self::HostsFromConfig => {
                *capability == Capability::NetHttp
            }
            Self::PathFromInput => {
                matches!(capability, Capability::FsRead | Capability::FsWrite)
            }
        }
    }
}

impl CapabilityDecl {
    /// The entry without any scope.
    pub fn bare(capability: Capability) -> Self {
        Self {
            capability,
            hosts: None,
            host_from_input: None,
            path_from_input: None,
            hosts_from_config: None,
        }
    }

    /// Every scope field that is set, with the canonical scope text of each value:
    /// a host as written, `<from input POINTER>` or `<from config KEY>`.
    pub fn scope_fields(&self) -> Vec<(ScopeField, Vec<String>)> {
        let mut fields = Vec::new();
        if let Some(hosts) = &self.hosts {
            fields.push((ScopeField::Hosts, hosts.clone()));
        }
        if let Some(p) = &self.host_from_input {
            fields.push((ScopeField::HostFromInput, vec![format!("<from input {p}>")]));
        }
        if let Some(p) = &self.path_from_input {
            fields.push((ScopeField::PathFromInput, vec![format!("<from input {p}>")]));
        }
        if let Some(k) = &self.hosts_from_config {
            fields.push((
                ScopeField::HostsFromConfig,
                vec![format!("<from config {k}>")],
            ));
        }
        fields
    }

    /// The canonical grant strings this entry asks for, as trust records and reviews show
    /// them: `fs.read`, `net.http:api.example.com`, `net.http:<from input /url>`.
    pub fn grants(&self) -> Vec<String> {
        let fields = self.scope_fields();
        if fields.is_empty() {
            return vec![self.capability.to_string()];
        }
        fields
            .into_iter()
            .flat_map(|(_, scopes)| scopes)
            .map(|scope| format!("{}:{scope}", self.capability))
            .collect()
    }

    fn check(&self, tool: &str) -> Result<(), PluginError> {
        let bad = |problem: String| PluginError::BadCapability {
            tool: tool.to_owned(),
            capability: self.capability.to_string(),
            problem,
        };
        let fields = self.scope_fields();
        for (field, _) in &fields {
            if !field.applies_to(&self.capability) {
                return Err(bad(format!(
                    "`{}` does not scope this capability: remove it",
                    field.name()
                )));
            }
        }
        if self.capability == Capability::NetHttp && fields.is_empty() {
            return Err(bad(
                "name the hosts it reaches with `hosts`, `host_from_input` or `hosts_from_config`: the sandbox reaches no host that is not named"
                    .to_owned(),
            ));
        }
        if let Some(hosts) = &self.hosts {
            if hosts.is_empty() {
                return Err(bad(
                    "`hosts` is empty: list at least one host or remove it".to_owned()
                ));
            }
            for host in hosts {
                check_host(host).map_err(|problem| bad(format!("host {host:?} {problem}")))?;
            }
        }
        for (field, pointer) in [
            (ScopeField::HostFromInput, &self.host_from_input),
            (ScopeField::PathFromInput, &self.path_from_input),
        ] {
            if let Some(pointer) = pointer {
                check_pointer(pointer)
                    .map_err(|problem| bad(format!("`{}` {pointer:?} {problem}", field.name())))?;
            }
        }
        if let Some(key) = &self.hosts_from_config
            && !is_config_key(key)
        {
            return Err(bad(format!(
                "`hosts_from_config` {key:?} is not a config key: use 1-64 characters A-Z, a-z, 0-9, _ and -"
            )));
        }
        Ok(())
    }
}

/// A host as a capability scope: a lowercase DNS name or IPv4 address, without scheme, port or
/// path, so that what policy judges is what the sandbox connects to.
fn check_host(host: &str) -> Result<(), &'static str> {
    if !bosun_core::is_host_name(host) {
        return Err(
            "is not a host name: write a lowercase DNS name or IPv4 address without scheme, port or path",
        );
    }
    Ok(())
}

/// A JSON Pointer (RFC 6901) into the tool's input: starts with `/`, `~` only as `~0` or `~1`.
fn check_pointer(pointer: &str) -> Result<(), &'static str> {
    if !pointer.starts_with('/') {
        return Err("is not a JSON Pointer: start it with `/`, e.g. \"/url\"");
    }
    if pointer.len() > MAX_SCOPE_REF_BYTES {
        return Err("is longer than 256 bytes: shorten it");
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c.is_control() {
            return Err("holds a control character: remove it");
        }
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err("has a `~` that is not `~0` or `~1`: escape `~` as ~0 and `/` as ~1");
        }
    }
    Ok(())
}

fn is_config_key(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn is_property_name(name: &str) -> bool {
    is_config_key(name)
}

/// A checked tool of a plugin: its spec and its scoped capabilities.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginTool {
    /// The spec, built (and bounded) by `bosun_core`.
    pub spec: ToolSpec,
    /// The declared capabilities with their scopes, in declaration order.
    pub capabilities: Vec<CapabilityDecl>,
}

impl PluginTool {
    /// The canonical grant strings of every capability the tool declares.
    pub fn grants(&self) -> BTreeSet<String> {
        self.capabilities
            .iter()
            .flat_map(CapabilityDecl::grants)
            .collect()
    }
}

/// A plugin's metadata after every check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Manifest {
    /// The plugin's own name (not its local name).
    pub name: String,
    /// Its version.
    pub version: Version,
    /// The WIT API version it was built against.
    pub api_version: Version,
    /// What it is for.
    pub description: Option<String>,
    /// Its prompt contribution.
    pub prompt: Option<String>,
    /// Its tools, in declaration order.
    pub tools: Vec<PluginTool>,
}

impl Manifest {
    /// Reads and checks the metadata of a component's bytes. Nothing is compiled or run.
    /// `builtins` are the names of the host's built-in tools, which no plugin may shadow.
    pub fn from_component(bytes: &[u8], builtins: &[&str]) -> Result<Self, PluginError> {
        Self::from_metadata(PluginMetadata::from_component(bytes)?, builtins)
    }

    /// Checks parsed metadata against every rule.
    pub fn from_metadata(meta: PluginMetadata, builtins: &[&str]) -> Result<Self, PluginError> {
        if meta.metadata_version != METADATA_VERSION {
            return Err(PluginError::MetadataVersion(meta.metadata_version));
        }
        let api_version = check_api_version(&meta.api_version)?;
        check_name_characters(&meta.name).map_err(|problem| PluginError::PluginNameCharacters {
            name: escape_name(&meta.name),
            problem,
        })?;
        if !is_plugin_name(&meta.name) {
            return Err(PluginError::BadPluginName(escape_hidden(&meta.name)));
        }
        let version = Version::parse(&meta.version).map_err(|e| PluginError::BadVersion {
            version: escape_hidden(&meta.version),
            message: escape_hidden(&e.to_string()),
        })?;
        if let Some(description) = &meta.description {
            check_description(description).map_err(PluginError::PluginDescription)?;
        }
        if let Some(prompt) = &meta.prompt {
            check_prompt(prompt)?;
        }
        if meta.tools.len() > MAX_TOOLS {
            return Err(PluginError::TooManyTools(meta.tools.len()));
        }
        // Shadowing is checked for every tool before any other tool rule, so that a plugin
        // which shadows a built-in is reported as such whatever else is wrong with it.
        if let Some(tool) = meta
            .tools
            .iter()
            .find(|t| builtins.contains(&t.name.as_str()))
        {
            return Err(PluginError::ShadowsBuiltin {
                plugin: meta.name.clone(),
                tool: tool.name.clone(),
            });
        }
        let mut seen = BTreeSet::new();
        let mut tools = Vec::with_capacity(meta.tools.len());
        for tool in meta.tools {
            if !seen.insert(tool.name.clone()) {
                return Err(PluginError::DuplicateTool(escape_hidden(&tool.name)));
            }
            tools.push(check_tool(tool)?);
        }
        Ok(Self {
            name: meta.name,
            version,
            api_version,
            description: meta.description,
            prompt: meta.prompt,
            tools,
        })
    }

    /// The union of the canonical grant strings of every tool.
    pub fn grants(&self) -> BTreeSet<String> {
        self.tools.iter().flat_map(PluginTool::grants).collect()
    }

    /// The tools' names.
    pub fn tool_names(&self) -> BTreeSet<String> {
        self.tools
            .iter()
            .map(|t| t.spec.name.as_str().to_owned())
            .collect()
    }
}

impl PluginMetadata {
    /// Finds the metadata section in a component's bytes and parses its JSON strictly; checks
    /// only the structure (see [`Manifest::from_metadata`] for the rules).
    pub fn from_component(bytes: &[u8]) -> Result<Self, PluginError> {
        Self::from_json(metadata_section(bytes)?)
    }

    /// Parses the section's contents: UTF-8 JSON of at most 256 KiB, no unknown fields.
    pub fn from_json(json: &[u8]) -> Result<Self, PluginError> {
        if json.len() > MAX_METADATA_BYTES {
            return Err(PluginError::MetadataTooLarge(json.len()));
        }
        serde_json::from_slice(json).map_err(|e| PluginError::MetadataJson {
            line: e.line(),
            column: e.column(),
            message: escape_hidden(&json_message(&e)),
        })
    }
}

/// serde_json appends " at line L column C" to its messages; the error carries those itself.
pub(crate) fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

/// Returns the contents of the one `bosun-plugin-metadata` custom section, at the component's
/// top level or inside any nested core module or component (wasm-component-ld keeps the guest
/// module's custom sections inside that module). Function bodies are skipped unread.
pub fn metadata_section(bytes: &[u8]) -> Result<&[u8], PluginError> {
    let truncated = || PluginError::NotWasm("a section runs past the end of the file".to_owned());
    let mut parser = Parser::new(0);
    let mut outer: Vec<Parser> = Vec::new();
    let mut data = bytes;
    let mut found: Option<&[u8]> = None;
    let mut count = 0usize;
    loop {
        let (payload, consumed) = match parser.parse(data, true) {
            Ok(Chunk::Parsed { payload, consumed }) => (payload, consumed),
            Ok(Chunk::NeedMoreData(_)) => return Err(truncated()),
            Err(e) => return Err(PluginError::NotWasm(e.to_string())),
        };
        data = data.get(consumed..).ok_or_else(truncated)?;
        match payload {
            Payload::Version { encoding, .. }
                if outer.is_empty() && encoding != Encoding::Component =>
            {
                return Err(PluginError::NotComponent);
            }
            Payload::ModuleSection { parser: inner, .. }
            | Payload::ComponentSection { parser: inner, .. } => {
                outer.push(std::mem::replace(&mut parser, inner));
            }
            Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                data = data.get(size as usize..).ok_or_else(truncated)?;
            }
            Payload::CustomSection(section) if section.name() == SECTION_NAME => {
                count += 1;
                found.get_or_insert(section.data());
            }
            Payload::End(_) => match outer.pop() {
                Some(p) => parser = p,
                None => break,
            },
            _ => {}
        }
    }
    match (found, count) {
        (Some(section), 1) => Ok(section),
        (None, _) => Err(PluginError::NoMetadata),
        (Some(_), n) => Err(PluginError::DuplicateMetadata(n)),
    }
}

/// The one check every format (native, Forge, Triggerfish, Chock) applies to a plugin's own
/// name before anything shows it: a character that drives a terminal or hides text — C0 and C1
/// controls (tab and newline included), DEL, bidi overrides and isolates, zero-width
/// characters — is refused and named, so the refusal says what to remove. Formats with a
/// stricter name pattern check it after this one.
pub fn check_name_characters(name: &str) -> Result<(), NameCharacterError> {
    let Some((at, c)) = name
        .chars()
        .enumerate()
        .find(|&(_, c)| c.is_control() || bosun_core::is_hidden_char(c))
    else {
        return Ok(());
    };
    Err(NameCharacterError {
        code: c as u32,
        what: bosun_core::hidden::hidden_name(c).unwrap_or("CONTROL CHARACTER"),
        at,
    })
}

/// A plugin's name holds a character that drives or hides text on a terminal
/// ([`check_name_characters`]); the message says which, where, and to remove it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "holds U+{code:04X} ({what}) at character {at}, which would drive or hide text on a terminal: remove it"
)]
pub struct NameCharacterError {
    /// The character's code point.
    pub code: u32,
    /// Its Unicode name, or `CONTROL CHARACTER`.
    pub what: &'static str,
    /// Its position in the name, in characters from 0.
    pub at: usize,
}

/// A plugin's own name as a refusal shows it: on one line, every control or hidden character
/// (newline included) as a visible `\u{…}` escape.
pub fn escape_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_control() || bosun_core::is_hidden_char(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `^[a-z][a-z0-9-]{0,63}$`.
pub fn is_plugin_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn check_api_version(text: &str) -> Result<Version, PluginError> {
    let bad = |problem: String| PluginError::ApiVersion {
        version: escape_hidden(text),
        problem: escape_hidden(&problem),
    };
    let version = Version::parse(text)
        .map_err(|e| bad(format!("is not a semantic version ({e}): use e.g. 1.0.0")))?;
    if version.major != API_VERSION.major {
        return Err(bad(format!(
            "is not supported: this Bosun implements bosun:plugin {API_VERSION}; rebuild the plugin against a 1.x SDK"
        )));
    }
    if (version.minor, version.patch) > (API_VERSION.minor, API_VERSION.patch) {
        return Err(bad(format!(
            "is newer than this Bosun's bosun:plugin {API_VERSION}: update Bosun"
        )));
    }
    Ok(version)
}

fn check_prompt(prompt: &str) -> Result<(), PluginError> {
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(PluginError::PromptTooLarge(prompt.len()));
    }
    match bosun_core::find_hidden(prompt) {
        Some(hidden) => Err(PluginError::PromptHiddenCharacter {
            code: hidden.c as u32,
            at: hidden.at,
        }),
        None => Ok(()),
    }
}

fn check_tool(tool: ToolMetadata) -> Result<PluginTool, PluginError> {
    // The name is the plugin's text and may not be valid yet: show it escaped.
    let spec_error = |source| PluginError::Tool {
        tool: escape_hidden(&tool.name),
        source: match source {
            SpecError::BadName(name) => SpecError::BadName(escape_hidden(&name)),
            other => other,
        },
    };
    let name = ToolName::new(tool.name.clone()).map_err(spec_error)?;
    let mut builder = ToolSpec::builder(name, tool.description.clone())
        .input_schema(tool.input_schema.clone())
        .risk(tool.risk)
        .classification(tool.classification);
    for decl in &tool.capabilities {
        decl.check(&tool.name)?;
        builder = builder.capability(decl.capability.clone());
    }
    let spec = builder.build().map_err(spec_error)?;
    // The core bounds (size, depth) hold now, so this walk is shallow.
    check_property_names(&spec.input_schema, "", &tool.name)?;
    Ok(PluginTool {
        spec,
        capabilities: tool.capabilities,
    })
}

/// Keywords whose value is one subschema.
const SUBSCHEMA_KEYWORDS: &[&str] = &[
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names (not property names) to subschemas.
const SUBSCHEMA_MAP_KEYWORDS: &[&str] = &[
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

/// Checks every property name of a schema and of its subschemas against
/// `[A-Za-z0-9_-]{1,64}`, following JSON Schema's keywords rather than every nested object, so
/// that a keyword's own value (an `enum` of objects, say) is not mistaken for properties.
fn check_property_names(schema: &Value, at: &str, tool: &str) -> Result<(), PluginError> {
    let Some(object) = schema.as_object() else {
        return Ok(());
    };
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, sub) in properties {
            let here = format!("{at}/properties/{}", escape_pointer(name));
            if !is_property_name(name) {
                return Err(PluginError::BadPropertyName {
                    tool: tool.to_owned(),
                    name: name.clone(),
                    at: escape_hidden(&here),
                });
            }
            check_property_names(sub, &here, tool)?;
        }
    }
    for keyword in SUBSCHEMA_KEYWORDS {
        if let Some(sub @ Value::Object(_)) = object.get(*keyword) {
            check_property_names(sub, &format!("{at}/{keyword}"), tool)?;
        }
    }
    for keyword in SUBSCHEMA_LIST_KEYWORDS {
        if let Some(Value::Array(subs)) = object.get(*keyword) {
            for (i, sub) in subs.iter().enumerate() {
                check_property_names(sub, &format!("{at}/{keyword}/{i}"), tool)?;
            }
        }
    }
    for keyword in SUBSCHEMA_MAP_KEYWORDS {
        if let Some(Value::Object(subs)) = object.get(*keyword) {
            for (key, sub) in subs {
                let here = format!("{at}/{keyword}/{}", escape_pointer(key));
                check_property_names(sub, &here, tool)?;
            }
        }
    }
    Ok(())
}

fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Plugin names that carry a character driving or hiding text on a terminal, each with the
/// code point the refusal must name: every format's name test runs all of them.
#[cfg(test)]
pub(crate) const HOSTILE_NAMES: [(&str, &str); 10] = [
    ("web\u{1b}[2Jtools", "U+001B"),
    ("web\u{7}", "U+0007"),
    ("web\u{9b}31m", "U+009B"),
    ("web\u{85}", "U+0085"),
    ("web\u{7f}", "U+007F"),
    ("web\ntools", "U+000A"),
    ("web\ttools", "U+0009"),
    ("web\u{202e}sloot", "U+202E"),
    ("web\u{2066}x\u{2069}", "U+2066"),
    ("web\u{200b}tools", "U+200B"),
];

/// Runs `refusal` (a format's reading of a plugin named so, returning its error text) on every
/// one of [`HOSTILE_NAMES`]: each must be refused naming the code point, saying to remove it,
/// and showing no control or hidden character itself.
#[cfg(test)]
pub(crate) fn assert_refuses_hostile_names(refusal: impl Fn(&str) -> String) {
    for (name, code) in HOSTILE_NAMES {
        let message = refusal(name);
        assert!(message.contains(code), "{name:?}: {message}");
        assert!(message.contains("remove it"), "{name:?}: {message}");
        assert!(
            !message
                .chars()
                .any(|c| c.is_control() || bosun_core::is_hidden_char(c)),
            "{name:?}: the refusal shows the name escaped: {message:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_native_plugin_name_with_terminal_controls_is_refused_naming_the_character() {
        assert_refuses_hostile_names(|name| {
            let meta: PluginMetadata = serde_json::from_value(serde_json::json!({
                "metadata_version": 1,
                "api_version": "1.0.0",
                "name": name,
                "version": "0.1.0",
                "tools": [],
            }))
            .expect("the document parses");
            match Manifest::from_metadata(meta, &[]) {
                Ok(m) => panic!("{name:?} accepted: {m:?}"),
                Err(e) => e.to_string(),
            }
        });
    }
}
