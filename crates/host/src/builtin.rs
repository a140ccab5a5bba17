//! The built-in workspace tools, with Forge's names, input shapes and bounds: `list_files`,
//! `read_file`, `search`, `create_file`, `apply_patch` and `run_command`; then the model's own
//! `update_plan` and `restrict_self`.
//!
//! Each tool confines every path to the [`Workspace`] (resolving it already in
//! [`Tool::capability_requests`], so a path outside fails before policy runs), checks its input
//! beyond the schema, honours cancellation and bounds its own output. None of them decides
//! whether it may run: that is the chokepoint's job, and only the chokepoint calls them.
//!
//! This module also holds what the tools share: input parsing, the output bound, the
//! gitignore-aware walk, safe text for approval prompts and atomic file writes.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use bosun_core::{
    Capability, CapabilityRequest, ErrorCode, Limits, Risk, SpecError, ToolError, ToolName,
    ToolOutput, ToolResult, ToolSpec, bound_result,
};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{Match, WalkBuilder};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::beneath::Dir;
use crate::tool::{Tool, ToolContext};
use crate::workspace::{Workspace, io_error};

mod apply_patch;
mod create_file;
mod list_files;
mod read_file;
mod restrict_self;
mod run_command;
mod search;
pub mod update_plan;

pub use apply_patch::ApplyPatch;
pub use create_file::CreateFile;
pub use list_files::ListFiles;
pub use read_file::ReadFile;
pub use restrict_self::RestrictSelf;
pub use run_command::RunCommand;
pub use search::Search;
pub use update_plan::{Plan, PlanStep, StepStatus, UpdatePlan};

/// The built-in tools: Forge's six, in Forge's order, then `update_plan` and `restrict_self`.
///
/// Their specs are constants checked by this module's tests, so in a tested build the list is
/// always complete; [`try_tools`] reports a spec that breaks a bound instead of leaving it out.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    try_tools().unwrap_or_default()
}

/// The built-in tools, or the first spec error.
pub fn try_tools() -> Result<Vec<Arc<dyn Tool>>, SpecError> {
    Ok(vec![
        Arc::new(ListFiles::new()?),
        Arc::new(ReadFile::new()?),
        Arc::new(Search::new()?),
        Arc::new(CreateFile::new()?),
        Arc::new(ApplyPatch::new()?),
        Arc::new(RunCommand::new()?),
        Arc::new(UpdatePlan::new()?),
        Arc::new(RestrictSelf::new()?),
    ])
}

/// Builds and checks a built-in's spec (its schema's compilation is checked by the tests:
/// `every_builtin_schema_is_a_valid_json_schema`).
fn spec(
    name: &str,
    description: &str,
    risk: Risk,
    capability: Capability,
    input_schema: Value,
) -> Result<ToolSpec, SpecError> {
    ToolSpec::builder(ToolName::new(name)?, description)
        .risk(risk)
        .capability(capability)
        .input_schema(input_schema)
        .build_builtin()
}

/// Parses a tool's input into its typed form; the chokepoint has already checked the schema, so
/// this mostly catches direct callers.
fn parse_input<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, ToolError> {
    T::deserialize(input).map_err(|err| {
        ToolError::new(
            ErrorCode::InvalidInput,
            format!("invalid input for {tool}: {err}; follow the tool's input schema"),
        )
    })
}

/// `invalid_input` with what to fix.
fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, message)
}

/// The error a tool returns when its call is cancelled.
fn cancelled() -> ToolError {
    ToolError::new(
        ErrorCode::Cancelled,
        "the call was cancelled before it finished",
    )
}

fn check_cancel(ctx: &ToolContext) -> Result<(), ToolError> {
    if ctx.cancel.is_cancelled() {
        Err(cancelled())
    } else {
        Ok(())
    }
}

/// One filesystem capability request scoped to a resolved path.
fn fs_request(
    capability: Capability,
    workspace: &Workspace,
    input_path: &str,
) -> Result<CapabilityRequest, ToolError> {
    Ok(CapabilityRequest {
        capability,
        scope: workspace.judged_scope(input_path)?,
    })
}

/// Cuts `value` so the result the chokepoint serialises fits `limits.max_output_bytes`, using
/// the same rule the chokepoint applies, and keeps the output's own `truncated` field (when it
/// has one) equal to the result's.
fn bounded_output(
    mut value: Value,
    truncated: bool,
    limits: &Limits,
) -> Result<ToolOutput, ToolError> {
    set_truncated(&mut value, truncated);
    match bound_result(ToolResult::ok(value, truncated), limits.max_output_bytes) {
        ToolResult::Ok {
            mut output,
            truncated,
            ..
        } => {
            // `false` → `true` is one byte shorter, so this cannot push the output over.
            set_truncated(&mut output, truncated);
            Ok(ToolOutput {
                value: output,
                truncated,
                classification: None,
            })
        }
        ToolResult::Err { error, .. } => Err(error),
    }
}

/// At most 200 lines of a preview, each at most 400 characters, saying what was left out.
fn cap_preview(lines: Vec<String>) -> String {
    const LINES: usize = 200;
    let total = lines.len();
    let mut kept: Vec<String> = lines
        .into_iter()
        .take(LINES)
        .map(|l| {
            if l.chars().count() > 400 {
                let mut cut: String = l.chars().take(400).collect();
                cut.push('…');
                cut
            } else {
                l
            }
        })
        .collect();
    if total > LINES {
        kept.push(format!("… {} more lines", total - LINES));
    }
    kept.join("\n")
}

fn set_truncated(value: &mut Value, truncated: bool) {
    if let Some(field) = value
        .as_object_mut()
        .and_then(|map| map.get_mut("truncated"))
    {
        *field = Value::Bool(truncated);
    }
}

/// Drops an incomplete UTF-8 sequence at the end of a prefix cut from a longer text, so the cut
/// does not show up as a replacement character.
fn trim_partial_utf8(bytes: &[u8]) -> &[u8] {
    // A character is at most 4 bytes: look back over at most 3 continuation bytes for its lead.
    for back in 1..=bytes.len().min(4) {
        let i = bytes.len() - back;
        let byte = bytes[i];
        if byte & 0b1100_0000 == 0b1000_0000 {
            continue; // continuation byte
        }
        let needed = match byte {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1, // invalid lead: leave it to lossy decoding
        };
        return if back < needed { &bytes[..i] } else { bytes };
    }
    bytes
}

/// The first `max` characters of `text`, and whether anything was cut.
fn truncate_chars(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// Text from a model made safe to show a person: control, bidi and zero-width characters
/// (which could rewrite or hide part of an approval prompt) are shown as `\u{…}` escapes.
pub(crate) fn display_text(text: &str) -> String {
    // Newlines too: a summary is one line.
    bosun_core::escape_hidden(text).replace('\n', "\\u{a}")
}

/// A gitignore-aware walk of `start` (a directory or a file inside the workspace): hidden files
/// are shown, `.git` is skipped, symbolic links are reported but never followed, and entries
/// come in file-name order.
///
/// Ignore files are read only inside the workspace: the walker reads those under `start`, and
/// [`AncestorIgnores`] those between the root and `start`. The user's global gitignore is not
/// read, so results depend on the workspace alone.
fn workspace_walk(workspace: &Workspace, start: &Path, max_depth: Option<usize>) -> ignore::Walk {
    let ancestors = AncestorIgnores::new(workspace.root(), start);
    let workspace = workspace.clone();
    let mut builder = WalkBuilder::new(start);
    builder
        .standard_filters(true)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            entry.file_name() != ".git"
                && !workspace.is_withheld(entry.path())
                && !ancestors
                    .is_ignored(entry.path(), entry.file_type().is_some_and(|t| t.is_dir()))
        });
    builder.build()
}

/// The `.ignore` and `.gitignore` files of the directories from the root down to (not
/// including) a walk's start, plus the root's `.git/info/exclude`, deepest first.
///
/// A rule in a deeper directory wins over one above it, as in git. One difference: a `!` rule
/// under the walk's start cannot re-include what an ancestor's file ignores.
struct AncestorIgnores {
    matchers: Vec<Gitignore>,
}

impl AncestorIgnores {
    fn new(root: &Path, start: &Path) -> AncestorIgnores {
        let mut matchers = Vec::new();
        for dir in start
            .ancestors()
            .skip(1)
            .take_while(|dir| dir.starts_with(root))
        {
            let mut files = vec![dir.join(".ignore"), dir.join(".gitignore")];
            if dir == root {
                files.push(dir.join(".git/info/exclude"));
            }
            for file in files {
                // Only regular files: a FIFO named .gitignore would block the walk forever.
                if !file.symlink_metadata().is_ok_and(|m| m.is_file()) {
                    continue;
                }
                let mut builder = GitignoreBuilder::new(dir);
                // A bad line loses only that line, as in git.
                let _partial = builder.add(&file);
                if let Ok(matcher) = builder.build() {
                    matchers.push(matcher);
                }
            }
        }
        AncestorIgnores { matchers }
    }

    fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        for matcher in &self.matchers {
            match matcher.matched(path, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }
}

/// A temporary file next to a target, removed on drop unless it was moved into place. Writing
/// the whole content to it first makes the final step (a link or a rename) atomic: readers see
/// the old state or the new one, never half a file. Every step goes through a handle of the
/// directory (see `beneath`), so a directory swapped for a link cannot redirect it.
struct TempFile<'a> {
    dir: &'a Dir,
    name: String,
    file: Option<File>,
}

impl<'a> TempFile<'a> {
    /// Creates a fresh temporary file in `dir` (never reusing an existing one).
    fn create_in(dir: &'a Dir, stem: &str) -> io::Result<TempFile<'a>> {
        let mut attempt = 0;
        loop {
            let name = format!(".{stem}.bosun-{}.tmp", uuid::Uuid::now_v7().simple());
            match dir.create_new(&name) {
                Ok(file) => {
                    return Ok(TempFile {
                        dir,
                        name,
                        file: Some(file),
                    });
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => {
                    attempt += 1;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Writes `content`, applies `permissions` if given, and flushes it to disk.
    fn write_all(
        &mut self,
        content: &[u8],
        permissions: Option<fs::Permissions>,
    ) -> io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(io::Error::other("the temporary file is already closed"));
        };
        file.write_all(content)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()
    }

    /// Puts the file at `target` (a name in the same directory) only if nothing is there: a
    /// hard link fails rather than replace an existing file, so a file created meanwhile is
    /// never overwritten.
    fn link_new(mut self, target: &str) -> io::Result<()> {
        self.file = None;
        self.dir.link(&self.name, target)
        // Drop removes the temporary name; the content lives on under `target`.
    }

    /// Replaces `target` (a name in the same directory) with the file.
    fn replace(mut self, target: &str) -> io::Result<()> {
        self.file = None;
        self.dir.rename(&self.name, target)?;
        self.name.clear();
        Ok(())
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        self.file = None;
        if !self.name.is_empty() {
            // Best effort: a leftover temporary file is harmless, and there is no caller to tell.
            let _ = self.dir.remove(&self.name);
        }
    }
}

/// Syncs a directory so a link or rename in it survives a crash; failures are ignored because
/// the change itself is already visible.
fn sync_dir(dir: &Dir) {
    let _ = dir.sync();
}

/// Maps an I/O error while writing `shown`, adding what to do.
fn write_error(err: &io::Error, shown: &str) -> ToolError {
    match err.kind() {
        io::ErrorKind::AlreadyExists => ToolError::new(
            ErrorCode::AlreadyExists,
            format!("`{shown}` already exists: use apply_patch to change it, or choose a new path"),
        ),
        _ => io_error(err, shown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_spec_builds() {
        let built = try_tools().unwrap();
        let names: Vec<_> = built.iter().map(|t| t.spec().name.to_string()).collect();
        let forge = [
            "list_files",
            "read_file",
            "search",
            "create_file",
            "apply_patch",
            "run_command",
        ];
        assert_eq!(names[..forge.len()], forge);
        assert_eq!(tools().len(), built.len());
    }

    /// Built-ins skip compiling their schemas at start-up (`build_builtin`); this is where each
    /// is checked as a plugin's would be: the meta-schema accepts it and it compiles.
    #[test]
    fn every_builtin_schema_is_a_valid_json_schema() {
        for tool in try_tools().unwrap() {
            let spec = tool.spec();
            if let Err(e) = bosun_core::check_schema(&spec.input_schema) {
                panic!("the built-in {}'s input schema is refused: {e}", spec.name);
            }
        }
        let invalid = ToolSpec::builder(ToolName::new("broken").unwrap(), "A broken schema.")
            .input_schema(serde_json::json!({"type": "object", "properties": {"a": {"type": 7}}}));
        assert!(
            invalid.build().is_err(),
            "a plugin's invalid schema must be refused"
        );
    }

    #[test]
    fn partial_utf8_is_trimmed() {
        let text = "aé€😀".as_bytes();
        assert_eq!(trim_partial_utf8(text), text);
        assert_eq!(trim_partial_utf8(&text[..2]), b"a");
        assert_eq!(trim_partial_utf8(&text[..5]), "aé".as_bytes());
        assert_eq!(trim_partial_utf8(&text[..9]), "aé€".as_bytes());
        assert_eq!(trim_partial_utf8(&text[..10]), text);
        assert_eq!(trim_partial_utf8(b""), b"");
    }

    #[test]
    fn chars_are_truncated_on_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), ("hé", true));
        assert_eq!(truncate_chars("hé", 2), ("hé", false));
    }

    #[test]
    fn hidden_characters_are_escaped_for_people() {
        assert_eq!(display_text("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(display_text("x\u{202E}y\nz"), "x\\u{202e}y\\u{a}z");
        assert_eq!(display_text("plain é"), "plain é");
    }

    #[test]
    fn bounded_output_keeps_the_flag_in_step() {
        let limits = Limits {
            max_output_bytes: 1024,
            ..Limits::default()
        };
        let value = serde_json::json!({"content": "x".repeat(5000), "truncated": false});
        let out = bounded_output(value, false, &limits).unwrap();
        assert!(out.truncated);
        assert_eq!(out.value["truncated"], true);
        let small = bounded_output(serde_json::json!({"a": 1}), false, &limits).unwrap();
        assert!(!small.truncated);
    }
}
