//! Plugin calls through the whole chokepoint, real wasmtime, policy with 1,000 rules, trace on,
//! for two formats side by side: the native `hello` example component and Bosun's Chock `hello`
//! fixture module (a core module called through Chock's ABI).
//!
//! - `plugin_warm_call` / `chock_warm_call`: an instantiated plugin answering `greet` (lookup,
//!   schema, policy, sandbox call with its arguments in and text or JSON out, bound, trace).
//! - `plugin_first_call_warm_cache` / `chock_first_call_warm_cache`: a fresh runtime whose
//!   precompiled artefact is already in the cache: load the artefact, instantiate, call.
//!
//! `cargo bench -p bosun-host --bench plugin_call` prints criterion's estimates and then
//! per-call distributions (p50/p90/p99).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use bosun_core::Redactor;
use bosun_host::plugin_runtime::{chock, native};
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

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Native,
    Chock,
}

fn fixture(format: Format) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let plugin_dir = home.join("plugins/hello");
    std::fs::create_dir_all(&plugin_dir).unwrap();
    match format {
        Format::Native => {
            std::fs::copy(bosun_test_programs::HELLO, plugin_dir.join("plugin.wasm")).unwrap();
        }
        Format::Chock => {
            let wat = bosun_plugins::chock::fixture::ChockFixture::hello(false).module_wat();
            std::fs::write(plugin_dir.join("plugin.wasm"), wat::parse_str(wat).unwrap()).unwrap();
        }
    }
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
        digests: None,
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
        digests: None,
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

fn chokepoint(f: &Fixture, format: Format) -> Chokepoint {
    let tools = match format {
        Format::Native => native::plugin_tools(
            f.catalog.enabled(),
            &f.sandbox,
            &f.policy,
            f.workspace.root(),
        ),
        Format::Chock => chock::plugin_tools(f.catalog.enabled(), &f.sandbox, &f.policy),
    };
    Chokepoint::builder(f.policy.clone(), f.workspace.clone())
        .tools(tools)
        .build()
        .unwrap()
}

fn call(format: Format) -> ToolCall {
    ToolCall {
        id: "c".into(),
        name: "greet".into(),
        input: match format {
            Format::Native => json!({"name": "Ada"}),
            Format::Chock => json!({"who": "Ada"}),
        },
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
    for (format, name, label) in [
        (Format::Native, "plugin", "plugin"),
        (Format::Chock, "chock", "chock plugin"),
    ] {
        bench_format(c, format, name, label);
    }
}

fn bench_format(c: &mut Criterion, format: Format, name: &str, label: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let f = fixture(format);
    let trace = Trace::create(
        &f.dir.path().join("runs"),
        "bench".into(),
        None,
        Arc::new(Redactor::default()),
    )
    .unwrap();
    let session = Arc::new(Session::new("bench"));
    let cancel = CancellationToken::new();
    let run = |chokepoint: &Chokepoint| {
        let outcome = runtime.block_on(chokepoint.call(call(format), &session, &trace, &cancel));
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    };

    let warm = chokepoint(&f, format);
    // The first call compiles and caches the artefact and instantiates.
    run(&warm);
    c.bench_function(&format!("{name}_warm_call"), |b| b.iter(|| run(&warm)));
    let mut samples = Vec::new();
    for _ in 0..20_000 {
        let start = Instant::now();
        run(&warm);
        samples.push(start.elapsed().as_nanos() as u64);
    }
    percentiles(
        &format!("{label} warm call through the chokepoint"),
        samples,
    );

    // Each iteration: a fresh runtime (nothing loaded, no instance); the artefact is cached.
    c.bench_function(&format!("{name}_first_call_warm_cache"), |b| {
        b.iter(|| run(&chokepoint(&f, format)))
    });
    let mut samples = Vec::new();
    for _ in 0..300 {
        let fresh = chokepoint(&f, format);
        let start = Instant::now();
        run(&fresh);
        samples.push(start.elapsed().as_nanos() as u64);
    }
    percentiles(
        &format!("{label} first call with a warm artefact cache"),
        samples,
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
