//! What an instance is granted, fixed before any of its code runs: the preopened directory,
//! whether outgoing HTTP exists, config values, memory and deadline — and, per call, the
//! cancellation token, the HTTP authorities and the session a JavaScript plugin may see.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::http::NetGrant;

/// Where the granted directory appears inside the plugin.
pub const WORKSPACE_GUEST_PATH: &str = "/workspace";

/// A directory the plugin may reach, preopened at `guest_path` (`/workspace` for the workspace
/// root, `/workspace/src` for its `src`).
///
/// The directory is named as `dir` beneath `root`, and is opened that way when the instance is
/// made: from a handle of `root`, through no symbolic link at all (`RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS`), and that very descriptor becomes the preopen. A directory of `dir`
/// swapped for a link after the grant was judged — to the outside or to another place inside —
/// makes the instance fail to be made ([`SandboxError::Preopen`](crate::SandboxError::Preopen))
/// rather than be followed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FsGrant {
    /// The directory the grant lies beneath (the workspace root), opened as given.
    pub root: PathBuf,
    /// The granted directory relative to `root`, plain names only (empty for `root` itself).
    pub dir: PathBuf,
    /// Where the plugin sees it.
    pub guest_path: String,
    /// Read-write (`fs.write`) rather than read-only (`fs.read`).
    pub writable: bool,
}

impl FsGrant {
    /// `host_dir` as the plugin's whole `/workspace`.
    pub fn workspace(host_dir: impl Into<PathBuf>, writable: bool) -> Self {
        Self {
            root: host_dir.into(),
            dir: PathBuf::new(),
            guest_path: WORKSPACE_GUEST_PATH.to_owned(),
            writable,
        }
    }

    /// The granted directory's path on the host, for messages.
    pub fn host_dir(&self) -> PathBuf {
        if self.dir.as_os_str().is_empty() {
            self.root.clone()
        } else {
            self.root.join(&self.dir)
        }
    }
}

/// What an instance is linked with, fixed before any of its code runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    /// The directories preopened under `/workspace`; without one the plugin has no directory
    /// at all. Where two overlap, the plugin's path resolves through the deeper one.
    pub fs: Vec<FsGrant>,
    /// Whether outgoing HTTP may be attempted at all; each call still names its hosts in
    /// [`CallOptions::net`].
    pub http: bool,
    /// The plugin's configuration table: key to JSON text, served by `host.config`.
    pub config: BTreeMap<String, String>,
    /// The memory cap for the whole instance, in bytes (default 256 MiB).
    pub memory_bytes: usize,
    /// The deadline for each call, and for instantiation (default 30 s).
    pub timeout: Duration,
    /// What a JavaScript engine instance may additionally reach (ignored for native plugins).
    pub js: JsGrants,
}

impl Default for Grants {
    fn default() -> Self {
        Self {
            fs: Vec::new(),
            http: false,
            config: BTreeMap::new(),
            memory_bytes: 256 << 20,
            timeout: Duration::from_secs(30),
            js: JsGrants::default(),
        }
    }
}

/// Per-call options.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Cancels the call: the guest sees `is-cancelled` and is stopped within one epoch tick.
    pub cancel: CancellationToken,
    /// What this call may reach over HTTP (ignored unless the instance has the HTTP grant).
    pub net: NetGrant,
    /// The session a JavaScript plugin's taint calls reach (none: `PUBLIC`, no escalation).
    pub session: Option<Arc<dyn JsSession>>,
    /// Who starts the processes a JavaScript plugin asks for in this call (none: refused).
    pub processes: Option<Arc<dyn crate::process::JsProcesses>>,
}

/// The session a JavaScript plugin's call runs in, as far as the engine may see it.
pub trait JsSession: Send + Sync + std::fmt::Debug {
    /// The session's taint.
    fn taint(&self) -> bosun_core::Classification;
    /// Raises the session's taint to `level`; never lowers it. The plugin's label was read
    /// when it crossed into the host: an unknown one never reaches the session.
    fn escalate(&self, level: bosun_core::Classification);
}

/// What a JavaScript instance is granted beyond [`Grants`](crate::Grants).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsGrants {
    /// Whether `host-info` answers (Triggerfish plugins the user and the manifest both trust).
    pub host_info: bool,
}

/// Per-instance and per-call state behind `bosun:js/runtime`.
#[derive(Debug, Default)]
pub(crate) struct JsState {
    pub(crate) grants: JsGrants,
    pub(crate) session: Option<Arc<dyn JsSession>>,
    /// The processes the current call started.
    pub(crate) processes: crate::process::ProcessTable,
}
