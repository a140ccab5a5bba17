//! Hostile: answers a call with a 100 MB JSON string (one allocation, built in place), written
//! against the raw `bosun:plugin` bindings. The host must bound what it copies out and reports
//! (`output_limit` / `truncated`), not hand 100 MB to the model or the trace.

#[allow(missing_docs)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../../crates/sdk/wit/v1",
        world: "bosun:plugin/plugin@1.0.0",
    });
}

bosun_sdk::embed_metadata!();

use bindings::exports::bosun::plugin::tools::{Guest, ToolError};

const MB: usize = 1_000_000;

struct HugeOutput;

impl Guest for HugeOutput {
    fn call(tool: String, input: String) -> Result<String, ToolError> {
        if tool != "emit" {
            return Err(ToolError {
                code: "unknown_tool".into(),
                message: tool,
                retryable: false,
            });
        }
        let megabytes = megabytes(&input).unwrap_or(100);
        let mut out = String::with_capacity(megabytes * MB + 2);
        out.push('"');
        out.extend(std::iter::repeat_n('x', megabytes * MB));
        out.push('"');
        Ok(out)
    }
}

/// `{"megabytes": N}` without a JSON parser: the input was validated by the host.
fn megabytes(input: &str) -> Option<usize> {
    let after = input.split("\"megabytes\"").nth(1)?;
    let digits: String = after
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

bindings::export!(HugeOutput with_types_in bindings);
