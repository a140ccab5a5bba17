//! Building a [`Chokepoint`]: its tools, hooks, broker, limits and the rest, each with a default.

use std::collections::BTreeMap;
use std::sync::Arc;

use bosun_core::{Limits, ToolError};
use bosun_launch::{Launcher, SandboxConfig};
use bosun_policy::Policy;

use super::{Chokepoint, PolicyHook, ToolRegistry};
use crate::approval::{ApprovalBroker, NonInteractive};
use crate::flow::Flow;
use crate::review::Reviewer;
use crate::{Tool, Workspace};

impl Chokepoint {
    /// Starts a chokepoint over `policy` for `workspace`.
    pub fn builder(policy: Arc<Policy>, workspace: Arc<Workspace>) -> ChokepointBuilder {
        ChokepointBuilder {
            tools: Vec::new(),
            hooks: Vec::new(),
            registry: None,
            policy,
            broker: Arc::new(NonInteractive),
            workspace,
            limits: Limits::default(),
            env: Arc::new(BTreeMap::new()),
            launcher: None,
            flow: Arc::default(),
            result_hooks: Arc::default(),
            reviewer: None,
            review_asks: false,
            remember_in: None,
        }
    }
}

/// Builds a [`Chokepoint`].
pub struct ChokepointBuilder {
    tools: Vec<Arc<dyn Tool>>,
    hooks: Vec<Arc<dyn PolicyHook>>,
    registry: Option<Arc<ToolRegistry>>,
    policy: Arc<Policy>,
    broker: Arc<dyn ApprovalBroker>,
    workspace: Arc<Workspace>,
    limits: Limits,
    env: Arc<BTreeMap<String, String>>,
    launcher: Option<Arc<Launcher>>,
    flow: Arc<Flow>,
    result_hooks: Arc<crate::hooks::Hooks>,
    reviewer: Option<Arc<dyn Reviewer>>,
    review_asks: bool,
    remember_in: Option<std::path::PathBuf>,
}

impl ChokepointBuilder {
    /// Sets who decides `review` decisions before a person (default: nobody; a person is asked).
    pub fn reviewer(mut self, reviewer: Arc<dyn Reviewer>) -> Self {
        self.reviewer = Some(reviewer);
        self
    }

    /// Sends an `ask` to the reviewer too when the broker has nobody to ask (`[policy]
    /// review_asks`). Without a reviewer it changes nothing.
    pub fn review_asks(mut self, yes: bool) -> Self {
        self.review_asks = yes;
        self
    }

    /// Sets the information-flow rules checked after policy (default: every host `PUBLIC`,
    /// no labelled paths, write-downs asked about).
    pub fn flow(mut self, flow: Arc<Flow>) -> Self {
        self.flow = flow;
        self
    }

    /// Sets the configured hooks (`[hooks]`): the pre-call ones join the policy hooks, the
    /// post-response ones act on every result.
    pub fn config_hooks(mut self, hooks: Arc<crate::hooks::Hooks>) -> Self {
        if hooks.has_pre() {
            self.hooks.push(hooks.clone());
        }
        self.result_hooks = hooks;
        self
    }

    /// Adds tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Adds plugin policy hooks, asked in order about every call.
    pub fn hooks(mut self, hooks: impl IntoIterator<Item = Arc<dyn PolicyHook>>) -> Self {
        self.hooks.extend(hooks);
        self
    }

    /// Uses `registry` (shared with tools that add tools during the run) for the tool set; the
    /// builder's tools are added to it.
    pub fn registry(mut self, registry: Arc<ToolRegistry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Sets the approval broker (default: non-interactive refusal).
    pub fn broker(mut self, broker: Arc<dyn ApprovalBroker>) -> Self {
        self.broker = broker;
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the (already scrubbed) environment for child processes.
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = Arc::new(env);
        self
    }

    /// Sets the launcher every child process starts through (default: the full sandbox with
    /// the default `[sandbox]` settings).
    pub fn launcher(mut self, launcher: Arc<Launcher>) -> Self {
        self.launcher = Some(launcher);
        self
    }

    /// Where "always in this workspace" answers are written (`$BOSUN_HOME`; see
    /// [`crate::remembered`]). Without it such an answer allows for the session only, and the
    /// trace says nothing was written.
    pub fn remember_in(mut self, home: impl Into<std::path::PathBuf>) -> Self {
        self.remember_in = Some(home.into());
        self
    }

    /// Registers every tool; a duplicate name is refused with the tool named. Schemas are
    /// compiled at each tool's first call (see [`ToolRegistry::register`]).
    pub fn build(self) -> Result<Chokepoint, ToolError> {
        let registry = self.registry.unwrap_or_default();
        registry.add_built(self.tools)?;
        Ok(Chokepoint {
            tools: registry,
            hooks: self.hooks,
            policy: self.policy,
            broker: self.broker,
            workspace: self.workspace,
            limits: self.limits,
            remember_in: self.remember_in,
            env: self.env,
            launcher: self
                .launcher
                .unwrap_or_else(|| Arc::new(Launcher::new(SandboxConfig::default()))),
            flow: self.flow,
            result_hooks: self.result_hooks,
            reviewer: self.reviewer,
            review_asks: self.review_asks,
        })
    }
}
