//! The standard Wasm OCI artifact (CNCF TAG-Runtime "Wasm OCI Artifact layout", as
//! `bytecodealliance/rust-oci-wasm` writes it and `wkg`, `oras` and Spin read it): artifact type
//! and config `application/vnd.wasm.config.v0+json`, exactly one `application/wasm` layer, and
//! `org.opencontainers.image.*` annotations taken from the binary's metadata custom sections
//! (WebAssembly tool-conventions). Components (`os: wasip2`, with their top-level imports and
//! exports in the config) and core modules such as Chock plugins (`os: wasip1`) travel this way.
//! Reading checks the layout and that the layer really is the kind the config says; it never
//! instantiates anything.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::artifact::{Artifact, now_rfc3339};
use crate::error::OciError;
use crate::manifest::{ANNOTATION_CREATED, ANNOTATION_TITLE, Annotations};

/// The config media type, also the artifact type.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type.
pub const WASM_LAYER: &str = "application/wasm";

/// The longest metadata custom section turned into an annotation.
const MAX_METADATA: usize = 4096;

/// Whether a binary is a component or a core module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WasmKind {
    /// A component (`os: wasip2`).
    Component,
    /// A core module (`os: wasip1`), such as a Chock plugin.
    Module,
}

impl WasmKind {
    fn os(self) -> &'static str {
        match self {
            Self::Component => "wasip2",
            Self::Module => "wasip1",
        }
    }
}

/// The artifact's config (`application/vnd.wasm.config.v0+json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// When it was built (RFC 3339).
    pub created: String,
    /// Who made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Always `wasm`.
    pub architecture: String,
    /// `wasip2` for a component, `wasip1` for a core module.
    pub os: String,
    /// The digests of the layers, in order.
    #[serde(default)]
    pub layer_digests: Vec<String>,
    /// A component's world, as its top-level imports and exports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentConfig>,
}

/// A component's top-level imports and exports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentConfig {
    /// Exported names (`wasi:cli/run@0.2.0`, …).
    pub exports: Vec<String>,
    /// Imported names.
    pub imports: Vec<String>,
    /// The world it targets, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What a Wasm binary says about itself, read without running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WasmFacts {
    /// Component or module.
    pub kind: WasmKind,
    /// A component's imports and exports.
    pub component: Option<ComponentConfig>,
    /// Annotations from its metadata custom sections.
    pub annotations: Annotations,
}

/// Reads a binary's kind, a component's top-level imports and exports, and the metadata
/// custom sections as `org.opencontainers.image.*` annotations.
pub fn inspect(wasm: &[u8]) -> Result<WasmFacts, OciError> {
    use wasmparser::{Encoding, Parser, Payload};
    let malformed = |reason: String| OciError::Malformed {
        what: "wasm binary".to_owned(),
        reason,
    };
    let mut kind = None;
    let mut depth = 0usize;
    let mut imports = Vec::new();
    let mut exports = Vec::new();
    let mut annotations = Annotations::new();
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| malformed(e.to_string()))?;
        match payload {
            Payload::Version { encoding, .. } => {
                if depth == 0 {
                    kind = Some(match encoding {
                        Encoding::Component => WasmKind::Component,
                        Encoding::Module => WasmKind::Module,
                    });
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    let import = import.map_err(|e| malformed(e.to_string()))?;
                    imports.push(import.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 1 => {
                for export in reader {
                    let export = export.map_err(|e| malformed(e.to_string()))?;
                    exports.push(export.name.name.to_owned());
                }
            }
            Payload::CustomSection(section) if depth == 1 => {
                let key = match section.name() {
                    "authors" => "org.opencontainers.image.authors",
                    "description" => "org.opencontainers.image.description",
                    "licenses" => "org.opencontainers.image.licenses",
                    "source" => "org.opencontainers.image.source",
                    "homepage" => "org.opencontainers.image.url",
                    "revision" => "org.opencontainers.image.revision",
                    "version" => "org.opencontainers.image.version",
                    _ => continue,
                };
                if let Ok(text) = std::str::from_utf8(section.data()) {
                    let text = text.trim();
                    if !text.is_empty() && text.len() <= MAX_METADATA {
                        annotations.insert(key.to_owned(), text.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    let kind = kind.ok_or_else(|| malformed("it has no WebAssembly header".to_owned()))?;
    let component = (kind == WasmKind::Component).then_some(ComponentConfig {
        exports,
        imports,
        target: None,
    });
    Ok(WasmFacts {
        kind,
        component,
        annotations,
    })
}

/// The Wasm artifact of `wasm`. `annotations` win over those read from the binary; the layer
/// is titled `title` (a file name, as `oras pull` writes it); `created` defaults to now and is
/// both the config's `created` and the `org.opencontainers.image.created` annotation.
pub fn wasm_artifact(
    wasm: impl Into<Bytes>,
    title: &str,
    annotations: Annotations,
) -> Result<Artifact, OciError> {
    let wasm = wasm.into();
    let facts = inspect(&wasm)?;
    let mut all = facts.annotations;
    all.extend(annotations);
    let created = all
        .entry(ANNOTATION_CREATED.to_owned())
        .or_insert_with(now_rfc3339)
        .clone();
    let layer_digest = crate::digest::Digest::of(&wasm);
    let config = WasmConfig {
        created,
        author: all.get("org.opencontainers.image.authors").cloned(),
        architecture: "wasm".to_owned(),
        os: facts.kind.os().to_owned(),
        layer_digests: vec![layer_digest.to_string()],
        component: facts.component,
    };
    let config = serde_json::to_vec(&config).map_err(|e| OciError::Malformed {
        what: "wasm config".to_owned(),
        reason: e.to_string(),
    })?;
    let mut layer_annotations = Annotations::new();
    layer_annotations.insert(ANNOTATION_TITLE.to_owned(), title.to_owned());
    Ok(Artifact::builder(WASM_CONFIG)
        .config(WASM_CONFIG, config)
        .layer(WASM_LAYER, wasm, layer_annotations)
        .annotations(all)
        .build())
}

/// A Wasm artifact's parts, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WasmPackage {
    /// Component or module, as the binary itself says (and the config agrees).
    pub kind: WasmKind,
    /// The binary.
    pub wasm: Bytes,
    /// The config.
    pub config: WasmConfig,
    /// The manifest's annotations.
    pub annotations: Annotations,
}

/// Reads a pulled artifact as a Wasm artifact: the config media type, exactly one
/// `application/wasm` layer, `layerDigests` naming it, and a binary of the kind `os` says.
/// The blobs are taken as matching their descriptors, as [`Client::pull_artifact`] and
/// [`Layout::read_artifact`] return them (both verify every digest); for an artifact put
/// together any other way, call [`Artifact::check`] first.
///
/// [`Client::pull_artifact`]: crate::Client::pull_artifact
/// [`Layout::read_artifact`]: crate::Layout::read_artifact
pub fn read_wasm_artifact(artifact: &Artifact) -> Result<WasmPackage, OciError> {
    let reference = artifact.digest().to_string();
    let wrong = |reason: String| OciError::NotAnArtifact {
        reference: reference.clone(),
        expected: "a Wasm OCI artifact".to_owned(),
        reason,
    };
    let manifest = &artifact.manifest.manifest;
    if manifest.config.media_type != WASM_CONFIG {
        return Err(wrong(format!(
            "its config is {}, not {WASM_CONFIG}",
            manifest.config.media_type
        )));
    }
    let [layer] = artifact.layers() else {
        return Err(wrong(format!(
            "it has {} layers, not exactly one",
            manifest.layers.len()
        )));
    };
    if layer.descriptor.media_type != WASM_LAYER {
        return Err(wrong(format!(
            "its layer is {}, not {WASM_LAYER}",
            layer.descriptor.media_type
        )));
    }
    let config_bytes = artifact
        .config()
        .map(|b| b.bytes.clone())
        .unwrap_or_default();
    let config: WasmConfig = serde_json::from_slice(&config_bytes)
        .map_err(|e| wrong(format!("its config does not parse: {e}")))?;
    if !config.layer_digests.is_empty()
        && config.layer_digests != [layer.descriptor.digest.to_string()]
    {
        return Err(wrong(
            "the config's layerDigests do not name its layer".to_owned(),
        ));
    }
    let facts = inspect(&layer.bytes)?;
    if config.architecture != "wasm" || config.os != facts.kind.os() {
        return Err(wrong(format!(
            "the config says {}/{} but the layer is a {}",
            config.architecture,
            config.os,
            match facts.kind {
                WasmKind::Component => "component",
                WasmKind::Module => "core module",
            }
        )));
    }
    Ok(WasmPackage {
        kind: facts.kind,
        wasm: layer.bytes.clone(),
        config,
        annotations: manifest.annotations.clone().unwrap_or_default(),
    })
}
