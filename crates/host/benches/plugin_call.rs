//! Native plugin calls through the whole chokepoint: the `hello` example component, real
//! wasmtime, policy with 1,000 rules, trace on.
//!
//! - `plugin_warm_call`: an instantiated plugin answering `greet` (lookup, schema, policy,
//!   sandbox call with its JSON in and out, bound, trace).
//! - `plugin_first_call_warm_cache`: a fresh runtime whose precompiled artefact is already in
//!   the cache: load the artefact, instantiate, call.
//!
//! `cargo bench -p bosun-agent --bench plugin_call` prints criterion's estimates and then
//! per-call distributions (p50/p90/p99).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use bosun_core::Redactor;
use bosun_host::plugin_runtime::native::plugin_tools;
use bosun_host::trace::Trace;
use bosun_host::{Chokepoint, Session, ToolCall, Workspace};
use bosun_plugins::{Catalog, CatalogInput, PluginConfig, TrustStore};
use bosun_policy::{Mode, Policy, PolicyFile, Source};
use bosun_sandbox::{Sandbox, SandboxConfig};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn policy() -> Arc<Policy> {
    let mut text = String::from("[policy]\n");
    for i in 0..999 {
        text.push_str(&format!(
            "[[policy.rules]]\naction = \"plugin.p{i}.tool.t{i}\"\ndecision = \"ask\"\n"
        ));
    }
    text.push_str("[[policy.rules]]\naction = \"plugin.hello.tool.*\"\ndecision = \"allow\"\n");
    let file = PolicyFile::parse(&text).unwrap();
    Arc::new(
        Policy::builder(Mode::WorkspaceWrite)
            .user(file, Source::with_text("bench.toml", text))
            .unwrap()
            .build(),
    )
}

struct Fixture {
    dir: tempfile::TempDir,
    catalog: Catalog,
    sandbox: Sandbox,
    policy: Arc<Policy>,
    workspace: Arc<Workspace>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let plugin_dir = home.join("plugins/hello");
    std::fs::create_dir_all(&plugin_dir).unwrap();
    std::fs::copy(bosun_test_programs::HELLO, plugin_dir.join("plugin.wasm")).unwrap();
    std::fs::create_dir_all(dir.path().join("ws/.git")).unwrap();
    let workspace = Arc::new(Workspace::discover(&dir.path().join("ws")).unwrap());
    let plugins = BTreeMap::from([("hello".to_owned(), PluginConfig::new("hello"))]);
    // Trust the plugin exactly as it is, as `bosun plugins enable` would.
    let mut trust = TrustStore::empty(TrustStore::default_path(&home));
    let first = Catalog::build(CatalogInput {
        home: &home,
        user_plugins: &plugins,
        workspace: None,
        trust: &trust,
        builtins: &["read_file"],
    });
    let entry = &first.entries()[0];
    trust.record(
        &entry.scope,
        &entry.local_name,
        entry.trust_record(chrono::Utc::now()).unwrap(),
    );
    let catalog = Catalog::build(CatalogInput {
        home: &home,
        user_plugins: &plugins,
        workspace: None,
        trust: &trust,
        builtins: &["read_file"],
    });
    assert!(catalog.enabled().next().is_some(), "hello is not enabled");
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: Some(home.join("cache")),
        ..Default::default()
    })
    .unwrap();
    Fixture {
        dir,
        catalog,
        sandbox,
        policy: policy(),
        workspace,
    }
}

fn chokepoint(f: &Fixture) -> Chokepoint {
    let tools = plugin_tools(
        f.catalog.enabled(),
        &f.sandbox,
        &f.policy,
        f.workspace.root(),
    );
    Chokepoint::builder(f.policy.clone(), f.workspace.clone())
        .tools(tools)
        .build()
        .unwrap()
}

fn call() -> ToolCall {
    ToolCall {
        id: "c".into(),
        name: "greet".into(),
        input: json!({"name": "Ada"}),
    }
}

fn percentiles(label: &str, mut samples: Vec<u64>) {
    samples.sort_unstable();
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize] as f64 / 1000.0;
    println!(
        "{label} over {} calls: p50 {:.2} µs, p90 {:.2} µs, p99 {:.2} µs",
        samples.len(),
        pct(0.50),
        pct(0.90),
        pct(0.99)
    );
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let f = fixture();
    let trace = Trace::create(
        &f.dir.path().join("runs"),
        "bench".into(),
        None,
        Arc::new(Redactor::default()),
    )
    .unwrap();
    let session = Arc::new(Session::new("bench"));
    let cancel = CancellationToken::new();

    let warm = chokepoint(&f);
    // The first call compiles and caches the artefact and instantiates.
    assert!(
        runtime
            .block_on(warm.call(call(), &session, &trace, &cancel))
            .result
            .is_ok()
    );
    c.bench_function("plugin_warm_call", |b| {
        b.iter(|| {
            assert!(
                runtime
                    .block_on(warm.call(call(), &session, &trace, &cancel))
                    .result
                    .is_ok()
            )
        })
    });
    let mut samples = Vec::new();
    for _ in 0..20_000 {
        let start = Instant::now();
        let ok = runtime
            .block_on(warm.call(call(), &session, &trace, &cancel))
            .result
            .is_ok();
        samples.push(start.elapsed().as_nanos() as u64);
        assert!(ok);
    }
    percentiles("plugin warm call through the chokepoint", samples);

    // Each iteration: a fresh runtime (nothing loaded, no instance); the artefact is cached.
    c.bench_function("plugin_first_call_warm_cache", |b| {
        b.iter(|| {
            let fresh = chokepoint(&f);
            assert!(
                runtime
                    .block_on(fresh.call(call(), &session, &trace, &cancel))
                    .result
                    .is_ok()
            );
        })
    });
    let mut samples = Vec::new();
    for _ in 0..300 {
        let fresh = chokepoint(&f);
        let start = Instant::now();
        let ok = runtime
            .block_on(fresh.call(call(), &session, &trace, &cancel))
            .result
            .is_ok();
        samples.push(start.elapsed().as_nanos() as u64);
        assert!(ok);
    }
    percentiles("plugin first call with a warm artefact cache", samples);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
