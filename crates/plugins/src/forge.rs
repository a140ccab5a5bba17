//! A Forge plugin's `plugin.json` (manifest schema v1, Forge 0.3.1), read without running the
//! plugin and checked by every rule Forge's strict Zod schema and loader apply.
//!
//! ```json
//! {
//!   "schemaVersion": 1,
//!   "apiVersion": "1",
//!   "name": "count-text",
//!   "version": "1.0.0",
//!   "entry": "./index.mjs",
//!   "capabilities": ["tools:register"]
//! }
//! ```
//!
//! - `schemaVersion` is the number 1 and `apiVersion` the string `"1"`; an unsupported version is
//!   refused before any other key is looked at, so a newer manifest says "update Bosun" rather
//!   than "unknown key".
//! - Every other key is checked strictly: an unknown key is an error naming it.
//! - `name` matches `^[a-z][a-z0-9-]{0,63}$` and equals the plugin's directory name (for a user
//!   plugin: the directory's name, not the local name it has in Bosun's config).
//! - `version` and `entry` are trimmed and must not be empty, as Forge's `trim().min(1)`.
//! - `entry` is relative, stays inside the directory both lexically and as a file (Bosun's
//!   snapshot refuses every symbolic link, so "inside after `realpath`" means: the snapshot holds
//!   that exact normalised path; `./index.mjs` is `index.mjs`), is not the directory itself, and
//!   ends in `.js`, `.mjs` or `.cjs`.
//! - `capabilities` is optional (default none), at most 16 entries, each one of Forge's seven;
//!   duplicates are accepted, as by Forge, and kept once.
//!
//! Where Bosun is stricter than Forge: a key written twice is refused (`JSON.parse` keeps the
//! last one silently) and `version` may not hold control, bidi or zero-width characters, which
//! would hide text in the trust review.
//!
//! Errors carry `plugin.json:line:column` where the JSON parser places them and always say what
//! to do.

use std::collections::BTreeSet;
use std::path::Path;

use serde::de::{self, Deserializer, IgnoredAny};
use serde::{Deserialize, Serialize};

use crate::PluginError;
use crate::discovery::FORGE_MANIFEST;
use crate::metadata::{check_name_characters, is_plugin_name};
use crate::source::SourceSnapshot;

/// The `schemaVersion` this host reads.
pub const FORGE_SCHEMA_VERSION: u64 = 1;
/// The `apiVersion` this host provides (Forge's `PLUGIN_API_VERSION`).
pub const FORGE_API_VERSION: &str = "1";
/// Most entries `capabilities` may hold.
pub const MAX_FORGE_CAPABILITIES: usize = 16;
/// Forge's capabilities, sorted.
pub const FORGE_CAPABILITIES: [&str; 7] = [
    "commands:register",
    "events:observe",
    "network:access",
    "policy:restrict",
    "prompt:contribute",
    "subagents:register",
    "tools:register",
];
/// One of Forge's seven capabilities, read once from `plugin.json` (unknown ones are refused
/// there). Written back as Forge spells it only where it crosses to the engine or into trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ForgeCapability {
    /// `commands:register`.
    #[serde(rename = "commands:register")]
    CommandsRegister,
    /// `events:observe`.
    #[serde(rename = "events:observe")]
    EventsObserve,
    /// `network:access`: the plugin may reach the network, each host judged as `net.http`.
    #[serde(rename = "network:access")]
    NetworkAccess,
    /// `policy:restrict`.
    #[serde(rename = "policy:restrict")]
    PolicyRestrict,
    /// `prompt:contribute`.
    #[serde(rename = "prompt:contribute")]
    PromptContribute,
    /// `subagents:register`.
    #[serde(rename = "subagents:register")]
    SubagentsRegister,
    /// `tools:register`.
    #[serde(rename = "tools:register")]
    ToolsRegister,
}

impl ForgeCapability {
    /// Every capability, in the order of [`FORGE_CAPABILITIES`].
    pub const ALL: [ForgeCapability; 7] = [
        Self::CommandsRegister,
        Self::EventsObserve,
        Self::NetworkAccess,
        Self::PolicyRestrict,
        Self::PromptContribute,
        Self::SubagentsRegister,
        Self::ToolsRegister,
    ];

    /// As Forge spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CommandsRegister => "commands:register",
            Self::EventsObserve => "events:observe",
            Self::NetworkAccess => "network:access",
            Self::PolicyRestrict => "policy:restrict",
            Self::PromptContribute => "prompt:contribute",
            Self::SubagentsRegister => "subagents:register",
            Self::ToolsRegister => "tools:register",
        }
    }

    /// The capability of Bosun's own that calls made under it are judged as, if any:
    /// `network:access` is `net.http` (per host); the others register things and reach nothing.
    pub fn judged_as(self) -> Option<bosun_core::Capability> {
        match self {
            Self::NetworkAccess => Some(bosun_core::Capability::NetHttp),
            _ => None,
        }
    }
}

impl std::fmt::Display for ForgeCapability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ForgeCapability {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "{text:?} is not a Forge capability: use one of {}",
                    FORGE_CAPABILITIES.join(", ")
                )
            })
    }
}

/// The extensions Forge imports an entry with.
pub const FORGE_ENTRY_EXTENSIONS: [&str; 3] = [".js", ".mjs", ".cjs"];

/// A checked `plugin.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForgeManifest {
    /// The plugin's name, equal to its directory's.
    pub name: String,
    /// Its version, trimmed (any non-empty text; Forge does not require semver).
    pub version: String,
    /// The entry module: normalised, relative, `/`-separated, a file of the snapshot.
    pub entry: String,
    /// The capabilities it declares, each once, in the order first written.
    pub capabilities: Vec<ForgeCapability>,
    /// Bosun's extension `"bosun": {"codeFromStrings": true}`: the plugin may use `eval` and
    /// `Function` (refused otherwise). Trust records it as [`CODE_FROM_STRINGS`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub code_from_strings: bool,
}

/// The trust capability of a JavaScript plugin whose manifest asks to build code from strings.
pub const CODE_FROM_STRINGS: &str = "bosun:code-from-strings";

/// `"bosun": {...}`, Bosun's own keys in a Forge or Triggerfish manifest; unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct BosunExtension {
    /// Whether the plugin may build code from strings.
    #[serde(default)]
    pub(crate) code_from_strings: bool,
}

impl ForgeManifest {
    /// Reads `plugin.json` from the snapshot of the plugin directory `dir` (whose name the
    /// manifest's `name` must equal) and checks it against the snapshot's files.
    pub fn from_snapshot(snapshot: &SourceSnapshot, dir: &Path) -> Result<Self, PluginError> {
        let path = dir.join(FORGE_MANIFEST);
        let Some(file) = snapshot.get(FORGE_MANIFEST) else {
            return Err(PluginError::ManifestInvalid {
                path,
                message: "is missing: a Forge plugin's directory holds plugin.json".to_owned(),
            });
        };
        let dir_name = crate::discovery::dir_name(dir);
        Self::parse(&file.bytes, &path, dir_name.as_deref(), snapshot)
    }

    /// Checks the text of `plugin.json` (`path` names it in errors) for a plugin whose directory
    /// is called `dir_name` and whose files are `snapshot`.
    pub fn parse(
        json: &[u8],
        path: &Path,
        dir_name: Option<&str>,
        snapshot: &SourceSnapshot,
    ) -> Result<Self, PluginError> {
        // The versions first: a manifest of another version may have other keys.
        serde_json::from_slice::<VersionGate>(json).map_err(|e| syntax(path, &e))?;
        let raw: RawManifest = serde_json::from_slice(json).map_err(|e| syntax(path, &e))?;
        let invalid = |message: String| PluginError::ManifestInvalid {
            path: path.to_owned(),
            message,
        };
        if dir_name != Some(raw.name.as_str()) {
            return Err(invalid(format!(
                "`name` is {:?} but the plugin's directory is {:?}: Forge requires them to be equal; rename the directory or change `name`",
                raw.name,
                dir_name.unwrap_or("")
            )));
        }
        if snapshot.get(&raw.entry.normalised).is_none() {
            return Err(invalid(format!(
                "`entry` {:?} names {}, which is not a file of the plugin: create it, or point `entry` at the plugin's module",
                raw.entry.written, raw.entry.normalised
            )));
        }
        let mut seen = BTreeSet::new();
        let capabilities = raw
            .capabilities
            .into_iter()
            .filter(|c| seen.insert(*c))
            .collect();
        Ok(Self {
            name: raw.name,
            version: raw.version,
            entry: raw.entry.normalised,
            capabilities,
            code_from_strings: raw.bosun.code_from_strings,
        })
    }

    /// The capabilities as trust records them: each prefixed `forge:` (`forge:network:access`),
    /// so they can never be read as one of Bosun's own capabilities.
    pub fn trust_capabilities(&self) -> BTreeSet<String> {
        let mut caps: BTreeSet<String> = self
            .capabilities
            .iter()
            .map(|c| format!("forge:{c}"))
            .collect();
        if self.code_from_strings {
            caps.insert(CODE_FROM_STRINGS.to_owned());
        }
        caps
    }
}

/// The two version keys, read before anything else; every other key is skipped here.
#[derive(Deserialize)]
#[serde(expecting = "a JSON object (the Forge plugin manifest)")]
struct VersionGate {
    #[serde(rename = "schemaVersion", deserialize_with = "schema_version")]
    _schema_version: (),
    #[serde(rename = "apiVersion", deserialize_with = "api_version")]
    _api_version: (),
}

/// Every key of manifest v1, strictly.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a JSON object (the Forge plugin manifest)"
)]
struct RawManifest {
    #[serde(rename = "schemaVersion")]
    _schema_version: IgnoredAny,
    #[serde(rename = "apiVersion")]
    _api_version: IgnoredAny,
    #[serde(deserialize_with = "name")]
    name: String,
    #[serde(deserialize_with = "version")]
    version: String,
    #[serde(deserialize_with = "entry")]
    entry: Entry,
    #[serde(default, deserialize_with = "capabilities")]
    capabilities: Vec<ForgeCapability>,
    #[serde(default)]
    bosun: BosunExtension,
}

/// `entry` as written and as normalised.
struct Entry {
    written: String,
    normalised: String,
}

fn schema_version<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    if value.as_f64() == Some(FORGE_SCHEMA_VERSION as f64) {
        return Ok(());
    }
    Err(de::Error::custom(format!(
        "schemaVersion {value} is not supported: this Bosun reads Forge manifest schemaVersion 1 (the number); update Bosun or write 1"
    )))
}

fn api_version<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    if value.as_str() == Some(FORGE_API_VERSION) {
        return Ok(());
    }
    Err(de::Error::custom(format!(
        "apiVersion {value} is not supported: this Bosun provides Forge plugin API version \"1\" (a string); update Bosun or write \"1\""
    )))
}

fn name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let name = String::deserialize(d)?;
    if let Err(problem) = check_name_characters(&name) {
        return Err(de::Error::custom(format!(
            "plugin name `{}` {problem}",
            crate::metadata::escape_name(&name)
        )));
    }
    if !is_plugin_name(&name) {
        return Err(de::Error::custom(format!(
            "invalid plugin name {name:?}: use 1-64 characters a-z, 0-9 and -, starting with a letter"
        )));
    }
    Ok(name)
}

fn version<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let version = String::deserialize(d)?.trim().to_owned();
    if version.is_empty() {
        return Err(de::Error::custom(
            "`version` is empty: write the plugin's version, e.g. \"1.0.0\"",
        ));
    }
    if let Some(c) = version
        .chars()
        .find(|&c| c.is_control() || bosun_core::is_hidden_char(c))
    {
        return Err(de::Error::custom(format!(
            "`version` holds the invisible or control character U+{:04X}: remove it",
            c as u32
        )));
    }
    Ok(version)
}

fn entry<'de, D: Deserializer<'de>>(d: D) -> Result<Entry, D::Error> {
    let written = String::deserialize(d)?.trim().to_owned();
    let normalised = normalise_entry(&written)
        .map_err(|problem| de::Error::custom(format!("`entry` {written:?} {problem}")))?;
    Ok(Entry {
        written,
        normalised,
    })
}

/// The entry as a path relative to the plugin directory (`/`-separated, no `.` or `..`), or why
/// it cannot be one.
fn normalise_entry(entry: &str) -> Result<String, &'static str> {
    if entry.is_empty() {
        return Err("is empty: name the plugin's module, e.g. \"./index.mjs\"");
    }
    if entry.starts_with('/') || Path::new(entry).is_absolute() {
        return Err(
            "is absolute: write a path relative to the plugin directory, e.g. \"./index.mjs\"",
        );
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in entry.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(
                        "leaves the plugin directory: keep the entry inside it, e.g. \"./index.mjs\"",
                    );
                }
            }
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err("is the plugin directory itself: name the module file, e.g. \"./index.mjs\"");
    }
    let normalised = parts.join("/");
    if !FORGE_ENTRY_EXTENSIONS
        .iter()
        .any(|ext| normalised.ends_with(ext))
    {
        return Err(
            "must end in .js, .mjs or .cjs: Forge imports JavaScript modules only (a TypeScript entry must be built first)",
        );
    }
    Ok(normalised)
}

fn capabilities<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ForgeCapability>, D::Error> {
    let capabilities = Vec::<String>::deserialize(d)?;
    if capabilities.len() > MAX_FORGE_CAPABILITIES {
        return Err(de::Error::custom(format!(
            "`capabilities` has {} entries: Forge allows at most {MAX_FORGE_CAPABILITIES}; remove the ones the plugin does not use",
            capabilities.len()
        )));
    }
    capabilities
        .iter()
        .map(|c| c.parse().map_err(de::Error::custom))
        .collect()
}

/// A serde_json error as `plugin.json:line:column: message`, with what to do for the errors
/// serde words itself.
fn syntax(path: &Path, e: &serde_json::Error) -> PluginError {
    let message = crate::metadata::json_message(e);
    let hint = if message.starts_with("unknown field") {
        ": plugin.json is strict; remove the key"
    } else if message.starts_with("duplicate field") {
        ": write each key once"
    } else if message.starts_with("missing field") {
        ": add it (see Forge's manifest v1)"
    } else if e.is_syntax() || e.is_eof() {
        ": fix the JSON"
    } else {
        ""
    };
    PluginError::ManifestSyntax {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: format!("{message}{hint}"),
    }
}

/// The plugin's `.js` files that are CommonJS, as Node decides: the nearest `package.json`
/// inside the plugin (`dir/package.json`, then its parents) says so with its `"type"`
/// (`"commonjs"` or `"module"`); without one, or when it has no `"type"`, the file's own syntax
/// does (Node 22's detection: no `import`/`export`, `import.meta` or top-level `await` means
/// CommonJS). A file that does not parse is left as an ES module, where the engine reports its
/// error. `.cjs` files are CommonJS by name and are not listed; `.mjs` files never are.
pub fn commonjs_files(snapshot: &SourceSnapshot) -> Vec<String> {
    snapshot
        .files()
        .iter()
        .filter(|file| file.path.ends_with(".js"))
        .filter(|file| match package_type(snapshot, &file.path) {
            Some(PackageType::CommonJs) => true,
            Some(PackageType::Module) => false,
            None => std::str::from_utf8(&file.bytes).is_ok_and(|text| !has_module_syntax(text)),
        })
        .map(|file| file.path.clone())
        .collect()
}

enum PackageType {
    CommonJs,
    Module,
}

/// The `"type"` of the nearest `package.json` above `path` (within the plugin), if it has one.
fn package_type(snapshot: &SourceSnapshot, path: &str) -> Option<PackageType> {
    let mut dir = path.rsplit_once('/').map(|(dir, _)| dir);
    loop {
        let manifest = dir.map_or_else(
            || "package.json".to_owned(),
            |d| format!("{d}/package.json"),
        );
        if let Some(file) = snapshot.get(&manifest) {
            return declared_type(&file.bytes);
        }
        dir = dir?.rsplit_once('/').map(|(parent, _)| parent);
    }
}

/// A `package.json`'s `"type"`, when it is one Node knows.
fn declared_type(bytes: &[u8]) -> Option<PackageType> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    match value.get("type")?.as_str()? {
        "commonjs" => Some(PackageType::CommonJs),
        "module" => Some(PackageType::Module),
        _ => None,
    }
}

/// Whether JavaScript `text` has ES module syntax, parsed as Node's detection does. Text that
/// cannot be parsed (too large, too deep, a syntax error) counts as a module.
fn has_module_syntax(text: &str) -> bool {
    if text.len() > crate::typescript::MAX_SOURCE_BYTES {
        return true;
    }
    crate::typescript::on_parser_stack(text, || {
        let allocator = oxc::allocator::Allocator::default();
        let parsed =
            oxc::parser::Parser::new(&allocator, text, oxc::span::SourceType::unambiguous())
                .parse();
        parsed.panicked || !parsed.diagnostics.is_empty() || parsed.program.source_type.is_module()
    })
    .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    use super::*;
    use crate::source::SourceFile;

    fn manifest() -> Value {
        json!({
            "schemaVersion": 1,
            "apiVersion": "1",
            "name": "count-text",
            "version": "1.0.0",
            "entry": "./index.mjs",
            "capabilities": ["tools:register"]
        })
    }

    fn snapshot(json: &[u8], extra: &[&str]) -> SourceSnapshot {
        let mut files = vec![
            SourceFile {
                path: "plugin.json".to_owned(),
                bytes: Arc::from(json),
            },
            SourceFile {
                path: "index.mjs".to_owned(),
                bytes: Arc::from(&b"export default function activate(api) {}"[..]),
            },
        ];
        for path in extra {
            files.push(SourceFile {
                path: (*path).to_owned(),
                bytes: Arc::from(&b""[..]),
            });
        }
        SourceSnapshot::from_files(files).unwrap()
    }

    fn parse_text(text: &str, extra: &[&str]) -> Result<ForgeManifest, PluginError> {
        let snap = snapshot(text.as_bytes(), extra);
        ForgeManifest::from_snapshot(&snap, Path::new("/plugins/count-text"))
    }

    fn parse(value: &Value) -> Result<ForgeManifest, PluginError> {
        parse_text(&serde_json::to_string_pretty(value).unwrap(), &[])
    }

    fn with(key: &str, value: Value) -> Value {
        let mut m = manifest();
        m[key] = value;
        m
    }

    fn refusal(value: &Value) -> String {
        match parse(value) {
            Ok(m) => panic!("accepted: {m:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn js_files_are_commonjs_as_node_decides() {
        let snap = |files: &[(&str, &str)]| {
            SourceSnapshot::from_files(
                files
                    .iter()
                    .map(|(path, text)| SourceFile {
                        path: (*path).to_owned(),
                        bytes: Arc::from(text.as_bytes()),
                    })
                    .collect(),
            )
            .unwrap()
        };
        let cjs = "module.exports = { activate(api) {} };";
        let esm = "export function activate(api) {}";
        // No package.json: the file's own syntax, as Node 22 detects it.
        let plain = snap(&[
            ("index.js", cjs),
            ("lib/esm.js", esm),
            ("lib/meta.js", "const here = import.meta.url;"),
            ("lib/await.js", "await Promise.resolve(1);"),
            ("lib/broken.js", "module.exports = {"),
            ("lib/a.cjs", cjs),
            ("lib/b.mjs", cjs),
        ]);
        assert_eq!(commonjs_files(&plain), ["index.js"]);
        // The nearest package.json with a type decides, whatever the syntax.
        let typed = snap(&[
            ("package.json", r#"{"type": "module"}"#),
            ("index.js", cjs),
            ("legacy/package.json", r#"{"type": "commonjs"}"#),
            ("legacy/deep/x.js", esm),
            ("untyped/package.json", r#"{"name": "untyped"}"#),
            ("untyped/y.js", cjs),
        ]);
        assert_eq!(commonjs_files(&typed), ["legacy/deep/x.js", "untyped/y.js"]);
        let commonjs_root = snap(&[
            ("package.json", r#"{"type": "commonjs"}"#),
            ("index.js", esm),
        ]);
        assert_eq!(commonjs_files(&commonjs_root), ["index.js"]);
    }

    #[test]
    fn a_forge_plugin_name_with_terminal_controls_is_refused_naming_the_character() {
        crate::metadata::assert_refuses_hostile_names(|name| refusal(&with("name", json!(name))));
    }

    #[test]
    fn the_guide_example_is_read_with_its_entry_normalised() {
        assert_eq!(
            parse(&manifest()).unwrap(),
            ForgeManifest {
                name: "count-text".to_owned(),
                version: "1.0.0".to_owned(),
                entry: "index.mjs".to_owned(),
                capabilities: vec![ForgeCapability::ToolsRegister],
                code_from_strings: false,
            }
        );
    }

    #[test]
    fn capabilities_are_optional_and_default_to_none() {
        let mut m = manifest();
        m.as_object_mut().unwrap().remove("capabilities");
        assert_eq!(
            parse(&m).unwrap().capabilities,
            Vec::<ForgeCapability>::new()
        );
        assert!(refusal(&with("capabilities", Value::Null)).contains("invalid type: null"));
    }

    #[test]
    fn an_unknown_key_is_refused_by_name_with_its_position() {
        let text = "{\n  \"schemaVersion\": 1,\n  \"apiVersion\": \"1\",\n  \"name\": \"count-text\",\n  \"version\": \"1\",\n  \"entry\": \"index.mjs\",\n  \"homepage\": \"x\"\n}";
        let reason = parse_text(text, &[]).unwrap_err().to_string();
        assert!(
            reason.starts_with("/plugins/count-text/plugin.json:7:"),
            "{reason}"
        );
        assert!(reason.contains("unknown field `homepage`"), "{reason}");
        assert!(reason.contains("remove the key"), "{reason}");
    }

    #[test]
    fn a_key_written_twice_is_refused() {
        let text = r#"{"schemaVersion": 1, "apiVersion": "1", "name": "count-text", "name": "count-text", "version": "1", "entry": "index.mjs"}"#;
        let reason = parse_text(text, &[]).unwrap_err().to_string();
        assert!(reason.contains("duplicate field `name`"), "{reason}");
    }

    #[test]
    fn a_syntax_error_has_its_line_and_column() {
        let reason = parse_text("{\n  \"schemaVersion\": 1,,\n}", &[])
            .unwrap_err()
            .to_string();
        assert!(reason.contains("plugin.json:2:22:"), "{reason}");
        assert!(reason.ends_with("fix the JSON"), "{reason}");
    }

    #[test]
    fn schema_version_must_be_the_number_one() {
        for bad in [json!(2), json!("1"), json!(true)] {
            let reason = refusal(&with("schemaVersion", bad));
            assert!(reason.contains("schemaVersion"), "{reason}");
        }
        assert!(parse(&with("schemaVersion", json!(1.0))).is_ok());
        let mut m = manifest();
        m.as_object_mut().unwrap().remove("schemaVersion");
        assert!(refusal(&m).contains("missing field `schemaVersion`"));
    }

    #[test]
    fn an_unsupported_api_version_is_refused_before_anything_else() {
        // A future manifest with a key this version does not know: the version is the problem.
        let mut m = with("apiVersion", json!("2"));
        m["permissions"] = json!(["fs"]);
        m["name"] = json!("NOT VALID");
        let reason = refusal(&m);
        assert!(
            reason.contains("apiVersion \"2\" is not supported"),
            "{reason}"
        );
        assert!(refusal(&with("apiVersion", json!(1))).contains("apiVersion 1 is not supported"));
    }

    #[test]
    fn the_name_must_match_the_pattern() {
        for bad in ["Count", "1count", "count_text", "", &"a".repeat(65)] {
            let reason = refusal(&with("name", json!(bad)));
            assert!(reason.contains("invalid plugin name"), "{bad}: {reason}");
        }
    }

    #[test]
    fn the_name_must_equal_the_directory_name() {
        let reason = refusal(&with("name", json!("other-name")));
        assert!(
            reason
                .contains("`name` is \"other-name\" but the plugin's directory is \"count-text\""),
            "{reason}"
        );
    }

    #[test]
    fn the_version_is_trimmed_and_must_not_be_empty() {
        assert_eq!(
            parse(&with("version", json!("  2.0 "))).unwrap().version,
            "2.0"
        );
        assert!(refusal(&with("version", json!("   "))).contains("`version` is empty"));
        assert!(refusal(&with("version", json!(1))).contains("invalid type"));
        assert!(refusal(&with("version", json!("1.0\u{202e}"))).contains("U+202E"));
    }

    #[test]
    fn the_entry_is_trimmed_and_must_not_be_empty() {
        assert_eq!(
            parse(&with("entry", json!(" index.mjs "))).unwrap().entry,
            "index.mjs"
        );
        assert!(refusal(&with("entry", json!("  "))).contains("is empty"));
    }

    #[test]
    fn an_entry_escaping_the_directory_is_refused() {
        for bad in [
            "../index.mjs",
            "lib/../../index.mjs",
            "./../count-text/index.mjs",
        ] {
            let reason = refusal(&with("entry", json!(bad)));
            assert!(
                reason.contains("leaves the plugin directory"),
                "{bad}: {reason}"
            );
        }
        // Inside after normalising is inside.
        let m = parse_text(
            &with("entry", json!("lib/../src/./main.js")).to_string(),
            &["src/main.js"],
        )
        .unwrap();
        assert_eq!(m.entry, "src/main.js");
    }

    #[test]
    fn an_absolute_entry_is_refused() {
        for bad in ["/plugins/count-text/index.mjs", "/index.mjs"] {
            let reason = refusal(&with("entry", json!(bad)));
            assert!(reason.contains("is absolute"), "{bad}: {reason}");
        }
    }

    #[test]
    fn an_entry_that_is_the_directory_itself_is_refused() {
        for bad in [".", "./", "lib/.."] {
            let reason = refusal(&with("entry", json!(bad)));
            assert!(
                reason.contains("the plugin directory itself"),
                "{bad}: {reason}"
            );
        }
    }

    #[test]
    fn an_entry_with_another_extension_is_refused() {
        for bad in [
            "index.ts",
            "index.MJS",
            "index",
            "index.mjs.map",
            "index.json",
        ] {
            let reason = refusal(&with("entry", json!(bad)));
            assert!(
                reason.contains("must end in .js, .mjs or .cjs"),
                "{bad}: {reason}"
            );
        }
        for good in ["main.js", "main.cjs"] {
            assert!(parse_text(&with("entry", json!(good)).to_string(), &[good]).is_ok());
        }
    }

    #[test]
    fn an_entry_missing_from_the_snapshot_is_refused() {
        let reason = refusal(&with("entry", json!("./dist/index.mjs")));
        assert!(
            reason.contains("names dist/index.mjs, which is not a file of the plugin"),
            "{reason}"
        );
    }

    #[test]
    fn seventeen_capabilities_are_refused() {
        let caps: Vec<&str> = FORGE_CAPABILITIES
            .iter()
            .cycle()
            .take(17)
            .copied()
            .collect();
        let reason = refusal(&with("capabilities", json!(caps)));
        assert!(reason.contains("has 17 entries"), "{reason}");
        let sixteen: Vec<&str> = caps[..16].to_vec();
        assert!(parse(&with("capabilities", json!(sixteen))).is_ok());
    }

    #[test]
    fn an_unknown_capability_is_refused() {
        let reason = refusal(&with("capabilities", json!(["tools:register", "fs:write"])));
        assert!(
            reason.contains("\"fs:write\" is not a Forge capability: use one of commands:register"),
            "{reason}"
        );
    }

    #[test]
    fn duplicate_capabilities_are_accepted_once() {
        let m = parse(&with(
            "capabilities",
            json!(["network:access", "tools:register", "network:access"]),
        ))
        .unwrap();
        assert_eq!(
            m.capabilities,
            [
                ForgeCapability::NetworkAccess,
                ForgeCapability::ToolsRegister
            ]
        );
        assert_eq!(
            m.trust_capabilities().into_iter().collect::<Vec<_>>(),
            ["forge:network:access", "forge:tools:register"]
        );
    }

    #[test]
    fn every_forge_capability_is_known() {
        let m = parse(&with("capabilities", json!(FORGE_CAPABILITIES))).unwrap();
        assert_eq!(m.capabilities.len(), 7);
    }

    #[test]
    fn a_manifest_that_is_not_an_object_is_refused() {
        let reason = parse_text("[]", &[]).unwrap_err().to_string();
        assert!(reason.contains("expected a JSON object"), "{reason}");
    }
}
