//! Writing a signed catalog: `bosun registry init` lays out a new one around a key,
//! `bosun plugins publish` adds a plugin version to it and re-signs targets, snapshot and
//! timestamp. Reading the plugin runs none of its code (its metadata is read by the catalog's
//! readers, [`crate::inspect`]). A published version is never replaced: a changed plugin needs
//! a new version, so no client can be handed two different files under one name and version.
//!
//! One key may hold all four roles (the default of `init`); a catalog that needs separate
//! keys or thresholds is laid out by hand (`metadata::sign`) and published to with the
//! key of each role.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::artifact::{TAR_FILE, pack, read_tree};
use crate::error::RegistryError;
use crate::key::PrivateKey;
use crate::metadata::{
    Envelope, Listing, MetaFile, RoleName, Root, SPEC_VERSION, TargetFile, Targets, format_time,
    parse_envelope, sign, signed_part,
};
use crate::source::{ArtifactKind, Claims};
use crate::update::METADATA_DIR;

/// How long each role's metadata is valid when published.
#[derive(Debug, Clone, Copy)]
pub struct Expiry {
    /// `root`.
    pub root: Duration,
    /// `targets`.
    pub targets: Duration,
    /// `snapshot`.
    pub snapshot: Duration,
    /// `timestamp`: how long a frozen mirror can go unnoticed.
    pub timestamp: Duration,
}

impl Default for Expiry {
    fn default() -> Self {
        Self {
            root: Duration::days(365),
            targets: Duration::days(365),
            snapshot: Duration::days(30),
            timestamp: Duration::days(1),
        }
    }
}

/// The key that signs and the clock and expiries it signs with.
#[derive(Debug, Clone, Copy)]
pub struct Signing<'a> {
    /// The key (holding the targets, snapshot and timestamp roles; and root, for `init`).
    pub key: &'a PrivateKey,
    /// The time written metadata is dated from.
    pub now: DateTime<Utc>,
    /// How long each role stays valid.
    pub expiry: Expiry,
}

/// A version published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// Its path in the catalog.
    pub path: String,
    /// Its length.
    pub length: u64,
    /// Its SHA-256.
    pub sha256: String,
    /// What the catalog now claims about it.
    pub claims: Claims,
}

fn meta_path(dir: &Path, file: &str) -> PathBuf {
    dir.join(METADATA_DIR).join(file)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
    bosun_plugins::atomic::write_atomic(path, bytes)
        .map_err(RegistryError::io(format!("writing {}", path.display())))
}

fn write_envelope(path: &Path, envelope: &Envelope) -> Result<Vec<u8>, RegistryError> {
    let mut bytes =
        serde_json::to_vec_pretty(envelope).map_err(|e| RegistryError::malformed("metadata", e))?;
    bytes.push(b'\n');
    write(path, &bytes)?;
    Ok(bytes)
}

fn read_envelope(dir: &Path, file: &str) -> Result<Envelope, RegistryError> {
    let path = meta_path(dir, file);
    let bytes = std::fs::read(&path).map_err(RegistryError::io(format!(
        "reading {} (is this a catalog made by `bosun registry init`?)",
        path.display()
    )))?;
    parse_envelope(file, &bytes)
}

fn meta_of(version: u64, bytes: &[u8]) -> MetaFile {
    MetaFile {
        version,
        length: Some(bytes.len() as u64),
        hashes: Some(BTreeMap::from([(
            "sha256".to_owned(),
            hex::encode(Sha256::digest(bytes)),
        )])),
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, RegistryError> {
    serde_json::to_value(value).map_err(|e| RegistryError::malformed("metadata", e))
}

/// Lays out a new catalog in `dir` whose four roles are held by `key`: `1.root.json` and
/// empty targets, snapshot and timestamp. Refuses a folder that already has a root.
pub fn init(dir: &Path, signing: &Signing<'_>) -> Result<(), RegistryError> {
    let Signing { key, now, expiry } = *signing;
    let root_file = meta_path(dir, "1.root.json");
    if root_file.exists() {
        return Err(RegistryError::Config {
            source_name: dir.display().to_string(),
            message: "already holds a catalog (metadata/1.root.json): publish to it instead"
                .to_owned(),
        });
    }
    let keyid = key.public().keyid();
    let role = json!({ "keyids": [keyid], "threshold": 1 });
    let root = json!({
        "_type": "root",
        "spec_version": SPEC_VERSION,
        "version": 1,
        "expires": format_time(now + expiry.root),
        "consistent_snapshot": false,
        "keys": { keyid.clone(): key.public().to_json() },
        "roles": { "root": role, "targets": role, "snapshot": role, "timestamp": role },
    });
    write_envelope(&root_file, &sign(&root, &[key])?)?;
    let targets = Targets {
        kind: "targets".to_owned(),
        spec_version: SPEC_VERSION.to_owned(),
        version: 0,
        expires: now,
        targets: BTreeMap::new(),
        delegations: None,
    };
    resign(dir, targets, signing)
}

/// Writes `targets` as the next version, then a new snapshot and timestamp over it.
/// Refuses a key that is not the one key of the targets, snapshot and timestamp roles.
fn check_signer(dir: &Path, key: &PrivateKey) -> Result<(), RegistryError> {
    let root = newest_root(dir)?;
    let keyid = key.public().keyid();
    for role in [RoleName::Targets, RoleName::Snapshot, RoleName::Timestamp] {
        let holds = root
            .role(role)
            .is_some_and(|r| r.keyids.contains(&keyid) && r.threshold == 1);
        if !holds {
            return Err(RegistryError::Key {
                path: dir.to_owned(),
                message: format!(
                    "the key {keyid} is not the one key of the {} role: sign this catalog with its keys",
                    role.as_str()
                ),
            });
        }
    }
    Ok(())
}

fn resign(dir: &Path, mut targets: Targets, signing: &Signing<'_>) -> Result<(), RegistryError> {
    let Signing { key, now, expiry } = *signing;
    check_signer(dir, key)?;
    let read_version = |file: &str| -> u64 {
        read_envelope(dir, file)
            .ok()
            .and_then(|e| e.signed.get("version").and_then(Value::as_u64))
            .unwrap_or(0)
    };
    targets.version += 1;
    targets.expires = now + expiry.targets;
    let targets_bytes = write_envelope(
        &meta_path(dir, "targets.json"),
        &sign(&to_value(&targets)?, &[key])?,
    )?;
    let snapshot = Listing {
        kind: "snapshot".to_owned(),
        spec_version: SPEC_VERSION.to_owned(),
        version: read_version("snapshot.json") + 1,
        expires: now + expiry.snapshot,
        meta: BTreeMap::from([(
            "targets.json".to_owned(),
            meta_of(targets.version, &targets_bytes),
        )]),
    };
    let snapshot_bytes = write_envelope(
        &meta_path(dir, "snapshot.json"),
        &sign(&to_value(&snapshot)?, &[key])?,
    )?;
    let timestamp = Listing {
        kind: "timestamp".to_owned(),
        spec_version: SPEC_VERSION.to_owned(),
        version: read_version("timestamp.json") + 1,
        expires: now + expiry.timestamp,
        meta: BTreeMap::from([(
            "snapshot.json".to_owned(),
            meta_of(snapshot.version, &snapshot_bytes),
        )]),
    };
    write_envelope(
        &meta_path(dir, "timestamp.json"),
        &sign(&to_value(&timestamp)?, &[key])?,
    )?;
    Ok(())
}

/// The newest `N.root.json` in the folder.
fn newest_root(dir: &Path) -> Result<Root, RegistryError> {
    let mut version = 1;
    while meta_path(dir, &format!("{}.root.json", version + 1)).exists() {
        version += 1;
    }
    let envelope = read_envelope(dir, &format!("{version}.root.json"))?;
    signed_part("root", &envelope)
}

/// Re-signs targets, snapshot and timestamp with fresh expiries and nothing else changed (run
/// it before the timestamp expires, or clients refuse the catalog as frozen).
pub fn refresh(dir: &Path, signing: &Signing<'_>) -> Result<(), RegistryError> {
    let targets: Targets = signed_part("targets", &read_envelope(dir, "targets.json")?)?;
    resign(dir, targets, signing)
}

/// Adds `bytes` as the file `file` of version `claims.version` of `claims.name`, with the claims
/// given, and re-signs.
pub fn add(
    dir: &Path,
    kind: ArtifactKind,
    claims: Claims,
    file: &str,
    bytes: &[u8],
    signing: &Signing<'_>,
) -> Result<Published, RegistryError> {
    let mut published = add_all(dir, kind, vec![(claims, file, bytes)], signing)?;
    published.pop().ok_or_else(|| RegistryError::NotFound {
        what: "the published entry".to_owned(),
    })
}

/// Adds every `(claims, file, bytes)` as [`add`] does one, and signs once: a mirror or a whole
/// release published in one step. Nothing is signed when any of them is refused.
pub fn add_all(
    dir: &Path,
    kind: ArtifactKind,
    items: Vec<(Claims, &str, &[u8])>,
    signing: &Signing<'_>,
) -> Result<Vec<Published>, RegistryError> {
    check_signer(dir, signing.key)?;
    let mut targets: Targets = signed_part("targets", &read_envelope(dir, "targets.json")?)?;
    let mut published = Vec::with_capacity(items.len());
    let mut versions: BTreeSet<String> = targets
        .targets
        .keys()
        .filter_map(|p| p.rsplit_once('/').map(|(prefix, _)| prefix.to_owned()))
        .collect();
    for (claims, file, bytes) in items {
        crate::name::check_name(&claims.name)?;
        crate::name::parse_version(&claims.version)?;
        let prefix = format!("{}/{}/{}", kind.dir(), claims.name, claims.version);
        let path = format!("{prefix}/{file}");
        crate::fetch::check_relative(&path)?;
        if !versions.insert(prefix) {
            return Err(RegistryError::Config {
                source_name: dir.display().to_string(),
                message: format!(
                    "{} {} is already published: a published version is never replaced; raise the version",
                    claims.name, claims.version
                ),
            });
        }
        let sha256 = hex::encode(Sha256::digest(bytes));
        let target_file = dir.join("targets").join(&path);
        write(&target_file, bytes)?;
        targets.targets.insert(
            path.clone(),
            TargetFile {
                length: bytes.len() as u64,
                hashes: BTreeMap::from([("sha256".to_owned(), sha256.clone())]),
                custom: Some(to_value(&claims)?),
            },
        );
        published.push(Published {
            path,
            length: bytes.len() as u64,
            sha256,
            claims,
        });
    }
    resign(dir, targets, signing)?;
    Ok(published)
}

/// Publishes the plugin in `plugin_dir` to the catalog in `dir`: its metadata read without
/// running it, packed as one file ([`crate::artifact`]), added with the claims it declares.
pub fn publish_plugin(
    dir: &Path,
    plugin_dir: &Path,
    signing: &Signing<'_>,
) -> Result<Published, RegistryError> {
    let prepared = prepare_plugin(plugin_dir)?;
    add(
        dir,
        ArtifactKind::Plugin,
        prepared.claims,
        prepared.file,
        &prepared.bytes,
        signing,
    )
}

/// A plugin ready to publish anywhere: the claims it declares and the one file it travels as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// What it declares (the author left empty: the signer vouches, not the plugin).
    pub claims: Claims,
    /// `plugin.wasm`, `mod.ts` or `plugin.tar.gz`.
    pub file: &'static str,
    /// That file's bytes.
    pub bytes: Vec<u8>,
}

/// Reads the plugin in `plugin_dir` without running it and packs it as one file
/// ([`crate::artifact`]); its folder name must be its declared name.
pub fn prepare_plugin(plugin_dir: &Path) -> Result<Prepared, RegistryError> {
    let files = read_tree(plugin_dir)?;
    let local = bosun_plugins::discovery::dir_name(plugin_dir).unwrap_or_default();
    crate::name::check_name(&local)?;
    let scratch = tempfile::tempdir().map_err(RegistryError::io("creating a scratch folder"))?;
    let laid = scratch.path().join("plugins").join(&local);
    for (rel, bytes) in &files {
        let path = laid.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(RegistryError::io(format!("creating {}", parent.display())))?;
        }
        std::fs::write(&path, bytes)
            .map_err(RegistryError::io(format!("writing {}", path.display())))?;
    }
    let inspected = crate::inspect::inspect_plugin(scratch.path(), &local, &[])?;
    let single = |name: &str| {
        files
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, b)| b.clone())
    };
    let (file, bytes) = match inspected.format {
        bosun_plugins::PluginFormat::Native | bosun_plugins::PluginFormat::Chock => {
            let wasm = single("plugin.wasm").ok_or_else(|| RegistryError::NotFound {
                what: format!("plugin.wasm in {}", plugin_dir.display()),
            })?;
            ("plugin.wasm", wasm)
        }
        bosun_plugins::PluginFormat::Triggerfish if files.len() == 1 => {
            ("mod.ts", single("mod.ts").unwrap_or_default())
        }
        _ => (TAR_FILE, pack(&files)?),
    };
    let mut claims = inspected.claims;
    if claims.name != local {
        return Err(RegistryError::ClaimMismatch {
            field: "name".to_owned(),
            catalog: local,
            plugin: claims.name,
        });
    }
    claims.author = String::new();
    Ok(Prepared {
        claims,
        file,
        bytes,
    })
}
