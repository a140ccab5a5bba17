//! The engine end to end: pre-initialise, activate a Forge plugin, call its tool.

use std::path::Path;

use bosun_js::{ActivationRequest, ENGINE_WASM, Format, JsLimits, JsPlugin, ToolOutcome, Trust};
use bosun_sandbox::{CallOptions, Grants, Sandbox, SandboxConfig};

fn read_files(dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".mjs") || name.ends_with(".js") {
            files.push((name, std::fs::read_to_string(entry.path()).unwrap()));
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn count_text_activates_and_counts() {
    let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
    let started = std::time::Instant::now();
    let engine = sandbox.load_js_engine(ENGINE_WASM).await.unwrap();
    eprintln!("preinit+compile: {:?}", started.elapsed());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("engine/js/test/fixtures/count-text");
    let request = ActivationRequest {
        format: Format::Forge,
        name: "count-text".into(),
        entry: "index.mjs".into(),
        capabilities: vec!["tools:register".into()],
        trust: Trust::Sandboxed,
        config: serde_json::json!({}),
        limits: JsLimits::default(),
        reserved_tool_names: vec!["read_file".into()],
    };
    let started = std::time::Instant::now();
    let mut plugin = JsPlugin::activate(
        &engine,
        Grants::default(),
        &read_files(&dir),
        &request,
        CallOptions::default(),
    )
    .await
    .unwrap();
    eprintln!("activate: {:?}", started.elapsed());
    assert_eq!(plugin.descriptor().tools[0].name, "count_text");
    eprintln!("{:#?}", plugin.descriptor());
    let started = std::time::Instant::now();
    let (outcome, _) = plugin
        .call("count_text", r#"{"text":"héllo"}"#, CallOptions::default())
        .await
        .unwrap();
    eprintln!("call: {:?}", started.elapsed());
    assert_eq!(
        outcome,
        ToolOutcome::Ok {
            output: serde_json::json!({"characters": 5}),
            truncated: false
        }
    );
}
