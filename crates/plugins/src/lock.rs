//! The integrity lock, `$BOSUN_HOME/registry/lock.json`: for each plugin and skill installed
//! from a registry, where it came from, what was verified (the artifact's digest, the signer)
//! and the digest of every file as installed. It lives outside every plugin directory, so a
//! plugin cannot rewrite its own record, and it is checked at every load: the catalog refuses a
//! locked plugin whose content no longer has the recorded hash, naming the files that differ,
//! until it is reinstalled or a person accepts the change (`bosun plugins verify NAME
//! --accept`). Written atomically, like every file of Bosun's, and saved as a merge
//! ([`crate::state_lock`]): under the file's lock, only the records this lock set or removed
//! since it was loaded are applied to the file as it is on disk then, so two installs at once
//! both keep their record.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::state_lock::{UpdateError, replay};

/// The format version this host reads and writes.
pub const LOCK_VERSION: u32 = 1;

/// Most files a record lists (as many as a plugin may hold).
const MAX_FILES: usize = crate::source::MAX_SOURCE_FILES;

/// What was installed, verified and where from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockRecord {
    /// The `[registries.<name>]` it came from.
    pub source: String,
    /// Its name in that source.
    pub name: String,
    /// The version installed.
    pub version: String,
    /// SHA-256 of the downloaded artifact, as verified against the catalog.
    pub artifact_sha256: String,
    /// Who vouched for that digest, as the trust review showed it.
    pub signer: String,
    /// The content hash the catalog computes for the installed plugin (`plugin.wasm`'s bytes
    /// or the source snapshot's), or a skill's `SKILL.md` digest.
    pub sha256: String,
    /// Every file as installed, by relative path.
    pub files: BTreeMap<String, String>,
    /// The tools it declared.
    #[serde(default)]
    pub tools: BTreeSet<String>,
    /// The capabilities it declared.
    #[serde(default)]
    pub capabilities: BTreeSet<String>,
    /// The endpoints it declared.
    #[serde(default)]
    pub endpoints: BTreeSet<String>,
    /// The classification it asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<String>,
    /// When it was installed or last accepted.
    pub installed_at: DateTime<Utc>,
}

/// How the files on disk differ from a record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Drift {
    /// Files whose content changed.
    pub changed: Vec<String>,
    /// Files added since.
    pub added: Vec<String>,
    /// Files gone since.
    pub removed: Vec<String>,
}

impl Drift {
    /// Whether nothing differs.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        for (word, list) in [
            ("changed", &self.changed),
            ("added", &self.added),
            ("removed", &self.removed),
        ] {
            if !list.is_empty() {
                let names: Vec<String> =
                    list.iter().map(|p| bosun_core::escape_hidden(p)).collect();
                parts.push(format!("{word} {}", names.join(", ")));
            }
        }
        if parts.is_empty() {
            f.write_str("its content hash differs")
        } else {
            f.write_str(&parts.join("; "))
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LockFile {
    version: u32,
    #[serde(default)]
    plugins: BTreeMap<String, LockRecord>,
    #[serde(default)]
    skills: BTreeMap<String, LockRecord>,
}

/// One change made since the lock was loaded, replayed on the file at save.
#[derive(Debug, Clone)]
enum Change {
    SetPlugin(String, LockRecord),
    SetSkill(String, LockRecord),
    RemovePlugin(String),
    RemoveSkill(String),
}

impl LockFile {
    fn empty() -> Self {
        LockFile {
            version: LOCK_VERSION,
            ..LockFile::default()
        }
    }

    fn apply(&mut self, change: Change) -> Option<LockRecord> {
        match change {
            Change::SetPlugin(name, record) => self.plugins.insert(name, record),
            Change::SetSkill(name, record) => self.skills.insert(name, record),
            Change::RemovePlugin(name) => self.plugins.remove(&name),
            Change::RemoveSkill(name) => self.skills.remove(&name),
        }
    }
}

/// The lock, as loaded from one file, with the changes made since.
#[derive(Debug, Clone)]
pub struct InstallLock {
    path: PathBuf,
    file: LockFile,
    /// The records set and removed since it was loaded or saved, in order.
    changes: Vec<Change>,
}

/// `$BOSUN_HOME/registry/lock.json`.
pub fn lock_path(home: &Path) -> PathBuf {
    home.join("registry").join("lock.json")
}

/// Why the lock cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a lock this host reads.
    #[error("{} is not a lock file this Bosun reads ({message}): move it aside and reinstall registry plugins", path.display())]
    Invalid {
        /// The lock file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl InstallLock {
    /// Loads the lock under `home`; an absent file is an empty lock.
    pub fn load(home: &Path) -> Result<Self, LockError> {
        let path = lock_path(home);
        let file = match bosun_fsio::read_state(&path) {
            Ok(Some(bytes)) => parse(&bytes, &path)?,
            Ok(None) => LockFile::empty(),
            Err(source) => return Err(LockError::Io { path, source }),
        };
        Ok(Self {
            path,
            file,
            changes: Vec::new(),
        })
    }

    /// The record of plugin `local`.
    pub fn plugin(&self, local: &str) -> Option<&LockRecord> {
        self.file.plugins.get(local)
    }

    /// The record of skill `name`.
    pub fn skill(&self, name: &str) -> Option<&LockRecord> {
        self.file.skills.get(name)
    }

    /// Every plugin record, by local name.
    pub fn plugins(&self) -> &BTreeMap<String, LockRecord> {
        &self.file.plugins
    }

    /// Every skill record, by name.
    pub fn skills(&self) -> &BTreeMap<String, LockRecord> {
        &self.file.skills
    }

    /// Records (or replaces) plugin `local`. Takes effect on disk at [`InstallLock::save`].
    pub fn set_plugin(&mut self, local: &str, record: LockRecord) {
        self.change(Change::SetPlugin(local.to_owned(), record));
    }

    /// Records (or replaces) skill `name`.
    pub fn set_skill(&mut self, name: &str, record: LockRecord) {
        self.change(Change::SetSkill(name.to_owned(), record));
    }

    /// Forgets plugin `local`.
    pub fn remove_plugin(&mut self, local: &str) -> Option<LockRecord> {
        self.change(Change::RemovePlugin(local.to_owned()))
    }

    /// Forgets skill `name`.
    pub fn remove_skill(&mut self, name: &str) -> Option<LockRecord> {
        self.change(Change::RemoveSkill(name.to_owned()))
    }

    fn change(&mut self, change: Change) -> Option<LockRecord> {
        self.changes.push(change.clone());
        self.file.apply(change)
    }

    /// Saves the records set and removed since the lock was loaded (or last saved): under the
    /// file's lock ([`crate::state_lock`]) it reads the file as it is on disk now, applies
    /// these changes in order and writes the result atomically. Another process's records are
    /// kept; for the names changed here, this change wins. Afterwards the lock holds what was
    /// written. With nothing changed, nothing is written.
    ///
    /// # Errors
    /// The file on disk no longer parses (it is left as it is), the lock stayed held by
    /// another process, or the write failed; the file is then unchanged.
    pub fn save(&mut self) -> Result<(), LockError> {
        if self.changes.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let merged = replay(
            &path,
            &self.changes,
            |current| match current {
                Some(bytes) => parse(bytes, &path),
                None => Ok(LockFile::empty()),
            },
            |file, change| {
                file.apply(change);
            },
            |file| {
                let mut text =
                    serde_json::to_string_pretty(file).map_err(|e| LockError::Invalid {
                        path: path.clone(),
                        message: e.to_string(),
                    })?;
                text.push('\n');
                Ok(text.into_bytes())
            },
        );
        self.file = match merged {
            Ok(file) => file,
            Err(UpdateError::Change(e)) => return Err(e),
            Err(UpdateError::Io(source)) => return Err(LockError::Io { path, source }),
        };
        self.changes.clear();
        Ok(())
    }
}

/// The lock's bytes, read strictly.
fn parse(bytes: &[u8], path: &Path) -> Result<LockFile, LockError> {
    let file: LockFile = serde_json::from_slice(bytes).map_err(|e| LockError::Invalid {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    if file.version != LOCK_VERSION {
        return Err(LockError::Invalid {
            path: path.to_owned(),
            message: format!("version {}", file.version),
        });
    }
    Ok(file)
}

/// The SHA-256 of every regular file under `dir` by relative `/`-joined path (links and
/// anything past the loader's bounds are left out: the catalog refuses those anyway).
pub fn file_digests(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut pending = vec![(dir.to_path_buf(), String::new(), 0usize)];
    while let Some((at, prefix, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            if out.len() >= MAX_FILES {
                return out;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if kind.is_dir() && depth < crate::source::MAX_SOURCE_DEPTH {
                pending.push((entry.path(), rel, depth + 1));
            } else if kind.is_file()
                && let Ok(bytes) =
                    bosun_fsio::read_regular(&entry.path(), crate::source::MAX_SOURCE_FILE_BYTES)
            {
                out.insert(rel, format!("{:x}", Sha256::digest(&bytes)));
            }
        }
    }
    out
}

/// How `dir` differs from what `record` lists.
pub fn drift(record: &LockRecord, dir: &Path) -> Drift {
    let now = file_digests(dir);
    let mut drift = Drift::default();
    for (path, digest) in &record.files {
        match now.get(path) {
            None => drift.removed.push(path.clone()),
            Some(d) if d != digest => drift.changed.push(path.clone()),
            Some(_) => {}
        }
    }
    drift.added = now
        .keys()
        .filter(|p| !record.files.contains_key(*p))
        .cloned()
        .collect();
    drift
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str) -> LockRecord {
        LockRecord {
            source: "reef".to_owned(),
            name: name.to_owned(),
            version: "1.0.0".to_owned(),
            artifact_sha256: "00".repeat(32),
            signer: "unsigned".to_owned(),
            sha256: "11".repeat(32),
            files: BTreeMap::new(),
            tools: BTreeSet::new(),
            capabilities: BTreeSet::new(),
            endpoints: BTreeSet::new(),
            classification: None,
            installed_at: DateTime::from_timestamp(0, 0).unwrap(),
        }
    }

    /// Eight installs at once (threads with their own lock, as flock treats separate opens as
    /// separate owners) each load, then all record and save: every record is kept.
    #[test]
    fn concurrent_installs_keep_every_record() {
        let home = tempfile::tempdir().unwrap();
        let writers = 8;
        let loaded = std::sync::Arc::new(std::sync::Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let home = home.path().to_owned();
                let loaded = std::sync::Arc::clone(&loaded);
                std::thread::spawn(move || {
                    let mut lock = InstallLock::load(&home).unwrap();
                    loaded.wait();
                    if i % 2 == 0 {
                        lock.set_plugin(&format!("p{i}"), record(&format!("p{i}")));
                    } else {
                        lock.set_skill(&format!("s{i}"), record(&format!("s{i}")));
                    }
                    lock.save().unwrap();
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let lock = InstallLock::load(home.path()).unwrap();
        let plugins: Vec<&String> = lock.plugins().keys().collect();
        let skills: Vec<&String> = lock.skills().keys().collect();
        assert_eq!(plugins, ["p0", "p2", "p4", "p6"]);
        assert_eq!(skills, ["s1", "s3", "s5", "s7"]);
    }

    /// A removal in one process and an install in another both survive, in either order; a
    /// file that no longer parses is refused, not overwritten.
    #[test]
    fn a_removal_and_an_install_at_once_both_survive() {
        for removal_first in [true, false] {
            let home = tempfile::tempdir().unwrap();
            let mut setup = InstallLock::load(home.path()).unwrap();
            setup.set_plugin("web", record("web"));
            setup.set_skill("notes", record("notes"));
            setup.save().unwrap();

            let mut removing = InstallLock::load(home.path()).unwrap();
            let mut adding = InstallLock::load(home.path()).unwrap();
            assert!(removing.remove_plugin("web").is_some());
            adding.set_plugin("api", record("api"));
            if removal_first {
                removing.save().unwrap();
                adding.save().unwrap();
            } else {
                adding.save().unwrap();
                removing.save().unwrap();
            }
            let lock = InstallLock::load(home.path()).unwrap();
            let plugins: Vec<&String> = lock.plugins().keys().collect();
            assert_eq!(plugins, ["api"], "removal first: {removal_first}");
            assert!(lock.skill("notes").is_some());
        }

        let home = tempfile::tempdir().unwrap();
        let mut lock = InstallLock::load(home.path()).unwrap();
        std::fs::create_dir_all(home.path().join("registry")).unwrap();
        std::fs::write(lock_path(home.path()), "{\"version\": 1, \"plugins\": [").unwrap();
        lock.set_plugin("web", record("web"));
        let err = lock.save().unwrap_err();
        assert!(matches!(err, LockError::Invalid { .. }), "{err}");
        assert!(err.to_string().contains("lock.json"), "{err}");
        assert_eq!(
            std::fs::read_to_string(lock_path(home.path())).unwrap(),
            "{\"version\": 1, \"plugins\": ["
        );
    }

    #[test]
    fn a_record_survives_a_round_trip_and_drift_names_the_files() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("plugins/web");
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("mod.ts"), "a").unwrap();
        std::fs::write(dir.join("lib/x.ts"), "b").unwrap();
        let record = LockRecord {
            source: "reef".to_owned(),
            name: "web".to_owned(),
            version: "1.0.0".to_owned(),
            artifact_sha256: "00".repeat(32),
            signer: "unsigned".to_owned(),
            sha256: "11".repeat(32),
            files: file_digests(&dir),
            tools: BTreeSet::new(),
            capabilities: BTreeSet::new(),
            endpoints: BTreeSet::new(),
            classification: None,
            installed_at: DateTime::from_timestamp(0, 0).unwrap(),
        };
        let mut lock = InstallLock::load(home.path()).unwrap();
        lock.set_plugin("web", record.clone());
        lock.save().unwrap();
        let lock = InstallLock::load(home.path()).unwrap();
        assert_eq!(lock.plugin("web"), Some(&record));
        assert!(drift(&record, &dir).is_empty());
        std::fs::write(dir.join("mod.ts"), "changed").unwrap();
        std::fs::write(dir.join("new.ts"), "c").unwrap();
        std::fs::remove_file(dir.join("lib/x.ts")).unwrap();
        let d = drift(&record, &dir);
        assert_eq!(d.changed, ["mod.ts"]);
        assert_eq!(d.added, ["new.ts"]);
        assert_eq!(d.removed, ["lib/x.ts"]);
        assert_eq!(
            d.to_string(),
            "changed mod.ts; added new.ts; removed lib/x.ts"
        );
    }
}
