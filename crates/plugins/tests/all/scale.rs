//! A hundred plugins of realistic size: listing reads metadata only, and every one is enabled
//! once trusted. What it costs is measured in `benches/catalog.rs`, never here.

use std::collections::BTreeMap;

use bosun_plugins::catalog::sha256_hex;
use bosun_plugins::{Catalog, CatalogInput, PluginConfig, PluginState, TrustStore};
use chrono::Utc;
use serde_json::json;

use crate::support::{BUILTINS, install, metadata_with_tools, sized_component};

#[test]
fn a_hundred_plugins_are_catalogued_from_metadata() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let mut config = BTreeMap::new();
    for i in 0..100 {
        let tools: Vec<(String, serde_json::Value)> = (0..8)
            .map(|t| {
                (
                    format!("p{i}_tool{t}"),
                    json!([{"capability": "net.http", "hosts": [format!("api{t}.example.com")]}]),
                )
            })
            .collect();
        let tools: Vec<(&str, serde_json::Value)> =
            tools.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
        let meta = metadata_with_tools(&format!("plugin-{i}"), &tools);
        // 100 to 300 KB.
        let bytes = sized_component(&meta, 100_000 + (i * 2_000));
        let local = format!("p{i:03}");
        if i % 2 == 0 {
            install(&home.path().join("plugins"), &local, &bytes);
            config.insert(local, PluginConfig::new(format!("p{i:03}")));
        } else {
            install(&root.join(".bosun").join("plugins"), &local, &bytes);
        }
    }
    let mut trust = TrustStore::empty(home.path().join("trust.toml"));
    let input = |trust: &TrustStore| {
        Catalog::build(CatalogInput {
            home: home.path(),
            user_plugins: &config,
            workspace: Some(&root),
            trust,
            builtins: BUILTINS,
        })
    };
    let first = input(&trust);
    assert_eq!(first.entries().len(), 100);
    assert!(
        first
            .entries()
            .iter()
            .all(|e| e.state == PluginState::Untrusted && e.bytes().is_none())
    );
    for entry in first.entries() {
        let record = entry.trust_record(Utc::now()).unwrap();
        trust.record(&entry.scope, &entry.local_name, record);
    }

    let catalog = input(&trust);
    assert_eq!(catalog.enabled().count(), 100);
    assert!(catalog.resolve("p99_tool7").is_some());
    for entry in first.entries() {
        let bytes = std::fs::read(&entry.wasm).unwrap();
        assert_eq!(entry.sha256.as_deref(), Some(sha256_hex(&bytes).as_str()));
    }
}
