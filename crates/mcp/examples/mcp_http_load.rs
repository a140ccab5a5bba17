//! Load on a Streamable HTTP MCP server: CLIENTS concurrent rmcp clients (each its own session)
//! call TOOL with INPUT until TOTAL calls are done; prints one JSON line:
//! `{"calls", "errors", "seconds", "per_second", "p50_ms", "p99_ms", "max_ms"}`. With
//! `--rss-pid PID` (repeatable) it also samples those processes' resident memory after each
//! tenth of the calls (`"rss_kib": [...]` of the first, `"rss_kib_by_pid": {PID: [...]}`). With
//! `--stateless` the clients speak MCP 2026-07-28 (`server/discover`, no session), so any
//! request may reach any instance behind a round-robin load balancer; `--max-seconds S` stops
//! starting calls after S seconds. The load side of `benches/mcp.py` and `benches/fleet.py`.
//!
//! Usage: mcp_http_load URL CLIENTS TOTAL TOOL INPUT_JSON [--rss-pid PID]... [--stateless]
//! [--max-seconds S]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

fn rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: URL CLIENTS TOTAL TOOL INPUT_JSON [--rss-pid PID]... [--stateless] [--max-seconds S]";
    let [url, clients, total, tool, input, rest @ ..] = args.as_slice() else {
        return Err(usage.into());
    };
    let mut rss_pids = Vec::new();
    let mut stateless = false;
    let mut max_seconds = None;
    let mut rest = rest.iter();
    while let Some(flag) = rest.next() {
        match flag.as_str() {
            "--rss-pid" => rss_pids.push(rest.next().ok_or(usage)?.clone()),
            "--stateless" => stateless = true,
            "--max-seconds" => {
                max_seconds = Some(Duration::from_secs_f64(rest.next().ok_or(usage)?.parse()?));
            }
            _ => return Err(usage.into()),
        }
    }
    let clients: usize = clients.parse()?;
    let total: usize = total.parse()?;
    let Value::Object(input) = serde_json::from_str::<Value>(input)? else {
        return Err("INPUT must be a JSON object".into());
    };
    let tls = bosun_models::tls_config()?;
    let http = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()?;
    let started_count = Arc::new(AtomicUsize::new(0));
    let done_count = Arc::new(AtomicUsize::new(0));
    let mut sessions = Vec::new();
    for _ in 0..clients {
        let transport = StreamableHttpClientTransport::with_client(
            http.clone(),
            StreamableHttpClientTransportConfig::with_uri(url.as_str()),
        );
        sessions.push(if stateless {
            ().serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await?
        } else {
            ().serve(transport).await?
        });
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = (!rss_pids.is_empty()).then(|| {
        let done = done_count.clone();
        let stop = stop.clone();
        let pids = rss_pids.clone();
        tokio::spawn(async move {
            let sample = |pids: &[String]| -> Vec<u64> {
                pids.iter().map(|pid| rss_kib(pid).unwrap_or(0)).collect()
            };
            let mut samples = vec![sample(&pids)];
            let mut next = total / 10;
            while samples.len() < 11 && !stop.load(Ordering::Relaxed) {
                if done.load(Ordering::Relaxed) >= next {
                    samples.push(sample(&pids));
                    next += total / 10;
                } else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            // Stopped early (the time bound): the memory at the end.
            if samples.len() < 11 {
                samples.push(sample(&pids));
            }
            samples
        })
    });
    let began = Instant::now();
    let deadline = max_seconds.map(|s| began + s);
    let mut tasks = Vec::new();
    for session in sessions {
        let started = started_count.clone();
        let done = done_count.clone();
        let tool = tool.clone();
        let input = input.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0usize;
            while started.fetch_add(1, Ordering::Relaxed) < total
                && deadline.is_none_or(|d| Instant::now() < d)
            {
                let mut params = CallToolRequestParams::new(tool.clone());
                params.arguments = Some(input.clone());
                let at = Instant::now();
                match session.peer().call_tool(params).await {
                    Ok(result) if result.is_error != Some(true) => {}
                    _ => errors += 1,
                }
                latencies.push(at.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
            }
            let _ = session.cancel().await;
            (latencies, errors)
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (mut l, e) = task.await?;
        latencies.append(&mut l);
        errors += e;
    }
    let seconds = began.elapsed().as_secs_f64();
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let at = |q: f64| ms(latencies[((latencies.len() as f64 - 1.0) * q).round() as usize]);
    let mut out = json!({
        "calls": latencies.len(), "errors": errors, "seconds": seconds,
        "per_second": latencies.len() as f64 / seconds,
        "p50_ms": at(0.5), "p99_ms": at(0.99), "max_ms": at(1.0),
    });
    if let Some(sampler) = sampler {
        stop.store(true, Ordering::Relaxed);
        let samples = sampler.await?;
        out["rss_kib"] = json!(samples.iter().map(|s| s[0]).collect::<Vec<_>>());
        out["rss_kib_by_pid"] = json!(
            rss_pids
                .iter()
                .enumerate()
                .map(|(n, pid)| (
                    pid.clone(),
                    json!(samples.iter().map(|s| s[n]).collect::<Vec<_>>())
                ))
                .collect::<serde_json::Map<_, _>>()
        );
    }
    println!("{out}");
    Ok(())
}
