//! Bosun's JavaScript engine: QuickJS (through `rquickjs`) built for `wasm32-wasip2` as a
//! component of the `bosun:js/js-plugin` world (`crates/js/wit/engine.wit`).
//!
//! One instance runs one Forge or Triggerfish plugin inside the same wasmtime sandbox as a
//! native plugin: the host instantiates the pre-initialised engine, hands it the plugin's files
//! (the bytes it hashed for the trust review, TypeScript already stripped) with `activate`, then
//! calls its tools through `bosun:plugin/tools` and its hooks through `engine.hook`.
//!
//! The Rust side here owns the interpreter, the module loader ([`loader`]), the event loop
//! ([`engine`]) and the host calls behind `globalThis.__native` ([`native`]). The JavaScript
//! layer (`js/`, described in `js/README.md`) builds the web globals, the Node surface and the
//! Forge and Triggerfish APIs on top of them. Both are evaluated once, in `component-init`, which
//! pre-initialisation runs before the snapshot every instance starts from.
//!
//! Nothing in the engine is a security boundary: the sandbox is. The engine can only reach what
//! the instance was linked with (HTTP through the host's guard, a workspace preopen when
//! granted), and every call runs under the host's deadline, memory cap and output bound.

mod engine;
mod loader;
mod native;

mod bindings {
    #![allow(missing_docs, clippy::all)]
    wit_bindgen::generate!({
        path: "../wit",
        world: "bosun:js/js-plugin@1.0.0",
        generate_all,
    });
}

use bindings::exports::bosun::js::engine::{Guest as EngineGuest, SourceFile};
use bindings::exports::bosun::plugin::tools::{Guest as ToolsGuest, ToolError};

/// The component's exports.
struct Component;

impl bindings::Guest for Component {
    fn component_init() {
        engine::init();
    }
}

impl ToolsGuest for Component {
    fn call(tool: String, input: String) -> Result<String, ToolError> {
        engine::call(&tool, &input).map_err(Into::into)
    }
}

impl EngineGuest for Component {
    fn activate(files: Vec<SourceFile>, request: String) -> Result<String, ToolError> {
        let files = files.into_iter().map(|f| (f.path, f.text)).collect();
        engine::activate(files, &request).map_err(Into::into)
    }

    fn hook(op: String, payload: String) -> Result<String, ToolError> {
        engine::hook(&op, &payload).map_err(Into::into)
    }
}

impl From<engine::Failure> for ToolError {
    fn from(failure: engine::Failure) -> Self {
        Self {
            code: failure.code.to_owned(),
            message: failure.message,
            retryable: false,
        }
    }
}

bindings::export!(Component with_types_in bindings);
