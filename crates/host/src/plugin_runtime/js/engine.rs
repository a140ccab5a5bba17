//! Bosun's JavaScript engine as one host loads it ([`JsEngine`]), and what activations
//! registered, kept between hosts ([`DescriptorCache`]).

use std::sync::Arc;

use bosun_js::Descriptor;
use bosun_sandbox::{JsEngineImage, Loaded, Sandbox, SandboxConfig, SandboxError};
use tokio::sync::OnceCell;

use crate::plugin_runtime::contract::LazySandbox;
use crate::plugin_runtime::js::spec::JsPluginSpec;

/// Bosun's JavaScript engine for one host, loaded when a plugin first needs it and then shared
/// by every JavaScript plugin (and the plugin manager's tools).
pub struct JsEngine {
    /// The sandbox it loads into, shared with the other formats.
    sandbox: Arc<LazySandbox>,
    pub(super) image: JsEngineImage<'static>,
    loaded: OnceCell<Loaded>,
    /// Told [`JS_ENGINE_NOTICE`] just before the engine is compiled (not when it is loaded
    /// from the artefact cache).
    notice: Option<EngineNotice>,
}

/// What a person is told before Bosun's JavaScript engine is compiled for this machine.
pub const JS_ENGINE_NOTICE: &str =
    "preparing Bosun's JavaScript engine for this machine (once; a few seconds)…";

/// Called with [`JS_ENGINE_NOTICE`] when the engine is about to be compiled.
pub type EngineNotice = Arc<dyn Fn(&str) + Send + Sync>;

impl std::fmt::Debug for JsEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsEngine")
            .field("loaded", &self.loaded.initialized())
            .finish_non_exhaustive()
    }
}

impl JsEngine {
    /// The engine `image` in `sandbox`, not loaded yet; `notice` is told just before it is
    /// compiled (once per machine; seconds), never when it is loaded from the artefact cache.
    pub fn new(
        sandbox: Sandbox,
        image: JsEngineImage<'static>,
        notice: Option<EngineNotice>,
    ) -> Arc<Self> {
        Self::in_sandbox(Arc::new(LazySandbox::ready(sandbox)), image, notice)
    }

    /// The engine `image` in `sandbox`, which the other formats share: loaded when first
    /// needed, building the sandbox then if no other format has.
    pub fn in_sandbox(
        sandbox: Arc<LazySandbox>,
        image: JsEngineImage<'static>,
        notice: Option<EngineNotice>,
    ) -> Arc<Self> {
        Arc::new(Self {
            sandbox,
            image,
            loaded: OnceCell::new(),
            notice,
        })
    }

    /// As [`JsEngine::new`], in a sandbox built from `config` when it is first loaded: a host
    /// that never runs JavaScript (nor any other plugin) never builds a wasmtime engine.
    pub fn lazy(
        config: SandboxConfig,
        image: JsEngineImage<'static>,
        notice: Option<EngineNotice>,
    ) -> Arc<Self> {
        Self::in_sandbox(Arc::new(LazySandbox::new(config)), image, notice)
    }

    /// The loaded engine, loading it (from the artefact cache, or compiling it) on first use.
    ///
    /// # Errors
    /// The engine could not be compiled or linked.
    pub async fn get(&self) -> Result<&Loaded, SandboxError> {
        self.loaded
            .get_or_try_init(|| async {
                let sandbox = self.sandbox.get()?;
                if let Some(notice) = &self.notice
                    && !sandbox.js_engine_cached(&self.image)
                {
                    notice(JS_ENGINE_NOTICE);
                }
                sandbox.load_js_engine(&self.image).await
            })
            .await
    }

    /// Whether it has been loaded.
    pub fn is_loaded(&self) -> bool {
        self.loaded.initialized()
    }
}

/// What activations registered, kept by everything activation depends on (see the module
/// documentation). Entries are written whole (temporary file, then rename); one that cannot be
/// read or parsed is a miss.
#[derive(Debug, Clone)]
pub struct DescriptorCache {
    dir: std::path::PathBuf,
}

impl DescriptorCache {
    /// A cache in `dir` (created, mode 0700, when first written).
    pub fn new(dir: impl Into<std::path::PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The key of `spec` activated in `engine`: a digest of every input activation reads.
    pub(super) fn key(spec: &JsPluginSpec, engine: &JsEngineImage<'_>) -> String {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update(u64::try_from(bytes.len()).unwrap_or(u64::MAX).to_le_bytes());
            hasher.update(bytes);
        };
        field(b"bosun-js-descriptor-v1");
        field(&engine.sha256());
        let request = serde_json::to_vec(&spec.request()).unwrap_or_default();
        field(&request);
        field(spec.local_name.as_bytes());
        field(spec.classification.to_string().as_bytes());
        field(&spec.memory_bytes.to_le_bytes());
        field(
            &u64::try_from(spec.timeout.as_millis())
                .unwrap_or(u64::MAX)
                .to_le_bytes(),
        );
        for endpoint in &spec.endpoints {
            field(endpoint.to_string().as_bytes());
        }
        field(b"files");
        for (path, text) in &spec.files {
            field(path.as_bytes());
            field(text.as_bytes());
        }
        let digest: [u8; 32] = hasher.finalize().into();
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn path(&self, key: &str) -> std::path::PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    pub(super) fn get(&self, key: &str) -> Option<Descriptor> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keeps `descriptor` under `key`; a failure only means the next start activates again.
    pub(super) fn put(&self, key: &str, descriptor: &Descriptor) {
        if let Ok(bytes) = serde_json::to_vec(descriptor) {
            let _ = bosun_plugins::write_atomic(&self.path(key), &bytes);
        }
    }
}

/// Where a runtime's descriptor is kept, to replace it when an activation disagrees.
#[derive(Debug, Clone)]
pub(super) struct KeptAt {
    pub(super) cache: DescriptorCache,
    pub(super) key: String,
}
