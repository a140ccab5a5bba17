//! The plugin runtimes: one layer that turns the catalog's entries (what is installed, trusted
//! and enabled) into [`Tool`](crate::Tool)s, policy hooks, prompt contributions and observers
//! that run in the sandbox.
//!
//! - [`contract`]: the [`Runtime`] every format implements, what it is given ([`Assembly`]) and
//!   what it offers ([`Offer`]); the host loops over [`runtimes`] and never names a format;
//! - [`granter`]: from what the chokepoint judged for a call to what it may reach (preopens,
//!   HTTP, a spawned process's confinement), and the one rule that withholds a plugin tool;
//! - [`slot`]: the lazily created instance every format replaces after it is poisoned;
//! - `call_report`: the one path by which a call's log lines, dropped lines and refused
//!   requests reach the trace, for every format and whether the call succeeded or failed;
//! - [`native`]: Bosun's WebAssembly components, instantiated lazily on the first call that
//!   passed policy;
//! - [`chock`]: Chock plugins, core modules called through Chock's ABI, instantiated lazily
//!   like native ones and linked with nothing;
//! - [`js`]: Forge and Triggerfish plugins, activated in the JavaScript engine component when the
//!   host starts, because their code names their tools;
//! - [`install`]: the tools with which a model scans, installs and reloads a plugin it wrote.
//!
//! A runtime never decides anything: the chokepoint is the only caller of a plugin tool, and a
//! tool is granted the capabilities the chokepoint judged for that call. Adding a format is a
//! module here, a variant of [`bosun_plugins::PluginContent`] and one of the sandbox's dispatch.

use std::sync::Arc;

mod call_report;
pub mod chock;
pub mod claude;
pub mod contract;
pub mod error;
pub mod granter;
pub mod install;
pub mod js;
pub mod native;
mod slot;

pub use contract::{Assembly, LazySandbox, Listed, Offer, Prompts, Runtime, run_to_completion};
pub use error::RuntimeError;

/// Every format's runtime, in the order their tools are registered; JavaScript plugins run in
/// `engine`.
pub fn runtimes(engine: &Arc<js::JsEngine>) -> Vec<Box<dyn Runtime>> {
    vec![
        Box::new(native::NativeRuntime::default()),
        Box::new(chock::ChockRuntime),
        Box::new(js::JavaScriptRuntime::new(Arc::clone(engine))),
        Box::new(claude::ClaudeRuntime::default()),
    ]
}
