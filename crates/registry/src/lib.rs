//! Bosun's plugin registries: where plugins and skills come from, and how far each source is
//! trusted.
//!
//! - [`config`]: `[registries.<name>]` (kinds `reef`, `bosun`, `dir`, `oci`), keys pinned in
//!   the user's config; a project may narrow the sources, never add one.
//! - [`source`]: the [`Source`] seam — resolve `NAME[@VERSION]` to a [`Target`] (length, SHA-256,
//!   where, the catalog's claims, who signed) and fetch it capped and timed — implemented by
//!   [`reef`] (Triggerfish's Reef, read unchanged, unsigned) and [`signed`] (Bosun's signed
//!   catalogs, over HTTPS or from a folder); [`oci`] reads an OCI registry (through
//!   `bosun-oci`), trusting a digest only when a signature by a pinned key names it, and
//!   publishes to one; it plugs in through [`Registries::with_opener`] with [`oci::open`];
//!   [`layout`] reads an OCI image layout folder (`kind = "dir"`, air-gapped) under the same
//!   signatures, and writes plugins into one.
//! - [`metadata`], [`trusted`], [`update`]: the signed catalog, a TUF subset on Ed25519
//!   ([`key`], `verify_strict`) over canonical JSON ([`canonical`]): four roles, thresholds,
//!   root rotation, expiry, delegations; the trusted versions kept under `$BOSUN_HOME`; rollback,
//!   freeze, mix-and-match, fast-forward and endless data refused.
//! - [`fetch`]: HTTPS or a folder, with a size cap, a timeout and Bosun's redirect policy.
//! - [`name`]: names and versions checked before any URL or path is built.
//! - [`artifact`], [`inspect`]: a plugin as one file and back; what it declares, read without
//!   running it, compared with the catalog's claims.
//! - [`publish`]: laying out and signing a catalog.
//!
//! This crate runs no plugin code and links no WebAssembly or JavaScript runtime: it reads
//! plugins with `bosun-plugins`' readers. The install path (staging, scan, trust review, swap,
//! the integrity lock) is the host's (`bosun_host::plugin_runtime::install`).
//!
//! ```
//! use bosun_registry::key::PrivateKey;
//! use bosun_registry::metadata::{sign, verify_threshold, KeyRing};
//!
//! let key = PrivateKey::from_seed([7; 32]);
//! let signed = serde_json::json!({"_type": "timestamp", "version": 1});
//! let envelope = sign(&signed, &[&key]).unwrap();
//! let id = key.public().keyid();
//! let ring = KeyRing::from([(id.clone(), key.public())]);
//! verify_threshold("timestamp", &envelope, &ring, &[id], 1).unwrap();
//! ```

pub mod artifact;
pub mod canonical;
pub mod config;
mod error;
pub mod fetch;
pub mod inspect;
pub mod key;
pub mod layout;
pub mod metadata;
pub mod name;
pub mod oci;
pub mod publish;
pub mod reef;
pub mod signature;
pub mod signed;
pub mod source;
pub mod trusted;
pub mod update;

pub use config::{ProjectRegistries, Registries, RegistryConfig, RegistryKind};
pub use error::RegistryError;
pub use name::Requested;
pub use source::{ArtifactKind, Claims, Signer, Source, Target};
