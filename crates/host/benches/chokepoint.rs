//! The chokepoint's own overhead: a no-op tool called through every step — exact lookup,
//! schema validation, policy over a 1,000-rule table (900 exact actions, 100 globs), events, a
//! trace written to a real file with redaction on — so what is measured is everything Bosun adds
//! to a call, and nothing of the tool's own work.
//!
//! `cargo bench -p bosun-host --bench chokepoint` prints criterion's estimate and, after it,
//! per-call distributions (p50/p90/p99) measured call by call: with the trace's lines written
//! in batches (its default), and with each call's lines written before the next call starts.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::{Noop, policy_with_1000_rules};

use std::sync::Arc;
use std::time::Instant;

use bosun_core::{Redactor, Risk, ToolName, ToolSpec};
use bosun_host::trace::Trace;
use bosun_host::{Chokepoint, Session, Tool, ToolCall, Workspace};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Setup {
    chokepoint: Chokepoint,
    trace: Trace,
    session: Arc<Session>,
    cancel: CancellationToken,
    _dir: tempfile::TempDir,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Arc::new(Workspace::discover(dir.path()).unwrap());
    let policy = Arc::new(policy_with_1000_rules());
    assert_eq!(policy.rule_count(), 1000);
    let spec = ToolSpec::builder(ToolName::new("noop").unwrap(), "Does nothing.")
        .risk(Risk::Read)
        .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": false}))
        .build()
        .unwrap();
    let chokepoint = Chokepoint::builder(policy, workspace)
        .tools([Arc::new(Noop { spec }) as Arc<dyn Tool>])
        .build()
        .unwrap();
    let redactor = Arc::new(Redactor::new([("BENCH_API_KEY", "sk-bench-secret-value")]));
    let trace = Trace::create(&dir.path().join("runs"), "bench".into(), None, redactor).unwrap();
    Setup {
        chokepoint,
        trace,
        session: Arc::new(Session::new("bench")),
        cancel: CancellationToken::new(),
        _dir: dir,
    }
}

fn call() -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: "noop".into(),
        input: json!({"text": "hello"}),
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s = setup();
    c.bench_function("chokepoint_noop_call_1000_rules_trace_on", |b| {
        b.iter(|| {
            let outcome =
                runtime.block_on(s.chokepoint.call(call(), &s.session, &s.trace, &s.cancel));
            assert!(outcome.result.is_ok());
        })
    });

    // Per-call distribution, call by call: the calls' lines written together (as a burst of
    // calls whose results are not handed out one by one is), and then each call's lines
    // written before the next call, as when every result is handed out alone (`serve`
    // answering one call at a time).
    for (label, flush) in [
        ("chokepoint per-call latency", false),
        (
            "chokepoint per-call latency, each call's lines written at its end",
            true,
        ),
    ] {
        let mut samples = Vec::with_capacity(50_000);
        for _ in 0..50_000 {
            let start = Instant::now();
            let outcome =
                runtime.block_on(s.chokepoint.call(call(), &s.session, &s.trace, &s.cancel));
            if flush {
                s.trace.flush();
            }
            samples.push(start.elapsed().as_nanos() as u64);
            assert!(outcome.result.is_ok());
        }
        s.trace.flush();
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
