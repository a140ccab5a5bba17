//! Claude Code plugins and marketplaces, loaded as their authors wrote them and run the way
//! Bosun runs everything: every executable part in the OS sandbox, pinned by content and judged
//! by policy.
//!
//! - [`manifest`], [`marketplace`]: `plugin.json` and `marketplace.json` typed; unknown top-level
//!   keys warn, unknown keys in the strict objects (`userConfig`, `channels`, `monitors`)
//!   refuse, as in Claude Code.
//! - [`layout`]: what a plugin folder holds — skills, commands, agents, hooks, MCP servers,
//!   `bin/` — and every part that runs code, for the trust review.
//! - [`components`]: a plugin's skills, commands and agents, named `plugin:name`, each file
//!   read only when its bytes are the ones reviewed.
//! - [`tree`]: a plugin's files as one content digest; the cache is keyed by it.
//! - [`fetch`]: git, run through the sandbox launcher, never a shell.
//! - [`http`]: a `marketplace.json` over HTTPS: capped, timed, redirects only within its origin.
//! - [`install`]: open a marketplace, stage a plugin, review, commit into the cache, record.
//! - [`loaded`]: the installed plugins checked against their records at every load.
//! - [`source`]: the registry opener for `kind = "claude-marketplace"` (`bosun plugins search`).
//! - [`mcp`], [`hooks`]: the servers and hooks a plugin declares.
//! - [`user_config`]: a plugin's `userConfig` answers checked, and its secrets kept apart.
//! - [`data_label`]: the label of a plugin's data folder, raised by the sessions whose data
//!   reached its processes.

mod capped;
pub mod components;
pub mod data_label;
pub mod fetch;
pub mod hooks;
pub mod http;
pub mod install;
pub mod layout;
pub mod loaded;
pub mod manifest;
pub mod marketplace;
pub mod mcp;
pub mod source;
pub mod tools;
pub mod tree;
pub mod user_config;

pub use install::{
    InstallOptions, Installed, InstalledPlugin, MarketplaceLocation, OpenedMarketplace, Staged,
};
pub use layout::{Executable, PluginLayout};
pub use loaded::{Loaded, LoadedPlugin, Withheld};
pub use manifest::PluginManifest;
pub use marketplace::{Marketplace, MarketplaceEntry, PluginSource, RemoteSource};

/// What went wrong with a Claude Code plugin or marketplace. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ClaudeError {
    /// A manifest or marketplace that does not parse or breaks a rule of the format.
    #[error("{what}: {message}")]
    Manifest {
        /// The file.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// A plugin folder Bosun will not read.
    #[error("{message}")]
    Layout {
        /// What is wrong.
        message: String,
    },
    /// A source that could not be fetched or is not allowed.
    #[error("{message}")]
    Source {
        /// What is wrong.
        message: String,
    },
    /// A third-party source with no pinned commit.
    #[error(
        "the plugin `{plugin}` comes from {source_text}: a source outside the marketplace must pin a commit (\"sha\"); ask the marketplace to pin one, or pass --allow-unpinned to take what the branch holds now"
    )]
    Unpinned {
        /// The plugin.
        plugin: String,
        /// Its source.
        source_text: String,
    },
    /// A plugin with a part Bosun will not run.
    #[error("the plugin `{plugin}` is refused: {why}")]
    Refused {
        /// The plugin.
        plugin: String,
        /// Why.
        why: String,
    },
    /// A plugin whose files are not what was reviewed.
    #[error(
        "the plugin `{plugin}` changed since you trusted it ({drift}): it is not loaded; install it again (bosun plugins install {plugin}) to review the change"
    )]
    Changed {
        /// The plugin.
        plugin: String,
        /// What differs.
        drift: String,
    },
    /// Something asked for is not there.
    #[error("no {what}")]
    NotFound {
        /// What.
        what: String,
    },
    /// A file operation failed.
    #[error("{doing}: {source}")]
    Io {
        /// What was being done.
        doing: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl ClaudeError {
    pub(crate) fn io(doing: impl Into<String>, source: std::io::Error) -> ClaudeError {
        ClaudeError::Io {
            doing: doing.into(),
            source,
        }
    }

    /// A file of a plugin or marketplace that [`bosun_fsio`] would not read (a link, a FIFO, a
    /// device, past its bound) as a layout error; a failed open or read as an I/O error.
    pub(crate) fn refused(error: bosun_fsio::OpenError) -> ClaudeError {
        match error {
            bosun_fsio::OpenError::Io { path, source } => {
                ClaudeError::io(format!("reading {}", path.display()), source)
            }
            refused => ClaudeError::Layout {
                message: refused.to_string(),
            },
        }
    }
}
