//! Listing a server to approve it: the one step `bosun mcp trust`, the terminal's `/mcp` and the
//! editor face share. The server is started once, its tools listed and compared with what was
//! approved before; what approving would pin is sealed from exactly what the person is shown
//! ([`PinnedTool::review`]), and [`ServerReview::record`] pins it. How the review is put to the
//! person (a terminal prompt, an editor's permission request) is the caller's.

use std::path::Path;
use std::sync::Arc;

use bosun_host::mcp_config::McpServerConfig;
use bosun_launch::Launcher;

use super::{ClientError, Server, model_name};
use crate::pins::{Pin, PinError, PinStore, PinnedTool, identity};

/// How a tool compares with the last approval of the same server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The server was never approved as it is now: nothing to compare with.
    First,
    /// Approved before, but not this tool.
    New,
    /// As approved.
    Unchanged,
    /// Its description, schemas or annotations differ from what was approved.
    Changed,
}

/// One listed tool as the person reviews it.
#[derive(Debug, Clone)]
pub struct ReviewedTool {
    /// The server's name for it.
    pub name: String,
    /// Why Bosun will not offer it, if it will not.
    pub refused: Option<String>,
    /// How it compares with the last approval.
    pub change: Change,
    /// The name the model would call it by and what approving it pins (absent when refused).
    pub offered: Option<(String, PinnedTool)>,
    /// What was approved of it before, when that differs.
    pub previous: Option<PinnedTool>,
}

/// A server's tools as listed now, beside what was approved before.
#[derive(Debug, Clone)]
pub struct ServerReview {
    /// The server.
    pub name: String,
    /// Every tool it listed, in its order.
    pub tools: Vec<ReviewedTool>,
    /// Tools approved before that it no longer lists.
    pub removed: Vec<String>,
    /// Whether its annotations set the risk (`trusted = true`); otherwise every tool is
    /// judged as `process`.
    pub trusted: bool,
    pin: Pin,
}

impl ServerReview {
    /// Starts server `name` (through `launcher`, confined to `root`; a URL server with the
    /// sign-in kept in `home`), lists its tools and compares them with the pins of `home`.
    ///
    /// # Errors
    /// The pins cannot be read, or the server cannot be started or listed.
    pub async fn list(
        name: &str,
        config: &McpServerConfig,
        root: &Path,
        home: &Path,
        launcher: Arc<Launcher>,
    ) -> Result<Self, ReviewError> {
        let pins = PinStore::load(home)?;
        let server = Server::new(name, config.clone(), root, home, launcher);
        let listed = server.list().await?;
        let previous = pins
            .servers
            .get(name)
            .filter(|pin| pin.identity == identity(config));
        let mut tools = Vec::new();
        let mut offered = std::collections::BTreeMap::new();
        for tool in &listed {
            let before = previous.and_then(|p| p.tools.get(&tool.name));
            let change = match before {
                None if previous.is_some() => Change::New,
                None => Change::First,
                Some(pinned) if pinned.hash == tool.hash => Change::Unchanged,
                Some(_) => Change::Changed,
            };
            let pinned = tool.refused.is_none().then(|| {
                let offered_as = model_name(name, &tool.name);
                let pinned = PinnedTool::approve(&offered_as, tool.hash.clone(), &tool.raw);
                offered.insert(tool.name.clone(), pinned.clone());
                (offered_as, pinned)
            });
            tools.push(ReviewedTool {
                name: tool.name.clone(),
                refused: tool.refused.clone(),
                change,
                offered: pinned,
                previous: (change == Change::Changed)
                    .then(|| before.cloned())
                    .flatten(),
            });
        }
        let removed = previous
            .map(|p| {
                p.tools
                    .keys()
                    .filter(|t| !listed.iter().any(|l| &l.name == *t))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            name: name.to_owned(),
            tools,
            removed,
            trusted: config.trusted,
            pin: Pin {
                identity: identity(config),
                tools: offered,
            },
        })
    }

    /// How many tools approving would offer.
    pub fn count(&self) -> usize {
        self.pin.tools.len()
    }

    /// Pins what was reviewed as approved, in the pins of `home`; returns how many tools.
    ///
    /// # Errors
    /// The pins cannot be read or written.
    pub fn record(self, home: &Path) -> Result<usize, PinError> {
        let count = self.count();
        PinStore::update(home, |pins| {
            pins.servers.insert(self.name, self.pin);
            (true, ())
        })?;
        Ok(count)
    }
}

/// Why a server could not be reviewed.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The pins could not be read.
    #[error(transparent)]
    Pins(#[from] PinError),
    /// The server could not be started or listed.
    #[error(transparent)]
    Client(#[from] ClientError),
}
