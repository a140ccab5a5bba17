//! JavaScript plugins in the sandbox: the real engine component, pre-initialised once, running
//! the Forge guide's count-text (a zod schema, parsed again on every call).
//!
//! - `js_first_call`: a fresh engine instance from the pre-initialised engine (its artefact
//!   already compiled), `activate` (the plugin's module evaluated, zod schema built and
//!   converted to JSON Schema), and the first `count_text` call.
//! - `js_first_call_with_engine_load`: the same, plus loading the engine's artefact from the
//!   warm on-disk cache, as a new host process does for its first JavaScript plugin.
//! - `js_warm_call`: `count_text` on an activated instance (sandbox call, JSON in and out, the
//!   layer's zod parse and result check).
//! - the linear memory an idle instance has grown to after activation, for a few fixtures, and
//!   the private memory an idle instance costs the process (the snapshot is shared
//!   copy-on-write, so only the pages an instance wrote are its own).
//!
//! `cargo bench -p bosun-js --bench js_plugin` prints criterion's estimates and then
//! distributions (p10/p50/p90/p99) timed one by one.
//!
//! Engine builds side by side: with `BOSUN_JS_BENCH_ENGINES=a.wasm,b.wasm` (engine components
//! built from `crates/js/engine`, e.g. at two optimisation levels) the bench instead
//! pre-initialises each in one sandbox, prints its sizes (component and compiled artefact) and
//! the private memory an idle count-text instance adds, then measures them in alternating rounds
//! (`BOSUN_JS_BENCH_ROUNDS`, default 10): warm calls, first calls, loading the engine from the
//! warm cache, and a first call with the engine loaded. One process and one machine state for
//! every build, so the differences are the builds' own. Warm calls are also reported as the
//! calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which a loaded machine disturbs far less
//! than wall time.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::time::Instant;

use bosun_js::{ActivationRequest, ENGINE, Format, JsLimits, JsPlugin, ToolOutcome, Trust};
use bosun_sandbox::{CallOptions, Grants, Loaded, Sandbox, SandboxConfig};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

/// A fixture of the JavaScript layer's tests: its files and the request a host would build.
fn fixture(name: &str) -> (Vec<(String, String)>, ActivationRequest) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("engine/js/test/fixtures")
        .join(name);
    let mut files = Vec::new();
    collect(&dir, &dir, &mut files);
    let manifest = dir.join("plugin.json");
    let request = if manifest.exists() {
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
        ActivationRequest {
            format: Format::Forge,
            name: manifest["name"].as_str().unwrap().to_owned(),
            entry: manifest["entry"]
                .as_str()
                .unwrap()
                .trim_start_matches("./")
                .to_owned(),
            capabilities: serde_json::from_value(manifest["capabilities"].clone()).unwrap(),
            trust: Trust::Sandboxed,
            config: json!({}),
            limits: JsLimits::default(),
            reserved_tool_names: vec!["read_file".into()],
            code_from_strings: false,
            env: Default::default(),
            directory: Default::default(),
            commonjs: Default::default(),
        }
    } else {
        ActivationRequest {
            format: Format::Triggerfish,
            name: name.to_owned(),
            entry: "mod.ts".into(),
            capabilities: Vec::new(),
            trust: Trust::Sandboxed,
            config: json!({}),
            limits: JsLimits::default(),
            reserved_tool_names: Vec::new(),
            code_from_strings: false,
            env: Default::default(),
            directory: Default::default(),
            commonjs: Default::default(),
        }
    };
    (files, request)
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if path
            .extension()
            .is_some_and(|e| e == "mjs" || e == "js" || e == "ts")
        {
            let relative = path.strip_prefix(root).unwrap().to_string_lossy();
            files.push((
                relative.into_owned(),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
}

async fn activate(
    engine: &Loaded,
    plugin: &(Vec<(String, String)>, ActivationRequest),
) -> JsPlugin {
    JsPlugin::activate(
        engine,
        Grants::default(),
        &plugin.0,
        &plugin.1,
        CallOptions::default(),
    )
    .await
    .unwrap()
}

async fn count(plugin: &mut JsPlugin) {
    let (outcome, _) = plugin
        .call(
            "count_text",
            r#"{"text":"héllo 👋"}"#,
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        outcome,
        ToolOutcome::Ok {
            output: json!({"characters": 7}),
            truncated: false
        }
    );
}

/// The process's private dirty memory in KiB, from `/proc/self/smaps_rollup` (Linux).
fn private_dirty_kib() -> Option<u64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = rollup.lines().find(|l| l.starts_with("Private_Dirty:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn percentiles(label: &str, mut samples: Vec<u64>, unit: &str) {
    samples.sort_unstable();
    let divisor = if unit == "ms" { 1e6 } else { 1e3 };
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize] as f64 / divisor;
    println!(
        "{label} over {} samples: p10 {:.2} {unit}, p50 {:.2} {unit}, p90 {:.2} {unit}, p99 {:.2} {unit}",
        samples.len(),
        pct(0.10),
        pct(0.50),
        pct(0.90),
        pct(0.99)
    );
}

/// CPU time this thread has run for, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`): a warm call
/// runs on the thread that blocks on it, so on a loaded machine this counts the call's own work
/// without the time the thread waited for a core.
#[allow(unsafe_code)]
fn thread_cpu_ns() -> Option<u64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `now` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if rc != 0 {
        return None;
    }
    Some(u64::try_from(now.tv_sec).ok()? * 1_000_000_000 + u64::try_from(now.tv_nsec).ok()?)
}

/// The engine components to compare, from `BOSUN_JS_BENCH_ENGINES` (comma-separated paths).
fn engines_to_compare() -> Option<Vec<std::path::PathBuf>> {
    let list = std::env::var_os("BOSUN_JS_BENCH_ENGINES")?;
    Some(
        list.to_string_lossy()
            .split(',')
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from)
            .collect(),
    )
}

/// Engine builds side by side (see the module doc): `rounds` rounds, each timing every engine's
/// warm calls, first calls, engine loads and first calls with the engine loaded, in turn.
fn compare_engines(paths: &[std::path::PathBuf], rounds: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: Some(cache.clone()),
        ..SandboxConfig::default()
    })
    .unwrap();
    let count_text = fixture("count-text");
    let wasms: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let images: Vec<bosun_sandbox::JsEngineImage<'_>> = wasms
        .iter()
        .map(|w| bosun_sandbox::JsEngineImage::new(w))
        .collect();
    let mut engines = Vec::new();
    for (path, image) in paths.iter().zip(&images) {
        let before: std::collections::HashSet<_> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        let started = Instant::now();
        let engine = runtime.block_on(sandbox.load_js_engine(image)).unwrap();
        let preinit = started.elapsed();
        let artefact: u64 = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !before.contains(p))
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        println!(
            "{}: component {} bytes, compiled artefact {} bytes, pre-initialisation and compilation {:.0} ms",
            path.display(),
            image.wasm().len(),
            artefact,
            preinit.as_secs_f64() * 1e3
        );
        let before = private_dirty_kib();
        let mut idle = Vec::new();
        for _ in 0..10 {
            let mut instance = runtime.block_on(activate(&engine, &count_text));
            runtime.block_on(count(&mut instance));
            idle.push(instance);
        }
        if let (Some(before), Some(after)) = (before, private_dirty_kib()) {
            println!(
                "{}: an idle count-text instance (activated, called once) adds {:.2} MiB of private memory",
                path.display(),
                after.saturating_sub(before) as f64 / 10.0 / 1024.0
            );
        }
        drop(idle);
        let mut warm = runtime.block_on(activate(&engine, &count_text));
        runtime.block_on(count(&mut warm));
        engines.push((engine, warm));
    }
    let n = engines.len();
    let (mut warm_s, mut first_s, mut load_s) = (vec![vec![]; n], vec![vec![]; n], vec![vec![]; n]);
    let mut engine_s = vec![vec![]; n];
    let mut warm_cpu = vec![vec![]; n];
    for _ in 0..rounds {
        for (i, (engine, warm)) in engines.iter_mut().enumerate() {
            for _ in 0..500 {
                let cpu = thread_cpu_ns();
                let start = Instant::now();
                runtime.block_on(count(warm));
                warm_s[i].push(start.elapsed().as_nanos() as u64);
                if let (Some(before), Some(after)) = (cpu, thread_cpu_ns()) {
                    warm_cpu[i].push(after.saturating_sub(before));
                }
            }
            for _ in 0..20 {
                let start = Instant::now();
                runtime.block_on(async {
                    let mut plugin = activate(engine, &count_text).await;
                    count(&mut plugin).await;
                });
                first_s[i].push(start.elapsed().as_nanos() as u64);
            }
            for _ in 0..20 {
                let start = Instant::now();
                drop(
                    runtime
                        .block_on(sandbox.load_js_engine(&images[i]))
                        .unwrap(),
                );
                engine_s[i].push(start.elapsed().as_nanos() as u64);
            }
            for _ in 0..5 {
                let start = Instant::now();
                runtime.block_on(async {
                    let engine = sandbox.load_js_engine(&images[i]).await.unwrap();
                    let mut plugin = activate(&engine, &count_text).await;
                    count(&mut plugin).await;
                });
                load_s[i].push(start.elapsed().as_nanos() as u64);
            }
        }
    }
    for (i, path) in paths.iter().enumerate() {
        let name = path.display();
        percentiles(&format!("{name}: warm call"), warm_s[i].clone(), "µs");
        if !warm_cpu[i].is_empty() {
            percentiles(
                &format!("{name}: warm call, the calling thread's CPU time"),
                warm_cpu[i].clone(),
                "µs",
            );
        }
        percentiles(&format!("{name}: first call"), first_s[i].clone(), "ms");
        percentiles(
            &format!("{name}: loading the engine from the warm cache"),
            engine_s[i].clone(),
            "ms",
        );
        percentiles(
            &format!("{name}: first call with the engine loaded"),
            load_s[i].clone(),
            "ms",
        );
    }
}

fn bench(c: &mut Criterion) {
    if let Some(paths) = engines_to_compare() {
        let rounds = std::env::var("BOSUN_JS_BENCH_ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(10);
        compare_engines(&paths, rounds);
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: Some(dir.path().join("cache")),
        ..SandboxConfig::default()
    })
    .unwrap();
    // Pre-initialises the engine and writes its artefact: every measurement below starts from
    // a warm cache.
    let started = Instant::now();
    let engine = runtime.block_on(sandbox.load_js_engine(&ENGINE)).unwrap();
    println!(
        "engine pre-initialisation and compilation (cold cache, once): {:.0} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let count_text = fixture("count-text");

    // Memory of idle instances, after activation (and, for count-text, one call).
    for name in ["count-text", "task-list", "policy-guard", "weather"] {
        let plugin = runtime.block_on(activate(&engine, &fixture(name)));
        println!(
            "idle instance of {name} after activation: {:.2} MiB of linear memory",
            plugin.memory_bytes() as f64 / (1 << 20) as f64
        );
    }
    // What an idle instance costs the host process in private memory: the instance starts from
    // the engine's snapshot, mapped copy-on-write, so only the pages it wrote are its own. The
    // figure is the growth of the whole process's private dirty memory (`smaps_rollup`) over
    // 20 instances, each activated (count-text's also called once), divided by 20: it includes
    // the host side (store, stacks, tables) as well as the guest's written pages.
    for name in ["count-text", "weather"] {
        let plugin = fixture(name);
        drop(runtime.block_on(activate(&engine, &plugin)));
        let before = private_dirty_kib();
        let mut idle = Vec::new();
        for _ in 0..20 {
            let mut instance = runtime.block_on(activate(&engine, &plugin));
            if name == "count-text" {
                runtime.block_on(count(&mut instance));
            }
            idle.push(instance);
        }
        match (before, private_dirty_kib()) {
            (Some(before), Some(after)) => println!(
                "idle instance of {name}: {:.2} MiB of private memory each (20 instances: {:.1} MiB)",
                after.saturating_sub(before) as f64 / 20.0 / 1024.0,
                after.saturating_sub(before) as f64 / 1024.0,
            ),
            _ => println!(
                "idle instance of {name}: private memory not measurable here (no /proc/self/smaps_rollup)"
            ),
        }
    }

    let mut called = runtime.block_on(activate(&engine, &count_text));
    runtime.block_on(count(&mut called));
    println!(
        "idle instance of count-text after one call: {:.2} MiB of linear memory",
        called.memory_bytes() as f64 / (1 << 20) as f64
    );
    drop(called);

    c.bench_function("js_first_call", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut plugin = activate(&engine, &count_text).await;
                count(&mut plugin).await;
            })
        })
    });
    let mut samples = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        runtime.block_on(async {
            let mut plugin = activate(&engine, &count_text).await;
            count(&mut plugin).await;
        });
        samples.push(start.elapsed().as_nanos() as u64);
    }
    percentiles(
        "first call (instantiate, activate, call) of count-text",
        samples,
        "ms",
    );

    c.bench_function("js_first_call_with_engine_load", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let engine = sandbox.load_js_engine(&ENGINE).await.unwrap();
                let mut plugin = activate(&engine, &count_text).await;
                count(&mut plugin).await;
            })
        })
    });
    let mut samples = Vec::new();
    for _ in 0..50 {
        let start = Instant::now();
        runtime.block_on(async {
            let engine = sandbox.load_js_engine(&ENGINE).await.unwrap();
            let mut plugin = activate(&engine, &count_text).await;
            count(&mut plugin).await;
        });
        samples.push(start.elapsed().as_nanos() as u64);
    }
    percentiles(
        "first call with the engine loaded from the warm cache",
        samples,
        "ms",
    );

    let mut warm = runtime.block_on(activate(&engine, &count_text));
    runtime.block_on(count(&mut warm));
    c.bench_function("js_warm_call", |b| {
        b.iter(|| runtime.block_on(count(&mut warm)))
    });
    let mut samples = Vec::new();
    for _ in 0..5_000 {
        let start = Instant::now();
        runtime.block_on(count(&mut warm));
        samples.push(start.elapsed().as_nanos() as u64);
    }
    percentiles("warm call of count_text", samples, "µs");
    println!(
        "count-text after {} calls: {:.2} MiB of linear memory",
        5_000,
        warm.memory_bytes() as f64 / (1 << 20) as f64
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
