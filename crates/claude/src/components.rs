//! The parts of an installed plugin a run uses as text — its skills, commands and agents —
//! each named in the plugin's namespace and read only when its bytes are the bytes reviewed.
//!
//! [`crate::loaded`] checks a plugin's whole tree once per load; a file read later (a skill
//! loaded mid-run, a command expanded) is checked again here against the digest the install
//! record pinned for that path, so a file changed after the load is refused, not used. This
//! module reads and checks; what a skill, a command or an agent file means is its reader's
//! business (the host's).

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::ClaudeError;
use crate::loaded::LoadedPlugin;

/// The largest component file read (a skill, a command, an agent, a skill's resource).
pub const MAX_COMPONENT_BYTES: u64 = 256 * 1024;

/// One skill of a plugin: `skills/<name>/SKILL.md` and the files beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSkill {
    /// `plugin:skill`.
    pub qualified: String,
    /// The skill's own name (its folder's).
    pub name: String,
    /// Its folder, relative to the plugin root (`/`-joined).
    pub dir: String,
    /// The reviewed files beside `SKILL.md`, relative to its folder, in path order.
    pub resources: Vec<String>,
}

impl PluginSkill {
    /// `SKILL.md`, relative to the plugin root.
    pub fn skill_file(&self) -> String {
        format!("{}/SKILL.md", self.dir)
    }
}

/// One command or agent of a plugin: a Markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginFile {
    /// `plugin:name`.
    pub qualified: String,
    /// Its own name (the file's, without `.md`).
    pub name: String,
    /// The file, relative to the plugin root.
    pub path: String,
}

/// `plugin:name`, the namespace Claude Code gives a plugin's skills, commands and agents.
pub fn qualified(plugin: &str, name: &str) -> String {
    format!("{plugin}:{name}")
}

impl LoadedPlugin {
    /// `path` under the plugin root, relative and `/`-joined, if it is inside it.
    fn relative(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
        Some(parts?.join("/"))
    }

    /// Its skills, in name order.
    pub fn skills(&self) -> Vec<PluginSkill> {
        self.layout
            .skills
            .iter()
            .filter_map(|(name, dir)| {
                let dir = self.relative(dir)?;
                let prefix = format!("{dir}/");
                let resources = self
                    .record
                    .files
                    .files
                    .keys()
                    .filter_map(|path| path.strip_prefix(&prefix))
                    .filter(|rest| *rest != "SKILL.md")
                    .map(str::to_owned)
                    .collect();
                Some(PluginSkill {
                    qualified: qualified(self.name(), name),
                    name: name.clone(),
                    dir,
                    resources,
                })
            })
            .collect()
    }

    /// Its commands (`commands/*.md` and the manifest's), in name order.
    pub fn commands(&self) -> Vec<PluginFile> {
        self.files_of(&self.layout.commands)
    }

    /// Its agents (`agents/*.md` and the manifest's), in name order.
    pub fn agents(&self) -> Vec<PluginFile> {
        self.files_of(&self.layout.agents)
    }

    fn files_of(
        &self,
        files: &std::collections::BTreeMap<String, std::path::PathBuf>,
    ) -> Vec<PluginFile> {
        files
            .iter()
            .filter_map(|(name, path)| {
                Some(PluginFile {
                    qualified: qualified(self.name(), name),
                    name: name.clone(),
                    path: self.relative(path)?,
                })
            })
            .collect()
    }

    /// The text of `path` (relative to the plugin root), read only if its bytes hash to what
    /// the install record pinned for that path: a file added or changed since the person
    /// reviewed the plugin is refused. Not followed through a symbolic link, at most
    /// [`MAX_COMPONENT_BYTES`], UTF-8.
    ///
    /// # Errors
    /// [`ClaudeError::Changed`] for a file that is not what was reviewed; [`ClaudeError::Io`]
    /// or [`ClaudeError::Layout`] for one that cannot be read.
    pub fn read_reviewed(&self, path: &str) -> Result<String, ClaudeError> {
        let changed = |drift: String| ClaudeError::Changed {
            plugin: self.record.id.clone(),
            drift,
        };
        let Some(pinned) = self.record.files.files.get(path) else {
            return Err(changed(format!("{path} was not part of what was reviewed")));
        };
        let full = self.root.join(path);
        let bytes = bosun_fsio::read_regular(&full, MAX_COMPONENT_BYTES).map_err(|e| match e {
            bosun_fsio::OpenError::Io { source, .. } => {
                ClaudeError::io(format!("reading {}", full.display()), source)
            }
            refused => ClaudeError::Layout {
                message: format!(
                    "{path} of the plugin `{}` is not a regular file of at most {} KiB ({})",
                    self.record.id,
                    MAX_COMPONENT_BYTES >> 10,
                    match refused.found() {
                        Some(found) => found.to_string(),
                        None => "larger".to_owned(),
                    }
                ),
            },
        })?;
        if hex::encode(Sha256::digest(&bytes)) != pinned.sha256 {
            return Err(changed(format!("changed {path}")));
        }
        String::from_utf8(bytes).map_err(|_| ClaudeError::Layout {
            message: format!(
                "{path} of the plugin `{}` is not UTF-8 text",
                self.record.id
            ),
        })
    }
}
