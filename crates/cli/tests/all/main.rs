//! The `bosun` binary as a user and a script meet it: exit codes, JSON output, configuration
//! errors, and the enforcement that must hold end to end.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pretty_assertions::assert_eq;
use serde_json::Value;

pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("ws/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("ws/src")).unwrap();
        std::fs::write(
            dir.path().join("ws/src/lib.rs"),
            "pub fn answer() -> u32 { 42 }\n",
        )
        .unwrap();
        Self { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    fn user_config(&self, text: &str) {
        std::fs::write(self.home().join("config.toml"), text).unwrap();
    }

    fn project_config(&self, text: &str) {
        std::fs::create_dir_all(self.ws().join(".bosun")).unwrap();
        std::fs::write(self.ws().join(".bosun/config.toml"), text).unwrap();
    }

    fn bosun(&self, args: &[&str]) -> Output {
        self.bosun_with_env(args, &[])
    }

    fn bosun_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bosun"));
        cmd.args(args)
            .current_dir(self.ws())
            .env("BOSUN_HOME", self.home())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    fn runs(&self) -> Vec<PathBuf> {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(self.home().join("runs"))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        runs.sort();
        runs
    }
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The names `bosun tools list --json` offers (the command must succeed).
fn tool_names(env: &Env) -> Vec<String> {
    let out = env.bosun(&["tools", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap()
}

#[test]
fn exit_codes_follow_the_contract() {
    let env = Env::new();
    let ok = env.bosun(&[
        "tools",
        "call",
        "read_file",
        r#"{"path": "src/lib.rs"}"#,
        "--json",
    ]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert_eq!(
        json(&ok)["output"]["content"],
        "pub fn answer() -> u32 { 42 }\n"
    );

    let missing = env.bosun(&[
        "tools",
        "call",
        "read_file",
        r#"{"path": "nope.rs"}"#,
        "--json",
    ]);
    assert_eq!(code(&missing), 1);
    assert_eq!(json(&missing)["error"]["code"], "not_found");

    assert_eq!(
        code(&env.bosun(&["tools", "call", "read_file", "{not json"])),
        2
    );
    assert_eq!(code(&env.bosun(&["tools", "frobnicate"])), 2);

    env.user_config("[[policy.rules]]\naction = \"builtin.tool.read_file\"\ndecision = \"deny\"\n");
    let denied = env.bosun(&[
        "tools",
        "call",
        "read_file",
        r#"{"path": "src/lib.rs"}"#,
        "--json",
    ]);
    assert_eq!(code(&denied), 3);
    assert_eq!(json(&denied)["error"]["code"], "denied");
}

#[test]
fn ask_without_terminal_leaves_no_side_effect() {
    let env = Env::new();
    let out = env.bosun(&[
        "tools",
        "call",
        "run_command",
        r#"{"program": "touch", "args": ["side-effect.txt"]}"#,
        "--json",
    ]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(json(&out)["error"]["code"], "needs_approval");
    assert!(!env.ws().join("side-effect.txt").exists());

    // With --yes the same call runs: the refusal above was the approval step, not a broken tool.
    let out = env.bosun(&[
        "tools",
        "call",
        "run_command",
        r#"{"program": "touch", "args": ["side-effect.txt"]}"#,
        "--yes",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(env.ws().join("side-effect.txt").exists());
}

/// On a terminal the person is asked, and the call runs once they allow it: `tools call` runs
/// its one call on a single-threaded runtime, where the prompt reads the terminal in place.
#[test]
fn ask_on_a_terminal_runs_the_call_once_allowed() {
    let env = Env::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/pty_call.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_bosun"))
        .arg(env.ws())
        .args(["Allow?", "y", "tools", "call", "run_command"])
        .arg(r#"{"program": "touch", "args": ["allowed.txt"]}"#)
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{shown}", stderr(&out));
    assert!(shown.contains("touch"), "{shown}");
    assert!(env.ws().join("allowed.txt").exists(), "{shown}");
}

#[test]
fn yes_never_overrides_deny() {
    let env = Env::new();
    env.user_config("[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"deny\"\n");
    let out = env.bosun(&[
        "tools",
        "call",
        "run_command",
        r#"{"program": "touch", "args": ["x"]}"#,
        "--yes",
        "--json",
    ]);
    assert_eq!(code(&out), 3);
    assert!(!env.ws().join("x").exists());
}

#[test]
fn project_config_cannot_loosen_user_deny() {
    let env = Env::new();
    env.user_config(&format!(
        "trusted_workspaces = [{:?}]\n[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"deny\"\n",
        env.ws().display().to_string()
    ));
    env.project_config("[[policy.rules]]\naction = \"builtin.tool.*\"\ndecision = \"allow\"\n");
    let out = env.bosun(&[
        "tools",
        "call",
        "run_command",
        r#"{"program": "touch", "args": ["loosened"]}"#,
        "--yes",
        "--json",
    ]);
    assert_eq!(code(&out), 3, "{}", String::from_utf8_lossy(&out.stdout));
    assert!(!env.ws().join("loosened").exists());
}

#[test]
fn untrusted_project_config_can_only_tighten() {
    let env = Env::new();
    env.project_config("[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"allow\"\n[[policy.rules]]\naction = \"builtin.tool.read_file\"\ndecision = \"deny\"\n");
    let loosen = env.bosun(&[
        "tools",
        "call",
        "run_command",
        r#"{"program": "touch", "args": ["y"]}"#,
        "--json",
    ]);
    assert_eq!(
        code(&loosen),
        4,
        "the project must not turn the mode's ask into allow"
    );
    let tighten = env.bosun(&[
        "tools",
        "call",
        "read_file",
        r#"{"path": "src/lib.rs"}"#,
        "--json",
    ]);
    assert_eq!(code(&tighten), 3);
}

#[test]
fn unknown_config_key_is_an_error() {
    let env = Env::new();
    env.user_config("mode = \"workspace-write\"\n\n[limits]\nmax_output_bytez = 10\n");
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("config.toml:4:"), "{err}");
    assert!(err.contains("max_output_bytez"), "{err}");
    // Every command refuses to run on a broken config, not just `config check`.
    assert_eq!(
        code(&env.bosun(&["tools", "call", "read_file", r#"{"path": "src/lib.rs"}"#])),
        2
    );
}

#[test]
fn unknown_project_key_is_an_error() {
    let env = Env::new();
    env.project_config("mode = \"full\"\n");
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(".bosun/config.toml:1:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sandbox_status_names_the_backend_and_refuses_an_unknown_one() {
    let env = Env::new();
    env.user_config("[sandbox]\nbackend = \"bubblewrap\"\n");
    let out = env.bosun(&["sandbox", "status", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let status = json(&out);
    assert_eq!(status["backend"], "bubblewrap", "{status}");
    assert_eq!(status["full"], true, "{status}");
    assert!(status["backend_fallback"].is_null(), "{status}");
    let text = env.bosun(&["sandbox", "status"]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.starts_with("sandbox: full (bubblewrap)"), "{text}");
    assert!(text.contains("bwrap"), "{text}");

    env.user_config("[sandbox]\nbackend = \"firejail\"\n");
    let out = env.bosun(&["sandbox", "status"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("config.toml:2:"), "{err}");
    assert!(
        err.contains("landlock") && err.contains("bubblewrap"),
        "{err}"
    );
}

#[test]
fn hooks_from_config_fire_redacting_results_and_denying_calls() {
    let env = Env::new();
    let key = "AKIAIOSFODNN7EXAMPLE";
    std::fs::write(env.ws().join("creds.txt"), format!("aws key {key}\n")).unwrap();
    let read = || env.bosun(&["tools", "call", "read_file", r#"{"path": "creds.txt"}"#]);
    // Without a hook the key is read as it is.
    let out = read();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(key));

    env.user_config(
        "[[hooks.post_tool_response]]\ntool = \"read_*\"\nredact = ['AKIA[0-9A-Z]{16}']\n",
    );
    let out = read();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !shown.contains(key) && shown.contains("[REDACTED:hook]"),
        "{shown}"
    );
    let newest = env.runs().pop().unwrap();
    let trace = std::fs::read_to_string(newest).unwrap();
    assert!(trace.contains("hook.applied"), "{trace}");
    assert!(!trace.contains(key), "{trace}");

    // A project may add hooks (they only tighten) but not an allowing one.
    env.project_config(
        "[[hooks.pre_tool_call]]\ntool = \"read_file\"\ndecision = \"deny\"\nreason = \"not here\"\n",
    );
    let out = read();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("not here"), "{}", stderr(&out));
    env.project_config("[[hooks.pre_tool_call]]\ndecision = \"allow\"\n");
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("use \"ask\" or \"deny\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_project_may_label_its_paths_but_not_hosts() {
    let env = Env::new();
    env.project_config("[[classification.paths]]\nglob = \"keys/**\"\nlevel = \"RESTRICTED\"\n");
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    env.project_config(
        "[[classification.hosts]]\nhost = \"evil.example\"\nlevel = \"RESTRICTED\"\n",
    );
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("may label its own paths only"),
        "{}",
        stderr(&out)
    );
    env.project_config("[[classification.paths]]\nglob = \"keys/**\"\nlevel = \"TOP\"\n");
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("TOP"), "{}", stderr(&out));
}

#[test]
fn malformed_toml_is_an_error() {
    let env = Env::new();
    env.user_config("[[policy.rules]\naction = \"x\"\n");
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("config.toml:1:"), "{}", stderr(&out));
}

#[test]
fn failing_policy_example_is_a_load_error() {
    let env = Env::new();
    env.user_config(
        "[policy]\nexamples = [{ action = \"builtin.tool.run_command\", expect = \"deny\" }]\n",
    );
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("builtin.tool.run_command"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn secret_in_input_never_reaches_the_trace() {
    let env = Env::new();
    let secret = "ghp_0123456789abcdefSECRET";
    let input = format!(r#"{{"query": "{secret}"}}"#);
    let out = env.bosun_with_env(
        &["tools", "call", "search", &input, "--json"],
        &[("GH_TOKEN", secret)],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let runs = env.runs();
    assert_eq!(runs.len(), 1);
    let trace = std::fs::read_to_string(&runs[0]).unwrap();
    assert!(!trace.contains(secret), "{trace}");
    assert!(trace.contains("[REDACTED:GH_TOKEN]"));
    // Names from config are secrets too.
    env.user_config("[trace]\nredact_env = [\"DATABASE_URL\"]\n");
    let url = "postgres://admin:hunter2@db/prod";
    let out = env.bosun_with_env(
        &[
            "tools",
            "call",
            "search",
            &format!(r#"{{"query": "{url}"}}"#),
        ],
        &[("DATABASE_URL", url)],
    );
    assert_eq!(code(&out), 0);
    let trace = std::fs::read_to_string(env.runs().last().unwrap()).unwrap();
    assert!(!trace.contains(url), "{trace}");
}

#[test]
fn timed_out_command_reports_timed_out() {
    let env = Env::new();
    let out = env.bosun(&[
        "tools",
        "call",
        "run_command",
        r#"{"program": "sleep", "args": ["30"], "timeoutMs": 300}"#,
        "--yes",
        "--json",
    ]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(json(&out)["error"]["code"], "timed_out");
}

#[test]
fn every_call_writes_a_trace_that_inspect_renders() {
    let env = Env::new();
    env.bosun(&["tools", "call", "read_file", r#"{"path": "src/lib.rs"}"#]);
    let out = env.bosun(&["inspect", "last"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "tools call read_file",
        "proposed read_file",
        "decided allow",
        "completed",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    let out = env.bosun(&["inspect", "last", "--json"]);
    let kinds: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["event"]["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "run.started",
            "tool.proposed",
            "tool.decided",
            "tool.started",
            "tool.completed",
            "run.finished"
        ]
    );
    assert_eq!(code(&env.bosun(&["inspect", "no-such-run"])), 2);
}

/// Runs `bosun ARGS` to its end, handing each line of its stdout to `line` as it comes, and
/// returns its exit code, its stderr and its own peak resident set in KiB (from `wait4`, which
/// reports that child alone). The peak of a child includes the memory of the process that
/// started it up to its `exec`, so the caller must not hold much itself: this reads the output
/// a line at a time.
// The child is waited for with `wait4` (for its resource use), which the lint cannot see.
#[allow(unsafe_code, clippy::zombie_processes)]
fn bosun_lines_with_peak_rss(
    env: &Env,
    args: &[&str],
    mut line: impl FnMut(&str),
) -> (i32, String, i64) {
    use std::io::{BufRead as _, Read as _};
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(args)
        .current_dir(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (stdout, mut stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let mut reader = std::io::BufReader::new(stdout);
    let mut text = String::new();
    while reader.read_line(&mut text).unwrap() > 0 {
        line(&text);
        text.clear();
    }
    let mut status = 0;
    // SAFETY: `rusage` is plain data that `wait4` fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: the pid is our own child, not waited for yet; the pointers are to locals.
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, errors.join().unwrap(), usage.ru_maxrss)
}

/// `bosun inspect` reads a trace a line at a time, in text and in JSON: on a trace of 64 MB its
/// peak memory stays below half the file's size, where reading it whole (as it once did) holds
/// the file and more. Memory, not time, so the bound does not depend on the machine's load.
#[test]
fn inspect_streams_a_long_trace_holding_none_of_it() {
    use std::io::{BufRead as _, Write as _};
    let env = Env::new();
    env.bosun(&["tools", "call", "read_file", r#"{"path": "src/lib.rs"}"#]);
    let [path] = env.runs().try_into().unwrap();
    let recorded = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = recorded.lines().collect();
    let (first, call, last) = (lines[0], &lines[1..lines.len() - 1], lines[lines.len() - 1]);
    assert_eq!(call.len(), 4, "{recorded}");
    let mut one_call = call.join("\n");
    one_call.push('\n');
    let size = 64 * 1024 * 1024;
    let calls = size / one_call.len() + 1;
    // Written as it is made: this process's own peak counts in its child's (see above).
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(file, "{first}").unwrap();
    for _ in 0..calls {
        file.write_all(one_call.as_bytes()).unwrap();
    }
    writeln!(file, "{last}").unwrap();
    file.into_inner().unwrap().sync_all().unwrap();
    let half_the_file_kib = i64::try_from(size / 2 / 1024).unwrap();

    let mut expected = std::io::BufReader::new(std::fs::File::open(&path).unwrap()).lines();
    let mut same = true;
    let (code, err, peak) =
        bosun_lines_with_peak_rss(&env, &["inspect", "last", "--json"], |line| {
            same &= expected.next().is_some_and(|e| e.unwrap() + "\n" == line);
        });
    assert_eq!(code, 0, "{err}");
    assert!(
        same && expected.next().is_none(),
        "--json must write the trace as it is"
    );
    assert!(
        peak < half_the_file_kib,
        "inspect --json peaked at {peak} KiB"
    );

    let mut started = 0;
    let (code, err, peak) = bosun_lines_with_peak_rss(
        &env,
        &["inspect", "last", "--kind", "tool.started"],
        |line| {
            started += usize::from(line.contains(" started read_file"));
        },
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(started, calls);
    assert!(
        peak < half_the_file_kib,
        "inspect --kind peaked at {peak} KiB"
    );

    let (mut proposed, mut end) = (0, String::new());
    let (code, err, peak) = bosun_lines_with_peak_rss(&env, &["inspect", "last"], |line| {
        proposed += usize::from(line.contains(" proposed read_file"));
        end = line.to_owned();
    });
    assert_eq!(code, 0, "{err}");
    assert_eq!(proposed, calls);
    assert!(end.trim_end().ends_with("finished: completed"), "{end}");
    assert!(peak < half_the_file_kib, "inspect peaked at {peak} KiB");
}

/// The rendered trace as a person reads it (`bosun inspect`): a snapshot, so a change to the
/// rendering is a reviewed change. Run ids, times, durations and paths vary and are masked.
#[test]
fn the_rendered_trace_reads_for_a_person() {
    let env = Env::new();
    env.bosun(&["tools", "call", "read_file", r#"{"path": "src/lib.rs"}"#]);
    let out = env.bosun(&["inspect", "last"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let json_out = env.bosun(&["inspect", "last", "--json"]);
    let first: Value = serde_json::from_str(
        String::from_utf8_lossy(&json_out.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let run_id = first["run_id"].as_str().unwrap().to_owned();
    let text = String::from_utf8_lossy(&out.stdout)
        .replace(&run_id, "[RUN]")
        .replace(&env.ws().display().to_string(), "[WS]")
        .replace(&env.home().display().to_string(), "[HOME]");
    insta::assert_snapshot!("rendered_trace", mask_numbers(&text));
}

/// Masks what changes from run to run: every run of digits (times, durations, ids) becomes `N`,
/// a hex word of 4 or more characters with a digit in it (a run id's parts) becomes `X`, and
/// the padding inside `[  12 ms]` goes.
fn mask_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.len() >= 4
            && word.chars().all(|c| c.is_ascii_hexdigit())
            && word.chars().any(|c| c.is_ascii_digit())
        {
            out.push('X');
        } else {
            let mut in_digits = false;
            for c in word.chars() {
                if c.is_ascii_digit() {
                    if !in_digits {
                        out.push('N');
                    }
                    in_digits = true;
                } else {
                    in_digits = false;
                    out.push(c);
                }
            }
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    while out.contains("[ ") {
        out = out.replace("[ ", "[");
    }
    out
}

#[test]
fn tools_list_json_describes_every_builtin() {
    let env = Env::new();
    let out = env.bosun(&["tools", "list", "--json"]);
    let list = json(&out);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "list_files",
            "read_file",
            "search",
            "create_file",
            "apply_patch",
            "run_command",
            "update_plan",
            "restrict_self",
            "plugin_scan",
            "plugin_install",
            "plugin_reload",
            "plugin_list"
        ]
    );
    for tool in list.as_array().unwrap() {
        assert!(
            tool["action"]
                .as_str()
                .unwrap()
                .starts_with("builtin.tool.")
        );
        assert_eq!(tool["input_schema"]["type"], "object");
    }
}

fn scrub(text: &str, path: &Path) -> String {
    text.replace(&path.display().to_string(), "[HOME]")
}

#[test]
fn policy_check_explains_the_deciding_rule() {
    let env = Env::new();
    env.user_config("[[policy.rules]]\naction = \"fs.write\"\npath = \"secrets/**\"\ndecision = \"deny\"\nreason = \"keys live in the vault\"\n");
    let out = env.bosun(&[
        "policy",
        "check",
        "builtin.tool.create_file",
        "--capability",
        "fs.write:secrets/a.pem",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    insta::assert_snapshot!(scrub(&String::from_utf8_lossy(&out.stdout), &env.home()));
    let out = env.bosun(&[
        "policy",
        "check",
        "builtin.tool.create_file",
        "--capability",
        "fs.write:src/a.rs",
        "--json",
    ]);
    assert_eq!(json(&out)["decision"], "allow");
    assert_eq!(
        code(&env.bosun(&["policy", "check", "x", "--capability", "fs.exec"])),
        2
    );
}

#[test]
fn policy_check_judges_a_call_in_a_session_holding_a_level_or_untrusted_input() {
    let env = Env::new();
    env.user_config(
        "[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"allow\"\n\n\
         [[policy.rules]]\naction = \"net.http\"\ndecision = \"allow\"\n\n\
         [[classification.hosts]]\nhost = \"vault.example\"\nlevel = \"RESTRICTED\"\n",
    );
    let check = |extra: &[&str]| {
        let mut args = vec![
            "policy",
            "check",
            "builtin.tool.run_command",
            "--capability",
            "net.http:example.com",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = env.bosun(&args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        json(&out)
    };
    // A fresh session may reach the host.
    assert_eq!(check(&[])["decision"], "allow");
    // Holding RESTRICTED data, a PUBLIC host is a write-down, explained as such.
    let held = check(&["--level", "RESTRICTED"]);
    assert_eq!(held["decision"], "ask", "{held}");
    assert!(held.to_string().contains("write-down"), "{held}");
    // Having read untrusted input, an untrusted host asks and names the source.
    let tainted = check(&["--untrusted", "a web page"]);
    assert_eq!(tainted["decision"], "ask", "{tainted}");
    assert!(tainted.to_string().contains("a web page"), "{tainted}");
    // An unknown level is an error that names the levels.
    let out = env.bosun(&[
        "policy",
        "check",
        "builtin.tool.run_command",
        "--level",
        "SECRET",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("RESTRICTED"), "{}", stderr(&out));
}

#[test]
fn no_command_opens_the_terminal_ui_only_on_a_terminal() {
    let env = Env::new();
    let out = env.bosun(&[]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("needs a terminal; from a script use `bosun run \"task\"`"),
        "{err}"
    );
    // The interactive options belong to no subcommand.
    let out = env.bosun(&["--resume", "last", "tools", "list"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

mod acp;
mod binary;
mod chock;
mod claude;
mod claude_bin;
mod claude_components;
mod claude_config;
mod claude_hooks;
mod claude_https;
mod claude_labels;
mod claude_mcp;
mod claude_sample;
mod clients;
mod config_layers;
mod first_hour;
mod fleet;
mod hardening;
mod hostile_acp;
mod js;
mod managed_plugins;
mod mcp_client;
mod mcp_trust;
mod model_levels;
/// The OCI crate's real-registry helper, shared rather than copied.
#[path = "../../../oci/tests/all/peers.rs"]
#[allow(dead_code)]
mod oci_peers;
mod plugins;
mod processes;
mod prompt_frames;
mod registry;
mod registry_layout;
mod registry_oci;
mod resume;
mod review;
mod run;
mod serve;
mod skills;
mod subagents;
mod telemetry;
mod workspace_trust;
