//! Hostile: floods the host with output that is not the result: millions of `host.log` lines,
//! one enormous line, and megabytes on stdout and stderr. The host must bound lines per call,
//! line length and captured stdio, and stay responsive.

use std::io::Write;

use bosun_sdk::host::{self, LogLevel};
use bosun_sdk::{Plugin, ToolError, Tools};
use serde_json::{Value, json};

#[derive(Default)]
struct LogFlood;

impl Plugin for LogFlood {
    fn tools() -> Tools<Self> {
        Tools::new()
            .tool("flood", flood)
            .tool("giant_line", giant_line)
            .tool("flood_stdio", flood_stdio)
    }
}

bosun_sdk::export!(LogFlood);

fn number(input: &Value, key: &str, default: u64) -> u64 {
    input.get(key).and_then(Value::as_u64).unwrap_or(default)
}

fn flood(input: Value) -> Result<Value, ToolError> {
    let lines = number(&input, "lines", 5_000_000);
    for i in 0..lines {
        host::log(LogLevel::Info, &format!("flood line {i} of {lines}"));
    }
    Ok(json!({ "logged": lines }))
}

fn giant_line(input: Value) -> Result<Value, ToolError> {
    let bytes = number(&input, "megabytes", 10) as usize * 1_000_000;
    host::log(LogLevel::Warn, &"y".repeat(bytes));
    Ok(json!({ "bytes": bytes }))
}

fn flood_stdio(input: Value) -> Result<Value, ToolError> {
    let megabytes = number(&input, "megabytes", 100);
    let chunk = vec![b'z'; 1_000_000];
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let mut written = 0u64;
    for _ in 0..megabytes {
        // A closed or full stream is the host's answer; keep count of what went through.
        if out.write_all(&chunk).is_ok() {
            written += 1;
        }
        let _ = err.write_all(&chunk);
    }
    let _ = out.flush();
    Ok(json!({ "stdout_megabytes_written": written }))
}
