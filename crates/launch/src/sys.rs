//! Every system call of the launcher that std does not wrap: the probes, the pids cgroup, and
//! [`ChildPlan::apply`], which runs in the forked child before `exec`.
//!
//! The child side may only make async-signal-safe calls (the parent is multi-threaded, so the
//! child must not allocate or take a lock): everything it needs — C strings, the Landlock
//! ruleset's file descriptor, the BPF programs, the rlimits — is built in the parent first.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the kernel's Landlock
/// ABI, or 0 when Landlock is missing.
pub(crate) fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer and size 0 the kernel reads no memory; the call
    // only returns the ABI version or -1.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(abi).unwrap_or(0).max(0)
}

/// Whether the kernel has seccomp (`prctl(PR_GET_SECCOMP)` answers rather than `EINVAL`).
pub(crate) fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP reads no memory of this process.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// Whether this process runs as root.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// The effective user and group ids, for the child's identity maps.
pub(crate) fn ids() -> (u32, u32) {
    // SAFETY: as above.
    unsafe { (libc::geteuid(), libc::getegid()) }
}

/// Whether a child can make its own user and mount namespaces and map itself: forks a child
/// that tries exactly what [`ChildPlan::apply`] does, and reports its exit status.
pub(crate) fn user_namespaces_work() -> bool {
    let Ok(maps) = IdMaps::for_self() else {
        return false;
    };
    // SAFETY: the child only makes system calls on memory prepared before the fork (the maps'
    // C strings) and leaves with _exit, never returning into Rust code that could allocate or
    // take a lock held by another thread of the parent.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            let ok = enter_namespaces(&maps).is_ok();
            libc::_exit(if ok { 0 } else { 1 });
        }
        if pid < 0 {
            return false;
        }
        let mut status = 0;
        while libc::waitpid(pid, &raw mut status, 0) < 0 {
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return false;
            }
        }
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }
}

/// The directory under which a pids cgroup for a child can be made, when this process may
/// make one there: cgroup v1's `pids` hierarchy or v2's unified one with `pids` enabled for
/// children.
pub(crate) fn pids_cgroup_base() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut candidates = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            candidates.push(Path::new("/sys/fs/cgroup/pids").join(path));
        } else if id == "0" && controllers.is_empty() {
            candidates.push(Path::new("/sys/fs/cgroup").join(path));
        }
    }
    let base = candidates.into_iter().find(|base| {
        let probe = base.join(format!("bosun-probe-{}", std::process::id()));
        if std::fs::create_dir(&probe).is_err() {
            return false;
        }
        let usable = probe.join("pids.max").exists() && probe.join("cgroup.procs").exists();
        let _ = std::fs::remove_dir(&probe);
        usable
    })?;
    remove_stale_cgroups(&base);
    Some(base)
}

/// Removes the cgroups earlier Bosun processes left behind (a process killed before it could
/// clean up): `bosun-<pid>-…` whose pid no longer runs, after killing what is still in them.
fn remove_stale_cgroups(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok).take(4096) {
        if !left_by_a_dead_process(&entry.file_name(), "bosun-") {
            continue;
        }
        let dir = entry.path();
        kill_cgroup(&dir);
        let _ = std::fs::remove_dir(&dir);
    }
}

/// Whether `name` is `<prefix><pid>-…` of a process that no longer runs: something an earlier
/// Bosun process made and was killed before it could remove.
pub(crate) fn left_by_a_dead_process(name: &std::ffi::OsStr, prefix: &str) -> bool {
    name.to_str()
        .and_then(|n| n.strip_prefix(prefix))
        .and_then(|rest| rest.split('-').next())
        .and_then(|pid| pid.parse::<u32>().ok())
        .is_some_and(|pid| {
            pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists()
        })
}

/// Signals every process listed in a cgroup's `cgroup.procs`.
pub(crate) fn kill_cgroup(dir: &Path) {
    // A fork racing with the read is caught by the next pass; callers loop until it is empty.
    let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
        return;
    };
    for pid in procs
        .lines()
        .filter_map(|l| l.trim().parse::<libc::pid_t>().ok())
    {
        if pid > 1 {
            // SAFETY: kill(2) takes two integers and touches no memory; ESRCH is ignored.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// The user and group maps a child writes for itself: its own ids, mapped to themselves.
#[derive(Debug)]
pub(crate) struct IdMaps {
    uid_map: CString,
    gid_map: CString,
}

impl IdMaps {
    pub(crate) fn for_self() -> io::Result<IdMaps> {
        let (uid, gid) = ids();
        Ok(IdMaps {
            uid_map: CString::new(format!("{uid} {uid} 1\n"))?,
            gid_map: CString::new(format!("{gid} {gid} 1\n"))?,
        })
    }
}

/// A place the parent held open (`crate::held`), as the child finds it again after entering its
/// own mount namespace (where the parent's descriptors cannot be mounted on): its canonical path,
/// reopened through no symbolic link, and the file the parent held there.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) path: CString,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

impl Target {
    /// Opens the target again (`O_PATH`) through no symbolic link, and only if it is still the
    /// file the parent held: a link on the path now fails with `ELOOP`, another file in its
    /// place with `ESTALE` (the parent names both, [`crate::LaunchError::Changed`]).
    ///
    /// # Safety
    /// Async-signal-safe; callable in a forked child.
    pub(crate) unsafe fn reopen(&self) -> io::Result<libc::c_int> {
        // SAFETY: raw system calls on the target's C string and a stack value.
        unsafe {
            let fd = open_no_links(libc::AT_FDCWD, &self.path, false)?;
            match identity(fd) {
                Ok(found) if found == (self.dev, self.ino) => Ok(fd),
                Ok(_) => {
                    libc::close(fd);
                    Err(io::Error::from_raw_os_error(libc::ESTALE))
                }
                Err(e) => {
                    libc::close(fd);
                    Err(e)
                }
            }
        }
    }
}

/// `openat2(dir, path, O_PATH | O_NOFOLLOW | O_CLOEXEC)` resolving no symbolic link on any
/// component (`RESOLVE_NO_SYMLINKS`) and, with `beneath`, nothing outside `dir`
/// (`RESOLVE_BENEATH`). A kernel without `openat2` (before Linux 5.6, or a seccomp filter of a
/// container that refuses it) answers `ENOSYS` or `EPERM`: never a fallback by name.
///
/// # Safety
/// Async-signal-safe; callable in a forked child. `dir` is a descriptor or `AT_FDCWD`.
pub(crate) unsafe fn open_no_links(
    dir: libc::c_int,
    path: &std::ffi::CStr,
    beneath: bool,
) -> io::Result<libc::c_int> {
    /// `struct open_how` of openat2(2).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let flags = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let how = OpenHow {
        flags: u64::from(flags.cast_unsigned()),
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS | if beneath { libc::RESOLVE_BENEATH } else { 0 },
    };
    // The kernel answers EAGAIN when a rename raced with the resolution: try a few times.
    let mut last = io::Error::from_raw_os_error(libc::EAGAIN);
    for _ in 0..16 {
        // SAFETY: `path` is NUL-terminated and `how` a stack value that outlives the call.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                path.as_ptr(),
                &raw const how,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            let fd =
                libc::c_int::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
            // `O_PATH | O_NOFOLLOW` opens a link at the end of the path itself rather than
            // failing: that is a link on the path too.
            // SAFETY: fstat writes into a zeroed stack value of the right type.
            let link = unsafe {
                let mut stat: libc::stat = std::mem::zeroed();
                libc::fstat(fd, &raw mut stat) < 0 || stat.st_mode & libc::S_IFMT == libc::S_IFLNK
            };
            if link {
                // SAFETY: closes the descriptor just opened, owned by nothing else.
                unsafe { libc::close(fd) };
                return Err(io::Error::from_raw_os_error(libc::ELOOP));
            }
            return Ok(fd);
        }
        last = io::Error::last_os_error();
        if !matches!(last.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) {
            break;
        }
    }
    Err(last)
}

/// [`open_no_links`] for the parent: from `dir` (`None`: the current directory, for an
/// absolute path), an owned descriptor.
pub(crate) fn open_held(
    dir: Option<BorrowedFd<'_>>,
    path: &std::ffi::CStr,
    beneath: bool,
) -> io::Result<OwnedFd> {
    let dir = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: a raw system call on a live descriptor and a C string that outlive it; the
    // descriptor it returns is owned by nothing else.
    unsafe { open_no_links(dir, path, beneath).map(|fd| OwnedFd::from_raw_fd(fd)) }
}

/// `(st_dev, st_ino, st_mode)` of an open descriptor, for the parent.
pub(crate) fn stat_of(fd: BorrowedFd<'_>) -> io::Result<(u64, u64, u32)> {
    // SAFETY: fstat writes into a zeroed stack value of the right type.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        check(libc::fstat(fd.as_raw_fd(), &raw mut stat))?;
        Ok((stat.st_dev, stat.st_ino, stat.st_mode))
    }
}

/// Whether `name` in the directory `dir` is a symbolic link (not followed).
pub(crate) fn is_link_at(dir: BorrowedFd<'_>, name: &std::ffi::CStr) -> bool {
    // SAFETY: fstatat reads a C string and writes into a zeroed stack value of the right type.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &raw mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        ) == 0
            && stat.st_mode & libc::S_IFMT == libc::S_IFLNK
    }
}

/// The whole `stat` of an open descriptor.
///
/// Async-signal-safe.
pub(crate) fn stat_raw(fd: libc::c_int) -> io::Result<libc::stat> {
    // SAFETY: fstat writes into a zeroed stack value of the right type.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        check(libc::fstat(fd, &raw mut stat))?;
        Ok(stat)
    }
}

fn statfs_raw(fd: libc::c_int) -> Option<libc::statfs> {
    // SAFETY: fstatfs writes into a zeroed stack value of the right type.
    unsafe {
        let mut stat: libc::statfs = std::mem::zeroed();
        (libc::fstatfs(fd, &raw mut stat) == 0).then_some(stat)
    }
}

/// `ST_RDONLY` of statvfs(3)'s `f_flag` on Linux.
const ST_RDONLY: libc::c_ulong = 1;

/// Whether the mount the descriptor lies on is read-only (`ST_RDONLY`: the mount's own flag or
/// its filesystem's).
pub(crate) fn is_read_only(fd: libc::c_int) -> bool {
    // SAFETY: fstatvfs writes into a zeroed stack value of the right type.
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        libc::fstatvfs(fd, &raw mut stat) == 0 && stat.f_flag & ST_RDONLY != 0
    }
}

/// Whether the descriptor lies on a tmpfs.
pub(crate) fn is_tmpfs(fd: libc::c_int) -> bool {
    statfs_raw(fd).is_some_and(|s| s.f_type == libc::TMPFS_MAGIC)
}

/// Whether the descriptor is the root of a mount (`STATX_ATTR_MOUNT_ROOT`, Linux 5.8); `false`
/// when the kernel does not say.
pub(crate) fn is_mount_root_raw(fd: libc::c_int) -> bool {
    let flag = u64::try_from(libc::STATX_ATTR_MOUNT_ROOT).unwrap_or(0);
    // SAFETY: statx with an empty path on a live descriptor writes into a zeroed stack value.
    unsafe {
        let mut stat: libc::statx = std::mem::zeroed();
        libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            0,
            &raw mut stat,
        ) == 0
            && stat.stx_attributes_mask & flag != 0
            && stat.stx_attributes & flag != 0
    }
}

/// [`is_mount_root_raw`] for the parent.
pub(crate) fn is_mount_root(fd: BorrowedFd<'_>) -> bool {
    is_mount_root_raw(fd.as_raw_fd())
}

/// A pipe, both ends close-on-exec: `(read, write)`.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array, owned by nothing else.
    unsafe {
        check(libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC))?;
        Ok((OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])))
    }
}

/// `(st_dev, st_ino)` of an open descriptor.
///
/// # Safety
/// Async-signal-safe; callable in a forked child.
pub(crate) unsafe fn identity(fd: libc::c_int) -> io::Result<(u64, u64)> {
    // SAFETY: fstat writes into a zeroed stack value of the right type.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        check(libc::fstat(fd, &raw mut stat))?;
        Ok((stat.st_dev, stat.st_ino))
    }
}

/// A credential masked in the child's mount namespace.
#[derive(Debug)]
pub(crate) enum Mask {
    /// A file: `/dev/null` bound over it, read-only.
    File(Target),
    /// A directory: an empty read-only tmpfs mounted over it.
    Dir(Target),
}

/// The child's own mount namespace: its identity maps, the paths bound read-only and the
/// credentials masked.
#[derive(Debug)]
pub(crate) struct Mounts {
    pub(crate) maps: IdMaps,
    pub(crate) read_only: Vec<Target>,
    pub(crate) masks: Vec<Mask>,
}

thread_local! {
    /// Set on the one thread that spawns every child [`crate::Launcher::spawn`] starts. The
    /// kernel's parent-death signal follows the *thread* that forked, so it is only asked for
    /// on this thread, which lives as long as the process.
    pub(crate) static ON_SPAWNER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Everything the forked child does before `exec`, prepared in the parent.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    /// The pid of the process that forks (Bosun), to check after asking for the parent-death
    /// signal that it has not already gone.
    pub(crate) parent: libc::pid_t,
    /// A seccomp program refusing terminal input injection, tried without `no_new_privs`
    /// for every child (it only installs for a process that could inject anyway).
    pub(crate) terminal: Vec<libc::sock_filter>,
    /// `(resource, limit)` pairs set as both soft and hard limits.
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, libc::rlim_t)>,
    /// The child's cgroup's `cgroup.procs`, which it joins first.
    pub(crate) cgroup_procs: Option<CString>,
    /// User and mount namespaces, the paths to bind read-only and the credentials to mask.
    pub(crate) namespaces: Option<Mounts>,
    /// The Landlock ruleset to restrict to.
    pub(crate) landlock: Option<OwnedFd>,
    /// seccomp programs, installed in order.
    pub(crate) seccomp: Vec<Vec<libc::sock_filter>>,
    /// A program to become instead of the command's own (`bwrap`, which runs the command).
    pub(crate) exec: Option<Exec>,
}

/// `execve(path, argv, envp)` prepared in the parent, and descriptors the new program inherits.
#[derive(Debug)]
pub(crate) struct Exec {
    path: CString,
    _argv: Vec<CString>,
    pointers: Vec<*const libc::c_char>,
    _envp: Vec<CString>,
    env_pointers: Vec<*const libc::c_char>,
    inherit: Vec<libc::c_int>,
    /// The places `bwrap` is handed by descriptor, open until the command is dropped.
    _held: Vec<OwnedFd>,
    /// The places `bwrap` mounts over by name (protected paths, masks), checked to be still
    /// what the parent held just before it starts.
    places: Vec<Target>,
    /// FIFOs a hostile test meets the child at just before `bwrap` starts: `(checked, go)`.
    #[cfg(feature = "testing")]
    pause: Option<(CString, CString)>,
}

// SAFETY: the pointers point into `_argv`'s and `_envp`'s heap buffers, which the struct owns
// and never changes; they are only read, in the forked child.
#[allow(unsafe_code)]
unsafe impl Send for Exec {}
// SAFETY: as above; nothing is written through the pointers.
#[allow(unsafe_code)]
unsafe impl Sync for Exec {}

impl Exec {
    /// `path` run with `argv` (`argv[0]` included) and exactly the environment `envp`
    /// (`NAME=value` each); `inherit` and `held` stay open across the `exec`; each of `places`
    /// must still be what the parent held, or the child does not start.
    pub(crate) fn new(
        path: CString,
        argv: Vec<CString>,
        envp: Vec<CString>,
        mut inherit: Vec<libc::c_int>,
        held: Vec<OwnedFd>,
        places: Vec<Target>,
    ) -> Exec {
        inherit.extend(held.iter().map(AsRawFd::as_raw_fd));
        let nul_ended = |strings: &[CString]| -> Vec<*const libc::c_char> {
            strings
                .iter()
                .map(|a| a.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        Exec {
            pointers: nul_ended(&argv),
            env_pointers: nul_ended(&envp),
            path,
            _argv: argv,
            _envp: envp,
            inherit,
            _held: held,
            places,
            #[cfg(feature = "testing")]
            pause: None,
        }
    }

    /// Makes the child meet a test at the FIFOs `dir/checked` and `dir/go` just before it
    /// starts `bwrap` ([`crate::Launcher::pause_before_bwrap`]).
    #[cfg(feature = "testing")]
    pub(crate) fn pause_before_bwrap(
        mut self,
        dir: Option<&Path>,
    ) -> Result<Exec, crate::LaunchError> {
        use std::os::unix::ffi::OsStrExt;
        let fifo = |name: &str| {
            dir.map(|d| CString::new(d.join(name).as_os_str().as_bytes()))
                .transpose()
                .map_err(|_| crate::LaunchError::Setup("a FIFO's path holds a NUL".to_owned()))
        };
        self.pause = fifo("checked")?.zip(fifo("go")?);
        Ok(self)
    }
}

impl ChildPlan {
    /// A plan that only detaches the child ([`ChildPlan::detach`]): for a launcher that
    /// confines nothing.
    pub(crate) fn detach_only(terminal: Vec<libc::sock_filter>) -> ChildPlan {
        ChildPlan {
            parent: parent_pid(),
            terminal,
            rlimits: Vec::new(),
            cgroup_procs: None,
            namespaces: None,
            landlock: None,
            seccomp: Vec::new(),
            exec: None,
        }
    }

    /// Detaches the child from everything of Bosun's it should not keep, confined or not: its
    /// own session without a controlling terminal (so `/dev/tty` cannot be opened and
    /// `TIOCSTI` has no terminal to push into), every descriptor but 0–2 closed at `exec`, and
    /// — when spawned from the spawner thread — killed by the kernel if Bosun dies.
    ///
    /// # Safety
    /// As [`ChildPlan::apply`].
    unsafe fn detach(&self) -> io::Result<()> {
        // SAFETY: raw system calls on integers; the thread-local read allocates nothing.
        unsafe {
            // Fails only for a process-group leader: spawn without `process_group`, the new
            // session is the child's own group.
            check(libc::setsid())?;
            close_from(3);
            if !self.terminal.is_empty()
                && let Ok(len) = u16::try_from(self.terminal.len())
            {
                let prog = libc::sock_fprog {
                    len,
                    filter: self.terminal.as_ptr().cast_mut(),
                };
                // Without `no_new_privs` this installs only for a process with
                // `CAP_SYS_ADMIN` — the only kind that can inject into a terminal not its own
                // once it has none (EACCES otherwise, and nothing to refuse).
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0 as libc::c_uint,
                    &raw const prog,
                );
            }
            if ON_SPAWNER.with(std::cell::Cell::get) {
                check(libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ))?;
                // Bosun may have died between the fork and the request.
                if libc::getppid() != self.parent {
                    libc::_exit(137);
                }
            }
        }
        Ok(())
    }

    /// Confines the calling process. Runs in the child between `fork` and `exec`.
    ///
    /// # Safety
    /// Call only in a forked child before `exec` (as a `pre_exec` hook): it changes the
    /// process's namespaces, limits and security state for good.
    pub(crate) unsafe fn apply(&self) -> io::Result<()> {
        // SAFETY (whole body): each call below is a raw system call on memory owned by `self`,
        // which outlives the call; none allocates or locks.
        unsafe {
            self.detach()?;
            for (resource, limit) in &self.rlimits {
                let value = libc::rlimit {
                    rlim_cur: *limit,
                    rlim_max: *limit,
                };
                check(libc::setrlimit(*resource, &raw const value))?;
            }
            if let Some(procs) = &self.cgroup_procs {
                write_file(procs, b"0")?;
            }
            if let Some(mounts) = &self.namespaces {
                enter_namespaces(&mounts.maps)?;
                check(libc::mount(
                    c"none".as_ptr(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ))?;
                // Each place is reopened here, in the child's own mount namespace, through no
                // link and checked to be the file the parent held; every mount is then made on
                // that descriptor, never on a name that could lead elsewhere by now.
                for target in &mounts.read_only {
                    let fd = target.reopen()?;
                    let done = bind_read_only(fd, fd);
                    libc::close(fd);
                    done?;
                }
                for mask in &mounts.masks {
                    match mask {
                        Mask::File(target) => {
                            let fd = target.reopen()?;
                            let null =
                                libc::open(c"/dev/null".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                            if null < 0 {
                                return Err(io::Error::last_os_error());
                            }
                            let done = bind_read_only(null, fd);
                            libc::close(null);
                            libc::close(fd);
                            done?;
                        }
                        Mask::Dir(target) => {
                            let fd = target.reopen()?;
                            let done = mount_empty_dir(fd);
                            libc::close(fd);
                            done?;
                        }
                    }
                }
            }
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            if let Some(ruleset) = &self.landlock {
                let done = libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    ruleset.as_raw_fd(),
                    0 as libc::c_uint,
                );
                if done < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            for program in &self.seccomp {
                let prog = libc::sock_fprog {
                    len: u16::try_from(program.len())
                        .map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
                    filter: program.as_ptr().cast_mut(),
                };
                let done = libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0 as libc::c_uint,
                    &raw const prog,
                );
                if done < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(exec) = &self.exec {
                // bwrap mounts over these by name: they must still be what was held.
                for target in &exec.places {
                    libc::close(target.reopen()?);
                }
                #[cfg(feature = "testing")]
                if let Some((checked, go)) = &exec.pause {
                    let mut byte = [b'x'];
                    let fd = libc::open(checked.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    libc::write(fd, byte.as_ptr().cast(), 1);
                    libc::close(fd);
                    let fd = libc::open(go.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                    libc::read(fd, byte.as_mut_ptr().cast(), 1);
                    libc::close(fd);
                }
                for fd in &exec.inherit {
                    check(libc::fcntl(*fd, libc::F_SETFD, 0))?;
                }
                // Not `environ`: std puts the command's environment there only after the
                // pre-exec steps, so it is still Bosun's own here.
                libc::execve(
                    exec.path.as_ptr(),
                    exec.pointers.as_ptr(),
                    exec.env_pointers.as_ptr(),
                );
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// New user and mount namespaces, with this process's ids mapped to themselves.
///
/// # Safety
/// As [`ChildPlan::apply`].
unsafe fn enter_namespaces(maps: &IdMaps) -> io::Result<()> {
    // SAFETY: raw system calls on C strings owned by `maps`.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", maps.uid_map.as_bytes())?;
        write_file(c"/proc/self/gid_map", maps.gid_map.as_bytes())?;
    }
    Ok(())
}

/// The pid of this process, which forks the children.
pub(crate) fn parent_pid() -> libc::pid_t {
    // SAFETY: getpid cannot fail and touches no memory.
    unsafe { libc::getpid() }
}

/// Marks every descriptor from `first` up close-on-exec: `close_range(2)`, or one `fcntl` per
/// descriptor below the open-files limit on kernels before 5.11.
///
/// # Safety
/// Async-signal-safe; callable in a forked child.
pub(crate) unsafe fn close_from(first: libc::c_uint) {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: raw system calls on integers and a stack value.
    unsafe {
        let done = libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
        if done == 0 {
            return;
        }
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) == 0 {
            limit.rlim_cur.min(1 << 20)
        } else {
            1 << 16
        };
        let mut fd = libc::c_int::try_from(first).unwrap_or(3);
        while libc::rlim_t::try_from(fd).is_ok_and(|f| f < top) {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
            fd += 1;
        }
    }
}

/// `struct mount_attr` of mount_setattr(2) and fsmount's attributes.
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_BOTH_EMPTY: libc::c_uint = 0x4 | 0x40; // MOVE_MOUNT_F_ and _T_EMPTY_PATH

/// Binds the tree at descriptor `source` onto descriptor `target`, read-only with every mount
/// below it: the tree is cloned (`open_tree`), made read-only while detached, and moved onto
/// `target` (`move_mount`), so no name is resolved at all.
///
/// # Safety
/// As [`ChildPlan::apply`].
unsafe fn bind_read_only(source: libc::c_int, target: libc::c_int) -> io::Result<()> {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const OPEN_TREE_CLONE: libc::c_uint = 0x1;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: raw system calls on descriptors, empty C strings and a stack value that
    // outlives them.
    unsafe {
        let tree = libc::syscall(
            libc::SYS_open_tree,
            source,
            c"".as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC.cast_unsigned()
                | libc::AT_EMPTY_PATH.cast_unsigned()
                | AT_RECURSIVE,
        );
        let tree = fd_of(tree)?;
        let done = (|| {
            syscall_ok(libc::syscall(
                libc::SYS_mount_setattr,
                tree,
                c"".as_ptr(),
                libc::AT_EMPTY_PATH.cast_unsigned() | AT_RECURSIVE,
                &raw const attr,
                std::mem::size_of::<MountAttr>(),
            ))?;
            move_onto(tree, target)
        })();
        libc::close(tree);
        done
    }
}

/// Mounts an empty read-only tmpfs (no set-uid programs, devices or programs at all) onto
/// descriptor `target`, through the new mount API so that no name is resolved.
///
/// # Safety
/// As [`ChildPlan::apply`].
unsafe fn mount_empty_dir(target: libc::c_int) -> io::Result<()> {
    const FSOPEN_CLOEXEC: libc::c_uint = 0x1;
    const FSCONFIG_SET_STRING: libc::c_uint = 1;
    const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
    const FSMOUNT_CLOEXEC: libc::c_uint = 0x1;
    // SAFETY: raw system calls on descriptors and NUL-terminated literals.
    unsafe {
        let fs = fd_of(libc::syscall(
            libc::SYS_fsopen,
            c"tmpfs".as_ptr(),
            FSOPEN_CLOEXEC,
        ))?;
        let done = (|| {
            for (key, value) in [(c"size", c"4k"), (c"mode", c"0500")] {
                syscall_ok(libc::syscall(
                    libc::SYS_fsconfig,
                    fs,
                    FSCONFIG_SET_STRING,
                    key.as_ptr(),
                    value.as_ptr(),
                    0,
                ))?;
            }
            syscall_ok(libc::syscall(
                libc::SYS_fsconfig,
                fs,
                FSCONFIG_CMD_CREATE,
                std::ptr::null::<libc::c_char>(),
                std::ptr::null::<libc::c_void>(),
                0,
            ))?;
            let mount = fd_of(libc::syscall(
                libc::SYS_fsmount,
                fs,
                FSMOUNT_CLOEXEC,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
            ))?;
            let moved = move_onto(mount, target);
            libc::close(mount);
            moved
        })();
        libc::close(fs);
        done
    }
}

/// `move_mount` of the detached mount `mount` onto descriptor `target`.
///
/// # Safety
/// As [`ChildPlan::apply`].
unsafe fn move_onto(mount: libc::c_int, target: libc::c_int) -> io::Result<()> {
    // SAFETY: raw system call on descriptors and empty C strings.
    syscall_ok(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            mount,
            c"".as_ptr(),
            target,
            c"".as_ptr(),
            MOVE_MOUNT_BOTH_EMPTY,
        )
    })
}

fn fd_of(result: libc::c_long) -> io::Result<libc::c_int> {
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    libc::c_int::try_from(result).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))
}

fn syscall_ok(result: libc::c_long) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `bytes` to the file at `path` with open/write/close.
///
/// # Safety
/// Async-signal-safe; callable in a forked child.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and `bytes` valid for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if usize::try_from(written).ok() != Some(bytes.len()) {
            return Err(error);
        }
    }
    Ok(())
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
