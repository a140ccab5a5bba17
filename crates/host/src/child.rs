//! A chokepoint for a child run (a subagent): the parent's policy, hooks, workspace, limits,
//! environment and launcher over only the tools the child declared, with the broker of the
//! call that starts it. Built from a [`Host`](crate::Host) once, instantiated per child run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use bosun_core::{Limits, ToolError};
use bosun_launch::Launcher;
use bosun_policy::Policy;

use crate::approval::ApprovalBroker;
use crate::chokepoint::{Chokepoint, PolicyHook};
use crate::{Tool, Workspace};

/// Everything a child's chokepoint is made of, but its broker.
#[derive(Clone)]
pub struct ChildChokepoint {
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) hooks: Vec<Arc<dyn PolicyHook>>,
    pub(crate) policy: Arc<Policy>,
    pub(crate) workspace: Arc<Workspace>,
    pub(crate) limits: Limits,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) launcher: Arc<Launcher>,
    pub(crate) flow: Arc<crate::flow::Flow>,
    pub(crate) config_hooks: Arc<crate::hooks::Hooks>,
    pub(crate) home: PathBuf,
}

impl std::fmt::Debug for ChildChokepoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .tools
            .iter()
            .map(|t| t.spec().name.to_string())
            .collect();
        f.debug_struct("ChildChokepoint")
            .field("tools", &names)
            .finish_non_exhaustive()
    }
}

impl ChildChokepoint {
    /// A chokepoint asking `broker`.
    ///
    /// # Errors
    /// A tool whose schema does not compile (it compiled for the parent, so never in practice).
    pub fn build(&self, broker: Arc<dyn ApprovalBroker>) -> Result<Chokepoint, ToolError> {
        Chokepoint::builder(self.policy.clone(), self.workspace.clone())
            .tools(self.tools.iter().cloned())
            .hooks(self.hooks.iter().cloned())
            .broker(broker)
            .limits(self.limits)
            .env(self.env.clone())
            .launcher(self.launcher.clone())
            .flow(self.flow.clone())
            .config_hooks(self.config_hooks.clone())
            .remember_in(&self.home)
            .build()
    }
}
