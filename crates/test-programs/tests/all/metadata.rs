//! Every component carries its metadata where the host reads it: one `bosun-plugin-metadata`
//! custom section, inside the component's first nested core module (the plugin's code), none at
//! the top level.

use pretty_assertions::assert_eq;
use serde_json::Value;
use wasmparser::{Parser, Payload};

const SECTION: &str = "bosun-plugin-metadata";

/// Every custom section called `name`: (nesting depth, index of the core module it sits in
/// among all modules met so far, contents). Depth 0 is the component itself.
fn sections<'a>(bytes: &'a [u8], name: &str) -> Vec<(usize, usize, &'a [u8])> {
    let mut depth = 0usize;
    let mut modules = 0usize;
    let mut found = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.unwrap() {
            Payload::Version { encoding, .. } => {
                depth += 1;
                if encoding == wasmparser::Encoding::Module {
                    modules += 1;
                }
            }
            Payload::End(_) => depth -= 1,
            Payload::CustomSection(section) if section.name() == name => {
                found.push((depth - 1, modules.saturating_sub(1), section.data()));
            }
            _ => {}
        }
    }
    found
}

/// The top-level import names of a component.
fn imports(bytes: &[u8]) -> Vec<String> {
    let mut depth = 0usize;
    let mut names = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.unwrap() {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth -= 1,
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    names.push(import.unwrap().name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    names
}

fn component(path: &str) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        &bytes[..8],
        b"\0asm\x0d\x00\x01\x00",
        "{path} is not a component"
    );
    bytes
}

/// The metadata of a component that must have exactly one, well-placed section.
fn metadata(path: &str) -> Value {
    let bytes = component(path);
    let found = sections(&bytes, SECTION);
    assert_eq!(found.len(), 1, "{path}: {} metadata sections", found.len());
    let (depth, module, data) = found[0];
    assert_eq!((depth, module), (1, 0), "{path}: the section moved");
    serde_json::from_slice(data).unwrap()
}

fn tool_names(doc: &Value) -> Vec<&str> {
    doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[test]
fn examples_carry_their_metadata_in_the_core_module() {
    let expected: &[(&str, &[&str])] = &[
        ("fs-stats", &["fs_stats"]),
        ("hello", &["greet"]),
        (
            "todos",
            &[
                "todo_add",
                "todo_list",
                "todo_update",
                "todo_remove",
                "todo_clear",
            ],
        ),
        ("web-tools", &["web_fetch", "web_search"]),
    ];
    let examples = bosun_test_programs::examples();
    assert_eq!(
        examples.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        expected.iter().map(|(name, _)| *name).collect::<Vec<_>>()
    );
    for ((name, path), (_, tools)) in examples.iter().zip(expected) {
        let doc = metadata(path);
        assert_eq!(doc["metadata_version"], 1, "{name}");
        assert_eq!(doc["api_version"], "1.0.0", "{name}");
        assert_eq!(doc["name"], *name);
        assert_eq!(doc["version"], "0.1.0", "{name}");
        assert_eq!(tool_names(&doc), *tools, "{name}");
        for tool in doc["tools"].as_array().unwrap() {
            let schema = &tool["input_schema"];
            assert_eq!(schema["type"], "object", "{name}");
            assert!(
                serde_json::to_vec(schema).unwrap().len() <= 8 * 1024,
                "{name}"
            );
            assert!(["read", "network"].contains(&tool["risk"].as_str().unwrap()));
            assert_eq!(tool["classification"], "PUBLIC");
        }
    }
    assert!(metadata(bosun_test_programs::TODOS)["prompt"].is_string());
}

#[test]
fn web_tools_scopes_its_hosts_to_the_input_and_the_config() {
    let doc = metadata(bosun_test_programs::WEB_TOOLS);
    assert_eq!(
        doc["tools"][0]["capabilities"],
        serde_json::json!([{"capability": "net.http", "host_from_input": "/url"}])
    );
    assert_eq!(
        doc["tools"][1]["capabilities"],
        serde_json::json!([{"capability": "net.http", "hosts_from_config": "search_endpoint"}])
    );
}

#[test]
fn hostile_programs_carry_the_metadata_they_attack_with() {
    for (name, path) in bosun_test_programs::programs() {
        let bytes = component(path);
        let found = sections(&bytes, SECTION);
        match *name {
            "no-metadata" => assert!(found.is_empty(), "{name}"),
            "malformed-metadata" => {
                assert_eq!(found.len(), 1);
                assert!(serde_json::from_slice::<Value>(found[0].2).is_err());
            }
            _ => assert_eq!(metadata(path)["name"], *name),
        }
    }
    let shadow = metadata(bosun_test_programs::SHADOW_BUILTIN);
    assert_eq!(tool_names(&shadow), ["read_file"]);
    let oversize = metadata(bosun_test_programs::OVERSIZE_SCHEMA);
    assert!(
        serde_json::to_vec(&oversize["tools"][0]["input_schema"])
            .unwrap()
            .len()
            > 8 * 1024
    );
    let hidden = metadata(bosun_test_programs::ZERO_WIDTH_DESCRIPTION);
    assert!(
        hidden["tools"][0]["description"]
            .as_str()
            .unwrap()
            .contains('\u{200B}')
    );
}

#[test]
fn components_import_what_their_attacks_need() {
    let http = imports(&component(bosun_test_programs::HTTP_ANYWHERE));
    assert!(
        http.iter()
            .any(|i| i.starts_with("wasi:http/outgoing-handler@0.2")),
        "{http:?}"
    );
    let ambient = imports(&component(bosun_test_programs::AMBIENT_AUTHORITY));
    for interface in ["wasi:sockets/tcp@0.2", "wasi:cli/environment@0.2"] {
        assert!(
            ambient.iter().any(|i| i.starts_with(interface)),
            "{ambient:?}"
        );
    }
    let log = imports(&component(bosun_test_programs::LOG_FLOOD));
    assert!(
        log.iter().any(|i| i == "bosun:plugin/host@1.0.0"),
        "{log:?}"
    );
    // A pure plugin reaches nothing it was not given: no HTTP, no sockets.
    let hello = imports(&component(bosun_test_programs::HELLO));
    assert!(
        !hello
            .iter()
            .any(|i| i.starts_with("wasi:http") || i.starts_with("wasi:sockets")),
        "{hello:?}"
    );
}
