//! The TUF attack table, one named test per attack, and the real bugs of other clients
//! (tough < 0.20: CVE-2025-2885…2888 and the delegation cycle; go-tuf CVE-2022-29173).
//! Each test would pass the attack through if the check it names were removed.

use bosun_registry::RegistryError;
use bosun_registry::metadata::sign;
use bosun_registry::source::{ArtifactKind, Source};
use bosun_registry::trusted::{StoredMetadata, TrustedSet};
use chrono::Duration;
use serde_json::json;

use crate::repo::{Repo, claims, key, now, target_entry};

async fn refresh(repo: &Repo, home: &std::path::Path) -> Result<TrustedSet, RegistryError> {
    repo.client(home).refresh(now()).await
}

fn stored(home: &std::path::Path) -> String {
    std::fs::read_to_string(bosun_registry::signed::state_path(home, "corp")).unwrap_or_default()
}

#[tokio::test]
async fn a_fresh_catalog_verifies_and_lists_its_plugins() {
    let mut repo = Repo::new();
    repo.add("web", "1.0.0", b"export const manifest = {};");
    repo.publish();
    let home = tempfile::tempdir().unwrap();
    let set = refresh(&repo, home.path()).await.unwrap();
    assert_eq!(set.targets_version(), Some(2));
    let entries = repo
        .client(home.path())
        .entries(ArtifactKind::Plugin, now())
        .await
        .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].claims.name, "web");
    assert!(
        entries[0]
            .signer
            .describe()
            .starts_with("signed by the `targets` role")
    );
}

#[tokio::test]
async fn arbitrary_file_with_another_digest_is_refused() {
    let mut repo = Repo::new();
    repo.add("web", "1.0.0", b"the published bytes");
    repo.publish();
    std::fs::write(
        repo.dir.path().join("targets/plugins/web/1.0.0/mod.ts"),
        b"the attacker's bytes",
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let client = repo.client(home.path());
    let target = client
        .entries(ArtifactKind::Plugin, now())
        .await
        .unwrap()
        .remove(0);
    let error = client
        .fetch(&target, &bosun_registry::fetch::Quiet)
        .await
        .unwrap_err();
    // A longer file is not read past the signed length.
    assert!(
        matches!(error, RegistryError::TooLarge { limit: 19, .. }),
        "{error}"
    );
    // Same length, other bytes: the digest stops it.
    std::fs::write(
        repo.dir.path().join("targets/plugins/web/1.0.0/mod.ts"),
        b"the published byteZ",
    )
    .unwrap();
    let error = client
        .fetch(&target, &bosun_registry::fetch::Quiet)
        .await
        .unwrap_err();
    assert!(matches!(error, RegistryError::Digest { .. }), "{error}");
}

#[tokio::test]
async fn rollback_of_the_timestamp_is_refused() {
    let mut repo = Repo::new();
    repo.publish();
    repo.publish();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    let kept = stored(home.path());
    repo.timestamp_version = 2;
    repo.write_all();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(&error, RegistryError::Rollback { role, trusted: 3, offered: 2 } if role == "timestamp"),
        "{error}"
    );
    assert_eq!(
        stored(home.path()),
        kept,
        "nothing was kept from the refused update"
    );
}

#[tokio::test]
async fn rollback_of_the_snapshot_is_refused() {
    let mut repo = Repo::new();
    repo.publish();
    repo.publish();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    // A newer timestamp naming an older snapshot.
    repo.timestamp_version += 1;
    repo.snapshot_version = 2;
    repo.write_all();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(
            &error,
            RegistryError::Rollback {
                trusted: 3,
                offered: 2,
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn rollback_of_the_targets_is_refused() {
    let mut repo = Repo::new();
    repo.publish();
    repo.publish();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    // Fresh timestamp and snapshot, but the snapshot names targets version 2 again.
    repo.timestamp_version += 1;
    repo.snapshot_version += 1;
    repo.targets_version = 2;
    repo.write_all();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(&error, RegistryError::Rollback { role, trusted: 3, offered: 2 } if role == "targets"),
        "{error}"
    );
}

#[tokio::test]
async fn rollback_of_the_root_keys_is_refused() {
    let mut repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    // Root 2 rotates the timestamp key away from a key that leaked.
    let leaked = repo.timestamp_key.clone();
    repo.timestamp_key = key(40);
    let k1 = key(1);
    repo.write_root(2, &[&k1]);
    repo.publish();
    refresh(&repo, home.path()).await.unwrap();
    // The attacker serves the old root only, and a timestamp signed with the leaked key.
    std::fs::remove_file(repo.meta("2.root.json")).unwrap();
    repo.timestamp_key = leaked;
    repo.timestamp_version += 5;
    repo.write_all();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(matches!(error, RegistryError::Threshold { .. }), "{error}");
}

#[tokio::test]
async fn freeze_an_expired_timestamp_is_refused() {
    let mut repo = Repo::new();
    repo.timestamp_expires = now() - Duration::seconds(1);
    repo.publish();
    let home = tempfile::tempdir().unwrap();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(&error, RegistryError::Expired { role, .. } if role == "timestamp"),
        "{error}"
    );
}

#[tokio::test]
async fn freeze_an_expired_snapshot_targets_or_root_is_refused() {
    for role in ["snapshot", "targets", "root"] {
        let mut repo = Repo::new();
        let home = tempfile::tempdir().unwrap();
        refresh(&repo, home.path()).await.unwrap();
        repo.expires = now() - Duration::seconds(1);
        if role == "root" {
            let k1 = key(1);
            repo.write_root(2, &[&k1]);
        }
        repo.publish();
        let error = refresh(&repo, home.path()).await.unwrap_err();
        assert!(
            matches!(&error, RegistryError::Expired { .. }),
            "{role}: {error}"
        );
    }
}

#[tokio::test]
async fn a_frozen_mirror_is_refused_once_its_timestamp_expires() {
    let repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    // Nothing new is published; a day later the same files are stale.
    let later = now() + Duration::days(2);
    let error = repo.client(home.path()).refresh(later).await.unwrap_err();
    assert!(
        matches!(&error, RegistryError::Expired { role, .. } if role == "timestamp"),
        "{error}"
    );
}

#[tokio::test]
async fn mix_and_match_a_snapshot_of_another_publication_is_refused() {
    let mut repo = Repo::new();
    repo.publish();
    let old_snapshot = std::fs::read(repo.meta("snapshot.json")).unwrap();
    repo.publish();
    // Today's timestamp with yesterday's snapshot.
    std::fs::write(repo.meta("snapshot.json"), &old_snapshot).unwrap();
    let home = tempfile::tempdir().unwrap();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::Length { .. } | RegistryError::Digest { .. }
        ),
        "{error}"
    );

    // Without a pinned hash, the version the timestamp names still refuses it.
    let snapshot: serde_json::Value = serde_json::from_slice(&old_snapshot).unwrap();
    repo.timestamp_version += 1;
    let timestamp = json!({
        "_type": "timestamp", "spec_version": "1.0.31", "version": repo.timestamp_version,
        "expires": crate::repo::time(repo.timestamp_expires),
        "meta": {"snapshot.json": {"version": 3}},
    });
    let _ = snapshot;
    repo.write(
        "timestamp.json",
        &sign(&timestamp, &[&repo.timestamp_key]).unwrap(),
    );
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(&error, RegistryError::Mismatch { role, expected: 3, got: 2, .. } if role == "snapshot"),
        "{error}"
    );
}

#[tokio::test]
async fn fast_forward_is_undone_by_rotating_the_timestamp_key() {
    let mut repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    // An attacker holding the timestamp key pushes its version far ahead.
    repo.timestamp_version = 1000;
    repo.write_all();
    refresh(&repo, home.path()).await.unwrap();
    // The publisher rotates the timestamp key and starts again at a low version.
    repo.timestamp_key = key(41);
    let k1 = key(1);
    repo.write_root(2, &[&k1]);
    repo.timestamp_version = 2;
    repo.write_all();
    let set = refresh(&repo, home.path()).await.unwrap();
    assert_eq!(set.timestamp_version(), Some(2));
}

#[tokio::test]
async fn endless_data_is_cut_off_at_the_cap() {
    let repo = Repo::new();
    let mut huge = std::fs::read(repo.meta("timestamp.json")).unwrap();
    huge.extend(std::iter::repeat_n(b' ', 1024 * 1024));
    std::fs::write(repo.meta("timestamp.json"), &huge).unwrap();
    let home = tempfile::tempdir().unwrap();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(error, RegistryError::TooLarge { limit: 16384, .. }),
        "{error}"
    );

    // A targets file longer than the snapshot says is read no further than that.
    let repo = Repo::new();
    let mut targets = std::fs::read(repo.meta("targets.json")).unwrap();
    targets.extend(b"    ");
    std::fs::write(repo.meta("targets.json"), &targets).unwrap();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(matches!(error, RegistryError::TooLarge { .. }), "{error}");
}

#[tokio::test]
async fn wrong_key_a_timestamp_signed_by_another_role_is_refused() {
    let repo = Repo::new();
    let snapshot = std::fs::read(repo.meta("snapshot.json")).unwrap();
    repo.write_timestamp(1, &snapshot, &[&repo.snapshot_key]);
    let home = tempfile::tempdir().unwrap();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(&error, RegistryError::Threshold { role, valid: 0, threshold: 1 } if role == "timestamp"),
        "{error}"
    );
}

#[tokio::test]
async fn missing_key_metadata_without_signatures_is_refused() {
    let repo = Repo::new();
    let snapshot = std::fs::read(repo.meta("snapshot.json")).unwrap();
    repo.write_timestamp(1, &snapshot, &[]);
    let home = tempfile::tempdir().unwrap();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(error, RegistryError::Threshold { valid: 0, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn threshold_not_met_one_of_two_root_keys_is_refused() {
    let mut repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    // Root 2 needs two of two root keys; signed by the old key and one new one only.
    let (k1, k5) = (key(1), key(5));
    repo.root_keys = vec![key(1), key(5)];
    repo.root_threshold = 2;
    repo.write_root(2, &[&k1, &k5]);
    refresh(&repo, home.path()).await.unwrap();
    repo.write_root(3, &[&k1]);
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::Threshold {
                valid: 1,
                threshold: 2,
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn one_key_signing_twice_counts_once() {
    let mut repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    repo.root_keys = vec![key(1), key(5)];
    repo.root_threshold = 2;
    let k1 = key(1);
    repo.write_root(2, &[&k1, &k1]);
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::Threshold {
                valid: 1,
                threshold: 2,
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn root_rotation_is_followed_one_version_at_a_time() {
    let mut repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    // Root 2 moves the root role to a new key, signed by the old and the new; root 3 by the new.
    let (k1, k6) = (key(1), key(6));
    repo.root_keys = vec![key(6)];
    repo.write_root(2, &[&k1, &k6]);
    repo.targets_key = key(7);
    repo.write_root(3, &[&k6]);
    repo.publish();
    let set = refresh(&repo, home.path()).await.unwrap();
    assert_eq!(set.root_version(), 3);
    // A root signed only by the new key, without the old one's consent, is refused.
    let mut repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    repo.root_keys = vec![key(6)];
    repo.write_root(2, &[&k6]);
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(matches!(error, RegistryError::Threshold { .. }), "{error}");
}

#[tokio::test]
async fn an_unpinned_source_names_its_fingerprint_and_a_wrong_pin_is_refused() {
    let repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    let unpinned = bosun_registry::signed::SignedSource::new(
        "corp",
        bosun_registry::fetch::Origin::dir(repo.dir.path()),
        Vec::new(),
        home.path(),
    );
    let error = unpinned.refresh(now()).await.unwrap_err();
    let id = key(1).public().keyid();
    assert!(
        matches!(&error, RegistryError::Unpinned { fingerprints, .. } if fingerprints.contains(&id)),
        "{error}"
    );
    let wrong = bosun_registry::signed::SignedSource::new(
        "corp",
        bosun_registry::fetch::Origin::dir(repo.dir.path()),
        vec![key(9).public().keyid()],
        home.path(),
    );
    let error = wrong.refresh(now()).await.unwrap_err();
    assert!(matches!(error, RegistryError::Threshold { .. }), "{error}");
    assert!(stored(home.path()).is_empty());
}

#[tokio::test]
async fn tough_cve_2025_2885_a_root_must_be_the_next_version() {
    let mut repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    // Served as 2.root.json, but declaring version 5 (tough accepted it and skipped ahead).
    repo.targets_key = key(8);
    let k1 = key(1);
    let envelope = sign(&repo.root_signed(5), &[&k1]).unwrap();
    repo.write("2.root.json", &envelope);
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::RootNotSequential {
                expected: 2,
                got: 5,
                ..
            }
        ),
        "{error}"
    );
}

/// Top-level targets delegating `plugins/*/*/*` to `a` (terminating, first) then `b`.
fn delegating_repo(terminating: bool) -> Repo {
    let mut repo = Repo::new();
    let (ka, kb) = (key(20), key(21));
    repo.delegations = Some(json!({
        "keys": {ka.public().keyid(): ka.public().to_json(), kb.public().keyid(): kb.public().to_json()},
        "roles": [
            {"name": "a", "keyids": [ka.public().keyid()], "threshold": 1, "paths": ["plugins/*/*/*"], "terminating": terminating},
            {"name": "b", "keyids": [kb.public().keyid()], "threshold": 1, "paths": ["plugins/*/*/*"], "terminating": false},
        ],
    }));
    let evil = b"evil";
    let path = "plugins/web/1.0.0/mod.ts";
    let mut b_targets = std::collections::BTreeMap::new();
    b_targets.insert(path.to_owned(), target_entry(evil, claims("web", "1.0.0")));
    for (name, k, targets) in [("a", ka, Default::default()), ("b", kb, b_targets)] {
        repo.delegated.insert(
            name.to_owned(),
            crate::repo::Delegated {
                key: k,
                version: 1,
                targets,
                delegations: None,
                expires: now() + Duration::days(30),
            },
        );
    }
    repo.publish();
    repo
}

#[tokio::test]
async fn tough_cve_2025_2886_a_terminating_delegation_ends_the_search() {
    let repo = delegating_repo(true);
    let home = tempfile::tempdir().unwrap();
    let set = refresh(&repo, home.path()).await.unwrap();
    // `a` is terminating for the path and does not list it: `b` must never be asked.
    assert_eq!(set.find("plugins/web/1.0.0/mod.ts").unwrap(), None);
    // The control: without `terminating`, `b` answers.
    let repo = delegating_repo(false);
    let home = tempfile::tempdir().unwrap();
    let set = refresh(&repo, home.path()).await.unwrap();
    assert_eq!(
        set.find("plugins/web/1.0.0/mod.ts").unwrap().unwrap().role,
        "b"
    );
}

#[tokio::test]
async fn tough_cve_2025_2887_a_delegated_role_cannot_roll_back() {
    let mut repo = delegating_repo(false);
    repo.delegated.get_mut("b").unwrap().version = 4;
    repo.publish();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    repo.delegated.get_mut("b").unwrap().version = 3;
    repo.publish();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(
            &error,
            RegistryError::Rollback {
                trusted: 4,
                offered: 3,
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn tough_cve_2025_2888_a_refused_timestamp_is_not_kept() {
    let mut repo = Repo::new();
    repo.publish();
    let home = tempfile::tempdir().unwrap();
    let mut set = refresh(&repo, home.path()).await.unwrap();
    let kept = stored(home.path());
    // A newer timestamp that names an older snapshot fails its rollback check…
    repo.timestamp_version = 9;
    repo.snapshot_version = 1;
    repo.write_all();
    let bytes = std::fs::read(repo.meta("timestamp.json")).unwrap();
    assert!(set.update_timestamp(&bytes, now()).is_err());
    // …and is neither the trusted timestamp in memory nor on disk afterwards.
    assert_eq!(set.timestamp_version(), Some(2));
    assert!(refresh(&repo, home.path()).await.is_err());
    assert_eq!(stored(home.path()), kept);
    // So the real timestamp 3 is still accepted (tough would now demand version ≥ 9).
    repo.timestamp_version = 3;
    repo.snapshot_version = 3;
    repo.targets_version = 3;
    repo.write_all();
    let set = refresh(&repo, home.path()).await.unwrap();
    assert_eq!(set.timestamp_version(), Some(3));
}

#[tokio::test]
async fn tough_delegation_cycle_ends_the_search_without_overflow() {
    let mut repo = Repo::new();
    let (ka, kb) = (key(30), key(31));
    let delegate_to = |name: &str, k: &bosun_registry::key::PrivateKey| {
        json!({"keys": {k.public().keyid(): k.public().to_json()},
               "roles": [{"name": name, "keyids": [k.public().keyid()], "threshold": 1, "paths": ["plugins/*/*/*"]}]})
    };
    repo.delegations = Some(delegate_to("a", &ka));
    repo.delegated.insert(
        "a".into(),
        crate::repo::Delegated {
            key: ka.clone(),
            version: 1,
            targets: Default::default(),
            delegations: Some(delegate_to("b", &kb)),
            expires: now() + Duration::days(30),
        },
    );
    repo.delegated.insert(
        "b".into(),
        crate::repo::Delegated {
            key: kb.clone(),
            version: 1,
            targets: Default::default(),
            delegations: Some(delegate_to("a", &ka)),
            expires: now() + Duration::days(30),
        },
    );
    repo.publish();
    let home = tempfile::tempdir().unwrap();
    let set = refresh(&repo, home.path()).await.unwrap();
    assert_eq!(set.find("plugins/web/1.0.0/mod.ts").unwrap(), None);
}

#[tokio::test]
async fn go_tuf_cve_2022_29173_rollback_after_a_restart_is_refused() {
    let mut repo = Repo::new();
    repo.publish();
    repo.publish();
    let home = tempfile::tempdir().unwrap();
    refresh(&repo, home.path()).await.unwrap();
    // A new process: only what was kept on disk knows targets 3 was trusted.
    let restored: StoredMetadata = serde_json::from_value(
        serde_json::from_str::<serde_json::Value>(&stored(home.path())).unwrap()["metadata"]
            .clone(),
    )
    .unwrap();
    assert_eq!(
        TrustedSet::restore(&restored).unwrap().targets_version(),
        Some(3)
    );
    repo.timestamp_version += 1;
    repo.snapshot_version += 1;
    repo.targets_version = 1;
    repo.write_all();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(&error, RegistryError::Rollback { role, trusted: 3, offered: 1 } if role == "targets"),
        "{error}"
    );
}

#[tokio::test]
async fn a_file_of_one_role_served_as_another_is_refused() {
    let repo = Repo::new();
    // The snapshot key also signs timestamps here, so only the type tells them apart.
    let snapshot = std::fs::read(repo.meta("snapshot.json")).unwrap();
    std::fs::write(repo.meta("timestamp.json"), &snapshot).unwrap();
    let home = tempfile::tempdir().unwrap();
    let error = refresh(&repo, home.path()).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::Threshold { .. } | RegistryError::Malformed { .. }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn an_unchanged_targets_file_is_not_fetched_again_and_a_new_one_is() {
    let mut repo = Repo::new();
    repo.add("weather", "1.0.0", b"one");
    repo.publish();
    let server = crate::server::serve(repo.dir.path().to_path_buf()).await;
    let home = tempfile::tempdir().unwrap();
    let open = || {
        bosun_registry::signed::SignedSource::new(
            "corp",
            bosun_registry::fetch::Origin::http(
                &server.url,
                bosun_registry::fetch::METADATA_TIMEOUT,
            )
            .unwrap(),
            vec![key(1).public().keyid()],
            home.path(),
        )
    };
    assert_eq!(
        open()
            .entries(ArtifactKind::Plugin, now())
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(server.asked("/metadata/targets.json"), 1);
    // Kept from the run before and pinned by the same snapshot: not fetched again.
    assert_eq!(
        open()
            .entries(ArtifactKind::Plugin, now())
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(server.asked("/metadata/targets.json"), 1);
    assert_eq!(server.asked("/metadata/timestamp.json"), 2);
    // A new publication is fetched and verified.
    repo.add("weather", "1.1.0", b"two");
    repo.publish();
    assert_eq!(
        open()
            .entries(ArtifactKind::Plugin, now())
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(server.asked("/metadata/targets.json"), 2);
}
