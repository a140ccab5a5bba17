//! The metadata a client trusts for one signed source, and the rules each new file must pass
//! to replace it (TUF 1.0 client workflow, §5.3–5.6). Every check runs on a working copy; the
//! caller persists the copy only when the whole update succeeded, so a file refused half-way —
//! a timestamp whose snapshot version went back (tough CVE-2025-2888) — never becomes the
//! reference for the next update.
//!
//! Nothing here reads the network or the disk: bytes in, verdicts out.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::RegistryError;
use crate::metadata::{
    Envelope, KeyRing, Listing, RoleName, Root, TargetFile, Targets, check_expiry, key_ring,
    parse_envelope, path_matcher, signed_part, verify_threshold,
};

/// Most root versions one update walks through.
pub const MAX_ROOT_ROTATIONS: u64 = 32;
/// Most delegated roles one source may have.
pub const MAX_DELEGATED_ROLES: usize = 32;
/// Deepest delegation chain followed when looking up a target.
pub const MAX_DELEGATION_DEPTH: usize = 8;

/// A verified file: its bytes (as kept) and its typed content.
#[derive(Debug, Clone)]
struct Verified<T> {
    bytes: Vec<u8>,
    signed: T,
}

/// The trusted metadata of one source.
#[derive(Debug, Clone)]
pub struct TrustedSet {
    root: Verified<Root>,
    ring: KeyRing,
    timestamp: Option<Verified<Listing>>,
    snapshot: Option<Verified<Listing>>,
    targets: Option<Verified<Targets>>,
    delegated: BTreeMap<String, Verified<Targets>>,
}

/// The trusted metadata as kept on disk, outside every plugin directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredMetadata {
    /// The newest trusted root, as served.
    pub root: String,
    /// The newest trusted timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The newest trusted snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// The newest trusted targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<String>,
    /// The newest trusted delegated roles, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub delegated: BTreeMap<String, String>,
}

/// A target found in the catalog, with the role that vouches for it.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundTarget {
    /// Its path in the catalog.
    pub path: String,
    /// Its signed length, hash and claims.
    pub file: TargetFile,
    /// `targets`, or the delegated role that lists it.
    pub role: String,
    /// The ids of the keys that role trusts.
    pub keyids: Vec<String>,
}

/// Checks `bytes` against a signed length and SHA-256.
pub fn verify_bytes(
    what: &str,
    bytes: &[u8],
    length: Option<u64>,
    sha256: Option<&str>,
) -> Result<(), RegistryError> {
    if let Some(length) = length
        && bytes.len() as u64 != length
    {
        return Err(RegistryError::Length {
            what: what.to_owned(),
            expected: length,
            got: bytes.len() as u64,
        });
    }
    if let Some(expected) = sha256 {
        let got = hex::encode(Sha256::digest(bytes));
        if !got.eq_ignore_ascii_case(expected) {
            return Err(RegistryError::Digest {
                what: what.to_owned(),
                expected: expected.to_owned(),
                got,
            });
        }
    }
    Ok(())
}

/// Fetches `target` from `origin` within the download timeout — at most its length, or `cap`
/// when the catalog gives none (a length above `cap` is refused before any request) — and
/// checks the bytes against that length and SHA-256: the one fetch of every catalog source.
pub async fn fetch_target(
    origin: &crate::fetch::Origin,
    target: &crate::source::Target,
    cap: u64,
    progress: &dyn crate::fetch::Progress,
) -> Result<Vec<u8>, RegistryError> {
    let length = target.length.unwrap_or(cap);
    if length > cap {
        return Err(RegistryError::TooLarge {
            what: target.location.clone(),
            limit: cap,
        });
    }
    let origin = origin.clone().with_timeout(crate::fetch::ARTIFACT_TIMEOUT);
    let bytes = origin
        .get(&target.location, length, progress)
        .await?
        .ok_or_else(|| RegistryError::NotFound {
            what: origin.describe(&target.location),
        })?;
    verify_bytes(
        &target.location,
        &bytes,
        target.length,
        Some(&target.sha256),
    )?;
    Ok(bytes)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl TrustedSet {
    /// Starts from a first root that a person pinned: it must be signed by its own root
    /// threshold, and every pinned key id must be one of its root keys and have signed it.
    pub fn from_pinned_root(bytes: &[u8], pinned: &[String]) -> Result<Self, RegistryError> {
        let envelope = parse_envelope("root", bytes)?;
        let root: Root = signed_part("root", &envelope)?;
        let ring = root.check()?;
        let role = root
            .role(RoleName::Root)
            .ok_or_else(|| RegistryError::malformed("root", "no root role"))?;
        verify_threshold("root", &envelope, &ring, &role.keyids, role.threshold)?;
        if pinned.is_empty() {
            return Err(RegistryError::malformed("root", "no key is pinned"));
        }
        for id in pinned {
            if !role.keyids.contains(id) {
                return Err(RegistryError::Threshold {
                    role: format!("root (pinned key {id} is not one of its root keys)"),
                    valid: 0,
                    threshold: 1,
                });
            }
            verify_threshold(
                &format!("root (pinned key {id})"),
                &envelope,
                &ring,
                std::slice::from_ref(id),
                1,
            )?;
        }
        Ok(Self {
            root: Verified {
                bytes: bytes.to_vec(),
                signed: root,
            },
            ring,
            timestamp: None,
            snapshot: None,
            targets: None,
            delegated: BTreeMap::new(),
        })
    }

    /// The root keys' ids of a first root, for a person to confirm before pinning them. The
    /// root must be self-signed by its threshold; nothing is trusted by reading them.
    pub fn root_keyids(bytes: &[u8]) -> Result<Vec<String>, RegistryError> {
        let envelope = parse_envelope("root", bytes)?;
        let root: Root = signed_part("root", &envelope)?;
        let ring = root.check()?;
        let role = root
            .role(RoleName::Root)
            .ok_or_else(|| RegistryError::malformed("root", "no root role"))?;
        verify_threshold("root", &envelope, &ring, &role.keyids, role.threshold)?;
        Ok(role.keyids.clone())
    }

    /// Restores what was trusted before. The root must sign itself and the other files must
    /// carry its roles' signatures (expiry is not checked: they are the floor for rollback).
    /// A file that no longer verifies is dropped, so the next update fetches it afresh.
    pub fn restore(stored: &StoredMetadata) -> Result<Self, RegistryError> {
        let root_bytes = stored.root.as_bytes();
        let envelope = parse_envelope("root", root_bytes)?;
        let root: Root = signed_part("root", &envelope)?;
        let ring = root.check()?;
        let role = root
            .role(RoleName::Root)
            .ok_or_else(|| RegistryError::malformed("root", "no root role"))?;
        verify_threshold("root", &envelope, &ring, &role.keyids, role.threshold)?;
        let mut set = Self {
            root: Verified {
                bytes: root_bytes.to_vec(),
                signed: root,
            },
            ring,
            timestamp: None,
            snapshot: None,
            targets: None,
            delegated: BTreeMap::new(),
        };
        set.timestamp = stored
            .timestamp
            .as_deref()
            .and_then(|t| set.verify_listing(RoleName::Timestamp, t.as_bytes()).ok());
        set.snapshot = stored
            .snapshot
            .as_deref()
            .and_then(|t| set.verify_listing(RoleName::Snapshot, t.as_bytes()).ok());
        set.targets = stored
            .targets
            .as_deref()
            .and_then(|t| set.verify_top_targets(t.as_bytes()).ok());
        for (name, text) in &stored.delegated {
            if let Some(keys) = set.delegation_keys(name)
                && let Ok(targets) = verify_targets(name, text.as_bytes(), &keys.0, &keys.1, keys.2)
            {
                set.delegated.insert(name.clone(), targets);
            }
        }
        Ok(set)
    }

    /// What to keep on disk.
    pub fn stored(&self) -> StoredMetadata {
        StoredMetadata {
            root: text(&self.root.bytes),
            timestamp: self.timestamp.as_ref().map(|v| text(&v.bytes)),
            snapshot: self.snapshot.as_ref().map(|v| text(&v.bytes)),
            targets: self.targets.as_ref().map(|v| text(&v.bytes)),
            delegated: self
                .delegated
                .iter()
                .map(|(name, v)| (name.clone(), text(&v.bytes)))
                .collect(),
        }
    }

    /// The trusted root.
    pub fn root(&self) -> &Root {
        &self.root.signed
    }

    /// The trusted root's version.
    pub fn root_version(&self) -> u64 {
        self.root.signed.version
    }

    /// The trusted timestamp's version, if any.
    pub fn timestamp_version(&self) -> Option<u64> {
        self.timestamp.as_ref().map(|t| t.signed.version)
    }

    /// The trusted snapshot's version, if any.
    pub fn snapshot_version(&self) -> Option<u64> {
        self.snapshot.as_ref().map(|t| t.signed.version)
    }

    /// The trusted targets' version, if any.
    pub fn targets_version(&self) -> Option<u64> {
        self.targets.as_ref().map(|t| t.signed.version)
    }

    /// The trusted version of a delegated role, if any.
    pub fn delegated_version(&self, name: &str) -> Option<u64> {
        self.delegated.get(name).map(|t| t.signed.version)
    }

    fn role_keys(&self, role: RoleName) -> Result<(Vec<String>, u64), RegistryError> {
        self.root
            .signed
            .role(role)
            .map(|r| (r.keyids.clone(), r.threshold))
            .ok_or_else(|| RegistryError::malformed("root", format!("no {} role", role.as_str())))
    }

    fn verify_listing(
        &self,
        role: RoleName,
        bytes: &[u8],
    ) -> Result<Verified<Listing>, RegistryError> {
        let name = role.as_str();
        let envelope = parse_envelope(name, bytes)?;
        let (keyids, threshold) = self.role_keys(role)?;
        verify_threshold(name, &envelope, &self.ring, &keyids, threshold)?;
        let signed: Listing = signed_part(name, &envelope)?;
        if signed.kind != name {
            return Err(RegistryError::malformed(
                name,
                format!("_type is `{}`, not `{name}`", signed.kind),
            ));
        }
        Ok(Verified {
            bytes: bytes.to_vec(),
            signed,
        })
    }

    fn verify_top_targets(&self, bytes: &[u8]) -> Result<Verified<Targets>, RegistryError> {
        let (keyids, threshold) = self.role_keys(RoleName::Targets)?;
        verify_targets("targets", bytes, &self.ring, &keyids, threshold)
    }

    /// Step 5.3: `bytes` is `<N+1>.root.json`. It must be signed by the threshold of the
    /// trusted root's root keys and of its own, and be exactly version N+1 (tough
    /// CVE-2025-2885 accepted any higher version).
    pub fn update_root(&mut self, file: &str, bytes: &[u8]) -> Result<(), RegistryError> {
        let envelope = parse_envelope("root", bytes)?;
        let (keyids, threshold) = self.role_keys(RoleName::Root)?;
        verify_threshold(
            "root (by the trusted root's keys)",
            &envelope,
            &self.ring,
            &keyids,
            threshold,
        )?;
        let root: Root = signed_part("root", &envelope)?;
        let ring = root.check()?;
        let own = root
            .role(RoleName::Root)
            .ok_or_else(|| RegistryError::malformed("root", "no root role"))?;
        verify_threshold(
            "root (by its own keys)",
            &envelope,
            &ring,
            &own.keyids,
            own.threshold,
        )?;
        let expected = self.root.signed.version + 1;
        if root.version != expected {
            return Err(RegistryError::RootNotSequential {
                file: file.to_owned(),
                expected,
                got: root.version,
            });
        }
        self.root = Verified {
            bytes: bytes.to_vec(),
            signed: root,
        };
        self.ring = ring;
        Ok(())
    }

    /// Step 5.3.10–11, after the last new root: it must not have expired; when the timestamp
    /// or snapshot keys changed since `before`, the trusted timestamp and snapshot are dropped,
    /// so a version an attacker pushed up with a compromised key cannot block the real ones
    /// (fast-forward recovery).
    pub fn finish_root_update(
        &mut self,
        before: &Root,
        now: DateTime<Utc>,
    ) -> Result<(), RegistryError> {
        check_expiry("root", self.root.signed.expires, now)?;
        let rotated = |role: RoleName| before.role(role) != self.root.signed.role(role);
        if rotated(RoleName::Timestamp) || rotated(RoleName::Snapshot) {
            self.timestamp = None;
            self.snapshot = None;
        }
        if rotated(RoleName::Targets) {
            self.targets = None;
            self.delegated.clear();
        }
        Ok(())
    }

    /// Step 5.4: a new timestamp. Signed by the timestamp threshold; its version and the
    /// snapshot version it names never lower than trusted; not expired.
    pub fn update_timestamp(
        &mut self,
        bytes: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(), RegistryError> {
        let new = self.verify_listing(RoleName::Timestamp, bytes)?;
        let snapshot = new.signed.entry("snapshot.json")?.clone();
        if new.signed.meta.len() != 1 {
            return Err(RegistryError::malformed(
                "timestamp",
                "it must list snapshot.json only",
            ));
        }
        if let Some(old) = &self.timestamp {
            if new.signed.version < old.signed.version {
                return Err(RegistryError::Rollback {
                    role: "timestamp".to_owned(),
                    trusted: old.signed.version,
                    offered: new.signed.version,
                });
            }
            let old_snapshot = old.signed.entry("snapshot.json")?.version;
            if snapshot.version < old_snapshot {
                return Err(RegistryError::Rollback {
                    role: "snapshot (named by the timestamp)".to_owned(),
                    trusted: old_snapshot,
                    offered: snapshot.version,
                });
            }
        }
        check_expiry("timestamp", new.signed.expires, now)?;
        self.timestamp = Some(new);
        Ok(())
    }

    /// The length the timestamp gives the snapshot, if any.
    pub fn snapshot_length(&self) -> Option<u64> {
        self.timestamp
            .as_ref()
            .and_then(|t| t.signed.meta.get("snapshot.json"))
            .and_then(|m| m.length)
    }

    /// Step 5.5: a new snapshot. The hash and length the timestamp gives, the snapshot
    /// threshold, exactly the version the timestamp names (mix-and-match), no targets file
    /// dropped or lowered (rollback, go-tuf CVE-2022-29173), not expired.
    pub fn update_snapshot(
        &mut self,
        bytes: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(), RegistryError> {
        let timestamp = self
            .timestamp
            .as_ref()
            .ok_or_else(|| RegistryError::malformed("snapshot", "no trusted timestamp names it"))?;
        let pinned = timestamp.signed.entry("snapshot.json")?.clone();
        verify_bytes(
            "snapshot.json",
            bytes,
            pinned.length,
            pinned
                .hashes
                .as_ref()
                .and_then(|h| h.get("sha256"))
                .map(String::as_str),
        )?;
        let new = self.verify_listing(RoleName::Snapshot, bytes)?;
        if new.signed.version != pinned.version {
            return Err(RegistryError::Mismatch {
                role: "snapshot".to_owned(),
                by: "timestamp".to_owned(),
                expected: pinned.version,
                got: new.signed.version,
            });
        }
        new.signed.entry("targets.json")?;
        for name in new.signed.meta.keys() {
            let role = name.strip_suffix(".json").unwrap_or_default();
            if role != "targets" && !crate::metadata::is_role_name(role) {
                return Err(RegistryError::malformed(
                    "snapshot",
                    format!(
                        "it lists `{}`, which is not a targets file",
                        crate::name::escape(name)
                    ),
                ));
            }
        }
        if let Some(old) = &self.snapshot {
            for (file, meta) in &old.signed.meta {
                match new.signed.meta.get(file) {
                    None => {
                        return Err(RegistryError::Rollback {
                            role: format!("{file} (dropped from the snapshot)"),
                            trusted: meta.version,
                            offered: 0,
                        });
                    }
                    Some(now_meta) if now_meta.version < meta.version => {
                        return Err(RegistryError::Rollback {
                            role: file.trim_end_matches(".json").to_owned(),
                            trusted: meta.version,
                            offered: now_meta.version,
                        });
                    }
                    Some(_) => {}
                }
            }
        }
        check_expiry("snapshot", new.signed.expires, now)?;
        self.snapshot = Some(new);
        Ok(())
    }

    /// What the snapshot pins for `<role>.json`.
    fn snapshot_entry(&self, role: &str) -> Result<crate::metadata::MetaFile, RegistryError> {
        let snapshot = self
            .snapshot
            .as_ref()
            .ok_or_else(|| RegistryError::malformed(role, "no trusted snapshot names it"))?;
        snapshot.signed.entry(&format!("{role}.json")).cloned()
    }

    /// The cap for `<role>.json`: the length the snapshot gives, else `fallback`.
    pub fn targets_length(&self, role: &str) -> Option<u64> {
        self.snapshot_entry(role).ok().and_then(|m| m.length)
    }

    /// Step 5.6: new top-level targets, pinned by the snapshot.
    pub fn update_targets(
        &mut self,
        bytes: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(), RegistryError> {
        let pinned = self.snapshot_entry("targets")?;
        verify_bytes(
            "targets.json",
            bytes,
            pinned.length,
            pinned
                .hashes
                .as_ref()
                .and_then(|h| h.get("sha256"))
                .map(String::as_str),
        )?;
        let new = self.verify_top_targets(bytes)?;
        if new.signed.version != pinned.version {
            return Err(RegistryError::Mismatch {
                role: "targets".to_owned(),
                by: "snapshot".to_owned(),
                expected: pinned.version,
                got: new.signed.version,
            });
        }
        if let Some(old) = &self.targets
            && new.signed.version < old.signed.version
        {
            return Err(RegistryError::Rollback {
                role: "targets".to_owned(),
                trusted: old.signed.version,
                offered: new.signed.version,
            });
        }
        check_expiry("targets", new.signed.expires, now)?;
        self.targets = Some(new);
        Ok(())
    }

    /// Whether the trusted file of `role` (`targets` or a delegated role) is exactly the one
    /// the trusted snapshot pins — its version, and its length and SHA-256 where the snapshot
    /// gives them — so it need not be fetched and verified again (a client keeping verified
    /// metadata does so, as python-tuf's does). Its signatures were checked when it was
    /// trusted or restored under the same root; its expiry is checked by [`Self::check_fresh`].
    pub fn holds_pinned(&self, role: &str) -> bool {
        let Ok(pinned) = self.snapshot_entry(role) else {
            return false;
        };
        let held = if role == "targets" {
            self.targets.as_ref()
        } else {
            self.delegated.get(role)
        };
        held.is_some_and(|held| {
            held.signed.version == pinned.version
                && verify_bytes(
                    role,
                    &held.bytes,
                    pinned.length,
                    pinned
                        .hashes
                        .as_ref()
                        .and_then(|h| h.get("sha256"))
                        .map(String::as_str),
                )
                .is_ok()
        })
    }

    /// Every role the trusted targets files delegate to, in search order.
    pub fn delegations(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for targets in self.targets.iter().chain(self.delegated.values()) {
            for role in targets.signed.delegations.iter().flat_map(|d| &d.roles) {
                if !all.contains(&role.name) {
                    all.push(role.name.clone());
                }
            }
        }
        all
    }

    /// Forgets delegated roles not in `keep` (no longer delegated to).
    pub fn retain_delegated(&mut self, keep: &BTreeSet<String>) {
        self.delegated.retain(|name, _| keep.contains(name));
    }

    /// The bytes of the trusted delegated role `name`, if any.
    pub fn held_delegated(&self, name: &str) -> Option<Vec<u8>> {
        self.delegated.get(name).map(|v| v.bytes.clone())
    }

    /// The keys a delegated role is signed with, from the first loaded role that delegates it.
    fn delegation_keys(&self, name: &str) -> Option<(KeyRing, Vec<String>, u64)> {
        for targets in self.targets.iter().chain(self.delegated.values()) {
            let Some(delegations) = &targets.signed.delegations else {
                continue;
            };
            if let Some(role) = delegations.roles.iter().find(|r| r.name == name) {
                let ring = key_ring(name, &delegations.keys).ok()?;
                return Some((ring, role.keyids.clone(), role.threshold));
            }
        }
        None
    }

    /// A delegated role's file: signed by the delegating role's keys for it, exactly the
    /// version the snapshot names, never lower than trusted (tough CVE-2025-2887), not expired.
    pub fn update_delegated(
        &mut self,
        name: &str,
        bytes: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(), RegistryError> {
        if self.delegated.len() >= MAX_DELEGATED_ROLES && !self.delegated.contains_key(name) {
            return Err(RegistryError::Delegation {
                role: name.to_owned(),
                message: format!("more than {MAX_DELEGATED_ROLES} delegated roles: refused"),
            });
        }
        let pinned = self.snapshot_entry(name)?;
        verify_bytes(
            &format!("{name}.json"),
            bytes,
            pinned.length,
            pinned
                .hashes
                .as_ref()
                .and_then(|h| h.get("sha256"))
                .map(String::as_str),
        )?;
        let (ring, keyids, threshold) = self
            .delegation_keys(name)
            .ok_or_else(|| RegistryError::malformed(name, "no trusted role delegates to it"))?;
        let new = verify_targets(name, bytes, &ring, &keyids, threshold)?;
        if new.signed.version != pinned.version {
            return Err(RegistryError::Mismatch {
                role: name.to_owned(),
                by: "snapshot".to_owned(),
                expected: pinned.version,
                got: new.signed.version,
            });
        }
        if let Some(old) = self.delegated.get(name)
            && new.signed.version < old.signed.version
        {
            return Err(RegistryError::Rollback {
                role: name.to_owned(),
                trusted: old.signed.version,
                offered: new.signed.version,
            });
        }
        check_expiry(name, new.signed.expires, now)?;
        self.delegated.insert(name.to_owned(), new);
        Ok(())
    }

    /// Whether the whole set is fresh at `now`: every role present and unexpired. A catalog is
    /// only read from a fresh set.
    pub fn check_fresh(&self, now: DateTime<Utc>) -> Result<(), RegistryError> {
        check_expiry("root", self.root.signed.expires, now)?;
        let missing =
            |role: &str| RegistryError::malformed(role, "not fetched yet: update the source");
        let timestamp = self
            .timestamp
            .as_ref()
            .ok_or_else(|| missing("timestamp"))?;
        check_expiry("timestamp", timestamp.signed.expires, now)?;
        let snapshot = self.snapshot.as_ref().ok_or_else(|| missing("snapshot"))?;
        check_expiry("snapshot", snapshot.signed.expires, now)?;
        let targets = self.targets.as_ref().ok_or_else(|| missing("targets"))?;
        check_expiry("targets", targets.signed.expires, now)?;
        for (name, role) in &self.delegated {
            check_expiry(name, role.signed.expires, now)?;
        }
        Ok(())
    }

    /// Looks `path` up as TUF's pre-order search does: the top-level targets, then each
    /// delegation whose paths match, in order, depth first; a terminating delegation that
    /// matches ends the search whether or not its role lists the path (tough CVE-2025-2886);
    /// a role met twice is not searched again (a delegation cycle), and chains deeper than
    /// [`MAX_DELEGATION_DEPTH`] stop the search with an error.
    pub fn find(&self, path: &str) -> Result<Option<FoundTarget>, RegistryError> {
        let Some(top) = &self.targets else {
            return Ok(None);
        };
        let (keyids, _) = self.role_keys(RoleName::Targets)?;
        let mut visited = BTreeSet::new();
        Ok(self
            .search(path, "targets", &top.signed, keyids, 0, &mut visited)?
            .0)
    }

    /// One role of the search; the flag says the search must stop (a terminating match).
    fn search(
        &self,
        path: &str,
        name: &str,
        role: &Targets,
        keyids: Vec<String>,
        depth: usize,
        visited: &mut BTreeSet<String>,
    ) -> Result<(Option<FoundTarget>, bool), RegistryError> {
        if depth > MAX_DELEGATION_DEPTH {
            return Err(RegistryError::Delegation {
                role: name.to_owned(),
                message: format!("delegations nest deeper than {MAX_DELEGATION_DEPTH}: refused"),
            });
        }
        if !visited.insert(name.to_owned()) {
            return Ok((None, false));
        }
        if let Some(file) = role.targets.get(path) {
            return Ok((
                Some(FoundTarget {
                    path: path.to_owned(),
                    file: file.clone(),
                    role: name.to_owned(),
                    keyids,
                }),
                true,
            ));
        }
        for delegation in role.delegations.iter().flat_map(|d| &d.roles) {
            let matches = delegation
                .paths
                .iter()
                .any(|p| path_matcher(p).is_ok_and(|m| m.is_match(path)));
            if !matches {
                continue;
            }
            if let Some(child) = self.delegated.get(&delegation.name) {
                let (found, stop) = self.search(
                    path,
                    &delegation.name,
                    &child.signed,
                    delegation.keyids.clone(),
                    depth + 1,
                    visited,
                )?;
                if found.is_some() || stop {
                    return Ok((found, true));
                }
            }
            if delegation.terminating {
                return Ok((None, true));
            }
        }
        Ok((None, false))
    }

    /// Every target path any trusted role lists, each resolved through [`TrustedSet::find`]
    /// so a path a delegation may not speak for is left out.
    pub fn all_targets(&self) -> Result<Vec<FoundTarget>, RegistryError> {
        let mut paths = BTreeSet::new();
        for role in self.targets.iter().chain(self.delegated.values()) {
            paths.extend(role.signed.targets.keys().cloned());
        }
        let mut found = Vec::new();
        for path in paths {
            if let Some(target) = self.find(&path)? {
                found.push(target);
            }
        }
        Ok(found)
    }
}

/// A targets file signed by `threshold` of `keyids` in `ring`, well formed.
fn verify_targets(
    name: &str,
    bytes: &[u8],
    ring: &KeyRing,
    keyids: &[String],
    threshold: u64,
) -> Result<Verified<Targets>, RegistryError> {
    let envelope: Envelope = parse_envelope(name, bytes)?;
    verify_threshold(name, &envelope, ring, keyids, threshold)?;
    let signed: Targets = signed_part(name, &envelope)?;
    signed.check(name)?;
    Ok(Verified {
        bytes: bytes.to_vec(),
        signed,
    })
}
