//! Bosun's one process launcher. Every process Bosun starts — `run_command`, stdio MCP
//! servers, JavaScript plugins' processes, Claude Code plugins' hooks and `git` fetches — is
//! confined here before `exec`:
//!
//! - **filesystem** (Landlock): read the system directories, toolchains and `[sandbox] read`;
//!   write only the workspace, a private `TMPDIR` for this child (removed afterwards) and
//!   `[sandbox] write`. Nothing else of `$HOME`: no `~/.ssh`, no `$BOSUN_HOME`.
//! - **protected paths** (a private user and mount namespace): the workspace's existing `.git`,
//!   `.bosun`, … bind-mounted read-only.
//! - **network** (seccomp and Landlock): no sockets but Unix ones unless policy granted
//!   `net.http` for this call; then TCP connects only to the granted ports.
//! - **other processes** (Landlock scoping): no reading Bosun's memory or environment through
//!   `/proc/<pid>/environ`, no signals or abstract sockets outside the sandbox.
//! - **system calls** (seccomp, `no_new_privs`): no ptrace, io_uring, mounts, new namespaces,
//!   bpf, keyrings or modules; no `setsid`/`setpgid`, so the whole tree stays in the process
//!   group the caller kills.
//! - **processes**: a pids cgroup per child (or `RLIMIT_NPROC`), and rlimits on file size, CPU
//!   time and core dumps.
//! - **credentials** ([`CREDENTIALS`]) and **private places inside the workspace** (Bosun's home):
//!   never granted; where a grant would take one in, masked in
//!   the child's mount namespace.
//! - **every path above** is resolved once and held open: rules and mounts are made on the
//!   descriptor checked, so a directory swapped for a link meanwhile refuses the launch rather
//!   than redirecting a grant or a mask. Under bubblewrap, which mounts protected paths and masks
//!   over names, a last check inside the finished sandbox (`stage.rs`) confirms each mount sits on
//!   the file that was held before the command runs.
//! - **environment**, confined or not: exactly the variables the command sets, nothing inherited
//!   from Bosun; its `PATH` keeps only absolute entries ([`search_path`]), so `.` or `bin` never
//!   resolve a program name to a file in the workspace.
//! - **Bosun's own things**, confined or not: the child starts in a session of its own with no
//!   controlling terminal (it cannot open `/dev/tty` or push keystrokes with `TIOCSTI`), no
//!   descriptor of Bosun's but 0–2 reaches it, and — started with [`Launcher::spawn`] — the
//!   kernel kills it if Bosun dies; dropping its [`Jail`] kills its process group and cgroup and
//!   removes its `TMPDIR`.
//!
//! [`Launcher::status`] probes once what this machine enforces; a missing layer is reported,
//! never silently skipped, and `[sandbox] require = true` refuses to start children without
//! every layer.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use bosun_launch::{Confinement, Launcher, Network, SandboxConfig};
//!
//! let launcher = Launcher::new(SandboxConfig::default());
//! let mut command = tokio::process::Command::new("cargo");
//! // The child gets only what is set here: nothing of Bosun's own environment.
//! command
//!     .arg("test")
//!     .current_dir("/work/project")
//!     .env("PATH", "/home/me/.cargo/bin:/usr/bin:/bin")
//!     .env("HOME", "/home/me");
//! let confinement = Confinement::new("/work/project".into(), Network::Off);
//! let (mut child, jail) = launcher.spawn(command, &confinement)?;
//! let status = child.wait().await?;
//! drop(jail); // kills what is left of the tree, removes its TMPDIR and cgroup
//! # let _ = status; Ok(()) }
//! ```

mod bwrap;
mod config;
mod held;
mod rules;
pub mod search_path;
mod spawner;
mod stage;
mod status;
mod sys;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

pub use config::{
    Backend, ConfigError, DEFAULT_MAX_FILE_MIB, DEFAULT_MAX_PROCESSES, DEFAULT_PLUGIN_INSTANCES,
    MAX_PLUGIN_INSTANCES, SandboxConfig,
};
pub use rules::CREDENTIALS;
pub use status::{Layer, LayerState, Status};

/// The network a child may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// Unix sockets only.
    Off,
    /// Internet sockets, with TCP connects only to these ports (where Landlock can say so).
    TcpPorts(Vec<u16>),
}

/// What one child may touch besides the system and the `[sandbox]` paths.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// The workspace: readable and writable.
    pub workspace: PathBuf,
    /// More paths to read for this child (an MCP server's own directory, say).
    pub read: Vec<PathBuf>,
    /// More paths to write for this child.
    pub write: Vec<PathBuf>,
    /// Its network.
    pub network: Network,
    /// Paths inside the workspace to keep read-only (they must exist to be protected).
    pub protected: Vec<PathBuf>,
    /// CPU seconds before the kernel stops it (`RLIMIT_CPU`).
    pub cpu_seconds: Option<u64>,
    /// Paths its approved command line names (`node /srv/mcp/server.mjs`): each existing file
    /// becomes readable, and its directory too unless that directory holds or lies inside a
    /// private place (the user's home, Bosun's home). See [`Launcher::private`].
    pub named: Vec<PathBuf>,
}

impl Confinement {
    /// A confinement to `workspace` with `network` and nothing else.
    pub fn new(workspace: PathBuf, network: Network) -> Confinement {
        Confinement {
            workspace,
            read: Vec::new(),
            write: Vec::new(),
            network,
            protected: Vec::new(),
            cpu_seconds: None,
            named: Vec::new(),
        }
    }

    /// Names `args` (the absolute ones) as paths the command line gives the child.
    pub fn name_arguments<S: AsRef<str>>(&mut self, args: impl IntoIterator<Item = S>) {
        self.named.extend(
            args.into_iter()
                .map(|a| PathBuf::from(a.as_ref()))
                .filter(|p| p.is_absolute()),
        );
    }
}

/// Why a child could not be confined.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// `[sandbox] require = true` and a layer is missing.
    #[error(
        "the sandbox is required ([sandbox] require = true) but this machine does not enforce: \
         {missing}; run `bosun sandbox status` for why, or set require = false"
    )]
    Required {
        /// The missing layers.
        missing: String,
    },
    /// Preparing a layer failed.
    #[error("could not prepare the sandbox: {0}; run `bosun sandbox status`")]
    Setup(String),
    /// A path the sandbox is built from changed between the moment it was checked and the
    /// moment it was used: a symbolic link, or another file, now stands where the check found
    /// a directory or file. The child is not started.
    #[error(
        "the sandbox was not built: {place} changed while it was set up ({what}); another \
         process may be swapping it to redirect the sandbox's rules — see what stands at that \
         path now (a link a program made inside the workspace?), remove it, and run the \
         command again"
    )]
    Changed {
        /// The path, as given, or which kind of path.
        place: String,
        /// What was found.
        what: String,
    },
    /// The program could not be started.
    #[error("{0}")]
    Spawn(std::io::Error),
}

/// Starts children confined; one per host.
#[derive(Debug)]
pub struct Launcher {
    config: SandboxConfig,
    status: OnceLock<Status>,
    home: Option<PathBuf>,
    /// Places a named path never opens up: the user's home and those added by [`Launcher::private`].
    private: Vec<PathBuf>,
    /// Where the probe's result is kept for this boot, when set.
    cache: Option<PathBuf>,
    /// A directory of two FIFOs a hostile test meets a bubblewrap child at, between the
    /// launcher's last check and `bwrap`'s start ([`Launcher::pause_before_bwrap`]).
    #[cfg(feature = "testing")]
    pause: Option<PathBuf>,
}

impl Launcher {
    /// A launcher for `config`. What the machine enforces is probed on first use.
    pub fn new(config: SandboxConfig) -> Launcher {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Launcher {
            config,
            status: OnceLock::new(),
            private: home
                .iter()
                .map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.clone()))
                .collect(),
            home,
            cache: None,
            #[cfg(feature = "testing")]
            pause: None,
        }
    }

    /// For hostile tests: every bubblewrap child, once the launcher has checked its protected
    /// paths and masks and just before it starts `bwrap`, writes a byte to the FIFO
    /// `dir/checked` and waits for one on the FIFO `dir/go` — the instant another process could
    /// swap a place for a link or another directory.
    #[cfg(feature = "testing")]
    #[must_use]
    pub fn pause_before_bwrap(mut self, dir: impl Into<PathBuf>) -> Launcher {
        self.pause = Some(dir.into());
        self
    }

    /// Takes `home` as the user's home rather than `$HOME` (an embedding program, a test):
    /// toolchain grants and credentials are found under it, and it is the first private place.
    /// Call it before [`Launcher::private`].
    #[must_use]
    pub fn with_home(mut self, home: impl Into<PathBuf>) -> Launcher {
        let home = home.into();
        self.private = vec![std::fs::canonicalize(&home).unwrap_or_else(|_| home.clone())];
        self.home = Some(home);
        self
    }

    /// Keeps what the machine enforces in `dir` for the rest of this boot, so that a command
    /// does not fork a probe every time. A result from the cache that no longer holds fails
    /// closed: the child is not started (`bosun sandbox status` always probes afresh).
    #[must_use]
    pub fn cache_in(mut self, dir: impl Into<PathBuf>) -> Launcher {
        self.cache = Some(dir.into());
        self
    }

    /// Adds a private place (Bosun's home, say): a path a command line names opens up nothing
    /// inside it, and no directory that holds it. `[sandbox] read` can still grant it.
    #[must_use]
    pub fn private(mut self, path: impl Into<PathBuf>) -> Launcher {
        let path = path.into();
        self.private
            .push(std::fs::canonicalize(&path).unwrap_or(path));
        self
    }

    /// A launcher that confines nothing (`[sandbox] enabled = false`).
    pub fn unconfined() -> Launcher {
        Launcher::new(SandboxConfig {
            enabled: false,
            ..SandboxConfig::default()
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// What this machine enforces (probed once).
    pub fn status(&self) -> &Status {
        self.status.get_or_init(|| match &self.cache {
            Some(dir) => cached_probe(&self.config, dir),
            None => probe(&self.config),
        })
    }

    /// Why a child confined to one folder it writes, with [`Network::Off`], could still put what
    /// it is handed where others read it — the sandbox is off, this machine does not fully
    /// enforce its filesystem or network layer, or `[sandbox] write` grants every child more
    /// places — or `None` when it cannot: its one folder and its output are then all it leaves.
    pub fn outlet(&self) -> Option<String> {
        let status = self.status();
        if !status.enabled {
            return Some("the OS sandbox is off ([sandbox] enabled = false)".to_owned());
        }
        for layer in [Layer::Filesystem, Layer::Network] {
            let enforced = status
                .layers
                .iter()
                .any(|(l, state)| *l == layer && state.is_enforced());
            if !enforced {
                return Some(format!(
                    "this machine does not fully enforce the sandbox's {} layer (bosun sandbox status)",
                    layer.name()
                ));
            }
        }
        if !self.config.write.is_empty() {
            return Some(format!(
                "[sandbox] write lets every child write {}",
                self.config.write.join(", ")
            ));
        }
        None
    }

    /// Makes `command` start its child confined by `confinement`: sets the pre-exec steps and
    /// a private `TMPDIR`. Keep the returned [`Jail`] until the child has ended; dropping it
    /// kills what is left of the child's tree and removes its `TMPDIR` and cgroup.
    ///
    /// # Errors
    /// [`LaunchError::Required`] when a full sandbox is required and missing;
    /// [`LaunchError::Setup`] when a layer could not be prepared.
    pub fn confine(
        &self,
        command: &mut tokio::process::Command,
        confinement: &Confinement,
    ) -> Result<Jail, LaunchError> {
        remove_stale_tmp_dirs();
        explicit_environment(command);
        let status = self.status();
        if !status.enabled {
            let plan = sys::ChildPlan::detach_only(if sys::seccomp_available() {
                rules::terminal_filter()?
            } else {
                Vec::new()
            });
            // SAFETY: as in `confine`: only async-signal-safe system calls in the child.
            #[allow(unsafe_code)]
            unsafe {
                command.pre_exec(move || plan.apply());
            }
            return Ok(Jail::default());
        }
        if self.config.require && !status.is_full() {
            let missing: Vec<&str> = status.gaps().iter().map(|l| l.name()).collect();
            return Err(LaunchError::Required {
                missing: missing.join(", "),
            });
        }
        confine(self, status, command, confinement)
    }

    /// Confines `command` ([`Launcher::confine`]) and starts it from the one thread that starts
    /// every child, so that the kernel's parent-death signal (which follows the thread that
    /// forked) fires only when Bosun itself ends. Must be called within a Tokio runtime. The
    /// [`Jail`] knows the child's process group and kills it when dropped.
    ///
    /// # Errors
    /// As [`Launcher::confine`]; [`LaunchError::Spawn`] with the system's error when the
    /// program cannot be started (`NotFound`, `PermissionDenied`, …).
    pub fn spawn(
        &self,
        mut command: tokio::process::Command,
        confinement: &Confinement,
    ) -> Result<(tokio::process::Child, Jail), LaunchError> {
        let mut jail = self.confine(&mut command, confinement)?;
        let child = spawner::spawn(command).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP | libc::ESTALE) if jail.reopens => LaunchError::Changed {
                place: "a path the sandbox keeps read-only or masks".to_owned(),
                what: format!(
                    "{e} when the child reopened it: a symbolic link or another file stands \
                     where it was checked"
                ),
            },
            _ => LaunchError::Spawn(e),
        })?;
        // The child made its own session, so its pid is its process group's id.
        jail.group = child.id().and_then(|id| libc::pid_t::try_from(id).ok());
        // Under bubblewrap the command starts only once the last check inside the sandbox has
        // found every protected path and mask on the file that was held; its refusal is the
        // launch's (dropping the jail kills what `bwrap` left).
        if let Some(pipe) = jail.verdict.take()
            && let stage::Verdict::Changed { place, what } = stage::read_verdict(&pipe)
        {
            return Err(LaunchError::Changed { place, what });
        }
        Ok((child, jail))
    }
}

/// Gives the child exactly the variables `command` sets — never one inherited from Bosun's own
/// environment by accident (a provider's API key, say) — and a `PATH` without relative entries:
/// the child starts in the workspace, where `.` or `bin` would find a file the model wrote
/// before the program the person meant ([`search_path`]). Every backend starts the child with
/// this environment (bubblewrap is handed it explicitly: `sys::Exec`).
fn explicit_environment(command: &mut tokio::process::Command) {
    let set: Vec<(std::ffi::OsString, std::ffi::OsString)> = command
        .as_std()
        .get_envs()
        .filter_map(|(name, value)| Some((name.to_owned(), value?.to_owned())))
        .collect();
    command.env_clear();
    for (name, value) in set {
        if name == "PATH" {
            command.env(name, search_path::absolute_entries(&value));
        } else {
            command.env(name, value);
        }
    }
}

/// The prefix of every child's private `TMPDIR`, followed by Bosun's pid and a dash.
const TMP_PREFIX: &str = "bosun-run-";

/// Removes the private `TMPDIR`s that Bosun processes killed before they could clean up left
/// behind (`bosun-run-<pid>-…` whose pid no longer runs), once per process.
fn remove_stale_tmp_dirs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| remove_stale_tmp_dirs_in(&std::env::temp_dir()));
}

fn remove_stale_tmp_dirs_in(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok).take(100_000) {
        if !sys::left_by_a_dead_process(&entry.file_name(), TMP_PREFIX) {
            continue;
        }
        // Only directories this user owns (the temp directory is shared).
        if entry
            .metadata()
            .is_ok_and(|m| m.is_dir() && std::os::unix::fs::MetadataExt::uid(&m) == sys::ids().0)
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn probe(config: &SandboxConfig) -> Status {
    Status::probe(config)
}

/// The probe's result for this boot, this user, this process's cgroup, this `[sandbox]` table
/// and this `PATH` (where `bwrap` is looked up), from `dir` or probed and written there.
fn cached_probe(config: &SandboxConfig, dir: &Path) -> Status {
    use std::hash::{Hash, Hasher};
    let Ok(boot) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id") else {
        return probe(config);
    };
    // The probe found a pids cgroup under this process's own cgroup: a process in another
    // cgroup (another terminal's scope) probes for itself.
    let own_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        "bosun-sandbox-status-v3",
        boot.trim(),
        sys::ids(),
        own_cgroup,
        format!("{config:?}"),
        std::env::var_os("PATH"),
    )
        .hash(&mut hasher);
    let path = dir.join(format!("sandbox-status-{:016x}.json", hasher.finish()));
    if let Some(status) = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Status>(&bytes).ok())
    {
        return status;
    }
    let status = probe(config);
    // Best effort, written whole: a cache that cannot be written only costs the next probe.
    if std::fs::create_dir_all(dir).is_ok()
        && let Ok(text) = serde_json::to_vec(&status)
        && let Ok(mut file) = tempfile::NamedTempFile::new_in(dir)
    {
        use std::io::Write as _;
        if file.write_all(&text).is_ok() {
            let _ = file.persist(&path);
        }
    }
    status
}

/// A confined child's resources: its private `TMPDIR`, its cgroup and its process group.
#[derive(Debug, Default)]
pub struct Jail {
    tmp: Option<tempfile::TempDir>,
    cgroup: Option<PathBuf>,
    /// The child's process group (its own session), killed on drop.
    group: Option<libc::pid_t>,
    /// The seccomp programs handed to `bwrap`, open until the child has started.
    seccomp_files: Vec<std::os::fd::OwnedFd>,
    /// The child itself, when its owner gave it to the jail to keep ([`Jail::keep`]).
    child: Option<tokio::process::Child>,
    /// Whether the child reopens held places before it starts (and fails with `ELOOP` or
    /// `ESTALE` when one changed).
    reopens: bool,
    /// Where the last check inside a bubblewrap sandbox answers ([`stage`]).
    verdict: Option<std::os::fd::OwnedFd>,
}

impl Jail {
    /// The child's private temporary directory.
    pub fn tmp_dir(&self) -> Option<&Path> {
        self.tmp.as_ref().map(tempfile::TempDir::path)
    }

    /// Keeps `child` (started with `kill_on_drop`) for as long as the jail: a process whose
    /// owner only talks to its pipes ends with the jail like the rest of its tree.
    pub fn keep(&mut self, child: tokio::process::Child) {
        self.child = Some(child);
    }

    /// Gives a kept child up to `grace` to end by itself (its input closed first by its
    /// owner), then ends the jail: kills what is left and removes the `TMPDIR` and cgroup.
    pub async fn end(mut self, grace: std::time::Duration) {
        if let Some(child) = &mut self.child {
            let _ = tokio::time::timeout(grace, child.wait()).await;
        }
    }

    /// Kills every process still in the child's process group (when it was started with
    /// [`Launcher::spawn`]) and in its cgroup (those that left the group included).
    pub fn kill_all(&self) {
        if let Some(group) = self.group.filter(|g| *g > 1) {
            // SAFETY: kill(2) takes two integers and touches no memory; ESRCH is ignored.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
        if let Some(dir) = &self.cgroup {
            for _ in 0..50 {
                sys::kill_cgroup(dir);
                let empty = std::fs::read_to_string(dir.join("cgroup.procs"))
                    .map_or(true, |p| p.trim().is_empty());
                if empty {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
}

impl Drop for Jail {
    fn drop(&mut self) {
        self.kill_all();
        if let Some(dir) = &self.cgroup {
            // The last processes may still be exiting; rmdir succeeds once they are reaped.
            for _ in 0..100 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
}

/// A fresh cgroup directory under `base`, named after this process and a counter; a name left
/// by an earlier process with the same pid is skipped.
fn make_cgroup(base: &Path) -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut last = std::io::Error::other("no name was free");
    for _ in 0..16 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("bosun-{}-{nanos:x}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// What the named paths open up: each existing file, and its directory when that directory
/// neither lies inside a private place nor holds one (nor is the root). Each is resolved once
/// and held ([`held`]): what the checks looked at is what the child is granted.
fn named_reads(
    named: &[PathBuf],
    private: &[PathBuf],
    places: &held::Places,
) -> Result<Vec<held::Held>, LaunchError> {
    use held::{FinalLink, Input};
    let mut reads = Vec::new();
    for path in named {
        let Ok(path) = std::fs::canonicalize(path) else {
            continue;
        };
        let touches = |p: &Path| private.iter().any(|x| p.starts_with(x) || x.starts_with(p));
        if private.iter().any(|x| path.starts_with(x)) {
            continue;
        }
        let Some(file) = places.hold(&path, Input::Resolved, FinalLink::Refuse)? else {
            continue;
        };
        if !file.is_file() {
            continue;
        }
        if let Some(dir) = path.parent()
            && dir.parent().is_some()
            && !touches(dir)
            && let Some(dir) = places.hold(dir, Input::Resolved, FinalLink::Refuse)?
        {
            reads.push(dir);
        } else {
            reads.push(file);
        }
    }
    Ok(reads)
}

/// The credentials ([`CREDENTIALS`]) under `home` that exist and that a grant — read, write or
/// the workspace — would take in, and the private places the workspace holds
/// ([`private_masks`]), each held.
fn credential_masks(
    home: Option<&Path>,
    paths: &rules::Paths,
    workspace: &Path,
    private: &[PathBuf],
    places: &held::Places,
) -> Result<Vec<held::Held>, LaunchError> {
    use held::{FinalLink, Input};
    let mut masks = Vec::new();
    for place in private_masks(home, workspace, private) {
        masks.extend(places.hold(&place, Input::Resolved, FinalLink::Refuse)?);
    }
    if let Some(home) = home {
        let granted: Vec<&Path> = paths
            .read
            .iter()
            .chain(&paths.write)
            .map(|held| held.path.as_path())
            .collect();
        for (relative, _) in CREDENTIALS {
            let Ok(path) = std::fs::canonicalize(home.join(relative.trim_end_matches('/'))) else {
                continue;
            };
            if !granted.iter().any(|g| path.starts_with(g)) {
                continue;
            }
            masks.extend(places.hold(&path, Input::Resolved, FinalLink::Refuse)?);
        }
    }
    masks.sort_by(|a, b| a.path.cmp(&b.path));
    masks.dedup_by(|a, b| a.path == b.path);
    Ok(masks)
}

/// The private places (Bosun's home, say) the workspace's grant takes in: a home that lies inside
/// the workspace would otherwise be readable, with its stored tokens and secrets, by every command.
/// Each is masked by an empty read-only directory. The user's own home is never masked this way (a
/// workspace may hold it, and the toolchains under it are granted); nor is a place that holds the
/// workspace itself.
fn private_masks(home: Option<&Path>, workspace: &Path, private: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(workspace) = std::fs::canonicalize(workspace) else {
        return Vec::new();
    };
    let user_home = home.and_then(|h| std::fs::canonicalize(h).ok());
    private
        .iter()
        .filter_map(|place| std::fs::canonicalize(place).ok())
        .filter(|place| Some(place) != user_home.as_ref())
        .filter(|place| place.starts_with(&workspace) && *place != workspace)
        .filter(|place| std::fs::metadata(place).is_ok_and(|m| m.is_dir()))
        .collect()
}

/// Every place a child's sandbox is built from, held ([`held`]): what it reads and writes, the
/// credentials masked in it and the protected paths kept read-only.
#[derive(Default)]
struct Built {
    paths: rules::Paths,
    masks: Vec<held::Held>,
    protected: Vec<held::Held>,
}

/// Holds the places of `confinement`: the writable ones first (the workspace, `tmp`, the write
/// grants), beneath which every later path is opened through no link.
fn hold_places(
    launcher: &Launcher,
    confinement: &Confinement,
    tmp: &Path,
) -> Result<Built, LaunchError> {
    use held::{FinalLink, Input};
    let home = launcher.home.as_deref();
    let mut places = held::Places::default();
    let mut paths = rules::Paths::default();
    let writable = [
        (confinement.workspace.clone(), Input::Unresolved),
        (tmp.to_path_buf(), Input::Unresolved),
    ]
    .into_iter()
    .chain(
        launcher
            .config
            .write_paths(home)
            .into_iter()
            .map(|p| (p, Input::Unresolved)),
    )
    .chain(
        confinement
            .write
            .iter()
            .map(|p| (p.clone(), Input::Resolved)),
    );
    for (path, input) in writable {
        paths.write.extend(places.writable(&path, input)?);
    }
    let reads = rules::toolchain_reads(home)
        .into_iter()
        .chain(launcher.config.read_paths(home))
        .map(|p| (p, Input::Unresolved))
        .chain(
            confinement
                .read
                .iter()
                .map(|p| (p.clone(), Input::Resolved)),
        );
    for (path, input) in reads {
        paths
            .read
            .extend(places.hold(&path, input, FinalLink::Refuse)?);
    }
    let named = named_reads(&confinement.named, &launcher.private, &places)?;
    paths.read.extend(named);
    let masks = credential_masks(
        home,
        &paths,
        &confinement.workspace,
        &launcher.private,
        &places,
    )?;
    let mut protected = Vec::new();
    for path in &confinement.protected {
        // A protected name that is itself a link is not followed out of the workspace.
        protected.extend(places.hold(path, Input::Resolved, FinalLink::Skip)?);
    }
    Ok(Built {
        paths,
        masks,
        protected,
    })
}

fn confine(
    launcher: &Launcher,
    status: &Status,
    command: &mut tokio::process::Command,
    confinement: &Confinement,
) -> Result<Jail, LaunchError> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;

    let setup = |what: &str, e: std::io::Error| LaunchError::Setup(format!("{what}: {e}"));
    let tmp = tempfile::Builder::new()
        .prefix(&format!("{TMP_PREFIX}{}-", std::process::id()))
        .tempdir()
        .map_err(|e| setup("making the private TMPDIR", e))?;
    command
        .env("TMPDIR", tmp.path())
        .env("TMP", tmp.path())
        .env("TEMP", tmp.path());

    // Every place is held when a layer uses one: Landlock's rules, bubblewrap's binds, the
    // mount namespace's read-only binds and masks.
    let Built {
        mut paths,
        masks,
        mut protected,
    } = if status.landlock_abi > 0 || status.bwrap.is_some() || status.user_namespaces {
        hold_places(launcher, confinement, tmp.path())?
    } else {
        Built::default()
    };

    let landlock = match (status.landlock_abi, &status.bwrap) {
        (..=0, _) => None,
        (_, None) => Some(rules::landlock(&paths, &confinement.network)?),
        (_, Some(_)) => Some(rules::landlock_network(&confinement.network)?),
    };
    let mut seccomp = if sys::seccomp_available() {
        rules::seccomp(&confinement.network)?
    } else {
        Vec::new()
    };

    let mut jail = Jail::default();
    let exec = match &status.bwrap {
        None => None,
        Some(bwrap) => {
            // bwrap installs the programs just before it runs the command.
            jail.seccomp_files = std::mem::take(&mut seccomp)
                .iter()
                .map(|program| bwrap::seccomp_file(program))
                .collect::<Result<_, _>>()?;
            let std = command.as_std();
            let args: Vec<_> = std.get_args().map(ToOwned::to_owned).collect();
            let fds = bwrap::raw(&jail.seccomp_files);
            let env: Vec<_> = std
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
                .collect();
            let system: Vec<PathBuf> = rules::system_reads().collect();
            let handles = stage::Handles::open()?;
            let mut copies = Vec::new();
            let (argv, staged) = bwrap::arguments(
                &env,
                &system,
                &bwrap::Places {
                    read: &paths.read,
                    write: &paths.write,
                    protected: &protected,
                    masks: &masks,
                },
                &confinement.network,
                &fds,
                &bwrap::Stage {
                    exe: handles.exe.as_raw_fd(),
                    verdict: handles.verdict_write.as_raw_fd(),
                },
                std.get_program(),
                &args,
                &mut copies,
            )?;
            let (path, argv) = bwrap::c_strings(&bwrap.path, argv)?;
            // `bwrap` is started from the pre-exec step, before std has put the command's
            // environment in place: it is given that environment, not Bosun's.
            let envp = bwrap::environment(&env)?;
            // bwrap mounts the protected paths and masks over their names: the child checks
            // just before starting it that each is still what was held (an early refusal), and
            // the last check inside the sandbox that each mount landed on it.
            let places = protected
                .iter()
                .chain(&masks)
                .map(held::Held::target)
                .collect::<Result<Vec<_>, _>>()?;
            jail.reopens = !places.is_empty();
            // bwrap gets every grant by the descriptor its command line names, kept open until
            // the command is dropped.
            let mut held: Vec<_> = std::mem::take(&mut paths.read)
                .into_iter()
                .chain(std::mem::take(&mut paths.write))
                .chain(std::mem::take(&mut protected))
                .map(|h| h.fd)
                .chain(copies)
                .collect();
            if staged {
                held.extend([handles.exe, handles.verdict_write]);
                jail.verdict = Some(handles.verdict_read);
            }
            let exec = sys::Exec::new(path, argv, envp, fds, held, places);
            #[cfg(feature = "testing")]
            let exec = exec.pause_before_bwrap(launcher.pause.as_deref())?;
            Some(exec)
        }
    };
    let mut cgroup_procs = None;
    if let Some(base) = &status.cgroup {
        let dir = make_cgroup(base).map_err(|e| setup("making the child's pids cgroup", e))?;
        jail.cgroup = Some(dir.clone());
        std::fs::write(
            dir.join("pids.max"),
            launcher.config.max_processes.to_string(),
        )
        .map_err(|e| setup("limiting the child's processes", e))?;
        cgroup_procs = Some(
            CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())
                .map_err(|e| LaunchError::Setup(e.to_string()))?,
        );
    }

    let namespaces = if status.user_namespaces && status.bwrap.is_none() {
        let maps = sys::IdMaps::for_self().map_err(|e| setup("user namespace ids", e))?;
        let masks = masks
            .iter()
            .map(|held| {
                let target = held.target()?;
                Ok(if held.is_dir() {
                    sys::Mask::Dir(target)
                } else {
                    sys::Mask::File(target)
                })
            })
            .collect::<Result<Vec<_>, LaunchError>>()?;
        let read_only = protected
            .iter()
            .map(held::Held::target)
            .collect::<Result<Vec<_>, _>>()?;
        jail.reopens = !(masks.is_empty() && read_only.is_empty());
        Some(sys::Mounts {
            maps,
            read_only,
            masks,
        })
    } else {
        None
    };

    let mut rlimits = vec![
        (libc::RLIMIT_CORE, 0),
        (
            libc::RLIMIT_FSIZE,
            launcher.config.max_file_mib.saturating_mul(1 << 20),
        ),
    ];
    if let Some(seconds) = confinement.cpu_seconds {
        rlimits.push((libc::RLIMIT_CPU, seconds.max(1)));
    }
    if status.cgroup.is_none() && !sys::is_root() {
        rlimits.push((libc::RLIMIT_NPROC, launcher.config.max_processes));
    }

    let plan = sys::ChildPlan {
        parent: sys::parent_pid(),
        terminal: Vec::new(),
        rlimits,
        cgroup_procs,
        namespaces,
        landlock,
        seccomp,
        exec,
    };
    // SAFETY: `ChildPlan::apply` makes only async-signal-safe system calls on memory prepared
    // here, as `pre_exec` requires; the closure owns the plan.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || plan.apply());
    }
    jail.tmp = Some(tmp);
    Ok(jail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn degraded() -> Status {
        let mut status = Status::probe(&SandboxConfig::default());
        status.layers[0] = (
            Layer::Filesystem,
            LayerState::Missing("no Landlock (a test's machine)".to_owned()),
        );
        status
    }

    #[test]
    fn require_refuses_a_child_when_a_layer_is_missing_and_says_which() {
        let launcher = Launcher::new(SandboxConfig {
            require: true,
            ..SandboxConfig::default()
        });
        assert!(launcher.status.set(degraded()).is_ok());
        let mut command = tokio::process::Command::new("/bin/true");
        let confinement = Confinement::new(PathBuf::from("/tmp"), Network::Off);
        let error = launcher
            .confine(&mut command, &confinement)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("does not enforce: filesystem"), "{error}");
        assert!(error.contains("require = false"), "{error}");
    }

    #[test]
    fn the_probe_is_kept_for_the_boot_and_a_broken_cache_is_probed_again() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let first = Launcher::new(SandboxConfig::default()).cache_in(dir.path());
        let probed = first.status().summary();
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        // Another process of the same boot reads it: the file is what it gets.
        let mut kept: Status =
            serde_json::from_slice(&std::fs::read(&files[0]).unwrap_or_else(|e| panic!("{e}")))
                .unwrap_or_else(|e| panic!("{e}"));
        kept.layers[0].1 = LayerState::Missing("as the cache says".to_owned());
        std::fs::write(
            &files[0],
            serde_json::to_vec(&kept).unwrap_or_else(|e| panic!("{e}")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let second = Launcher::new(SandboxConfig::default()).cache_in(dir.path());
        assert!(second.status().summary().contains("no filesystem"));
        // A kept result that no longer holds fails closed: with the cgroup it names gone, the
        // child is not started.
        if kept.cgroup.is_some() {
            kept.layers[0].1 = LayerState::Enforced("as probed".to_owned());
            kept.cgroup = Some(PathBuf::from("/nonexistent/bosun-cgroup"));
            std::fs::write(
                &files[0],
                serde_json::to_vec(&kept).unwrap_or_else(|e| panic!("{e}")),
            )
            .unwrap_or_else(|e| panic!("{e}"));
            let stale = Launcher::new(SandboxConfig::default()).cache_in(dir.path());
            let mut command = tokio::process::Command::new("/bin/true");
            let confinement = Confinement::new(dir.path().to_path_buf(), Network::Off);
            assert!(matches!(
                stale.confine(&mut command, &confinement),
                Err(LaunchError::Setup(_))
            ));
        }
        // Garbage in the cache: probed again.
        std::fs::write(&files[0], b"not json").unwrap_or_else(|e| panic!("{e}"));
        let third = Launcher::new(SandboxConfig::default()).cache_in(dir.path());
        assert_eq!(third.status().summary(), probed);
        // Another configuration is another entry.
        let other = Launcher::new(SandboxConfig {
            max_processes: 64,
            ..SandboxConfig::default()
        })
        .cache_in(dir.path());
        other.status();
        assert_eq!(
            std::fs::read_dir(dir.path())
                .unwrap_or_else(|e| panic!("{e}"))
                .count(),
            2
        );
    }

    #[test]
    fn private_tmpdirs_of_dead_processes_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // A pid that ran and is gone.
        let mut gone = std::process::Command::new("/bin/true")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let _ = gone.wait();
        let dead = dir.path().join(format!("{TMP_PREFIX}{}-abc", gone.id()));
        let live = dir
            .path()
            .join(format!("{TMP_PREFIX}{}-def", std::process::id()));
        let other = dir.path().join("bosun-runner-1-x");
        for path in [&dead, &live, &other] {
            std::fs::create_dir_all(path.join("inner")).unwrap_or_else(|e| panic!("{e}"));
        }
        remove_stale_tmp_dirs_in(dir.path());
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
    }

    /// A named file's directory, outside every writable place, swapped for a link to the keys
    /// by another process in the instant between its resolution and its open: refused, never
    /// granted.
    #[test]
    fn a_named_files_directory_swapped_after_it_was_resolved_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let tools = root.join("tools");
        let keys = root.join("home/.ssh");
        for d in [&tools, &keys] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(tools.join("run.sh"), "echo hi\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(keys.join("run.sh"), "PRIVATE KEY").unwrap_or_else(|e| panic!("{e}"));
        let (swapped, moved, target) = (tools.clone(), root.join("tools-old"), keys.clone());
        held::tests::between_resolving_and_opening(move |path| {
            if path == swapped {
                std::fs::rename(&swapped, &moved).unwrap_or_else(|e| panic!("{e}"));
                std::os::unix::fs::symlink(&target, &swapped).unwrap_or_else(|e| panic!("{e}"));
            }
        });
        let places = held::Places::default();
        let private = [root.join("home")];
        match named_reads(&[tools.join("run.sh")], &private, &places) {
            Err(LaunchError::Changed { place, what }) => {
                assert_eq!(place, tools.display().to_string());
                assert!(what.contains("symbolic link"), "{what}");
            }
            Err(other) => panic!("{other}"),
            Ok(reads) => panic!(
                "not refused; granted {:?}",
                reads.iter().map(|h| &h.path).collect::<Vec<_>>()
            ),
        }
    }

    #[test]
    fn a_degraded_machine_says_so_in_one_line() {
        let summary = degraded().summary();
        assert!(
            summary.starts_with("sandbox: degraded — no filesystem"),
            "{summary}"
        );
    }
}
