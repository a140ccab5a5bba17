//! `list_files`: the entries under a workspace directory, gitignore-aware, at most
//! `limits.max_entries` of them. It reads directory listings and metadata only, never file
//! contents, and never follows a symbolic link.

use async_trait::async_trait;
use bosun_core::{
    Capability, CapabilityRequest, ErrorCode, Risk, SpecError, ToolError, ToolOutput, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    bounded_output, cancelled, display_text, fs_request, parse_input, spec, workspace_walk,
};
use crate::tool::{Tool, ToolContext};

const NAME: &str = "list_files";
const MAX_DEPTH: u8 = 8;

/// Lists files and directories.
#[derive(Debug)]
pub struct ListFiles {
    spec: ToolSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Input {
    #[serde(default = "default_path")]
    path: String,
    #[serde(default = "default_depth")]
    depth: u8,
}

fn default_path() -> String {
    ".".to_owned()
}

fn default_depth() -> u8 {
    2
}

impl Input {
    fn parse(input: &Value) -> Result<Input, ToolError> {
        let input: Input = parse_input(NAME, input)?;
        if input.depth > MAX_DEPTH {
            return Err(super::invalid(format!(
                "depth {} is too deep: use 0 to {MAX_DEPTH}",
                input.depth
            )));
        }
        Ok(input)
    }
}

impl ListFiles {
    /// The tool with its checked spec.
    pub fn new() -> Result<ListFiles, SpecError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory to list, relative to the workspace. Default \".\"."
                },
                "depth": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_DEPTH,
                    "description": "How many directory levels below `path` to descend; 0 lists only its direct entries. Default 2."
                }
            },
            "additionalProperties": false
        });
        let description = "List files and directories in the workspace, sorted by path. \
            Respects .gitignore, shows hidden files, skips .git and does not follow symbolic links. \
            Returns at most a fixed number of entries; `truncated` says whether more exist.";
        Ok(ListFiles {
            spec: spec(NAME, description, Risk::Read, Capability::FsRead, schema)?,
        })
    }
}

#[async_trait]
impl Tool for ListFiles {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        "builtin.tool.list_files"
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
            &input.path,
        )?])
    }

    fn summarize(&self, input: &Value) -> String {
        let path = input.get("path").and_then(Value::as_str).unwrap_or(".");
        let depth = input.get("depth").and_then(Value::as_u64).unwrap_or(2);
        format!("list {} (depth {depth})", display_text(path))
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input = Input::parse(&input)?;
        let dir = ctx.workspace.resolve(&input.path)?;
        let shown = ctx.workspace.relative(&dir);
        if !dir.is_dir() {
            return Err(ToolError::new(
                ErrorCode::NotDirectory,
                format!("`{shown}` is not a directory: use read_file for a file"),
            ));
        }
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let max_entries = ctx.limits.max_entries;
        let depth = usize::from(input.depth) + 1;
        let reads = ctx.reads.clone();
        let walk = tokio::task::spawn_blocking(move || {
            let mut entries = Vec::new();
            let mut truncated = false;
            let mut withheld = 0usize;
            for entry in workspace_walk(&workspace, &dir, Some(depth)) {
                if cancel.is_cancelled() {
                    return Err(cancelled());
                }
                // An unreadable entry is left out rather than failing the listing.
                let Ok(entry) = entry else { continue };
                if entry.depth() == 0 {
                    continue;
                }
                if entries.len() == max_entries {
                    truncated = true;
                    break;
                }
                let Some(file_type) = entry.file_type() else {
                    continue;
                };
                let path = workspace.relative(entry.path());
                // An entry whose read policy would not allow is not shown, not even its name.
                if !reads.allows(&path) {
                    withheld += 1;
                    continue;
                }
                let item = if file_type.is_symlink() {
                    json!({"path": path, "type": "symlink"})
                } else if file_type.is_dir() {
                    json!({"path": path, "type": "directory"})
                } else {
                    match entry.metadata() {
                        Ok(meta) => json!({"path": path, "type": "file", "size": meta.len()}),
                        Err(_) => json!({"path": path, "type": "file"}),
                    }
                };
                entries.push(item);
            }
            Ok((entries, truncated, withheld))
        });
        let (entries, truncated, withheld) = walk.await.map_err(|err| {
            ToolError::new(
                ErrorCode::IoError,
                format!("listing `{shown}` failed: {err}"),
            )
        })??;
        let mut output = json!({"path": shown, "entries": entries, "truncated": truncated});
        if withheld > 0 {
            output["withheld"] = json!({
                "entries": withheld,
                "reason": "policy does not allow reading these paths without asking",
            });
        }
        bounded_output(output, truncated, &ctx.limits)
    }
}
