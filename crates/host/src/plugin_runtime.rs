//! The plugin runtimes: one module per plugin format, each turning the catalog's entries (what
//! is installed, trusted and enabled) into [`Tool`](crate::Tool)s that run in the sandbox.
//!
//! - [`native`]: Bosun's WebAssembly components, instantiated lazily on the first call that
//!   passed policy;
//! - [`js`]: Forge and Triggerfish plugins, activated in the JavaScript engine component when the
//!   host starts, because their code names their tools;
//! - [`chock`]: Chock plugins, core modules called through Chock's ABI, instantiated lazily
//!   like native ones and linked with nothing;
//! - [`install`]: the tools with which a model scans, installs and reloads a plugin it wrote.
//!
//! A runtime never decides anything: the chokepoint is the only caller of a plugin tool, and a
//! tool is granted the capabilities the chokepoint judged for that call.

pub mod chock;
pub mod install;
pub mod js;
pub mod native;
