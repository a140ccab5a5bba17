use super::fixture::{BlobField, BlobTool, ChockFixture, blob, hello_tools, shape};
use super::*;
use pretty_assertions::assert_eq;

const BUILTINS: &[&str] = &["read_file", "run_command"];

fn module(fixture: &ChockFixture) -> Vec<u8> {
    wat::parse_str(fixture.module_wat()).expect("the fixture assembles")
}

fn refusal(bytes: &[u8]) -> String {
    match ChockModule::read(bytes) {
        Ok(m) => panic!("expected a refusal, read {m:?}"),
        Err(e) => e.to_string(),
    }
}

use bosun_core::text::hex;

/// The hello blob as the contract derives it from Chock's wire format, byte for byte.
#[test]
fn the_blob_writer_matches_chocks_hello_blob() {
    let expected = concat!(
        "43484b9e02000000760100000500000068656c6c6f000000000000000001000000000000000000000000000000000000",
        "000000000000000100000000000000000000000000000000000100000000000000000100000000000000000000000000",
        "0000000000280000005472697374616e20526f7373203c7472697374616e2e726f7373406d69647374616c6c2e636f6d",
        "3e0100000002000000656e1b000000412073696d706c652068656c6c6f20776f726c6420706c7567696e020000000500",
        "000068656c6c6f0100000002000000656e19000000412073696d706c652068656c6c6f20776f726c6420746f6f6c0000",
        "0000000000000500000067726565740100000002000000656e1700000047726565747320736f6d65626f647920627920",
        "6e616d6500000000020000000300000077686f12000000546865206e616d6520746f2067726565742e0101060000006c",
        "6f75646c791b0000005472756520746f2073686f757420746865206772656574696e672e0002",
    );
    let written = blob(
        2,
        "hello",
        "Tristan Ross <tristan.ross@midstall.com>",
        "A simple hello world plugin",
        &hello_tools(),
    );
    assert_eq!(written.len(), 374);
    assert_eq!(hex(&written), expected);
}

#[test]
fn hello_is_read_without_running_it() {
    let m = ChockModule::read(&module(&ChockFixture::hello(false))).unwrap();
    assert_eq!(m.abi, ChockAbi::V2);
    assert_eq!(m.name, "hello");
    assert_eq!(m.version, Version::new(0, 1, 0));
    assert_eq!(m.description, "A simple hello world plugin");
    let names: Vec<&str> = m.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["hello", "greet"]);
    let (manifest, refused) = m.manifest(BUILTINS).unwrap();
    assert!(refused.is_empty());
    assert_eq!(manifest.tools[0].spec.input_schema["properties"], json!({}));
    assert_eq!(
        manifest.tools[1].spec.input_schema,
        json!({
            "type": "object",
            "properties": {
                "who": {"type": "string", "description": "The name to greet."},
                "loudly": {"type": "boolean", "description": "True to shout the greeting."}
            },
            "required": ["who"]
        })
    );
    assert_eq!(manifest.tools[1].spec.risk, Risk::Read);
}

#[test]
fn abi_1_tools_take_no_schema() {
    let m = ChockModule::read(&module(&ChockFixture::hello_v1(false))).unwrap();
    assert_eq!(m.abi, ChockAbi::V1);
    assert_eq!(m.tools.len(), 1);
    assert_eq!(m.tools[0].properties, None);
    let (manifest, _) = m.manifest(BUILTINS).unwrap();
    assert_eq!(
        manifest.tools[0].spec.input_schema,
        json!({"type": "object"})
    );
}

#[test]
fn a_debug_build_with_data_elsewhere_loads() {
    let mut fixture = ChockFixture::hello(false);
    fixture.data_at = 1_048_576;
    fixture.debug_bytes = 300 * 1024;
    let bytes = module(&fixture);
    assert!(bytes.len() > 300 * 1024);
    let m = ChockModule::read(&bytes).unwrap();
    assert_eq!(m.tools.len(), 2);
}

#[test]
fn touching_segments_are_joined_and_holes_are_never_read_as_zeros() {
    let mut fixture = ChockFixture::hello(false);
    fixture.split = Some((100, 0));
    assert!(ChockModule::read(&module(&fixture)).is_ok());
    fixture.split = Some((100, 8));
    assert!(
        refusal(&module(&fixture)).contains("holds fewer"),
        "{}",
        refusal(&module(&fixture))
    );
}

#[test]
fn every_broken_module_is_refused_with_its_reason() {
    let hello = ChockFixture::hello(false);
    let with = |f: &dyn Fn(&mut ChockFixture)| {
        let mut fixture = hello.clone();
        f(&mut fixture);
        refusal(&module(&fixture))
    };
    let mut struck = hello.blob.clone();
    struck[..4].copy_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
    let cases: Vec<(String, &str)> = vec![
        (
            with(&|f| f.blob = struck.clone()),
            "not a Chock plugin: the metadata starts with 0xDEADBEEF, and every Chock plugin starts with 0x9E4B4843",
        ),
        (
            with(&|f| {
                f.abi_word = 7;
                f.blob[4..8].copy_from_slice(&7u32.to_le_bytes());
            }),
            "built for plugin ABI 7, Bosun speaks Chock plugin ABIs 1 and 2: rebuild the plugin",
        ),
        (
            with(&|f| f.abi_word = 9),
            "the module says it is plugin ABI 9 and its metadata says ABI 2",
        ),
        (
            with(&|f| f.blob[8..12].copy_from_slice(&u32::MAX.to_le_bytes())),
            "the metadata says it is 4294967295 bytes long: a blob is 12 to 1048576 bytes",
        ),
        (
            with(&|f| f.blob[8..12].copy_from_slice(&5000u32.to_le_bytes())),
            "the metadata says it is 5000 bytes long, but the module's data holds fewer",
        ),
        (
            with(&|f| {
                let short = u32::try_from(f.blob.len() - 4).unwrap();
                f.blob[8..12].copy_from_slice(&short.to_le_bytes());
            }),
            "the metadata ends in the middle of a field",
        ),
        (
            with(&|f| f.metadata_global = Some(0x7fff_0000)),
            "chock_plugin_metadata points at address 2147418112, which no data segment holds",
        ),
        (
            with(&|f| f.magic_global = Some(60_000)),
            "chock_plugin_magic points at address 60000, which no data segment holds: the module carries no ABI word",
        ),
        (
            with(&|f| f.import = Some(("env".into(), "read_file".into()))),
            "the module imports env.read_file: a Chock plugin may import nothing",
        ),
        (with(&|f| f.split = Some((100, 16))), "holds fewer"),
    ];
    for (got, want) in cases {
        assert!(got.contains(want), "got {got:?}, want {want:?}");
    }
}

#[test]
fn a_chock_plugin_name_with_terminal_controls_is_refused_naming_the_character() {
    let named = |name: &str| {
        let tools = hello_tools();
        let count = i32::try_from(tools.len()).unwrap();
        let fixture =
            ChockFixture::with_blob(2, blob(2, name, "Bosun", "Says hello", &tools), count);
        module(&fixture)
    };
    crate::metadata::assert_refuses_hostile_names(|name| refusal(&named(name)));
    // Chock's naming is otherwise the author's: plain names of any case still load.
    for name in ["hello", "Hello World", "chock_plugin_hello", "héllo"] {
        let m = ChockModule::read(&named(name)).unwrap();
        assert_eq!(m.name, name);
    }
}

#[test]
fn a_blob_with_bytes_left_over_is_refused() {
    let mut blob_bytes = ChockFixture::hello(false).blob;
    blob_bytes.extend_from_slice(&[0, 0, 0, 0]);
    let total = u32::try_from(blob_bytes.len()).unwrap();
    blob_bytes[8..12].copy_from_slice(&total.to_le_bytes());
    let fixture = ChockFixture::with_blob(2, blob_bytes, 2);
    assert!(refusal(&module(&fixture)).contains("leaves 4 bytes unread"));
}

#[test]
fn files_that_are_not_modules_are_refused() {
    assert!(refusal(b"#!/bin/sh\n").contains("not a WebAssembly module: it starts with #!/b"));
    assert!(refusal(&[0u8; 64]).contains("not a WebAssembly module"));
    let bytes = module(&ChockFixture::hello(false));
    assert!(refusal(&bytes[..bytes.len() / 2]).contains("malformed"));
    let component = wat::parse_str("(component)").unwrap();
    assert!(refusal(&component).contains("component, not a Chock module"));
}

#[test]
fn wrong_export_kinds_and_signatures_are_refused() {
    let base = |extra: &str, metadata: &str, init: &str| {
        format!(
            r#"(module (memory (export "memory") 1)
                (global (export "chock_plugin_magic") i32 (i32.const 16))
                {metadata}
                (data (i32.const 16) "\02\00\00\00")
                {init}
                (func (export "chock_plugin_arguments") (param i32) (result i32) (i32.const 0))
                (func (export "chock_plugin_call") (param i32 i32 i32) (result i32) (i32.const 0))
                {extra})"#
        )
    };
    let global = r#"(global (export "chock_plugin_metadata") i32 (i32.const 20))"#;
    let init = r#"(func (export "chock_plugin_init") (result i32) (i32.const 0))"#;
    let as_func = r#"(func (export "chock_plugin_metadata") (result i32) (i32.const 20))"#;
    let got = refusal(&wat::parse_str(base("", as_func, init)).unwrap());
    assert!(
        got.contains(
            "exports chock_plugin_metadata as a function, and a plugin exports it as a global"
        ),
        "{got}"
    );
    let bad_init = r#"(func (export "chock_plugin_init") (param i32) (result i32) (i32.const 0))"#;
    let got = refusal(&wat::parse_str(base("", global, bad_init)).unwrap());
    assert!(
        got.contains("chock_plugin_init has the wrong signature"),
        "{got}"
    );
    let got = refusal(&wat::parse_str(base("", global, "")).unwrap());
    assert!(got.contains("does not export chock_plugin_init"), "{got}");
    let mutable = base(
        "",
        r#"(global (export "chock_plugin_metadata") (mut i32) (i32.const 20))"#,
        init,
    );
    let got = refusal(&wat::parse_str(mutable).unwrap());
    assert!(got.contains("not a constant i32 global"), "{got}");
    let no_magic = r#"(module (memory (export "memory") 1))"#;
    assert!(refusal(&wat::parse_str(no_magic).unwrap()).contains("exports no chock_plugin_magic"));
    let overlap = base(r#"(data (i32.const 18) "\00\00\00\00")"#, global, init);
    assert!(refusal(&wat::parse_str(overlap).unwrap()).contains("overlap"));
}

fn manifest_of(tools: Vec<BlobTool>) -> Result<(crate::Manifest, Vec<RefusedTool>), PluginError> {
    let count = i32::try_from(tools.len()).unwrap();
    let fixture = ChockFixture::with_blob(2, blob(2, "t", "a", "d", &tools), count);
    ChockModule::read(&module(&fixture))?.manifest(BUILTINS)
}

#[test]
fn a_tool_named_like_a_built_in_refuses_the_whole_plugin() {
    let tools = vec![
        BlobTool::new("harmless", "x"),
        BlobTool::new("read_file", "x"),
    ];
    let err = manifest_of(tools).unwrap_err().to_string();
    assert!(err.contains("read_file"), "{err}");
}

#[test]
fn unusable_tools_are_refused_alone_with_their_reason() {
    let mut deep = shape::string();
    for _ in 0..8 {
        deep = shape::object(&[BlobField::new("x", "d", false, deep)]);
    }
    let wide: Vec<BlobField> = (0..33)
        .map(|i| BlobField::new(&format!("f{i}"), "d", false, shape::string()))
        .collect();
    let mut unknown_cap = BlobTool::new("commits", "x");
    unknown_cap.capabilities = vec!["git.commit".into()];
    let mut star_cap = BlobTool::new("stars", "x");
    star_cap.capabilities = vec!["fs.*".into()];
    let mut dotted = BlobTool::new("dotted", "x");
    dotted.fields = vec![BlobField::new("a.b", "d", true, shape::string())];
    let mut nested = BlobTool::new("nested", "x");
    nested.fields = vec![BlobField::new("deep", "d", true, deep)];
    let mut too_wide = BlobTool::new("wide", "x");
    too_wide.fields = wide;
    let tools = vec![
        BlobTool::new("ok", "Fine."),
        unknown_cap,
        star_cap,
        dotted,
        too_wide,
        BlobTool::new("Bad-Name", "x"),
        BlobTool::new("hidden", "Looks fine\u{202e}"),
        BlobTool::new("ok", "The same name again."),
    ];
    let result = manifest_of(tools);
    // 33 fields is over the blob's own bound: the whole blob is refused, as Chock's reader does.
    assert!(result.unwrap_err().to_string().contains("33 fields"));

    let mut unknown_cap = BlobTool::new("commits", "x");
    unknown_cap.capabilities = vec!["git.commit".into()];
    let mut star_cap = BlobTool::new("stars", "x");
    star_cap.capabilities = vec!["fs.*".into()];
    let mut dotted = BlobTool::new("dotted", "x");
    dotted.fields = vec![BlobField::new("a.b", "d", true, shape::string())];
    let tools = vec![
        BlobTool::new("ok", "Fine."),
        unknown_cap,
        star_cap,
        dotted,
        BlobTool::new("Bad-Name", "x"),
        BlobTool::new("hidden", "Looks fine\u{202e}"),
        BlobTool::new("ok", "The same name again."),
    ];
    let (manifest, refused) = manifest_of(tools).unwrap();
    assert_eq!(manifest.tools.len(), 1);
    let reasons: Vec<(&str, &str)> = refused
        .iter()
        .map(|r| (r.tool.as_str(), r.reason.as_str()))
        .collect();
    let expect = [
        ("commits", "which bosun cannot judge"),
        ("stars", "dot-separated labels"),
        ("dotted", "not a usable label"),
        ("Bad-Name", "not one bosun can offer"),
        ("hidden", "invisible"),
        ("ok", "same name"),
    ];
    assert_eq!(reasons.len(), expect.len(), "{reasons:?}");
    for ((tool, reason), (want_tool, want_reason)) in reasons.iter().zip(expect) {
        assert_eq!(*tool, want_tool);
        assert!(
            reason.to_lowercase().contains(want_reason),
            "{tool}: {reason}"
        );
    }

    let mut nested = BlobTool::new("nested", "x");
    let mut deep = shape::string();
    for _ in 0..9 {
        deep = shape::object(&[BlobField::new("x", "d", false, deep)]);
    }
    nested.fields = vec![BlobField::new("deep", "d", true, deep)];
    assert!(
        manifest_of(vec![nested])
            .unwrap_err()
            .to_string()
            .contains("deeper than 8")
    );
}

#[test]
fn capabilities_are_judged_as_bosuns() {
    let mut tool = BlobTool::new("fetch", "Fetches.");
    tool.capabilities = vec!["net.connect.com.github.api.443".into(), "fs.read".into()];
    let (manifest, refused) = manifest_of(vec![tool]).unwrap();
    assert!(refused.is_empty(), "{refused:?}");
    let caps = &manifest.tools[0].capabilities;
    assert_eq!(caps[0].capability, Capability::NetHttp);
    assert_eq!(caps[0].hosts, Some(vec!["api.github.com".to_owned()]));
    assert_eq!(caps[1].capability, Capability::FsRead);
    assert_eq!(manifest.tools[0].spec.risk, Risk::Network);
}

#[test]
fn descriptions_are_flattened_and_cut_where_chock_cuts_them() {
    let long = "a\u{7}b ".to_owned() + &"é".repeat(150);
    let m = manifest_of(vec![BlobTool::new("long", &long)]).unwrap().0;
    let d = &m.tools[0].spec.description;
    assert!(d.starts_with("a b "), "{d}");
    assert!(d.len() <= DESCRIPTION_CUT + '…'.len_utf8());
    assert!(d.ends_with('…'));
}

#[test]
fn arguments_are_written_as_chocks_record() {
    let m = ChockModule::read(&module(&ChockFixture::hello(false))).unwrap();
    let greet = m.tools[1].properties.as_ref().unwrap();
    assert_eq!(
        hex(&encode_arguments(greet, &json!({"who": "Ross"})).unwrap()),
        "010400000052 6f737300".replace(' ', "")
    );
    assert_eq!(
        hex(&encode_arguments(greet, &json!({"who": "Ross", "loudly": true})).unwrap()),
        "01040000005 26f73730101".replace(' ', "")
    );
    assert_eq!(
        hex(&encode_arguments(greet, &json!({"who": "Ross", "loudly": null, "extra": 1})).unwrap()),
        "0104000000526f737300"
    );
    assert!(
        encode_arguments(greet, &json!({}))
            .unwrap_err()
            .to_string()
            .contains("\"who\"")
    );
    assert!(
        encode_arguments(greet, &json!({"who": 3}))
            .unwrap_err()
            .to_string()
            .contains("a string")
    );
    let big = "x".repeat(MAX_ARGUMENT_BYTES);
    assert!(
        encode_arguments(greet, &json!({"who": big}))
            .unwrap_err()
            .to_string()
            .contains("buffer")
    );
}

#[test]
fn nested_values_are_written_in_declaration_order() {
    let item = [
        BlobField::new("n", "d", true, shape::integer()),
        BlobField::new("x", "d", false, shape::number()),
    ];
    let props = vec![Property {
        name: "list".into(),
        description: String::new(),
        required: true,
        shape: Shape::Array {
            items: Some(Box::new(Shape::Object {
                properties: vec![
                    Property {
                        name: item[0].name.clone(),
                        description: String::new(),
                        required: true,
                        shape: Shape::Integer,
                    },
                    Property {
                        name: item[1].name.clone(),
                        description: String::new(),
                        required: false,
                        shape: Shape::Number,
                    },
                ],
            })),
        },
    }];
    let bytes =
        encode_arguments(&props, &json!({"list": [{"x": 1.5, "n": -2}, {"n": 3.0}]})).unwrap();
    let mut want = vec![1u8];
    want.extend_from_slice(&2u32.to_le_bytes());
    want.push(1);
    want.extend_from_slice(&(-2i64).to_le_bytes());
    want.push(1);
    want.extend_from_slice(&1.5f64.to_bits().to_le_bytes());
    want.push(1);
    want.extend_from_slice(&3i64.to_le_bytes());
    want.push(0);
    assert_eq!(bytes, want);
}

#[test]
fn text_for_the_model_drops_controls_and_shows_hidden_characters() {
    assert_eq!(text_for_model("a\u{1b}[31mb\n\tc"), "a[31mb\n\tc");
    assert!(!text_for_model("x\u{202e}y").contains('\u{202e}'));
}

/// Hostile bytes never panic the reader: every truncation of a module, and every byte of it
/// flipped in turn, read as a module or a clear refusal.
#[test]
fn every_truncation_and_single_byte_change_is_read_or_refused_without_panicking() {
    for fixture in [ChockFixture::hello(true), ChockFixture::hello_v1(true)] {
        let bytes = module(&fixture);
        for len in 0..bytes.len() {
            let _ = ChockModule::read(&bytes[..len]);
        }
        for at in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut mutated = bytes.clone();
                mutated[at] ^= flip;
                if let Ok(m) = ChockModule::read(&mutated) {
                    // What reads as a module still obeys every bound.
                    assert!(m.tools.len() <= MAX_BLOB_TOOLS as usize);
                    let _ = m.manifest(BUILTINS);
                }
            }
        }
    }
}

/// Arguments built for hostile schemas never panic the encoder.
#[test]
fn the_argument_encoder_survives_mismatched_values() {
    let m = ChockModule::read(&module(&ChockFixture::hello(false))).unwrap();
    let greet = m.tools[1].properties.as_ref().unwrap();
    for input in [
        json!(null),
        json!([]),
        json!({"who": {"nested": true}}),
        json!({"who": "x", "loudly": "yes"}),
        json!({"who": 1e308}),
        json!({"who": "\u{0}\u{ffff}"}),
    ] {
        let _ = encode_arguments(greet, &input);
    }
    let props = vec![Property {
        name: "n".into(),
        description: String::new(),
        required: true,
        shape: Shape::Integer,
    }];
    for value in [
        json!(1e300),
        json!(-1e300),
        json!(1.5),
        json!(f64::MAX),
        json!("1"),
    ] {
        assert!(
            encode_arguments(&props, &json!({ "n": value })).is_err(),
            "{value}"
        );
    }
    assert!(encode_arguments(&props, &json!({ "n": 9_007_199_254_740_993_i64 })).is_ok());
}
