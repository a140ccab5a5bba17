//! Bosun's JavaScript engine and the host side of JavaScript plugins.
//!
//! - [`ENGINE`]: the engine component, QuickJS built for `wasm32-wasip2` by this crate's
//!   build script from `crates/js/engine` (world `bosun:js/js-plugin@1.0.0`, `crates/js/wit`).
//!   The sandbox pre-initialises it once ([`bosun_sandbox::Sandbox::load_js_engine`]).
//! - [`JsPlugin`]: one Forge or Triggerfish plugin running in its own engine instance:
//!   [`JsPlugin::activate`] hands the engine the plugin's files (the bytes the trust review
//!   hashed, TypeScript already stripped) and returns the plugin's [`Descriptor`]; tools and hooks
//!   are then called through the same sandbox path as native plugins (deadline, cancellation,
//!   memory cap, output bound, HTTP guard).
//!
//! Deciding *whether* a plugin may load, which capabilities it gets and what a call may reach is
//! the caller's job (trust store, policy); this crate only runs what it is given inside the
//! sandbox it is given.

mod descriptor;
mod plugin;
mod thrown;

pub use descriptor::{
    ActivationRequest, Descriptor, Format, HookCounts, JsCommand, JsLimits, JsSubagent,
    JsSubagentLimits, JsTool, Trust, UnknownRisk, tool_risk_of,
};
pub use plugin::{CommandOutput, JsError, JsPlugin, Restriction, ToolOutcome};
pub use thrown::ThrownAt;

/// The JavaScript engine component (QuickJS for `wasm32-wasip2`), as built by this crate.
///
/// A `static`, not a `const`: a constant's bytes are copied into every crate and codegen unit
/// that names it, and the host named it in two, which put the engine's 1.7 MB in the binary twice.
pub static ENGINE_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bosun_js_engine.wasm"));

/// [`ENGINE_WASM`]'s SHA-256, computed by the build script.
pub const ENGINE_SHA256: [u8; 32] =
    include!(concat!(env!("OUT_DIR"), "/bosun_js_engine_sha256.rs"));

/// The engine with its digest, as the sandbox loads it: no start hashes its megabytes again.
pub static ENGINE: bosun_sandbox::JsEngineImage<'static> =
    bosun_sandbox::JsEngineImage::prehashed(ENGINE_WASM, ENGINE_SHA256);

#[cfg(test)]
mod tests {
    #[test]
    fn the_built_in_digest_is_the_engines() {
        let hashed_now = bosun_sandbox::JsEngineImage::new(super::ENGINE_WASM);
        assert_eq!(super::ENGINE.sha256(), hashed_now.sha256());
        assert_eq!(super::ENGINE.wasm().len(), super::ENGINE_WASM.len());
    }
}
