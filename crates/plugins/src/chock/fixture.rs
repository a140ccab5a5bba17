//! Chock plugins assembled from WebAssembly text, for tests and examples: a metadata blob
//! writer and a module whose tools answer as Chock's `hello` example does, plus tools that
//! misbehave on purpose. Bosun's own code, written from the published layout; assemble the text
//! with the `wat` crate.

use std::fmt::Write as _;

/// One field of a tool's arguments, as the blob writes it.
#[derive(Debug, Clone)]
pub struct BlobField {
    /// Its name.
    pub name: String,
    /// Its English description.
    pub description: String,
    /// Whether the tool needs it.
    pub required: bool,
    /// The shape bytes ([`shape`]).
    pub shape: Vec<u8>,
}

impl BlobField {
    /// A field.
    pub fn new(name: &str, description: &str, required: bool, shape: Vec<u8>) -> Self {
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            required,
            shape,
        }
    }
}

/// Shape bytes.
pub mod shape {
    use super::{BlobField, fields};

    /// A string.
    pub fn string() -> Vec<u8> {
        vec![1]
    }
    /// A boolean.
    pub fn boolean() -> Vec<u8> {
        vec![2]
    }
    /// An integer.
    pub fn integer() -> Vec<u8> {
        vec![3]
    }
    /// A number.
    pub fn number() -> Vec<u8> {
        vec![4]
    }
    /// An array of `items`.
    pub fn array(items: Vec<u8>) -> Vec<u8> {
        let mut out = vec![5, 1];
        out.extend(items);
        out
    }
    /// An object.
    pub fn object(properties: &[BlobField]) -> Vec<u8> {
        let mut out = vec![6];
        out.extend(fields(properties));
        out
    }
}

/// One tool as the blob writes it.
#[derive(Debug, Clone)]
pub struct BlobTool {
    /// Its name.
    pub name: String,
    /// Its English description.
    pub description: String,
    /// Its capability names.
    pub capabilities: Vec<String>,
    /// Its argument fields (written under ABI 2 only).
    pub fields: Vec<BlobField>,
}

impl BlobTool {
    /// A tool with no capabilities and no fields.
    pub fn new(name: &str, description: &str) -> Self {
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            capabilities: Vec::new(),
            fields: Vec::new(),
        }
    }
}

fn string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&u32::try_from(s.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(s);
}

fn version(out: &mut Vec<u8>, major: u64, minor: u64, patch: u64) {
    for n in [major, minor, patch] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&[0, 0]);
}

fn english(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(&1u32.to_le_bytes());
    string(out, b"en");
    string(out, text.as_bytes());
}

fn fields(properties: &[BlobField]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(
        &u32::try_from(properties.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    for p in properties {
        string(&mut out, p.name.as_bytes());
        string(&mut out, p.description.as_bytes());
        out.push(u8::from(p.required));
        out.extend_from_slice(&p.shape);
    }
    out
}

/// A metadata blob for ABI `abi` (1 or 2), version 0.1.0, Chock 0.1.0.
pub fn blob(abi: u32, name: &str, author: &str, description: &str, tools: &[BlobTool]) -> Vec<u8> {
    let mut body = Vec::new();
    string(&mut body, name.as_bytes());
    version(&mut body, 0, 1, 0);
    version(&mut body, 0, 1, 0);
    body.push(1);
    version(&mut body, 0, 1, 0);
    body.push(0);
    string(&mut body, author.as_bytes());
    english(&mut body, description);
    body.extend_from_slice(&u32::try_from(tools.len()).unwrap_or(u32::MAX).to_le_bytes());
    for tool in tools {
        string(&mut body, tool.name.as_bytes());
        english(&mut body, &tool.description);
        body.extend_from_slice(
            &u32::try_from(tool.capabilities.len())
                .unwrap_or(u32::MAX)
                .to_le_bytes(),
        );
        for cap in &tool.capabilities {
            string(&mut body, cap.as_bytes());
        }
        if abi >= 2 {
            body.extend(fields(&tool.fields));
        }
    }
    let mut out = Vec::new();
    out.extend_from_slice(&super::MAGIC.to_le_bytes());
    out.extend_from_slice(&abi.to_le_bytes());
    out.extend_from_slice(
        &u32::try_from(body.len() + 12)
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    out.extend(body);
    out
}

/// The tools of Chock's `hello` example: `hello` (takes nothing) and `greet` (`who`, and an
/// optional `loudly`).
pub fn hello_tools() -> Vec<BlobTool> {
    let mut greet = BlobTool::new("greet", "Greets somebody by name");
    greet.fields = vec![
        BlobField::new("who", "The name to greet.", true, shape::string()),
        BlobField::new(
            "loudly",
            "True to shout the greeting.",
            false,
            shape::boolean(),
        ),
    ];
    vec![BlobTool::new("hello", "A simple hello world tool"), greet]
}

/// The tools of [`ChockFixture::module_wat`] beyond `hello` and `greet`, in index order from
/// 2: each misbehaves in one way.
pub const HOSTILE_TOOLS: [&str; 6] = [
    "spin",        // 2: loops forever
    "wild_answer", // 3: answers with a record address outside memory
    "wild_text",   // 4: answers with text outside memory
    "odd_outcome", // 5: outcome 7
    "fail",        // 6: outcome 1 (a tool failure) with a message
    "echo",        // 7: answers with the argument bytes it was given
];

/// How to assemble a module.
#[derive(Debug, Clone)]
pub struct ChockFixture {
    /// The ABI word in front of the blob.
    pub abi_word: u32,
    /// The blob.
    pub blob: Vec<u8>,
    /// Where the ABI word is placed (the blob follows it).
    pub data_at: u32,
    /// What `chock_plugin_magic` holds (default: `data_at`).
    pub magic_global: Option<i64>,
    /// What `chock_plugin_metadata` holds (default: `data_at + 4`).
    pub metadata_global: Option<i64>,
    /// What `chock_plugin_init` returns.
    pub init_returns: i32,
    /// An import to add (`module`, `name`), as a function of type `() -> ()`.
    pub import: Option<(String, String)>,
    /// Bytes of a `.debug_info` custom section, as a debug build carries.
    pub debug_bytes: usize,
    /// Split the blob into two segments at this offset, with this many bytes of hole between.
    pub split: Option<(usize, u32)>,
    /// Declare this many 64 KiB pages of memory instead of what the layout needs.
    pub memory_pages: Option<u32>,
    /// `chock_plugin_init` loops forever instead of answering.
    pub init_spins: bool,
}

impl ChockFixture {
    /// Chock's `hello` at ABI 2, with the hostile tools after it when `hostile`.
    pub fn hello(hostile: bool) -> Self {
        let mut tools = hello_tools();
        if hostile {
            tools.extend(HOSTILE_TOOLS.iter().map(|name| {
                let mut tool = BlobTool::new(name, "Misbehaves on purpose.");
                if *name == "echo" {
                    tool.fields = vec![BlobField::new("text", "Anything.", false, shape::string())];
                }
                tool
            }));
        }
        let count = i32::try_from(tools.len()).unwrap_or(i32::MAX);
        Self::with_blob(
            2,
            blob(2, "hello", "Bosun", "A simple hello world plugin", &tools),
            count,
        )
    }

    /// Chock's `hello` at ABI 1: `hello` alone, or with `greet` and the hostile tools after
    /// it (`echo` then answers with the raw argument text it was handed).
    pub fn hello_v1(hostile: bool) -> Self {
        let mut tools = vec![BlobTool::new("hello", "A simple hello world tool")];
        if hostile {
            tools.push(BlobTool::new("greet", "Greets somebody by name"));
            tools.extend(
                HOSTILE_TOOLS
                    .iter()
                    .map(|name| BlobTool::new(name, "Misbehaves on purpose.")),
            );
        }
        let count = i32::try_from(tools.len()).unwrap_or(i32::MAX);
        Self::with_blob(
            1,
            blob(1, "hello", "Bosun", "A simple hello world plugin", &tools),
            count,
        )
    }

    /// A module carrying `blob` after the ABI word `abi_word`, whose init returns `tools`.
    pub fn with_blob(abi_word: u32, blob: Vec<u8>, tools: i32) -> Self {
        Self {
            abi_word,
            blob,
            data_at: 1024,
            magic_global: None,
            metadata_global: None,
            init_returns: tools,
            import: None,
            debug_bytes: 0,
            split: None,
            memory_pages: None,
            init_spins: false,
        }
    }

    /// The module as WebAssembly text.
    pub fn module_wat(&self) -> String {
        let mut data = self.abi_word.to_le_bytes().to_vec();
        data.extend_from_slice(&self.blob);
        let data_end = u64::from(self.data_at) + data.len() as u64 + 64;
        let args_at = data_end.div_ceil(65536) * 65536;
        let scratch = args_at + 65536;
        let pages = self.memory_pages.map_or(scratch / 65536 + 1, u64::from);
        let magic = self.magic_global.unwrap_or(i64::from(self.data_at));
        let metadata = self.metadata_global.unwrap_or(i64::from(self.data_at) + 4);
        let mut wat = String::from("(module\n");
        if let Some((module, name)) = &self.import {
            let _ = writeln!(wat, "  (import {module:?} {name:?} (func))");
        }
        let _ = writeln!(wat, "  (memory (export \"memory\") {pages})");
        let _ = writeln!(
            wat,
            "  (global (export \"chock_plugin_magic\") i32 (i32.const {magic}))"
        );
        let _ = writeln!(
            wat,
            "  (global (export \"chock_plugin_metadata\") i32 (i32.const {metadata}))"
        );
        wat.push_str("  (data (i32.const 256) \"Hello, world!\")\n");
        wat.push_str("  (data (i32.const 288) \"Hello, \")\n");
        wat.push_str("  (data (i32.const 320) \"the tool failed on purpose\")\n");
        match self.split {
            None => {
                let _ = writeln!(
                    wat,
                    "  (data (i32.const {}) \"{}\")",
                    self.data_at,
                    escape(&data)
                );
            }
            Some((at, hole)) => {
                let at = at.min(data.len());
                let second = u64::from(self.data_at) + at as u64 + u64::from(hole);
                let _ = writeln!(
                    wat,
                    "  (data (i32.const {}) \"{}\")",
                    self.data_at,
                    escape(&data[..at])
                );
                let _ = writeln!(
                    wat,
                    "  (data (i32.const {second}) \"{}\")",
                    escape(&data[at..])
                );
            }
        }
        if self.init_spins {
            wat.push_str(
                "  (func (export \"chock_plugin_init\") (result i32) (loop $spin (br $spin)) (i32.const 0))\n",
            );
        } else {
            let _ = writeln!(
                wat,
                "  (func (export \"chock_plugin_init\") (result i32) (i32.const {}))",
                self.init_returns
            );
        }
        let _ = writeln!(
            wat,
            "  (func (export \"chock_plugin_arguments\") (param $len i32) (result i32)
    (if (i32.gt_u (local.get $len) (i32.const 65536)) (then (return (i32.const 0))))
    (i32.const {args_at}))"
        );
        let _ = writeln!(
            wat,
            r#"  (func $answer (param $outcome i32) (param $ptr i32) (param $len i32) (result i32)
    (i32.store (i32.const 128) (local.get $outcome))
    (i32.store (i32.const 132) (local.get $ptr))
    (i32.store (i32.const 136) (local.get $len))
    (i32.const 128))
  (func $greet (param $p i32) (param $n i32) (result i32)
    (local $len i32) (local $end i32) (local $i i32) (local $c i32)
    (local.set $len (i32.load (i32.add (local.get $p) (i32.const 1))))
    (memory.copy (i32.const {scratch}) (i32.const 288) (i32.const 7))
    (memory.copy (i32.const {scratch_who}) (i32.add (local.get $p) (i32.const 5)) (local.get $len))
    (local.set $end (i32.add (i32.const {scratch_who}) (local.get $len)))
    (i32.store8 (local.get $end) (i32.const 33))
    ;; loudly: present and true
    (if (i32.and
          (i32.load8_u (i32.add (i32.add (local.get $p) (i32.const 5)) (local.get $len)))
          (i32.load8_u (i32.add (i32.add (local.get $p) (i32.const 6)) (local.get $len))))
      (then
        (local.set $i (i32.const {scratch}))
        (block $done (loop $up
          (br_if $done (i32.gt_u (local.get $i) (local.get $end)))
          (local.set $c (i32.load8_u (local.get $i)))
          (if (i32.and (i32.ge_u (local.get $c) (i32.const 97)) (i32.le_u (local.get $c) (i32.const 122)))
            (then (i32.store8 (local.get $i) (i32.sub (local.get $c) (i32.const 32)))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $up)))))
    (call $answer (i32.const 0) (i32.const {scratch}) (i32.add (local.get $len) (i32.const 8))))
  (func (export "chock_plugin_call") (param $i i32) (param $p i32) (param $n i32) (result i32)
    (if (i32.eq (local.get $i) (i32.const 0)) (then (return (call $answer (i32.const 0) (i32.const 256) (i32.const 13)))))
    (if (i32.eq (local.get $i) (i32.const 1)) (then (return (call $greet (local.get $p) (local.get $n)))))
    (if (i32.eq (local.get $i) (i32.const 2)) (then (loop $forever (br $forever))))
    (if (i32.eq (local.get $i) (i32.const 3)) (then (return (i32.const 0x7ffffff0))))
    (if (i32.eq (local.get $i) (i32.const 4)) (then (return (call $answer (i32.const 0) (i32.const 0x7ffffff0) (i32.const 64)))))
    (if (i32.eq (local.get $i) (i32.const 5)) (then (return (call $answer (i32.const 7) (i32.const 256) (i32.const 13)))))
    (if (i32.eq (local.get $i) (i32.const 6)) (then (return (call $answer (i32.const 1) (i32.const 320) (i32.const 26)))))
    (if (i32.eq (local.get $i) (i32.const 7)) (then (return (call $answer (i32.const 0) (local.get $p) (local.get $n)))))
    (i32.const 0))"#,
            scratch_who = scratch + 7,
        );
        if self.debug_bytes > 0 {
            let _ = writeln!(
                wat,
                "  (@custom \".debug_info\" \"{}\")",
                "\\00".repeat(self.debug_bytes)
            );
        }
        wat.push_str(")\n");
        wat
    }
}

fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for b in bytes {
        let _ = write!(out, "\\{b:02x}");
    }
    out
}
