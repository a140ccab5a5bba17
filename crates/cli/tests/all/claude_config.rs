//! A Claude Code plugin's `userConfig`, asked when it is installed: on a terminal (a real
//! pseudo-terminal here) each value in turn, a secret without echo; without one from
//! `--config KEY=VALUE`, a missing required value refusing the install with the fix. Answers
//! that are not secrets land in the user's config, secrets in an owner-only file.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Env, code, stderr};

const ID: &str = "configured@local";

/// A marketplace `local` with the plugin `configured`, which asks for a region (required), a
/// number of retries (1–5, required), a token (a required secret) and a verbosity (default
/// false).
fn configured_marketplace(env: &Env) {
    let dir = env.dir.path().join("market");
    let plugin = dir.join("plugins/configured");
    std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(plugin.join(".claude-plugin")).unwrap();
    std::fs::write(
        dir.join(".claude-plugin/marketplace.json"),
        json!({"name": "local", "owner": {"name": "t"},
            "plugins": [{"name": "configured", "source": "./plugins/configured"}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        plugin.join(".claude-plugin/plugin.json"),
        json!({"name": "configured", "userConfig": {
            "region": {"type": "string", "title": "Region", "description": "Where the service runs", "required": true},
            "retries": {"type": "number", "title": "Retries", "description": "How often to retry", "required": true, "min": 1, "max": 5},
            "token": {"type": "string", "title": "Token", "description": "The service's API token", "required": true, "sensitive": true},
            "verbose": {"type": "boolean", "title": "Verbose", "description": "Say more", "default": false}
        }})
        .to_string(),
    )
    .unwrap();
    env.user_config(&format!(
        "# kept\n[registries.local]\nkind = \"claude-marketplace\"\npath = \"{}\"\n",
        dir.display()
    ));
}

fn installed(env: &Env) -> bool {
    std::fs::read_to_string(env.home().join("claude/installed.json")).is_ok_and(|t| t.contains(ID))
}

fn secrets_path(env: &Env) -> std::path::PathBuf {
    env.home().join(format!("claude/secrets/{ID}.json"))
}

/// The answers landed where they belong: the public ones in config.toml (its comment kept),
/// the secret only in the owner-only secrets file.
fn assert_kept(env: &Env, region: &str, retries: i64, token: &str) {
    use std::os::unix::fs::PermissionsExt;
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(config.starts_with("# kept"), "{config}");
    assert!(
        !config.contains(token),
        "the secret is in config.toml: {config}"
    );
    let parsed: toml::Table = config.parse().unwrap();
    let answers = &parsed["claude"]["plugins"][ID]["config"];
    assert_eq!(answers["region"].as_str(), Some(region), "{config}");
    assert_eq!(answers["retries"].as_integer(), Some(retries), "{config}");
    let secrets: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(secrets_path(env)).unwrap()).unwrap();
    assert_eq!(secrets, json!({"token": token}));
    let mode = std::fs::metadata(secrets_path(env))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn without_a_terminal_user_config_comes_from_flags_and_a_missing_value_refuses_with_the_fix() {
    let env = Env::new();
    configured_marketplace(&env);
    let out = env.bosun(&["plugins", "install", ID, "--yes", "--config", "region=eu"]);
    assert_ne!(code(&out), 0);
    let err = stderr(&out);
    assert!(
        err.contains("--config retries=VALUE --config token=VALUE")
            && err.contains("`token` (Token)"),
        "{err}"
    );
    assert!(!installed(&env), "installed without its required values");

    let out = env.bosun(&[
        "plugins",
        "install",
        ID,
        "--yes",
        "--config",
        "region=eu",
        "--config",
        "retries=9",
        "--config",
        "token=t0ken",
    ]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("retries: 9 is outside 1..5"),
        "{}",
        stderr(&out)
    );
    assert!(!installed(&env));

    let out = env.bosun(&["plugins", "install", ID, "--yes", "--config", "colour=red"]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("asks for no `colour`"),
        "{}",
        stderr(&out)
    );

    let out = env.bosun(&[
        "plugins",
        "install",
        ID,
        "--yes",
        "--config",
        "region=eu",
        "--config",
        "retries=3",
        "--config",
        "token=t0ken-xyz",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(installed(&env));
    assert_kept(&env, "eu", 3, "t0ken-xyz");
}

/// What a secret's question ends with.
const SECRET_QUESTION: &str = "not shown): ";

/// Runs `bosun args` on a new pseudo-terminal, answering each `(prompt, answer)` in turn when
/// the prompt's text has appeared; returns everything the terminal showed and the exit code.
/// Asserts that the terminal's echo was already off when a secret's question showed.
#[allow(unsafe_code)]
fn on_terminal(env: &Env, args: &[&str], script: &[(&str, &str)]) -> (String, i32) {
    // SAFETY: openpty fills two descriptors it opened, each then owned by one Rust value.
    let (mut master, slave) = unsafe {
        let (mut m, mut s) = (0, 0);
        assert_eq!(
            libc::openpty(
                &mut m,
                &mut s,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null()
            ),
            0
        );
        (std::fs::File::from_raw_fd(m), OwnedFd::from_raw_fd(s))
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(args)
        .current_dir(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let echoing = Arc::new(Mutex::new(None));
    let reader = {
        let seen = seen.clone();
        let echoing = echoing.clone();
        let mut master = master.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut questions_seen = 0;
            // EIO once the child has gone and the slave is closed.
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut seen = seen.lock().unwrap();
                seen.push_str(&String::from_utf8_lossy(&buf[..n]));
                // The terminal's mode as the question is read, before anyone answers it (on
                // Linux the master reads the slave's settings).
                if seen.matches(SECRET_QUESTION).count() > questions_seen {
                    questions_seen = seen.matches(SECRET_QUESTION).count();
                    // SAFETY: tcgetattr fills the termios it is given from an open descriptor.
                    let echo = unsafe {
                        let mut mode: libc::termios = std::mem::zeroed();
                        assert_eq!(libc::tcgetattr(master.as_raw_fd(), &mut mode), 0);
                        mode.c_lflag & libc::ECHO != 0
                    };
                    if echo {
                        echoing.lock().unwrap().get_or_insert_with(|| seen.clone());
                    }
                }
            }
        })
    };
    let mut from = 0;
    for (prompt, answer) in script {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = seen.lock().unwrap().clone();
            if let Some(at) = text[from..].find(prompt) {
                from += at + prompt.len();
                break;
            }
            assert!(
                Instant::now() < deadline,
                "`{prompt}` never asked; the terminal showed:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Answered the moment the question shows, as a paste would: a secret's question only
        // shows once the echo is off.
        master.write_all(format!("{answer}\r").as_bytes()).unwrap();
    }
    let status = child.wait().unwrap();
    drop(master);
    let _ = reader.join();
    if let Some(shown) = echoing.lock().unwrap().take() {
        panic!("a secret's question showed with the echo on:\n{shown}");
    }
    let text = seen.lock().unwrap().clone();
    (text, status.code().unwrap_or(-1))
}

#[test]
fn on_a_terminal_each_value_is_asked_and_a_secret_is_not_echoed() {
    let env = Env::new();
    configured_marketplace(&env);
    let (shown, rc) = on_terminal(
        &env,
        &["plugins", "install", ID],
        &[
            ("[y/N]", "y"),
            ("(region)", "eu-west"),
            ("(retries)", "7"),
            ("outside 1..5", "2"),
            (SECRET_QUESTION, "s3cr3t-value"),
            ("(verbose)", ""),
        ],
    );
    assert_eq!(rc, 0, "{shown}");
    assert!(
        shown.contains("eu-west"),
        "a plain answer is echoed: {shown}"
    );
    assert!(
        !shown.contains("s3cr3t-value"),
        "the secret was echoed: {shown}"
    );
    assert!(shown.contains("[false]"), "the default is shown: {shown}");
    assert_kept(&env, "eu-west", 2, "s3cr3t-value");
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(config.contains("verbose = false"), "{config}");
}
