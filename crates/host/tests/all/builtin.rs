//! The built-in tools called directly, as the chokepoint calls them, against real files and
//! real processes in a temporary directory. Each hostile test is named after what it stops.
//!
//! Layout of every fixture: `<tmp>/ws` is the workspace root and `<tmp>/outside` a sibling the
//! tools must never reach, holding `secret.txt`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bosun_core::{Capability, ErrorCode, Limits, Risk, ToolError, ToolOutput, ToolResult};
use bosun_host::builtin;
use bosun_host::{Tool, ToolContext, Workspace};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const SECRET: &str = "top secret outside the workspace\n";

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    ctx: ToolContext,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_limits(Limits::default())
    }

    fn with_limits(limits: Limits) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("ws");
        let outside = base.join("outside");
        fs::create_dir(&root).unwrap();
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("secret.txt"), SECRET).unwrap();
        let env = BTreeMap::from([
            ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ("BOSUN_VISIBLE".to_owned(), "shown".to_owned()),
        ]);
        let ctx = ToolContext {
            limits,
            env: Arc::new(env),
            ..super::builtin_context(&root)
        };
        Fixture {
            _tmp: tmp,
            root,
            outside,
            ctx,
        }
    }

    /// Writes a file under the workspace, creating its directories.
    fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        path
    }

    async fn call(&self, name: &str, input: Value) -> Result<ToolOutput, ToolError> {
        let tool = tool(name);
        let output = tool.call(input, &self.ctx).await;
        if let Ok(output) = &output {
            assert_within_bound(output, &self.ctx.limits);
        }
        output
    }

    async fn ok(&self, name: &str, input: Value) -> Value {
        match self.call(name, input.clone()).await {
            Ok(output) => output.value,
            Err(err) => panic!("{name} {input} failed: {err}"),
        }
    }

    async fn err(&self, name: &str, input: Value) -> ToolError {
        match self.call(name, input.clone()).await {
            Ok(output) => panic!("{name} {input} succeeded: {}", output.value),
            Err(err) => err,
        }
    }

    /// The paths `capability_requests` gives policy to judge.
    fn judged_at(&self, name: &str, input: Value) -> Vec<String> {
        match tool(name).capability_requests(&input, &self.ctx) {
            Ok(requests) => requests.into_iter().filter_map(|r| r.scope.path).collect(),
            Err(err) => panic!("{name} {input} was refused before policy: {err:?}"),
        }
    }

    /// The error `capability_requests` gives, which the chokepoint sees before policy runs.
    fn request_err(&self, name: &str, input: Value) -> ToolError {
        match tool(name).capability_requests(&input, &self.ctx) {
            Ok(requests) => panic!("{name} {input} was accepted: {requests:?}"),
            Err(err) => err,
        }
    }
}

fn tool(name: &str) -> Arc<dyn Tool> {
    builtin::tools()
        .into_iter()
        .find(|t| t.spec().name.as_str() == name)
        .unwrap_or_else(|| panic!("no built-in named {name}"))
}

/// The tool's own bound: the result the chokepoint serialises fits, and the output's
/// `truncated` field (when it has one) agrees with the flag.
fn assert_within_bound(output: &ToolOutput, limits: &Limits) {
    let result = ToolResult::ok(output.value.clone(), output.truncated);
    let len = serde_json::to_vec(&result).unwrap().len();
    assert!(
        len <= limits.max_output_bytes,
        "result is {len} bytes, over {}",
        limits.max_output_bytes
    );
    if let Some(flag) = output.value.get("truncated") {
        assert_eq!(flag, &Value::Bool(output.truncated));
    }
}

fn assert_code(err: &ToolError, code: ErrorCode) {
    assert_eq!(err.code, code, "unexpected error: {err}");
}

/// Processes whose command line holds `arg` exactly (zombies have an empty command line).
fn processes_with_arg(arg: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline
            .split(|b| *b == 0)
            .any(|part| part == arg.as_bytes())
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// Waits up to a few seconds for processes holding `arg` to disappear (a killed process may
/// take a moment to be reaped).
async fn assert_no_process_with(arg: &str) {
    for _ in 0..50 {
        if processes_with_arg(arg).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "processes with `{arg}` are still running: {:?}",
        processes_with_arg(arg)
    );
}

/// The process's peak resident memory (VmHWM), in bytes.
fn peak_memory_bytes() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

fn limits(max_output_bytes: usize) -> Limits {
    Limits {
        max_output_bytes,
        ..Limits::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Workspace

#[test]
fn workspace_discover_finds_the_git_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::create_dir_all(root.join("a/b")).unwrap();
    let ws = Workspace::discover(&root.join("a/b")).unwrap();
    assert_eq!(ws.root(), root);
    assert_eq!(ws.cwd(), root.join("a/b"));
    assert_eq!(ws.relative(&root.join("a/b/c.rs")), "a/b/c.rs");
    assert_eq!(ws.relative(&root), ".");
    // A `.git` file (worktrees, submodules) marks a root too.
    fs::write(root.join("a/.git"), "gitdir: ../.git/worktrees/a\n").unwrap();
    assert_eq!(
        Workspace::discover(&root.join("a/b")).unwrap().root(),
        root.join("a")
    );
}

#[test]
fn workspace_discover_without_git_uses_the_cwd() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap().join("plain");
    fs::create_dir(&dir).unwrap();
    let ws = Workspace::discover(&dir).unwrap();
    assert_eq!(ws.root(), dir);
    assert_eq!(ws.cwd(), dir);
}

#[test]
fn workspace_new_refuses_a_cwd_outside_the_root() {
    let f = Fixture::new();
    assert!(Workspace::new(&f.root, &f.outside).is_err());
}

#[test]
fn workspace_resolves_relative_to_the_cwd() {
    let f = Fixture::new();
    f.write("a.txt", "a");
    f.write("sub/b.txt", "b");
    let ws = Workspace::new(&f.root, f.root.join("sub")).unwrap();
    assert_eq!(ws.resolve("b.txt").unwrap(), f.root.join("sub/b.txt"));
    assert_eq!(ws.resolve("../a.txt").unwrap(), f.root.join("a.txt"));
    assert_eq!(ws.resolve("..").unwrap(), f.root);
    assert_code(
        &ws.resolve("../..").unwrap_err(),
        ErrorCode::OutsideWorkspace,
    );
    assert_eq!(
        ws.resolve_new("new/c.txt").unwrap(),
        f.root.join("sub/new/c.txt")
    );
}

#[test]
fn workspace_rejects_empty_and_nul_paths() {
    let f = Fixture::new();
    let ws = &f.ctx.workspace;
    assert_code(&ws.resolve("").unwrap_err(), ErrorCode::InvalidInput);
    assert_code(&ws.resolve("a\0b").unwrap_err(), ErrorCode::InvalidInput);
    assert_code(&ws.resolve_new("").unwrap_err(), ErrorCode::InvalidInput);
    assert_code(&ws.resolve_new("x\0").unwrap_err(), ErrorCode::InvalidInput);
}

#[test]
fn workspace_outside_error_names_the_root() {
    let f = Fixture::new();
    let err = f
        .ctx
        .workspace
        .resolve("../outside/secret.txt")
        .unwrap_err();
    assert_code(&err, ErrorCode::OutsideWorkspace);
    assert!(
        err.message
            .contains(&format!("must stay inside {}", f.root.display())),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Specs, capability requests and summaries

#[test]
fn builtin_specs_are_strict_and_forge_shaped() {
    let expected: [(&str, Risk, Capability, &[&str]); 6] = [
        (
            "list_files",
            Risk::Read,
            Capability::FsRead,
            &["depth", "path"],
        ),
        (
            "read_file",
            Risk::Read,
            Capability::FsRead,
            &["limit", "offset", "path"],
        ),
        (
            "search",
            Risk::Read,
            Capability::FsRead,
            &["maxMatches", "path", "query", "regex"],
        ),
        (
            "create_file",
            Risk::Write,
            Capability::FsWrite,
            &["content", "path"],
        ),
        (
            "apply_patch",
            Risk::Write,
            Capability::FsWrite,
            &["edits", "path"],
        ),
        (
            "run_command",
            Risk::Process,
            Capability::ProcessSpawn,
            &["args", "cwd", "network", "program", "timeoutMs"],
        ),
    ];
    for (name, risk, capability, properties) in expected {
        let tool = tool(name);
        let spec = tool.spec();
        assert_eq!(spec.name.as_str(), name);
        assert_eq!(tool.action(), format!("builtin.tool.{name}"));
        assert_eq!(spec.risk, risk, "{name}");
        assert_eq!(spec.capabilities, vec![capability], "{name}");
        let schema = &spec.input_schema;
        assert_eq!(schema["additionalProperties"], false, "{name}");
        let names: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, properties, "{name}");
    }
    let patch = tool("apply_patch");
    assert_eq!(
        patch.spec().input_schema["properties"]["edits"]["items"]["additionalProperties"],
        false
    );
}

#[test]
fn schemas_accept_forge_inputs_and_refuse_unknown_fields() {
    let cases = [
        ("list_files", json!({}), true),
        ("list_files", json!({"path": "src", "depth": 8}), true),
        ("list_files", json!({"depth": 9}), false),
        ("read_file", json!({"path": "a"}), true),
        (
            "read_file",
            json!({"path": "a", "offset": 3, "limit": 20}),
            true,
        ),
        ("read_file", json!({"path": "a", "offset": 0}), false),
        ("read_file", json!({"path": "a", "line": 3}), false),
        (
            "search",
            json!({"query": "fn", "maxMatches": 500, "regex": true}),
            true,
        ),
        ("search", json!({"query": ""}), false),
        ("search", json!({"query": "x", "max_matches": 3}), false),
        ("create_file", json!({"path": "a", "content": ""}), true),
        ("create_file", json!({"path": "a"}), false),
        (
            "apply_patch",
            json!({"path": "a", "edits": [{"oldText": "x", "newText": ""}]}),
            true,
        ),
        ("apply_patch", json!({"path": "a", "edits": []}), false),
        (
            "apply_patch",
            json!({"path": "a", "edits": [{"oldText": "x", "newText": "", "n": 1}]}),
            false,
        ),
        (
            "run_command",
            json!({"program": "cargo", "args": ["test"], "cwd": "src", "timeoutMs": 1000}),
            true,
        ),
        ("run_command", json!({"program": "ls;id"}), false),
        (
            "run_command",
            json!({"program": "ls", "shell": true}),
            false,
        ),
        (
            "run_command",
            json!({"program": "ls", "timeoutMs": 0}),
            false,
        ),
    ];
    for (name, input, valid) in cases {
        let validator = jsonschema::validator_for(&tool(name).spec().input_schema).unwrap();
        assert_eq!(validator.is_valid(&input), valid, "{name} {input}");
    }
}

#[test]
fn capability_requests_carry_the_concrete_scope() {
    let f = Fixture::new();
    f.write("src/lib.rs", "");
    let scope = |name: &str, input: Value| {
        let requests = tool(name).capability_requests(&input, &f.ctx).unwrap();
        assert_eq!(requests.len(), 1);
        requests[0].to_string()
    };
    assert_eq!(scope("list_files", json!({})), "fs.read:.");
    assert_eq!(
        scope("read_file", json!({"path": "src/../src/lib.rs"})),
        "fs.read:src/lib.rs"
    );
    assert_eq!(
        scope("read_file", json!({"path": f.root.join("src/lib.rs")})),
        "fs.read:src/lib.rs"
    );
    assert_eq!(
        scope("search", json!({"query": "x", "path": "src"})),
        "fs.read:src"
    );
    assert_eq!(
        scope("create_file", json!({"path": "new/x.rs", "content": ""})),
        "fs.write:new/x.rs"
    );
    assert_eq!(
        scope(
            "apply_patch",
            json!({"path": "./src/lib.rs", "edits": [{"oldText": "a", "newText": "b"}]})
        ),
        "fs.write:src/lib.rs"
    );
    assert_eq!(
        scope("run_command", json!({"program": "cargo", "args": ["test"]})),
        "process.spawn:cargo"
    );
}

#[test]
fn capability_requests_refuse_paths_outside_before_policy() {
    let f = Fixture::new();
    let outside = f.outside.join("secret.txt");
    let cases = [
        ("list_files", json!({"path": ".."})),
        ("read_file", json!({"path": "../outside/secret.txt"})),
        ("read_file", json!({"path": outside})),
        ("search", json!({"query": "x", "path": "../outside"})),
        (
            "create_file",
            json!({"path": "../outside/new.txt", "content": "x"}),
        ),
        (
            "apply_patch",
            json!({"path": outside, "edits": [{"oldText": "top", "newText": "x"}]}),
        ),
        ("run_command", json!({"program": "ls", "cwd": "../outside"})),
    ];
    for (name, input) in cases {
        assert_code(&f.request_err(name, input), ErrorCode::OutsideWorkspace);
    }
}

#[test]
fn summaries_are_readable_and_cannot_hide_text() {
    let run = tool("run_command");
    assert_eq!(
        run.summarize(&json!({"program": "cargo", "args": ["test", "--all"], "cwd": "src"})),
        "$ cargo 'test' '--all' in src/"
    );
    assert_eq!(
        run.summarize(&json!({"program": "echo", "args": ["it's"]})),
        r"$ echo 'it'\''s'"
    );
    let create = tool("create_file");
    assert_eq!(
        create.summarize(&json!({"path": "src/x.rs", "content": "x".repeat(120)})),
        "create src/x.rs (120 bytes)"
    );
    // A terminal escape or a bidi override in a path is shown, not obeyed.
    let sneaky = create.summarize(&json!({"path": "a\u{1b}[2K\u{202E}b", "content": ""}));
    assert!(
        !sneaky.contains('\u{1b}') && !sneaky.contains('\u{202E}'),
        "{sneaky}"
    );
    assert_eq!(
        tool("read_file").summarize(&json!({"path": "src/lib.rs"})),
        "read src/lib.rs"
    );
    assert_eq!(
        tool("apply_patch")
            .summarize(&json!({"path": "a.rs", "edits": [{"oldText": "a", "newText": "b"}]})),
        "patch a.rs (1 edit)"
    );
}

// ---------------------------------------------------------------------------------------------
// list_files

#[tokio::test]
async fn list_files_lists_sorted_with_types_and_sizes() {
    let f = Fixture::new();
    f.write("b.txt", "bb");
    f.write("a/z.rs", "zzz");
    f.write("a/deep/er/x", "");
    symlink("b.txt", f.root.join("link")).unwrap();
    let out = f.ok("list_files", json!({})).await;
    assert_eq!(
        out,
        json!({
            "path": ".",
            "entries": [
                {"path": "a", "type": "directory"},
                {"path": "a/deep", "type": "directory"},
                {"path": "a/deep/er", "type": "directory"},
                {"path": "a/z.rs", "type": "file", "size": 3},
                {"path": "b.txt", "type": "file", "size": 2},
                {"path": "link", "type": "symlink"},
            ],
            "truncated": false,
        })
    );
    let top = f.ok("list_files", json!({"depth": 0})).await;
    let paths: Vec<&str> = top["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a", "b.txt", "link"]);
    let sub = f.ok("list_files", json!({"path": "a", "depth": 8})).await;
    assert_eq!(sub["path"], "a");
    assert_eq!(sub["entries"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn list_files_respects_gitignore_shows_hidden_and_skips_dot_git() {
    let f = Fixture::new();
    fs::create_dir_all(f.root.join(".git/objects")).unwrap();
    f.write(".git/config", "");
    f.write(".gitignore", "target/\n*.log\n/src/generated\n");
    f.write(".hidden", "");
    f.write("a.log", "");
    f.write("target/debug/app", "");
    f.write("src/main.rs", "");
    f.write("src/generated/out.rs", "");
    f.write("src/debug.log", "");
    let out = f.ok("list_files", json!({"depth": 8})).await;
    let paths: Vec<&str> = out["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [".gitignore", ".hidden", "src", "src/main.rs"]);
    // Listing a subdirectory still applies the root's rules, anchored ones included.
    let sub = f.ok("list_files", json!({"path": "src"})).await;
    let paths: Vec<&str> = sub["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src/main.rs"]);
}

#[tokio::test]
async fn list_files_caps_entries_at_max_entries() {
    let f = Fixture::with_limits(Limits {
        max_entries: 3,
        ..Limits::default()
    });
    for name in ["a", "b", "c", "d", "e"] {
        f.write(name, "");
    }
    let out = f.ok("list_files", json!({})).await;
    assert_eq!(out["entries"].as_array().unwrap().len(), 3);
    assert_eq!(out["truncated"], true);
    let f = Fixture::with_limits(Limits {
        max_entries: 5,
        ..Limits::default()
    });
    for name in ["a", "b", "c", "d", "e"] {
        f.write(name, "");
    }
    let out = f.ok("list_files", json!({})).await;
    assert_eq!(out["entries"].as_array().unwrap().len(), 5);
    assert_eq!(out["truncated"], false);
}

#[tokio::test]
async fn list_files_does_not_follow_symlinks_out() {
    let f = Fixture::new();
    symlink(&f.outside, f.root.join("out")).unwrap();
    let out = f.ok("list_files", json!({"depth": 8})).await;
    assert_eq!(out["entries"], json!([{"path": "out", "type": "symlink"}]));
    assert!(!out.to_string().contains("secret"));
    let err = f.err("list_files", json!({"path": "out"})).await;
    assert_code(&err, ErrorCode::OutsideWorkspace);
}

#[tokio::test]
async fn list_files_refuses_bad_input() {
    let f = Fixture::new();
    f.write("file.txt", "");
    assert_code(
        &f.err("list_files", json!({"path": "file.txt"})).await,
        ErrorCode::NotDirectory,
    );
    assert_code(
        &f.err("list_files", json!({"path": "missing"})).await,
        ErrorCode::NotFound,
    );
    assert_code(
        &f.err("list_files", json!({"depth": 9})).await,
        ErrorCode::InvalidInput,
    );
    assert_code(
        &f.err("list_files", json!({"path": ".."})).await,
        ErrorCode::OutsideWorkspace,
    );
}

// ---------------------------------------------------------------------------------------------
// read_file

#[tokio::test]
async fn read_file_reads_text() {
    let f = Fixture::new();
    f.write("src/lib.rs", "fn main() {}\n");
    let out = f.ok("read_file", json!({"path": "src/lib.rs"})).await;
    assert_eq!(
        out,
        json!({"path": "src/lib.rs", "content": "fn main() {}\n", "bytes": 13, "truncated": false})
    );
    // An absolute path inside the workspace is fine.
    let out = f
        .ok("read_file", json!({"path": f.root.join("src/lib.rs")}))
        .await;
    assert_eq!(out["path"], "src/lib.rs");
}

#[tokio::test]
async fn read_file_refuses_dotdot_escape() {
    let f = Fixture::new();
    f.write("src/lib.rs", "");
    for path in [
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        "./src/../../outside/secret.txt",
    ] {
        let err = f.err("read_file", json!({"path": path})).await;
        assert_code(&err, ErrorCode::OutsideWorkspace);
        assert!(!err.message.contains("top secret"));
    }
}

#[tokio::test]
async fn read_file_refuses_absolute_path_outside() {
    let f = Fixture::new();
    let err = f
        .err("read_file", json!({"path": f.outside.join("secret.txt")}))
        .await;
    assert_code(&err, ErrorCode::OutsideWorkspace);
    assert_code(
        &f.err("read_file", json!({"path": "/etc/passwd"})).await,
        ErrorCode::OutsideWorkspace,
    );
    // A path that leaves lexically is refused before it is looked up, so whether it exists
    // outside is not revealed.
    assert_code(
        &f.err("read_file", json!({"path": "/no/such/file"})).await,
        ErrorCode::OutsideWorkspace,
    );
}

#[tokio::test]
async fn read_file_refuses_symlink_leaving_workspace() {
    let f = Fixture::new();
    symlink(f.outside.join("secret.txt"), f.root.join("link.txt")).unwrap();
    symlink(&f.outside, f.root.join("out")).unwrap();
    symlink("../outside/secret.txt", f.root.join("relative-link")).unwrap();
    for path in ["link.txt", "out/secret.txt", "relative-link"] {
        let err = f.err("read_file", json!({"path": path})).await;
        assert_code(&err, ErrorCode::OutsideWorkspace);
        // Policy judges the link where it lies (a denied one then says nothing more); the
        // tool refuses it by its text once allowed.
        assert_eq!(f.judged_at("read_file", json!({"path": path})), [path]);
    }
}

#[tokio::test]
async fn read_file_follows_symlinks_that_stay_inside() {
    let f = Fixture::new();
    f.write("real.txt", "real");
    symlink("real.txt", f.root.join("alias.txt")).unwrap();
    let out = f.ok("read_file", json!({"path": "alias.txt"})).await;
    assert_eq!(out["content"], "real");
    assert_eq!(out["path"], "real.txt");
}

#[tokio::test]
async fn read_file_bounds_100mb_file() {
    let f = Fixture::new();
    let path = f.root.join("big.txt");
    // A text prefix, then a sparse 100 MB tail: costs no disk, reads as zeros past the prefix.
    let line = "the quick brown fox jumps over the lazy dog\n";
    fs::write(&path, line.repeat(1024 * 1024 / line.len())).unwrap();
    let size = 100 * 1024 * 1024;
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(size)
        .unwrap();
    let peak_before = peak_memory_bytes();
    let output = f
        .call("read_file", json!({"path": "big.txt"}))
        .await
        .unwrap();
    // Reading the whole file would raise the process's peak by 100 MB at least; other tests
    // running meanwhile use a few MB.
    let growth = peak_memory_bytes().saturating_sub(peak_before);
    assert!(
        growth < 48 * 1024 * 1024,
        "peak memory grew by {growth} bytes"
    );
    assert!(output.truncated);
    assert_eq!(output.value["truncated"], true);
    assert_eq!(output.value["bytes"], size);
    let content = output.value["content"].as_str().unwrap();
    assert!(content.len() <= f.ctx.limits.max_output_bytes);
    assert!(
        content.len() > f.ctx.limits.max_output_bytes / 2,
        "cut far more than needed: {}",
        content.len()
    );
    assert!(content.starts_with(line));
}

#[tokio::test]
async fn read_file_pages_by_lines_and_says_where_to_go_on() {
    let f = Fixture::with_limits(Limits {
        max_output_bytes: 4096,
        ..Limits::default()
    });
    let text: String = (1..=1000).map(|n| format!("line {n}\n")).collect();
    f.write("long.txt", &text);
    // Unpaged: cut to the bound, and told where the next page starts.
    let whole = f.ok("read_file", json!({"path": "long.txt"})).await;
    assert_eq!(whole["truncated"], true);
    let next = whole["nextOffset"].as_u64().unwrap();
    let content = whole["content"].as_str().unwrap();
    assert!(content.starts_with("line 1\n"));
    assert_eq!(content.matches('\n').count() as u64 + 1, next);
    // A page.
    let page = f
        .ok(
            "read_file",
            json!({"path": "long.txt", "offset": 10, "limit": 3}),
        )
        .await;
    assert_eq!(page["content"], "line 10\nline 11\nline 12\n");
    assert_eq!(
        (page["startLine"].as_u64(), page["lines"].as_u64()),
        (Some(10), Some(3))
    );
    assert_eq!(page["nextOffset"], 13);
    assert_eq!(page["truncated"], false);
    // Following nextOffset from the unpaged read continues exactly where it stopped.
    let on = f
        .ok(
            "read_file",
            json!({"path": "long.txt", "offset": next, "limit": 1}),
        )
        .await;
    assert_eq!(on["content"], format!("line {next}\n"));
    // The last page has no nextOffset; past the end says so.
    let last = f
        .ok("read_file", json!({"path": "long.txt", "offset": 999}))
        .await;
    assert_eq!(last["content"], "line 999\nline 1000\n");
    assert!(last.get("nextOffset").is_none(), "{last}");
    let past = f
        .ok("read_file", json!({"path": "long.txt", "offset": 5000}))
        .await;
    assert_eq!(past["lines"], 0);
    assert!(
        past["note"]
            .as_str()
            .unwrap()
            .contains("ends before line 5000")
    );
    // A page larger than the bound stops at whole lines.
    let big = f
        .ok(
            "read_file",
            json!({"path": "long.txt", "offset": 1, "limit": 1000}),
        )
        .await;
    assert_eq!(big["truncated"], true);
    let returned = big["lines"].as_u64().unwrap();
    assert!(big["content"].as_str().unwrap().ends_with('\n'));
    assert_eq!(big["nextOffset"], returned + 1);
    // One line longer than the bound is cut, and the next page is the line after it.
    f.write("wide.txt", format!("{}\nafter\n", "x".repeat(10_000)));
    let wide = f
        .ok(
            "read_file",
            json!({"path": "wide.txt", "offset": 1, "limit": 1}),
        )
        .await;
    assert_eq!(wide["truncated"], true);
    assert_eq!(wide["nextOffset"], 2);
    assert!(wide["content"].as_str().unwrap().len() < 4096);
    // Zero and negative offsets are refused by the schema.
    let err = f
        .err("read_file", json!({"path": "long.txt", "offset": 0}))
        .await;
    assert_eq!(err.code, ErrorCode::InvalidInput, "{err}");
}

#[tokio::test]
async fn read_file_cuts_on_a_utf8_boundary() {
    let f = Fixture::with_limits(limits(1024));
    f.write("accents.txt", "é".repeat(4000));
    let out = f.ok("read_file", json!({"path": "accents.txt"})).await;
    let content = out["content"].as_str().unwrap();
    assert_eq!(out["truncated"], true);
    assert!(!content.is_empty());
    assert!(
        content.chars().all(|c| c == 'é'),
        "a cut character was shown: {content:?}"
    );
}

#[tokio::test]
async fn read_file_escaped_content_still_fits_the_bound() {
    // Quotes and control characters grow when serialised; the bound is on the result.
    let f = Fixture::with_limits(limits(2048));
    f.write("quotes.txt", "\"\u{1}\\".repeat(3000));
    let out = f.ok("read_file", json!({"path": "quotes.txt"})).await;
    assert_eq!(out["truncated"], true);
}

#[tokio::test]
async fn read_file_refuses_binary_directory_and_missing() {
    let f = Fixture::new();
    f.write("image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    f.write("dir/x", "");
    let err = f.err("read_file", json!({"path": "image.png"})).await;
    assert_code(&err, ErrorCode::InvalidInput);
    assert!(err.message.contains("binary file"), "{err}");
    assert_code(
        &f.err("read_file", json!({"path": "dir"})).await,
        ErrorCode::NotFile,
    );
    assert_code(
        &f.err("read_file", json!({"path": "nope.txt"})).await,
        ErrorCode::NotFound,
    );
    assert_code(
        &f.err("read_file", json!({"path": ""})).await,
        ErrorCode::InvalidInput,
    );
}

#[tokio::test]
async fn read_file_decodes_latin1_lossily() {
    let f = Fixture::new();
    f.write("latin1.txt", b"caf\xe9\n");
    let out = f.ok("read_file", json!({"path": "latin1.txt"})).await;
    assert_eq!(out["content"], "caf\u{FFFD}\n");
}

#[tokio::test]
async fn read_file_refuses_fifo_instead_of_blocking() {
    let f = Fixture::new();
    let status = std::process::Command::new("mkfifo")
        .arg(f.root.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let call = f.call("read_file", json!({"path": "pipe"}));
    let Ok(result) = tokio::time::timeout(Duration::from_secs(10), call).await else {
        // Release the blocked reader so the test fails instead of hanging at runtime shutdown.
        let _writer = fs::OpenOptions::new().write(true).open(f.root.join("pipe"));
        panic!("read_file blocked on a FIFO");
    };
    assert_code(&result.unwrap_err(), ErrorCode::NotFile);
}

// ---------------------------------------------------------------------------------------------
// search

#[tokio::test]
async fn search_finds_literal_matches_with_line_numbers() {
    let f = Fixture::new();
    f.write("src/a.rs", "fn alpha() {}\nlet x = 1;\nfn beta() {}\n");
    f.write("src/b.rs", "// no functions\n");
    f.write("README", "fn in readme\n");
    let out = f.ok("search", json!({"query": "fn "})).await;
    assert_eq!(
        out,
        json!({
            "matches": [
                {"path": "README", "line": 1, "text": "fn in readme"},
                {"path": "src/a.rs", "line": 1, "text": "fn alpha() {}"},
                {"path": "src/a.rs", "line": 3, "text": "fn beta() {}"},
            ],
            "truncated": false,
        })
    );
    let scoped = f
        .ok("search", json!({"query": "fn ", "path": "src/a.rs"}))
        .await;
    assert_eq!(scoped["matches"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn search_literal_does_not_interpret_regex() {
    let f = Fixture::new();
    f.write("t.txt", "abc\na.c\n(x)\n");
    let literal = f.ok("search", json!({"query": "a.c"})).await;
    assert_eq!(
        literal["matches"],
        json!([{"path": "t.txt", "line": 2, "text": "a.c"}])
    );
    let parens = f.ok("search", json!({"query": "(x)"})).await;
    assert_eq!(parens["matches"].as_array().unwrap().len(), 1);
    let regex = f.ok("search", json!({"query": "a.c", "regex": true})).await;
    assert_eq!(regex["matches"].as_array().unwrap().len(), 2);
    let err = f
        .err("search", json!({"query": "(unclosed", "regex": true}))
        .await;
    assert_code(&err, ErrorCode::InvalidInput);
}

#[tokio::test]
async fn search_respects_gitignore() {
    let f = Fixture::new();
    f.write(".gitignore", "target/\n*.log\n");
    f.write("src/lib.rs", "needle\n");
    f.write("target/out.rs", "needle\n");
    f.write("build.log", "needle\n");
    f.write(".hidden.rs", "needle\n");
    let out = f.ok("search", json!({"query": "needle"})).await;
    let paths: Vec<&str> = out["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [".hidden.rs", "src/lib.rs"]);
}

#[tokio::test]
async fn search_skips_large_and_binary_files() {
    let f = Fixture::new();
    f.write("small.txt", "needle\n");
    let mut big = "filler line\n".repeat(100_000);
    big.push_str("needle\n");
    assert!(big.len() > 1024 * 1024);
    f.write("big.txt", big);
    f.write("blob.bin", b"needle\n\0\x01\x02needle\n");
    let out = f.ok("search", json!({"query": "needle"})).await;
    assert_eq!(
        out["matches"],
        json!([{"path": "small.txt", "line": 1, "text": "needle"}])
    );
}

#[tokio::test]
async fn search_caps_matches_and_line_text() {
    let f = Fixture::new();
    f.write("many.txt", "hit\n".repeat(10));
    let out = f
        .ok("search", json!({"query": "hit", "maxMatches": 3}))
        .await;
    assert_eq!(out["matches"].as_array().unwrap().len(), 3);
    assert_eq!(out["truncated"], true);
    let exact = f
        .ok("search", json!({"query": "hit", "maxMatches": 10}))
        .await;
    assert_eq!(exact["matches"].as_array().unwrap().len(), 10);
    assert_eq!(exact["truncated"], false);

    let f = Fixture::new();
    f.write("long.txt", format!("{}needle\n", "é".repeat(2000)));
    let out = f.ok("search", json!({"query": "needle"})).await;
    let text = out["matches"][0]["text"].as_str().unwrap();
    assert_eq!(text.chars().count(), 500);
    assert!(text.chars().all(|c| c == 'é'));
    assert_eq!(out["truncated"], true);
}

#[tokio::test]
async fn search_does_not_follow_symlinks_out() {
    let f = Fixture::new();
    symlink(&f.outside, f.root.join("out")).unwrap();
    symlink(f.outside.join("secret.txt"), f.root.join("secret-link.txt")).unwrap();
    f.write("inside.txt", "not that secret\n");
    let out = f.ok("search", json!({"query": "secret"})).await;
    assert_eq!(
        out["matches"],
        json!([{"path": "inside.txt", "line": 1, "text": "not that secret"}])
    );
    assert_code(
        &f.err("search", json!({"query": "secret", "path": "out"}))
            .await,
        ErrorCode::OutsideWorkspace,
    );
    assert_code(
        &f.err("search", json!({"query": "secret", "path": "../outside"}))
            .await,
        ErrorCode::OutsideWorkspace,
    );
}

#[tokio::test]
async fn search_refuses_bad_input_and_honours_cancel() {
    let f = Fixture::new();
    f.write("a.txt", "x\n");
    assert_code(
        &f.err("search", json!({"query": ""})).await,
        ErrorCode::InvalidInput,
    );
    assert_code(
        &f.err("search", json!({"query": "x".repeat(1025)})).await,
        ErrorCode::InvalidInput,
    );
    assert_code(
        &f.err("search", json!({"query": "x", "maxMatches": 0}))
            .await,
        ErrorCode::InvalidInput,
    );
    assert_code(
        &f.err("search", json!({"query": "x", "maxMatches": 501}))
            .await,
        ErrorCode::InvalidInput,
    );
    f.ctx.cancel.cancel();
    assert_code(
        &f.err("search", json!({"query": "x"})).await,
        ErrorCode::Cancelled,
    );
}

// ---------------------------------------------------------------------------------------------
// create_file

#[tokio::test]
async fn create_file_creates_with_parents() {
    let f = Fixture::new();
    let out = f
        .ok(
            "create_file",
            json!({"path": "src/new/mod.rs", "content": "pub fn x() {}\n"}),
        )
        .await;
    assert_eq!(out, json!({"path": "src/new/mod.rs", "bytes": 14}));
    assert_eq!(
        fs::read_to_string(f.root.join("src/new/mod.rs")).unwrap(),
        "pub fn x() {}\n"
    );
    // Nothing but the file is left behind: no temporary file.
    let names: Vec<_> = fs::read_dir(f.root.join("src/new"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["mod.rs"]);
}

#[tokio::test]
async fn create_file_refuses_existing() {
    let f = Fixture::new();
    f.write("keep.txt", "original");
    let err = f
        .err(
            "create_file",
            json!({"path": "keep.txt", "content": "replaced"}),
        )
        .await;
    assert_code(&err, ErrorCode::AlreadyExists);
    assert_eq!(
        fs::read_to_string(f.root.join("keep.txt")).unwrap(),
        "original"
    );
    assert_code(
        &f.err("create_file", json!({"path": ".", "content": ""}))
            .await,
        ErrorCode::AlreadyExists,
    );
    f.write("dir/x", "");
    assert_code(
        &f.err("create_file", json!({"path": "dir", "content": ""}))
            .await,
        ErrorCode::AlreadyExists,
    );
    assert_eq!(
        fs::read_dir(&f.root).unwrap().count(),
        2,
        "a temporary file was left behind"
    );
}

#[tokio::test]
async fn create_file_refuses_symlinked_parent_outside() {
    let f = Fixture::new();
    symlink(&f.outside, f.root.join("out")).unwrap();
    for path in ["out/evil.txt", "out/sub/evil.txt"] {
        let err = f
            .err("create_file", json!({"path": path, "content": "x"}))
            .await;
        assert_code(&err, ErrorCode::OutsideWorkspace);
        assert_eq!(
            f.judged_at("create_file", json!({"path": path, "content": "x"})),
            [path]
        );
    }
    assert!(!f.outside.join("evil.txt").exists());
    assert!(!f.outside.join("sub").exists());
}

#[tokio::test]
async fn create_file_refuses_dangling_symlink_pointing_outside() {
    let f = Fixture::new();
    symlink(f.outside.join("planted.txt"), f.root.join("innocent.txt")).unwrap();
    let err = f
        .err(
            "create_file",
            json!({"path": "innocent.txt", "content": "x"}),
        )
        .await;
    assert_code(&err, ErrorCode::OutsideWorkspace);
    assert!(!f.outside.join("planted.txt").exists());
}

#[tokio::test]
async fn create_file_refuses_symlinks_inside_too() {
    // Writing through a link inside the workspace is refused with what to do instead.
    let f = Fixture::new();
    fs::create_dir(f.root.join("real")).unwrap();
    symlink("real", f.root.join("alias")).unwrap();
    let err = f
        .err(
            "create_file",
            json!({"path": "alias/x.txt", "content": "x"}),
        )
        .await;
    assert_code(&err, ErrorCode::InvalidInput);
    assert!(err.message.contains("real path"), "{err}");
}

#[tokio::test]
async fn create_file_refuses_dotdot_escape() {
    let f = Fixture::new();
    let err = f
        .err(
            "create_file",
            json!({"path": "a/../../outside/new.txt", "content": "x"}),
        )
        .await;
    assert_code(&err, ErrorCode::OutsideWorkspace);
    assert!(!f.outside.join("new.txt").exists());
    assert!(!f.root.join("a").exists());
    let err = f
        .err(
            "create_file",
            json!({"path": f.outside.join("new.txt"), "content": "x"}),
        )
        .await;
    assert_code(&err, ErrorCode::OutsideWorkspace);
}

#[tokio::test]
async fn create_file_bounds_content_in_characters() {
    let f = Fixture::new();
    let err = f
        .err(
            "create_file",
            json!({"path": "big.txt", "content": "x".repeat(65_537)}),
        )
        .await;
    assert_code(&err, ErrorCode::InvalidInput);
    assert!(!f.root.join("big.txt").exists());
    // 65,536 two-byte characters are within the bound.
    let out = f
        .ok(
            "create_file",
            json!({"path": "wide.txt", "content": "é".repeat(65_536)}),
        )
        .await;
    assert_eq!(out["bytes"], 131_072);
}

#[tokio::test]
async fn create_file_under_a_file_is_not_directory() {
    let f = Fixture::new();
    f.write("file.txt", "");
    let err = f
        .err("create_file", json!({"path": "file.txt/x", "content": ""}))
        .await;
    assert_code(&err, ErrorCode::NotDirectory);
}

// ---------------------------------------------------------------------------------------------
// apply_patch

fn patch(path: &str, edits: &[(&str, &str)]) -> Value {
    let edits: Vec<Value> = edits
        .iter()
        .map(|(old, new)| json!({"oldText": old, "newText": new}))
        .collect();
    json!({"path": path, "edits": edits})
}

#[tokio::test]
async fn apply_patch_applies_edits_in_order_and_returns_a_diff() {
    let f = Fixture::new();
    f.write("src/lib.rs", "fn a() {}\nfn b() {}\n");
    // The second edit matches text the first one wrote.
    let out = f
        .ok(
            "apply_patch",
            patch(
                "src/lib.rs",
                &[("fn a() {}", "fn c() {}"), ("fn c", "fn d")],
            ),
        )
        .await;
    assert_eq!(
        fs::read_to_string(f.root.join("src/lib.rs")).unwrap(),
        "fn d() {}\nfn b() {}\n"
    );
    assert_eq!(
        out,
        json!({
            "path": "src/lib.rs",
            "edits": 2,
            "diff": "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,2 @@\n-fn a() {}\n+fn d() {}\n fn b() {}\n",
        })
    );
}

#[tokio::test]
async fn apply_patch_stale_when_ambiguous() {
    let f = Fixture::new();
    f.write("a.txt", "x = 1\nx = 1\nx = 1\n");
    let err = f
        .err("apply_patch", patch("a.txt", &[("x = 1", "x = 2")]))
        .await;
    assert_code(&err, ErrorCode::StalePatch);
    assert!(
        err.message.contains("edit 1 of 1") && err.message.contains("found 3 times"),
        "{err}"
    );
    // Overlapping occurrences are ambiguous too.
    f.write("b.txt", "aaa");
    let err = f.err("apply_patch", patch("b.txt", &[("aa", "b")])).await;
    assert_code(&err, ErrorCode::StalePatch);
    assert_eq!(
        fs::read_to_string(f.root.join("a.txt")).unwrap(),
        "x = 1\nx = 1\nx = 1\n"
    );
    assert_eq!(fs::read_to_string(f.root.join("b.txt")).unwrap(), "aaa");
}

#[tokio::test]
async fn apply_patch_stale_when_missing() {
    let f = Fixture::new();
    f.write("a.txt", "hello\n");
    let err = f
        .err("apply_patch", patch("a.txt", &[("goodbye", "x")]))
        .await;
    assert_code(&err, ErrorCode::StalePatch);
    assert!(err.message.contains("found 0 times"), "{err}");
}

#[tokio::test]
async fn apply_patch_is_all_or_nothing() {
    let f = Fixture::new();
    f.write("a.txt", "one\ntwo\nthree\n");
    let err = f
        .err(
            "apply_patch",
            patch("a.txt", &[("one", "1"), ("two", "2"), ("four", "4")]),
        )
        .await;
    assert_code(&err, ErrorCode::StalePatch);
    assert!(err.message.contains("edit 3 of 3"), "{err}");
    assert_eq!(
        fs::read_to_string(f.root.join("a.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert_eq!(
        fs::read_dir(&f.root).unwrap().count(),
        1,
        "a temporary file was left behind"
    );
}

#[tokio::test]
async fn apply_patch_preserves_permissions() {
    let f = Fixture::new();
    let path = f.write("run.sh", "echo old\n");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
    f.ok("apply_patch", patch("run.sh", &[("old", "new")]))
        .await;
    assert_eq!(fs::read_to_string(&path).unwrap(), "echo new\n");
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o751
    );
}

#[tokio::test]
async fn apply_patch_refuses_symlink_leaving_workspace() {
    let f = Fixture::new();
    symlink(f.outside.join("secret.txt"), f.root.join("link.txt")).unwrap();
    let err = f
        .err("apply_patch", patch("link.txt", &[("top", "owned")]))
        .await;
    assert_code(&err, ErrorCode::OutsideWorkspace);
    assert_eq!(
        fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
        SECRET
    );
}

#[tokio::test]
async fn apply_patch_refuses_bad_input() {
    let f = Fixture::new();
    f.write("bin.dat", b"\xff\xfe\x00");
    f.write("a.txt", "a");
    assert_code(
        &f.err("apply_patch", patch("bin.dat", &[("a", "b")])).await,
        ErrorCode::InvalidInput,
    );
    assert_code(
        &f.err("apply_patch", patch("a.txt", &[])).await,
        ErrorCode::InvalidInput,
    );
    assert_code(
        &f.err("apply_patch", patch("a.txt", &[("", "b")])).await,
        ErrorCode::InvalidInput,
    );
    let many: Vec<(&str, &str)> = (0..51).map(|_| ("a", "a")).collect();
    assert_code(
        &f.err("apply_patch", patch("a.txt", &many)).await,
        ErrorCode::InvalidInput,
    );
    let long = "x".repeat(65_537);
    assert_code(
        &f.err("apply_patch", patch("a.txt", &[("a", &long)])).await,
        ErrorCode::InvalidInput,
    );
    assert_code(
        &f.err("apply_patch", patch("missing.txt", &[("a", "b")]))
            .await,
        ErrorCode::NotFound,
    );
    fs::create_dir(f.root.join("dir")).unwrap();
    assert_code(
        &f.err("apply_patch", patch("dir", &[("a", "b")])).await,
        ErrorCode::NotFile,
    );
}

// ---------------------------------------------------------------------------------------------
// run_command

#[tokio::test]
async fn run_command_returns_exit_code_and_both_streams() {
    let f = Fixture::new();
    let out = f
        .ok(
            "run_command",
            json!({"program": "sh", "args": ["-c", "echo out; echo err >&2; exit 3"]}),
        )
        .await;
    assert_eq!(
        out,
        json!({"exitCode": 3, "stdout": "out\n", "stderr": "err\n", "truncated": false})
    );
}

#[tokio::test]
async fn run_command_reports_a_killing_signal() {
    let f = Fixture::new();
    let out = f
        .ok(
            "run_command",
            json!({"program": "sh", "args": ["-c", "kill -KILL $$"]}),
        )
        .await;
    assert_eq!(out["exitCode"], Value::Null);
    assert_eq!(out["signal"], "SIGKILL");
}

#[tokio::test]
async fn run_command_runs_in_cwd_with_null_stdin() {
    let f = Fixture::new();
    fs::create_dir(f.root.join("sub")).unwrap();
    let out = f
        .ok("run_command", json!({"program": "pwd", "cwd": "sub"}))
        .await;
    assert_eq!(out["stdout"], format!("{}\n", f.root.join("sub").display()));
    // `cat` reading an inherited terminal or pipe would wait; with null stdin it ends at once.
    let out = f
        .ok(
            "run_command",
            json!({"program": "cat", "timeoutMs": 10_000}),
        )
        .await;
    assert_eq!(out["stdout"], "");
    assert_eq!(out["exitCode"], 0);
}

#[tokio::test]
async fn run_command_timeout_kills_sleep() {
    let f = Fixture::new();
    let marker = "30.0417";
    let started = Instant::now();
    let err = f
        .err(
            "run_command",
            json!({"program": "sleep", "args": [marker], "timeoutMs": 300}),
        )
        .await;
    assert_code(&err, ErrorCode::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_no_process_with(marker).await;
}

#[tokio::test]
async fn run_command_timeout_kills_the_whole_process_group() {
    let f = Fixture::new();
    let (background, foreground) = ("31.0418", "31.0419");
    let script = format!("sleep {background} & sleep {foreground}; wait");
    let err = f
        .err(
            "run_command",
            json!({"program": "sh", "args": ["-c", script], "timeoutMs": 300}),
        )
        .await;
    assert_code(&err, ErrorCode::TimedOut);
    assert_no_process_with(background).await;
    assert_no_process_with(foreground).await;
}

#[tokio::test]
async fn run_command_kills_what_ignores_sigterm() {
    let f = Fixture::new();
    let marker = "32.0420";
    let script = format!("trap '' TERM; sleep {marker}");
    let started = Instant::now();
    let err = f
        .err(
            "run_command",
            json!({"program": "sh", "args": ["-c", script], "timeoutMs": 300}),
        )
        .await;
    assert_code(&err, ErrorCode::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_no_process_with(marker).await;
}

#[tokio::test]
async fn run_command_timeout_is_capped_by_limits() {
    let f = Fixture::with_limits(Limits {
        command_timeout_ms: 300,
        ..Limits::default()
    });
    let marker = "33.0421";
    let started = Instant::now();
    let err = f
        .err(
            "run_command",
            json!({"program": "sleep", "args": [marker], "timeoutMs": 600_000}),
        )
        .await;
    assert_code(&err, ErrorCode::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_no_process_with(marker).await;
}

#[tokio::test]
async fn run_command_cancel() {
    let f = Fixture::new();
    let marker = "34.0422";
    let cancel = f.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let err = f
        .err("run_command", json!({"program": "sleep", "args": [marker]}))
        .await;
    assert_code(&err, ErrorCode::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_no_process_with(marker).await;
}

#[tokio::test]
async fn run_command_dropped_call_kills_the_group() {
    // A caller that gives up on the call (its own deadline drops the future) must not leave
    // the program or what it started running.
    let f = Fixture::new();
    let (background, foreground) = ("36.0424", "36.0425");
    let script = format!("sleep {background} & sleep {foreground}; wait");
    let call = f.call(
        "run_command",
        json!({"program": "sh", "args": ["-c", script]}),
    );
    let dropped = tokio::time::timeout(Duration::from_millis(500), call).await;
    assert!(dropped.is_err(), "the command finished: {dropped:?}");
    assert_no_process_with(background).await;
    assert_no_process_with(foreground).await;
}

#[tokio::test]
async fn run_command_returns_when_a_background_child_holds_the_pipes() {
    let f = Fixture::new();
    let marker = "35.0423";
    let script = format!("echo started; sleep {marker} & exit 0");
    let started = Instant::now();
    let out = f
        .ok(
            "run_command",
            json!({"program": "sh", "args": ["-c", script], "timeoutMs": 60_000}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out["exitCode"], 0);
    assert_eq!(out["stdout"], "started\n");
    assert_no_process_with(marker).await;
}

#[tokio::test]
async fn run_command_env_has_no_secrets() {
    // The parent's environment stands for one holding secrets; ctx.env is the scrubbed one the
    // caller hands over. The child must see exactly ctx.env.
    let f = Fixture::new();
    let parent: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| !f.ctx.env.contains_key(name))
        .collect();
    assert!(
        !parent.is_empty(),
        "the test process has no environment to leak"
    );
    let out = f.ok("run_command", json!({"program": "env"})).await;
    let stdout = out["stdout"].as_str().unwrap();
    let names: BTreeSet<&str> = stdout
        .lines()
        .filter_map(|line| line.split_once('=').map(|(n, _)| n))
        .collect();
    // Plus the sandbox's private temporary directory, under its three usual names.
    let mut expected: BTreeSet<&str> = f.ctx.env.keys().map(String::as_str).collect();
    expected.extend(["TMPDIR", "TMP", "TEMP"]);
    assert_eq!(names, expected);
    assert!(stdout.contains("BOSUN_VISIBLE=shown\n"));
    assert!(stdout.contains("/bosun-run-"), "{stdout}");
    for (name, value) in parent {
        assert!(
            !stdout.contains(&format!("{name}={value}")),
            "{name} leaked into the child"
        );
    }
}

#[tokio::test]
async fn run_command_bounds_output_and_keeps_draining() {
    let f = Fixture::with_limits(limits(4096));
    // 1 MB on stdout and some on stderr: a child whose pipes were not drained would block
    // on a full pipe and never exit.
    let script =
        "yes stdout-line | head -c 1000000; yes stderr-line | head -c 100000 >&2; echo done";
    let out = f
        .ok(
            "run_command",
            json!({"program": "sh", "args": ["-c", script], "timeoutMs": 30_000}),
        )
        .await;
    assert_eq!(out["exitCode"], 0);
    assert_eq!(out["truncated"], true);
    let kept = out["stdout"].as_str().unwrap().len() + out["stderr"].as_str().unwrap().len();
    assert!(kept <= 4096, "kept {kept} bytes");
    assert!(out["stdout"].as_str().unwrap().starts_with("stdout-line\n"));
}

#[tokio::test]
async fn run_command_not_found_is_process_error() {
    let f = Fixture::new();
    let err = f
        .err("run_command", json!({"program": "bosun-no-such-program"}))
        .await;
    assert_code(&err, ErrorCode::ProcessError);
    assert!(err.message.contains("bosun-no-such-program"), "{err}");
}

#[tokio::test]
async fn run_command_rejects_shell_syntax_and_bad_bounds() {
    let f = Fixture::new();
    for program in [
        "ls;id", "ls|cat", "echo hi", "$(id)", "`id`", "a>b", "x&", "ls\n", "",
    ] {
        let input = json!({"program": program});
        assert_code(
            &f.err("run_command", input.clone()).await,
            ErrorCode::InvalidInput,
        );
        assert_code(
            &f.request_err("run_command", input),
            ErrorCode::InvalidInput,
        );
    }
    let bad = [
        json!({"program": "x".repeat(513)}),
        json!({"program": "ls", "args": vec!["a"; 101]}),
        json!({"program": "ls", "args": ["x".repeat(8193)]}),
        json!({"program": "ls", "args": ["a\0b"]}),
        json!({"program": "ls", "timeoutMs": 0}),
        json!({"program": "ls", "timeoutMs": 3_600_001}),
        json!({"program": "ls", "shell": true}),
    ];
    for input in bad {
        assert_code(&f.err("run_command", input).await, ErrorCode::InvalidInput);
    }
    f.write("file.txt", "");
    assert_code(
        &f.err("run_command", json!({"program": "ls", "cwd": "file.txt"}))
            .await,
        ErrorCode::NotDirectory,
    );
    assert_code(
        &f.err("run_command", json!({"program": "ls", "cwd": "../outside"}))
            .await,
        ErrorCode::OutsideWorkspace,
    );
}

#[tokio::test]
async fn run_command_arguments_are_not_interpreted_by_a_shell() {
    let f = Fixture::new();
    let out = f
        .ok(
            "run_command",
            json!({"program": "echo", "args": ["$HOME", "a;b", "`id`", "*"]}),
        )
        .await;
    assert_eq!(out["stdout"], "$HOME a;b `id` *\n");
}

/// Paths shown to the model are workspace-relative and `/`-separated.
#[test]
fn relative_paths_are_slash_separated() {
    let f = Fixture::new();
    assert_eq!(
        f.ctx
            .workspace
            .relative(&f.root.join("a").join("b").join("c.rs")),
        "a/b/c.rs"
    );
    assert_eq!(f.ctx.workspace.relative(Path::new(&f.root)), ".");
}

/// Hostile: another process swaps a workspace directory for a symbolic link to the outside, over
/// and over, while every file tool runs against paths through it. Every open, create, link and
/// rename is resolved beneath a handle of the root, so no call reads, writes or leaves a
/// temporary file outside, whichever instant the swap lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlink_swaps_never_lead_file_tools_outside() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let f = Fixture::new();
    f.write("d/f.txt", "inside\n");
    fs::write(f.outside.join("f.txt"), SECRET).unwrap();
    let before: BTreeSet<String> = fs::read_dir(&f.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        let (dir, link) = (f.root.join("d"), f.root.join("d-link"));
        symlink(&f.outside, &link).unwrap();
        std::thread::spawn(move || {
            // One atomic exchange per swap: `d` is the real directory or a link to the outside,
            // never missing, so every instant is a chance for a check-then-open race.
            while !stop.load(Ordering::Relaxed) {
                let exchanged = rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &dir,
                    rustix::fs::CWD,
                    &link,
                    rustix::fs::RenameFlags::EXCHANGE,
                );
                match exchanged {
                    Ok(()) => {
                        swaps.fetch_add(1, Ordering::Relaxed);
                    }
                    // A filesystem without RENAME_EXCHANGE: swap in three steps instead.
                    Err(_) => {
                        let real = dir.with_file_name("d-real");
                        if fs::rename(&dir, &real).is_ok() {
                            let _ = fs::rename(&link, &dir);
                            let _ = fs::rename(&dir, &link);
                            let _ = fs::rename(&real, &dir);
                            swaps.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        })
    };
    let leaked = |value: &Value| value.to_string().contains("top secret");
    for i in 0..600 {
        for path in ["d/f.txt", "d/secret.txt", "d/f.txt", "d/secret.txt"] {
            if let Ok(out) = f.call("read_file", json!({"path": path})).await {
                assert!(!leaked(&out.value), "read_file read outside: {}", out.value);
            }
        }
        if i % 5 == 0
            && let Ok(out) = f
                .call("search", json!({"query": "top secret", "path": "."}))
                .await
        {
            assert!(!leaked(&out.value), "search read outside: {}", out.value);
        }
        let _ = f
            .call(
                "create_file",
                json!({"path": format!("d/new-{i}.txt"), "content": "x"}),
            )
            .await;
        let _ = f
            .call(
                "apply_patch",
                json!({"path": "d/f.txt", "edits": [{"oldText": "inside", "newText": "inside"}]}),
            )
            .await;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(swaps.load(Ordering::Relaxed) > 0, "the swapper never ran");
    let after: BTreeSet<String> = fs::read_dir(&f.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(after, before, "files appeared outside the workspace");
    assert_eq!(fs::read_to_string(f.outside.join("f.txt")).unwrap(), SECRET);
    assert_eq!(
        fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
        SECRET
    );
}

// The OS sandbox around run_command (crates/launch has the per-layer attacks; these prove the
// tool starts its child through it, with the grants the chokepoint made).

#[tokio::test]
async fn run_command_writes_only_inside_the_workspace_and_never_protected_paths() {
    let f = Fixture::new();
    f.write(".git/config", "[core]\n");
    let outside = f.outside.join("planted");
    let script = format!(
        "echo x > made.txt; echo y > '{}'; echo '[core] hooksPath=/tmp' >> .git/config; true",
        outside.display()
    );
    let out = f
        .ok(
            "run_command",
            json!({"program": "sh", "args": ["-c", script]}),
        )
        .await;
    let stderr = out["stderr"].as_str().unwrap();
    assert!(f.root.join("made.txt").exists(), "{out}");
    assert!(!outside.exists(), "{out}");
    assert_eq!(
        fs::read_to_string(f.root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(stderr.contains("Read-only file system"), "{stderr}");
}

/// Protection does not depend on where a `.git` is: deep, inside directories a walk would
/// skip (`node_modules`, `target`, `.venv`), behind thousands of entries, or spelled in
/// capitals, each stays read-only for a command, and so do instruction files.
#[tokio::test]
async fn run_command_cannot_write_protected_paths_at_any_depth_or_breadth() {
    let f = Fixture::new();
    let mut targets = vec![
        "node_modules/pkg/.git/config".to_owned(),
        "target/debug/build/x/.git/config".to_owned(),
        ".venv/lib/site/.git/config".to_owned(),
        format!(
            "{}/.git/config",
            (0..12)
                .map(|i| format!("d{i}"))
                .collect::<Vec<_>>()
                .join("/")
        ),
        "wide/zzzz/.git/config".to_owned(),
        "sub/.GIT/config".to_owned(),
        "sub/.bosun/config.toml".to_owned(),
        "lib/.agents/skills/x/SKILL.md".to_owned(),
        "AGENTS.md".to_owned(),
        "docs/CLAUDE.md".to_owned(),
    ];
    // Breadth: five thousand entries before the last repository.
    for i in 0..5000 {
        f.write(&format!("wide/a{i:05}"), "");
    }
    for target in &targets {
        f.write(target, "original\n");
    }
    let script: String = targets
        .iter()
        .map(|t| format!("echo planted >> '{t}'; "))
        .chain(std::iter::once("echo x > free.txt; true".to_owned()))
        .collect();
    let out = f
        .ok(
            "run_command",
            json!({"program": "sh", "args": ["-c", script]}),
        )
        .await;
    assert!(f.root.join("free.txt").exists(), "{out}");
    for target in targets.drain(..) {
        assert_eq!(
            fs::read_to_string(f.root.join(&target)).unwrap(),
            "original\n",
            "{target} was written: {out}"
        );
    }
}

#[tokio::test]
async fn run_command_cannot_read_outside_or_the_hosts_environment() {
    let f = Fixture::new();
    let secret = f.outside.join("secret.txt");
    let out = f
        .ok(
            "run_command",
            json!({"program": "sh", "args": ["-c", format!("cat '{}'; cat /proc/$PPID/environ", secret.display())]}),
        )
        .await;
    assert!(
        !out["stdout"].as_str().unwrap().contains("top secret"),
        "{out}"
    );
    assert!(!out["stdout"].as_str().unwrap().contains("PATH="), "{out}");
    assert_eq!(
        out["stderr"]
            .as_str()
            .unwrap()
            .matches("Permission denied")
            .count(),
        2,
        "{out}"
    );
}

const CONNECT: &str = r#"
import socket, sys
for port in sys.argv[1:]:
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()
        print("connected", port)
    except OSError as e:
        print("refused", port, e.errno)
"#;

#[tokio::test]
async fn run_command_reaches_only_the_hosts_policy_granted() {
    let granted = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (granted, other) = (
        granted.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
    );
    let mut f = Fixture::new();
    let input = json!({
        "program": "/usr/bin/python3",
        "args": ["-c", CONNECT, granted.to_string(), other.to_string()],
        "network": [format!("127.0.0.1:{granted}")],
    });
    // The network the call names is judged as net.http, one request per host.
    let requests = tool("run_command")
        .capability_requests(&input, &f.ctx)
        .unwrap();
    let net: Vec<_> = requests
        .iter()
        .filter(|r| r.capability == Capability::NetHttp)
        .collect();
    assert_eq!(net.len(), 1, "{requests:?}");

    // Not granted (policy asked and nobody allowed it): no network at all.
    let out = f.ok("run_command", input.clone()).await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.contains(&format!("refused {granted} 1")), "{out}");

    // Granted exactly that host: it connects there, and nowhere else.
    f.ctx.granted = requests;
    let out = f.ok("run_command", input).await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.contains(&format!("connected {granted}")), "{out}");
    assert!(stdout.contains(&format!("refused {other} 13")), "{out}");
}

#[tokio::test]
async fn run_command_network_entries_are_checked() {
    let f = Fixture::new();
    let err = f.request_err(
        "run_command",
        json!({"program": "curl", "network": ["http://example.com/path"]}),
    );
    assert_eq!(err.code, ErrorCode::InvalidInput, "{err}");
    assert!(err.message.contains("not a host or host:port"), "{err}");
}

/// Collects a run's live events, saying on `first` when the first piece of output arrives.
struct Watcher {
    pieces: std::sync::Mutex<Vec<(bosun_core::OutputStream, String)>>,
    first: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl bosun_host::trace::Observer for Watcher {
    fn observe(&self, envelope: &bosun_core::Envelope) {
        if let bosun_core::Event::ToolOutput {
            call_id,
            stream,
            text,
        } = &envelope.event
        {
            assert_eq!(call_id, "call-1");
            self.pieces.lock().unwrap().push((*stream, text.clone()));
            if let Some(first) = self.first.lock().unwrap().take() {
                let _ = first.send(());
            }
        }
    }
}

#[tokio::test]
async fn run_command_output_arrives_in_pieces_before_it_ends_and_is_redacted() {
    let mut f = Fixture::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let watcher = Arc::new(Watcher {
        pieces: Default::default(),
        first: std::sync::Mutex::new(Some(tx)),
    });
    let secret = "sk-live-0123456789abcdef";
    f.ctx.run = Arc::new(bosun_host::trace::RunInfo {
        run_id: "run-1".to_owned(),
        parent_run_id: None,
        runs_dir: None,
        redactor: Arc::new(bosun_core::Redactor::new([(
            "API_KEY".to_owned(),
            secret.to_owned(),
        )])),
        observers: vec![watcher.clone()],
        next_sequence: Arc::default(),
    });
    let marker = "34.0423";
    let script = format!("echo one; echo {secret} >&2; sleep {marker}; echo never");
    let cancel = f.ctx.cancel.clone();
    let ctx = f.ctx.clone();
    let call = tokio::spawn(async move {
        tool("run_command")
            .call(json!({"program": "sh", "args": ["-c", script]}), &ctx)
            .await
    });
    // The first line comes while the command still runs (it sleeps for half a minute).
    tokio::time::timeout(Duration::from_secs(20), rx)
        .await
        .expect("no output while the command ran")
        .unwrap();
    assert!(!call.is_finished());
    // Both streams, each whole line, the secret redacted.
    let deadline = Instant::now() + Duration::from_secs(20);
    while watcher.pieces.lock().unwrap().len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pieces = watcher.pieces.lock().unwrap().clone();
    assert_eq!(pieces.len(), 2, "{pieces:?}");
    assert!(pieces.contains(&(bosun_core::OutputStream::Stdout, "one\n".to_owned())));
    let (stream, err) = pieces
        .iter()
        .find(|(s, _)| *s == bosun_core::OutputStream::Stderr)
        .unwrap();
    assert_eq!(*stream, bosun_core::OutputStream::Stderr);
    assert!(!err.contains(secret), "{err}");
    cancel.cancel();
    let err = call.await.unwrap().unwrap_err();
    assert_code(&err, ErrorCode::Cancelled);
    assert_no_process_with(marker).await;
}

/// An editor's buffers behind the file-access seam: what it was asked to read and write.
#[derive(Default)]
struct Buffers {
    texts: std::sync::Mutex<BTreeMap<PathBuf, String>>,
    asked: std::sync::Mutex<Vec<PathBuf>>,
}

#[async_trait::async_trait]
impl bosun_host::file_access::FileAccess for Buffers {
    async fn read_text(&self, path: &Path) -> std::io::Result<String> {
        self.asked.lock().unwrap().push(path.to_owned());
        match self.texts.lock().unwrap().get(path) {
            Some(text) => Ok(text.clone()),
            None => fs::read_to_string(path),
        }
    }

    async fn write_text(&self, path: &Path, text: &str) -> std::io::Result<()> {
        self.asked.lock().unwrap().push(path.to_owned());
        self.texts
            .lock()
            .unwrap()
            .insert(path.to_owned(), text.to_owned());
        Ok(())
    }
}

impl Fixture {
    /// The fixture with the file tools reading and writing through `buffers`.
    fn through(buffers: &Arc<Buffers>) -> Fixture {
        let fixture = Fixture::new();
        fixture.ctx.session.set_file_access(Some(
            buffers.clone() as Arc<dyn bosun_host::file_access::FileAccess>
        ));
        fixture
    }
}

#[tokio::test]
async fn read_file_reads_the_faces_unsaved_buffer_and_pages_it() {
    let buffers = Arc::new(Buffers::default());
    let f = Fixture::through(&buffers);
    let path = f.write("a.txt", "on disk\n");
    buffers
        .texts
        .lock()
        .unwrap()
        .insert(path.clone(), "unsaved one\nunsaved two\n".to_owned());
    let whole = f.ok("read_file", json!({"path": "a.txt"})).await;
    assert_eq!(whole["content"], "unsaved one\nunsaved two\n");
    assert_eq!(whole["bytes"], 24);
    let page = f
        .ok(
            "read_file",
            json!({"path": "a.txt", "offset": 2, "limit": 1}),
        )
        .await;
    assert_eq!(page["content"], "unsaved two\n");
}

#[tokio::test]
async fn apply_patch_patches_the_buffer_and_writes_it_back_through_the_face() {
    let buffers = Arc::new(Buffers::default());
    let f = Fixture::through(&buffers);
    let path = f.write("a.rs", "fn a() -> u32 { 1 }\n");
    buffers
        .texts
        .lock()
        .unwrap()
        .insert(path.clone(), "fn a() -> u32 { 1 } // edited\n".to_owned());
    let out = f
        .ok(
            "apply_patch",
            json!({"path": "a.rs", "edits": [{"oldText": "1", "newText": "2"}]}),
        )
        .await;
    assert!(
        out["diff"]
            .as_str()
            .unwrap()
            .contains("+fn a() -> u32 { 2 } // edited")
    );
    assert_eq!(
        buffers.texts.lock().unwrap().get(&path).unwrap(),
        "fn a() -> u32 { 2 } // edited\n"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "fn a() -> u32 { 1 }\n");
}

#[tokio::test]
async fn create_file_through_the_face_is_created_new_beneath_the_root_first() {
    let buffers = Arc::new(Buffers::default());
    let f = Fixture::through(&buffers);
    f.ok(
        "create_file",
        json!({"path": "new/b.txt", "content": "hello"}),
    )
    .await;
    let path = f.root.join("new/b.txt");
    assert!(path.is_file(), "the file exists for the editor to open");
    assert_eq!(buffers.texts.lock().unwrap().get(&path).unwrap(), "hello");
    // An existing file is refused before the face is asked to write anything.
    buffers.asked.lock().unwrap().clear();
    let err = f
        .err(
            "create_file",
            json!({"path": "new/b.txt", "content": "again"}),
        )
        .await;
    assert_eq!(err.code, ErrorCode::AlreadyExists, "{err}");
    assert_eq!(*buffers.asked.lock().unwrap(), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn file_access_is_never_asked_about_a_path_outside_the_workspace() {
    let buffers = Arc::new(Buffers::default());
    let f = Fixture::through(&buffers);
    symlink(f.outside.join("secret.txt"), f.root.join("link.txt")).unwrap();
    for (tool, input) in [
        ("read_file", json!({"path": "link.txt"})),
        ("read_file", json!({"path": "../outside/secret.txt"})),
        (
            "apply_patch",
            json!({"path": "link.txt", "edits": [{"oldText": "top", "newText": "x"}]}),
        ),
        (
            "create_file",
            json!({"path": "../outside/new.txt", "content": "x"}),
        ),
    ] {
        let err = f.err(tool, input.clone()).await;
        assert_eq!(
            err.code,
            ErrorCode::OutsideWorkspace,
            "{tool} {input}: {err}"
        );
    }
    assert_eq!(*buffers.asked.lock().unwrap(), Vec::<PathBuf>::new());
    assert_eq!(
        fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
        SECRET
    );
}

/// A hostile workspace behind an editor that writes by path: while the tool holds the buffer's
/// text, the file's directory is swapped for a symbolic link to the outside.
struct SwappingEditor {
    /// The directory swapped for a link.
    dir: PathBuf,
    /// Where the link points.
    outside: PathBuf,
}

#[async_trait::async_trait]
impl bosun_host::file_access::FileAccess for SwappingEditor {
    async fn read_text(&self, path: &Path) -> std::io::Result<String> {
        let text = fs::read_to_string(path)?;
        fs::rename(&self.dir, self.dir.with_extension("moved"))?;
        symlink(&self.outside, &self.dir)?;
        Ok(text)
    }

    async fn write_text(&self, path: &Path, text: &str) -> std::io::Result<()> {
        // An editor resolves the path in its own process and follows links.
        fs::write(path, text)
    }
}

#[tokio::test]
async fn an_editor_write_is_never_handed_a_path_swapped_since_it_was_checked() {
    let f = Fixture::new();
    let path = f.write("sub/notes.txt", "top\n");
    let editor = Arc::new(SwappingEditor {
        dir: path.parent().unwrap().to_owned(),
        outside: f.outside.clone(),
    });
    f.ctx
        .session
        .set_file_access(Some(editor as Arc<dyn bosun_host::file_access::FileAccess>));
    let err = f
        .err(
            "apply_patch",
            json!({"path": "sub/notes.txt", "edits": [{"oldText": "top", "newText": "planted"}]}),
        )
        .await;
    assert_eq!(err.code, ErrorCode::OutsideWorkspace, "{err}");
    assert!(err.message.contains("nothing was written"), "{err}");
    assert!(
        !f.outside.join("notes.txt").exists(),
        "the edit was written outside the workspace"
    );
    assert_eq!(
        fs::read_to_string(f.root.join("sub.moved/notes.txt")).unwrap(),
        "top\n"
    );
}
