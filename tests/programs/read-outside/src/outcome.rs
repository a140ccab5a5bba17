//! How a hostile program reports a file access: what it tried and what happened, never a
//! failure, so a test can assert exactly what the guest saw. Shared with fs-escape by `#[path]`.

use serde_json::{Value, json};

/// Reads `path` and reports the outcome (the first 4 KiB of content on success).
pub fn attempt_read(path: &str) -> Value {
    match std::fs::read(path) {
        Ok(bytes) => json!({
            "path": path,
            "ok": true,
            "content": String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]),
        }),
        Err(e) => json!({"path": path, "ok": false, "error": e.to_string()}),
    }
}
