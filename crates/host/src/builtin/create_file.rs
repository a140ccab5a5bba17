//! `create_file`: writes a new file in the workspace, never replacing one.
//!
//! The content goes to a temporary file in the target's directory, then is hard-linked to the
//! target name: `link(2)` fails if the name exists, so a file that appeared after the check is
//! never overwritten, and readers never see a half-written file. Missing parent directories are
//! created, inside the workspace only, and the parent is checked again once created.

use async_trait::async_trait;
use bosun_core::{
    Capability, CapabilityRequest, ErrorCode, Risk, SpecError, ToolError, ToolOutput, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    TempFile, bounded_output, check_cancel, display_text, fs_request, parse_input, spec, sync_dir,
    truncate_chars, write_error,
};
use crate::Workspace;
use crate::tool::{Tool, ToolContext};
use crate::workspace::io_error;

const NAME: &str = "create_file";
/// Longest content, in characters.
const MAX_CONTENT_CHARS: usize = 65_536;

/// Creates a new file.
#[derive(Debug)]
pub struct CreateFile {
    spec: ToolSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Input {
    path: String,
    content: String,
}

impl Input {
    fn parse(input: &Value) -> Result<Input, ToolError> {
        let input: Input = parse_input(NAME, input)?;
        let chars = input.content.chars().count();
        if chars > MAX_CONTENT_CHARS {
            return Err(super::invalid(format!(
                "content has {chars} characters: create_file takes at most {MAX_CONTENT_CHARS}; \
                 create a smaller file and extend it with apply_patch"
            )));
        }
        Ok(input)
    }
}

impl CreateFile {
    /// The tool with its checked spec.
    pub fn new() -> Result<CreateFile, SpecError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Path of the new file, relative to the workspace. Missing directories are created."
                },
                "content": {
                    "type": "string",
                    "maxLength": MAX_CONTENT_CHARS,
                    "description": "The whole content of the file."
                }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        });
        let description = "Create a new file in the workspace with the given content. Fails with \
            already_exists if the path exists: use apply_patch to change an existing file.";
        Ok(CreateFile {
            spec: spec(NAME, description, Risk::Write, Capability::FsWrite, schema)?,
        })
    }
}

/// Checks the target: inside the workspace, through no symbolic link, and not there yet.
fn target(workspace: &Workspace, input: &Input) -> Result<std::path::PathBuf, ToolError> {
    let target = workspace.resolve_new(&input.path)?;
    if target.symlink_metadata().is_ok() {
        return Err(write_error(
            &std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            &workspace.relative(&target),
        ));
    }
    Ok(target)
}

#[async_trait]
impl Tool for CreateFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        "builtin.tool.create_file"
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
        let bytes = input
            .get("content")
            .and_then(Value::as_str)
            .map_or(0, str::len);
        format!("create {} ({bytes} bytes)", display_text(path))
    }

    fn preview(&self, input: &Value) -> Option<String> {
        let content = input.get("content")?.as_str()?;
        Some(super::cap_preview(
            content.lines().map(|l| format!("+{l}")).collect(),
        ))
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input = Input::parse(&input)?;
        check_cancel(ctx)?;
        if let Some(files) = ctx.session.file_access() {
            return create_through(files.as_ref(), input, ctx).await;
        }
        let workspace = ctx.workspace.clone();
        let checkpoint = ctx.session.checkpoint();
        // Small, local file work: done in one blocking step so no await point splits it.
        let task = tokio::task::spawn_blocking(move || {
            let target = target(&workspace, &input)?;
            let Parent { dir, name, shown } =
                open_parent(&workspace, &target, checkpoint.as_deref())?;
            // Keep the temporary name within NAME_MAX whatever the target's length.
            let (stem, _) = truncate_chars(&name, 64);
            let mut temp = TempFile::create_in(&dir, stem).map_err(|err| io_error(&err, &shown))?;
            temp.write_all(input.content.as_bytes(), None)
                .map_err(|err| io_error(&err, &shown))?;
            temp.link_new(&name)
                .map_err(|err| write_error(&err, &shown))?;
            sync_dir(&dir);
            Ok::<_, ToolError>(json!({"path": shown, "bytes": input.content.len()}))
        });
        let value = task.await.map_err(|err| {
            ToolError::new(ErrorCode::IoError, format!("create_file failed: {err}"))
        })??;
        bounded_output(value, false, &ctx.limits)
    }
}

/// The new file's parent directory, opened beneath the root with every missing directory made,
/// its name and its path as shown.
struct Parent {
    dir: crate::beneath::Dir,
    name: String,
    shown: String,
}

/// Keeps the file's absence (and the directories about to be made) for undo, then makes each
/// missing directory relative to a handle of its parent beneath the root: a directory swapped for
/// a link meanwhile is refused. The same for a file written on disk and one written through a face.
fn open_parent(
    workspace: &Workspace,
    target: &std::path::Path,
    checkpoint: Option<&crate::checkpoint::RunCheckpoint>,
) -> Result<Parent, ToolError> {
    let shown = workspace.relative(target);
    let parent = target.parent().ok_or_else(|| {
        super::invalid(format!(
            "`{shown}` has no parent directory: give a file path"
        ))
    })?;
    crate::checkpoint::before_write(checkpoint, workspace, workspace.beneath(target)?)?;
    let dir = workspace
        .handle()
        .and_then(|root| root.create_dirs(workspace.beneath(parent).unwrap_or(parent)))
        .map_err(|err| io_error(&err, &shown))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Parent { dir, name, shown })
}

/// The file created empty beneath the root (so the path is confined and new, exactly as on
/// disk), then its text written through the face (an editor opens it as a buffer). A failed
/// write removes the empty file again.
async fn create_through(
    files: &dyn crate::file_access::FileAccess,
    input: Input,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let workspace = ctx.workspace.clone();
    let checkpoint = ctx.session.checkpoint();
    let path = input.path.clone();
    let target = tokio::task::spawn_blocking(move || {
        let target = target(
            &workspace,
            &Input {
                path,
                content: String::new(),
            },
        )?;
        let Parent { dir, name, shown } = open_parent(&workspace, &target, checkpoint.as_deref())?;
        let created = dir
            .create_new(&name)
            .map_err(|err| write_error(&err, &shown))?;
        // What the face may write: this new file, at this path, and nothing swapped in.
        let confined = crate::file_access::ConfinedPath::new(workspace.root(), &target, &created)
            .map_err(|err| io_error(&err, &shown))?;
        Ok::<_, ToolError>((confined, dir, name, shown))
    })
    .await
    .map_err(|err| ToolError::new(ErrorCode::IoError, format!("create_file failed: {err}")))??;
    let (confined, dir, name, shown) = target;
    if let Err(err) =
        crate::file_access::write_confined(files, &confined, &input.content, &shown).await
    {
        // The empty file goes again, through its directory's handle, never by a path that may
        // have been swapped.
        let _ = dir.remove(&name);
        return Err(err);
    }
    bounded_output(
        json!({"path": shown, "bytes": input.content.len()}),
        false,
        &ctx.limits,
    )
}
