//! `read_file`: the text of one workspace file, at most what fits the output bound.
//!
//! It reads a bounded prefix (never the whole of a large file) and cuts it on a UTF-8 boundary.
//! Binary files are refused: a file whose first 8 KiB hold a NUL byte gives `invalid_input`
//! "binary file", as git and grep judge it. Other bytes that are not UTF-8 (Latin-1 text, say)
//! are decoded lossily, each bad byte shown as U+FFFD, so such text stays readable. Only
//! regular files are read: a directory gives `not_file`, and so does a FIFO or device, which
//! could block or never end.

use async_trait::async_trait;
use bosun_core::{
    Capability, CapabilityRequest, ErrorCode, Risk, SpecError, ToolError, ToolOutput, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::{
    bounded_output, cancelled, display_text, fs_request, parse_input, spec, trim_partial_utf8,
};
use crate::tool::{Tool, ToolContext};
use crate::workspace::io_error;

const NAME: &str = "read_file";
/// How much of the start of a file is checked for a NUL byte.
const BINARY_PROBE: usize = 8 * 1024;

/// Reads a text file.
#[derive(Debug)]
pub struct ReadFile {
    spec: ToolSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Input {
    path: String,
}

impl ReadFile {
    /// The tool with its checked spec.
    pub fn new() -> Result<ReadFile, SpecError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to read, relative to the workspace."
                }
            },
            "required": ["path"],
            "additionalProperties": false
        });
        let description = "Read a UTF-8 text file in the workspace. Returns its content (cut to \
            the output limit, with `truncated` true when cut) and its size in `bytes`. Binary \
            files are refused.";
        Ok(ReadFile {
            spec: spec(NAME, description, Risk::Read, Capability::FsRead, schema)?,
        })
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        "builtin.tool.read_file"
    }

    fn capability_requests(
        &self,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        let input: Input = parse_input(NAME, input)?;
        let path = ctx.workspace.resolve(&input.path)?;
        Ok(vec![fs_request(Capability::FsRead, &ctx.workspace, &path)])
    }

    fn summarize(&self, input: &Value) -> String {
        let path = input.get("path").and_then(Value::as_str).unwrap_or("?");
        format!("read {}", display_text(path))
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(NAME, &input)?;
        let path = ctx.workspace.resolve(&input.path)?;
        let shown = ctx.workspace.relative(&path);
        // Opened beneath a handle of the root, so a directory swapped for a link since the path
        // was resolved cannot lead outside; O_NONBLOCK so that opening a FIFO cannot hang.
        let file = ctx
            .workspace
            .handle()
            .and_then(|root| root.open_read(ctx.workspace.beneath(&path).unwrap_or(&path)))
            .map(tokio::fs::File::from_std)
            .map_err(|err| io_error(&err, &shown))?;
        let meta = file
            .metadata()
            .await
            .map_err(|err| io_error(&err, &shown))?;
        if meta.is_dir() {
            return Err(ToolError::new(
                ErrorCode::NotFile,
                format!("`{shown}` is a directory: use list_files to see what it holds"),
            ));
        }
        if !meta.is_file() {
            return Err(ToolError::new(
                ErrorCode::NotFile,
                format!(
                    "`{shown}` is not a regular file (a FIFO, socket or device): read_file reads files only"
                ),
            ));
        }
        // The content can never be larger than the bound, so read no more than that, plus one
        // byte to learn whether there is more.
        let limit = ctx.limits.max_output_bytes;
        let capacity = usize::try_from(meta.len())
            .unwrap_or(usize::MAX)
            .min(limit)
            .saturating_add(1);
        let mut buf = Vec::with_capacity(capacity);
        let mut reader = file.take(limit as u64 + 1);
        let read = reader.read_to_end(&mut buf);
        tokio::select! {
            read = read => { read.map_err(|err| io_error(&err, &shown))?; }
            () = ctx.cancel.cancelled() => return Err(cancelled()),
        }
        drop(reader);
        if buf[..buf.len().min(BINARY_PROBE)].contains(&0) {
            return Err(super::invalid(format!(
                "`{shown}` is a binary file ({} bytes): read_file returns text only",
                meta.len()
            )));
        }
        let mut truncated = false;
        if buf.len() > limit {
            buf.truncate(limit);
            truncated = true;
        }
        let text = if truncated {
            String::from_utf8_lossy(trim_partial_utf8(&buf)).into_owned()
        } else {
            String::from_utf8_lossy(&buf).into_owned()
        };
        drop(buf);
        bounded_output(
            json!({"path": shown, "content": text, "bytes": meta.len(), "truncated": truncated}),
            truncated,
            &ctx.limits,
        )
    }
}
