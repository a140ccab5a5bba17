//! What loading and calling a native plugin costs in the sandbox alone (no chokepoint): the
//! `hello` example component, real wasmtime.
//!
//! - `engine`: building the engine and its epoch thread;
//! - `cached_load`: loading the component from a valid artefact in the cache;
//! - `instantiate`: one instance with default grants;
//! - `warm_call`: `greet` on a live instance.
//!
//! `cargo bench -p bosun-sandbox --bench load`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use bosun_sandbox::{CacheOutcome, CallOptions, EngineLimits, Grants, Sandbox, SandboxConfig};
use criterion::{Criterion, criterion_group, criterion_main};

fn sandbox(dir: &tempfile::TempDir) -> Sandbox {
    Sandbox::new(SandboxConfig {
        cache_dir: Some(dir.path().join("cache")),
        engine: EngineLimits {
            max_instances: 16,
            ..EngineLimits::default()
        },
        ..SandboxConfig::default()
    })
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wasm = std::fs::read(bosun_test_programs::HELLO).unwrap();
    // Compile once so every later load reads the artefact.
    assert_eq!(
        sandbox(&dir).load(&wasm).unwrap().cache_outcome(),
        CacheOutcome::Miss
    );

    c.bench_function("engine", |b| b.iter(|| sandbox(&dir)));
    let warm = sandbox(&dir);
    c.bench_function("cached_load", |b| {
        b.iter(|| {
            let loaded = warm.load(&wasm).unwrap();
            assert_eq!(loaded.cache_outcome(), CacheOutcome::Hit);
        })
    });
    let loaded = warm.load(&wasm).unwrap();
    c.bench_function("instantiate", |b| {
        b.iter(|| {
            runtime
                .block_on(loaded.instantiate(Grants::default()))
                .unwrap()
        })
    });
    let mut instance = runtime
        .block_on(loaded.instantiate(Grants::default()))
        .unwrap();
    let input = r#"{"name":"Ada"}"#;
    c.bench_function("warm_call", |b| {
        b.iter(|| {
            runtime
                .block_on(instance.call("greet", input, CallOptions::default()))
                .unwrap()
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
