//! `search`: lines matching a literal string (or, when asked, a regular expression) in the
//! workspace's text files, with ripgrep's engine.
//!
//! The walk is gitignore-aware and never follows a symbolic link; files over 1 MiB and binary
//! files (a NUL byte) are skipped whole; each line is cut to 500 characters. The blocking walk
//! runs on tokio's blocking pool and checks for cancellation between files. Every file whose
//! lines it returns is recorded in `ToolContext::read_files`, for the chokepoint to raise the
//! session to that file's label.

use std::io;
use std::path::Path;

use async_trait::async_trait;
use bosun_core::{
    Capability, CapabilityRequest, ErrorCode, Risk, SpecError, ToolError, ToolOutput, ToolSpec,
};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    bounded_output, cancelled, display_text, fs_request, parse_input, spec, truncate_chars,
    workspace_walk,
};
use crate::Workspace;
use crate::tool::{Tool, ToolContext};

const NAME: &str = "search";
const MAX_QUERY_CHARS: usize = 1024;
const MAX_MATCHES: usize = 500;
const DEFAULT_MATCHES: usize = 100;
/// Larger files are skipped.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Longest line text returned, in characters.
const MAX_LINE_CHARS: usize = 500;
/// Largest regex program, so a hostile pattern cannot take much memory.
const REGEX_SIZE_LIMIT: usize = 8 * 1024 * 1024;

/// Searches file contents.
#[derive(Debug)]
pub struct Search {
    spec: ToolSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Input {
    query: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default = "default_max_matches")]
    max_matches: usize,
    #[serde(default)]
    regex: bool,
}

fn default_max_matches() -> usize {
    DEFAULT_MATCHES
}

impl Input {
    fn parse(input: &Value) -> Result<Input, ToolError> {
        let input: Input = parse_input(NAME, input)?;
        let chars = input.query.chars().count();
        if chars == 0 {
            return Err(super::invalid(
                "query is empty: give 1 to 1024 characters to look for",
            ));
        }
        if chars > MAX_QUERY_CHARS {
            return Err(super::invalid(format!(
                "query has {chars} characters: shorten it to at most {MAX_QUERY_CHARS}"
            )));
        }
        if !(1..=MAX_MATCHES).contains(&input.max_matches) {
            return Err(super::invalid(format!(
                "maxMatches {} is out of range: use 1 to {MAX_MATCHES}",
                input.max_matches
            )));
        }
        Ok(input)
    }

    fn path(&self) -> &str {
        self.path.as_deref().unwrap_or(".")
    }

    fn matcher(&self) -> Result<RegexMatcher, ToolError> {
        RegexMatcherBuilder::new()
            .fixed_strings(!self.regex)
            .line_terminator(Some(b'\n'))
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build(&self.query)
            .map_err(|err| {
                super::invalid(format!(
                    "query is not a valid regular expression: {err}; fix it, or set regex to false to search for the literal text"
                ))
            })
    }
}

impl Search {
    /// The tool with its checked spec.
    pub fn new() -> Result<Search, SpecError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_QUERY_CHARS,
                    "description": "Text to look for; a regular expression when `regex` is true."
                },
                "path": {
                    "type": "string",
                    "description": "File or directory to search, relative to the workspace. Default \".\"."
                },
                "maxMatches": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_MATCHES,
                    "description": "Most matching lines to return. Default 100."
                },
                "regex": {
                    "type": "boolean",
                    "description": "Treat `query` as a regular expression (Rust syntax). Default false: literal text."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let description = "Search text files in the workspace for lines containing `query`. \
            Respects .gitignore; skips binary files and files over 1 MiB. Returns each match's \
            path, line number and line text (cut to 500 characters).";
        Ok(Search {
            spec: spec(NAME, description, Risk::Read, Capability::FsRead, schema)?,
        })
    }
}

#[async_trait]
impl Tool for Search {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        "builtin.tool.search"
    }

    fn capability_requests(
        &self,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        let input = Input::parse(input)?;
        Ok(vec![fs_request(
            Capability::FsRead,
            &ctx.workspace,
            input.path(),
        )?])
    }

    fn summarize(&self, input: &Value) -> String {
        let query = input.get("query").and_then(Value::as_str).unwrap_or("");
        let path = input.get("path").and_then(Value::as_str).unwrap_or(".");
        let (query, cut) = truncate_chars(query, 100);
        let kind = if input.get("regex").and_then(Value::as_bool) == Some(true) {
            "regex"
        } else {
            "text"
        };
        format!(
            "search {}{} for {kind} \"{}{}\"",
            display_text(path),
            if path.ends_with('/') { "" } else { "/" },
            display_text(query),
            if cut { "…" } else { "" }
        )
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input = Input::parse(&input)?;
        let matcher = input.matcher()?;
        let start = ctx.workspace.resolve(input.path())?;
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let max_matches = input.max_matches;
        let shown = workspace.relative(&start);
        let reads = ctx.reads.clone();
        let shown_in_task = shown.clone();
        let task = tokio::task::spawn_blocking(move || {
            let mut searcher = SearcherBuilder::new()
                .line_number(true)
                .binary_detection(BinaryDetection::quit(0))
                // Files are at most 1 MiB when checked; this also stops one that grew since.
                .heap_limit(Some(2 * MAX_FILE_BYTES as usize))
                .build();
            let mut found = Found::default();
            let root = workspace
                .handle()
                .map_err(|err| crate::workspace::io_error(&err, &shown_in_task))?;
            for entry in workspace_walk(&workspace, &start, None) {
                if cancel.is_cancelled() {
                    return Err(cancelled());
                }
                let Ok(entry) = entry else { continue };
                // Regular files only: symbolic links are never followed.
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                // Each file is judged by its own path: a read rule on `secrets/**` holds
                // whether the search started at `.`, at `secrets` or at a link to it.
                if !reads.allows(&workspace.relative(entry.path())) {
                    found.withheld += 1;
                    continue;
                }
                // One more match than asked for tells whether any were left out.
                if !search_file(
                    &mut searcher,
                    &matcher,
                    &workspace,
                    &root,
                    entry.path(),
                    max_matches + 1,
                    &mut found,
                ) {
                    break;
                }
            }
            Ok(found)
        });
        let mut found = task.await.map_err(|err| {
            ToolError::new(
                ErrorCode::IoError,
                format!("searching `{shown}` failed: {err}"),
            )
        })??;
        let mut truncated = found.lines_cut;
        if found.matches.len() > max_matches {
            found.matches.truncate(max_matches);
            truncated = true;
        }
        // Each file whose lines reach the result is data the session now holds: the chokepoint
        // raises the session to that file's label, not only to the label of where the search
        // started.
        for path in found.matches.iter().filter_map(|m| m["path"].as_str()) {
            ctx.read_files.record(path);
        }
        let mut output = json!({"matches": found.matches, "truncated": truncated});
        if found.withheld > 0 {
            output["withheld"] = json!({
                "files": found.withheld,
                "reason": "policy does not allow reading these files without asking; read_file one of them to ask",
            });
        }
        bounded_output(output, truncated, &ctx.limits)
    }
}

#[derive(Debug, Default)]
struct Found {
    matches: Vec<Value>,
    /// Whether a line's text was cut to the line bound.
    lines_cut: bool,
    /// Files left out because policy does not allow reading them.
    withheld: usize,
}

/// Searches one file, adding its matches unless it turns out to be binary. Returns false once
/// `want` matches are found.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    workspace: &Workspace,
    root: &crate::beneath::Root,
    path: &Path,
    want: usize,
    found: &mut Found,
) -> bool {
    let mut sink = FileSink {
        lines: Vec::new(),
        want: want.saturating_sub(found.matches.len()),
        binary: false,
    };
    // Opened beneath the root's handle with O_NOFOLLOW, then checked: a file swapped for a
    // link or a FIFO since the walk saw it is skipped, not followed or waited on; a directory
    // swapped for a link cannot lead outside. An unreadable file is skipped too.
    let file = workspace
        .beneath(path)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::PermissionDenied))
        .and_then(|relative| {
            crate::beneath::open_at(
                root.fd(),
                relative,
                rustix::fs::OFlags::RDONLY
                    | rustix::fs::OFlags::NONBLOCK
                    | rustix::fs::OFlags::NOFOLLOW,
                rustix::fs::Mode::empty(),
            )
        })
        .map(std::fs::File::from);
    let Ok(file) = file else {
        return found.matches.len() < want;
    };
    if !file
        .metadata()
        .is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES)
    {
        return found.matches.len() < want;
    }
    if searcher.search_file(matcher, &file, &mut sink).is_err() || sink.binary {
        return found.matches.len() < want;
    }
    let shown = workspace.relative(path);
    for (line, bytes) in sink.lines {
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let (text, cut) = truncate_chars(text, MAX_LINE_CHARS);
        found.lines_cut |= cut;
        found
            .matches
            .push(json!({"path": shown, "line": line, "text": text}));
    }
    found.matches.len() < want
}

/// Collects one file's matching lines, held back until the whole file is known not to be binary.
struct FileSink {
    lines: Vec<(u64, Vec<u8>)>,
    want: usize,
    binary: bool,
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            if self.lines.len() >= self.want {
                return Ok(false);
            }
            // Keep only what the line bound can use: 4 bytes per character at most.
            let keep = line.len().min(MAX_LINE_CHARS * 4 + 2);
            self.lines.push((first + i as u64, line[..keep].to_vec()));
        }
        Ok(self.lines.len() < self.want)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}
