//! Test components and plugin directories.

use std::path::{Path, PathBuf};

use bosun_plugins::{Manifest, PluginError};
use serde_json::{Value, json};
use wasm_encoder::{
    CodeSection, Component, CustomSection, Function, FunctionSection, Module, ModuleSection,
    NestedComponentSection, StartSection, TypeSection,
};

/// The host's built-ins, as the agent passes them.
pub const BUILTINS: &[&str] = &[
    "list_files",
    "read_file",
    "search",
    "create_file",
    "apply_patch",
    "run_command",
    "restrict_self",
];

/// A valid metadata document with one tool.
pub fn valid_metadata() -> Value {
    json!({
        "metadata_version": 1,
        "api_version": "1.0.0",
        "name": "web-tools",
        "version": "0.1.0",
        "description": "Fetch and search the web.",
        "tools": [{
            "name": "web_fetch",
            "description": "Fetch a web page and return its readable text.",
            "input_schema": {
                "type": "object",
                "properties": {"url": {"type": "string"}},
                "required": ["url"]
            },
            "risk": "network",
            "capabilities": [{"capability": "net.http", "host_from_input": "/url"}]
        }]
    })
}

/// Metadata for plugin `name` with the given tools, each `(name, capabilities)`.
pub fn metadata_with_tools(name: &str, tools: &[(&str, Value)]) -> Value {
    let tools: Vec<Value> = tools
        .iter()
        .map(|(tool, caps)| {
            json!({
                "name": tool,
                "description": format!("The {tool} tool."),
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
                "risk": "read",
                "capabilities": caps,
            })
        })
        .collect();
    json!({
        "metadata_version": 1,
        "api_version": "1.0.0",
        "name": name,
        "version": "1.0.0",
        "tools": tools,
    })
}

/// A core module like a guest's: `functions` function bodies (of about 100 bytes each), an
/// optional start function that loops forever, and the given custom sections.
pub fn guest_module(sections: &[(&str, &[u8])], functions: u32, start_loops: bool) -> Module {
    let mut module = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([], []);
    module.section(&types);
    let mut funcs = FunctionSection::new();
    let total = functions + u32::from(start_loops);
    for _ in 0..total {
        funcs.function(0);
    }
    module.section(&funcs);
    if start_loops {
        module.section(&StartSection { function_index: 0 });
    }
    let mut code = CodeSection::new();
    if start_loops {
        let mut f = Function::new([]);
        f.instructions()
            .loop_(wasm_encoder::BlockType::Empty)
            .br(0)
            .end()
            .end();
        code.function(&f);
    }
    for i in 0..functions {
        let mut f = Function::new([]);
        let mut sink = f.instructions();
        for k in 0..16 {
            sink.i32_const(i as i32 * 31 + k).drop();
        }
        sink.end();
        code.function(&f);
    }
    module.section(&code);
    for (name, data) in sections {
        module.section(&CustomSection {
            name: (*name).into(),
            data: (*data).into(),
        });
    }
    module
}

/// The metadata section for `meta`.
pub fn section(meta: &Value) -> Vec<u8> {
    serde_json::to_vec(meta).unwrap()
}

/// A component whose nested core module carries the metadata, as wasm-component-ld makes it.
pub fn nested(meta: &Value) -> Vec<u8> {
    let json = section(meta);
    let module = guest_module(&[("bosun-plugin-metadata", &json)], 4, false);
    let mut component = Component::new();
    component.section(&ModuleSection(&module));
    component.finish()
}

/// A component with the metadata at its top level.
pub fn top_level(meta: &Value) -> Vec<u8> {
    let module = guest_module(&[], 4, false);
    let mut component = Component::new();
    component.section(&ModuleSection(&module));
    component.section(&CustomSection {
        name: "bosun-plugin-metadata".into(),
        data: section(meta).into(),
    });
    component.finish()
}

/// A component holding a component whose core module carries the metadata.
pub fn doubly_nested(meta: &Value) -> Vec<u8> {
    let json = section(meta);
    let module = guest_module(&[("bosun-plugin-metadata", &json)], 2, false);
    let mut inner = Component::new();
    inner.section(&ModuleSection(&module));
    let mut outer = Component::new();
    outer.section(&ModuleSection(&guest_module(&[], 2, false)));
    outer.section(&NestedComponentSection(&inner));
    outer.finish()
}

/// A component of about `size` bytes: `functions` sized to fill it, and the metadata.
pub fn sized_component(meta: &Value, size: usize) -> Vec<u8> {
    let json = section(meta);
    // Each body is about 49 bytes (16 x i32.const/drop) plus its length prefix.
    let functions = (size.saturating_sub(json.len()) / 50) as u32;
    let module = guest_module(&[("bosun-plugin-metadata", &json)], functions, false);
    let mut component = Component::new();
    component.section(&ModuleSection(&module));
    component.finish()
}

/// Checks `meta` as the host would, from a nested component.
pub fn check(meta: &Value) -> Result<Manifest, PluginError> {
    Manifest::from_component(&nested(meta), BUILTINS)
}

/// The error message of checking `meta`.
pub fn refusal(meta: &Value) -> String {
    match check(meta) {
        Ok(_) => panic!("accepted: {meta}"),
        Err(e) => e.to_string(),
    }
}

/// Writes `<root>/<dir>/plugin.wasm`; returns the directory.
pub fn install(root: &Path, dir: &str, bytes: &[u8]) -> PathBuf {
    let dir = root.join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("plugin.wasm"), bytes).unwrap();
    dir
}

/// A hundred plugins of realistic size (100-300 KB components, 8 tools each with a `net.http`
/// capability): the even ones user plugins under `home` (returned as config entries), the odd
/// ones project plugins of the workspace `root`. Shared by the scale test and the catalog bench.
pub fn install_hundred_plugins(
    home: &Path,
    root: &Path,
) -> std::collections::BTreeMap<String, bosun_plugins::PluginConfig> {
    let mut config = std::collections::BTreeMap::new();
    for i in 0..100 {
        let tools: Vec<(String, Value)> = (0..8)
            .map(|t| {
                (
                    format!("p{i}_tool{t}"),
                    json!([{"capability": "net.http", "hosts": [format!("api{t}.example.com")]}]),
                )
            })
            .collect();
        let tools: Vec<(&str, Value)> =
            tools.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
        let meta = metadata_with_tools(&format!("plugin-{i}"), &tools);
        let bytes = sized_component(&meta, 100_000 + (i * 2_000));
        let local = format!("p{i:03}");
        if i % 2 == 0 {
            install(&home.join("plugins"), &local, &bytes);
            config.insert(local.clone(), bosun_plugins::PluginConfig::new(local));
        } else {
            install(&root.join(".bosun").join("plugins"), &local, &bytes);
        }
    }
    config
}
