//! The signed catalog's metadata, a subset of TUF 1.0 (theupdateframework.io specification):
//! four roles — `root` (keys and thresholds), `targets` (each file's length and SHA-256, and
//! delegations), `snapshot` (the version of every targets file), `timestamp` (the snapshot's
//! version, length and hash, with a short expiry) — each a file `{"signed": …, "signatures":
//! [{"keyid", "sig"}]}` whose signatures are Ed25519 over the canonical JSON of `signed`.
//!
//! Left out of the subset: consistent snapshots (files are named `timestamp.json`,
//! `snapshot.json`, `targets.json`, `<role>.json`, and mix-and-match is stopped by the versions
//! and hashes each signed file pins), hashed bin delegations and key types other than Ed25519.
//! Unknown fields are refused, not ignored: metadata this client does not understand is not
//! trusted.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::to_canonical;
use crate::error::RegistryError;
use crate::key::{PrivateKey, PublicKey};

/// The specification version written into new metadata.
pub const SPEC_VERSION: &str = "1.0.31";

/// One of the four top-level roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RoleName {
    /// Keys and thresholds of every role.
    Root,
    /// What may be installed.
    Targets,
    /// The versions of every targets file.
    Snapshot,
    /// The snapshot's version, freshly signed.
    Timestamp,
}

impl RoleName {
    /// The four, in update order after root.
    pub const ALL: [Self; 4] = [Self::Root, Self::Timestamp, Self::Snapshot, Self::Targets];

    /// Its name in metadata (`root`, `targets`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Root => "root",
            Self::Targets => "targets",
            Self::Snapshot => "snapshot",
            Self::Timestamp => "timestamp",
        }
    }
}

/// A metadata file: what is signed and the signatures over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// The signatures, each by one key.
    pub signatures: Vec<SignatureEntry>,
    /// The role's content.
    pub signed: Value,
}

/// One signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignatureEntry {
    /// The signing key's id.
    pub keyid: String,
    /// The Ed25519 signature, hex.
    pub sig: String,
}

/// The keys of a role and how many of them must sign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleKeys {
    /// Ids of the keys that may sign.
    pub keyids: Vec<String>,
    /// How many distinct keys must sign (at least 1).
    pub threshold: u64,
}

/// `root.json`'s signed part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Root {
    /// Must be `root`.
    #[serde(rename = "_type")]
    pub kind: String,
    /// The TUF specification version.
    pub spec_version: String,
    /// This root's version (1, 2, … without gaps).
    pub version: u64,
    /// When it stops being valid.
    pub expires: DateTime<Utc>,
    /// Whether files are named by version (not supported: must be false).
    #[serde(default)]
    pub consistent_snapshot: bool,
    /// Every key by id.
    pub keys: BTreeMap<String, Value>,
    /// The four roles' keys.
    pub roles: BTreeMap<String, RoleKeys>,
}

/// A file `timestamp` or `snapshot` names: its version, and optionally length and hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaFile {
    /// The file's version.
    pub version: u64,
    /// Its exact length in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    /// Its hashes (`sha256`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashes: Option<BTreeMap<String, String>>,
}

/// `timestamp.json`'s or `snapshot.json`'s signed part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listing {
    /// `timestamp` or `snapshot`.
    #[serde(rename = "_type")]
    pub kind: String,
    /// The TUF specification version.
    pub spec_version: String,
    /// This file's version.
    pub version: u64,
    /// When it stops being valid.
    pub expires: DateTime<Utc>,
    /// The files it pins, by file name.
    pub meta: BTreeMap<String, MetaFile>,
}

/// One file the catalog lets a client install.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    /// Its exact length.
    pub length: u64,
    /// Its hashes; `sha256` is required.
    pub hashes: BTreeMap<String, String>,
    /// What the publisher claims about it (Bosun's claims: name, version, tools, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<Value>,
}

impl TargetFile {
    /// Its SHA-256, lowercase hex.
    pub fn sha256(&self) -> Option<&str> {
        self.hashes.get("sha256").map(String::as_str)
    }
}

/// A role `targets` hands part of its paths to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelegatedRole {
    /// The role's name; its file is `<name>.json`.
    pub name: String,
    /// Ids of the keys that may sign it.
    pub keyids: Vec<String>,
    /// How many must.
    pub threshold: u64,
    /// Target paths it may speak for (`*` matches within one path segment).
    pub paths: Vec<String>,
    /// Whether a path it matches is never looked up in later delegations.
    #[serde(default)]
    pub terminating: bool,
}

/// The delegations of a targets file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delegations {
    /// Keys of the delegated roles, by id.
    pub keys: BTreeMap<String, Value>,
    /// The roles, in the order they are searched.
    pub roles: Vec<DelegatedRole>,
}

/// `targets.json`'s (or a delegated role's) signed part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Targets {
    /// Must be `targets`.
    #[serde(rename = "_type")]
    pub kind: String,
    /// The TUF specification version.
    pub spec_version: String,
    /// This file's version.
    pub version: u64,
    /// When it stops being valid.
    pub expires: DateTime<Utc>,
    /// The files, by target path.
    pub targets: BTreeMap<String, TargetFile>,
    /// Roles it hands paths to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegations: Option<Delegations>,
}

/// Keys by id, each checked to hash to its id (so one key can never count twice under two ids).
pub type KeyRing = BTreeMap<String, PublicKey>;

/// Reads a key map, refusing any key whose id is not the hash of the key.
pub fn key_ring(role: &str, keys: &BTreeMap<String, Value>) -> Result<KeyRing, RegistryError> {
    let mut ring = KeyRing::new();
    for (id, value) in keys {
        let key = PublicKey::from_json(value)
            .map_err(|e| RegistryError::malformed(role, format!("key {id}: {e}")))?;
        if key.keyid() != *id {
            return Err(RegistryError::malformed(
                role,
                format!(
                    "key id {id} is not the SHA-256 of its key ({})",
                    key.keyid()
                ),
            ));
        }
        ring.insert(id.clone(), key);
    }
    Ok(ring)
}

impl Root {
    /// The keys and threshold of `role`.
    pub fn role(&self, role: RoleName) -> Option<&RoleKeys> {
        self.roles.get(role.as_str())
    }

    /// Checks what the signatures alone cannot: the type, all four roles, thresholds of at
    /// least one that the listed keys can meet, keys that hash to their ids.
    pub fn check(&self) -> Result<KeyRing, RegistryError> {
        let bad = |m: String| RegistryError::malformed("root", m);
        if self.kind != "root" {
            return Err(bad(format!("_type is `{}`, not `root`", self.kind)));
        }
        if self.consistent_snapshot {
            return Err(bad(
                "consistent_snapshot is true: this client reads unversioned file names only"
                    .to_owned(),
            ));
        }
        let ring = key_ring("root", &self.keys)?;
        let names: BTreeSet<&str> = self.roles.keys().map(String::as_str).collect();
        let wanted: BTreeSet<&str> = RoleName::ALL.iter().map(|r| r.as_str()).collect();
        if names != wanted {
            return Err(bad(
                "roles must be exactly root, targets, snapshot and timestamp".to_owned(),
            ));
        }
        for (name, role) in &self.roles {
            check_role_keys(name, role, &ring).map_err(bad)?;
        }
        Ok(ring)
    }
}

/// A role's threshold must be at least 1 and reachable by its distinct, known keys.
fn check_role_keys(name: &str, role: &RoleKeys, ring: &KeyRing) -> Result<(), String> {
    let distinct: BTreeSet<&String> = role.keyids.iter().collect();
    if distinct.len() != role.keyids.len() {
        return Err(format!("role {name} lists a key id twice"));
    }
    if let Some(unknown) = role.keyids.iter().find(|id| !ring.contains_key(*id)) {
        return Err(format!(
            "role {name} names key {unknown}, which is not listed"
        ));
    }
    if role.threshold == 0 || role.threshold > role.keyids.len() as u64 {
        return Err(format!(
            "role {name} has threshold {} with {} key(s)",
            role.threshold,
            role.keyids.len()
        ));
    }
    Ok(())
}

impl Listing {
    /// The one entry the file must have (`snapshot.json` in a timestamp, `targets.json` in a
    /// snapshot).
    pub fn entry(&self, file: &str) -> Result<&MetaFile, RegistryError> {
        self.meta
            .get(file)
            .ok_or_else(|| RegistryError::malformed(&self.kind, format!("{file} is not listed")))
    }
}

impl Targets {
    /// Checks the type, each target's hashes and the delegations' keys and names.
    pub fn check(&self, role: &str) -> Result<(), RegistryError> {
        let bad = |m: String| RegistryError::malformed(role, m);
        if self.kind != "targets" {
            return Err(bad(format!("_type is `{}`, not `targets`", self.kind)));
        }
        for (path, file) in &self.targets {
            let ok = file
                .sha256()
                .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
            if !ok {
                return Err(bad(format!("target {path} has no sha256 hash")));
            }
        }
        if let Some(delegations) = &self.delegations {
            let ring = key_ring(role, &delegations.keys)?;
            let mut seen = BTreeSet::new();
            for delegated in &delegations.roles {
                if !is_role_name(&delegated.name) {
                    return Err(bad(format!(
                        "delegated role name `{}` is not 1-64 characters a-z, 0-9 and -, or is a top-level role",
                        crate::name::escape(&delegated.name)
                    )));
                }
                if !seen.insert(&delegated.name) {
                    return Err(bad(format!("role {} is delegated twice", delegated.name)));
                }
                let keys = RoleKeys {
                    keyids: delegated.keyids.clone(),
                    threshold: delegated.threshold,
                };
                check_role_keys(&delegated.name, &keys, &ring).map_err(bad)?;
                for pattern in &delegated.paths {
                    path_matcher(pattern).map_err(bad)?;
                }
            }
        }
        Ok(())
    }
}

/// Whether `name` may name a delegated role (and so a file `<name>.json`).
pub fn is_role_name(name: &str) -> bool {
    crate::name::check_name(name).is_ok() && !RoleName::ALL.iter().any(|r| r.as_str() == name)
}

/// A delegation's path pattern: `*` matches within one segment, nothing crosses `/`.
pub fn path_matcher(pattern: &str) -> Result<globset::GlobMatcher, String> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("delegation path `{pattern}`: {e}"))
}

/// Parses a metadata file's envelope (the size was capped when it was read).
pub fn parse_envelope(role: &str, bytes: &[u8]) -> Result<Envelope, RegistryError> {
    serde_json::from_slice(bytes).map_err(|e| RegistryError::malformed(role, e))
}

/// Reads the typed signed part of an envelope.
pub fn signed_part<T: serde::de::DeserializeOwned>(
    role: &str,
    envelope: &Envelope,
) -> Result<T, RegistryError> {
    serde_json::from_value(envelope.signed.clone()).map_err(|e| RegistryError::malformed(role, e))
}

/// Checks that at least `threshold` distinct keys among `keyids` signed the envelope. A key
/// that signs twice counts once; signatures by other keys are ignored.
pub fn verify_threshold(
    role: &str,
    envelope: &Envelope,
    ring: &KeyRing,
    keyids: &[String],
    threshold: u64,
) -> Result<(), RegistryError> {
    let message = to_canonical(&envelope.signed).map_err(|e| RegistryError::malformed(role, e))?;
    let mut valid = BTreeSet::new();
    for signature in &envelope.signatures {
        if !keyids.contains(&signature.keyid) {
            continue;
        }
        if let Some(key) = ring.get(&signature.keyid)
            && key.verifies(&message, &signature.sig)
        {
            valid.insert(signature.keyid.as_str());
        }
    }
    if threshold == 0 || (valid.len() as u64) < threshold {
        return Err(RegistryError::Threshold {
            role: role.to_owned(),
            valid: valid.len(),
            threshold: usize::try_from(threshold).unwrap_or(usize::MAX),
        });
    }
    Ok(())
}

/// Signs `signed` with each key: the envelope a publisher writes.
pub fn sign(signed: &Value, keys: &[&PrivateKey]) -> Result<Envelope, RegistryError> {
    let message = to_canonical(signed).map_err(|e| RegistryError::malformed("metadata", e))?;
    let signatures = keys
        .iter()
        .map(|key| SignatureEntry {
            keyid: key.public().keyid(),
            sig: key.sign(&message),
        })
        .collect();
    Ok(Envelope {
        signatures,
        signed: signed.clone(),
    })
}

/// A time as metadata writes it (`2026-12-05T00:00:00Z`).
pub fn format_time(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Fails when `expires` is not after `now`.
pub fn check_expiry(
    role: &str,
    expires: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), RegistryError> {
    if expires <= now {
        return Err(RegistryError::Expired {
            role: role.to_owned(),
            expires: format_time(expires),
        });
    }
    Ok(())
}
