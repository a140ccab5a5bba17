//! Times warm `tools/call`s from an rmcp client to a stdio MCP server: the client side of
//! `benches/mcp.py`. Starts `COMMAND ARGS...`, lists its tools, makes 200 warm-up calls, then
//! times CALLS calls of TOOL with INPUT one after another and prints one JSON line:
//! `{"p50_us", "p90_us", "p99_us", "mean_us", "calls", "protocol"}`.
//!
//! Usage: mcp_call_bench TOOL INPUT_JSON CALLS -- COMMAND [ARGS...]

#[path = "support/timings.rs"]
mod timings;

use std::time::Instant;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args
        .iter()
        .position(|a| a == "--")
        .ok_or("usage: TOOL INPUT CALLS -- COMMAND [ARGS...]")?;
    let (head, command) = (&args[..split], &args[split + 1..]);
    let [tool, input, calls] = head else {
        return Err("usage: TOOL INPUT CALLS -- COMMAND [ARGS...]".into());
    };
    let Value::Object(input) = serde_json::from_str::<Value>(input)? else {
        return Err("INPUT must be a JSON object".into());
    };
    let calls: usize = calls.parse()?;
    let (program, rest) = command.split_first().ok_or("no COMMAND")?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(rest);
    let client = ().serve(TokioChildProcess::new(cmd)?).await?;
    let protocol = client
        .peer()
        .peer_info()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    client.peer().list_all_tools().await?;
    let request = || {
        let mut params = CallToolRequestParams::new(tool.clone());
        params.arguments = Some(input.clone());
        params
    };
    for _ in 0..200 {
        let result = client.peer().call_tool(request()).await?;
        if result.is_error == Some(true) {
            return Err(format!("the call failed: {:?}", result.content).into());
        }
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        client.peer().call_tool(request()).await?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    println!(
        "{}",
        timings::summary(
            times,
            Map::from_iter([("protocol".to_owned(), Value::String(protocol))])
        )
    );
    let _ = client.cancel().await;
    Ok(())
}
