//! The installed Claude Code plugins, each checked against its record before anything of it is
//! used: a plugin whose files differ from what was reviewed is refused, with the files named.

use std::path::{Path, PathBuf};

use crate::ClaudeError;
use crate::install::{Installed, InstalledPlugin, claude_home};
use crate::layout::PluginLayout;
use crate::tree::Tree;

/// One plugin, intact and read.
#[derive(Debug, Clone)]
pub struct LoadedPlugin {
    /// Its record.
    pub record: InstalledPlugin,
    /// Its folder (`${CLAUDE_PLUGIN_ROOT}`).
    pub root: PathBuf,
    /// Its folder for data (`${CLAUDE_PLUGIN_DATA}`).
    pub data: PathBuf,
    /// Where the label of its data folder is kept ([`crate::data_label`]).
    pub label: PathBuf,
    /// What it holds.
    pub layout: PluginLayout,
    /// Its `userConfig` answers (secrets included), for its hooks' `${user_config.KEY}`: the
    /// host fills them in from the person's config and the plugin's secrets (none here).
    pub options: std::collections::BTreeMap<String, String>,
    /// Where its hooks may put what they are handed: the host judges it from the OS sandbox
    /// and the person's config (here, unjudged: `PUBLIC`).
    pub hook_sink: crate::hooks::HookSink,
}

impl LoadedPlugin {
    /// Its name: the namespace of its skills, commands, agents and servers.
    pub fn name(&self) -> &str {
        &self.record.name
    }
}

/// An installed plugin that is not loaded (changed since it was reviewed, or refused): kept by
/// name so that a face refuses to run what it names (`/plugin:command`) instead of sending the
/// words to the model as plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// Its id, `name@marketplace`.
    pub id: String,
    /// Its name (the namespace of its commands).
    pub name: String,
    /// The names of the commands its record lists under `commands/` (without `.md`).
    pub commands: Vec<String>,
    /// Why it is not loaded, and what to do.
    pub why: String,
}

/// Every installed plugin that may be used, and why the others may not.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The plugins, by id.
    pub plugins: Vec<LoadedPlugin>,
    /// Each refused plugin, with why and what to do.
    pub refused: Vec<String>,
    /// The installed plugins that are not loaded, by name.
    pub withheld: Vec<Withheld>,
}

impl Loaded {
    /// Reads `installed.json` and checks each plugin's files against it.
    pub fn load(home: &Path) -> Loaded {
        let mut loaded = Loaded::default();
        let installed = match Installed::load(home) {
            Ok(i) => i,
            Err(e) => {
                loaded.refused.push(e.to_string());
                return loaded;
            }
        };
        let mut names = std::collections::BTreeSet::new();
        for record in installed.plugins.into_values() {
            match load_one(home, &record) {
                Ok(plugin) => {
                    if !names.insert(plugin.record.name.clone()) {
                        loaded.refused.push(format!(
                            "the plugin `{}` is installed from two marketplaces: only the first is loaded; uninstall one",
                            record.id
                        ));
                        continue;
                    }
                    loaded.plugins.push(plugin);
                }
                Err(e) => {
                    let why = e.to_string();
                    loaded.withheld.push(Withheld {
                        id: record.id.clone(),
                        name: record.name.clone(),
                        commands: record
                            .files
                            .files
                            .keys()
                            .filter_map(|path| path.strip_prefix("commands/"))
                            .filter_map(|file| file.strip_suffix(".md"))
                            .filter(|stem| !stem.contains('/'))
                            .map(str::to_owned)
                            .collect(),
                        why: why.clone(),
                    });
                    loaded.refused.push(why);
                }
            }
        }
        loaded
    }

    /// Whether there are none and nothing was refused.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty() && self.refused.is_empty()
    }
}

/// Checks one plugin and reads it.
pub fn load_one(home: &Path, record: &InstalledPlugin) -> Result<LoadedPlugin, ClaudeError> {
    let root = Installed::dir_of(home, record);
    let tree = Tree::read(&root).map_err(|e| ClaudeError::Changed {
        plugin: record.id.clone(),
        drift: e.to_string(),
    })?;
    if tree.digest() != record.digest {
        return Err(ClaudeError::Changed {
            plugin: record.id.clone(),
            drift: record.files.drift(&tree).join(", "),
        });
    }
    let layout = PluginLayout::read(
        &root,
        &record.name,
        Some(&record.entry_fields),
        record.strict,
    )?;
    if !layout.refused.is_empty() {
        return Err(ClaudeError::Refused {
            plugin: record.id.clone(),
            why: layout.refused.join("; "),
        });
    }
    let data = claude_home(home).join("data").join(&record.id);
    Ok(LoadedPlugin {
        record: record.clone(),
        root,
        data,
        label: crate::data_label::label_path(&claude_home(home), &record.id),
        layout,
        options: std::collections::BTreeMap::new(),
        hook_sink: crate::hooks::HookSink::default(),
    })
}
