//! The label of a plugin's data folder (`${CLAUDE_PLUGIN_DATA}`, `$BOSUN_HOME/claude/data/<id>`):
//! the highest level and the first untrusted input of every session whose data reached one of
//! the plugin's processes — its hooks and its MCP servers all write that folder, and the folder
//! outlives sessions and processes, so what one session handed them another may be told.
//!
//! The label is kept at `$BOSUN_HOME/claude/labels/<id>.json`, beside the plugin's config and
//! secrets and outside every folder a plugin's process may write, and changed like every state
//! file: read, raised and written atomically under its lock ([`bosun_plugins::state_lock`]),
//! so two Bosun processes raising it at once both count. It only rises while the folder lives;
//! [`remove_data`] takes the folder and then its label. This module keeps the label: the host
//! decides what raises it and which sessions take it on.

use std::path::{Path, PathBuf};

use bosun_core::Classification;
use bosun_plugins::state_lock::{self, UpdateError};
use serde::{Deserialize, Serialize};

use crate::ClaudeError;

/// What a plugin's data folder may hold: the highest level and the first untrusted input of
/// the sessions whose data reached its processes. The default (nothing reached them) says no
/// more than a fresh session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataLabel {
    /// The highest level.
    pub level: Classification,
    /// The first untrusted input, named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<String>,
}

impl DataLabel {
    /// Takes in `other`: the higher level, and the first untrusted input (kept once marked).
    /// Whether anything changed.
    fn raise(&mut self, other: &DataLabel) -> bool {
        let before = self.clone();
        self.level = self.level.max(other.level);
        if self.untrusted.is_none() {
            self.untrusted.clone_from(&other.untrusted);
        }
        *self != before
    }
}

/// Where the label of the data folder of the plugin `id` is kept, in Bosun's folder of Claude
/// Code plugins `claude` (`$BOSUN_HOME/claude`).
pub fn label_path(claude: &Path, id: &str) -> PathBuf {
    claude.join("labels").join(format!("{id}.json"))
}

/// The label kept at `path` now; the default when there is none.
///
/// # Errors
/// The file cannot be read or does not parse (the message names it and the fix).
pub fn read(path: &Path) -> Result<DataLabel, ClaudeError> {
    match bosun_fsio::read_state(path) {
        Ok(Some(bytes)) => parse(path, Some(&bytes)),
        Ok(None) => Ok(DataLabel::default()),
        Err(e) => Err(ClaudeError::io(format!("reading {}", path.display()), e)),
    }
}

/// Raises the label kept at `path` to take in `by` (written only when it changes) and returns
/// it as it is now, with what other processes raised it to.
///
/// # Errors
/// The lock, the read or the write failed, or the file does not parse; it is then unchanged.
pub fn raise(path: &Path, by: &DataLabel) -> Result<DataLabel, ClaudeError> {
    let mut now = DataLabel::default();
    state_lock::update(path, |current| {
        now = parse(path, current)?;
        if !now.raise(by) {
            return Ok(None);
        }
        serde_json::to_vec_pretty(&now)
            .map(Some)
            .map_err(|e| broken(path, &e.to_string()))
    })
    .map_err(|e| match e {
        UpdateError::Io(e) => ClaudeError::io(format!("raising {}", path.display()), e),
        UpdateError::Change(e) => e,
    })?;
    Ok(now)
}

/// Removes the data folder of the plugin `id` from `claude` (`$BOSUN_HOME/claude`), then its
/// label: the label goes only with what it describes (a folder that could not be removed
/// keeps it).
///
/// # Errors
/// The folder or the label could not be removed.
pub fn remove_data(claude: &Path, id: &str) -> Result<(), ClaudeError> {
    let data = claude.join("data").join(id);
    match std::fs::remove_dir_all(&data) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(ClaudeError::io(format!("removing {}", data.display()), e)),
    }
    let label = label_path(claude, id);
    match std::fs::remove_file(&label) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ClaudeError::io(format!("removing {}", label.display()), e)),
    }
}

fn parse(path: &Path, bytes: Option<&[u8]>) -> Result<DataLabel, ClaudeError> {
    match bytes {
        None => Ok(DataLabel::default()),
        Some(bytes) => serde_json::from_slice(bytes).map_err(|e| broken(path, &e.to_string())),
    }
}

fn broken(path: &Path, why: &str) -> ClaudeError {
    ClaudeError::Layout {
        message: format!(
            "the label of a plugin's data folder, {}, is damaged ({why}): until it is fixed its \
             plugin's words count as holding the most sensitive data; remove the plugin's data \
             folder and this file together to start it afresh",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plugin's label, the installs record and a plugin's secrets are not read through a
    /// link planted at their names: a file elsewhere is never taken as Bosun's own.
    #[test]
    fn state_files_are_not_read_through_a_link_planted_in_their_place() {
        let home = tempfile::tempdir().unwrap();
        let planted = home.path().join("planted.json");
        std::fs::write(&planted, "{}").unwrap();
        let plant = |path: &Path| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            bosun_fsio::testing::plant_link(path, &planted);
        };
        let label = label_path(home.path(), "kit@team");
        plant(&label);
        let error = read(&label).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(raise(&label, &DataLabel::default()).is_err());
        plant(&crate::install::Installed::path(home.path()));
        let error = crate::install::Installed::load(home.path()).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        plant(&crate::user_config::secrets_path(home.path(), "kit@team"));
        let error = crate::user_config::load_secrets(home.path(), "kit@team").unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read(&planted).unwrap(), b"{}");
    }

    #[test]
    fn a_label_only_rises_across_writers_and_goes_with_its_folder() {
        let home = tempfile::tempdir().unwrap();
        let path = label_path(home.path(), "kit@team");
        assert_eq!(read(&path).unwrap(), DataLabel::default());
        let secret = DataLabel {
            level: Classification::Restricted,
            untrusted: None,
        };
        let marked = DataLabel {
            level: Classification::Internal,
            untrusted: Some("the network (example.com)".into()),
        };
        assert_eq!(raise(&path, &secret).unwrap(), secret);
        // A lower session raises nothing and reads back what the folder may hold.
        assert_eq!(raise(&path, &DataLabel::default()).unwrap(), secret);
        let both = DataLabel {
            level: Classification::Restricted,
            untrusted: marked.untrusted.clone(),
        };
        assert_eq!(raise(&path, &marked).unwrap(), both);
        assert_eq!(read(&path).unwrap(), both);

        let data = home.path().join("data").join("kit@team");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("kept"), "PRIVATE").unwrap();
        remove_data(home.path(), "kit@team").unwrap();
        assert!(!data.exists());
        assert_eq!(read(&path).unwrap(), DataLabel::default());
    }

    #[test]
    fn a_damaged_label_is_an_error_that_names_it() {
        let home = tempfile::tempdir().unwrap();
        let path = label_path(home.path(), "kit@team");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\"level\": \"SECRET\"}").unwrap();
        let error = raise(&path, &DataLabel::default()).unwrap_err().to_string();
        assert!(
            error.contains("kit@team.json") && error.contains("damaged"),
            "{error}"
        );
        assert!(read(&path).is_err());
    }
}
