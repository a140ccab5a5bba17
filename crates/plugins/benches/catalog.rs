//! Cataloguing 100 installed plugins of realistic size (100-300 KB components, 8 tools each,
//! half user and half project plugins, all trusted): what `bosun plugins list` and every host
//! start pay before any plugin runs. Listing reads and hashes the bytes and parses the metadata;
//! nothing is compiled. Also: reading and hashing alone, for comparison.
//!
//! `cargo bench -p bosun-plugins --bench catalog`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, dead_code)]

#[path = "../tests/all/support.rs"]
mod support;

use bosun_plugins::catalog::sha256_hex;
use bosun_plugins::{Catalog, CatalogInput, TrustStore};
use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};

use support::{BUILTINS, install_hundred_plugins};

fn bench(c: &mut Criterion) {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let config = install_hundred_plugins(home.path(), &root);
    let mut trust = TrustStore::empty(home.path().join("trust.toml"));
    let build = |trust: &TrustStore| {
        Catalog::build(CatalogInput {
            home: home.path(),
            user_plugins: &config,
            workspace: Some(&root),
            trust,
            builtins: BUILTINS,
            digests: None,
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
