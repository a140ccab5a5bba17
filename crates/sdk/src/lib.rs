//! The Rust SDK for Bosun plugins: write tools as typed functions, declare them once, and get a
//! `wasm32-wasip2` component whose metadata the host reads without running any of its code.
//!
//! A plugin crate has three parts (`bosun plugins new NAME` writes them):
//!
//! - `src/spec.rs` declares the plugin: its tools, their input types (`Deserialize` +
//!   `JsonSchema`), risks and capabilities, as a [`spec::PluginSpec`].
//! - `build.rs` includes that same file and calls [`build::write_metadata`], which serialises
//!   the metadata (schemas from schemars) into `OUT_DIR`.
//! - `src/lib.rs` implements [`Plugin`] (state + handlers by tool name) and calls
//!   [`export!`], which exports `bosun:plugin/tools` and embeds the metadata in the custom
//!   section `bosun-plugin-metadata` of the core module inside the component.
//!
//! ```
//! use bosun_sdk::{Plugin, ToolError, Tools};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, schemars::JsonSchema)]
//! struct GreetInput {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[derive(Serialize)]
//! struct Greeting {
//!     message: String,
//! }
//!
//! fn greet(input: GreetInput) -> Result<Greeting, ToolError> {
//!     Ok(Greeting { message: format!("Hello, {}!", input.name) })
//! }
//!
//! #[derive(Default)]
//! struct Hello;
//!
//! impl Plugin for Hello {
//!     fn tools() -> Tools<Self> {
//!         Tools::new().tool("greet", greet)
//!     }
//! }
//! // In a plugin crate: bosun_sdk::export!(Hello);
//!
//! let out = bosun_sdk::testing::call::<Hello>("greet", serde_json::json!({"name": "Ada"}));
//! assert_eq!(out.unwrap()["message"], "Hello, Ada!");
//! ```
//!
//! Inside the sandbox, [`host`] reaches the host (log, config, cancellation) and [`http`] makes
//! outgoing requests, never following a redirect behind the host's back.

#[cfg(feature = "build")]
pub mod build;
pub mod spec;

#[cfg(feature = "guest")]
mod error;
#[cfg(feature = "guest")]
pub mod host;
#[cfg(feature = "guest")]
pub mod http;
#[cfg(all(feature = "guest", not(target_arch = "wasm32")))]
pub mod testing;
#[cfg(feature = "guest")]
mod tools;

#[cfg(feature = "guest")]
#[doc(hidden)]
#[path = "bindings.rs"]
pub mod __bindings;

#[cfg(feature = "guest")]
pub use error::ToolError;
pub use spec::NoInput;
#[cfg(feature = "guest")]
pub use tools::{Handler, Instance, OfInput, OfState, Plugin, Tools};

/// Exports a [`Plugin`] as the component's `bosun:plugin/tools` and embeds its metadata
/// (see [`embed_metadata!`]). Call it once, at the root of the plugin's library.
///
/// Off wasm (the plugin's own tests) nothing is exported; the type is only checked to be a
/// [`Plugin`].
#[cfg(feature = "guest")]
#[macro_export]
macro_rules! export {
    ($plugin:ty) => {
        $crate::embed_metadata!();

        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct BosunToolsExport;

            impl $crate::__bindings::exports::bosun::plugin::tools::Guest for BosunToolsExport {
                fn call(
                    tool: ::std::string::String,
                    input: ::std::string::String,
                ) -> ::std::result::Result<
                    ::std::string::String,
                    $crate::__bindings::exports::bosun::plugin::tools::ToolError,
                > {
                    $crate::__private::call::<$plugin>(&tool, &input)
                        .map_err(::std::convert::Into::into)
                }
            }

            $crate::__bindings::__export_bosun_plugin_v1!(BosunToolsExport with_types_in $crate::__bindings);
        };

        #[cfg(not(target_arch = "wasm32"))]
        const _: fn() = || {
            fn is_a_plugin<P: $crate::Plugin>() {}
            is_a_plugin::<$plugin>();
        };
    };
}

/// Embeds `$OUT_DIR/bosun-plugin-metadata.json` (written by [`build::write_metadata`] in the
/// plugin's build script) as the custom section `bosun-plugin-metadata`. The bytes are a
/// `#[used]` static placed in that section, so the linker keeps them and no code runs to read
/// them. [`export!`] calls this; use it alone only with hand-written bindings.
#[macro_export]
macro_rules! embed_metadata {
    () => {
        const _: () = {
            #[cfg_attr(target_family = "wasm", unsafe(link_section = "bosun-plugin-metadata"))]
            #[used]
            static BOSUN_PLUGIN_METADATA: [u8; ::core::include_bytes!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/bosun-plugin-metadata.json"
            ))
            .len()] = *::core::include_bytes!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/bosun-plugin-metadata.json"
            ));
        };
    };
}

/// A [`spec::PluginSpec`] named, versioned and described from the plugin's own `Cargo.toml`
/// (`CARGO_PKG_NAME`, `CARGO_PKG_VERSION`, `CARGO_PKG_DESCRIPTION`), in its build script and its
/// library alike.
#[macro_export]
macro_rules! plugin_spec {
    () => {
        $crate::spec::PluginSpec::new(
            ::core::env!("CARGO_PKG_NAME"),
            ::core::env!("CARGO_PKG_VERSION"),
            ::core::env!("CARGO_PKG_DESCRIPTION"),
        )
    };
}

/// The plugin's metadata JSON as its build script wrote it, for its tests
/// ([`testing::check_metadata`]).
#[macro_export]
macro_rules! metadata {
    () => {
        ::core::include_str!(::core::concat!(
            ::core::env!("OUT_DIR"),
            "/bosun-plugin-metadata.json"
        ))
    };
}

#[cfg(feature = "guest")]
#[doc(hidden)]
pub mod __private {
    use std::any::Any;
    use std::cell::RefCell;

    use crate::{Instance, Plugin, ToolError};

    thread_local! {
        // One plugin value per sandbox instance, created on the first call. `Any` because a
        // static cannot be generic; a component exports exactly one plugin type.
        static INSTANCE: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
    }

    /// The body of the exported `tools.call`.
    pub fn call<P: Plugin>(tool: &str, input: &str) -> Result<String, ToolError> {
        INSTANCE.with(|slot| {
            // The component model forbids re-entering an instance, so this borrow never fails.
            let mut slot = slot
                .try_borrow_mut()
                .map_err(|_| ToolError::plugin_error("the plugin was re-entered"))?;
            let instance = slot.get_or_insert_with(|| Box::new(Instance::<P>::new()));
            let instance = instance
                .downcast_mut::<Instance<P>>()
                .ok_or_else(|| ToolError::plugin_error("two plugin types in one component"))?;
            instance.call(tool, input)
        })
    }
}
