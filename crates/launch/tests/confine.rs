//! Real children under the launcher, each attacking one layer. Every test would fail if its
//! layer were removed: the attack is shown to work unconfined first, where that is safe.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;

use bosun_launch::{Backend, Confinement, Launcher, Network, SandboxConfig};

struct Rig {
    _dir: tempfile::TempDir,
    root: PathBuf,
    workspace: PathBuf,
}

fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let workspace = root.join("ws");
    std::fs::create_dir_all(workspace.join(".git")).unwrap();
    std::fs::write(workspace.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(root.join("home/.ssh")).unwrap();
    std::fs::write(root.join("home/.ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    std::fs::create_dir_all(root.join("bosun-home")).unwrap();
    std::fs::write(root.join("bosun-home/trust.toml"), "trusted = true").unwrap();
    Rig {
        _dir: dir,
        root,
        workspace,
    }
}

fn full_launcher(backend: Backend, config: SandboxConfig) -> Launcher {
    let launcher = Launcher::new(SandboxConfig { backend, ..config });
    assert!(
        launcher.status().is_full() && launcher.status().backend() == backend,
        "these tests need every layer, with bubblewrap installed for its backend \
         (scripts/setup installs it); this machine has:\n{}",
        launcher.status()
    );
    launcher
}

/// What a confined child is told when it reaches for a path it was not given: Landlock refuses
/// it; under bubblewrap it does not exist.
fn refusal(backend: Backend) -> &'static str {
    match backend {
        Backend::Landlock => "Permission denied",
        Backend::Bubblewrap => "No such file",
    }
}

/// Each test runs once per backend.
macro_rules! per_backend {
    ($($(#[$meta:meta])* $name:ident),* $(,)?) => {
        mod landlock {
            $( $(#[$meta])* #[tokio::test] async fn $name() { super::$name(super::Backend::Landlock).await } )*
        }
        mod bubblewrap {
            $( $(#[$meta])* #[tokio::test] async fn $name() { super::$name(super::Backend::Bubblewrap).await } )*
        }
    };
}

impl Rig {
    fn confinement(&self, network: Network) -> Confinement {
        let mut confinement = Confinement::new(self.workspace.clone(), network);
        confinement.protected = vec![self.workspace.join(".git")];
        confinement
    }

    /// Runs `sh -c script` confined (or not, with `None`), in the workspace.
    async fn sh(&self, launcher: Option<&Launcher>, network: Network, script: &str) -> Output {
        self.run(launcher, network, "/bin/sh", &["-c", script])
            .await
    }

    async fn run(
        &self,
        launcher: Option<&Launcher>,
        network: Network,
        program: &str,
        args: &[&str],
    ) -> Output {
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(&self.workspace)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .kill_on_drop(true);
        let _jail = launcher.map(|launcher| {
            launcher
                .confine(&mut command, &self.confinement(network))
                .unwrap()
        });
        tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
            .await
            .expect("the child finished within a minute")
            .unwrap()
    }
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

async fn writes_land_in_the_workspace_and_tmpdir_only(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let outside = rig.root.join("outside.txt");
    let script = format!(
        "echo in > made.txt && echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && \
         case \"$TMPDIR\" in */bosun-run-*) echo private-tmpdir;; esac && \
         (echo out > '{}' && echo WROTE-OUTSIDE; true) && \
         (echo shared > /tmp/bosun-sandbox-shared-tmp && echo WROTE-TMP; true)",
        outside.display()
    );
    let output = rig.sh(Some(&launcher), Network::Off, &script).await;
    let seen = text(&output);
    assert!(output.status.success(), "{seen}");
    assert!(rig.workspace.join("made.txt").exists(), "{seen}");
    assert!(seen.contains("private-tmpdir"), "{seen}");
    assert!(!outside.exists(), "{seen}");
    let shared = Path::new("/tmp/bosun-sandbox-shared-tmp");
    assert!(!shared.exists(), "{seen}");
    match backend {
        // Refused outright.
        Backend::Landlock => {
            assert!(
                !seen.contains("WROTE-OUTSIDE") && !seen.contains("WROTE-TMP"),
                "{seen}"
            );
        }
        // The child's /tmp is its own tmpfs: the writes land there and vanish with it.
        Backend::Bubblewrap => assert!(seen.contains("WROTE-TMP"), "{seen}"),
    }
}

async fn the_private_tmpdir_is_removed_with_the_jail(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let mut command = tokio::process::Command::new("/bin/true");
    let jail = launcher
        .confine(&mut command, &rig.confinement(Network::Off))
        .unwrap();
    let tmp = jail.tmp_dir().unwrap().to_path_buf();
    assert!(tmp.is_dir());
    command.status().await.unwrap();
    drop(jail);
    assert!(!tmp.exists());
}

async fn protected_paths_stay_read_only_inside_a_writable_workspace(backend: Backend) {
    let control = rig();
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let attack = "echo '[core] hooksPath = /tmp/evil' >> .git/config; \
                  touch .git/hooks-planted; echo fine > ok.txt";
    // Unconfined, the attack works: the layer is what stops it.
    let output = control.sh(None, Network::Off, attack).await;
    assert!(
        std::fs::read_to_string(control.workspace.join(".git/config"))
            .unwrap()
            .contains("hooksPath"),
        "{}",
        text(&output)
    );

    let output = rig.sh(Some(&launcher), Network::Off, attack).await;
    let seen = text(&output);
    assert_eq!(
        std::fs::read_to_string(rig.workspace.join(".git/config")).unwrap(),
        "[core]\n",
        "{seen}"
    );
    assert!(!rig.workspace.join(".git/hooks-planted").exists(), "{seen}");
    assert!(seen.contains("Read-only file system"), "{seen}");
    assert!(rig.workspace.join("ok.txt").exists(), "{seen}");
}

async fn secrets_outside_the_workspace_cannot_be_read(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    for secret in [
        rig.root.join("home/.ssh/id_ed25519"),
        rig.root.join("bosun-home/trust.toml"),
    ] {
        let script = format!("cat '{}'", secret.display());
        let control = rig.sh(None, Network::Off, &script).await;
        assert!(control.status.success(), "{}", text(&control));
        let output = rig.sh(Some(&launcher), Network::Off, &script).await;
        let seen = text(&output);
        assert!(!output.status.success(), "{seen}");
        assert!(seen.contains(refusal(backend)), "{seen}");
        assert!(
            !seen.contains("PRIVATE KEY") && !seen.contains("trusted"),
            "{seen}"
        );
    }
}

async fn a_path_granted_in_config_is_readable_and_writable(backend: Backend) {
    let rig = rig();
    let cache = rig.root.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let launcher = full_launcher(
        backend,
        SandboxConfig {
            write: vec![cache.display().to_string()],
            ..SandboxConfig::default()
        },
    );
    let script = format!("echo hit > '{}/entry' && cat '{0}/entry'", cache.display());
    let output = rig.sh(Some(&launcher), Network::Off, &script).await;
    assert!(output.status.success(), "{}", text(&output));
    assert!(cache.join("entry").exists());
}

async fn the_parents_environment_cannot_be_read(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    // The test process is the child's parent, and its environment has PATH at least. Its pid
    // is named outright: inside a PID namespace $PPID would say nothing.
    let script = format!(
        "cat /proc/{}/environ | tr '\\0' '\\n' | grep -c PATH=",
        std::process::id()
    );
    let control = rig.sh(None, Network::Off, &script).await;
    assert!(control.status.success(), "{}", text(&control));
    let output = rig.sh(Some(&launcher), Network::Off, &script).await;
    let seen = text(&output);
    assert!(seen.contains(refusal(backend)), "{seen}");
    assert!(
        String::from_utf8_lossy(&output.stdout).trim() == "0",
        "{seen}"
    );
}

const UNIX_CONNECT: &str = r#"
import socket, sys
for name in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(name.replace("@", "\0", 1))
        print("connected", name)
    except OSError as e:
        print("refused", name, e.errno)
"#;

/// A Unix socket listening outside the sandbox — in the abstract namespace (an X server's,
/// a D-Bus session's), and, under bubblewrap, by path outside the grants — cannot be connected
/// to, with a network grant (the host's network namespace shared) or without. Unconfined, the
/// same connects succeed. Path-named sockets under the Landlock backend are not covered: the
/// kernel's Landlock (ABI 7 here) has no rule for them (see `sandbox status`).
async fn a_unix_socket_outside_cannot_be_reached(backend: Backend) {
    use std::os::linux::net::SocketAddrExt as _;
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let name = format!("bosun-test-{}-{backend:?}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
    let _abstract = std::os::unix::net::UnixListener::bind_addr(&address).unwrap();
    let path = rig.root.join("home/agent.sock");
    let _by_path = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let abstract_name = format!("@{name}");
    let path_name = path.display().to_string();
    let mut names = vec![abstract_name.as_str()];
    if backend == Backend::Bubblewrap {
        names.push(&path_name);
    }
    let args = |names: &[&str]| {
        let mut args = vec!["-c", UNIX_CONNECT];
        args.extend_from_slice(names);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let args = args(&names);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let control = rig.run(None, Network::Off, python(), &args).await;
    for name in &names {
        assert!(
            text(&control).contains(&format!("connected {name}")),
            "{}",
            text(&control)
        );
    }
    for network in [Network::Off, Network::TcpPorts(vec![9])] {
        let output = rig.run(Some(&launcher), network, python(), &args).await;
        let seen = text(&output);
        for name in &names {
            assert!(seen.contains(&format!("refused {name}")), "{seen}");
        }
    }
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

const UDP: &str = r#"
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 9))
    print("sent")
except OSError as e:
    print("refused", e.errno)
"#;

fn python() -> &'static str {
    // The system's interpreter: a user-level one (pyenv) lives in $HOME, which is not granted.
    "/usr/bin/python3"
}

async fn no_network_without_a_grant(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port().to_string();
    let control = rig
        .run(None, Network::Off, python(), &["-c", CONNECT, &port])
        .await;
    assert!(text(&control).contains("connected"), "{}", text(&control));

    let output = rig
        .run(
            Some(&launcher),
            Network::Off,
            python(),
            &["-c", CONNECT, &port],
        )
        .await;
    let seen = text(&output);
    assert!(seen.contains(&format!("refused {port} 1")), "{seen}");
    let output = rig
        .run(Some(&launcher), Network::Off, python(), &["-c", UDP])
        .await;
    let seen = text(&output);
    assert!(seen.contains("refused 1"), "{seen}");
}

async fn a_grant_opens_exactly_the_granted_port(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let granted = TcpListener::bind("127.0.0.1:0").unwrap();
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let granted_port = granted.local_addr().unwrap().port();
    let other_port = other.local_addr().unwrap().port();
    let output = rig
        .run(
            Some(&launcher),
            Network::TcpPorts(vec![granted_port]),
            python(),
            &[
                "-c",
                CONNECT,
                &granted_port.to_string(),
                &other_port.to_string(),
            ],
        )
        .await;
    let seen = text(&output);
    assert!(
        seen.contains(&format!("connected {granted_port}")),
        "{seen}"
    );
    assert!(
        seen.contains(&format!("refused {other_port} 13")),
        "EACCES from Landlock: {seen}"
    );
}

async fn a_fork_bomb_meets_the_process_limit_and_dies_with_the_jail(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(
        backend,
        SandboxConfig {
            max_processes: 32,
            ..SandboxConfig::default()
        },
    );
    // 200 sleepers in the background; only the limit can stop them.
    let script = "n=0; while [ $n -lt 200 ]; do \
                  sleep 30 >/dev/null 2>&1 & n=$((n+1)); done; echo started";
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .args(["-c", script])
        .current_dir(&rig.workspace)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .kill_on_drop(true);
    let jail = launcher
        .confine(&mut command, &rig.confinement(Network::Off))
        .unwrap();
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    // Waits for the shell alone: a pipe stays open while a sleeper (or, under bubblewrap, the
    // namespace's init) holds it.
    child.wait().await.unwrap();
    // The shell has exited; its sleepers live on until the jail goes, never more than the limit.
    let before = sleepers_in(&rig.workspace);
    assert!((1..=32).contains(&before), "{before} sleepers");
    drop(jail);
    let survivors = sleepers_in(&rig.workspace);
    let output = child.wait_with_output().await.unwrap();
    let seen = text(&output);
    assert!(
        seen.contains("fork") || seen.contains("Resource temporarily unavailable"),
        "the shell saw forks fail: {seen}"
    );
    assert_eq!(survivors, 0, "{seen}");
}

/// Live processes whose working directory is `dir`.
fn sleepers_in(dir: &Path) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd == dir)
                && std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| !s.contains(") Z "))
        })
        .count()
}

async fn a_child_cannot_leave_its_process_group_or_trace(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let control = rig
        .run(None, Network::Off, "/usr/bin/setsid", &["/bin/true"])
        .await;
    assert!(control.status.success(), "{}", text(&control));
    let output = rig
        .run(
            Some(&launcher),
            Network::Off,
            "/usr/bin/setsid",
            &["--wait", "/bin/true"],
        )
        .await;
    assert!(!output.status.success(), "{}", text(&output));
    let script = "import ctypes; print('ptrace', ctypes.CDLL(None).ptrace(16, 1, 0, 0))";
    let output = rig
        .run(Some(&launcher), Network::Off, python(), &["-c", script])
        .await;
    assert!(text(&output).contains("ptrace -1"), "{}", text(&output));
}

#[cfg(target_arch = "x86_64")]
async fn x32_system_calls_are_refused_too(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    // getpid with the x32 bit: outside the sandbox the kernel answers (ENOSYS where x32 is off);
    // inside, the filter refuses it before the kernel looks (EPERM).
    let script = "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); \
                  r = libc.syscall(0x40000000 | 39); print('result', r, ctypes.get_errno())";
    let control = rig.run(None, Network::Off, python(), &["-c", script]).await;
    assert!(
        !text(&control).contains("result -1 1\n"),
        "{}",
        text(&control)
    );
    let output = rig
        .run(Some(&launcher), Network::Off, python(), &["-c", script])
        .await;
    assert!(text(&output).contains("result -1 1\n"), "{}", text(&output));
}

async fn require_refuses_nothing_on_a_full_machine_and_off_confines_nothing(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(
        backend,
        SandboxConfig {
            require: true,
            ..SandboxConfig::default()
        },
    );
    let output = rig.sh(Some(&launcher), Network::Off, "echo ok").await;
    assert!(output.status.success(), "{}", text(&output));

    let off = Launcher::unconfined();
    assert!(off.status().summary().starts_with("sandbox: off"));
    let secret = rig.root.join("home/.ssh/id_ed25519");
    let output = rig
        .sh(
            Some(&off),
            Network::Off,
            &format!("cat '{}'", secret.display()),
        )
        .await;
    assert!(text(&output).contains("PRIVATE KEY"));
}

/// A child's environment is exactly what its command sets — on every backend, and with the
/// sandbox off — never Bosun's own (where a provider's API key lives). `bwrap` is started before
/// std puts the command's environment in place, so it used to be handed Bosun's whole
/// environment, and passed it on.
async fn the_child_gets_only_the_variables_its_command_sets(backend: Backend) {
    let rig = rig();
    // Something this test process has and the child must not: what cargo and nextest set,
    // and HOME.
    let inherited: Vec<String> = std::env::vars()
        .map(|(name, _)| name)
        .filter(|name| !matches!(name.as_str(), "PATH" | "TMPDIR" | "TMP" | "TEMP" | "PWD"))
        .collect();
    assert!(!inherited.is_empty());
    let confined = full_launcher(backend, SandboxConfig::default());
    let off = Launcher::unconfined();
    for launcher in [&confined, &off] {
        for cleared in [true, false] {
            let mut command = tokio::process::Command::new("/usr/bin/env");
            if cleared {
                command.env_clear();
            }
            command
                .current_dir(&rig.workspace)
                .env("PATH", "/usr/bin:/bin")
                .env("BOSUN_TEST_GIVEN", "given")
                .kill_on_drop(true);
            let _jail = launcher
                .confine(&mut command, &rig.confinement(Network::Off))
                .unwrap();
            let output = command.output().await.unwrap();
            let out = format!("{}\n{}", launcher.status().summary(), text(&output));
            let names: Vec<&str> = std::str::from_utf8(&output.stdout)
                .unwrap()
                .lines()
                .filter_map(|line| line.split_once('=').map(|(name, _)| name))
                .collect();
            assert!(names.contains(&"BOSUN_TEST_GIVEN"), "{out}");
            for name in &names {
                assert!(
                    matches!(
                        *name,
                        "PATH" | "BOSUN_TEST_GIVEN" | "TMPDIR" | "TMP" | "TEMP" | "PWD"
                    ),
                    "{name} reached the child (cleared: {cleared}): {out}"
                );
            }
            assert!(
                !inherited.iter().any(|name| names.contains(&name.as_str())),
                "{out}"
            );
        }
    }
}

/// A program planted in the workspace (the child's working directory) is never what a program
/// name resolves to through a relative `PATH` entry (`.`, empty, `bin`), neither for the child
/// the launcher starts nor for what that child starts in turn, confined or not; the same name
/// on an absolute entry is found. Without the launcher's rewrite of `PATH`, each lookup below
/// runs the planted file (the unconfined `sh` shows that first).
async fn a_relative_path_entry_never_finds_a_program_in_the_workspace(backend: Backend) {
    use std::os::unix::fs::PermissionsExt as _;

    let rig = rig();
    let planted = |dir: &Path| {
        std::fs::create_dir_all(dir).unwrap();
        let program = dir.join("bosun-planted");
        std::fs::write(&program, "#!/bin/sh\necho PLANTED-RAN\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    planted(&rig.workspace);
    planted(&rig.workspace.join("bin"));
    let path = ".:bin::/usr/bin:/bin";

    // Unconfined and not through the launcher: the relative entries find the planted file.
    let mut bare = tokio::process::Command::new("/bin/sh");
    bare.args(["-c", "bosun-planted; echo \"PATH=$PATH\""])
        .current_dir(&rig.workspace)
        .env_clear()
        .env("PATH", path);
    let output = bare.output().await.unwrap();
    assert!(text(&output).contains("PLANTED-RAN"), "{}", text(&output));

    let confined = full_launcher(backend, SandboxConfig::default());
    let off = Launcher::unconfined();
    for launcher in [&confined, &off] {
        // The program named directly.
        let mut command = tokio::process::Command::new("bosun-planted");
        command
            .current_dir(&rig.workspace)
            .env_clear()
            .env("PATH", path)
            .kill_on_drop(true);
        match launcher.spawn(command, &rig.confinement(Network::Off)) {
            Err(bosun_launch::LaunchError::Spawn(e)) => {
                assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}")
            }
            // Under bubblewrap the lookup happens inside, and bwrap reports it.
            Ok((child, _jail)) => {
                let output = child.wait_with_output().await.unwrap();
                let out = text(&output);
                assert!(!out.contains("PLANTED-RAN"), "{out}");
                assert!(!output.status.success(), "{out}");
            }
            Err(other) => panic!("{other}"),
        }

        // What the child starts by name; it still finds programs on absolute entries.
        let mut command = tokio::process::Command::new("sh");
        command
            .args([
                "-c",
                "bosun-planted; echo \"PATH=$PATH\"; uname >/dev/null && echo ABSOLUTE-RAN",
            ])
            .current_dir(&rig.workspace)
            .env_clear()
            .env("PATH", path)
            .kill_on_drop(true);
        let _jail = launcher
            .confine(&mut command, &rig.confinement(Network::Off))
            .unwrap();
        let output = command.output().await.unwrap();
        let out = format!("{}\n{}", launcher.status().summary(), text(&output));
        assert!(!out.contains("PLANTED-RAN"), "{out}");
        assert!(out.contains("PATH=/usr/bin:/bin\n"), "{out}");
        assert!(out.contains("ABSOLUTE-RAN"), "{out}");
    }
}

async fn a_file_the_command_line_names_is_readable_but_nothing_private(backend: Backend) {
    let rig = rig();
    let srv = rig.root.join("srv");
    std::fs::create_dir_all(&srv).unwrap();
    std::fs::write(
        srv.join("script.sh"),
        "echo from-script; cat \"$(dirname \"$0\")/lib.txt\"\n",
    )
    .unwrap();
    std::fs::write(srv.join("lib.txt"), "from-lib\n").unwrap();
    let key = rig.root.join("home/.ssh/id_ed25519");
    let launcher = full_launcher(backend, SandboxConfig::default()).private(rig.root.join("home"));
    let run = |args: Vec<String>| {
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .args(&args)
            .current_dir(&rig.workspace)
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        let mut confinement = rig.confinement(Network::Off);
        confinement.name_arguments(&args);
        let jail = launcher.confine(&mut command, &confinement).unwrap();
        async move {
            let output = command.output().await.unwrap();
            drop(jail);
            text(&output)
        }
    };
    // Named: the script and, its directory being nobody's private place, its neighbours.
    let seen = run(vec![srv.join("script.sh").display().to_string()]).await;
    assert!(
        seen.contains("from-script") && seen.contains("from-lib"),
        "{seen}"
    );
    // Not named: nothing.
    let seen = run(vec![
        "-c".into(),
        format!("cat '{}'", srv.join("lib.txt").display()),
    ])
    .await;
    assert!(seen.contains(refusal(backend)), "{seen}");
    // Named, but inside a private place: still nothing.
    let seen = run(vec![key.display().to_string()]).await;
    assert!(seen.contains(refusal(backend)), "{seen}");
    assert!(!seen.contains("PRIVATE KEY"), "{seen}");
}

async fn a_file_over_the_size_limit_cannot_be_written(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(
        backend,
        SandboxConfig {
            max_file_mib: 1,
            ..SandboxConfig::default()
        },
    );
    let script = "head -c 3000000 /dev/zero > big.bin; echo status $?";
    let control = rig.sh(None, Network::Off, script).await;
    assert!(text(&control).contains("status 0"), "{}", text(&control));
    std::fs::remove_file(rig.workspace.join("big.bin")).unwrap();
    let output = rig.sh(Some(&launcher), Network::Off, script).await;
    let size = std::fs::metadata(rig.workspace.join("big.bin"))
        .unwrap()
        .len();
    assert_eq!(size, 1 << 20, "{}", text(&output));
    assert!(!text(&output).contains("status 0"), "{}", text(&output));
}

async fn a_child_past_its_cpu_seconds_is_stopped_by_the_kernel(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .args(["-c", "while :; do :; done"])
        .current_dir(&rig.workspace)
        .env_clear();
    let mut confinement = rig.confinement(Network::Off);
    confinement.cpu_seconds = Some(1);
    let _jail = launcher.confine(&mut command, &confinement).unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), command.status())
        .await
        .expect("the kernel stopped the busy loop within 20 s")
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    // SIGXCPU (24) at the soft limit, or SIGKILL at the hard one; bwrap reports its command's
    // death by a signal as the exit code 128 + signal.
    let signal = status
        .signal()
        .or_else(|| status.code().and_then(|c| c.checked_sub(128)));
    assert!(matches!(signal, Some(24 | 9)), "{status:?}");
}

/// Every entry of the credentials table, made under a home whose whole is granted to the child:
/// the toolchain files beside them stay readable, the credentials read as empty (masked).
async fn credentials_are_never_readable_even_under_a_grant(backend: Backend) {
    let rig = rig();
    let home = rig.root.join("home");
    for (relative, _) in bosun_launch::CREDENTIALS {
        let path = home.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let is_dir = relative.ends_with('/');
        if is_dir {
            std::fs::create_dir_all(&path).unwrap();
            std::fs::write(path.join("secret"), format!("SECRET {relative}")).unwrap();
        } else {
            std::fs::write(&path, format!("SECRET {relative}")).unwrap();
        }
    }
    std::fs::write(home.join(".gitconfig"), "GITCONFIG-OK\n").unwrap();
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    std::fs::write(home.join(".config/git/config"), "XDG-GITCONFIG-OK\n").unwrap();
    let script = format!(
        "for p in {}; do if [ -d \"$p\" ]; then cat \"$p\"/* 2>&1; else cat \"$p\" 2>&1; fi; done; \
         cat .gitconfig .config/git/config",
        bosun_launch::CREDENTIALS
            .iter()
            .map(|(relative, _)| format!("'{relative}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let run = |launcher: Option<Launcher>| {
        let script = script.clone();
        let home = home.clone();
        let confinement = rig.confinement(Network::Off);
        async move {
            let mut command = tokio::process::Command::new("/bin/sh");
            command
                .args(["-c", &script])
                .current_dir(&home)
                .env_clear()
                .env("PATH", "/usr/bin:/bin");
            let jail = launcher
                .as_ref()
                .map(|l| l.confine(&mut command, &confinement).unwrap());
            let output = command.output().await.unwrap();
            drop(jail);
            text(&output)
        }
    };
    // Unconfined, every one is there to read.
    let control = run(None).await;
    for (relative, _) in bosun_launch::CREDENTIALS {
        assert!(control.contains(&format!("SECRET {relative}")), "{control}");
    }
    // The whole home granted: still none, and the toolchain's files are read.
    let granting = full_launcher(
        backend,
        SandboxConfig {
            read: vec![home.display().to_string()],
            ..SandboxConfig::default()
        },
    )
    .with_home(&home);
    let seen = run(Some(granting)).await;
    for (relative, what) in bosun_launch::CREDENTIALS {
        assert!(
            !seen.contains(&format!("SECRET {relative}")),
            "{relative} ({what}) was read: {seen}"
        );
    }
    assert!(
        seen.contains("GITCONFIG-OK") && seen.contains("XDG-GITCONFIG-OK"),
        "{seen}"
    );
    // Nothing granted but the toolchains: git's config is read, its credentials are not.
    let plain = full_launcher(backend, SandboxConfig::default()).with_home(&home);
    let seen = run(Some(plain)).await;
    assert!(seen.contains("XDG-GITCONFIG-OK"), "{seen}");
    assert!(!seen.contains("SECRET"), "{seen}");
}

/// `/dev/shm` is shared by every process of the machine: a child can neither leave anything
/// there nor read what another left.
async fn shared_memory_is_not_shared(backend: Backend) {
    let rig = rig();
    let name = format!("bosun-probe-{}", std::process::id());
    let left = Path::new("/dev/shm").join(&name);
    let script = format!("echo left > /dev/shm/{name}; cat /dev/shm/{name}-host; true");
    std::fs::write(
        Path::new("/dev/shm").join(format!("{name}-host")),
        "HOST-DATA",
    )
    .unwrap();
    let control = rig.sh(None, Network::Off, &script).await;
    assert!(
        left.exists() && text(&control).contains("HOST-DATA"),
        "{}",
        text(&control)
    );
    std::fs::remove_file(&left).unwrap();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let output = rig.sh(Some(&launcher), Network::Off, &script).await;
    let _ = std::fs::remove_file(Path::new("/dev/shm").join(format!("{name}-host")));
    assert!(!left.exists(), "{}", text(&output));
    assert!(!text(&output).contains("HOST-DATA"), "{}", text(&output));
}

/// A descriptor this process holds without close-on-exec (inherited, or left open) never
/// reaches the child: not by its number, not through `/proc/self/fd`.
async fn descriptors_of_the_parent_never_reach_the_child(backend: Backend) {
    use std::os::fd::AsRawFd;
    let rig = rig();
    let secret = rig.root.join("held.txt");
    std::fs::write(&secret, "HELD-SECRET").unwrap();
    let file = std::fs::File::open(&secret).unwrap();
    let fd = file.as_raw_fd();
    #[allow(unsafe_code)]
    // SAFETY: clears close-on-exec on a descriptor this test owns.
    unsafe {
        libc::fcntl(fd, libc::F_SETFD, 0);
    }
    let script = format!("cat /proc/self/fd/{fd}; cat <&{fd}; true");
    let control = rig.sh(None, Network::Off, &script).await;
    assert!(text(&control).contains("HELD-SECRET"), "{}", text(&control));
    let launcher = full_launcher(backend, SandboxConfig::default());
    let output = rig.sh(Some(&launcher), Network::Off, &script).await;
    assert!(!text(&output).contains("HELD-SECRET"), "{}", text(&output));
    // And the same with the sandbox off: closing descriptors is not a confinement layer.
    let output = rig
        .sh(Some(&Launcher::unconfined()), Network::Off, &script)
        .await;
    assert!(!text(&output).contains("HELD-SECRET"), "{}", text(&output));
    drop(file);
}

/// Run inside a terminal of its own (`script`), so that this process has a controlling
/// terminal for a child to inherit: unconfined, a child writes to `/dev/tty` and pushes a
/// keystroke into the terminal's input with `TIOCSTI`; confined (and with the sandbox off)
/// it can do neither.
async fn a_child_cannot_reach_the_terminal(backend: Backend) {
    let exe = std::env::current_exe().unwrap();
    let name = match backend {
        Backend::Landlock => "landlock",
        Backend::Bubblewrap => "bubblewrap",
    };
    let line = format!(
        "'{}' terminal_probe --exact --ignored --nocapture --test-threads 1",
        exe.display()
    );
    let output = tokio::process::Command::new("/usr/bin/script")
        .args(["-qec", &line, "/dev/null"])
        .env("BOSUN_TERMINAL_PROBE", name)
        .stdin(std::process::Stdio::piped())
        .output()
        .await
        .unwrap();
    let seen = text(&output);
    assert!(seen.contains("probe ran"), "{seen}");
    // The attacks work without the launcher: the layers are what stop them.
    assert!(seen.contains("free: TTY-OPEN"), "{seen}");
    // A kernel built or set without legacy TIOCSTI (dev.tty.legacy_tiocsti = 0) refuses the
    // injection to everyone; there the control cannot show the attack, and nothing can do it.
    let injection = std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti")
        .map_or(true, |v| v.trim() != "0");
    assert_eq!(seen.contains("free: STI-OK"), injection, "{seen}");
    for how in ["jailed", "off"] {
        assert!(!seen.contains(&format!("{how}: TTY-OPEN")), "{seen}");
        assert!(!seen.contains(&format!("{how}: STI-OK")), "{seen}");
        assert!(seen.contains(&format!("{how}: STI-REFUSED")), "{seen}");
    }
}

/// The half of [`a_child_cannot_reach_the_terminal`] that runs inside the terminal.
#[tokio::test]
#[ignore = "run by a_child_cannot_reach_the_terminal inside a terminal of its own"]
async fn terminal_probe() {
    let Ok(backend) = std::env::var("BOSUN_TERMINAL_PROBE") else {
        return;
    };
    let backend = if backend == "bubblewrap" {
        Backend::Bubblewrap
    } else {
        Backend::Landlock
    };
    let rig = rig();
    let script = "import fcntl, termios\n\
                  try:\n    open('/dev/tty', 'w').write(''); print(WHO + ': TTY-OPEN')\n\
                  except OSError as e: print(WHO + ': tty refused', e)\n\
                  try:\n    fcntl.ioctl(0, termios.TIOCSTI, b' '); print(WHO + ': STI-OK')\n\
                  except OSError as e: print(WHO + ': STI-REFUSED', e)\n";
    let confined = full_launcher(backend, SandboxConfig::default());
    let off = Launcher::unconfined();
    for (who, launcher) in [
        ("free", None),
        ("jailed", Some(&confined)),
        ("off", Some(&off)),
    ] {
        let mut command = tokio::process::Command::new(python());
        command
            .args(["-c", &format!("WHO = '{who}'\n{script}")])
            .current_dir(&rig.workspace)
            .env_clear()
            .stdin(std::process::Stdio::inherit())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let jail = launcher.map(|l| {
            l.confine(&mut command, &rig.confinement(Network::Off))
                .unwrap()
        });
        let output = command.output().await.unwrap();
        drop(jail);
        println!("{}", text(&output));
    }
    println!("probe ran");
}

/// A grant the caller decided on while `sub` was a directory of the workspace, swapped by
/// another process of the user for a link to the keys before the launcher opens it: the launch
/// is refused, and the keys are never granted (the old launcher opened the grant by name and
/// gave the child `~/.ssh`).
async fn a_grant_swapped_for_a_link_is_refused_never_granted(backend: Backend) {
    let rig = rig();
    let launcher = full_launcher(backend, SandboxConfig::default());
    let keys = rig.root.join("home/.ssh");
    let sub = rig.workspace.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let mut confinement = rig.confinement(Network::Off);
    confinement.write.push(sub.clone());
    confinement.read.push(sub.clone());
    std::fs::remove_dir(&sub).unwrap();
    std::os::unix::fs::symlink(&keys, &sub).unwrap();
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .args(["-c", "cat sub/id_ed25519; echo planted > sub/planted"])
        .current_dir(&rig.workspace)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    match launcher.confine(&mut command, &confinement) {
        Err(error) => {
            let error = error.to_string();
            assert!(
                error.contains(&sub.display().to_string()) && error.contains("symbolic link"),
                "{error}"
            );
        }
        Ok(jail) => {
            let seen = text(&command.output().await.unwrap());
            drop(jail);
            assert!(
                !seen.contains("PRIVATE KEY"),
                "the keys were granted: {seen}"
            );
            assert!(
                !keys.join("planted").exists(),
                "the keys were granted: {seen}"
            );
            panic!("the launch was not refused: {seen}");
        }
    }
}

/// How a place is changed after the launcher checked it.
#[derive(Debug, Clone, Copy)]
enum Swap {
    /// Its directory renamed away and a link to a decoy put in its place.
    Link,
    /// Its directory renamed away and another directory of the same name made.
    Directory,
}

/// Moves `dir` to `moved` and puts `swap` in its place (a link to `decoy`, or a fresh directory
/// holding `inner`).
fn swap_away(swap: Swap, dir: &Path, moved: &Path, decoy: &Path, inner: &str) {
    std::fs::rename(dir, moved).unwrap();
    match swap {
        Swap::Link => std::os::unix::fs::symlink(decoy, dir).unwrap(),
        Swap::Directory => std::fs::create_dir_all(dir.join(inner)).unwrap(),
    }
}

/// A protected `.git` whose directory is moved away after the launcher checked it, a link or
/// another directory put in its place, before the child mounts it read-only: the child is not
/// started (the old launcher mounted by name, so the decoy became read-only and the real `.git`
/// stayed writable where it had been moved).
async fn a_protected_path_moved_after_the_checks_is_refused(backend: Backend) {
    for swap in [Swap::Link, Swap::Directory] {
        let rig = rig();
        let launcher = full_launcher(backend, SandboxConfig::default());
        let sub = rig.workspace.join("sub");
        let moved = rig.workspace.join("moved");
        let decoy = rig.workspace.join("decoy");
        std::fs::create_dir_all(sub.join(".git")).unwrap();
        std::fs::create_dir_all(decoy.join(".git")).unwrap();
        std::fs::write(sub.join(".git/config"), "[core]\n").unwrap();
        let mut confinement = rig.confinement(Network::Off);
        confinement.protected.push(sub.join(".git"));
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .args(["-c", "echo hooked >> moved/.git/config"])
            .current_dir(&rig.workspace)
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        let jail = launcher.confine(&mut command, &confinement).unwrap();
        swap_away(swap, &sub, &moved, Path::new("decoy"), ".git");
        let started = command.output().await;
        drop(jail);
        let config = std::fs::read_to_string(moved.join(".git/config")).unwrap();
        assert_eq!(config, "[core]\n", "{swap:?}: the real .git was written");
        let error = started
            .err()
            .unwrap_or_else(|| panic!("{swap:?}: the child started"));
        let expected = match swap {
            Swap::Link => libc::ELOOP,
            Swap::Directory => libc::ESTALE,
        };
        assert_eq!(error.raw_os_error(), Some(expected), "{swap:?}: {error}");
    }
}

/// A credential's directory under a granted home moved away after the launcher checked it, and
/// a link or an empty directory put at its name, before the child masks it: the child is not
/// started (the old launcher masked the name, and the keys were read where they had been moved).
async fn a_masked_credential_moved_after_the_checks_is_refused(backend: Backend) {
    for swap in [Swap::Link, Swap::Directory] {
        let rig = rig();
        let home = rig.root.join("home");
        std::fs::create_dir_all(home.join("decoy")).unwrap();
        let launcher = full_launcher(
            backend,
            SandboxConfig {
                read: vec![home.display().to_string()],
                ..SandboxConfig::default()
            },
        )
        .with_home(&home);
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .args(["-c", "cat moved/id_ed25519"])
            .current_dir(&home)
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        let jail = launcher
            .confine(&mut command, &rig.confinement(Network::Off))
            .unwrap();
        swap_away(
            swap,
            &home.join(".ssh"),
            &home.join("moved"),
            Path::new("decoy"),
            "",
        );
        let started = command.output().await;
        drop(jail);
        match started {
            Ok(output) => {
                let seen = text(&output);
                assert!(
                    !seen.contains("PRIVATE KEY"),
                    "{swap:?}: the keys were read: {seen}"
                );
                panic!("{swap:?}: the child started: {seen}");
            }
            Err(error) => {
                let expected = match swap {
                    Swap::Link => libc::ELOOP,
                    Swap::Directory => libc::ESTALE,
                };
                assert_eq!(error.raw_os_error(), Some(expected), "{swap:?}: {error}");
            }
        }
    }
}

/// An instant a hostile test can act in: a launcher made with
/// [`Launcher::pause_before_bwrap`] holds each bubblewrap child there, after its own checks of
/// the protected paths and masks and before `bwrap` mounts them.
struct Window {
    dir: tempfile::TempDir,
}

impl Window {
    fn new() -> Window {
        let dir = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("mkfifo")
            .args([dir.path().join("checked"), dir.path().join("go")])
            .status()
            .unwrap();
        assert!(made.success());
        Window { dir }
    }

    fn launcher(&self, config: SandboxConfig) -> Launcher {
        full_launcher(Backend::Bubblewrap, config).pause_before_bwrap(self.dir.path())
    }

    /// Runs `swap` on another thread in the instant the next child is held in, then lets the
    /// child go on; the receiver hears when that is done.
    fn swap_in(&self, swap: impl FnOnce() + Send + 'static) -> std::sync::mpsc::Receiver<()> {
        use std::io::{Read as _, Write as _};
        let (checked, go) = (self.dir.path().join("checked"), self.dir.path().join("go"));
        let (done, heard) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut byte = [0u8];
            std::fs::File::open(&checked)
                .unwrap()
                .read_exact(&mut byte)
                .unwrap();
            swap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&go)
                .unwrap()
                .write_all(b"x")
                .unwrap();
            let _ = done.send(());
        });
        heard
    }
}

/// Waits (with a guard against a hang, not a timing assertion) until the window's swap is done.
fn swapped(heard: &std::sync::mpsc::Receiver<()>) {
    heard
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the child reached the instant before bwrap and the swap was made");
}

/// A protected `.git` swapped — by a process still running in the workspace — for a link or
/// another directory in the instant after the launcher's checks and before `bwrap` mounts it:
/// the last check inside the sandbox refuses the launch, and the real `.git`, moved away, is
/// never written (without it `bwrap` put the read-only mount on the decoy or on the new
/// directory, and the command wrote the real one where it had been moved).
#[tokio::test]
async fn a_protected_path_swapped_while_bwrap_starts_is_refused() {
    for swap in [Swap::Link, Swap::Directory] {
        let rig = rig();
        let window = Window::new();
        let launcher = window.launcher(SandboxConfig::default());
        let sub = rig.workspace.join("sub");
        let moved = rig.workspace.join("moved");
        std::fs::create_dir_all(sub.join(".git")).unwrap();
        std::fs::create_dir_all(rig.workspace.join("decoy/.git")).unwrap();
        std::fs::write(sub.join(".git/config"), "[core]\n").unwrap();
        let mut confinement = rig.confinement(Network::Off);
        confinement.protected.push(sub.join(".git"));
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .args(["-c", "echo hooked >> moved/.git/config; echo wrote"])
            .current_dir(&rig.workspace)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .kill_on_drop(true);
        let (from, to) = (sub.clone(), moved.clone());
        let heard = window.swap_in(move || swap_away(swap, &from, &to, Path::new("decoy"), ".git"));
        let started = launcher.spawn(command, &confinement);
        swapped(&heard);
        let seen = match started {
            Ok((child, jail)) => {
                let seen = text(&child.wait_with_output().await.unwrap());
                drop(jail);
                format!("the launch was not refused: {seen}")
            }
            Err(bosun_launch::LaunchError::Changed { place, what }) => {
                assert_eq!(
                    place,
                    sub.join(".git").display().to_string(),
                    "{swap:?}: {what}"
                );
                String::new()
            }
            Err(other) => format!("refused for another reason: {other}"),
        };
        let config = std::fs::read_to_string(moved.join(".git/config")).unwrap();
        assert_eq!(
            config, "[core]\n",
            "{swap:?}: the real .git was written; {seen}"
        );
        assert!(seen.is_empty(), "{swap:?}: {seen}");
    }
}

/// A masked `~/.ssh` under a granted home, swapped for a link or an empty directory in the
/// instant after the launcher's checks and before `bwrap` masks it: the child is refused by the
/// last check (here started with `confine`, so the refusal is its exit status and stderr) and
/// the keys, moved away, are never read (without it the mask landed on the decoy or the empty
/// directory, and the command read the keys where they had been moved).
#[tokio::test]
async fn a_masked_credential_swapped_while_bwrap_starts_is_refused() {
    for swap in [Swap::Link, Swap::Directory] {
        let rig = rig();
        let home = rig.root.join("home");
        std::fs::create_dir_all(home.join("decoy")).unwrap();
        let window = Window::new();
        let launcher = window
            .launcher(SandboxConfig {
                read: vec![home.display().to_string()],
                ..SandboxConfig::default()
            })
            .with_home(&home);
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .args(["-c", "cat moved/id_ed25519"])
            .current_dir(&home)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .kill_on_drop(true);
        let jail = launcher
            .confine(&mut command, &rig.confinement(Network::Off))
            .unwrap();
        let (ssh, moved) = (home.join(".ssh"), home.join("moved"));
        let heard = window.swap_in(move || swap_away(swap, &ssh, &moved, Path::new("decoy"), ""));
        let output = command.output().await.unwrap();
        swapped(&heard);
        drop(jail);
        let seen = text(&output);
        assert!(
            !seen.contains("PRIVATE KEY"),
            "{swap:?}: the keys were read: {seen}"
        );
        assert_eq!(output.status.code(), Some(125), "{swap:?}: {seen}");
        assert!(
            seen.contains(&format!(
                "{} changed while it was set up",
                home.join(".ssh").display()
            )),
            "{swap:?}: {seen}"
        );
    }
}

/// A credential under a home granted through a link (`home-link` → `home`) is masked at the
/// name the child sees it under, not only at its canonical path (under bubblewrap the mask used
/// to land at `home/.ssh`, which the child's root does not show, and `home-link/.ssh` was read;
/// with the last check but without the mask at every name, the launch is refused).
async fn a_credential_is_masked_under_every_name_a_grant_gives_it(backend: Backend) {
    let rig = rig();
    let home = rig.root.join("home");
    let alias = rig.root.join("home-link");
    std::os::unix::fs::symlink("home", &alias).unwrap();
    let script = format!("cat {}/.ssh/id_ed25519", alias.display());
    let bare = rig.sh(None, Network::Off, &script).await;
    assert!(text(&bare).contains("PRIVATE KEY"), "{}", text(&bare));
    let launcher = full_launcher(
        backend,
        SandboxConfig {
            read: vec![alias.display().to_string()],
            ..SandboxConfig::default()
        },
    )
    .with_home(&home);
    let seen = text(
        &rig.sh(
            Some(&launcher),
            Network::Off,
            &format!("{script}; echo ran"),
        )
        .await,
    );
    assert!(!seen.contains("PRIVATE KEY"), "{seen}");
    assert!(seen.contains("ran"), "the launch was refused: {seen}");
}

/// A workspace opened through a link (`proj-link` → `src/proj`) while `src` is granted for
/// writing: its `.git` stays read-only under both names (under bubblewrap it used to be mounted
/// read-only at `proj-link/.git` only, and written through `src/proj/.git`).
async fn a_protected_path_is_read_only_under_every_name_a_grant_gives_it(backend: Backend) {
    let rig = rig();
    let src = rig.root.join("src");
    let real = src.join("proj");
    std::fs::create_dir_all(real.join(".git")).unwrap();
    std::fs::write(real.join(".git/config"), "[core]\n").unwrap();
    let link = rig.root.join("proj-link");
    std::os::unix::fs::symlink("src/proj", &link).unwrap();
    let launcher = full_launcher(
        backend,
        SandboxConfig {
            write: vec![src.display().to_string()],
            ..SandboxConfig::default()
        },
    );
    let mut confinement = Confinement::new(link.clone(), Network::Off);
    confinement.protected = vec![link.join(".git")];
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(format!(
            "echo hooked >> {}/.git/config; echo hooked >> {}/.git/config; echo ran",
            real.display(),
            link.display()
        ))
        .current_dir(&real)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    let jail = launcher.confine(&mut command, &confinement).unwrap();
    let seen = text(&command.output().await.unwrap());
    drop(jail);
    assert!(seen.contains("ran"), "{seen}");
    let config = std::fs::read_to_string(real.join(".git/config")).unwrap();
    assert_eq!(config, "[core]\n", "{seen}");
}

per_backend!(
    credentials_are_never_readable_even_under_a_grant,
    a_credential_is_masked_under_every_name_a_grant_gives_it,
    a_protected_path_is_read_only_under_every_name_a_grant_gives_it,
    a_grant_swapped_for_a_link_is_refused_never_granted,
    a_protected_path_moved_after_the_checks_is_refused,
    a_masked_credential_moved_after_the_checks_is_refused,
    shared_memory_is_not_shared,
    descriptors_of_the_parent_never_reach_the_child,
    a_child_cannot_reach_the_terminal,
    writes_land_in_the_workspace_and_tmpdir_only,
    the_private_tmpdir_is_removed_with_the_jail,
    protected_paths_stay_read_only_inside_a_writable_workspace,
    secrets_outside_the_workspace_cannot_be_read,
    a_path_granted_in_config_is_readable_and_writable,
    the_parents_environment_cannot_be_read,
    a_unix_socket_outside_cannot_be_reached,
    no_network_without_a_grant,
    a_grant_opens_exactly_the_granted_port,
    a_fork_bomb_meets_the_process_limit_and_dies_with_the_jail,
    a_child_cannot_leave_its_process_group_or_trace,
    #[cfg(target_arch = "x86_64")]
    x32_system_calls_are_refused_too,
    require_refuses_nothing_on_a_full_machine_and_off_confines_nothing,
    a_file_the_command_line_names_is_readable_but_nothing_private,
    a_relative_path_entry_never_finds_a_program_in_the_workspace,
    the_child_gets_only_the_variables_its_command_sets,
    a_file_over_the_size_limit_cannot_be_written,
    a_child_past_its_cpu_seconds_is_stopped_by_the_kernel,
);
