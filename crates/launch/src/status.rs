//! What this machine can enforce, probed once: the Landlock ABI, seccomp, user namespaces for
//! the protected-path mounts, and a pids cgroup. Each layer is reported as enforced, partial,
//! missing (with the reason) or off, so `bosun sandbox status`, the start-up warning and every
//! trace say exactly what a child is held to.

use std::fmt;
use std::path::PathBuf;

use crate::bwrap::Bwrap;
use crate::sys;
use crate::{Backend, SandboxConfig};

/// One layer of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Layer {
    /// Landlock on the filesystem.
    Filesystem,
    /// seccomp on sockets, Landlock on TCP ports.
    Network,
    /// seccomp on dangerous system calls.
    Syscalls,
    /// Landlock's ptrace and signal scoping: no reading or signalling processes outside.
    ParentIsolation,
    /// A private mount namespace with the workspace's protected paths read-only.
    ProtectedPaths,
    /// A pids cgroup (or `RLIMIT_NPROC`) and the file-size, CPU and core rlimits.
    Processes,
}

impl Layer {
    /// The layer's name as `bosun sandbox status` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Filesystem => "filesystem",
            Layer::Network => "network",
            Layer::Syscalls => "system calls",
            Layer::ParentIsolation => "other processes",
            Layer::ProtectedPaths => "protected paths",
            Layer::Processes => "processes",
        }
    }
}

/// How much of a layer is enforced.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LayerState {
    /// Fully enforced: what is enforced.
    Enforced(String),
    /// Enforced in part: what is and what is not.
    Partial(String),
    /// Not enforced: why, and what to do.
    Missing(String),
    /// The sandbox is turned off.
    Off,
}

impl LayerState {
    /// Whether the layer is fully enforced.
    pub fn is_enforced(&self) -> bool {
        matches!(self, LayerState::Enforced(_))
    }
}

/// What this machine enforces, per layer.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Status {
    /// Each layer and its state, in a fixed order.
    pub layers: Vec<(Layer, LayerState)>,
    pub(crate) landlock_abi: i32,
    pub(crate) user_namespaces: bool,
    pub(crate) cgroup: Option<PathBuf>,
    pub(crate) enabled: bool,
    /// The working `bwrap` when the bubblewrap backend is in use.
    pub(crate) bwrap: Option<Bwrap>,
    /// Why `[sandbox] backend = "bubblewrap"` could not be used (the Landlock backend is used
    /// instead, and says so).
    pub fallback: Option<String>,
}

impl Status {
    /// Probes this machine for `config`. Forks once (to try a user namespace) and makes and
    /// removes one cgroup directory.
    pub fn probe(config: &SandboxConfig) -> Status {
        if !config.enabled {
            return Status {
                layers: ALL.iter().map(|l| (*l, LayerState::Off)).collect(),
                landlock_abi: 0,
                user_namespaces: false,
                cgroup: None,
                enabled: false,
                bwrap: None,
                fallback: None,
            };
        }
        let landlock_abi = sys::landlock_abi();
        let seccomp = sys::seccomp_available();
        let user_namespaces = sys::user_namespaces_work();
        let cgroup = sys::pids_cgroup_base();
        let root = sys::is_root();
        let (bwrap, fallback) = match config.backend {
            Backend::Landlock => (None, None),
            Backend::Bubblewrap => match Bwrap::probe() {
                Ok(bwrap) => (Some(bwrap), None),
                Err(why) => (None, Some(why.to_string())),
            },
        };
        let processes = (
            Layer::Processes,
            processes(cgroup.is_some(), root, config.max_processes),
        );
        let layers = match &bwrap {
            None => vec![
                (Layer::Filesystem, filesystem(landlock_abi)),
                (Layer::Network, network(landlock_abi, seccomp)),
                (Layer::Syscalls, syscalls(seccomp)),
                (Layer::ParentIsolation, parent_isolation(landlock_abi)),
                (Layer::ProtectedPaths, protected_paths(user_namespaces)),
                processes,
            ],
            Some(_) => vec![
                (Layer::Filesystem, bwrap_layers::filesystem()),
                (Layer::Network, bwrap_layers::network(landlock_abi, seccomp)),
                (Layer::Syscalls, syscalls(seccomp)),
                (
                    Layer::ParentIsolation,
                    bwrap_layers::parent_isolation(landlock_abi),
                ),
                (Layer::ProtectedPaths, bwrap_layers::protected_paths()),
                processes,
            ],
        };
        Status {
            layers,
            landlock_abi,
            user_namespaces,
            cgroup,
            enabled: true,
            bwrap,
            fallback,
        }
    }

    /// The backend children are confined with (the Landlock one when bubblewrap was asked for
    /// but is not usable: see [`Status::fallback`]).
    pub fn backend(&self) -> Backend {
        if self.bwrap.is_some() {
            Backend::Bubblewrap
        } else {
            Backend::Landlock
        }
    }

    /// Whether every layer is fully enforced.
    pub fn is_full(&self) -> bool {
        self.layers.iter().all(|(_, state)| state.is_enforced())
    }

    /// The layers not fully enforced.
    pub fn gaps(&self) -> Vec<Layer> {
        self.layers
            .iter()
            .filter(|(_, state)| !state.is_enforced())
            .map(|(layer, _)| *layer)
            .collect()
    }

    /// One line for the start-up warning and the trace: `sandbox: full`, `sandbox: off` or
    /// `sandbox: degraded — no …`.
    pub fn summary(&self) -> String {
        if !self.enabled {
            return "sandbox: off — child processes run with all of the user's rights \
                    ([sandbox] enabled = false)"
                .to_owned();
        }
        let gaps: Vec<String> = self
            .layers
            .iter()
            .filter_map(|(layer, state)| match state {
                LayerState::Enforced(_) => None,
                LayerState::Partial(_) => Some(format!("{} partial", layer.name())),
                LayerState::Missing(_) | LayerState::Off => Some(format!("no {}", layer.name())),
            })
            .collect();
        let via = match (&self.bwrap, &self.fallback) {
            (Some(_), _) => " (bubblewrap)",
            (None, Some(_)) => " (bubblewrap unusable, Landlock used instead)",
            (None, None) => "",
        };
        if gaps.is_empty() {
            format!("sandbox: full{via}")
        } else {
            format!(
                "sandbox: degraded{via} — {} (see `bosun sandbox status`)",
                gaps.join(", ")
            )
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary())?;
        if self.enabled {
            match (&self.bwrap, &self.fallback) {
                (Some(bwrap), _) => writeln!(
                    f,
                    "  backend          bubblewrap: {} ({})",
                    bwrap.path.display(),
                    bwrap.version
                )?,
                (None, Some(why)) => writeln!(
                    f,
                    "  backend          landlock; [sandbox] backend = \"bubblewrap\" is not \
                     usable: {why}"
                )?,
                (None, None) => writeln!(f, "  backend          landlock")?,
            }
        }
        for (layer, state) in &self.layers {
            let (word, text) = match state {
                LayerState::Enforced(text) => ("enforced", text.as_str()),
                LayerState::Partial(text) => ("partial", text.as_str()),
                LayerState::Missing(text) => ("missing", text.as_str()),
                LayerState::Off => ("off", "[sandbox] enabled = false"),
            };
            writeln!(f, "  {:<16} {word:<9} {text}", layer.name())?;
        }
        Ok(())
    }
}

const ALL: [Layer; 6] = [
    Layer::Filesystem,
    Layer::Network,
    Layer::Syscalls,
    Layer::ParentIsolation,
    Layer::ProtectedPaths,
    Layer::Processes,
];

fn filesystem(abi: i32) -> LayerState {
    if abi >= 1 {
        LayerState::Enforced(format!(
            "Landlock ABI {abi}: writes only in the workspace, the run's private TMPDIR and \
             [sandbox] write; reads only system directories, toolchains and [sandbox] read"
        ))
    } else {
        LayerState::Missing(
            "no Landlock (a kernel before 5.13, or `landlock` missing from the boot's lsm= \
             list): a child can read and write whatever the user can"
                .to_owned(),
        )
    }
}

fn network(abi: i32, seccomp: bool) -> LayerState {
    match (seccomp, abi >= 4) {
        (true, true) => LayerState::Enforced(
            "without a net.http grant no sockets but Unix ones (seccomp); with one, TCP \
             connects only to the granted ports (Landlock); host names are not checked"
                .to_owned(),
        ),
        (true, false) => LayerState::Partial(format!(
            "without a net.http grant no sockets but Unix ones (seccomp); with one, every \
             port is open (Landlock ABI {abi} has no network rules; 4 is needed)"
        )),
        (false, _) => LayerState::Missing("no seccomp: a child can reach any network".to_owned()),
    }
}

fn syscalls(seccomp: bool) -> LayerState {
    if seccomp {
        LayerState::Enforced(
            "ptrace, process_vm_*, io_uring, mount, new namespaces, bpf, perf, keyrings, \
             modules, setsid and setpgid, terminal input injection (TIOCSTI, TIOCLINUX) \
             refused; no_new_privs"
                .to_owned(),
        )
    } else {
        LayerState::Missing("no seccomp filters in this kernel".to_owned())
    }
}

fn parent_isolation(abi: i32) -> LayerState {
    match abi {
        // Landlock has no rule for connecting to a path-named Unix socket up to ABI 7: such a
        // socket a child can reach by path (a Docker socket) stays reachable, and is said so.
        6.. => LayerState::Enforced(format!(
            "no reading other processes' memory or environment (/proc/<pid>/environ), no \
             signals to them, no abstract Unix sockets outside (Landlock); Unix sockets named by \
             a path stay reachable (Landlock ABI {abi} has no rule for them)"
        )),
        1..=5 => LayerState::Partial(format!(
            "no reading other processes' memory or environment (Landlock); signals and \
             abstract Unix sockets are not scoped (Landlock ABI {abi}; 6 is needed)"
        )),
        _ => LayerState::Missing(
            "no Landlock: a child can read Bosun's environment from /proc/<pid>/environ".to_owned(),
        ),
    }
}

fn protected_paths(user_namespaces: bool) -> LayerState {
    if user_namespaces {
        LayerState::Enforced(
            "existing protected paths anywhere in the workspace (.git, .bosun, AGENTS.md, …) \
             bind-mounted read-only in a private mount namespace; credential files under a \
             grant masked"
                .to_owned(),
        )
    } else {
        LayerState::Missing(
            "no unprivileged user namespaces (a container's seccomp profile or \
             kernel.apparmor_restrict_unprivileged_userns): .git and .bosun are writable by \
             children"
                .to_owned(),
        )
    }
}

fn processes(cgroup: bool, root: bool, max: u64) -> LayerState {
    let rlimits = "file size, CPU time and core dumps capped (rlimits)";
    if cgroup {
        LayerState::Enforced(format!(
            "at most {max} processes per child tree (pids cgroup), the tree killed with its \
             cgroup; {rlimits}"
        ))
    } else if root {
        LayerState::Partial(format!(
            "no writable pids cgroup, and RLIMIT_NPROC does not bind root: a child can \
             fork without limit; {rlimits}"
        ))
    } else {
        LayerState::Enforced(format!(
            "at most {max} processes for the user while the child runs (RLIMIT_NPROC); \
             {rlimits}"
        ))
    }
}

/// The layers as the bubblewrap backend enforces them.
mod bwrap_layers {
    use super::LayerState;

    pub(super) fn filesystem() -> LayerState {
        LayerState::Enforced(
            "bubblewrap mount namespace: only system directories, toolchains and [sandbox] \
             read exist (read-only); the workspace, the run's private TMPDIR and [sandbox] \
             write are writable; /tmp is private; the rest of the machine is absent"
                .to_owned(),
        )
    }

    pub(super) fn network(abi: i32, seccomp: bool) -> LayerState {
        match (seccomp, abi >= 4) {
            (true, true) => LayerState::Enforced(
                "without a net.http grant a private network namespace and no sockets but Unix \
                 ones (seccomp); with one, TCP connects only to the granted ports (Landlock); \
                 host names are not checked"
                    .to_owned(),
            ),
            _ => LayerState::Partial(format!(
                "without a net.http grant a private network namespace (no interface but \
                 loopback); with one, every port is open (Landlock ABI {abi}, 4 is needed)"
            )),
        }
    }

    pub(super) fn parent_isolation(abi: i32) -> LayerState {
        if abi >= 6 {
            LayerState::Enforced(
                "a private PID namespace: Bosun and every other process are invisible (no \
                 /proc/<pid>/environ, no signals); abstract Unix sockets scoped (Landlock)"
                    .to_owned(),
            )
        } else {
            LayerState::Partial(format!(
                "a private PID namespace: Bosun and every other process are invisible; with a \
                 net.http grant abstract Unix sockets outside are reachable (Landlock ABI \
                 {abi}, 6 is needed)"
            ))
        }
    }

    pub(super) fn protected_paths() -> LayerState {
        LayerState::Enforced(
            "existing protected paths anywhere in the workspace (.git, .bosun, AGENTS.md, …) \
             bound read-only over the writable workspace; credential files under a grant \
             masked"
                .to_owned(),
        )
    }
}
