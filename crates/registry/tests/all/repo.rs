//! A signed catalog built by hand in a temporary folder, so each test can break exactly one
//! rule: keys from fixed seeds, versions and expiries set per role, a fixed clock.

use std::collections::BTreeMap;
use std::path::Path;

use bosun_registry::fetch::Origin;
use bosun_registry::key::PrivateKey;
use bosun_registry::metadata::{Envelope, sign};
use bosun_registry::signed::SignedSource;
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The clock every test runs at.
pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 5, 12, 0, 0).unwrap()
}

pub fn key(seed: u8) -> PrivateKey {
    PrivateKey::from_seed([seed; 32])
}

pub fn time(t: DateTime<Utc>) -> String {
    bosun_registry::metadata::format_time(t)
}

pub fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A delegated role: its key, version, targets and own delegations.
pub struct Delegated {
    pub key: PrivateKey,
    pub version: u64,
    pub targets: BTreeMap<String, Value>,
    pub delegations: Option<Value>,
    pub expires: DateTime<Utc>,
}

pub struct Repo {
    pub dir: tempfile::TempDir,
    pub root_keys: Vec<PrivateKey>,
    pub root_threshold: u64,
    pub targets_key: PrivateKey,
    pub snapshot_key: PrivateKey,
    pub timestamp_key: PrivateKey,
    pub targets_version: u64,
    pub snapshot_version: u64,
    pub timestamp_version: u64,
    pub expires: DateTime<Utc>,
    pub timestamp_expires: DateTime<Utc>,
    pub targets: BTreeMap<String, Value>,
    pub delegations: Option<Value>,
    pub delegated: BTreeMap<String, Delegated>,
}

pub fn claims(name: &str, version: &str) -> Value {
    json!({"name": name, "version": version, "description": format!("{name} does things"),
           "format": "triggerfish", "endpoints": [], "tools": [], "capabilities": []})
}

pub fn target_entry(bytes: &[u8], custom: Value) -> Value {
    json!({"length": bytes.len(), "hashes": {"sha256": sha(bytes)}, "custom": custom})
}

impl Repo {
    /// A catalog at version 1 of every role, one key per role.
    pub fn new() -> Self {
        let repo = Self {
            dir: tempfile::tempdir().unwrap(),
            root_keys: vec![key(1)],
            root_threshold: 1,
            targets_key: key(2),
            snapshot_key: key(3),
            timestamp_key: key(4),
            targets_version: 1,
            snapshot_version: 1,
            timestamp_version: 1,
            expires: now() + Duration::days(30),
            timestamp_expires: now() + Duration::days(1),
            targets: BTreeMap::new(),
            delegations: None,
            delegated: BTreeMap::new(),
        };
        let keys: Vec<&PrivateKey> = repo.root_keys.iter().collect();
        repo.write_root(1, &keys);
        repo.write_all();
        repo
    }

    pub fn meta(&self, file: &str) -> std::path::PathBuf {
        self.dir.path().join("metadata").join(file)
    }

    pub fn write(&self, file: &str, envelope: &Envelope) -> Vec<u8> {
        let bytes = serde_json::to_vec(envelope).unwrap();
        std::fs::create_dir_all(self.dir.path().join("metadata")).unwrap();
        std::fs::write(self.meta(file), &bytes).unwrap();
        bytes
    }

    pub fn root_signed(&self, version: u64) -> Value {
        let mut keys = serde_json::Map::new();
        let mut all: Vec<&PrivateKey> = self.root_keys.iter().collect();
        all.extend([&self.targets_key, &self.snapshot_key, &self.timestamp_key]);
        for k in all {
            keys.insert(k.public().keyid(), k.public().to_json());
        }
        let ids = |k: &PrivateKey| json!({"keyids": [k.public().keyid()], "threshold": 1});
        let root_ids: Vec<String> = self.root_keys.iter().map(|k| k.public().keyid()).collect();
        json!({
            "_type": "root", "spec_version": "1.0.31", "version": version,
            "expires": time(self.expires), "consistent_snapshot": false, "keys": keys,
            "roles": {
                "root": {"keyids": root_ids, "threshold": self.root_threshold},
                "targets": ids(&self.targets_key),
                "snapshot": ids(&self.snapshot_key),
                "timestamp": ids(&self.timestamp_key),
            }
        })
    }

    /// Writes `<version>.root.json` signed by `signers`.
    pub fn write_root(&self, version: u64, signers: &[&PrivateKey]) {
        let envelope = sign(&self.root_signed(version), signers).unwrap();
        self.write(&format!("{version}.root.json"), &envelope);
    }

    pub fn targets_signed(&self) -> Value {
        let mut value = json!({
            "_type": "targets", "spec_version": "1.0.31", "version": self.targets_version,
            "expires": time(self.expires), "targets": self.targets,
        });
        if let Some(d) = &self.delegations {
            value["delegations"] = d.clone();
        }
        value
    }

    pub fn delegated_signed(&self, name: &str) -> Value {
        let role = &self.delegated[name];
        let mut value = json!({
            "_type": "targets", "spec_version": "1.0.31", "version": role.version,
            "expires": time(role.expires), "targets": role.targets,
        });
        if let Some(d) = &role.delegations {
            value["delegations"] = d.clone();
        }
        value
    }

    /// Writes targets, every delegated role, snapshot and timestamp at their current versions.
    pub fn write_all(&self) {
        let targets = self.write(
            "targets.json",
            &sign(&self.targets_signed(), &[&self.targets_key]).unwrap(),
        );
        let mut meta = serde_json::Map::new();
        meta.insert(
            "targets.json".into(),
            json!({"version": self.targets_version, "length": targets.len(), "hashes": {"sha256": sha(&targets)}}),
        );
        for (name, role) in &self.delegated {
            let bytes = self.write(
                &format!("{name}.json"),
                &sign(&self.delegated_signed(name), &[&role.key]).unwrap(),
            );
            meta.insert(
                format!("{name}.json"),
                json!({"version": role.version, "length": bytes.len()}),
            );
        }
        let snapshot = json!({
            "_type": "snapshot", "spec_version": "1.0.31", "version": self.snapshot_version,
            "expires": time(self.expires), "meta": meta,
        });
        let snapshot = self.write(
            "snapshot.json",
            &sign(&snapshot, &[&self.snapshot_key]).unwrap(),
        );
        self.write_timestamp(self.snapshot_version, &snapshot, &[&self.timestamp_key]);
    }

    pub fn write_timestamp(&self, snapshot_version: u64, snapshot: &[u8], signers: &[&PrivateKey]) {
        let timestamp = json!({
            "_type": "timestamp", "spec_version": "1.0.31", "version": self.timestamp_version,
            "expires": time(self.timestamp_expires),
            "meta": {"snapshot.json": {"version": snapshot_version, "length": snapshot.len(), "hashes": {"sha256": sha(snapshot)}}},
        });
        self.write("timestamp.json", &sign(&timestamp, signers).unwrap());
    }

    /// The next publication: every role one version up.
    pub fn publish(&mut self) {
        self.targets_version += 1;
        self.snapshot_version += 1;
        self.timestamp_version += 1;
        self.write_all();
    }

    /// Adds a plugin file to the top-level targets (written on the next publish).
    pub fn add(&mut self, name: &str, version: &str, bytes: &[u8]) {
        let path = format!("plugins/{name}/{version}/mod.ts");
        let file = self.dir.path().join("targets").join(&path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, bytes).unwrap();
        self.targets
            .insert(path, target_entry(bytes, claims(name, version)));
    }

    pub fn client(&self, home: &Path) -> SignedSource {
        // The first root's key, as the person confirmed it; later rotations do not change it.
        let pinned = vec![key(1).public().keyid()];
        SignedSource::new("corp", Origin::dir(self.dir.path()), pinned, home)
    }
}
