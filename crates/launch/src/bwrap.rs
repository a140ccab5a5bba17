//! The bubblewrap backend: finding a working `bwrap`, and the command line that gives a child a
//! filesystem made of only what it was granted.
//!
//! The child's root is an empty tmpfs. Onto it go, read-only, the system directories, the
//! toolchains and every read grant; read-write, the workspace, the private `TMPDIR` and every
//! write grant; then the workspace's protected paths, read-only again. Nothing else exists
//! inside: `~/.ssh` is not denied, it is absent. `/proc` is the child's own PID namespace's and
//! `/dev` a minimal one. Bosun's seccomp programs reach `bwrap` as memory files
//! (`--add-seccomp-fd`), which it installs just before `exec`.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::{LaunchError, Network};

/// Why no working `bwrap` was found.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BwrapError {
    /// None on `PATH`, `/usr/bin` or `/bin`.
    #[error(
        "no `bwrap` on PATH: install bubblewrap (Debian: apt-get install bubblewrap) or set [sandbox] backend = \"landlock\""
    )]
    NotFound,
    /// It could not be run (`what`: its `--version`, or a trial sandbox).
    #[error("`{}{what}` {failed}: {source}", path.display())]
    Run {
        /// The `bwrap` found.
        path: PathBuf,
        /// What was run after the path (` --version`, or nothing).
        what: &'static str,
        /// How it failed, in words.
        failed: &'static str,
        /// The system's error.
        source: std::io::Error,
    },
    /// It ran, but could not make a sandbox.
    #[error(
        "`{}` cannot make a sandbox here ({stderr}): often user namespaces are blocked",
        path.display()
    )]
    NoSandbox {
        /// The `bwrap` found.
        path: PathBuf,
        /// What it wrote on stderr.
        stderr: String,
    },
}

/// A `bwrap` that was tried on this machine and works.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Bwrap {
    /// Its absolute path.
    pub(crate) path: PathBuf,
    /// What `bwrap --version` said, e.g. `bubblewrap 0.8.0`.
    pub(crate) version: String,
}

impl Bwrap {
    /// Finds `bwrap` on `PATH` and runs a trivial sandbox with it; why not, when it fails.
    pub(crate) fn probe() -> Result<Bwrap, BwrapError> {
        let path = std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .chain([PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
            .map(|dir| dir.join("bwrap"))
            .find(|candidate| candidate.is_absolute() && candidate.is_file())
            .ok_or(BwrapError::NotFound)?;
        let version = std::process::Command::new(&path)
            .arg("--version")
            .output()
            .map_err(|source| BwrapError::Run {
                path: path.clone(),
                what: " --version",
                failed: "failed",
                source,
            })?;
        let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
        let trial = std::process::Command::new(&path)
            .args([
                "--unshare-all",
                "--die-with-parent",
                "--ro-bind",
                "/",
                "/",
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--",
                "/bin/sh",
                "-c",
                "exit 0",
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|source| BwrapError::Run {
                path: path.clone(),
                what: "",
                failed: "could not be started",
                source,
            })?;
        if !trial.status.success() {
            return Err(BwrapError::NoSandbox {
                path,
                stderr: String::from_utf8_lossy(&trial.stderr).trim().to_owned(),
            });
        }
        Ok(Bwrap { path, version })
    }
}

/// How a path is put into the child's filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mount {
    Read,
    Write,
    Protect,
}

/// Variables the C library drops when it starts `bwrap` in secure-execution mode (`TMPDIR`
/// among them): `bwrap` is told to set them again inside.
const DROPPED_AT_EXEC: &[&str] = &[
    "TMPDIR",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "LOCPATH",
    "NLSPATH",
    "TZDIR",
    "GCONV_PATH",
    "RES_OPTIONS",
    "LOCALDOMAIN",
    "HOSTALIASES",
];

/// The arguments for one child: `bwrap` options, `--`, then the program and its arguments.
/// Paths that do not exist are left out (`bwrap` would fail on them). `env` is the
/// environment the command was given.
#[allow(clippy::too_many_arguments)]
pub(crate) fn arguments(
    env: &[(OsString, OsString)],
    read: &[PathBuf],
    write: &[PathBuf],
    protected: &[PathBuf],
    masks: &[(PathBuf, bool)],
    network: &Network,
    seccomp_fds: &[RawFd],
    program: &OsStr,
    args: &[OsString],
) -> Vec<OsString> {
    // --die-with-parent: `bwrap` is started from the launcher's spawner thread, which lives as
    // long as Bosun, so the parent-death signal (which follows the thread that forked) means
    // Bosun is gone. --new-session: no controlling terminal inside either.
    let mut out: Vec<OsString> = [
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    if matches!(network, Network::TcpPorts(_)) {
        out.push("--share-net".into());
    }
    for (name, value) in env {
        if DROPPED_AT_EXEC.iter().any(|d| name == d) {
            out.push("--setenv".into());
            out.push(name.clone());
            out.push(value.clone());
        }
    }
    let mut mounts: Vec<(PathBuf, Mount)> = Vec::new();
    let mut add = |path: &Path, how: Mount| {
        // /proc and /dev are the child's own; a grant cannot bring the host's back.
        if path.starts_with("/proc") || path.starts_with("/dev") || !path.is_absolute() {
            return;
        }
        if std::fs::metadata(path).is_err() {
            return;
        }
        mounts.push((path.to_path_buf(), how));
    };
    for path in read {
        add(path, Mount::Read);
    }
    for path in write {
        add(path, Mount::Write);
    }
    for path in protected {
        // Only real directories and files: a symlink is not followed out of the workspace.
        if std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_symlink()) {
            add(path, Mount::Protect);
        }
    }
    // Parents before children, so a grant inside another grant lands on top of it; at the same
    // path the stronger grant wins, and protection comes last of all.
    mounts.sort_by(|(a, how_a), (b, how_b)| {
        let depth = |p: &Path| p.components().count();
        (how_a == &Mount::Protect, depth(a), how_a).cmp(&(
            how_b == &Mount::Protect,
            depth(b),
            how_b,
        ))
    });
    for (path, how) in mounts {
        let flag = match how {
            Mount::Read | Mount::Protect => "--ro-bind",
            Mount::Write => "--bind",
        };
        out.push(flag.into());
        out.push(path.clone().into_os_string());
        out.push(path.into_os_string());
    }
    // Credentials a grant took in: an empty read-only file or directory in their place.
    for (path, dir) in masks {
        if *dir {
            out.push("--tmpfs".into());
            out.push(path.clone().into_os_string());
            out.push("--remount-ro".into());
            out.push(path.clone().into_os_string());
        } else {
            out.push("--ro-bind".into());
            out.push("/dev/null".into());
            out.push(path.clone().into_os_string());
        }
    }
    for fd in seccomp_fds {
        out.push("--add-seccomp-fd".into());
        out.push(fd.to_string().into());
    }
    out.push("--".into());
    out.push(program.to_owned());
    out.extend(args.iter().cloned());
    out
}

/// A sealed-off memory file holding one seccomp program, in the layout `bwrap` reads (an
/// array of `struct sock_filter`).
pub(crate) fn seccomp_file(program: &[libc::sock_filter]) -> Result<OwnedFd, LaunchError> {
    let fail = |what: &str| {
        LaunchError::Setup(format!(
            "seccomp for bubblewrap: {what}: {}",
            std::io::Error::last_os_error()
        ))
    };
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for filter in program {
        bytes.extend_from_slice(&filter.code.to_ne_bytes());
        bytes.push(filter.jt);
        bytes.push(filter.jf);
        bytes.extend_from_slice(&filter.k.to_ne_bytes());
    }
    #[allow(unsafe_code)]
    // SAFETY: memfd_create reads a NUL-terminated name; write and lseek act on the new fd and
    // a buffer that outlives the call. The fd is owned by the returned value only.
    unsafe {
        let fd = libc::memfd_create(c"bosun-seccomp".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return Err(fail("memfd_create"));
        }
        let owned = OwnedFd::from_raw_fd(fd);
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        if usize::try_from(written).ok() != Some(bytes.len()) {
            return Err(fail("write"));
        }
        if libc::lseek(fd, 0, libc::SEEK_SET) != 0 {
            return Err(fail("lseek"));
        }
        Ok(owned)
    }
}

/// C strings for `execv`: the path and the argument vector, `argv[0]` included.
pub(crate) fn c_strings(
    path: &Path,
    argv: Vec<OsString>,
) -> Result<(CString, Vec<CString>), LaunchError> {
    let nul = |_| LaunchError::Setup("a path or argument holds a NUL byte".to_owned());
    let path = CString::new(path.as_os_str().as_bytes()).map_err(nul)?;
    let argv = std::iter::once(OsString::from("bwrap"))
        .chain(argv)
        .map(|a| CString::new(a.into_vec()).map_err(nul))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((path, argv))
}

/// `NAME=value` strings of `env`, for `execve`.
pub(crate) fn environment(env: &[(OsString, OsString)]) -> Result<Vec<CString>, LaunchError> {
    env.iter()
        .map(|(name, value)| {
            let mut pair = name.clone().into_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            CString::new(pair).map_err(|_| {
                LaunchError::Setup("an environment variable holds a NUL byte".to_owned())
            })
        })
        .collect()
}

/// The raw descriptors of `files`, for the command line and for clearing close-on-exec.
pub(crate) fn raw(files: &[OwnedFd]) -> Vec<RawFd> {
    files.iter().map(AsRawFd::as_raw_fd).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_nest_in_order_and_protection_comes_last() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir.path().join("ws");
        let git = ws.join(".git");
        let inner = ws.join("vendor");
        for d in [&git, &inner] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        let args = arguments(
            &[("TMPDIR".into(), "/tmp/t".into())],
            &[inner.clone(), dir.path().join("missing")],
            std::slice::from_ref(&ws),
            std::slice::from_ref(&git),
            &[],
            &Network::Off,
            &[7],
            OsStr::new("sh"),
            &["-c".into(), "true".into()],
        );
        let text: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |needle: &str| text.iter().position(|a| a == needle);
        let ws_bind = at(&ws.display().to_string());
        let inner_bind = at(&inner.display().to_string());
        let git_bind = at(&git.display().to_string());
        assert!(ws_bind < inner_bind && inner_bind < git_bind, "{text:?}");
        assert_eq!(text[git_bind.unwrap_or(0) - 1], "--ro-bind");
        assert!(!text.iter().any(|a| a.contains("missing")), "{text:?}");
        assert!(!text.contains(&"--share-net".to_owned()));
        assert!(
            text.windows(3)
                .any(|w| w == ["--setenv", "TMPDIR", "/tmp/t"]),
            "{text:?}"
        );
        let tail: Vec<&str> = text[text.len() - 6..].iter().map(String::as_str).collect();
        assert_eq!(tail, ["--add-seccomp-fd", "7", "--", "sh", "-c", "true"]);
    }
}
