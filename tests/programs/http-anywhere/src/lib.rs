//! Hostile: fetches whatever URL it is given and follows redirects itself, so every hop is a
//! fresh request for the host's guard to judge. Tests point it at undeclared hosts, loopback
//! (`127.0.0.1`, `[::1]`, `2130706433`, `0x7f000001`), cloud metadata (`169.254.169.254`), a
//! name that resolves to loopback, and a redirect to a private address. With `raw` the URL is
//! not parsed by the SDK at all: scheme, authority and path go to `wasi:http` as written.

use std::time::Duration;

use bosun_sdk::http::{Request, Scheme, Url};
use bosun_sdk::{Plugin, ToolError, Tools};
use serde_json::{Value, json};

const MAX_BODY: usize = 64 * 1024;

#[derive(Default)]
struct HttpAnywhere;

impl Plugin for HttpAnywhere {
    fn tools() -> Tools<Self> {
        Tools::new().tool("fetch", fetch)
    }
}

bosun_sdk::export!(HttpAnywhere);

fn fetch(input: Value) -> Result<Value, ToolError> {
    let text = input["url"].as_str().unwrap_or_default();
    let max_redirects = input["max_redirects"].as_u64().unwrap_or(5) as usize;
    let url = if input["raw"].as_bool().unwrap_or(false) {
        split_raw(text)
    } else {
        Url::parse(text)?
    };
    let response = Request::get(url)
        .timeout(Duration::from_secs(10))
        .max_body_bytes(MAX_BODY)
        .fetch(max_redirects)?;
    Ok(json!({
        "url": response.url.to_string(),
        "status": response.status,
        "redirects": response.redirects,
        "body": response.text(),
        "truncated": response.truncated,
    }))
}

/// `scheme://authority/path`, split on the first `://` and the next `/`, nothing checked.
fn split_raw(text: &str) -> Url {
    let (scheme, rest) = text.split_once("://").unwrap_or(("http", text));
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => Scheme::Other(other.to_owned()),
    };
    Url::from_raw_parts(scheme, authority, path)
}
