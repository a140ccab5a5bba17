//! Chock plugins: core WebAssembly modules whose metadata is read from their data segments,
//! without compiling or instantiating anything.
//!
//! A Chock plugin (see docs/plugins.md, "Chock plugins") is a core module with no imports that
//! exports two constant `i32` globals, `chock_plugin_magic` (the address of a `u32` ABI word)
//! and `chock_plugin_metadata` (the address of the metadata blob right after it), the functions
//! `chock_plugin_init`, `chock_plugin_arguments` and `chock_plugin_call`, and its `memory`.
//! This module walks the module's sections with `wasmparser`, resolves the two globals to bytes
//! of the active data segments, and parses the blob with every bound Chock's own reader has:
//! the magic is checked before any length is trusted, nothing is allocated before its bound is
//! checked, and a blob that leaves bytes unread is refused.
//!
//! Two ABIs exist: **2** (per-tool argument schemas; arguments reach the guest as Chock's binary
//! record, see [`encode_arguments`]) and the earlier **1** (no argument fields; the guest
//! receives the raw argument text). Any other ABI is refused with its number named.
//!
//! [`ChockModule::manifest`] turns the metadata into Bosun's [`Manifest`]: a tool whose name,
//! capabilities or schema Bosun cannot use is refused on its own (Chock refuses a tool rather
//! than thinning its schema) and reported; a tool named like a built-in refuses the whole plugin.

use std::collections::BTreeSet;

use bosun_core::{Capability, Risk, ToolName, ToolSpec, escape_hidden};
use semver::Version;
use serde::Serialize;
use serde_json::{Map, Value, json};
use wasmparser::{ExternalKind, Parser, ValType};

use crate::PluginError;
use crate::metadata::{CapabilityDecl, MAX_TOOLS, PluginTool};

mod arguments;
mod blob;
mod wasm;

pub use arguments::{ArgumentError, encode_arguments, text_for_model};
use blob::parse_body;
use wasm::walk;

/// The blob's first word: `'C','H','K',0x9E`.
pub const MAGIC: u32 = 0x9E4B_4843;
/// Largest metadata blob (1 MiB).
pub const MAX_BLOB_BYTES: u32 = 1 << 20;
/// Longest string in the blob (8 KiB).
pub const MAX_STRING_BYTES: u32 = 8 * 1024;
/// Most locales of one description.
pub const MAX_LOCALES: u32 = 64;
/// Most tools a blob may list.
pub const MAX_BLOB_TOOLS: u32 = 256;
/// Most capabilities a blob may list per tool.
pub const MAX_BLOB_CAPS: u32 = 64;
/// Most capabilities a usable tool declares.
pub const MAX_TOOL_CAPS: usize = 16;
/// Longest capability name.
pub const MAX_CAP_BYTES: usize = 128;
/// Most properties of one object.
pub const MAX_PROPERTIES: u32 = 32;
/// Deepest nesting of shapes.
pub const MAX_DEPTH: usize = 8;
/// Largest rendered input schema (8 KiB).
pub const MAX_SCHEMA_BYTES: usize = 8 * 1024;
/// Where descriptions are cut, in bytes.
pub const DESCRIPTION_CUT: usize = 200;
/// Largest argument record the guest's buffer takes (64 KiB).
pub const MAX_ARGUMENT_BYTES: usize = 64 * 1024;

/// Which plugin ABI a module speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ChockAbi {
    /// The earlier ABI: no argument fields; the guest gets the raw argument text.
    V1,
    /// The current ABI: argument schemas and the binary argument record.
    V2,
}

impl ChockAbi {
    /// The ABI word.
    pub fn number(self) -> u32 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
        }
    }
}

/// The kind of one argument field.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    /// `u32 len, bytes`.
    String,
    /// `u8`.
    Boolean,
    /// `i64`.
    Integer,
    /// `f64` bits.
    Number,
    /// `u32 count, value*`; `None` when the blob gives no item shape.
    Array {
        /// The shape of each item.
        items: Option<Box<Shape>>,
    },
    /// `field*` in declaration order.
    Object {
        /// The fields.
        properties: Vec<Property>,
    },
}

/// One argument field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Property {
    /// Its name.
    pub name: String,
    /// Its description (English, flattened and cut).
    pub description: String,
    /// Whether the tool needs it.
    pub required: bool,
    /// What it holds.
    pub shape: Shape,
}

/// One tool as the blob lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChockTool {
    /// Its position in the blob: the index `chock_plugin_call` is called with.
    pub index: u32,
    /// Its name.
    pub name: String,
    /// Its English description, flattened and cut at 200 bytes.
    pub description: String,
    /// The capability names it declares.
    pub capabilities: Vec<String>,
    /// Its argument fields (ABI 2), `None` under ABI 1.
    pub properties: Option<Vec<Property>>,
}

/// A Chock module's metadata, read without running it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChockModule {
    /// The ABI.
    pub abi: ChockAbi,
    /// The author's name for the plugin (policy uses the local name, never this one).
    pub name: String,
    /// The plugin's version.
    pub version: Version,
    /// Its author.
    pub author: String,
    /// Its English description.
    pub description: String,
    /// Its tools, in blob order.
    pub tools: Vec<ChockTool>,
}

/// A tool Bosun does not offer, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedTool {
    /// The tool's name, escaped for display.
    pub tool: String,
    /// Why, and what to do.
    pub reason: String,
}

/// Why one tool of a Chock plugin is refused (the plugin's other tools are still offered); the
/// message becomes its [`RefusedTool::reason`].
#[derive(Debug, thiserror::Error)]
enum ToolRefusal {
    /// Two tools share a name.
    #[error("another tool of this plugin has the same name")]
    Duplicate,
    /// The name cannot be offered to a model.
    #[error(
        "its name is not one Bosun can offer to a model: use 1-64 characters a-z, 0-9 and _, starting with a letter"
    )]
    Name,
    /// Too many capabilities.
    #[error("it declares {0} capabilities: a tool may declare at most {MAX_TOOL_CAPS}")]
    TooManyCapabilities(usize),
    /// A capability that is not dot-separated labels (escaped for display).
    #[error(
        "it declares the capability {0:?}, which is not 1-128 bytes of dot-separated labels (no `*`)"
    )]
    UnusableCapability(String),
    /// A capability Bosun has no judgement for.
    #[error(
        "it declares the capability `{0}`, which Bosun cannot judge: use fs.read, fs.write, net.http, net.connect.<host>, process.spawn, model.call or secret.<name>"
    )]
    UnknownCapability(String),
    /// The rendered input schema is too large.
    #[error("its input schema is {0} bytes: Bosun and Chock offer at most {MAX_SCHEMA_BYTES}")]
    SchemaTooLarge(usize),
    /// Arguments nested too deep.
    #[error("its arguments nest deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// Too many fields in one object.
    #[error("it has {0} fields in one object: at most {MAX_PROPERTIES}")]
    TooManyFields(usize),
    /// A field name that is not a label (escaped for display).
    #[error(
        "it has a field named {0:?}, which is not a usable label (1-64 characters A-Z, a-z, 0-9, _ and -)"
    )]
    FieldName(String),
    /// The tool spec Bosun would build is refused.
    #[error(transparent)]
    Spec(#[from] bosun_core::SpecError),
}

pub(crate) fn refuse(reason: impl Into<String>) -> PluginError {
    PluginError::Chock(reason.into())
}

/// Whether `bytes` start like a core WebAssembly module (rather than a component).
pub fn is_core_module(bytes: &[u8]) -> bool {
    Parser::is_core_wasm(bytes)
}

impl ChockModule {
    /// Reads a module's metadata. Never compiles or runs anything.
    ///
    /// # Errors
    /// [`PluginError::Chock`] with a sentence naming what is wrong.
    pub fn read(bytes: &[u8]) -> Result<Self, PluginError> {
        if bytes.get(..4) != Some(b"\0asm") {
            let start: String = bytes.iter().take(4).map(|&b| char::from(b)).collect();
            return Err(refuse(format!(
                "not a WebAssembly module: it starts with {}, and every module starts with \\x00asm",
                escape_hidden(&start).escape_debug()
            )));
        }
        let sections = walk(bytes)?;
        let export = |name: &str| {
            let mut found = sections.exports.iter().filter(|(n, _, _)| n == name);
            match (found.next(), found.next()) {
                (Some(e), None) => Ok(Some((e.1, e.2))),
                (None, _) => Ok(None),
                (Some(_), Some(_)) => Err(refuse(format!("the module exports {name} twice"))),
            }
        };
        let Some(magic) = export("chock_plugin_magic")? else {
            return Err(refuse(
                "not a Chock plugin: the module exports no chock_plugin_magic",
            ));
        };
        let metadata = export("chock_plugin_metadata")?;
        let Some(metadata) = metadata else {
            return Err(refuse(
                "an incomplete Chock plugin: it exports chock_plugin_magic but no chock_plugin_metadata",
            ));
        };
        let magic_addr = sections.global_address("chock_plugin_magic", magic)?;
        let meta_addr = sections.global_address("chock_plugin_metadata", metadata)?;
        for (name, params, results) in [
            ("chock_plugin_init", &[][..], &[ValType::I32][..]),
            (
                "chock_plugin_arguments",
                &[ValType::I32][..],
                &[ValType::I32][..],
            ),
            (
                "chock_plugin_call",
                &[ValType::I32, ValType::I32, ValType::I32][..],
                &[ValType::I32][..],
            ),
        ] {
            sections.check_function(name, export(name)?, params, results)?;
        }
        match export("memory")? {
            Some((ExternalKind::Memory, 0)) => {}
            Some(_) => return Err(refuse("the module exports `memory`, but not as memory 0")),
            None => {
                return Err(refuse(
                    "the module exports no `memory`: a Chock plugin exports its linear memory",
                ));
            }
        }
        if let Some(import) = sections.imports.first() {
            return Err(refuse(format!(
                "the module imports {}: a Chock plugin may import nothing, and Bosun gives it no host functions",
                escape_hidden(import)
            )));
        }
        let word = sections.read_u32(magic_addr).ok_or_else(|| {
            refuse(format!(
                "chock_plugin_magic points at address {magic_addr}, which no data segment holds: the module carries no ABI word"
            ))
        })?;
        let prefix = sections.read(meta_addr, 12).ok_or_else(|| {
            refuse(format!(
                "chock_plugin_metadata points at address {meta_addr}, which no data segment holds"
            ))
        })?;
        let field =
            |i: usize| u32::from_le_bytes([prefix[i], prefix[i + 1], prefix[i + 2], prefix[i + 3]]);
        let (blob_magic, blob_abi, total) = (field(0), field(4), field(8));
        if blob_magic != MAGIC {
            return Err(refuse(format!(
                "not a Chock plugin: the metadata starts with 0x{blob_magic:08X}, and every Chock plugin starts with 0x{MAGIC:08X}"
            )));
        }
        if word != blob_abi {
            return Err(refuse(format!(
                "the module says it is plugin ABI {word} and its metadata says ABI {blob_abi}"
            )));
        }
        let abi = match blob_abi {
            1 => ChockAbi::V1,
            2 => ChockAbi::V2,
            other => {
                return Err(refuse(format!(
                    "built for plugin ABI {other}, Bosun speaks Chock plugin ABIs 1 and 2: rebuild the plugin"
                )));
            }
        };
        if !(12..=MAX_BLOB_BYTES).contains(&total) {
            return Err(refuse(format!(
                "the metadata says it is {total} bytes long: a blob is 12 to {MAX_BLOB_BYTES} bytes"
            )));
        }
        let blob = sections.read(meta_addr, total).ok_or_else(|| {
            refuse(format!(
                "the metadata says it is {total} bytes long, but the module's data holds fewer at address {meta_addr}"
            ))
        })?;
        parse_body(abi, &blob[12..])
    }

    /// The plugin as Bosun offers it: the usable tools, and those refused with their reasons.
    ///
    /// # Errors
    /// The whole plugin is refused when a tool is named like a built-in or it has more than
    /// 64 tools.
    pub fn manifest(
        &self,
        builtins: &[&str],
    ) -> Result<(crate::Manifest, Vec<RefusedTool>), PluginError> {
        if self.tools.len() > MAX_TOOLS {
            return Err(PluginError::TooManyTools(self.tools.len()));
        }
        if let Some(tool) = self
            .tools
            .iter()
            .find(|t| builtins.contains(&t.name.as_str()))
        {
            return Err(PluginError::ShadowsBuiltin {
                plugin: escape_hidden(&self.name),
                tool: tool.name.clone(),
            });
        }
        let mut seen = BTreeSet::new();
        let mut tools = Vec::new();
        let mut refused = Vec::new();
        for tool in &self.tools {
            let checked = if seen.insert(tool.name.clone()) {
                self.tool(tool)
            } else {
                Err(ToolRefusal::Duplicate)
            };
            match checked {
                Ok(tool) => tools.push(tool),
                Err(reason) => refused.push(RefusedTool {
                    tool: escape_hidden(&tool.name),
                    reason: reason.to_string(),
                }),
            }
        }
        let manifest = crate::Manifest {
            name: self.name.clone(),
            version: self.version.clone(),
            api_version: Version::new(u64::from(self.abi.number()), 0, 0),
            description: (!self.description.is_empty()).then(|| self.description.clone()),
            prompt: None,
            tools,
        };
        Ok((manifest, refused))
    }

    fn tool(&self, tool: &ChockTool) -> Result<PluginTool, ToolRefusal> {
        let name = ToolName::new(tool.name.clone()).map_err(|_| ToolRefusal::Name)?;
        if tool.capabilities.len() > MAX_TOOL_CAPS {
            return Err(ToolRefusal::TooManyCapabilities(tool.capabilities.len()));
        }
        let mut decls = Vec::new();
        for cap in &tool.capabilities {
            let decl = capability(cap)?;
            if !decls.contains(&decl) {
                decls.push(decl);
            }
        }
        let risk = [
            (Capability::ProcessSpawn, Risk::Process),
            (Capability::NetHttp, Risk::Network),
            (Capability::FsWrite, Risk::Write),
            (Capability::ModelCall, Risk::Model),
        ]
        .into_iter()
        .find(|(c, _)| decls.iter().any(|d| &d.capability == c))
        .map_or(Risk::Read, |(_, r)| r);
        let schema = match &tool.properties {
            None => json!({ "type": "object" }),
            Some(properties) => schema_of(properties, 1)?,
        };
        let rendered = schema.to_string().len();
        if rendered > MAX_SCHEMA_BYTES {
            return Err(ToolRefusal::SchemaTooLarge(rendered));
        }
        let description = if tool.description.trim().is_empty() {
            format!(
                "Tool `{}` of the Chock plugin `{}`.",
                tool.name,
                escape_hidden(&self.name)
            )
        } else {
            tool.description.clone()
        };
        let mut builder = ToolSpec::builder(name, description)
            .input_schema(schema)
            .risk(risk);
        for decl in &decls {
            builder = builder.capability(decl.capability.clone());
        }
        let spec = builder.build()?;
        Ok(PluginTool {
            spec,
            capabilities: decls,
        })
    }
}

/// A Chock capability as Bosun judges it: Bosun's own names as they are, and Chock's
/// `net.connect.<host labels reversed>[.<port>]` as `net.http` to that host.
fn capability(cap: &str) -> Result<CapabilityDecl, ToolRefusal> {
    let usable = !cap.is_empty() && cap.len() <= MAX_CAP_BYTES && cap.split('.').all(is_label);
    if !usable {
        return Err(ToolRefusal::UnusableCapability(escape_hidden(cap)));
    }
    if let Ok(capability) = cap.parse::<Capability>() {
        return Ok(CapabilityDecl::bare(capability));
    }
    if let Some(rest) = cap.strip_prefix("net.connect.") {
        let mut labels: Vec<&str> = rest.split('.').collect();
        if labels
            .last()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
            && labels.len() > 1
        {
            labels.pop();
        }
        labels.reverse();
        let host = labels.join(".").to_ascii_lowercase();
        let mut decl = CapabilityDecl::bare(Capability::NetHttp);
        decl.hosts = Some(vec![host]);
        return Ok(decl);
    }
    Err(ToolRefusal::UnknownCapability(cap.to_owned()))
}

/// 1-64 bytes of `[A-Za-z0-9_-]`.
fn is_label(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn schema_of(properties: &[Property], depth: usize) -> Result<Value, ToolRefusal> {
    if depth > MAX_DEPTH {
        return Err(ToolRefusal::TooDeep);
    }
    if properties.len() > MAX_PROPERTIES as usize {
        return Err(ToolRefusal::TooManyFields(properties.len()));
    }
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in properties {
        if !is_label(&p.name) {
            return Err(ToolRefusal::FieldName(escape_hidden(&p.name)));
        }
        let mut field = shape_schema(&p.shape, depth)?;
        if let Some(obj) = field.as_object_mut()
            && !p.description.is_empty()
        {
            obj.insert("description".into(), Value::String(p.description.clone()));
        }
        if p.required {
            required.push(Value::String(p.name.clone()));
        }
        props.insert(p.name.clone(), field);
    }
    Ok(json!({ "type": "object", "properties": props, "required": required }))
}

fn shape_schema(shape: &Shape, depth: usize) -> Result<Value, ToolRefusal> {
    Ok(match shape {
        Shape::String => json!({ "type": "string" }),
        Shape::Boolean => json!({ "type": "boolean" }),
        Shape::Integer => json!({ "type": "integer" }),
        Shape::Number => json!({ "type": "number" }),
        Shape::Array { items: None } => json!({ "type": "array" }),
        Shape::Array { items: Some(items) } => {
            json!({ "type": "array", "items": shape_schema(items, depth + 1)? })
        }
        Shape::Object { properties } => schema_of(properties, depth + 1)?,
    })
}

pub mod fixture;

#[cfg(test)]
mod tests;
