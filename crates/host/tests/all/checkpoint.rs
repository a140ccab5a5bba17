//! Checkpoints through the real file tools: a run's writes are kept before they happen and
//! undone to the exact bytes and modes, the files it created removed, nothing else touched; a
//! later change by someone else is found and refused; a damaged checkpoint or a link swapped in
//! cannot make an undo reach outside the workspace.
//!
//! Layout: `<tmp>/home` is `$BOSUN_HOME`, `<tmp>/ws` the workspace, `<tmp>/outside` a sibling an
//! undo must never reach.

use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_host::checkpoint::{CheckpointError, CheckpointStore, RunCheckpoint};
use bosun_host::{Session, ToolContext, Workspace, builtin};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    workspace: Workspace,
    store: CheckpointStore,
    session: Arc<Session>,
    ctx: ToolContext,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (home, root, outside) = (base.join("home"), base.join("ws"), base.join("outside"));
        for dir in [&home, &root, &outside] {
            fs::create_dir(dir).unwrap();
        }
        let session = Arc::new(Session::new("session-1"));
        let ctx = ToolContext {
            session: session.clone(),
            ..super::builtin_context(&root)
        };
        Fixture {
            workspace: Workspace::new(&root, &root).unwrap(),
            store: CheckpointStore::of_session(&home, "session-1"),
            _tmp: tmp,
            home,
            root,
            outside,
            session,
            ctx,
        }
    }

    fn write(&self, rel: &str, bytes: &[u8], mode: u32) {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Starts a run: its checkpoint is the session's until [`Fixture::end_run`].
    fn start_run(&self, run_id: &str, task: &str) -> Arc<RunCheckpoint> {
        let checkpoint = self.store.begin(run_id, task, 0);
        self.session.set_checkpoint(Some(checkpoint.clone()));
        checkpoint
    }

    fn end_run(&self, checkpoint: &RunCheckpoint) {
        self.session.set_checkpoint(None);
        checkpoint.seal(&self.workspace).unwrap();
    }

    async fn call(&self, name: &str, input: Value) {
        let tool = builtin::tools()
            .into_iter()
            .find(|t| t.spec().name.as_str() == name)
            .unwrap();
        if let Err(e) = tool.call(input.clone(), &self.ctx).await {
            panic!("{name} {input} failed: {e}");
        }
    }

    async fn patch(&self, path: &str, old: &str, new: &str) {
        self.call(
            "apply_patch",
            json!({"path": path, "edits": [{"oldText": old, "newText": new}]}),
        )
        .await;
    }

    async fn create(&self, path: &str, content: &str) {
        self.call("create_file", json!({"path": path, "content": content}))
            .await;
    }
}

/// Bytes, permission bits and modification time of a file.
fn state(path: &Path) -> (Vec<u8>, u32, i64, i64) {
    let meta = fs::metadata(path).unwrap();
    (
        fs::read(path).unwrap(),
        meta.permissions().mode() & 0o7777,
        meta.mtime(),
        meta.mtime_nsec(),
    )
}

#[tokio::test]
async fn undo_restores_exact_bytes_and_modes_and_removes_created_files_only() {
    let f = Fixture::new();
    // No final newline, CRLF, a tab: the bytes must come back as they were.
    let original = b"first line\r\nsecond\tline\r\nno newline at end";
    f.write("src/a.txt", original, 0o640);
    f.write("run.sh", b"#!/bin/sh\necho old\n", 0o755);
    f.write("untouched.txt", b"leave me\n", 0o600);
    let untouched = state(&f.root.join("untouched.txt"));

    let run = f.start_run("run-1", "change things");
    f.patch("src/a.txt", "second", "2nd").await;
    // A second write of the same file in the run keeps the first state, not this one.
    f.patch("src/a.txt", "first", "1st").await;
    f.patch("run.sh", "old", "new").await;
    f.create("new/deep/made.rs", "fn main() {}\n").await;
    f.end_run(&run);
    assert_eq!(run.files(), ["src/a.txt", "run.sh", "new/deep/made.rs"]);

    // Someone puts their own file in a directory the run created: it must survive the undo.
    fs::write(f.root.join("new/theirs.txt"), "mine").unwrap();

    let restored = f.store.undo_last(&f.workspace, false).unwrap();
    assert_eq!(restored.runs, ["run-1"]);
    assert_eq!(restored.restored, ["run.sh", "src/a.txt"]);
    assert_eq!(restored.removed, ["new/deep/made.rs"]);

    let (bytes, mode, ..) = state(&f.root.join("src/a.txt"));
    assert_eq!((bytes.as_slice(), mode), (&original[..], 0o640));
    let (bytes, mode, ..) = state(&f.root.join("run.sh"));
    assert_eq!(
        (bytes.as_slice(), mode),
        (&b"#!/bin/sh\necho old\n"[..], 0o755)
    );
    assert!(!f.root.join("new/deep/made.rs").exists());
    // The directory the run made and nobody else used is gone; the one holding a stranger's
    // file stays, with the file.
    assert!(!f.root.join("new/deep").exists());
    assert_eq!(
        fs::read_to_string(f.root.join("new/theirs.txt")).unwrap(),
        "mine"
    );
    // Not even the modification time of a file the run never wrote changed.
    assert_eq!(state(&f.root.join("untouched.txt")), untouched);
    // The undone run is forgotten, and so are its kept bytes.
    assert_eq!(f.store.points().unwrap(), []);
    assert!(
        fs::read_dir(f.store.dir().join("blobs"))
            .unwrap()
            .next()
            .is_none()
    );
    assert!(matches!(
        f.store.undo_last(&f.workspace, false),
        Err(CheckpointError::Nothing)
    ));
}

#[tokio::test]
async fn undo_refuses_a_file_changed_after_the_run_and_names_it() {
    let f = Fixture::new();
    f.write("a.txt", b"one\n", 0o644);
    f.write("b.txt", b"two\n", 0o644);
    let run = f.start_run("run-1", "edit");
    f.patch("a.txt", "one", "ONE").await;
    f.patch("b.txt", "two", "TWO").await;
    f.end_run(&run);
    // An editor changes b.txt afterwards; a chmod alone counts as a change too.
    fs::write(f.root.join("b.txt"), "TWO and my edit\n").unwrap();
    fs::set_permissions(f.root.join("a.txt"), fs::Permissions::from_mode(0o600)).unwrap();

    let error = f.store.undo_last(&f.workspace, false).unwrap_err();
    match &error {
        CheckpointError::Changed { files, runs } => {
            assert_eq!(
                (files.as_slice(), *runs),
                (&["a.txt".to_owned(), "b.txt".to_owned()][..], 1)
            );
        }
        other => panic!("expected Changed, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("`a.txt` and `b.txt` changed after the run"),
        "{error}"
    );
    // Nothing was restored: not even the file that had not changed since.
    assert_eq!(
        fs::read_to_string(f.root.join("b.txt")).unwrap(),
        "TWO and my edit\n"
    );
    assert_eq!(f.store.points().unwrap().len(), 1);

    // Forced, the kept state wins.
    f.store.undo_last(&f.workspace, true).unwrap();
    assert_eq!(fs::read_to_string(f.root.join("a.txt")).unwrap(), "one\n");
    assert_eq!(fs::read_to_string(f.root.join("b.txt")).unwrap(), "two\n");
    assert_eq!(state(&f.root.join("a.txt")).1, 0o644);
}

#[tokio::test]
async fn rewind_undoes_the_chosen_run_and_every_later_one() {
    let f = Fixture::new();
    f.write("a.txt", b"v0\n", 0o644);
    let first = f.start_run("run-1", "first task");
    f.patch("a.txt", "v0", "v1").await;
    f.end_run(&first);
    let second = f.start_run("run-2", "second task");
    f.patch("a.txt", "v1", "v2").await;
    f.create("later.txt", "x").await;
    f.end_run(&second);
    let points = f.store.points().unwrap();
    let tasks: Vec<&str> = points.iter().map(|p| p.task.as_str()).collect();
    assert_eq!(tasks, ["first task", "second task"]);

    let restored = f.store.rewind("run-1", &f.workspace, false).unwrap();
    assert_eq!(restored.runs, ["run-2", "run-1"]);
    assert_eq!(restored.earliest.unwrap().task, "first task");
    assert_eq!(fs::read_to_string(f.root.join("a.txt")).unwrap(), "v0\n");
    assert!(!f.root.join("later.txt").exists());
    assert_eq!(f.store.points().unwrap(), []);
}

#[tokio::test]
async fn a_run_that_only_reads_keeps_nothing() {
    let f = Fixture::new();
    f.write("a.txt", b"x\n", 0o644);
    let run = f.start_run("run-1", "look");
    f.call("read_file", json!({"path": "a.txt"})).await;
    f.end_run(&run);
    assert_eq!(f.store.points().unwrap(), []);
    assert!(!f.store.dir().exists());
}

#[tokio::test]
async fn checkpoint_kept_outside_the_workspace_readable_by_the_owner_only() {
    let f = Fixture::new();
    f.write("a.txt", b"private\n", 0o644);
    let run = f.start_run("run-1", "edit");
    f.patch("a.txt", "private", "public").await;
    f.end_run(&run);
    assert!(f.store.dir().starts_with(&f.home));
    let mode = fs::metadata(f.store.dir().join("blobs"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    for entry in fs::read_dir(f.store.dir().join("blobs")).unwrap() {
        let mode = entry.unwrap().metadata().unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test]
async fn a_write_whose_state_cannot_be_kept_is_not_made() {
    let f = Fixture::new();
    f.write("a.txt", b"keep\n", 0o644);
    // The session's checkpoint directory is taken by a file: nothing can be kept there.
    fs::create_dir_all(f.home.join("checkpoints")).unwrap();
    fs::write(f.store.dir(), "in the way").unwrap();
    let _run = f.start_run("run-1", "edit");
    let tool = builtin::tools()
        .into_iter()
        .find(|t| t.spec().name.as_str() == "apply_patch")
        .unwrap();
    let input = json!({"path": "a.txt", "edits": [{"oldText": "keep", "newText": "lost"}]});
    let error = tool.call(input, &f.ctx).await.unwrap_err();
    assert!(error.message.contains("was not changed"), "{error}");
    assert_eq!(fs::read_to_string(f.root.join("a.txt")).unwrap(), "keep\n");
    let input = json!({"path": "b.txt", "content": "new"});
    let create = builtin::tools()
        .into_iter()
        .find(|t| t.spec().name.as_str() == "create_file")
        .unwrap();
    assert!(create.call(input, &f.ctx).await.is_err());
    assert!(!f.root.join("b.txt").exists());
}

#[tokio::test]
async fn damaged_checkpoint_cannot_name_a_path_outside_the_workspace() {
    let f = Fixture::new();
    fs::write(f.outside.join("secret.txt"), "secret").unwrap();
    f.write("a.txt", b"x\n", 0o644);
    let run = f.start_run("run-1", "edit");
    f.patch("a.txt", "x", "y").await;
    f.end_run(&run);
    // Someone edits the manifest to point an undo at a file outside the workspace.
    let manifest = f.store.dir().join("runs/run-1.json");
    let text = fs::read_to_string(&manifest).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["files"][0]["path"] = json!("../outside/secret.txt");
    value["files"][0]["before"] = json!({"kind": "absent"});
    fs::write(&manifest, value.to_string()).unwrap();

    let error = f.store.undo_last(&f.workspace, true).unwrap_err();
    assert!(
        matches!(error, CheckpointError::Damaged { .. }),
        "{error:?}"
    );
    assert_eq!(
        fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
        "secret"
    );
}

#[tokio::test]
async fn undo_never_follows_a_link_swapped_in_out_of_the_workspace() {
    let f = Fixture::new();
    let run = f.start_run("run-1", "create");
    f.create("made/x.txt", "mine").await;
    f.end_run(&run);
    // The directory the run created is replaced by a link to the outside, which holds a file
    // of the same name.
    fs::remove_dir_all(f.root.join("made")).unwrap();
    fs::write(f.outside.join("x.txt"), "not yours").unwrap();
    symlink(&f.outside, f.root.join("made")).unwrap();

    let result = f.store.undo_last(&f.workspace, true);
    assert!(result.is_err(), "{result:?}");
    assert_eq!(
        fs::read_to_string(f.outside.join("x.txt")).unwrap(),
        "not yours"
    );
}
