//! Paths of Bosun's guest components, built for `wasm32-wasip2` by this crate's build script
//! from the guest workspace (`guests/Cargo.toml`): the example plugins in `examples/plugins`
//! and the hostile programs in `tests/programs` (see `tests/programs/README.md` for what each
//! one attacks). Depend on it as a dev-dependency and load the components with wasmtime:
//!
//! ```
//! let bytes = std::fs::read(bosun_test_programs::HELLO).unwrap();
//! assert_eq!(&bytes[..4], b"\0asm");
//! assert!(bosun_test_programs::all().iter().any(|(name, _)| *name == "hello"));
//! ```
//!
//! The custom section `bosun-plugin-metadata` of each component sits inside its first nested
//! core module (the plugin's own code), not at the component's top level.

include!(concat!(env!("OUT_DIR"), "/guests.rs"));
