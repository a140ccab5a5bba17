//! A hundred plugins of realistic size: listing reads metadata only, and every one is enabled
//! once trusted. What it costs is measured in `benches/catalog.rs`, never here.

use bosun_plugins::catalog::sha256_hex;
use bosun_plugins::{Catalog, CatalogInput, PluginState, TrustStore};
use chrono::Utc;

use crate::support::{BUILTINS, install_hundred_plugins};

#[test]
fn a_hundred_plugins_are_catalogued_from_metadata() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let config = install_hundred_plugins(home.path(), &root);
    let mut trust = TrustStore::empty(home.path().join("trust.toml"));
    let input = |trust: &TrustStore| {
        Catalog::build(CatalogInput {
            home: home.path(),
            user_plugins: &config,
            workspace: Some(&root),
            trust,
            builtins: BUILTINS,
            digests: None,
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
