//! `apply_patch`: exact-text edits to an existing workspace file, all or nothing.
//!
//! Each edit's `oldText` must occur exactly once in the text as the earlier edits left it;
//! otherwise nothing is written and the call fails with `stale_patch`, naming the edit and how
//! often its text was found. The new content replaces the file atomically (a temporary file in
//! the same directory, renamed over it) with the file's permissions kept. Files over 8 MiB and
//! files that are not UTF-8 are refused.

use std::io::Read;
use std::time::Duration;

use async_trait::async_trait;
use bosun_core::{
    Capability, CapabilityRequest, ErrorCode, Risk, SpecError, ToolError, ToolOutput, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};
use similar::TextDiff;

use super::{
    TempFile, bounded_output, cancelled, display_text, fs_request, parse_input, spec, sync_dir,
};
use crate::tool::{Tool, ToolContext};
use crate::workspace::io_error;

const NAME: &str = "apply_patch";
const MAX_EDITS: usize = 50;
/// Longest `oldText` and `newText`, in characters.
const MAX_TEXT_CHARS: usize = 65_536;
/// Largest file patched.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Time allowed to compute the diff shown back; past it the diff is coarser, never wrong.
const DIFF_DEADLINE: Duration = Duration::from_secs(1);

/// Edits a file by exact replacement.
#[derive(Debug)]
pub struct ApplyPatch {
    spec: ToolSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Input {
    path: String,
    edits: Vec<Edit>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Edit {
    old_text: String,
    new_text: String,
}

impl Input {
    fn parse(input: &Value) -> Result<Input, ToolError> {
        let input: Input = parse_input(NAME, input)?;
        if input.edits.is_empty() || input.edits.len() > MAX_EDITS {
            return Err(super::invalid(format!(
                "{} edits given: give 1 to {MAX_EDITS}; split larger changes into several calls",
                input.edits.len()
            )));
        }
        for (i, edit) in input.edits.iter().enumerate() {
            let n = i + 1;
            if edit.old_text.is_empty() {
                return Err(super::invalid(format!(
                    "edit {n}: oldText is empty: copy the exact text to replace from the file"
                )));
            }
            for (field, text) in [("oldText", &edit.old_text), ("newText", &edit.new_text)] {
                let chars = text.chars().count();
                if chars > MAX_TEXT_CHARS {
                    return Err(super::invalid(format!(
                        "edit {n}: {field} has {chars} characters: keep it within {MAX_TEXT_CHARS}"
                    )));
                }
            }
        }
        Ok(input)
    }
}

impl ApplyPatch {
    /// The tool with its checked spec.
    pub fn new() -> Result<ApplyPatch, SpecError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to change, relative to the workspace."
                },
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_EDITS,
                    "description": "Replacements applied in order, each to the text the previous ones left.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "oldText": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": MAX_TEXT_CHARS,
                                "description": "Exact text to replace; must occur exactly once."
                            },
                            "newText": {
                                "type": "string",
                                "maxLength": MAX_TEXT_CHARS,
                                "description": "Text to put in its place."
                            }
                        },
                        "required": ["oldText", "newText"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["path", "edits"],
            "additionalProperties": false
        });
        let description = "Change an existing text file by exact replacements. Each oldText must \
            occur exactly once (include surrounding lines to make it unique); if any edit does \
            not match, nothing is changed (stale_patch). Returns a unified diff.";
        Ok(ApplyPatch {
            spec: spec(NAME, description, Risk::Write, Capability::FsWrite, schema)?,
        })
    }
}

#[async_trait]
impl Tool for ApplyPatch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        "builtin.tool.apply_patch"
    }

    fn capability_requests(
        &self,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        let input = Input::parse(input)?;
        Ok(vec![fs_request(
            Capability::FsWrite,
            &ctx.workspace,
            &input.path,
        )?])
    }

    fn summarize(&self, input: &Value) -> String {
        let path = input.get("path").and_then(Value::as_str).unwrap_or("?");
        let edits = input
            .get("edits")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let plural = if edits == 1 { "" } else { "s" };
        format!("patch {} ({edits} edit{plural})", display_text(path))
    }

    fn preview(&self, input: &Value) -> Option<String> {
        let edits = input.get("edits")?.as_array()?;
        let mut lines = Vec::new();
        for (i, edit) in edits.iter().enumerate() {
            lines.push(format!("@@ edit {} of {}", i + 1, edits.len()));
            for (sign, key) in [('-', "oldText"), ('+', "newText")] {
                let text = edit.get(key).and_then(Value::as_str).unwrap_or_default();
                lines.extend(text.lines().map(|l| format!("{sign}{l}")));
            }
        }
        Some(super::cap_preview(lines))
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input = Input::parse(&input)?;
        let path = ctx.workspace.resolve(&input.path)?;
        let shown = ctx.workspace.relative(&path);
        if let Some(files) = ctx.session.file_access() {
            return patch_through(files.as_ref(), input, path, shown, ctx).await;
        }
        let cancel = ctx.cancel.clone();
        let workspace = ctx.workspace.clone();
        let checkpoint = ctx.session.checkpoint();
        let task = tokio::task::spawn_blocking(move || {
            // Opened beneath a handle of the root (never following a link that leaves it) and
            // without blocking on a FIFO; the new content goes through a handle of the same
            // directory.
            let root = workspace.handle().map_err(|err| io_error(&err, &shown))?;
            let relative = workspace.beneath(&path)?;
            let mut file = root
                .open_read(relative)
                .map_err(|err| io_error(&err, &shown))?;
            let meta = file.metadata().map_err(|err| io_error(&err, &shown))?;
            if !meta.is_file() {
                return Err(ToolError::new(
                    ErrorCode::NotFile,
                    format!("`{shown}` is not a regular file: apply_patch changes files only"),
                ));
            }
            if meta.len() > MAX_FILE_BYTES {
                return Err(super::invalid(format!(
                    "`{shown}` is {} bytes: apply_patch changes files of at most {MAX_FILE_BYTES} bytes",
                    meta.len()
                )));
            }
            let mut bytes = Vec::new();
            (&mut file)
                .take(MAX_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|err| io_error(&err, &shown))?;
            drop(file);
            let original = String::from_utf8(bytes).map_err(|_| {
                super::invalid(format!(
                    "`{shown}` is not UTF-8 text: apply_patch edits text files only"
                ))
            })?;
            let updated = apply_edits(&original, &input.edits, &shown)?;
            if cancel.is_cancelled() {
                return Err(cancelled());
            }
            let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
                return Err(super::invalid(format!("`{shown}` has no parent directory")));
            };
            let parent = if parent.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                parent
            };
            let dir = root
                .open_dir(parent)
                .map_err(|err| io_error(&err, &shown))?;
            // The file's bytes and mode kept for undo before the first change of this run.
            crate::checkpoint::before_write(checkpoint.as_deref(), &workspace, relative)?;
            let mut temp =
                TempFile::create_in(&dir, "patch").map_err(|err| io_error(&err, &shown))?;
            temp.write_all(updated.as_bytes(), Some(meta.permissions()))
                .map_err(|err| io_error(&err, &shown))?;
            temp.replace(&name.to_string_lossy())
                .map_err(|err| io_error(&err, &shown))?;
            sync_dir(&dir);
            let diff = unified_diff(&original, &updated, &shown);
            Ok(json!({"path": shown, "edits": input.edits.len(), "diff": diff}))
        });
        let value = task.await.map_err(|err| {
            ToolError::new(ErrorCode::IoError, format!("apply_patch failed: {err}"))
        })??;
        bounded_output(value, false, &ctx.limits)
    }
}

/// The change from `original` to `updated` as a unified diff of `shown`.
fn unified_diff(original: &str, updated: &str, shown: &str) -> String {
    TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(original, updated)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string()
}

/// The patch applied to the face's text of the file (an editor's buffer, unsaved changes
/// included) and the result written back through it. The file is first opened beneath the root
/// as on disk, so a path that is no regular file inside the workspace fails the same way.
async fn patch_through(
    files: &dyn crate::file_access::FileAccess,
    input: Input,
    path: std::path::PathBuf,
    shown: String,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let workspace = ctx.workspace.clone();
    let checkpoint = ctx.session.checkpoint();
    let (checked, opened) = (shown.clone(), path.clone());
    let target = tokio::task::spawn_blocking(move || {
        let root = workspace.handle().map_err(|err| io_error(&err, &checked))?;
        let file = root
            .open_read(workspace.beneath(&opened)?)
            .map_err(|err| io_error(&err, &checked))?;
        let meta = file.metadata().map_err(|err| io_error(&err, &checked))?;
        if meta.is_file() {
            // The content before the edit kept for undo, as on disk.
            crate::checkpoint::before_write(
                checkpoint.as_deref(),
                &workspace,
                workspace.beneath(&opened)?,
            )?;
            // What the face may write: this file, at this path, and nothing swapped in.
            crate::file_access::ConfinedPath::new(workspace.root(), &opened, &file)
                .map_err(|err| io_error(&err, &checked))
        } else {
            Err(ToolError::new(
                ErrorCode::NotFile,
                format!("`{checked}` is not a regular file: apply_patch changes files only"),
            ))
        }
    })
    .await
    .map_err(|err| ToolError::new(ErrorCode::IoError, format!("apply_patch failed: {err}")))??;
    let original = tokio::select! {
        text = files.read_text(&path) => text.map_err(|err| io_error(&err, &shown))?,
        () = ctx.cancel.cancelled() => return Err(cancelled()),
    };
    if original.len() as u64 > MAX_FILE_BYTES {
        return Err(super::invalid(format!(
            "`{shown}` is {} bytes: apply_patch changes files of at most {MAX_FILE_BYTES} bytes",
            original.len()
        )));
    }
    let updated = apply_edits(&original, &input.edits, &shown)?;
    if ctx.cancel.is_cancelled() {
        return Err(cancelled());
    }
    crate::file_access::write_confined(files, &target, &updated, &shown).await?;
    let diff = unified_diff(&original, &updated, &shown);
    bounded_output(
        json!({"path": shown, "edits": input.edits.len(), "diff": diff}),
        false,
        &ctx.limits,
    )
}

/// Applies every edit in order to a copy of `original`, or fails on the first one whose
/// `oldText` does not occur exactly once.
fn apply_edits(original: &str, edits: &[Edit], shown: &str) -> Result<String, ToolError> {
    let mut text = original.to_owned();
    let total = edits.len();
    for (i, edit) in edits.iter().enumerate() {
        let n = i + 1;
        let at = unique_position(&text, &edit.old_text).map_err(|found| {
            let hint = if found == 0 {
                "read the file again and copy oldText exactly, whitespace included".to_owned()
            } else {
                "include more surrounding lines so it matches exactly once".to_owned()
            };
            let order = if n > 1 { " (after the earlier edits were applied)" } else { "" };
            ToolError::new(
                ErrorCode::StalePatch,
                format!(
                    "edit {n} of {total}: oldText was found {found} times in `{shown}`{order}: {hint}; nothing was changed"
                ),
            )
        })?;
        text.replace_range(at..at + edit.old_text.len(), &edit.new_text);
    }
    Ok(text)
}

/// The byte position of the only occurrence of `needle`, or the number of occurrences when
/// that is not one. Occurrences that overlap count too ("aa" occurs twice in "aaa"); a second
/// one is looked for from just after the first one's first character.
fn unique_position(text: &str, needle: &str) -> Result<usize, usize> {
    let mut positions = text.match_indices(needle).map(|(at, _)| at);
    let Some(first) = positions.next() else {
        return Err(0);
    };
    let further = positions.count();
    if further > 0 {
        return Err(further + 1);
    }
    let step = needle.chars().next().map_or(1, char::len_utf8);
    if text[first + step..].contains(needle) {
        return Err(2);
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occurrences_are_counted_with_overlaps() {
        assert_eq!(unique_position("abc", "b"), Ok(1));
        assert_eq!(unique_position("abc", "x"), Err(0));
        assert_eq!(unique_position("abab", "ab"), Err(2));
        assert_eq!(unique_position("aaa", "aa"), Err(2));
        assert_eq!(unique_position("éé", "é"), Err(2));
        assert_eq!(unique_position("xé", "é"), Ok(1));
    }
}
