//! `[sandbox]` in the user's config: whether children are confined, whether a full sandbox is
//! required, and the paths beyond the workspace a child may read or write — and, read by the
//! host for its WebAssembly plugin engine rather than by this crate, how many plugin instances
//! may be alive at once (`plugin_instances`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Default cap on the file size a child may write (`RLIMIT_FSIZE`), in MiB.
pub const DEFAULT_MAX_FILE_MIB: u64 = 4096;
/// Default cap on the processes a child's tree may hold at once (pids cgroup, or
/// `RLIMIT_NPROC` where no cgroup can be made).
pub const DEFAULT_MAX_PROCESSES: u64 = 512;
/// Default number of plugin instance slots of the WebAssembly engine.
pub const DEFAULT_PLUGIN_INSTANCES: u32 = 64;
/// The most plugin instance slots `[sandbox] plugin_instances` may ask for. The engine's pooling
/// allocator reserves address space for every slot up front (measured: about 16 GiB of
/// reservation per slot, none of it memory until used), so 4096 slots reserve about 66 TiB of
/// the 128 TiB a process can address on x86-64 Linux.
pub const MAX_PLUGIN_INSTANCES: u32 = 4096;

/// The `[sandbox]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// `false` starts children with no confinement at all (said loudly at start and in every
    /// trace). Default `true`.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// `true` refuses to start any child unless every layer is enforced on this machine.
    #[serde(default)]
    pub require: bool,
    /// Which mechanism confines children: `"landlock"` (the default: Landlock, seccomp and a
    /// private mount namespace set up by Bosun itself) or `"bubblewrap"` (Debian's `bwrap`
    /// builds the child's view of the filesystem and its namespaces; Bosun adds its seccomp
    /// filters, rlimits, cgroup and Landlock's network rules).
    #[serde(default)]
    pub backend: Backend,
    /// Paths a child may read (and execute) beyond the system directories, e.g. `~/.npm`. `~/`
    /// is the user's home.
    #[serde(default)]
    pub read: Vec<String>,
    /// Paths a child may write beyond the workspace and its private temporary directory, e.g.
    /// `~/.cargo/registry`.
    #[serde(default)]
    pub write: Vec<String>,
    /// The most processes a child's tree may hold at once.
    #[serde(default = "default_max_processes")]
    pub max_processes: u64,
    /// The largest file a child may write, in MiB.
    #[serde(default = "default_max_file_mib")]
    pub max_file_mib: u64,
    /// How many plugin instances (of every format) may be alive at once: the slots of the
    /// WebAssembly engine's pool. When all are taken the host releases the least recently used
    /// idle one; only when every slot is in a running call does a call fail. Read by the host,
    /// not by this crate.
    #[serde(default = "default_plugin_instances")]
    pub plugin_instances: u32,
}

/// The mechanism that confines children.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Landlock, seccomp and a private mount namespace, set up by Bosun before `exec`.
    #[default]
    Landlock,
    /// `bwrap` (bubblewrap) with a filesystem view of only what is granted, private PID, IPC,
    /// UTS and (without a grant) network namespaces; Bosun's seccomp filters passed to it.
    Bubblewrap,
}

impl Backend {
    /// The name `[sandbox] backend` takes.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Landlock => "landlock",
            Backend::Bubblewrap => "bubblewrap",
        }
    }
}

fn yes() -> bool {
    true
}

fn default_max_processes() -> u64 {
    DEFAULT_MAX_PROCESSES
}

fn default_max_file_mib() -> u64 {
    DEFAULT_MAX_FILE_MIB
}

fn default_plugin_instances() -> u32 {
    DEFAULT_PLUGIN_INSTANCES
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig {
            enabled: true,
            require: false,
            backend: Backend::Landlock,
            read: Vec::new(),
            write: Vec::new(),
            max_processes: DEFAULT_MAX_PROCESSES,
            max_file_mib: DEFAULT_MAX_FILE_MIB,
            plugin_instances: DEFAULT_PLUGIN_INSTANCES,
        }
    }
}

/// A `[sandbox]` table that cannot be used as written.
#[derive(Debug, thiserror::Error)]
#[error("[sandbox] {field}: {message}")]
pub struct ConfigError {
    field: &'static str,
    message: String,
}

impl SandboxConfig {
    /// Checks the table: paths absolute or under `~/`, limits in range.
    ///
    /// # Errors
    /// Names the field and the fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (field, paths) in [("read", &self.read), ("write", &self.write)] {
            for path in paths {
                if !(path.starts_with('/') || path.starts_with("~/")) {
                    return Err(ConfigError {
                        field,
                        message: format!(
                            "`{path}` is relative: give an absolute path or one under `~/`"
                        ),
                    });
                }
                if path.contains('\0') {
                    return Err(ConfigError {
                        field,
                        message: "a path contains a NUL byte: remove it".to_owned(),
                    });
                }
            }
        }
        if !(16..=1_000_000).contains(&self.max_processes) {
            return Err(ConfigError {
                field: "max_processes",
                message: format!("{} is out of range: use 16 to 1000000", self.max_processes),
            });
        }
        if !(1..=1_048_576).contains(&self.max_file_mib) {
            return Err(ConfigError {
                field: "max_file_mib",
                message: format!("{} is out of range: use 1 to 1048576", self.max_file_mib),
            });
        }
        if !(1..=MAX_PLUGIN_INSTANCES).contains(&self.plugin_instances) {
            return Err(ConfigError {
                field: "plugin_instances",
                message: format!(
                    "{} is out of range: use 1 to {MAX_PLUGIN_INSTANCES} (each slot reserves \
                     address space up front; past the number set, idle instances are \
                     released and started again when called)",
                    self.plugin_instances
                ),
            });
        }
        Ok(())
    }

    /// The `read` paths, with `~/` expanded against `home`.
    pub fn read_paths(&self, home: Option<&Path>) -> Vec<PathBuf> {
        expand(&self.read, home)
    }

    /// The `write` paths, with `~/` expanded against `home`.
    pub fn write_paths(&self, home: Option<&Path>) -> Vec<PathBuf> {
        expand(&self.write, home)
    }
}

fn expand(paths: &[String], home: Option<&Path>) -> Vec<PathBuf> {
    paths
        .iter()
        .filter_map(|p| match p.strip_prefix("~/") {
            Some(rest) => home.map(|h| h.join(rest)),
            None => Some(PathBuf::from(p)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_and_wild_limits_are_refused_with_the_fix() {
        let config = SandboxConfig {
            read: vec!["cache".into()],
            ..SandboxConfig::default()
        };
        let error = config.validate().unwrap_err().to_string();
        assert!(error.contains("give an absolute path"), "{error}");
        let config = SandboxConfig {
            max_processes: 2,
            ..SandboxConfig::default()
        };
        assert!(config.validate().is_err());
    }

    /// No slot at all, or more than the address space can hold, is refused with the range;
    /// both ends of the range are taken.
    #[test]
    fn plugin_instances_out_of_range_are_refused_with_the_range() {
        for bad in [0, MAX_PLUGIN_INSTANCES + 1] {
            let config = SandboxConfig {
                plugin_instances: bad,
                ..SandboxConfig::default()
            };
            let error = config.validate().unwrap_err().to_string();
            assert!(
                error.starts_with("[sandbox] plugin_instances: ")
                    && error.contains(&format!("use 1 to {MAX_PLUGIN_INSTANCES}")),
                "{error}"
            );
        }
        for good in [1, DEFAULT_PLUGIN_INSTANCES, MAX_PLUGIN_INSTANCES] {
            let config = SandboxConfig {
                plugin_instances: good,
                ..SandboxConfig::default()
            };
            assert!(config.validate().is_ok(), "{good}");
        }
    }

    #[test]
    fn home_paths_expand() {
        let config = SandboxConfig {
            write: vec!["~/.cargo/registry".into(), "/opt/cache".into()],
            ..SandboxConfig::default()
        };
        assert_eq!(
            config.write_paths(Some(Path::new("/home/a"))),
            vec![
                PathBuf::from("/home/a/.cargo/registry"),
                PathBuf::from("/opt/cache")
            ]
        );
    }
}
