//! What several modules' tests build the same way.

use std::time::Duration;

use bosun_core::Classification;
use bosun_host::plugin_runtime::js::JsPluginSpec;
use bosun_js::{Format, Trust};
use serde_json::json;

/// A sandboxed, public Forge plugin named `name` with `files` (its entry `index.mjs`) and
/// `capabilities`, a 10 s deadline, 256 MiB, and the built-in tool names reserved.
pub fn forge_spec(name: &str, files: Vec<(String, String)>, capabilities: &[&str]) -> JsPluginSpec {
    JsPluginSpec {
        local_name: name.into(),
        format: Format::Forge,
        name: name.into(),
        entry: "index.mjs".into(),
        files,
        capabilities: capabilities.iter().map(|c| c.parse().unwrap()).collect(),
        endpoints: Vec::new(),
        classification: Classification::Public,
        trust: Trust::Sandboxed,
        config: json!({}),
        timeout: Duration::from_secs(10),
        memory_bytes: 256 << 20,
        limits: bosun_js::JsLimits::default(),
        reserved: vec!["read_file".into(), "run_command".into()],
        static_manifest: None,
        code_from_strings: false,
        env: Default::default(),
        directory: Default::default(),
        commonjs: Default::default(),
        untrusted_output: None,
        positions: Default::default(),
    }
}
