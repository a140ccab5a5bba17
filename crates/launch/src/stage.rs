//! The last step of a launch under bubblewrap, run inside the finished sandbox: it checks that
//! every protected path and mask `bwrap` mounted sits where the launcher held it, then becomes
//! the command.
//!
//! `bwrap` mounts a protected path or a mask over a *name* inside the binds it made before, so a
//! process still running in the workspace (from an earlier call) could swap that name — for a
//! link, for another directory — in the instant after the launcher's own check, and the
//! read-only bind or the mask would land elsewhere. This stage looks after the mounts, in the
//! child's own mount namespace, before anything of the command runs: `bwrap` runs Bosun's own
//! executable (handed to it by descriptor, `/proc/self/fd/N`), whose start-up hook
//! ([`ENTRY`], before `main`) sees [`MARKER`], checks each place ([`Check`]) and `execvp`s the
//! command; or it refuses, tells the launcher why on the verdict pipe, and exits. It never
//! returns into the program it is part of.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::{LaunchError, sys};

/// The first argument that makes Bosun's executable this stage rather than itself.
pub(crate) const MARKER: &str = "--bosun-launch-stage-v1";

/// How the stage exits when it refuses (the command never ran).
pub(crate) const REFUSED: libc::c_int = 125;

/// What must cover a place inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cover {
    /// The held file itself, on a read-only mount (a protected path).
    ReadOnly,
    /// An empty read-only tmpfs (a masked directory).
    EmptyDir,
    /// `/dev/null`, read-only (a masked file).
    NullFile,
}

/// One place the stage checks: what covers it, the held file's device and inode, whether the
/// held file was a mount's root on the host (then no directory entry of its own names it), and
/// where it is inside the sandbox: `relative` beneath the grant bound at `base`, whose own
/// device and inode were `base_id` — or at `base` itself when `relative` is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    pub(crate) cover: Cover,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) mount_root: bool,
    pub(crate) base: PathBuf,
    pub(crate) base_id: (u64, u64),
    pub(crate) relative: PathBuf,
}

impl Check {
    /// Where it is inside the sandbox.
    pub(crate) fn path(&self) -> PathBuf {
        if self.relative.as_os_str().is_empty() {
            self.base.clone()
        } else {
            self.base.join(&self.relative)
        }
    }

    fn spec(&self) -> String {
        let cover = match self.cover {
            Cover::ReadOnly => 'r',
            Cover::EmptyDir => 'd',
            Cover::NullFile => 'f',
        };
        format!(
            "{cover}:{}:{}:{}:{}:{}",
            self.dev,
            self.ino,
            u8::from(self.mount_root),
            self.base_id.0,
            self.base_id.1,
        )
    }

    fn parse(spec: &[u8], base: &[u8], relative: &[u8]) -> Option<Check> {
        let spec = std::str::from_utf8(spec).ok()?;
        let mut parts = spec.split(':');
        let cover = match parts.next()? {
            "r" => Cover::ReadOnly,
            "d" => Cover::EmptyDir,
            "f" => Cover::NullFile,
            _ => return None,
        };
        let mut number = || parts.next()?.parse::<u64>().ok();
        let (dev, ino, mount_root) = (number()?, number()?, number()? == 1);
        let base_id = (number()?, number()?);
        Some(Check {
            cover,
            dev,
            ino,
            mount_root,
            base: PathBuf::from(OsStr::from_bytes(base)),
            base_id,
            relative: PathBuf::from(OsStr::from_bytes(relative)),
        })
    }
}

/// What `bwrap` runs when `checks` are to be made: the stage (Bosun's executable, open at
/// `exe`), which answers on `verdict` and then runs `program` with `args`.
pub(crate) fn command(
    exe: RawFd,
    verdict: RawFd,
    checks: &[Check],
    program: &OsStr,
    args: &[OsString],
) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![
        format!("/proc/self/fd/{exe}").into(),
        MARKER.into(),
        verdict.to_string().into(),
    ];
    for check in checks {
        out.push(check.spec().into());
        out.push(check.base.clone().into_os_string());
        out.push(check.relative.clone().into_os_string());
    }
    out.push("--".into());
    out.push(program.to_owned());
    out.extend(args.iter().cloned());
    out
}

/// Bosun's own executable, to be run as the stage, and the pipe the stage answers on.
#[derive(Debug)]
pub(crate) struct Handles {
    pub(crate) exe: OwnedFd,
    pub(crate) verdict_read: OwnedFd,
    pub(crate) verdict_write: OwnedFd,
}

impl Handles {
    pub(crate) fn open() -> Result<Handles, LaunchError> {
        // Keeps the start-up hook in every program that launches under bubblewrap.
        std::hint::black_box(&ENTRY);
        let setup = |what: &str, e: std::io::Error| {
            LaunchError::Setup(format!("{what} for the sandbox's last check: {e}"))
        };
        let exe = std::fs::File::open("/proc/self/exe")
            .map_err(|e| setup("opening Bosun's own executable", e))?;
        let (read, write) = sys::pipe().map_err(|e| setup("making a pipe", e))?;
        Ok(Handles {
            exe: exe.into(),
            verdict_read: read,
            verdict_write: write,
        })
    }
}

/// What the stage said.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every place was covered; the command was started.
    Covered,
    /// A place was not: the command was not started.
    Changed { place: String, what: String },
    /// Nothing (`bwrap` failed before the stage ran, and reports it itself).
    Silent,
}

/// Reads the stage's verdict from `pipe`: one line, or nothing before `bwrap` ends.
pub(crate) fn read_verdict(pipe: &OwnedFd) -> Verdict {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 8192 {
        // SAFETY: reads one byte into a stack buffer from a descriptor the caller owns.
        let read = unsafe { libc::read(pipe.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
        if read < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if read != 1 || byte[0] == b'\n' {
            break;
        }
        line.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&line);
    let mut parts = line.splitn(3, '\u{1f}');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("covered"), None, None) => Verdict::Covered,
        (Some("changed"), Some(place), Some(what)) => Verdict::Changed {
            place: place.to_owned(),
            what: what.to_owned(),
        },
        _ => Verdict::Silent,
    }
}

/// Runs before `main` in every program that links this crate: C libraries call the functions of
/// `.init_array` with `argc`, `argv` and `envp` (glibc does; elsewhere `/proc/self/cmdline` is
/// read). It does nothing unless the first argument is [`MARKER`].
#[used]
#[unsafe(link_section = ".init_array")]
pub(crate) static ENTRY: extern "C" fn(
    libc::c_int,
    *const *const libc::c_char,
    *const *const libc::c_char,
) = entry;

extern "C" fn entry(
    argc: libc::c_int,
    argv: *const *const libc::c_char,
    _envp: *const *const libc::c_char,
) {
    let args = arguments(argc, argv);
    if args.get(1).map(Vec::as_slice) == Some(MARKER.as_bytes()) {
        run(&args);
    }
}

#[cfg(target_env = "gnu")]
fn arguments(argc: libc::c_int, argv: *const *const libc::c_char) -> Vec<Vec<u8>> {
    let count = usize::try_from(argc).unwrap_or(0);
    if count < 2 || argv.is_null() {
        return Vec::new();
    }
    // SAFETY: glibc hands `.init_array` functions the `argv` of `main`: `argc` valid C strings.
    unsafe {
        let second = *argv.add(1);
        if second.is_null() || CStr::from_ptr(second).to_bytes() != MARKER.as_bytes() {
            return Vec::new();
        }
        (0..count)
            .map(|i| *argv.add(i))
            .take_while(|a| !a.is_null())
            .map(|a| CStr::from_ptr(a).to_bytes().to_vec())
            .collect()
    }
}

#[cfg(not(target_env = "gnu"))]
fn arguments(_argc: libc::c_int, _argv: *const *const libc::c_char) -> Vec<Vec<u8>> {
    std::fs::read("/proc/self/cmdline")
        .map(|all| {
            all.split(|b| *b == 0)
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .map(|mut args| {
            if args.last().is_some_and(Vec::is_empty) {
                args.pop();
            }
            args
        })
        .unwrap_or_default()
}

/// The stage itself: `args` are `exe MARKER verdict-fd (spec base relative)* -- program args…`.
fn run(args: &[Vec<u8>]) -> ! {
    let malformed = || -> ! {
        say(b"bosun: the sandbox's last check was started with malformed arguments\n");
        exit(REFUSED)
    };
    let Some(verdict) = args
        .get(2)
        .and_then(|a| std::str::from_utf8(a).ok())
        .and_then(|a| a.parse::<RawFd>().ok())
    else {
        malformed()
    };
    let mut rest = args.get(3..).unwrap_or_default();
    let mut checks = Vec::new();
    loop {
        match rest {
            [end, command @ ..] if end.as_slice() == b"--" => {
                rest = command;
                break;
            }
            [spec, base, relative, more @ ..] => {
                let Some(check) = Check::parse(spec, base, relative) else {
                    malformed()
                };
                checks.push(check);
                rest = more;
            }
            _ => malformed(),
        }
    }
    for check in &checks {
        if let Err(what) = verify(check) {
            let place = check.path().display().to_string();
            let mut line = format!("changed\u{1f}{place}\u{1f}{what}").into_bytes();
            line.retain(|b| *b != b'\n');
            line.push(b'\n');
            answer(verdict, &line);
            let error = LaunchError::Changed { place, what };
            say(format!("bosun: {error}\n").as_bytes());
            exit(REFUSED);
        }
    }
    answer(verdict, b"covered\n");
    exec(rest)
}

/// Whether `check`'s place is covered as it must be; what was found when it is not.
///
/// The grant's own name is followed as `bwrap` followed it when it bound the grant (a workspace
/// given through a link the person made), and must lead to the grant that was held; beneath it
/// nothing is followed at all.
fn verify(check: &Check) -> Result<(), String> {
    let c_path = |path: &Path| {
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| "its path holds a NUL byte".to_owned())
    };
    let opened = |result: std::io::Result<libc::c_int>| match result {
        Ok(fd) => Ok(Fd(fd)),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            Err("a symbolic link lies on it inside the sandbox".to_owned())
        }
        Err(e) => Err(format!("it cannot be opened inside the sandbox: {e}")),
    };
    let (fd, parent, name) = if check.relative.as_os_str().is_empty() {
        let fd = opened(open_following(&c_path(&check.base)?))?;
        let parent = match check.base.parent() {
            Some(parent) => Some(opened(open_following(&c_path(parent)?))?),
            None => None,
        };
        (fd, parent, check.base.file_name())
    } else {
        let base = opened(open_following(&c_path(&check.base)?))?;
        let found = sys::stat_raw(base.0).map_err(|e| format!("fstat: {e}"))?;
        if (found.st_dev, found.st_ino) != check.base_id {
            return Err(format!(
                "{} is not the grant that was held there",
                check.base.display()
            ));
        }
        // SAFETY: raw system calls on a live descriptor and C strings.
        let beneath = |relative: &Path| {
            let relative = c_path(relative)?;
            opened(unsafe { sys::open_no_links(base.0, &relative, true) })
        };
        let fd = beneath(&check.relative)?;
        let parent = match check.relative.parent() {
            Some(p) if !p.as_os_str().is_empty() => Some(beneath(p)?),
            // SAFETY: duplicates a live descriptor; the copy is owned here.
            _ => Some(opened(unsafe {
                let copy = libc::fcntl(base.0, libc::F_DUPFD_CLOEXEC, 0);
                if copy < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(copy)
                }
            })?),
        };
        (fd, parent, check.relative.file_name())
    };
    let stat = sys::stat_raw(fd.0).map_err(|e| format!("fstat: {e}"))?;
    let kind = stat.st_mode & libc::S_IFMT;
    let covered = match check.cover {
        Cover::ReadOnly => (stat.st_dev, stat.st_ino) == (check.dev, check.ino),
        Cover::EmptyDir => {
            kind == libc::S_IFDIR
                && stat.st_dev != check.dev
                && sys::is_tmpfs(fd.0)
                && sys::is_mount_root_raw(fd.0)
        }
        Cover::NullFile => kind == libc::S_IFCHR && stat.st_rdev == libc::makedev(1, 3),
    };
    if !covered {
        return Err(match check.cover {
            Cover::ReadOnly => "another file stands where it was checked".to_owned(),
            Cover::EmptyDir | Cover::NullFile => {
                "its mask is not there: the credential itself, or another file, stands in its place"
                    .to_owned()
            }
        });
    }
    if !sys::is_read_only(fd.0) {
        return Err(
            "it is writable inside the sandbox: its read-only mount landed elsewhere".to_owned(),
        );
    }
    let entry = match (parent, name) {
        (Some(parent), Some(name)) => entry_inode(&parent, name.as_bytes()),
        _ => None,
    };
    if !check.mount_root && entry != Some(check.ino) {
        return Err(
            "the mount covers another directory entry than the one checked: the held one was \
             moved away and another put at its name"
                .to_owned(),
        );
    }
    Ok(())
}

/// `open(path, O_PATH)`, following links as `bwrap` did.
fn open_following(path: &CStr) -> std::io::Result<libc::c_int> {
    // SAFETY: open on a NUL-terminated string.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(fd)
    }
}

/// The inode `dir`'s entry `name` names — the file underneath whatever is mounted on it — read
/// with `getdents64`.
fn entry_inode(dir: &Fd, name: &[u8]) -> Option<u64> {
    // O_PATH cannot be listed: open the directory itself through it.
    // SAFETY: openat on a live descriptor and a literal.
    let listed = unsafe {
        libc::openat(
            dir.0,
            c".".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if listed < 0 {
        return None;
    }
    let listed = Fd(listed);
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        // SAFETY: getdents64 writes at most the buffer's length into it.
        let got = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                listed.0,
                buffer.as_mut_ptr(),
                buffer.len(),
            )
        };
        let got = usize::try_from(got).ok().filter(|n| *n > 0)?;
        let mut at = 0;
        // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name (NUL-ended).
        while at + 19 <= got {
            let field = |from: usize, len: usize| buffer.get(at + from..at + from + len);
            let ino = u64::from_ne_bytes(field(0, 8)?.try_into().ok()?);
            let reclen = usize::from(u16::from_ne_bytes(field(16, 2)?.try_into().ok()?));
            let entry = field(19, reclen.checked_sub(19)?)?;
            let entry = entry.split(|b| *b == 0).next()?;
            if entry == name {
                return Some(ino);
            }
            if reclen == 0 {
                return None;
            }
            at += reclen;
        }
    }
}

/// Closes a raw descriptor when dropped.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: closes a descriptor this value owns.
        unsafe { libc::close(self.0) };
    }
}

/// Writes `line` to the verdict pipe; a launcher that no longer listens is not an error
/// (`SIGPIPE` is ignored for the write, then put back as it was).
fn answer(fd: RawFd, line: &[u8]) {
    // SAFETY: sigaction on stack values; write on a buffer that outlives the call.
    unsafe {
        let mut ignore: libc::sigaction = std::mem::zeroed();
        ignore.sa_sigaction = libc::SIG_IGN;
        let mut before: libc::sigaction = std::mem::zeroed();
        let swapped = libc::sigaction(libc::SIGPIPE, &raw const ignore, &raw mut before) == 0;
        libc::write(fd, line.as_ptr().cast(), line.len());
        libc::close(fd);
        if swapped {
            libc::sigaction(libc::SIGPIPE, &raw const before, std::ptr::null_mut());
        }
    }
}

fn say(text: &[u8]) {
    // SAFETY: write on a buffer that outlives the call.
    unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
}

fn exit(code: libc::c_int) -> ! {
    // SAFETY: ends the process; nothing of the program it is part of has run.
    unsafe { libc::_exit(code) }
}

/// Becomes `command` (`program args…`), found on `PATH` as `bwrap` would have: with no
/// descriptor but 0–2 left open, as the launcher promises.
fn exec(command: &[Vec<u8>]) -> ! {
    let Ok(argv) = command
        .iter()
        .map(|a| CString::new(a.clone()))
        .collect::<Result<Vec<_>, _>>()
    else {
        say(b"bosun: an argument holds a NUL byte\n");
        exit(REFUSED)
    };
    let Some(program) = argv.first() else {
        say(b"bosun: the sandbox's last check was given no command\n");
        exit(REFUSED)
    };
    let pointers: Vec<*const libc::c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    // SAFETY: close_range on integers; execvp on NUL-terminated strings that outlive the call.
    let error = unsafe {
        sys::close_from(3);
        libc::execvp(program.as_ptr(), pointers.as_ptr());
        std::io::Error::last_os_error()
    };
    let name = OsString::from_vec(program.as_bytes().to_vec());
    say(format!("bwrap: execvp {}: {error}\n", name.to_string_lossy()).as_bytes());
    exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_read_back_as_it_was_written() {
        let check = |cover, mount_root, base: &str, relative: &str| Check {
            cover,
            dev: 2049,
            ino: 77,
            mount_root,
            base: PathBuf::from(base),
            base_id: (2049, 12),
            relative: PathBuf::from(relative),
        };
        let checks = [
            check(Cover::ReadOnly, false, "/w s", ".git"),
            check(Cover::EmptyDir, true, "/h", ".ssh"),
            check(Cover::NullFile, false, "/h/.netrc", ""),
        ];
        let args = command(
            9,
            8,
            &checks,
            OsStr::new("sh"),
            &["-c".into(), "true".into()],
        );
        assert_eq!(args[0], "/proc/self/fd/9");
        assert_eq!(args[1], MARKER);
        assert_eq!(args[2], "8");
        let read: Vec<Check> = args[3..12]
            .chunks(3)
            .filter_map(|a| Check::parse(a[0].as_bytes(), a[1].as_bytes(), a[2].as_bytes()))
            .collect();
        assert_eq!(read, checks);
        assert_eq!(args[12..], ["--", "sh", "-c", "true"]);
        assert_eq!(checks[2].path(), Path::new("/h/.netrc"));
    }
}
