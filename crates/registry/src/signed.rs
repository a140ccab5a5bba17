//! Bosun's signed catalogs (`kind = "bosun"` over HTTPS or from a folder, `kind = "dir"` for an
//! offline bundle): the [`Source`] over a TUF-subset repository. The layout is
//! `metadata/{N.root.json, timestamp.json, snapshot.json, targets.json, <role>.json}` and
//! `targets/<plugins|skills>/<name>/<version>/<file>`, each target's `custom` holding the
//! publisher's [`Claims`].
//!
//! The trusted metadata is kept in `$BOSUN_HOME/registry/sources/<name>.json` (outside every
//! plugin directory) and replaced only after a whole update verified; a first use needs the
//! root's key ids pinned in the user's config, confirmed by a person.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::RegistryError;
use crate::fetch::{Origin, Progress};
use crate::source::{ArtifactKind, Claims, Signer, Source, Target};
use crate::trusted::{FoundTarget, StoredMetadata, TrustedSet, fetch_target};

/// Largest artifact a signed catalog may list (the largest component the catalog loads).
pub const MAX_ARTIFACT_BYTES: u64 = bosun_plugins::catalog::MAX_COMPONENT_BYTES;

/// What is kept per signed source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceState {
    /// The key ids the metadata was first verified with; other pins start over.
    pub pinned: Vec<String>,
    /// The trusted metadata.
    pub metadata: StoredMetadata,
}

/// `$BOSUN_HOME/registry/sources/<name>.json`.
pub fn state_path(home: &Path, source: &str) -> PathBuf {
    home.join("registry")
        .join("sources")
        .join(format!("{source}.json"))
}

fn load_state(path: &Path) -> Result<Option<SourceState>, RegistryError> {
    match bosun_fsio::read_state(path) {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| RegistryError::malformed(path.display().to_string(), e)),
        Ok(None) => Ok(None),
        Err(e) => Err(RegistryError::io(format!("reading {}", path.display()))(e)),
    }
}

/// Writes `state` to `path` under the file's lock, only over the state this refresh started
/// from (`loaded`). Another process that stored a state meanwhile verified it too, and may have
/// seen newer versions: writing this one over it could take the versions kept back, and a
/// frozen or rolled-back mirror would then pass the next check. So that state stands, and this
/// refresh's is only not kept (the next refresh starts from the newer one). Whether it was
/// written.
fn keep_state(
    path: &Path,
    loaded: Option<&SourceState>,
    state: &SourceState,
) -> Result<bool, RegistryError> {
    let text =
        serde_json::to_vec_pretty(state).map_err(|e| RegistryError::malformed("state", e))?;
    let mut written = false;
    bosun_plugins::state_lock::update(path, |current| {
        let now = current.and_then(|bytes| serde_json::from_slice::<SourceState>(bytes).ok());
        let unchanged = current.is_none() == loaded.is_none() && now.as_ref() == loaded;
        written = unchanged;
        Ok::<_, std::convert::Infallible>(unchanged.then(|| text.clone()))
    })
    .map_err(|e| match e {
        bosun_plugins::state_lock::UpdateError::Io(e) => {
            RegistryError::io(format!("writing {}", path.display()))(e)
        }
        bosun_plugins::state_lock::UpdateError::Change(never) => match never {},
    })?;
    Ok(written)
}

/// A signed source.
#[derive(Debug, Clone)]
pub struct SignedSource {
    name: String,
    origin: Origin,
    pinned: Vec<String>,
    state: PathBuf,
}

impl SignedSource {
    /// The source `name` at `origin`, trusting first roots signed by `pinned` key ids, keeping
    /// its state under `home`.
    pub fn new(name: &str, origin: Origin, pinned: Vec<String>, home: &Path) -> Self {
        Self {
            state: state_path(home, name),
            name: name.to_owned(),
            origin,
            pinned,
        }
    }

    /// The root key ids of the source's first root, for a person to confirm (trust on first
    /// use). Reading them trusts nothing.
    pub async fn first_root_keyids(&self) -> Result<Vec<String>, RegistryError> {
        let bytes = crate::update::first_root(&self.origin).await?;
        TrustedSet::root_keyids(&bytes)
    }

    /// The trusted set, brought up to date at `now` and kept only when the whole update
    /// verified.
    pub async fn refresh(&self, now: DateTime<Utc>) -> Result<TrustedSet, RegistryError> {
        if self.pinned.is_empty() {
            let fingerprints = match self.first_root_keyids().await {
                Ok(ids) => ids.join(", "),
                Err(e) => format!("(its root cannot be read: {e})"),
            };
            return Err(RegistryError::Unpinned {
                source_name: self.name.clone(),
                fingerprints,
            });
        }
        let on_disk = load_state(&self.state)?;
        let stored = on_disk.clone().filter(|s| s.pinned == self.pinned);
        let mut set = match &stored {
            Some(state) => TrustedSet::restore(&state.metadata)?,
            None => {
                let bytes = crate::update::first_root(&self.origin).await?;
                TrustedSet::from_pinned_root(&bytes, &self.pinned)?
            }
        };
        crate::update::refresh(&mut set, &self.origin, now).await?;
        let state = SourceState {
            pinned: self.pinned.clone(),
            metadata: set.stored(),
        };
        // Nothing new verified: the state on disk stands (no rewrite of a large catalog).
        if stored.as_ref() == Some(&state) {
            return Ok(set);
        }
        keep_state(&self.state, on_disk.as_ref(), &state)?;
        Ok(set)
    }
}

/// The target a catalog path names, when it is `<kind>/<name>/<version>/<file>` with a valid
/// name and version that its claims repeat.
pub fn target_of(found: FoundTarget) -> Option<Target> {
    let parts: Vec<&str> = found.path.split('/').collect();
    let [dir, name, version, file] = parts.as_slice() else {
        return None;
    };
    let kind = match *dir {
        "plugins" => ArtifactKind::Plugin,
        "skills" => ArtifactKind::Skill,
        _ => return None,
    };
    crate::name::check_name(name).ok()?;
    crate::name::parse_version(version).ok()?;
    crate::fetch::check_relative(&found.path).ok()?;
    let claims: Claims = serde_json::from_value(found.file.custom.clone()?).ok()?;
    if claims.name != *name || claims.version != *version {
        return None;
    }
    Some(Target {
        kind,
        claims,
        length: Some(found.file.length),
        sha256: found.file.sha256()?.to_ascii_lowercase(),
        file: (*file).to_owned(),
        location: format!("targets/{}", found.path),
        signer: Signer::Signed {
            role: found.role,
            keyids: found.keyids,
        },
    })
}

#[async_trait]
impl Source for SignedSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn label(&self) -> String {
        "signed (TUF: root, targets, snapshot, timestamp)".to_owned()
    }

    async fn entries(
        &self,
        kind: ArtifactKind,
        now: DateTime<Utc>,
    ) -> Result<Vec<Target>, RegistryError> {
        let set = self.refresh(now).await?;
        Ok(set
            .all_targets()?
            .into_iter()
            .filter_map(target_of)
            .filter(|t| t.kind == kind)
            .collect())
    }

    async fn fetch(
        &self,
        target: &Target,
        progress: &dyn Progress,
    ) -> Result<Vec<u8>, RegistryError> {
        fetch_target(&self.origin, target, MAX_ARTIFACT_BYTES, progress).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signed registry's kept state is not read through a link planted at its name: a state
    /// elsewhere (pinning other keys, older versions) is refused, not started from.
    #[test]
    fn a_kept_state_is_not_read_through_a_link_planted_in_its_place() {
        let home = tempfile::tempdir().unwrap();
        let path = state_path(home.path(), "team");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let planted = home.path().join("planted.json");
        std::fs::write(
            &planted,
            serde_json::to_vec(&state("attacker-key")).unwrap(),
        )
        .unwrap();
        bosun_fsio::testing::plant_link(&path, &planted);
        let error = load_state(&path).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
    }

    fn state(pinned: &str) -> SourceState {
        SourceState {
            pinned: vec![pinned.to_owned()],
            metadata: StoredMetadata::default(),
        }
    }

    /// Another process stored a state while this refresh ran: that state stands, whatever this
    /// refresh verified, so versions it kept are never taken back; a state unchanged since
    /// the refresh started is replaced.
    #[test]
    fn a_state_stored_meanwhile_by_another_refresh_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sources/main.json");
        assert!(keep_state(&path, None, &state("first")).unwrap());
        let loaded = load_state(&path).unwrap();
        assert_eq!(loaded, Some(state("first")));

        let newer = serde_json::to_vec_pretty(&state("newer")).unwrap();
        std::fs::write(&path, &newer).unwrap();
        assert!(!keep_state(&path, loaded.as_ref(), &state("older")).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), newer);
        // Nor when this refresh started with none and another stored one.
        assert!(!keep_state(&path, None, &state("older")).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), newer);

        let loaded = load_state(&path).unwrap();
        assert!(keep_state(&path, loaded.as_ref(), &state("next")).unwrap());
        assert_eq!(load_state(&path).unwrap(), Some(state("next")));
    }
}
