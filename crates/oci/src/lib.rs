//! OCI artifacts for Bosun's plugin registry: a distribution client, the standard Wasm
//! artifact, a deterministic tar artifact for JS/TS plugins and skills, and the OCI image
//! layout for air-gapped bundles.
//!
//! - [`Client`] speaks distribution-spec v1.1.0 to one registry: resolve a tag, pull manifests
//!   and blobs **by digest** (each capped, timed and verified; more bytes than declared are
//!   refused), push blobs whole or in chunks and manifests, anonymous, Basic, bearer-token and
//!   identity-token (an OAuth2 refresh token) authentication, the referrers API with the
//!   referrers-tag fallback, and the `sha256-<hex>.sig` signature tag. Credentials go only to
//!   the registry's own origin.
//! - [`wasm_artifact`] / [`read_wasm_artifact`]: components and core modules (Chock plugins) as
//!   `application/vnd.wasm.config.v0+json` with one `application/wasm` layer.
//! - [`tree_artifact`] / [`read_tree_artifact`] / [`unpack`]: a folder as one gzip tar layer
//!   under `application/vnd.bosun.plugin.v1` or `application/vnd.bosun.skill.v1`.
//! - [`Layout`]: `oci-layout`, `index.json`, `blobs/sha256/…` read and written.
//!
//! This crate moves and checks bytes; it knows nothing of plugins, policy or trust. Whether a
//! digest may be installed is decided from signed metadata by the caller (`bosun-registry`);
//! what this crate guarantees is that what it hands over has exactly that digest.
//!
//! Why not `oci-client`: its pulls stream into a writer without a size cap of their own and
//! with reqwest's redirect policy, and its `rustls-tls` default pulls in aws-lc. The parts Bosun
//! needs — caps on every body, an idle timeout and a whole-body deadline, hand-followed redirects that drop credentials
//! off-origin, the referrers fallback — sit at the request level, so the client is written
//! here on the workspace's reqwest (about as much code as the adapter around `oci-client` would
//! be) and adds no `oci-spec`, `derive_builder`, `getset` or `strum` to the build.
//!
//! ```no_run
//! use bosun_oci::{Client, Credentials, Reference, read_wasm_artifact, wasm_artifact};
//!
//! # async fn example() -> Result<(), bosun_oci::OciError> {
//! let reference: Reference = "127.0.0.1:5000/bosun/hello:1.0.0".parse()?;
//! let client = Client::builder(reference.registry.clone())
//!     .credentials(Credentials::Anonymous)
//!     .build()?;
//! let wasm = std::fs::read("hello.wasm").map_err(|e| bosun_oci::OciError::Io {
//!     path: "hello.wasm".into(),
//!     source: e,
//! })?;
//! let artifact = wasm_artifact(wasm, "hello.wasm", Default::default())?;
//! let digest = client
//!     .push_artifact(&reference.repository, &artifact, reference.tag.as_ref())
//!     .await?;
//! // Later, with the digest from signed metadata:
//! let pulled = client.pull_artifact(&reference.repository, &digest).await?;
//! let package = read_wasm_artifact(&pulled)?;
//! assert_eq!(package.wasm, artifact.layers()[0].bytes);
//! # Ok(())
//! # }
//! ```

pub mod artifact;
pub mod auth;
pub mod client;
pub mod digest;
pub mod docker_config;
mod error;
pub mod layout;
pub mod manifest;
pub mod reference;
pub mod tarball;
pub mod wasm;

pub use artifact::{Artifact, ArtifactBuilder, Blob};
pub use auth::Credentials;
pub use client::{BlobStream, Client, ClientBuilder, Limits, PushedManifest};
pub use digest::Digest;
pub use error::OciError;
pub use layout::Layout;
pub use manifest::{Annotations, Descriptor, Index, Manifest, ManifestBytes};
pub use reference::{Reference, Registry, Repository, Tag};
pub use tarball::{
    TreeKind, UnpackLimits, Unpacked, pack_files, read_tree_artifact, tree_artifact, unpack,
};
pub use wasm::{WasmConfig, WasmKind, WasmPackage, read_wasm_artifact, wasm_artifact};
