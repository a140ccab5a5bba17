//! Bosun's WebAssembly sandbox: the wasmtime engine and the host side of every capability a
//! plugin can be granted.
//!
//! The boundary: callers hand this crate component bytes (or a Chock plugin's core module, or
//! the JavaScript engine) and grants; it compiles (with an on-disk artefact cache), links and
//! runs them. It knows nothing of policy files, trust or
//! discovery — deciding *what* to grant is the caller's job; making sure a plugin reaches
//! *nothing else* is this crate's.
//!
//! What an instance is linked with is fixed by [`Grants`] before any plugin code runs:
//! - no environment variables, no arguments, empty stdin, stdout/stderr captured and bounded;
//! - no sockets and no DNS (`wasi:sockets` is linked but refuses everything);
//! - `/workspace` preopened (read-only or read-write) only with an [`FsGrant`];
//! - outgoing HTTP only through the guard (`http.rs`): per-call granted authorities, host-side
//!   DNS, no loopback/private/link-local/metadata addresses unless named, bounded responses;
//! - `bosun:plugin/host`: bounded logs, the plugin's config table, `is-cancelled`;
//! - clocks and random.
//!
//! Every call runs under a deadline (epoch interruption, stopped within one tick), can be
//! cancelled, is capped in memory and output size, and a failed call poisons its instance.
//!
//! ```no_run
//! # async fn demo(wasm: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
//! use bosun_sandbox::{CallOptions, Grants, NetGrant, Sandbox, SandboxConfig};
//!
//! let sandbox = Sandbox::new(SandboxConfig {
//!     cache_dir: Some("/home/me/.bosun/cache/plugins".into()),
//!     ..SandboxConfig::default()
//! })?;
//! let loaded = sandbox.load(wasm)?.with_label("web");
//! let mut instance = loaded.instantiate(Grants { http: true, ..Grants::default() }).await?;
//! let opts = CallOptions {
//!     net: NetGrant { hosts: vec!["example.com".parse()?], ..NetGrant::default() },
//!     ..CallOptions::default()
//! };
//! let out = instance.call("web_fetch", r#"{"url":"https://example.com/"}"#, opts).await?;
//! println!("{}", out.output_json);
//! # Ok(())
//! # }
//! ```

mod cache;
mod chock;
mod engine;
mod error;
mod grants;
mod host;
mod http;
mod instance;
mod js;
mod limits;
mod linker;
mod process;
mod report;
mod slots;
mod store;

/// The host's bindings of Bosun's plugin WIT, one module per version (`crates/sdk/wit/v<N>`).
/// Each version is one variant of the instance's dispatch enums (`instance::Pre`,
/// `instance::Bound`), so WIT v2 is one more module here and one more variant there; the call
/// path above them does not change.
mod wit {
    /// `bosun:plugin@1.0.0`, generated from `crates/sdk/wit/v1`.
    pub(crate) mod v1 {
        #![allow(missing_docs)]
        wasmtime::component::bindgen!({
            path: "../sdk/wit/v1",
            world: "bosun:plugin/plugin",
            exports: { default: async },
        });
    }
}

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Module};

pub use cache::CacheOutcome;
pub use engine::EngineLimits;
pub use error::{CallError, CallErrorKind, SandboxError};
pub use grants::{CallOptions, FsGrant, Grants, JsGrants, JsSession, WORKSPACE_GUEST_PATH};
pub use host::{LogLevel, LogLine};
pub use http::{
    HttpLimits, NetGrant, Refusal, RefusedRequest, ResolveFuture, Resolver, StaticResolver,
    SystemResolver, non_public_range,
};
pub use instance::{Instance, Loaded};
pub use limits::OutputLimits;
pub use process::{
    JsProcesses, MAX_PROCESSES_PER_CALL, MAX_WRITE_BYTES, SpawnRequest, Spawned, StartError,
    StartFuture,
};
pub use report::{CallOutput, CallReport};
pub use slots::{KeptInstance, SlotRegistry};

use cache::{ArtefactCache, sha256};
use engine::{EpochTicker, InstanceCount};
use store::StoreState;

/// How the sandbox is built.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Where precompiled artefacts are kept (created with mode 0700). `None` compiles every
    /// load in memory.
    pub cache_dir: Option<PathBuf>,
    /// Engine bounds: memory ceiling, instance pool, epoch tick.
    pub engine: EngineLimits,
    /// Output, log and resource bounds.
    pub output: OutputLimits,
    /// Outgoing HTTP bounds.
    pub http: HttpLimits,
    /// Resolves host names for the HTTP guard.
    pub resolver: Arc<dyn Resolver>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            engine: EngineLimits::default(),
            output: OutputLimits::default(),
            http: HttpLimits::default(),
            resolver: Arc::new(SystemResolver),
        }
    }
}

/// The engine, the linker every plugin is linked against, and the artefact cache. Create one
/// per process and share it (it is cheap to clone).
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<SandboxInner>,
}

pub(crate) struct SandboxInner {
    pub(crate) engine: Engine,
    linker: Linker<StoreState>,
    cache: Option<ArtefactCache>,
    pub(crate) config: SandboxConfig,
    /// The instances its callers keep between calls, released when the pool is full.
    pub(crate) slots: SlotRegistry,
    /// Live instances, counted against `max_instances` when the engine has no pool.
    pub(crate) places: Arc<InstanceCount>,
    _ticker: EpochTicker,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Builds the engine, starts its epoch ticker and opens the cache directory.
    ///
    /// # Errors
    /// [`SandboxError::Engine`] if wasmtime rejects the configuration,
    /// [`SandboxError::CacheDir`] if the cache directory cannot be created or secured.
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        let (engine, ticker) = engine::build_engine(&config.engine)?;
        let cache = config
            .cache_dir
            .as_deref()
            .map(|dir| ArtefactCache::open(dir, &engine))
            .transpose()?;
        let mut linker = Linker::new(&engine);
        linker::add_to_linker(&mut linker).map_err(|e| SandboxError::Engine {
            reason: format!("{e:#}"),
        })?;
        Ok(Self {
            inner: Arc::new(SandboxInner {
                engine,
                linker,
                cache,
                config,
                slots: SlotRegistry::default(),
                places: Arc::default(),
                _ticker: ticker,
            }),
        })
    }

    /// Compiles `wasm` (or loads its cached artefact) and links it against the host, checking
    /// that its imports are ones the sandbox offers and that it exports
    /// `bosun:plugin/tools@1.0.0`. Compiling is CPU-heavy (up to seconds for large components):
    /// call it from a blocking context.
    ///
    /// # Errors
    /// [`SandboxError::InvalidComponent`] if the bytes do not compile,
    /// [`SandboxError::Contract`] if the component does not fit the plugin world.
    pub fn load(&self, wasm: &[u8]) -> Result<Loaded, SandboxError> {
        self.load_hashed(wasm, sha256(wasm))
    }

    /// [`Sandbox::load`] for bytes whose SHA-256 the caller has computed already: the plugin
    /// catalog hashes exactly the bytes it read to check them against trust, and the host hands
    /// those same bytes here, so a first call need not hash them twice. `sha256` keys the
    /// artefact cache, so it must be the digest of `wasm`; debug builds check that it is.
    ///
    /// # Errors
    /// As [`Sandbox::load`].
    pub fn load_hashed(&self, wasm: &[u8], content_hash: [u8; 32]) -> Result<Loaded, SandboxError> {
        debug_assert_eq!(
            content_hash,
            sha256(wasm),
            "load_hashed: not the bytes' digest"
        );
        let inner = &self.inner;
        let invalid = |e: wasmtime::Error| SandboxError::InvalidComponent {
            plugin: None,
            reason: format!("{e:#}"),
        };
        let (component, cache) = match &inner.cache {
            Some(cache) => cache
                .load(&inner.engine, wasm, &content_hash)
                .map_err(invalid)?,
            None => (
                Component::new(&inner.engine, wasm).map_err(invalid)?,
                CacheOutcome::Disabled,
            ),
        };
        let contract = |e: wasmtime::Error| SandboxError::Contract {
            plugin: None,
            reason: format!("{e:#}"),
        };
        let pre = inner.linker.instantiate_pre(&component).map_err(contract)?;
        let pre = wit::v1::PluginPre::new(pre).map_err(contract)?;
        Ok(Loaded {
            sandbox: Arc::clone(inner),
            pre: instance::Pre::NativeV1(pre),
            label: None,
            content_hash,
            cache,
        })
    }

    /// Whether the engine `image` is compiled for this machine already (its artefact is in the
    /// cache), so that loading it takes milliseconds, not seconds. Without a cache: false.
    pub fn js_engine_cached(&self, image: &JsEngineImage<'_>) -> bool {
        self.inner
            .cache
            .as_ref()
            .is_some_and(|cache| cache.artefact_path(&image.snapshot_key()).is_file())
    }

    /// Loads Bosun's JavaScript engine component (`bosun:js/js-plugin@1.0.0`), pre-initialised:
    /// on first use its `component-init` runs once and the resulting snapshot is compiled and
    /// cached, keyed by the engine's SHA-256, so every instance starts with the JavaScript layer
    /// and zod already evaluated. Pre-initialising takes about a second; later loads read the
    /// cached artefact.
    ///
    /// # Errors
    /// [`SandboxError::InvalidComponent`] if the bytes do not compile or pre-initialisation
    /// fails, [`SandboxError::Contract`] if the component does not fit the engine world.
    pub async fn load_js_engine(&self, image: &JsEngineImage<'_>) -> Result<Loaded, SandboxError> {
        let inner = &self.inner;
        let wasm = image.wasm;
        let engine_hash = image.sha256;
        let snapshot_key = image.snapshot_key();
        let invalid = |reason: String| SandboxError::InvalidComponent {
            plugin: Some("the JavaScript engine".into()),
            reason,
        };
        let cached = inner
            .cache
            .as_ref()
            .and_then(|cache| cache.hit(&inner.engine, &snapshot_key));
        let (component, cache) = match cached {
            Some(component) => (component, CacheOutcome::Hit),
            None => {
                let mut store = store::preinit_store(inner)?;
                let snapshot = js::preinitialise(&mut store, &inner.linker, wasm)
                    .await
                    .map_err(|e| invalid(format!("{e:#}")))?;
                drop(store);
                match &inner.cache {
                    Some(cache) => cache
                        .load(&inner.engine, &snapshot, &snapshot_key)
                        .map_err(|e| invalid(format!("{e:#}")))?,
                    None => (
                        Component::new(&inner.engine, &snapshot)
                            .map_err(|e| invalid(format!("{e:#}")))?,
                        CacheOutcome::Disabled,
                    ),
                }
            }
        };
        let contract = |e: wasmtime::Error| SandboxError::Contract {
            plugin: Some("the JavaScript engine".into()),
            reason: format!("{e:#}"),
        };
        let pre = inner.linker.instantiate_pre(&component).map_err(contract)?;
        let pre = js::bindings::JsPluginPre::new(pre).map_err(contract)?;
        Ok(Loaded {
            sandbox: Arc::clone(inner),
            pre: instance::Pre::Js(pre),
            label: None,
            content_hash: engine_hash,
            cache,
        })
    }

    /// Compiles a Chock plugin (a core module whose metadata the caller has read and checked,
    /// declaring `tools` tools) or loads its cached artefact, and prepares it to instantiate
    /// with no imports at all. CPU-heavy on a cache miss: call it from a blocking context.
    ///
    /// # Errors
    /// [`SandboxError::InvalidComponent`] if the bytes do not compile,
    /// [`SandboxError::Contract`] if the module imports anything or its exports do not have
    /// Chock's types.
    pub fn load_chock(&self, wasm: &[u8], tools: u32) -> Result<Loaded, SandboxError> {
        let inner = &self.inner;
        let content_hash = sha256(wasm);
        let invalid = |e: wasmtime::Error| SandboxError::InvalidComponent {
            plugin: None,
            reason: format!("{e:#}"),
        };
        let (module, cache) = match &inner.cache {
            Some(cache) => cache
                .load::<Module>(&inner.engine, wasm, &content_hash)
                .map_err(invalid)?,
            None => (
                Module::new(&inner.engine, wasm).map_err(invalid)?,
                CacheOutcome::Disabled,
            ),
        };
        let contract = |reason: String| SandboxError::Contract {
            plugin: None,
            reason,
        };
        if let Some(import) = module.imports().next() {
            return Err(contract(format!(
                "the module imports {}.{}: a Chock plugin may import nothing",
                import.module(),
                import.name()
            )));
        }
        use wasmtime::ValType::I32;
        for (name, params, results) in [
            ("chock_plugin_init", &[][..], &[I32][..]),
            ("chock_plugin_arguments", &[I32][..], &[I32][..]),
            ("chock_plugin_call", &[I32, I32, I32][..], &[I32][..]),
        ] {
            let ty = module.get_export(name).and_then(|e| e.func().cloned());
            let fits = ty.is_some_and(|ty| {
                ty.params()
                    .map(|p| p.is_i32())
                    .eq(params.iter().map(|_| true))
                    && ty
                        .results()
                        .map(|r| r.is_i32())
                        .eq(results.iter().map(|_| true))
            });
            if !fits {
                return Err(contract(format!(
                    "the module does not export {name} with Chock's signature"
                )));
            }
        }
        if module
            .get_export("memory")
            .and_then(|e| e.memory().cloned())
            .is_none()
        {
            return Err(contract("the module exports no memory".to_owned()));
        }
        let pre = wasmtime::Linker::<StoreState>::new(&inner.engine)
            .instantiate_pre(&module)
            .map_err(|e| contract(format!("{e:#}")))?;
        Ok(Loaded {
            sandbox: Arc::clone(inner),
            pre: instance::Pre::Chock(pre, tools),
            label: None,
            content_hash,
            cache,
        })
    }

    /// Where the cached artefact for `wasm` lives (whether or not it exists yet), when a cache
    /// directory is configured.
    pub fn artefact_path(&self, wasm: &[u8]) -> Option<PathBuf> {
        let cache = self.inner.cache.as_ref()?;
        Some(cache.artefact_path(&sha256(wasm)))
    }

    /// The configured cache directory.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.inner.config.cache_dir.as_deref()
    }

    /// The instances this engine's callers keep between calls: where a caller that meets
    /// [`SandboxError::PoolFull`] finds an idle one to release.
    pub fn slots(&self) -> &SlotRegistry {
        &self.inner.slots
    }
}

/// A JavaScript engine component with its SHA-256, which keys its pre-initialised artefact in
/// the cache. Hashing the engine's megabytes on every start costs milliseconds, so an engine
/// embedded at build time carries a digest computed then ([`JsEngineImage::prehashed`]).
#[derive(Debug, Clone, Copy)]
pub struct JsEngineImage<'a> {
    wasm: &'a [u8],
    sha256: [u8; 32],
}

impl<'a> JsEngineImage<'a> {
    /// The engine `wasm`, hashed now.
    pub fn new(wasm: &'a [u8]) -> Self {
        Self {
            wasm,
            sha256: sha256(wasm),
        }
    }

    /// The engine `wasm` whose SHA-256 the caller computed when it was built. The digest only
    /// names the cache entry: an artefact is still checked against its own digest when read,
    /// and a wrong digest can at worst reuse the artefact of another engine the same caller
    /// embedded — so pass exactly the digest of these bytes (`bosun-js` tests that its does).
    pub const fn prehashed(wasm: &'a [u8], sha256: [u8; 32]) -> Self {
        Self { wasm, sha256 }
    }

    /// The component's bytes.
    pub fn wasm(&self) -> &'a [u8] {
        self.wasm
    }

    /// The component's SHA-256.
    pub fn sha256(&self) -> [u8; 32] {
        self.sha256
    }

    /// The cache key of the pre-initialised engine made from this component.
    fn snapshot_key(&self) -> [u8; 32] {
        let mut keyed = self.sha256.to_vec();
        keyed.extend_from_slice(b"bosun-js-preinit-v1");
        sha256(&keyed)
    }
}
