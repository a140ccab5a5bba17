//! Times warm calls through Bosun's own MCP client: the host of the current workspace and
//! `$BOSUN_HOME`, whose `[mcp.SERVER]` is approved there, calls the server's TOOL through the
//! chokepoint exactly as a model's call goes (lookup, schema, policy, the pin check, deadline,
//! output bound; the trace in memory). The client side of `benches/mcp.py`'s last row: set next
//! to an rmcp client calling the same server, it shows what Bosun's client adds.
//!
//! Makes 200 warm-up calls, then times CALLS calls one after another and prints one JSON line:
//! `{"p50_us", "p90_us", "p99_us", "mean_us", "calls"}`.
//!
//! Usage: BOSUN_HOME=... mcp_client_bench SERVER TOOL INPUT_JSON CALLS   (in the workspace)

#[path = "support/timings.rs"]
mod timings;

use std::sync::Arc;
use std::time::Instant;

use bosun_core::{Redactor, ToolCall};
use bosun_host::{AutoApprove, Host, Session, Trace};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [server, tool, input, calls] = args.as_slice() else {
        return Err("usage: SERVER TOOL INPUT_JSON CALLS".into());
    };
    let input: Value = serde_json::from_str(input)?;
    let calls: usize = calls.parse()?;
    let host = tokio::task::spawn_blocking(|| Host::builder().build()).await??;
    let warnings = bosun_mcp::client::attach(&host)?;
    if !warnings.is_empty() {
        return Err(warnings.join("; ").into());
    }
    let chokepoint = host.chokepoint(Arc::new(AutoApprove))?;
    let trace = Trace::in_memory(
        "bench".into(),
        Arc::new(Redactor::new(Vec::<(String, String)>::new())),
    );
    let session = Arc::new(Session::new("bench"));
    let cancel = CancellationToken::new();
    let name = bosun_mcp::client::model_name(server, tool);
    let call = |n: usize| ToolCall {
        id: format!("c{n}"),
        name: name.clone(),
        input: input.clone(),
    };
    for n in 0..200 {
        let outcome = chokepoint.call(call(n), &session, &trace, &cancel).await;
        if let Some(error) = outcome.result.error() {
            return Err(format!("the call failed: {}: {}", error.code, error.message).into());
        }
    }
    let mut times = Vec::with_capacity(calls);
    for n in 0..calls {
        let started = Instant::now();
        chokepoint.call(call(n), &session, &trace, &cancel).await;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    println!("{}", timings::summary(times, Map::new()));
    Ok(())
}
