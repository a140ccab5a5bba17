//! The MCP library on its own, without the `bosun` binary: a host served over HTTP and over an
//! in-process pipe, read back by Bosun's own client, the pins that approve tools, and the
//! OAuth sign-in's files.

// Helpers in a test binary may panic like the tests themselves: a failed unwrap is a failed
// test (clippy.toml allows it only inside `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hostile_http;
mod oauth;
mod pins;
mod served;

use std::path::{Path, PathBuf};

use bosun_host::Host;

/// A workspace (with a file to read) and a `$BOSUN_HOME`, removed at the end of the test.
pub(crate) struct Dirs {
    _root: tempfile::TempDir,
    /// The workspace, holding `hello.txt`.
    pub(crate) ws: PathBuf,
    /// `$BOSUN_HOME`.
    pub(crate) home: PathBuf,
}

impl Dirs {
    /// Fresh directories.
    pub(crate) fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let (ws, home) = (base.join("ws"), base.join("home"));
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(ws.join("hello.txt"), "hello from the served workspace\n").unwrap();
        Self {
            _root: root,
            ws,
            home,
        }
    }

    /// A host of this workspace and home, without plugins.
    pub(crate) fn host(&self) -> Host {
        host_of(&self.ws, &self.home)
    }

    /// A host of this workspace and home with its plugin tools: the model's `plugin_install`
    /// and `plugin_reload`, through which a call changes the set of tools.
    pub(crate) fn host_with_plugins(&self) -> Host {
        Host::builder()
            .workspace_of(&self.ws)
            .home(&self.home)
            .build()
            .unwrap()
    }
}

/// A host of `ws` and `home`, without plugins.
pub(crate) fn host_of(ws: &Path, home: &Path) -> Host {
    Host::builder()
        .workspace_of(ws)
        .home(home)
        .without_plugins()
        .build()
        .unwrap()
}
