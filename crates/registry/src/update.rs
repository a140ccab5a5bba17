//! One update of a signed source's trusted metadata, in TUF's order: root (one version at a
//! time), timestamp, snapshot, targets, delegated roles. Each file is read with a cap (the
//! length the signed file above it gives, else a fixed bound), so a source that sends endless
//! data is cut off. The set given is a working copy: on any error the caller keeps its old one.

use chrono::{DateTime, Utc};

use crate::error::RegistryError;
use crate::fetch::{Origin, Quiet};
use crate::trusted::{MAX_DELEGATED_ROLES, MAX_ROOT_ROTATIONS, TrustedSet};

/// Largest root file read.
pub const MAX_ROOT_BYTES: u64 = 512 * 1024;
/// Largest timestamp file read.
pub const MAX_TIMESTAMP_BYTES: u64 = 16 * 1024;
/// Largest snapshot file read when the timestamp gives no length.
pub const MAX_SNAPSHOT_BYTES: u64 = 4 * 1024 * 1024;
/// Largest targets file read when the snapshot gives no length.
pub const MAX_TARGETS_BYTES: u64 = 32 * 1024 * 1024;

/// The folder of a source's metadata, relative to its root.
pub const METADATA_DIR: &str = "metadata";

fn metadata_path(file: &str) -> String {
    format!("{METADATA_DIR}/{file}")
}

/// Reads a metadata file that must exist.
async fn required(origin: &Origin, file: &str, cap: u64) -> Result<Vec<u8>, RegistryError> {
    let path = metadata_path(file);
    origin
        .get(&path, cap, &Quiet)
        .await?
        .ok_or_else(|| RegistryError::NotFound {
            what: origin.describe(&path),
        })
}

/// Reads the first root (`1.root.json`), for pinning.
pub async fn first_root(origin: &Origin) -> Result<Vec<u8>, RegistryError> {
    required(origin, "1.root.json", MAX_ROOT_BYTES).await
}

/// Brings `set` up to date from `origin` at `now`.
pub async fn refresh(
    set: &mut TrustedSet,
    origin: &Origin,
    now: DateTime<Utc>,
) -> Result<(), RegistryError> {
    let before = set.root().clone();
    for _ in 0..MAX_ROOT_ROTATIONS {
        let file = format!("{}.root.json", set.root_version() + 1);
        match origin
            .get(&metadata_path(&file), MAX_ROOT_BYTES, &Quiet)
            .await?
        {
            Some(bytes) => set.update_root(&file, &bytes)?,
            None => break,
        }
    }
    set.finish_root_update(&before, now)?;

    let timestamp = required(origin, "timestamp.json", MAX_TIMESTAMP_BYTES).await?;
    set.update_timestamp(&timestamp, now)?;

    let cap = set
        .snapshot_length()
        .unwrap_or(MAX_SNAPSHOT_BYTES)
        .min(MAX_SNAPSHOT_BYTES);
    let snapshot = required(origin, "snapshot.json", cap).await?;
    set.update_snapshot(&snapshot, now)?;

    // A targets file the snapshot pins exactly as trusted (same version, length and hash,
    // verified under this same root) is not fetched and verified again: for a large catalog
    // that was most of a search's time.
    let same_root = set.root_version() == before.version;
    let mut all_held = same_root && set.holds_pinned("targets");
    if !all_held {
        let cap = set
            .targets_length("targets")
            .unwrap_or(MAX_TARGETS_BYTES)
            .min(MAX_TARGETS_BYTES);
        let targets = required(origin, "targets.json", cap).await?;
        set.update_targets(&targets, now)?;
    }

    // Every delegated role is checked against this snapshot, the ones kept from before too. A
    // kept one is not fetched again; once any file above it changed, it is verified again
    // under the keys now delegating to it.
    let mut checked = std::collections::BTreeSet::new();
    let mut kept = Vec::new();
    while let Some(name) = set
        .delegations()
        .into_iter()
        .find(|name| !checked.contains(name))
    {
        if checked.len() >= MAX_DELEGATED_ROLES {
            return Err(RegistryError::Delegation {
                role: name,
                message: format!("more than {MAX_DELEGATED_ROLES} delegated roles: refused"),
            });
        }
        checked.insert(name.clone());
        if same_root && set.holds_pinned(&name) {
            kept.push(name);
            continue;
        }
        all_held = false;
        let cap = set
            .targets_length(&name)
            .unwrap_or(MAX_TARGETS_BYTES)
            .min(MAX_TARGETS_BYTES);
        let bytes = required(origin, &format!("{name}.json"), cap).await?;
        set.update_delegated(&name, &bytes, now)?;
    }
    if !all_held {
        for name in kept {
            if let Some(bytes) = set.held_delegated(&name) {
                set.update_delegated(&name, &bytes, now)?;
            }
        }
    }
    set.retain_delegated(&checked);
    set.check_fresh(now)
}
