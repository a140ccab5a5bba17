//! The chokepoint with OpenTelemetry export off and on, side by side in one run: the same
//! no-op tool and 1,000-rule policy as the `chokepoint` bench, one trace without watchers and one
//! whose run is projected to spans and metrics and exported to a loopback collector (a minimal
//! HTTP server in this process answering 200). Blocks of calls alternate between the two, so
//! both see the same machine.
//!
//! `cargo bench -p bosun-host --bench telemetry` prints p50/p90/p99 of each, their ratio, and
//! how many calls a second the exporter's thread projects and sends (the run's thread only
//! copies the trace's lines; the projection runs there).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::{Noop, policy_with_1000_rules};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use bosun_core::{Event, Redactor, Risk, ToolName, ToolSpec};
use bosun_host::telemetry::TelemetryObserver;
use bosun_host::trace::Trace;
use bosun_host::{Chokepoint, Session, Tool, ToolCall, Workspace};
use bosun_telemetry::{Exporter, ExporterConfig, OtlpHttpConfig, TelemetryConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A collector that takes every request and answers 200, keeping connections open.
fn sink() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    if stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    port
}

fn trace(dir: &std::path::Path, name: &str) -> Trace {
    let redactor = Arc::new(Redactor::new([("BENCH_API_KEY", "sk-bench-secret-value")]));
    Trace::create(&dir.join(name), format!("bench-{name}"), None, redactor).unwrap()
}

fn call() -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: "noop".into(),
        input: json!({"text": "hello"}),
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Arc::new(Workspace::discover(dir.path()).unwrap());
    let spec = ToolSpec::builder(ToolName::new("noop").unwrap(), "Does nothing.")
        .risk(Risk::Read)
        .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": false}))
        .build()
        .unwrap();
    let chokepoint = Chokepoint::builder(Arc::new(policy_with_1000_rules()), workspace)
        .tools([Arc::new(Noop { spec }) as Arc<dyn Tool>])
        .build()
        .unwrap();
    let port = sink();
    let otlp = |signal: &str| {
        ExporterConfig::OtlpHttp(OtlpHttpConfig {
            endpoint: Some(format!("http://127.0.0.1:{port}/v1/{signal}")),
            ..OtlpHttpConfig::default()
        })
    };
    let config = TelemetryConfig {
        traces: otlp("traces"),
        metrics: otlp("metrics"),
        ..TelemetryConfig::default()
    };
    let exporter = Exporter::start(
        config.resolve(&|_| None).unwrap(),
        Arc::new(|w: &str| eprintln!("warning: {w}")),
    )
    .unwrap();
    let off = trace(dir.path(), "off");
    let on =
        trace(dir.path(), "on").observe(Arc::new(TelemetryObserver::new(exporter.clone(), None)));
    for trace in [&off, &on] {
        trace.record(Event::RunStarted {
            command: "bench".into(),
            workspace: dir.path().display().to_string(),
            mode: "workspace-write".into(),
            sandbox: String::new(),
            level: Default::default(),
        });
    }
    let session = Arc::new(Session::new("bench"));
    let cancel = CancellationToken::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let measure = |trace: &Trace, samples: &mut Vec<u64>, n: usize| {
        for _ in 0..n {
            let start = Instant::now();
            let outcome = runtime.block_on(chokepoint.call(call(), &session, trace, &cancel));
            samples.push(start.elapsed().as_nanos() as u64);
            assert!(outcome.result.is_ok());
        }
    };
    let flush = || assert!(exporter.flush(std::time::Duration::from_secs(30)));
    // Warm both paths, then alternate blocks. After each block with export on, the exporter's
    // thread is let catch up (untimed), so no event is dropped: the calls are timed while it
    // projects and sends the previous ones beside them, as in a real run.
    measure(&off, &mut Vec::new(), 2_000);
    measure(&on, &mut Vec::new(), 1_000);
    flush();
    let (mut off_samples, mut on_samples) = (Vec::new(), Vec::new());
    let mut pipeline = std::time::Duration::ZERO;
    for _ in 0..25 {
        measure(&off, &mut off_samples, 1_000);
        let block = Instant::now();
        measure(&on, &mut on_samples, 1_000);
        flush();
        pipeline += block.elapsed();
    }
    let pct = |samples: &mut Vec<u64>, p: f64| {
        samples.sort_unstable();
        samples[((samples.len() as f64 - 1.0) * p) as usize] as f64 / 1000.0
    };
    let report = |name: &str, samples: &mut Vec<u64>| {
        let (p50, p90, p99) = (pct(samples, 0.5), pct(samples, 0.9), pct(samples, 0.99));
        println!(
            "chokepoint, export {name}: {} calls, p50 {p50:.2} µs, p90 {p90:.2} µs, p99 {p99:.2} µs",
            samples.len()
        );
        p50
    };
    let p50_off = report("off", &mut off_samples);
    let p50_on = report("on ", &mut on_samples);
    println!(
        "export on / off at p50: {:+.1} %; spans dropped by a full queue: {}; failed exports: {}",
        (p50_on / p50_off - 1.0) * 100.0,
        exporter.dropped(),
        exporter.failures()
    );
    println!(
        "the exporter's thread projected and sent 25,000 calls in {:.2} s with the calls themselves ({:.0} calls/s)",
        pipeline.as_secs_f64(),
        25_000.0 / pipeline.as_secs_f64()
    );
}
