//! Cataloguing 100 installed plugins of realistic size (100-300 KB components, 8 tools each,
//! half user and half project plugins, all trusted): what `bosun plugins list` and every host
//! start pay before any plugin runs. Listing reads and hashes the bytes and parses the metadata;
//! nothing is compiled. Also: reading and hashing alone, for comparison.
//!
//! `cargo bench -p bosun-plugins --bench catalog`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, dead_code)]

#[path = "../tests/all/support.rs"]
mod support;

use std::collections::BTreeMap;

use bosun_plugins::catalog::sha256_hex;
use bosun_plugins::{Catalog, CatalogInput, PluginConfig, TrustStore};
use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

use support::{BUILTINS, install, metadata_with_tools, sized_component};

fn bench(c: &mut Criterion) {
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
    let build = |trust: &TrustStore| {
        Catalog::build(CatalogInput {
            home: home.path(),
            user_plugins: &config,
            workspace: Some(&root),
            trust,
            builtins: BUILTINS,
        })
    };
    let first = build(&trust);
    for entry in first.entries() {
        trust.record(
            &entry.scope,
            &entry.local_name,
            entry.trust_record(Utc::now()).unwrap(),
        );
    }
    assert_eq!(build(&trust).enabled().count(), 100);
    c.bench_function("catalog_100_plugins", |b| b.iter(|| build(&trust)));
    c.bench_function("read_and_hash_100_plugins", |b| {
        b.iter(|| {
            for entry in first.entries() {
                let bytes = std::fs::read(&entry.wasm).unwrap();
                assert_eq!(entry.sha256.as_deref(), Some(sha256_hex(&bytes).as_str()));
            }
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
