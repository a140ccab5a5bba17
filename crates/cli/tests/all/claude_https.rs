//! A Claude Code marketplace published as one `marketplace.json` over HTTPS, through the binary
//! against a loopback HTTPS server (`tests/peers/https_marketplace.py`) whose certificate the
//! test CA (`tests/peers/tls/ca.pem`, given as `SSL_CERT_FILE`) issued: listed, its git sources
//! installed, its relative sources refused saying why; and hostile servers — one that sends
//! without end, one that never answers, one that redirects to another origin — stopped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;

use super::{Env, code, json, stderr};

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

fn trust() -> (&'static str, String) {
    (
        "SSL_CERT_FILE",
        peers().join("tls/ca.pem").display().to_string(),
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(port: u16, what: &str) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what} did not start on port {port}");
}

/// A child process stopped on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The HTTPS server serving `root` on a free port.
fn https(root: &Path) -> (Running, u16) {
    let port = free_port();
    let child = Command::new("python3")
        .arg(peers().join("https_marketplace.py"))
        .arg(root)
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    wait_for(port, "the HTTPS server");
    (running, port)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository `greeter.git` holding a one-command plugin, served by `git daemon` on
/// 127.0.0.1; its port and commit.
fn git_plugin(base: &Path) -> (Running, u16, String) {
    let work = base.join("greeter");
    std::fs::create_dir_all(work.join("commands")).unwrap();
    std::fs::write(
        work.join("commands/hello.md"),
        "---\ndescription: Greets\n---\n\nSay hello to $ARGUMENTS.\n",
    )
    .unwrap();
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "greeter"]);
    let sha = git(&work, &["rev-parse", "HEAD"]);
    let served = base.join("served");
    std::fs::create_dir_all(&served).unwrap();
    git(
        base,
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            served.join("greeter.git").to_str().unwrap(),
        ],
    );
    let port = free_port();
    let child = Command::new("git")
        .args([
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--listen=127.0.0.1",
            &format!("--port={port}"),
            &format!("--base-path={}", served.display()),
            served.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    wait_for(port, "git daemon");
    (running, port, sha)
}

fn configure(env: &Env, url: &str, extra: &str) {
    env.user_config(&format!(
        "[registries.web]\nkind = \"claude-marketplace\"\nurl = \"{url}\"\n{extra}"
    ));
}

#[test]
fn a_marketplace_over_https_lists_installs_its_git_sources_and_refuses_relative_ones() {
    let env = Env::new();
    let base = env.dir.path().join("net");
    let (_daemon, git_port, sha) = git_plugin(&base);
    let root = base.join("site");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("marketplace.json"),
        json!({"name": "web", "owner": {"name": "t"}, "plugins": [
            {"name": "greeter", "description": "Says hello",
             "source": {"source": "url", "url": format!("git://127.0.0.1:{git_port}/greeter.git"), "sha": sha}},
            {"name": "nearby", "description": "Next to the file", "source": "./plugins/nearby"},
        ]})
        .to_string(),
    )
    .unwrap();
    let (_server, port) = https(&root);
    let (name, ca) = trust();
    let with_ca = [(name, ca.as_str())];

    // A redirect within the origin is followed.
    configure(
        &env,
        &format!("https://127.0.0.1:{port}/moved/marketplace.json"),
        "",
    );
    let out = env.bosun_with_env(&["plugins", "search", "--json"], &with_ca);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let names: Vec<String> = json(&out)["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["source"] == "web")
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["greeter", "nearby"], "{}", stderr(&out));

    // Without the test CA, the certificate is not trusted and nothing is listed.
    let out = env.bosun(&["plugins", "search", "--json"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(!listed.contains("greeter"), "{listed}");
    assert!(
        stderr(&out).contains("certificate") || stderr(&out).contains("UnknownIssuer"),
        "{}",
        stderr(&out)
    );

    // A git source installs, at its pinned commit, as from any marketplace.
    let out = env.bosun_with_env(
        &["plugins", "install", "greeter@web", "--yes", "--json"],
        &with_ca,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let record = json(&out)["installed"].clone();
    assert_eq!(record["id"], "greeter@web");
    assert_eq!(record["commit"], sha.as_str());
    let digest = record["digest"].as_str().unwrap();
    assert!(
        env.home()
            .join("claude/cache")
            .join(digest)
            .join("commands/hello.md")
            .is_file()
    );

    // A relative source has no folder to come from: refused, saying why and what to do.
    let out = env.bosun_with_env(&["plugins", "install", "nearby@web", "--yes"], &with_ca);
    assert_ne!(code(&out), 0);
    let said = stderr(&out);
    assert!(
        said.contains("fetched as one file over HTTPS") && said.contains("git repository"),
        "{said}"
    );
}

#[test]
fn a_marketplace_server_that_oversends_hangs_or_redirects_elsewhere_is_stopped() {
    let env = Env::new();
    let root = env.dir.path().join("site");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("marketplace.json"),
        json!({"name": "web", "owner": {"name": "t"}, "plugins": [
            {"name": "nearby", "source": "./plugins/nearby"}]})
        .to_string(),
    )
    .unwrap();
    let (_server, port) = https(&root);
    let (name, ca) = trust();
    let with_ca = [(name, ca.as_str())];
    let refused = |path: &str, extra: &str| -> String {
        configure(&env, &format!("https://127.0.0.1:{port}/{path}"), extra);
        let started = std::time::Instant::now();
        let out = env.bosun_with_env(&["plugins", "install", "nearby@web", "--yes"], &with_ca);
        assert_ne!(code(&out), 0, "{path}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{path} was not stopped"
        );
        stderr(&out)
    };

    let said = refused("endless/marketplace.json", "");
    assert!(said.contains("larger than 4194304 bytes"), "{said}");

    let said = refused("hang/marketplace.json", "timeout_secs = 2\n");
    assert!(said.contains("did not arrive within 2 s"), "{said}");

    let said = refused("elsewhere/marketplace.json", "");
    assert!(
        said.contains("another origin") && said.contains("https://localhost:"),
        "{said}"
    );
    let asked = std::fs::read_to_string(env.dir.path().join("requests.txt")).unwrap();
    assert!(
        !asked.lines().any(|l| l == "/marketplace.json"),
        "the other origin was asked: {asked}"
    );

    // Plain http:// off loopback is refused before anything is sent.
    configure(&env, "http://example.com/marketplace.json", "");
    let out = env.bosun(&["plugins", "search"]);
    assert!(
        stderr(&out).contains("must be https://"),
        "{}",
        stderr(&out)
    );
}
