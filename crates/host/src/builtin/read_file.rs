//! `read_file`: the text of one workspace file, at most what fits the output bound.
//!
//! It reads a bounded prefix (never the whole of a large file) and cuts it on a UTF-8 boundary.
//! With `offset` (the first line, from 1) and `limit` (how many lines) it returns a page of lines,
//! so a file larger than the bound is read in pages: a result cut short says `nextOffset`, the
//! line to ask for next. Skipped lines are scanned, never kept.
//!
//! Binary files are refused: a file whose first 8 KiB hold a NUL byte gives `invalid_input`
//! "binary file", as git and grep judge it. Other bytes that are not UTF-8 (Latin-1 text, say)
//! are decoded lossily, each bad byte shown as U+FFFD, so such text stays readable. Only
//! regular files are read: a directory gives `not_file`, and so does a FIFO or device, which
//! could block or never end.

use std::path::Path;

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
    /// The first line to return, from 1.
    #[serde(default)]
    offset: Option<u64>,
    /// How many lines to return at most.
    #[serde(default)]
    limit: Option<u64>,
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
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "The first line to return (1 is the first line of the file)."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "How many lines to return at most."
                }
            },
            "required": ["path"],
            "additionalProperties": false
        });
        let description = "Read a UTF-8 text file in the workspace. Returns its content (cut to \
            the output limit, with `truncated` true and `nextOffset` when cut) and its size in \
            `bytes`. Give `offset` (first line, from 1) and `limit` (lines) to read a large \
            file in pages. Binary files are refused.";
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
        Ok(vec![fs_request(
            Capability::FsRead,
            &ctx.workspace,
            &input.path,
        )?])
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
            .map_err(|err| io_error(&err, &shown))?;
        // `fstat` of the descriptor just opened, in place like the open itself: a regular file
        // only, O_NONBLOCK cleared for the read.
        let (file, meta) =
            bosun_fsio::regular(file, Path::new(&shown)).map_err(|err| match err {
                bosun_fsio::OpenError::NotRegular {
                    found: bosun_fsio::Found::Directory,
                    ..
                } => ToolError::new(
                    ErrorCode::NotFile,
                    format!("`{shown}` is a directory: use list_files to see what it holds"),
                ),
                bosun_fsio::OpenError::NotRegular { found, .. } => ToolError::new(
                    ErrorCode::NotFile,
                    format!("`{shown}` is {found}, not a regular file: read_file reads files only"),
                ),
                other => io_error(&other.into_io(), &shown),
            })?;
        if input.offset == Some(0) || input.limit == Some(0) {
            return Err(super::invalid(
                "offset and limit count from 1: offset 1 is the first line".to_owned(),
            ));
        }
        // The face's own text (an editor's unsaved buffer) of the file just opened beneath the
        // root, when it offers one.
        if let Some(files) = ctx.session.file_access() {
            drop(file);
            let text = tokio::select! {
                text = files.read_text(&path) => text.map_err(|err| io_error(&err, &shown))?,
                () = ctx.cancel.cancelled() => return Err(cancelled()),
            };
            let bytes = text.len() as u64;
            let text = std::io::Cursor::new(text.into_bytes());
            if input.offset.is_some() || input.limit.is_some() {
                return read_lines(text, &input, &shown, bytes, ctx).await;
            }
            return read_whole(text, &shown, bytes, ctx).await;
        }
        if input.offset.is_some() || input.limit.is_some() {
            let file = tokio::fs::File::from_std(file);
            return read_lines(file, &input, &shown, meta.len(), ctx).await;
        }
        let head = tokio::select! {
            head = read_head(file, meta.len(), ctx.limits.max_output_bytes) => {
                head.map_err(|err| io_error(&err, &shown))?
            }
            () = ctx.cancel.cancelled() => return Err(cancelled()),
        };
        read_whole(std::io::Cursor::new(head), &shown, meta.len(), ctx).await
    }
}

/// The first `limit` + 1 bytes of `file` (of `bytes` bytes), read in one trip to the blocking
/// pool: a `tokio::fs::File` takes a trip per read, and one more to find the end.
async fn read_head(file: std::fs::File, bytes: u64, limit: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let capacity = usize::try_from(bytes)
        .unwrap_or(usize::MAX)
        .min(limit)
        .saturating_add(1);
    tokio::task::spawn_blocking(move || {
        let mut head = Vec::with_capacity(capacity);
        file.take(limit as u64 + 1).read_to_end(&mut head)?;
        Ok(head)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// The whole text of `file` (of `bytes` bytes), cut to the output bound.
async fn read_whole(
    file: impl tokio::io::AsyncRead + Unpin,
    shown: &str,
    bytes: u64,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    // The content can never be larger than the bound, so read no more than that, plus one
    // byte to learn whether there is more.
    let limit = ctx.limits.max_output_bytes;
    let capacity = usize::try_from(bytes)
        .unwrap_or(usize::MAX)
        .min(limit)
        .saturating_add(1);
    let mut buf = Vec::with_capacity(capacity);
    let mut reader = file.take(limit as u64 + 1);
    let read = reader.read_to_end(&mut buf);
    tokio::select! {
        read = read => { read.map_err(|err| io_error(&err, shown))?; }
        () = ctx.cancel.cancelled() => return Err(cancelled()),
    }
    drop(reader);
    if buf[..buf.len().min(BINARY_PROBE)].contains(&0) {
        return Err(super::invalid(format!(
            "`{shown}` is a binary file ({bytes} bytes): read_file returns text only"
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
    let value = json!({"path": shown, "content": text, "bytes": bytes, "truncated": truncated});
    page_output(value, 1, truncated, &ctx.limits)
}

/// How many bytes `bytes` take as a JSON string's contents: quotes, backslashes and control
/// characters are escaped.
fn escaped_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum()
}

/// Bounds a result whose `content` starts at line `first`, then says where the next page
/// starts (`nextOffset`) when anything was left: lines after it (`more`), or a cut made here or
/// by the bound. A paged result's `lines` counts the lines it holds.
fn page_output(
    mut value: Value,
    first: u64,
    more: bool,
    limits: &bosun_core::Limits,
) -> Result<ToolOutput, ToolError> {
    let truncated = value["truncated"].as_bool().unwrap_or(false);
    // Room for the real number, reserved before bounding: it is never longer than this.
    value["nextOffset"] = json!(u64::MAX);
    let mut output = bounded_output(value, truncated, limits)?;
    let content = output.value["content"].as_str().unwrap_or_default();
    let whole = content.matches('\n').count() as u64;
    let partial = !content.is_empty() && !content.ends_with('\n');
    let next = if output.truncated {
        // A line cut short is read again on the next page — unless no line fitted whole, which
        // would return the same page for ever: then the page after it.
        Some(first + whole.max(1))
    } else if more {
        Some(first + whole + u64::from(partial))
    } else {
        None
    };
    if let Some(map) = output.value.as_object_mut() {
        if map.contains_key("lines") {
            let lines = whole + u64::from(partial && !output.truncated);
            map.insert("lines".to_owned(), json!(lines));
        }
        match next {
            Some(next) => map.insert("nextOffset".to_owned(), json!(next)),
            None => map.remove("nextOffset"),
        };
    }
    Ok(output)
}

/// A page of lines: skips to `offset`, returns up to `limit` lines within the output bound.
async fn read_lines(
    file: impl tokio::io::AsyncRead + Unpin,
    input: &Input,
    shown: &str,
    bytes: u64,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    use tokio::io::AsyncBufReadExt;

    let offset = input.offset.unwrap_or(1).max(1);
    let wanted = input.limit.unwrap_or(u64::MAX).max(1);
    // Room for the content once the rest of the result is serialised around it.
    let budget = ctx.limits.max_output_bytes.saturating_sub(256).max(1);
    let mut reader = tokio::io::BufReader::with_capacity(BINARY_PROBE, file);
    let io = |err: std::io::Error| io_error(&err, shown);
    let head = reader.fill_buf().await.map_err(io)?;
    if head.contains(&0) {
        return Err(super::invalid(format!(
            "`{shown}` is a binary file ({bytes} bytes): read_file returns text only"
        )));
    }
    // Skip to the first wanted line, scanning without keeping anything.
    let mut line = 1u64;
    while line < offset {
        if ctx.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let chunk = reader.fill_buf().await.map_err(io)?;
        if chunk.is_empty() {
            break;
        }
        match chunk.iter().position(|b| *b == b'\n') {
            Some(at) => {
                reader.consume(at + 1);
                line += 1;
            }
            None => {
                let n = chunk.len();
                reader.consume(n);
            }
        }
    }
    if line < offset {
        return bounded_output(
            json!({
                "path": shown, "content": "", "bytes": bytes, "truncated": false,
                "startLine": offset, "lines": 0,
                "note": format!("the file ends before line {offset}"),
            }),
            false,
            &ctx.limits,
        );
    }
    let mut content: Vec<u8> = Vec::new();
    // What the content will take in the JSON result, escapes included.
    let mut used = 0usize;
    let mut returned = 0u64;
    let mut truncated = false;
    let mut buf = Vec::new();
    while returned < wanted {
        if ctx.cancel.is_cancelled() {
            return Err(cancelled());
        }
        buf.clear();
        // At most what still fits, plus one byte to learn the line is longer.
        let room = budget.saturating_sub(used);
        let read = (&mut reader)
            .take(room as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await
            .map_err(io)?;
        if read == 0 {
            break;
        }
        let cost = escaped_len(&buf);
        if cost > room {
            // This line does not fit: cut it if it is the only one, else leave it for the next
            // page.
            truncated = true;
            if returned == 0 {
                let mut fits = 0;
                let mut spent = 0;
                for byte in &buf {
                    spent += escaped_len(std::slice::from_ref(byte));
                    if spent > room {
                        break;
                    }
                    fits += 1;
                }
                content.extend_from_slice(trim_partial_utf8(&buf[..fits]));
            }
            break;
        }
        content.extend_from_slice(&buf);
        used += cost;
        returned += 1;
    }
    let more = truncated || {
        let rest = reader.fill_buf().await.map_err(io)?;
        !rest.is_empty()
    };
    let text = String::from_utf8_lossy(&content).into_owned();
    let value = json!({
        "path": shown,
        "content": text,
        "bytes": bytes,
        "truncated": truncated,
        "startLine": offset,
        "lines": returned,
    });
    page_output(value, offset, more, &ctx.limits)
}
