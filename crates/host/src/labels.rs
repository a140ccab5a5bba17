//! Labels that travel: what a session has seen ([`SessionLabels`]) and what a producer of
//! words a session reads may hold ([`InstanceLabel`]: a plugin's kept instance, a Claude Code
//! plugin's data folder, a running MCP server). A session takes a producer's label on through [`Reader`]. This module
//! is a leaf: it knows no session, trace or plugin, so every part that moves labels can use it.

use std::sync::Arc;

/// What a hook knows of the session a call comes from; also the label of a plugin instance,
/// the highest of the sessions whose data reached it (the default: none reached it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionLabels {
    /// The highest level of data the session has seen.
    pub level: bosun_core::Classification,
    /// The first untrusted input it read, if any.
    pub untrusted: Option<String>,
}

impl SessionLabels {
    /// Takes in `other`: the higher level, and the first untrusted input (kept once marked).
    pub fn raise(&mut self, other: &SessionLabels) {
        self.level = self.level.max(other.level);
        if self.untrusted.is_none() {
            self.untrusted.clone_from(&other.untrusted);
        }
    }

    /// Whether it says more than a fresh session: a level above `PUBLIC` or untrusted input.
    pub fn is_marked(&self) -> bool {
        self.level > bosun_core::Classification::Public || self.untrusted.is_some()
    }
}

/// What produced words a session reads, and may have kept other sessions' data in: a plugin's
/// kept instance, or a Claude Code plugin's data folder that its hooks and servers write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Producer {
    /// The live instance of a plugin (its local name), whose module state outlives the call.
    Instance(String),
    /// The data folder of a Claude Code plugin (its id), which outlives sessions and processes.
    DataFolder(String),
    /// The running process of an MCP server (its name), or its connection to a remote one,
    /// which serves every session of the process.
    McpServer(String),
}

impl std::fmt::Display for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Producer::Instance(plugin) => write!(f, "instance of plugin `{plugin}`"),
            Producer::DataFolder(plugin) => {
                write!(f, "data folder of the Claude Code plugin `{plugin}`")
            }
            Producer::McpServer(server) => write!(f, "running MCP server `{server}`"),
        }
    }
}

/// The label what a producer says carries: the highest level and the first untrusted input of
/// every session whose data reached a kept plugin instance (or a plugin's data folder), with
/// what produced it. A plugin runtime records it after the call (or the hook); the chokepoint
/// takes it after the decision and after the call ([`Reader::take_on`]).
#[derive(Debug, Clone, Default)]
pub struct InstanceLabel(Arc<std::sync::Mutex<Option<(Producer, SessionLabels)>>>);

impl InstanceLabel {
    /// Records that what the call got came from the instance of `plugin` labelled `label`
    /// (nothing when the label says no more than a fresh session).
    pub fn record(&self, plugin: &str, label: &SessionLabels) {
        if label.is_marked() {
            self.record_from(Producer::Instance(plugin.to_owned()), label);
        }
    }

    /// Records that what the call got came from `producer` labelled `label` (nothing when the
    /// label says no more than a fresh session).
    pub fn record_from(&self, producer: Producer, label: &SessionLabels) {
        if !label.is_marked() {
            return;
        }
        let mut kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match kept.as_mut() {
            Some((_, held)) => held.raise(label),
            None => *kept = Some((producer, label.clone())),
        }
    }

    /// Hands what was recorded here, if anything, on to `other`, and forgets it.
    pub fn pass_to(&self, other: &InstanceLabel) {
        if let Some((producer, label)) = self.take() {
            other.record_from(producer, &label);
        }
    }

    /// The recorded producer and label, if any, and forgets them.
    pub fn take(&self) -> Option<(Producer, SessionLabels)> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// A session as the producers of the words it reads see it: its labels now, and taking on a
/// producer's label (implemented by [`crate::session::Session`]).
pub trait Reader: Send + Sync {
    /// Its labels now.
    fn labels(&self) -> SessionLabels;

    /// Raises it to what `carried` recorded and marks it with its untrusted input, naming the
    /// producer and `what` (`id`) that handed its words over — a call, a hook, a prompt
    /// contribution — then forgets what was recorded. The `taint.raised` and
    /// `integrity.untrusted` events to record, if anything changed.
    fn take_on(&self, carried: &InstanceLabel, id: &str, what: &str) -> Vec<bosun_core::Event>;
}
