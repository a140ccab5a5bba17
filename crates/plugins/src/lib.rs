//! Bosun's plugin catalog: which plugins exist (native components, Chock modules, Forge and
//! Triggerfish plugins), what they declare, whether the user trusts them exactly as they are,
//! and the names their tools are offered under.
//!
//! **This crate cannot run plugin code.** It depends on no WebAssembly or JavaScript runtime (no
//! wasmtime, no interpreter): a native plugin's metadata comes from the `bosun-plugin-metadata`
//! custom section through `wasmparser`, a Forge plugin's from `plugin.json` through serde_json,
//! and a Triggerfish plugin's from the literal `manifest` export of `mod.ts` through oxc's
//! parser. Listing, trust review and naming therefore never execute anything a plugin ships;
//! the sandbox loads an enabled plugin later, from exactly what this crate hashed
//! ([`PluginEntry::bytes`], [`PluginEntry::source`]).
//!
//! - [`chock`]: Chock plugins, core modules whose metadata is read from their data segments.
//! - [`metadata`]: the custom section (at the top level or in a nested module) and every rule
//!   of the tool contract; a plugin that breaks one is refused whole.
//! - [`discovery`]: user plugins (`$BOSUN_HOME/plugins`, `[plugins.<local>]` in the user's
//!   config) and project plugins (`<workspace>/.bosun/plugins`); shallow, sorted, no symlinks;
//!   each directory's [`PluginFormat`].
//! - [`source`]: a JavaScript plugin's files, read once, bounded, hashed canonically.
//! - [`forge`]: `plugin.json` v1, every Forge rule. [`triggerfish`]: the static `manifest` of
//!   `mod.ts`, every Triggerfish rule.
//! - [`trust`]: `$BOSUN_HOME/trust.toml`, content-hash pins, written atomically.
//! - [`state_lock`]: the lock under which every state file of the home is read, changed and
//!   written, so two Bosun processes never drop each other's change.
//! - [`catalog`]: each plugin's state and its tools' model-visible names.
//! - [`mod@scaffold`]: `bosun plugins new`.
//! - [`scan`]: the scanner for JavaScript/TypeScript plugins, a review aid that reads their
//!   syntax with oxc (never runs it) and refuses as Triggerfish's scanner does, without its holes.
//! - [`typescript`]: TypeScript to JavaScript by erasing types, with oxc.
//!
//! # The trust rule (user and project plugins alike)
//!
//! A plugin's code loads only when the trust store holds a record for its scope and local name
//! whose SHA-256 equals the hash of the bytes on disk and whose capabilities include every
//! capability the plugin declares. Otherwise it is [`PluginState::Untrusted`] (no record) or
//! [`PluginState::Changed`] (the review shows old and new hash and version, and the capabilities
//! and tools added and removed).
//!
//! - Project plugins: `bosun plugins trust` in the workspace records them under the canonical
//!   workspace path. Nothing in the repository can do so.
//! - User plugins: enabling is the user's trust decision, so `bosun plugins enable NAME` writes
//!   the config entry and records the hash in one step. An entry added to `config.toml` by hand
//!   stays `Untrusted` until `bosun plugins trust NAME`; a plugin whose file changed afterwards
//!   (an update, a rebuild, another file at `path`) is `Changed` until trusted again. The rule is
//!   the same for both scopes, so "enabled" always means "these exact bytes were approved".
//!
//! Disabled plugins (`enabled = false`, or a directory under `$BOSUN_HOME/plugins` that no
//! entry points at) are listed with their metadata but never offered.
//!
//! # Naming
//!
//! Policy actions are `plugin.<local-name>.tool.<tool>`. A tool is offered to the model under
//! its own name (already `^[a-z][a-z0-9_]{0,63}$`, valid for every provider). A plugin tool
//! named like a built-in makes the whole plugin invalid; when two enabled plugins declare the
//! same tool, the later one in load order (user plugins sorted by local name, then project
//! plugins sorted) loses only that tool, with a [`CatalogWarning::ToolClash`].
//!
//! ```
//! use bosun_plugins::Manifest;
//! use wasm_encoder::{Component, CustomSection, Module, ModuleSection};
//!
//! let json = r#"{"metadata_version": 1, "api_version": "1.0.0", "name": "hello",
//!     "version": "0.1.0", "tools": [{"name": "greet", "description": "Greets someone.",
//!     "input_schema": {"type": "object"}, "risk": "read"}]}"#;
//! let mut module = Module::new();
//! module.section(&CustomSection { name: "bosun-plugin-metadata".into(), data: json.as_bytes().into() });
//! let mut component = Component::new();
//! component.section(&ModuleSection(&module));
//!
//! let manifest = Manifest::from_component(&component.finish(), &["read_file"]).unwrap();
//! assert_eq!(manifest.tools[0].spec.name.as_str(), "greet");
//! ```

pub mod atomic;
pub mod catalog;
pub mod chock;
pub mod digests;
pub mod discovery;
mod error;
pub mod forge;
pub mod lock;
pub mod metadata;
pub mod scaffold;
pub mod scan;
pub mod source;
pub mod state_lock;
pub mod triggerfish;
pub mod trust;
pub mod typescript;

pub use atomic::{sweep_stale_temporaries, write_atomic};
pub use catalog::{
    Catalog, CatalogInput, CatalogWarning, Change, JsManifest, PluginContent, PluginEntry,
    PluginState, ResolvedTool, ToolOffer, tool_action,
};
pub use discovery::{PluginConfig, PluginFormat, PluginScope, check_plugin_configs, is_local_name};
pub use error::PluginError;
pub use forge::{CODE_FROM_STRINGS, ForgeCapability, ForgeManifest};
pub use metadata::{CapabilityDecl, Manifest, PluginMetadata, PluginTool, ToolMetadata};
pub use scaffold::scaffold;
pub use source::{SourceFile, SourceSnapshot};
pub use triggerfish::{ManifestTrust, TriggerfishManifest};
pub use trust::{Declared, TrustRecord, TrustStore};

pub(crate) use bosun_core::text::line_col;
