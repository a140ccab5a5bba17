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

use bosun_core::{Capability, Risk, ToolName, ToolSpec, escape_hidden, find_hidden};
use semver::{BuildMetadata, Prerelease, Version};
use serde::Serialize;
use serde_json::{Map, Value, json};
use wasmparser::{
    CompositeInnerType, DataKind, Encoding, ExternalKind, Operator, Parser, Payload, TypeRef,
    ValType,
};

use crate::PluginError;
use crate::metadata::{CapabilityDecl, MAX_TOOLS, PluginTool};

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
/// Most sections a module may have.
const MAX_SECTIONS: usize = 1024;
/// Longest export name.
const MAX_EXPORT_NAME: usize = 1024;
/// Most operators of a constant expression.
const MAX_CONST_OPS: usize = 16;

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

fn refuse(reason: impl Into<String>) -> PluginError {
    PluginError::Chock(reason.into())
}

/// Whether `bytes` start like a core WebAssembly module (rather than a component).
pub fn is_core_module(bytes: &[u8]) -> bool {
    Parser::is_core_wasm(bytes)
}

/// The parts of a module the reader needs.
#[derive(Default)]
struct Sections<'a> {
    imports: Vec<String>,
    imported_globals: u32,
    imported_funcs: u32,
    types: Vec<Option<(Vec<ValType>, Vec<ValType>)>>,
    funcs: Vec<u32>,
    /// Per defined global: its `i32.const` value, when it is a constant i32.
    globals: Vec<Option<i32>>,
    exports: Vec<(String, ExternalKind, u32)>,
    segments: Vec<(u32, &'a [u8])>,
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
                Err("another tool of this plugin has the same name".to_owned())
            };
            match checked {
                Ok(tool) => tools.push(tool),
                Err(reason) => refused.push(RefusedTool {
                    tool: escape_hidden(&tool.name),
                    reason,
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

    fn tool(&self, tool: &ChockTool) -> Result<PluginTool, String> {
        let name = ToolName::new(tool.name.clone()).map_err(|_| {
            "its name is not one Bosun can offer to a model: use 1-64 characters a-z, 0-9 and _, starting with a letter".to_owned()
        })?;
        if tool.capabilities.len() > MAX_TOOL_CAPS {
            return Err(format!(
                "it declares {} capabilities: a tool may declare at most {MAX_TOOL_CAPS}",
                tool.capabilities.len()
            ));
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
            return Err(format!(
                "its input schema is {rendered} bytes: Bosun and Chock offer at most {MAX_SCHEMA_BYTES}"
            ));
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
        let spec = builder.build().map_err(|e| e.to_string())?;
        Ok(PluginTool {
            spec,
            capabilities: decls,
        })
    }
}

/// A Chock capability as Bosun judges it: Bosun's own names as they are, and Chock's
/// `net.connect.<host labels reversed>[.<port>]` as `net.http` to that host.
fn capability(cap: &str) -> Result<CapabilityDecl, String> {
    let usable = !cap.is_empty() && cap.len() <= MAX_CAP_BYTES && cap.split('.').all(is_label);
    if !usable {
        return Err(format!(
            "it declares the capability {:?}, which is not 1-128 bytes of dot-separated labels (no `*`)",
            escape_hidden(cap)
        ));
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
    Err(format!(
        "it declares the capability `{cap}`, which Bosun cannot judge: use fs.read, fs.write, net.http, net.connect.<host>, process.spawn, model.call or secret.<name>"
    ))
}

/// 1-64 bytes of `[A-Za-z0-9_-]`.
fn is_label(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn schema_of(properties: &[Property], depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("its arguments nest deeper than {MAX_DEPTH} levels"));
    }
    if properties.len() > MAX_PROPERTIES as usize {
        return Err(format!(
            "it has {} fields in one object: at most {MAX_PROPERTIES}",
            properties.len()
        ));
    }
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in properties {
        if !is_label(&p.name) {
            return Err(format!(
                "it has a field named {:?}, which is not a usable label (1-64 characters A-Z, a-z, 0-9, _ and -)",
                escape_hidden(&p.name)
            ));
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

fn shape_schema(shape: &Shape, depth: usize) -> Result<Value, String> {
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

/// Walks the sections, keeping what the reader needs; function bodies are skipped unread.
fn walk(bytes: &[u8]) -> Result<Sections<'_>, PluginError> {
    let bad = |e: wasmparser::BinaryReaderError| {
        refuse(format!("the module is malformed: {}", e.message()))
    };
    let mut s = Sections::default();
    let mut count = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(bad)?;
        count += 1;
        if count > MAX_SECTIONS {
            return Err(refuse(format!(
                "the module has more than {MAX_SECTIONS} sections"
            )));
        }
        match payload {
            Payload::Version { num, encoding, .. } => {
                if encoding == Encoding::Component {
                    return Err(refuse(
                        "this is a WebAssembly component, not a Chock module",
                    ));
                }
                if num != 1 {
                    return Err(refuse(format!(
                        "built for WebAssembly binary format {num}, this reader knows 1"
                    )));
                }
            }
            Payload::TypeSection(reader) => {
                for group in reader {
                    for ty in group.map_err(bad)?.into_types() {
                        s.types.push(match &ty.composite_type.inner {
                            CompositeInnerType::Func(f) => {
                                Some((f.params().to_vec(), f.results().to_vec()))
                            }
                            _ => None,
                        });
                    }
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(bad)?;
                    match import.ty {
                        TypeRef::Global(_) => s.imported_globals += 1,
                        TypeRef::Func(_) => s.imported_funcs += 1,
                        _ => {}
                    }
                    s.imports.push(format!("{}.{}", import.module, import.name));
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    s.funcs.push(ty.map_err(bad)?);
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    if memory.map_err(bad)?.shared {
                        return Err(refuse("the module declares a shared memory"));
                    }
                }
            }
            Payload::GlobalSection(reader) => {
                for global in reader {
                    let global = global.map_err(bad)?;
                    let value = if global.ty.content_type == ValType::I32 && !global.ty.mutable {
                        const_i32(&global.init_expr)
                    } else {
                        None
                    };
                    s.globals.push(value);
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(bad)?;
                    if export.name.len() > MAX_EXPORT_NAME {
                        return Err(refuse("an export name is longer than 1024 bytes"));
                    }
                    s.exports
                        .push((export.name.to_owned(), export.kind, export.index));
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data.map_err(bad)?;
                    if let DataKind::Active {
                        memory_index: 0,
                        offset_expr,
                    } = data.kind
                        && let Some(offset) = const_i32(&offset_expr)
                    {
                        #[allow(clippy::cast_sign_loss)]
                        s.segments.push((offset as u32, data.data));
                    }
                }
            }
            _ => {}
        }
    }
    s.segments.sort_by_key(|(offset, _)| *offset);
    for pair in s.segments.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if u64::from(a.0) + a.1.len() as u64 > u64::from(b.0) {
            return Err(refuse(format!(
                "two data segments overlap at address {}",
                b.0
            )));
        }
    }
    Ok(s)
}

/// The value of a constant expression that is exactly `i32.const N` (≤ 16 operators read).
fn const_i32(expr: &wasmparser::ConstExpr<'_>) -> Option<i32> {
    let mut reader = expr.get_operators_reader();
    let mut value = None;
    for _ in 0..MAX_CONST_OPS {
        match reader.read().ok()? {
            Operator::I32Const { value: v } if value.is_none() => value = Some(v),
            Operator::End => return value,
            _ => return None,
        }
    }
    None
}

impl Sections<'_> {
    fn global_address(&self, name: &str, export: (ExternalKind, u32)) -> Result<u32, PluginError> {
        let (kind, index) = export;
        if kind != ExternalKind::Global {
            return Err(refuse(format!(
                "the module exports {name} as a {}, and a plugin exports it as a global",
                kind_name(kind)
            )));
        }
        let Some(defined) = index.checked_sub(self.imported_globals) else {
            return Err(refuse(format!("{name} is an imported global")));
        };
        match self.globals.get(defined as usize) {
            #[allow(clippy::cast_sign_loss)]
            Some(Some(addr)) => Ok(*addr as u32),
            Some(None) => Err(refuse(format!(
                "{name} is not a constant i32 global initialised with i32.const"
            ))),
            None => Err(refuse(format!(
                "{name} names a global the module does not have"
            ))),
        }
    }

    fn check_function(
        &self,
        name: &str,
        export: Option<(ExternalKind, u32)>,
        params: &[ValType],
        results: &[ValType],
    ) -> Result<(), PluginError> {
        let Some((kind, index)) = export else {
            return Err(refuse(format!(
                "an incomplete Chock plugin: it does not export {name}"
            )));
        };
        if kind != ExternalKind::Func {
            return Err(refuse(format!(
                "the module exports {name} as a {}, and a plugin exports it as a function",
                kind_name(kind)
            )));
        }
        let ty = index
            .checked_sub(self.imported_funcs)
            .and_then(|i| self.funcs.get(i as usize))
            .and_then(|t| self.types.get(*t as usize))
            .and_then(Option::as_ref);
        match ty {
            Some((p, r)) if p == params && r == results => Ok(()),
            _ => Err(refuse(format!(
                "{name} has the wrong signature: Chock's ABI wants ({}) -> ({})",
                types(params),
                types(results)
            ))),
        }
    }

    /// `len` bytes at `addr`, from active segments that cover them without a hole.
    fn read(&self, addr: u32, len: u32) -> Option<Vec<u8>> {
        let end = u64::from(addr) + u64::from(len);
        let mut out = Vec::with_capacity(len as usize);
        let mut pos = u64::from(addr);
        while pos < end {
            let (start, data) = self
                .segments
                .iter()
                .find(|(s, d)| u64::from(*s) <= pos && pos < u64::from(*s) + d.len() as u64)?;
            let from = usize::try_from(pos - u64::from(*start)).ok()?;
            let to = usize::try_from((end - u64::from(*start)).min(data.len() as u64)).ok()?;
            out.extend_from_slice(data.get(from..to)?);
            pos = u64::from(*start) + to as u64;
        }
        Some(out)
    }

    fn read_u32(&self, addr: u32) -> Option<u32> {
        let b = self.read(addr, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

fn kind_name(kind: ExternalKind) -> &'static str {
    match kind {
        ExternalKind::Func | ExternalKind::FuncExact => "function",
        ExternalKind::Table => "table",
        ExternalKind::Memory => "memory",
        ExternalKind::Global => "global",
        ExternalKind::Tag => "tag",
    }
}

fn types(list: &[ValType]) -> String {
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A bounded little-endian reader over the blob body.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PluginError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(refuse(
                "the metadata ends in the middle of a field: rebuild the plugin",
            ));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, PluginError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, PluginError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, PluginError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn count(&mut self, max: u32, what: &str) -> Result<u32, PluginError> {
        let n = self.u32()?;
        if n > max {
            return Err(refuse(format!(
                "the metadata lists {n} {what}: at most {max}"
            )));
        }
        Ok(n)
    }

    fn raw_string(&mut self) -> Result<&'a [u8], PluginError> {
        let len = self.u32()?;
        if len > MAX_STRING_BYTES {
            return Err(refuse(format!(
                "the metadata holds a string of {len} bytes: at most {MAX_STRING_BYTES}"
            )));
        }
        self.take(len as usize)
    }

    /// A name: must be UTF-8.
    fn name(&mut self) -> Result<String, PluginError> {
        let raw = self.raw_string()?;
        String::from_utf8(raw.to_vec())
            .map_err(|_| refuse("the metadata holds a name that is not UTF-8"))
    }

    fn tag(&mut self) -> Result<bool, PluginError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(refuse(format!(
                "the metadata holds an optional field tagged {other}: a tag is 0 or 1"
            ))),
        }
    }

    fn opt_string(&mut self) -> Result<Option<String>, PluginError> {
        if self.tag()? {
            Ok(Some(self.name()?))
        } else {
            Ok(None)
        }
    }

    fn version(&mut self) -> Result<Version, PluginError> {
        let (major, minor, patch) = (self.u64()?, self.u64()?, self.u64()?);
        let pre = self.opt_string()?;
        let build = self.opt_string()?;
        let mut version = Version::new(major, minor, patch);
        if let Some(pre) = pre {
            version.pre = Prerelease::new(&pre)
                .map_err(|_| refuse("the plugin's version has an invalid pre-release part"))?;
        }
        if let Some(build) = build {
            version.build = BuildMetadata::new(&build)
                .map_err(|_| refuse("the plugin's version has invalid build metadata"))?;
        }
        Ok(version)
    }

    fn opt_version(&mut self) -> Result<Option<Version>, PluginError> {
        if self.tag()? {
            Ok(Some(self.version()?))
        } else {
            Ok(None)
        }
    }

    /// The English text of a `locales` list, flattened and cut.
    fn description(&mut self) -> Result<String, PluginError> {
        let n = self.count(MAX_LOCALES, "locales in one description")?;
        let mut english = String::new();
        for _ in 0..n {
            let locale = self.raw_string()?;
            let value = self.raw_string()?;
            if locale == b"en" {
                english = flatten(value);
            }
        }
        Ok(english)
    }

    fn properties(&mut self, depth: usize) -> Result<Vec<Property>, PluginError> {
        if depth > MAX_DEPTH {
            return Err(refuse(format!(
                "the metadata nests argument shapes deeper than {MAX_DEPTH}"
            )));
        }
        let n = self.count(MAX_PROPERTIES, "fields in one object")?;
        let mut out = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let name = String::from_utf8_lossy(self.raw_string()?).into_owned();
            let description = flatten(self.raw_string()?);
            let required = self.tag()?;
            let shape = self.shape(depth)?;
            out.push(Property {
                name,
                description,
                required,
                shape,
            });
        }
        Ok(out)
    }

    fn shape(&mut self, depth: usize) -> Result<Shape, PluginError> {
        Ok(match self.u8()? {
            1 => Shape::String,
            2 => Shape::Boolean,
            3 => Shape::Integer,
            4 => Shape::Number,
            5 => {
                if depth >= MAX_DEPTH {
                    return Err(refuse(format!(
                        "the metadata nests argument shapes deeper than {MAX_DEPTH}"
                    )));
                }
                let items = if self.tag()? {
                    Some(Box::new(self.shape(depth + 1)?))
                } else {
                    None
                };
                Shape::Array { items }
            }
            6 => Shape::Object {
                properties: self.properties(depth + 1)?,
            },
            other => {
                return Err(refuse(format!(
                    "the metadata holds an argument of unknown kind {other}"
                )));
            }
        })
    }
}

fn parse_body(abi: ChockAbi, body: &[u8]) -> Result<ChockModule, PluginError> {
    let mut c = Cursor { bytes: body, at: 0 };
    let name = c.name()?;
    // The author's name is shown (list, info, trust review) though policy never uses it, so it
    // passes the one name check every format applies; Chock's own naming is otherwise kept.
    crate::metadata::check_name_characters(&name).map_err(|problem| {
        refuse(format!(
            "the plugin's own name `{}` in its metadata {problem} (rebuild the plugin with a plain name)",
            crate::metadata::escape_name(&name)
        ))
    })?;
    let version = c.version()?;
    let _min = c.version()?;
    let _rec = c.opt_version()?;
    let _max = c.opt_version()?;
    let author = flatten(c.raw_string()?);
    let description = c.description()?;
    let count = c.count(MAX_BLOB_TOOLS, "tools")?;
    let mut tools = Vec::new();
    for index in 0..count {
        let name = String::from_utf8_lossy(c.raw_string()?).into_owned();
        let description = c.description()?;
        let ncap = c.count(MAX_BLOB_CAPS, "capabilities for one tool")?;
        let mut capabilities = Vec::new();
        for _ in 0..ncap {
            capabilities.push(String::from_utf8_lossy(c.raw_string()?).into_owned());
        }
        let properties = match abi {
            ChockAbi::V1 => None,
            ChockAbi::V2 => Some(c.properties(1)?),
        };
        tools.push(ChockTool {
            index,
            name,
            description,
            capabilities,
            properties,
        });
    }
    if c.at != body.len() {
        return Err(refuse(format!(
            "the metadata leaves {} bytes unread: its length or its fields are wrong",
            body.len() - c.at
        )));
    }
    Ok(ChockModule {
        abi,
        name,
        version,
        author,
        description,
        tools,
    })
}

/// Description text as Chock shows it: invalid UTF-8 becomes a fixed sentence, control
/// characters become spaces, and the text is cut at 200 bytes. Hidden characters stay, so the
/// spec check refuses the tool that carries them.
fn flatten(raw: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(raw) else {
        return "(this description is not valid UTF-8)".to_owned();
    };
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if out.len() > DESCRIPTION_CUT {
        let mut end = DESCRIPTION_CUT;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push('…');
    }
    out
}

/// Chock's binary argument record for `input` (already validated against the tool's schema):
/// one field per declared property in declaration order, `u8 present` then the value; a JSON
/// `null` counts as absent.
///
/// # Errors
/// A sentence for the model when a value cannot be written (a required field missing, a
/// number out of range, a record over 64 KiB).
pub fn encode_arguments(properties: &[Property], input: &Value) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let Some(object) = input.as_object() else {
        return Err("the arguments must be a JSON object".to_owned());
    };
    encode_fields(properties, object, &mut out)?;
    if out.len() > MAX_ARGUMENT_BYTES {
        return Err(format!(
            "the arguments take {} bytes in Chock's record, and the plugin's buffer holds {MAX_ARGUMENT_BYTES}: send less",
            out.len()
        ));
    }
    Ok(out)
}

fn encode_fields(
    properties: &[Property],
    object: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    for p in properties {
        match object.get(&p.name) {
            None | Some(Value::Null) if p.required => {
                return Err(format!(
                    "leaves out the field \"{}\", which this tool needs",
                    p.name
                ));
            }
            None | Some(Value::Null) => out.push(0),
            Some(value) => {
                out.push(1);
                encode_value(&p.shape, value, &p.name, out)?;
            }
        }
        if out.len() > MAX_ARGUMENT_BYTES {
            return Err(format!(
                "the arguments are larger than the plugin's {MAX_ARGUMENT_BYTES}-byte buffer: send less"
            ));
        }
    }
    Ok(())
}

fn encode_value(
    shape: &Shape,
    value: &Value,
    field: &str,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let wrong = |what: &str| format!("the field \"{field}\" must be {what}");
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

pub mod fixture;

#[cfg(test)]
mod tests;
