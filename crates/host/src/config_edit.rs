//! Edits of the user's `$BOSUN_HOME/config.toml`: enabling, disabling and forgetting a plugin,
//! adding a model, trusting a workspace. Each edit keeps the person's comments and layout
//! (`toml_edit`), and the file is replaced whole (`write_atomic`) or not at all. An edit holds
//! the file's lock ([`crate::state_lock`]) from the moment it reads the file until it is saved
//! or dropped, so another Bosun editing the config at the same moment waits instead of having
//! its change dropped: no edit may be held open across a question to the person.
//!
//! A file that is not TOML is refused before anything is changed, with where it is broken; an
//! edit that meets a key of the wrong shape (`plugins = 3`) is refused the same way. This module
//! never validates the configuration's meaning: [`crate::config`] does that when it is loaded.
//!
//! ```no_run
//! # fn main() -> Result<(), bosun_host::config_edit::ConfigEditError> {
//! let home = bosun_host::config::bosun_home().expect("a home");
//! let mut edit = bosun_host::config_edit::UserConfigEdit::open(&home)?;
//! edit.disable_plugin("lint")?;
//! edit.save()?;
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};

use bosun_models::ModelConfig;
use toml_edit::{DocumentMut, Item, Table};

/// Why the user's config could not be edited. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ConfigEditError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error(
        "{path}:{line}:{column}: {message}; fix the file (`bosun config check` shows what is wrong): nothing was changed"
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser says.
        message: String,
    },
    /// A key the edit needs holds something of another shape.
    #[error("`{key}` in {path} is not {expected}: {fix}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// The dotted key.
        key: String,
        /// What it should be (`a table`, `a string`).
        expected: &'static str,
        /// What to do.
        fix: String,
    },
    /// The entry the edit changes is not in the file.
    #[error("no [{key}] in {path}")]
    Missing {
        /// The file.
        path: PathBuf,
        /// The dotted key.
        key: String,
    },
    /// A new config would replace the person's own.
    #[error(
        "{path} already exists: `bosun config check` validates it; pass --force to replace it with the starter config"
    )]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// An edit to take back was changed by another process since: it is left as it is.
    #[error(
        "`{key}` in {path} was changed by another Bosun process after this one wrote it, so it was not taken back: that change is kept; check the entry and edit it (or `bosun plugins disable`) if it should not stay"
    )]
    ChangedMeanwhile {
        /// The file.
        path: PathBuf,
        /// The dotted key.
        key: String,
    },
    /// The new file could not be written (the old one is unchanged).
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// What enabling a plugin changed, to take back when a later step of the same operation fails
/// (enabling a plugin that then cannot be loaded, or whose trust is declined, changes nothing):
/// the `[plugins.NAME]` entry before the edit and as the edit left it. Taken back under the
/// file's lock on the file as it is then — an inverse edit, not the old bytes — so a change
/// another Bosun made to the config meanwhile is kept; if that change was to this very entry,
/// nothing is taken back and [`ConfigEditError::ChangedMeanwhile`] says so.
#[derive(Debug)]
#[must_use = "dropping it keeps the edit; `restore` takes it back"]
pub struct ConfigBefore {
    path: PathBuf,
    name: String,
    /// The entry before the edit (`None`: there was none).
    before: Option<Item>,
    /// The entry as the edit saved it.
    after: Option<Item>,
    /// Whether there was a config file before the edit.
    existed: bool,
}

impl ConfigBefore {
    /// Takes the edit back on the file as it is now: the entry as it was before (or none), and
    /// no file when there was none and nothing else was written since.
    ///
    /// # Errors
    /// The entry was changed meanwhile ([`ConfigEditError::ChangedMeanwhile`], the file left
    /// as it is); the file cannot be locked, read, parsed or written.
    pub fn restore(self) -> Result<(), ConfigEditError> {
        let held = lock(&self.path)?;
        let mut edit = UserConfigEdit::open_locked(self.path.clone(), held)?;
        if semantic(plugin_entry(&edit.doc, &self.name)) != semantic(self.after.as_ref()) {
            return Err(ConfigEditError::ChangedMeanwhile {
                path: self.path,
                key: format!("plugins.{}", self.name),
            });
        }
        if let Some(plugins) = edit
            .doc
            .get_mut("plugins")
            .and_then(Item::as_table_like_mut)
        {
            match self.before {
                Some(entry) => {
                    plugins.insert(&self.name, entry);
                }
                None => {
                    plugins.remove(&self.name);
                }
            }
        }
        if !self.existed && edit.doc.to_string().trim().is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ConfigEditError::Write {
                    path: self.path,
                    source: e,
                }),
                _ => Ok(()),
            };
        }
        edit.save()
    }
}

/// `[plugins.NAME]` in `doc`.
fn plugin_entry<'a>(doc: &'a DocumentMut, name: &str) -> Option<&'a Item> {
    doc.get("plugins").and_then(|p| p.get(name))
}

/// What an entry means, whatever its layout or comments: two entries are the same change when
/// these are equal.
fn semantic(entry: Option<&Item>) -> Option<toml::Value> {
    let mut doc = DocumentMut::new();
    doc["entry"] = entry?.clone();
    toml::from_str::<toml::Table>(&doc.to_string())
        .ok()?
        .remove("entry")
}

/// Takes the lock of the config file `path`.
pub(crate) fn lock(path: &Path) -> Result<crate::state_lock::StateLock, ConfigEditError> {
    crate::state_lock::lock(path).map_err(|source| ConfigEditError::Write {
        path: path.to_owned(),
        source,
    })
}

/// The user's config open for editing. Nothing reaches the disk before [`UserConfigEdit::save`];
/// until then (or until it is dropped) it holds the file's lock.
#[derive(Debug)]
pub struct UserConfigEdit {
    path: PathBuf,
    doc: DocumentMut,
    _lock: crate::state_lock::StateLock,
}

impl UserConfigEdit {
    /// Takes the file's lock and reads `home/config.toml` (an absent file is an empty one).
    ///
    /// # Errors
    /// Another Bosun held the lock too long; the file cannot be read or is not TOML.
    pub fn open(home: &Path) -> Result<Self, ConfigEditError> {
        let path = home.join("config.toml");
        let held = lock(&path)?;
        Self::open_locked(path, held)
    }

    /// Reads the config at `path`, whose lock `held` is.
    pub(crate) fn open_locked(
        path: PathBuf,
        held: crate::state_lock::StateLock,
    ) -> Result<Self, ConfigEditError> {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(ConfigEditError::Read { path, source }),
        };
        let doc = text.parse::<DocumentMut>().map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| crate::config::line_col(&text, s.start))
                .unwrap_or((1, 1));
            ConfigEditError::Parse {
                path: path.clone(),
                line,
                column,
                message: e.message().trim().to_owned(),
            }
        })?;
        Ok(Self {
            path,
            doc,
            _lock: held,
        })
    }

    /// The file this edit writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text the file will hold.
    pub fn text(&self) -> String {
        self.doc.to_string()
    }

    /// Writes the edited file whole, in place of the old one.
    ///
    /// # Errors
    /// The file cannot be written; the old one is then unchanged.
    pub fn save(self) -> Result<(), ConfigEditError> {
        bosun_plugins::write_atomic(&self.path, self.doc.to_string().as_bytes()).map_err(|source| {
            ConfigEditError::Write {
                path: self.path,
                source,
            }
        })
    }

    fn shape(&self, key: String, expected: &'static str, fix: String) -> ConfigEditError {
        ConfigEditError::Shape {
            path: self.path.clone(),
            key,
            expected,
            fix,
        }
    }

    /// The top-level table `key`, created (implicit, so no empty header is written) if absent.
    fn section(&mut self, key: &str) -> Result<&mut Table, ConfigEditError> {
        let path = self.path.clone();
        match self
            .doc
            .entry(key)
            .or_insert(toml_edit::table())
            .as_table_mut()
        {
            Some(table) => {
                table.set_implicit(true);
                Ok(table)
            }
            None => Err(ConfigEditError::Shape {
                path,
                key: key.to_owned(),
                expected: "a table",
                fix: format!("write it as [{key}.<name>] entries"),
            }),
        }
    }

    /// Sets `[plugins.NAME] enabled = true`, with `path` when one is given. Without one the path
    /// already configured is kept (a Chock module file, a directory elsewhere), and only a plugin
    /// with none gets `NAME` (its directory under `$BOSUN_HOME/plugins`). Returns the path the
    /// entry holds.
    ///
    /// # Errors
    /// `plugins`, `plugins.NAME` or its `path` has another shape.
    pub fn enable_plugin(
        &mut self,
        name: &str,
        path: Option<&Path>,
    ) -> Result<PathBuf, ConfigEditError> {
        let file = self.path.clone();
        let shape = |key: String, expected, fix: &str| ConfigEditError::Shape {
            path: file.clone(),
            key,
            expected,
            fix: fix.to_owned(),
        };
        let plugins = self.section("plugins")?;
        let entry = plugins.entry(name).or_insert(toml_edit::table());
        let Some(entry) = entry.as_table_mut() else {
            return Err(shape(
                format!("plugins.{name}"),
                "a table",
                "write it as a [plugins.NAME] table",
            ));
        };
        let configured = match (path, entry.get("path")) {
            (Some(path), _) => {
                entry["path"] = toml_edit::value(path.display().to_string());
                path.to_owned()
            }
            (None, Some(configured)) => match configured.as_str() {
                Some(configured) => PathBuf::from(configured),
                None => {
                    return Err(shape(
                        format!("plugins.{name}.path"),
                        "a string",
                        "write the plugin's directory or module file as a string",
                    ));
                }
            },
            (None, None) => {
                entry["path"] = toml_edit::value(name);
                PathBuf::from(name)
            }
        };
        entry["enabled"] = toml_edit::value(true);
        Ok(configured)
    }

    /// [`UserConfigEdit::enable_plugin`], with what takes it back once saved
    /// ([`ConfigBefore::restore`]).
    ///
    /// # Errors
    /// As [`UserConfigEdit::enable_plugin`].
    pub fn enable_plugin_undoably(
        &mut self,
        name: &str,
        path: Option<&Path>,
    ) -> Result<(PathBuf, ConfigBefore), ConfigEditError> {
        let before = plugin_entry(&self.doc, name).cloned();
        let existed = self.path.exists();
        let shown = self.enable_plugin(name, path)?;
        let undo = ConfigBefore {
            path: self.path.clone(),
            name: name.to_owned(),
            before,
            after: plugin_entry(&self.doc, name).cloned(),
            existed,
        };
        Ok((shown, undo))
    }

    /// Sets `[plugins.NAME] enabled = false`.
    ///
    /// # Errors
    /// There is no such entry.
    pub fn disable_plugin(&mut self, name: &str) -> Result<(), ConfigEditError> {
        let Some(entry) = self
            .doc
            .get_mut("plugins")
            .and_then(|p| p.get_mut(name))
            .and_then(Item::as_table_mut)
        else {
            return Err(ConfigEditError::Missing {
                path: self.path.clone(),
                key: format!("plugins.{name}"),
            });
        };
        entry["enabled"] = toml_edit::value(false);
        Ok(())
    }

    /// Removes `[plugins.NAME]`; whether it was there.
    pub fn remove_plugin(&mut self, name: &str) -> bool {
        self.doc
            .get_mut("plugins")
            .and_then(Item::as_table_like_mut)
            .and_then(|table| table.remove(name))
            .is_some()
    }

    /// Sets `[claude.plugins."<id>"] config` to `answers` (a Claude Code plugin's `userConfig`
    /// answers that are not secrets), replacing the answers kept before; other keys of the
    /// entry stay.
    ///
    /// # Errors
    /// `claude`, `claude.plugins` or the plugin's entry has another shape.
    pub fn set_claude_answers(
        &mut self,
        id: &str,
        answers: &std::collections::BTreeMap<String, toml_edit::Value>,
    ) -> Result<(), ConfigEditError> {
        let fix = || format!("write it as [claude.plugins.\"{id}\"] config = {{ KEY = VALUE }}");
        let claude = self.section("claude")?;
        let plugins = claude
            .entry("plugins")
            .or_insert(toml_edit::table())
            .as_table_mut();
        let Some(plugins) = plugins else {
            return Err(self.shape("claude.plugins".to_owned(), "a table", fix()));
        };
        plugins.set_implicit(true);
        let entry = plugins
            .entry(id)
            .or_insert(toml_edit::table())
            .as_table_mut();
        let Some(entry) = entry else {
            return Err(self.shape(format!("claude.plugins.\"{id}\""), "a table", fix()));
        };
        let mut inline = toml_edit::InlineTable::new();
        for (key, value) in answers {
            inline.insert(key, value.clone());
        }
        if inline.is_empty() {
            entry.remove("config");
        } else {
            entry["config"] = toml_edit::value(inline);
        }
        Ok(())
    }

    /// Sets `[registries.NAME] keys` to `keys`: the root keys a person confirmed for a signed
    /// registry (trust on first use).
    ///
    /// # Errors
    /// There is no `[registries.NAME]` table.
    pub fn pin_registry_keys(
        &mut self,
        name: &str,
        keys: &[String],
    ) -> Result<(), ConfigEditError> {
        let Some(entry) = self
            .doc
            .get_mut("registries")
            .and_then(|p| p.get_mut(name))
            .and_then(Item::as_table_mut)
        else {
            return Err(ConfigEditError::Missing {
                path: self.path.clone(),
                key: format!("registries.{name}"),
            });
        };
        let mut array = toml_edit::Array::new();
        for key in keys {
            array.push(key.as_str());
        }
        entry["keys"] = toml_edit::value(array);
        Ok(())
    }

    /// Adds (or replaces) `[models.NAME]` with `entry`; with `default`, also
    /// `default_model = "NAME"`.
    ///
    /// # Errors
    /// `models` has another shape.
    pub fn add_model(
        &mut self,
        name: &str,
        entry: &ModelConfig,
        default: bool,
    ) -> Result<(), ConfigEditError> {
        let mut table = toml_edit::Table::new();
        table["provider"] = toml_edit::value(entry.provider.to_string());
        table["model"] = toml_edit::value(entry.model.clone());
        if let Some(url) = &entry.base_url {
            table["base_url"] = toml_edit::value(url.clone());
        }
        if let Some(var) = &entry.api_key_env {
            table["api_key_env"] = toml_edit::value(var.clone());
        }
        let numbers = [
            ("context_window", entry.context_window),
            ("max_output_tokens", entry.max_output_tokens.map(u64::from)),
            ("read_timeout_secs", entry.read_timeout_secs),
        ];
        for (key, number) in numbers {
            if let Some(number) = number.and_then(|n| i64::try_from(n).ok()) {
                table[key] = toml_edit::value(number);
            }
        }
        if let Some(images) = entry.images {
            table["images"] = toml_edit::value(images);
        }
        self.section("models")?.insert(name, Item::Table(table));
        if default {
            // A top-level key: toml_edit writes it with the others, before the first table.
            self.doc.insert("default_model", toml_edit::value(name));
        }
        Ok(())
    }

    /// Adds `workspace` (a canonical path) to `trusted_workspaces` unless it is there already;
    /// whether it was added.
    ///
    /// # Errors
    /// `trusted_workspaces` is not an array.
    pub fn trust_workspace(&mut self, workspace: &Path) -> Result<bool, ConfigEditError> {
        let shown = workspace.display().to_string();
        let item = self
            .doc
            .entry("trusted_workspaces")
            .or_insert(toml_edit::value(toml_edit::Array::new()));
        let Some(list) = item.as_array_mut() else {
            return Err(self.shape(
                "trusted_workspaces".to_owned(),
                "an array",
                "write it as a list of paths: trusted_workspaces = [\"/path\"]".to_owned(),
            ));
        };
        if list.iter().any(|v| v.as_str() == Some(shown.as_str())) {
            return Ok(false);
        }
        list.push(shown);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_models::ProviderKind;

    fn home_with(text: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), text).unwrap();
        home
    }

    fn read(home: &tempfile::TempDir) -> String {
        std::fs::read_to_string(home.path().join("config.toml")).unwrap()
    }

    #[test]
    fn enabling_a_plugin_keeps_comments_and_the_configured_path() {
        let home = home_with(
            "# mine\nmode = \"read-only\" # keep\n\n[plugins.lint]\npath = \"/opt/lint.wasm\"\nenabled = false\n",
        );
        let mut edit = UserConfigEdit::open(home.path()).unwrap();
        assert_eq!(
            edit.enable_plugin("lint", None).unwrap(),
            Path::new("/opt/lint.wasm")
        );
        assert_eq!(edit.enable_plugin("fmt", None).unwrap(), Path::new("fmt"));
        edit.save().unwrap();
        let after = read(&home);
        assert!(
            after.starts_with("# mine\nmode = \"read-only\" # keep\n"),
            "{after}"
        );
        let config: crate::Config = toml::from_str(&after).unwrap();
        assert!(config.plugins["lint"].enabled, "{after}");
        assert_eq!(config.plugins["lint"].path, Path::new("/opt/lint.wasm"));
        assert_eq!(config.plugins["fmt"].path, Path::new("fmt"));
        assert!(!after.contains("[plugins]\n"), "no empty header: {after}");
    }

    #[test]
    fn a_broken_file_is_refused_and_left_as_it_is() {
        let broken = "mode = \"read-only\"\n[plugins\nlint = 1\n";
        let home = home_with(broken);
        let err = UserConfigEdit::open(home.path()).unwrap_err();
        assert!(
            matches!(err, ConfigEditError::Parse { line: 2, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("nothing was changed"), "{err}");
        assert_eq!(read(&home), broken);
    }

    #[test]
    fn a_key_of_the_wrong_shape_is_refused_before_anything_is_written() {
        let text = "plugins = 3\n";
        let home = home_with(text);
        let mut edit = UserConfigEdit::open(home.path()).unwrap();
        let err = edit.enable_plugin("lint", None).unwrap_err();
        assert!(
            matches!(&err, ConfigEditError::Shape { key, .. } if key == "plugins"),
            "{err:?}"
        );
        drop(edit);
        assert_eq!(read(&home), text);
        let text = "[plugins.lint]\npath = 7\n";
        let home = home_with(text);
        let mut edit = UserConfigEdit::open(home.path()).unwrap();
        let err = edit.enable_plugin("lint", None).unwrap_err();
        assert!(err.to_string().contains("plugins.lint.path"), "{err}");
    }

    #[test]
    fn disabling_needs_the_entry_and_removing_says_whether_it_was_there() {
        let home = home_with("[plugins.lint]\npath = \"lint\"\n");
        let mut edit = UserConfigEdit::open(home.path()).unwrap();
        assert!(matches!(
            edit.disable_plugin("other"),
            Err(ConfigEditError::Missing { .. })
        ));
        edit.disable_plugin("lint").unwrap();
        assert!(edit.text().contains("enabled = false"), "{}", edit.text());
        assert!(edit.remove_plugin("lint"));
        assert!(!edit.remove_plugin("lint"));
    }

    #[test]
    fn a_taken_back_enable_leaves_the_entry_before_or_none() {
        // No file before: none after.
        let home = tempfile::tempdir().unwrap();
        let mut edit = UserConfigEdit::open(home.path()).unwrap();
        let (_, before) = edit.enable_plugin_undoably("lint", None).unwrap();
        edit.save().unwrap();
        assert!(home.path().join("config.toml").exists());
        before.restore().unwrap();
        assert!(!home.path().join("config.toml").exists());

        // An entry before: the same entry after, comments and all.
        let mine = "# x\n[plugins.lint]\npath = \"elsewhere\" # mine\nenabled = false\n";
        let home = home_with(mine);
        let mut edit = UserConfigEdit::open(home.path()).unwrap();
        let (_, before) = edit.enable_plugin_undoably("lint", None).unwrap();
        edit.save().unwrap();
        assert!(read(&home).contains("enabled = true"));
        before.restore().unwrap();
        let after: toml::Table = toml::from_str(&read(&home)).unwrap();
        assert_eq!(after, toml::from_str::<toml::Table>(mine).unwrap());
    }

    /// A change another process made between the enable and its taking back is kept: the
    /// inverse edit is replayed on the file as it is, not the old bytes put back.
    #[test]
    fn taking_back_an_enable_keeps_another_change_made_since() {
        let home = home_with("# x\n");
        let mut edit = UserConfigEdit::open(home.path()).unwrap();
        let (_, before) = edit.enable_plugin_undoably("lint", None).unwrap();
        edit.save().unwrap();
        let mut other = UserConfigEdit::open(home.path()).unwrap();
        other.trust_workspace(Path::new("/work/other")).unwrap();
        other.save().unwrap();
        before.restore().unwrap();
        let after = read(&home);
        assert!(after.contains("# x\n"), "{after}");
        assert!(after.contains("\"/work/other\""), "{after}");
        assert!(!after.contains("lint"), "{after}");

        // The entry itself changed since: left as the other process left it, and said so.
        let mut edit = UserConfigEdit::open(home.path()).unwrap();
        let (_, before) = edit.enable_plugin_undoably("lint", None).unwrap();
        edit.save().unwrap();
        let mut other = UserConfigEdit::open(home.path()).unwrap();
        other.disable_plugin("lint").unwrap();
        other.save().unwrap();
        let changed = read(&home);
        let error = before.restore().unwrap_err();
        assert!(
            matches!(error, ConfigEditError::ChangedMeanwhile { .. }),
            "{error:?}"
        );
        assert_eq!(read(&home), changed);
    }

    #[test]
    fn a_model_and_a_trusted_workspace_are_added_once() {
        let home =
            home_with("# mine\n[[policy.rules]]\naction = \"fs.write\"\ndecision = \"deny\"\n");
        let mut edit = UserConfigEdit::open(home.path()).unwrap();
        let entry = ModelConfig {
            provider: ProviderKind::OpenaiChat,
            base_url: Some("http://127.0.0.1:11434/v1".into()),
            model: "qwen3:8b".into(),
            api_key_env: None,
            context_window: Some(32_000),
            max_output_tokens: None,
            read_timeout_secs: None,
            images: None,
            classification: None,
        };
        edit.add_model("ollama", &entry, true).unwrap();
        assert!(edit.trust_workspace(Path::new("/work/p")).unwrap());
        assert!(!edit.trust_workspace(Path::new("/work/p")).unwrap());
        edit.save().unwrap();
        let after = read(&home);
        let config: crate::Config = toml::from_str(&after).unwrap();
        assert_eq!(config.models["ollama"], entry, "{after}");
        assert_eq!(config.default_model.as_deref(), Some("ollama"));
        assert_eq!(config.trusted_workspaces, vec![PathBuf::from("/work/p")]);
        assert_eq!(config.policy.rules.len(), 1, "{after}");
    }

    /// An open edit holds the file's lock until saved: another edit started meanwhile reads
    /// the file only after the save, so both changes are kept; eight at once all land.
    #[test]
    fn concurrent_edits_keep_every_change() {
        let home = home_with("# mine\n");
        let edit = UserConfigEdit::open(home.path()).unwrap();
        let locked = crate::state_lock::lock_within(
            &home.path().join("config.toml"),
            std::time::Duration::ZERO,
        );
        assert!(locked.is_err(), "an open edit does not hold the lock");
        drop(edit);

        let writers = 8;
        let start = std::sync::Arc::new(std::sync::Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let home = home.path().to_owned();
                let start = std::sync::Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    let mut edit = UserConfigEdit::open(&home).unwrap();
                    edit.trust_workspace(Path::new(&format!("/work/p{i}")))
                        .unwrap();
                    edit.save().unwrap();
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let after = read(&home);
        assert!(after.contains("# mine\n"), "{after}");
        for i in 0..writers {
            assert!(
                after.contains(&format!("\"/work/p{i}\"")),
                "lost p{i}: {after}"
            );
        }
    }
}
