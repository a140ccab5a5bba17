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

use crate::held::Held;
use crate::stage::Cover;
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
    /// It is older than 0.8.0, which first takes a path by descriptor (`--ro-bind-fd`).
    #[error(
        "`{}` is {version}, older than bubblewrap 0.8.0, the first that can be handed each path \
         by descriptor (--ro-bind-fd) rather than by a name a link could redirect: install \
         bubblewrap 0.8.0 or later, or set [sandbox] backend = \"landlock\"",
        path.display()
    )]
    TooOld {
        /// The `bwrap` found.
        path: PathBuf,
        /// What it said its version is.
        version: String,
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
        if !takes_descriptors(&version) {
            return Err(BwrapError::TooOld { path, version });
        }
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

/// Whether `bwrap --version`'s answer (`bubblewrap 0.8.0`) names 0.8.0 or later, which binds
/// a path from a descriptor.
fn takes_descriptors(version: &str) -> bool {
    let numbers: Vec<u32> = version
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .split('.')
        .map_while(|n| n.parse().ok())
        .collect();
    numbers.as_slice() >= [0, 8].as_slice()
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

/// The held places of one child ([`crate::held`]), for its command line.
pub(crate) struct Places<'a> {
    pub(crate) read: &'a [Held],
    pub(crate) write: &'a [Held],
    pub(crate) protected: &'a [Held],
    pub(crate) masks: &'a [Held],
}

/// Where a bind's source comes from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    /// A system directory, by name: root's, no child can swap it.
    Name(PathBuf),
    /// A held place, by its descriptor (`--bind-fd`, `--ro-bind-fd`).
    Fd(RawFd),
}

/// Bosun's own executable and the verdict pipe's writing end, for the last check
/// ([`crate::stage`]), as descriptors the child inherits.
pub(crate) struct Stage {
    pub(crate) exe: RawFd,
    pub(crate) verdict: RawFd,
}

/// The arguments for one child: `bwrap` options, `--`, then the program and its arguments —
/// behind the last check ([`crate::stage`]) when a protected path or a mask is mounted, which
/// the returned flag says. System directories that do not exist are left out (`bwrap` would fail
/// on them); every other place is bound from the descriptor it was held by, at the path it was
/// given. `env` is the environment the command was given; `copies` receives the descriptors
/// made for it, which must stay open until `bwrap` has started.
#[allow(clippy::too_many_arguments)]
pub(crate) fn arguments(
    env: &[(OsString, OsString)],
    system: &[PathBuf],
    places: &Places<'_>,
    network: &Network,
    seccomp_fds: &[RawFd],
    stage: &Stage,
    program: &OsStr,
    args: &[OsString],
    copies: &mut Vec<OwnedFd>,
) -> Result<(Vec<OsString>, bool), LaunchError> {
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
    // /proc and /dev are the child's own; a grant cannot bring the host's back.
    let kept = |path: &Path| {
        !(path.starts_with("/proc") || path.starts_with("/dev") || !path.is_absolute())
    };
    let mut mounts: Vec<(PathBuf, Mount, Source)> = Vec::new();
    for path in system {
        if kept(path) && std::fs::metadata(path).is_ok() {
            mounts.push((path.clone(), Mount::Read, Source::Name(path.clone())));
        }
    }
    for (held, how) in places
        .read
        .iter()
        .map(|h| (h, Mount::Read))
        .chain(places.write.iter().map(|h| (h, Mount::Write)))
    {
        if kept(&held.given) {
            mounts.push((held.given.clone(), how, Source::Fd(held.fd.as_raw_fd())));
        }
    }
    let grants: Vec<&Held> = places.read.iter().chain(places.write).collect();
    let mut checks = Vec::new();
    for held in places.protected {
        let mut first = true;
        for check in destinations(held, &grants, Cover::ReadOnly) {
            let path = check.path();
            if !kept(&path) {
                continue;
            }
            // bwrap closes a descriptor once it has bound it: each further name gets a copy.
            let fd = if std::mem::take(&mut first) {
                held.fd.as_raw_fd()
            } else {
                let copy = held.fd.try_clone().map_err(|e| {
                    LaunchError::Setup(format!("holding {}: {e}", held.given.display()))
                })?;
                let raw = copy.as_raw_fd();
                copies.push(copy);
                raw
            };
            checks.push(check);
            mounts.push((path, Mount::Protect, Source::Fd(fd)));
        }
    }
    // Parents before children, so a grant inside another grant lands on top of it; at the same
    // path the stronger grant wins, and protection comes last of all.
    mounts.sort_by(|(a, how_a, _), (b, how_b, _)| {
        let depth = |p: &Path| p.components().count();
        (how_a == &Mount::Protect, depth(a), how_a).cmp(&(
            how_b == &Mount::Protect,
            depth(b),
            how_b,
        ))
    });
    for (path, how, source) in mounts {
        let writable = how == Mount::Write;
        match source {
            Source::Name(source) => {
                out.push(if writable { "--bind" } else { "--ro-bind" }.into());
                out.push(source.into_os_string());
            }
            Source::Fd(fd) => {
                out.push(
                    if writable {
                        "--bind-fd"
                    } else {
                        "--ro-bind-fd"
                    }
                    .into(),
                );
                out.push(fd.to_string().into());
            }
        }
        out.push(path.into_os_string());
    }
    // Credentials a grant took in: an empty read-only file or directory in their place.
    // Each at every name a grant shows it under, not only its own.
    for held in places.masks {
        let cover = if held.is_dir() {
            Cover::EmptyDir
        } else {
            Cover::NullFile
        };
        for check in destinations(held, &grants, cover) {
            let path = check.path();
            if !kept(&path) {
                continue;
            }
            checks.push(check);
            if held.is_dir() {
                out.push("--tmpfs".into());
                out.push(path.clone().into_os_string());
                out.push("--remount-ro".into());
                out.push(path.into_os_string());
            } else {
                out.push("--ro-bind".into());
                out.push("/dev/null".into());
                out.push(path.into_os_string());
            }
        }
    }
    for fd in seccomp_fds {
        out.push("--add-seccomp-fd".into());
        out.push(fd.to_string().into());
    }
    out.push("--".into());
    // `bwrap` mounts each protected path and mask over a name: the last check, inside the
    // finished sandbox, makes sure each landed on the very file that was held.
    let staged = !checks.is_empty();
    if staged {
        out.extend(crate::stage::command(
            stage.exe,
            stage.verdict,
            &checks,
            program,
            args,
        ));
    } else {
        out.push(program.to_owned());
        out.extend(args.iter().cloned());
    }
    Ok((out, staged))
}

/// Every place inside the child's root where `held` shows, and what must cover it there:
/// beneath each grant whose place holds it, at that grant's name — a grant given through a link
/// (`~/dotfiles` → `/data/home`, a workspace opened through a link) shows it under another name
/// than its canonical one, where a mount at one name alone leaves it bare at the other. A place
/// no grant holds keeps its canonical path.
fn destinations(held: &Held, grants: &[&Held], cover: Cover) -> Vec<crate::stage::Check> {
    let mut out: Vec<crate::stage::Check> = grants
        .iter()
        .filter_map(|grant| {
            let relative = held.path.strip_prefix(&grant.path).ok()?;
            relative
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
                .then(|| held.check(cover, Some(grant), relative.to_path_buf()))
        })
        .collect();
    if out.is_empty() {
        out.push(held.check(cover, None, PathBuf::new()));
    }
    out.sort_by_key(crate::stage::Check::path);
    out.dedup_by_key(|c| c.path());
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
    fn only_a_bwrap_that_binds_from_descriptors_is_used() {
        for (version, takes) in [
            ("bubblewrap 0.8.0", true),
            ("bubblewrap 0.11.1", true),
            ("bubblewrap 1.0", true),
            ("bubblewrap 0.7.9", false),
            ("bubblewrap 0.4", false),
            ("", false),
        ] {
            assert_eq!(takes_descriptors(version), takes, "{version}");
        }
    }

    #[test]
    fn grants_nest_in_order_and_protection_comes_last() {
        use crate::held::{FinalLink, Input, Places as Held};
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir.path().join("ws");
        let git = ws.join(".git");
        let inner = ws.join("vendor");
        for d in [&git, &inner] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        let mut places = Held::default();
        let hold = |places: &Held, path: &Path| {
            places
                .hold(path, Input::Resolved, FinalLink::Refuse)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let write: Vec<_> = places
            .writable(&ws, Input::Unresolved)
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .collect();
        let read: Vec<_> = [inner.clone(), dir.path().join("missing")]
            .iter()
            .filter_map(|p| hold(&places, p))
            .collect();
        let protected: Vec<_> = hold(&places, &git).into_iter().collect();
        let (args, staged) = arguments(
            &[("TMPDIR".into(), "/tmp/t".into())],
            &[PathBuf::from("/usr"), dir.path().join("no-system")],
            &Places {
                read: &read,
                write: &write,
                protected: &protected,
                masks: &[],
            },
            &Network::Off,
            &[7],
            &Stage {
                exe: 11,
                verdict: 12,
            },
            OsStr::new("sh"),
            &["-c".into(), "true".into()],
            &mut Vec::new(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(staged);
        let text: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |needle: &str| text.iter().position(|a| a == needle);
        let ws_bind = at(&ws.display().to_string());
        let inner_bind = at(&inner.display().to_string());
        let git_bind = at(&git.display().to_string());
        assert!(ws_bind < inner_bind && inner_bind < git_bind, "{text:?}");
        // Each held place is bound from its descriptor, never from its name.
        let from = |at: Option<usize>| {
            let at = at.unwrap_or(2);
            (text[at - 2].clone(), text[at - 1].clone())
        };
        assert_eq!(
            from(ws_bind),
            ("--bind-fd".to_owned(), write[0].fd.as_raw_fd().to_string())
        );
        assert_eq!(
            from(git_bind),
            (
                "--ro-bind-fd".to_owned(),
                protected[0].fd.as_raw_fd().to_string()
            )
        );
        assert!(text.windows(3).any(|w| w == ["--ro-bind", "/usr", "/usr"]));
        assert!(
            !text
                .iter()
                .any(|a| a.contains("missing") || a.contains("no-system")),
            "{text:?}"
        );
        assert!(!text.contains(&"--share-net".to_owned()));
        assert!(
            text.windows(3)
                .any(|w| w == ["--setenv", "TMPDIR", "/tmp/t"]),
            "{text:?}"
        );
        // The protected .git makes the command run behind the last check, which is told where
        // .git must be covered.
        let end = text.iter().position(|a| a == "--").unwrap_or(0);
        let command: Vec<&str> = text[end - 2..].iter().map(String::as_str).collect();
        let ws = ws.display().to_string();
        let spec = text
            .iter()
            .find(|a| a.starts_with("r:"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            command,
            [
                "--add-seccomp-fd",
                "7",
                "--",
                "/proc/self/fd/11",
                crate::stage::MARKER,
                "12",
                &spec,
                &ws,
                ".git",
                "--",
                "sh",
                "-c",
                "true"
            ]
        );
    }
}
