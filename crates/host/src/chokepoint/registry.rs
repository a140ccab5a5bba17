//! The tool set a chokepoint resolves names against: one swap under a lock per change, so a
//! call sees the old set or the new one, never a mixture. It decides nothing about a call.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use bosun_core::{ErrorCode, ToolError};

use crate::Tool;

pub(super) struct Registered {
    pub(super) tool: Arc<dyn Tool>,
    /// Compiled at the tool's first call (most tools of a process are never called; every
    /// spec built with [`bosun_core::ToolSpec::builder`] has a schema that compiles), or at
    /// registration for tools installed during a run, whose set is refused whole otherwise.
    validator: std::sync::OnceLock<Result<jsonschema::Validator, ToolError>>,
    /// Who registered the tool at run time (`None` for the tools the chokepoint was built with).
    owner: Option<String>,
    /// Registration order: tools are listed in the order they were added.
    seq: u64,
}

/// The tools a chokepoint resolves names against. Shared with whatever may add tools during a
/// run (plugins the model installs): a change is one swap under a lock, so a call sees either the
/// old set or the new one, never a mixture.
#[derive(Default)]
pub struct ToolRegistry {
    tools: RwLock<HashMap<String, Arc<Registered>>>,
    next_seq: std::sync::atomic::AtomicU64,
    /// Bumped by every change to the set of tools.
    generation: std::sync::atomic::AtomicU64,
    /// Names of tools that exist but are not offered, with why (a plugin that changed since
    /// it was trusted, or was never trusted): a call to one says so instead of "no such tool".
    withheld: RwLock<HashMap<String, String>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.read().len())
            .finish()
    }
}

impl Registered {
    fn new(tool: Arc<dyn Tool>, owner: Option<String>, seq: u64) -> Self {
        Self {
            tool,
            validator: std::sync::OnceLock::new(),
            owner,
            seq,
        }
    }

    /// The tool's input validator, compiled now if it was not yet.
    pub(super) fn validator(&self) -> Result<&jsonschema::Validator, &ToolError> {
        self.validator.get_or_init(|| compile(&self.tool)).as_ref()
    }
}

fn compile(tool: &Arc<dyn Tool>) -> Result<jsonschema::Validator, ToolError> {
    jsonschema::validator_for(&tool.spec().input_schema).map_err(|e| {
        ToolError::new(
            ErrorCode::InvalidInput,
            format!(
                "tool `{}` has an invalid input schema: {e}",
                tool.spec().name
            ),
        )
    })
}

impl ToolRegistry {
    fn seq(&self) -> u64 {
        self.next_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    pub(super) fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Registered>>> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn get(&self, name: &str) -> Option<Arc<Registered>> {
        self.read().get(name).cloned()
    }

    /// Replaces every tool `owner` registered with `tools`, all at once. Refused whole (nothing
    /// changes) when a schema does not compile or a name is taken by a tool of another owner.
    ///
    /// # Errors
    /// A [`ToolError`] naming the tool.
    pub fn replace_owned(&self, owner: &str, tools: Vec<Arc<dyn Tool>>) -> Result<(), ToolError> {
        let mut compiled = Vec::with_capacity(tools.len());
        for tool in tools {
            let validator = compile(&tool)?;
            let registered = Registered::new(tool, Some(owner.to_owned()), self.seq());
            let _ = registered.validator.set(Ok(validator));
            compiled.push(registered);
        }
        let mut map = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        for registered in &compiled {
            let name = registered.tool.spec().name.as_str();
            if let Some(existing) = map.get(name)
                && existing.owner.as_deref() != Some(owner)
            {
                return Err(ToolError::new(
                    ErrorCode::InvalidInput,
                    format!("a tool named `{name}` already exists; rename the plugin's tool"),
                ));
            }
        }
        map.retain(|_, r| r.owner.as_deref() != Some(owner));
        for registered in compiled {
            map.insert(
                registered.tool.spec().name.to_string(),
                Arc::new(registered),
            );
        }
        self.changed();
        Ok(())
    }

    fn changed(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// Records that a tool named `name` exists but is held back, and why.
    pub fn withhold(&self, name: impl Into<String>, why: impl Into<String>) {
        self.withheld
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.into(), why.into());
    }

    /// Why `name` is not offered, when it is a known tool held back.
    pub fn withheld(&self, name: &str) -> Option<String> {
        self.withheld
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// A number that changes whenever a tool is added, replaced or removed: a caller that
    /// listed the tools can tell whether its list is still current (an MCP client is told).
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Adds one tool owned by the host (a built-in, a configured plugin's tool). Refused when
    /// its name is taken; nothing else changes. Its schema was checked when its spec was built
    /// ([`bosun_core::ToolSpec::builder`] compiles it) and is compiled again at its first call;
    /// a schema that does not compile then refuses the call, never runs it.
    ///
    /// # Errors
    /// A [`ToolError`] naming the tool.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        let name = tool.spec().name.to_string();
        let mut map = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        if map.contains_key(&name) {
            return Err(ToolError::new(
                ErrorCode::InvalidInput,
                format!("a tool named `{name}` already exists"),
            ));
        }
        map.insert(name, Arc::new(Registered::new(tool, None, self.seq())));
        drop(map);
        self.changed();
        Ok(())
    }

    /// Adds the tools a chokepoint is built with; a duplicate name is refused with the tool
    /// named.
    pub(super) fn add_built(&self, tools: Vec<Arc<dyn Tool>>) -> Result<(), ToolError> {
        let mut map = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        for tool in tools {
            let name = tool.spec().name.to_string();
            let registered = Registered::new(tool, None, self.seq());
            if map.insert(name.clone(), Arc::new(registered)).is_some() {
                return Err(ToolError::new(
                    ErrorCode::InvalidInput,
                    format!("two tools are named `{name}`"),
                ));
            }
        }
        Ok(())
    }

    /// Every tool, in the order it was registered.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<(u64, Arc<dyn Tool>)> = self
            .read()
            .values()
            .map(|r| (r.seq, r.tool.clone()))
            .collect();
        tools.sort_by_key(|(seq, _)| *seq);
        tools.into_iter().map(|(_, tool)| tool).collect()
    }

    /// Names of the tools `owner` registered, sorted.
    pub fn owned_by(&self, owner: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .read()
            .iter()
            .filter(|(_, r)| r.owner.as_deref() == Some(owner))
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }

    /// Leaves out every tool `keep` refuses, recording `why` for a call that names one (a
    /// prompt whose command narrows the tools it may use).
    pub fn retain(&self, keep: impl Fn(&str) -> bool, why: &str) {
        let mut map = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        let dropped: Vec<String> = map.keys().filter(|name| !keep(name)).cloned().collect();
        if dropped.is_empty() {
            return;
        }
        for name in &dropped {
            map.remove(name);
        }
        drop(map);
        for name in dropped {
            self.withhold(name, why);
        }
        self.changed();
    }

    /// Whether a tool of this name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.read().contains_key(name)
    }
}
