//! What a refused or failed call tells the model about places it may not see. Outside the
//! workspace, or where policy denies, the answer is the same words whatever is there — nothing,
//! a file, a directory, a link, a dangling link, a FIFO, an unreadable file — and it names the
//! path as the model wrote it, never where a link leads.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use bosun_core::{ErrorCode, Limits};
use bosun_fsio::testing::{plant_fifo, plant_link};
use bosun_host::approval::AutoApprove;
use bosun_host::builtin;
use bosun_policy::Mode;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::chokepoint::{Harness, code, policy};

/// What a path can lead to.
#[derive(Debug, Clone, Copy)]
enum Target {
    Absent,
    File,
    Directory,
    /// A link to a file elsewhere.
    Link,
    /// A link to nothing.
    LinkToAbsent,
    Fifo,
    /// A file nobody may read (mode 000).
    Unreadable,
    /// A link whose text, absolute, leads out of the workspace.
    LinkOut,
    /// A link whose relative text climbs out of the workspace.
    LinkClimbingOut,
}

const TARGETS: [Target; 9] = [
    Target::Absent,
    Target::File,
    Target::Directory,
    Target::Link,
    Target::LinkToAbsent,
    Target::Fifo,
    Target::Unreadable,
    Target::LinkOut,
    Target::LinkClimbingOut,
];

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Absent => "absent",
            Target::File => "file",
            Target::Directory => "directory",
            Target::Link => "link",
            Target::LinkToAbsent => "dangling",
            Target::Fifo => "fifo",
            Target::Unreadable => "unreadable",
            Target::LinkOut => "out",
            Target::LinkClimbingOut => "up",
        }
    }

    /// Makes this kind of thing at `dir/<name>`; a link leads to `elsewhere` (or a missing
    /// name beside it).
    fn plant(self, dir: &Path, elsewhere: &Path) {
        let at = dir.join(self.name());
        match self {
            Target::Absent => {}
            Target::File => std::fs::write(&at, "key=1\n").unwrap(),
            Target::Directory => {
                std::fs::create_dir(&at).unwrap();
                std::fs::write(at.join("inner.txt"), "key=2\n").unwrap();
            }
            Target::Link => plant_link(&at, elsewhere),
            Target::LinkToAbsent => plant_link(&at, &elsewhere.with_file_name("gone.txt")),
            Target::Fifo => plant_fifo(&at),
            Target::Unreadable => {
                std::fs::write(&at, "key=3\n").unwrap();
                std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o000)).unwrap();
            }
            Target::LinkOut => plant_link(&at, Path::new("/etc")),
            Target::LinkClimbingOut => {
                let depth = dir.canonicalize().unwrap().components().count() - 1;
                plant_link(&at, Path::new(&format!("{}etc", "../".repeat(depth))));
            }
        }
    }
}

/// Every tool that takes a path from the model, with `path` as that path.
fn calls(path: &str) -> [(&'static str, Value); 6] {
    [
        ("read_file", json!({"path": path})),
        ("list_files", json!({"path": path})),
        ("search", json!({"query": "key", "path": path})),
        ("create_file", json!({"path": path, "content": "x"})),
        (
            "apply_patch",
            json!({"path": path, "edits": [{"oldText": "key", "newText": "k"}]}),
        ),
        (
            "run_command",
            json!({"program": "true", "args": [], "cwd": path}),
        ),
    ]
}

/// Calls each tool with the path `spell(target)` for every target, and checks that the model
/// hears one code and one message (the path it wrote taken out) across targets, and never
/// any of `never` (where the links lead).
async fn heard_alike(
    h: &Harness,
    spelling: &str,
    spell: impl Fn(Target) -> String,
    expected: ErrorCode,
    never: &[String],
) {
    for index in 0..calls(".").len() {
        let mut heard = Vec::new();
        for target in TARGETS {
            let path = spell(target);
            let (tool, input) = calls(&path)[index].clone();
            let result = h.call(tool, input).await;
            let error = result
                .error()
                .unwrap_or_else(|| panic!("{tool} {path} ({spelling}) ran: {result:?}"));
            assert_eq!(
                code(&result),
                Some(expected),
                "{tool} {path} ({spelling}, {target:?}): {error:?}"
            );
            for place in never {
                assert!(
                    !error.message.contains(place.as_str()),
                    "{tool} {path} ({spelling}, {target:?}) named `{place}`: {}",
                    error.message
                );
            }
            heard.push((target, error.message.replace(&path, "<path>")));
        }
        let first = heard[0].1.clone();
        for (target, message) in &heard {
            assert_eq!(
                message,
                &first,
                "{} ({spelling}) told {target:?} apart from {:?}",
                calls(".")[index].0,
                heard[0].0
            );
        }
    }
}

fn full_access(rules: &str) -> Harness {
    let rules = format!(
        r#"
[[policy.rules]]
action = "builtin.tool.*"
decision = "allow"
{rules}"#
    );
    Harness::new(
        policy(Mode::Full, &rules),
        builtin::tools(),
        Arc::new(AutoApprove),
        Limits::default(),
    )
}

/// Outside the workspace the model may reach nothing, and learns nothing: a path written
/// outside, `..` out, a link in the workspace to the target and a path through a link to its
/// directory all answer `outside_workspace` in the same words whatever the target is. Before,
/// a link to a missing target was judged inside (allowed) and the tool said `not_found`, while
/// a link to an existing one said `outside_workspace`: with `ln -s` in a sandboxed command,
/// the model could test for any file the sandbox hides.
#[tokio::test]
async fn outside_the_workspace_every_target_answers_alike() {
    let h = full_access("");
    let root = h.dir.path().to_path_buf();
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path().canonicalize().unwrap();
    let elsewhere = out.join("elsewhere.txt");
    std::fs::write(&elsewhere, "key=4\n").unwrap();
    for target in TARGETS {
        target.plant(&out, &elsewhere);
        plant_link(
            &root.join(format!("to-{}", target.name())),
            &out.join(target.name()),
        );
    }
    plant_link(&root.join("there"), &out);
    // A link in the workspace whose relative text climbs out.
    let climb = "../".repeat(root.components().count());
    for target in TARGETS {
        plant_link(
            &root.join(format!("up-{}", target.name())),
            Path::new(&format!("{climb}{}", out.join(target.name()).display())),
        );
    }
    let never = [out.display().to_string()];
    let name = |target: Target| target.name().to_owned();
    heard_alike(
        &h,
        "a link to it",
        |t| format!("to-{}", name(t)),
        ErrorCode::OutsideWorkspace,
        &never,
    )
    .await;
    heard_alike(
        &h,
        "a link climbing out",
        |t| format!("up-{}", name(t)),
        ErrorCode::OutsideWorkspace,
        &never,
    )
    .await;
    heard_alike(
        &h,
        "through a link to its directory",
        |t| format!("there/{}", name(t)),
        ErrorCode::OutsideWorkspace,
        &never,
    )
    .await;
    heard_alike(
        &h,
        "written outside",
        |t| out.join(name(t)).display().to_string(),
        ErrorCode::OutsideWorkspace,
        &[],
    )
    .await;
    let up = format!("..{}", "/..".repeat(root.components().count()));
    heard_alike(
        &h,
        "`..` out",
        |t| format!("{up}{}/{}", out.display(), name(t)),
        ErrorCode::OutsideWorkspace,
        &[],
    )
    .await;
    // Nothing was written through a link, and nothing was made outside.
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "key=4\n");
    assert!(!out.join("absent").exists());
    assert!(!out.join("gone.txt").exists());
}

/// Where policy denies, every target answers `denied` in the same words, and a denial names
/// the path as the model wrote it: a link `innocent` to the denied `secrets` is denied as
/// `innocent/…`, never as where it leads (before, the denial named `secrets/…`, so a denied
/// call told the model where each of its links led). A link there whose text leads out of the
/// workspace is denied too (before, it answered `outside_workspace`, telling the model the name
/// was such a link).
#[tokio::test]
async fn a_denial_names_the_path_as_written_and_never_where_a_link_leads() {
    let h = full_access(
        r#"
[[policy.rules]]
action = "fs.read"
path = "secrets/**"
decision = "deny"

[[policy.rules]]
action = "fs.write"
path = "secrets/**"
decision = "deny"

[[policy.rules]]
action = "process.spawn"
program = "true"
decision = "deny"
"#,
    );
    let root = h.dir.path().to_path_buf();
    let secrets = root.join("secrets");
    std::fs::create_dir(&secrets).unwrap();
    let elsewhere = secrets.join("hidden-target.txt");
    std::fs::write(&elsewhere, "key=5\n").unwrap();
    for target in TARGETS {
        target.plant(&secrets, &elsewhere);
    }
    plant_link(&root.join("innocent"), Path::new("secrets"));
    plant_link(&root.join("notes"), Path::new("secrets/hidden-target.txt"));
    let name = |target: Target| target.name().to_owned();
    let never = ["hidden-target".to_owned(), "gone.txt".to_owned()];
    heard_alike(
        &h,
        "in the denied folder",
        |t| format!("secrets/{}", name(t)),
        ErrorCode::Denied,
        &never,
    )
    .await;
    // The rule's own text (`path = "secrets/**"`) is the person's and may be quoted; no path
    // in the denied folder may be named.
    let never: Vec<String> = TARGETS
        .iter()
        .map(|t| format!("secrets/{}", t.name()))
        .chain(["hidden-target".to_owned(), "gone.txt".to_owned()])
        .collect();
    heard_alike(
        &h,
        "through a link to the denied folder",
        |t| format!("innocent/{}", name(t)),
        ErrorCode::Denied,
        &never,
    )
    .await;
    // One link to a denied file: named as written, whatever tool asks.
    for (tool, input) in calls("notes") {
        let result = h.call(tool, input).await;
        let message = &result.error().unwrap().message;
        if tool != "run_command" {
            assert!(message.contains(":notes "), "{tool}: {message}");
        }
        assert!(!message.contains("hidden-target"), "{tool}: {message}");
    }
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "key=5\n");
    assert!(!secrets.join("absent").exists());
}

/// A rule's file is named to the model without the person's home directory or user name: the
/// user's config `/home/<user>/.bosun/config.toml` is `~/.bosun/config.toml` in a denial and in
/// a `needs_approval` (before, the whole path reached the model, and through it every provider
/// the conversation is sent to).
#[tokio::test]
async fn a_rules_file_is_named_to_the_model_without_the_persons_home() {
    let home = std::env::var("HOME").unwrap();
    let config = format!("{home}/.bosun/config.toml");
    let text = r#"[policy]
[[policy.rules]]
action = "fs.read"
path = "secrets/**"
decision = "deny"

[[policy.rules]]
action = "fs.write"
path = "drafts/**"
decision = "ask"
"#;
    let policy = Arc::new(
        bosun_policy::Policy::builder(Mode::WorkspaceWrite)
            .user(
                bosun_policy::PolicyFile::parse(text).unwrap(),
                bosun_policy::Source::with_text(config.as_str(), text),
            )
            .unwrap()
            .build(),
    );
    let h = Harness::new(
        policy,
        builtin::tools(),
        Arc::new(bosun_host::NonInteractive),
        Limits::default(),
    );
    for (tool, input, expected) in [
        (
            "read_file",
            json!({"path": "secrets/key"}),
            ErrorCode::Denied,
        ),
        (
            "create_file",
            json!({"path": "drafts/a.txt", "content": "x"}),
            ErrorCode::NeedsApproval,
        ),
    ] {
        let result = h.call(tool, input).await;
        let error = result.error().unwrap();
        assert_eq!(error.code, expected, "{tool}: {error:?}");
        assert!(
            error.message.contains("(~/.bosun/config.toml:"),
            "{tool}: {}",
            error.message
        );
        assert!(!error.message.contains(&home), "{tool}: {}", error.message);
    }
}
