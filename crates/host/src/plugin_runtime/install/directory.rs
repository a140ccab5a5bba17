//! Installing a plugin a person names (`bosun plugins install PATH`): what the path holds (a
//! plugin directory, a `.wasm` component, a built Rust crate) and its copy into the user's
//! plugin directory. The copy is staged beside its place and moved in whole, so a failure
//! leaves nothing half-written under the plugin's name.
//!
//! The bounds are the loader's: no more files or nesting than a plugin's source snapshot may
//! hold ([`MAX_SOURCE_FILES`], [`MAX_SOURCE_DEPTH`]), no more bytes than the largest component
//! the catalog loads ([`MAX_COMPONENT_BYTES`]). The tools a model installs with read the same
//! snapshot under the same bounds. Installing trusts and enables nothing: that is the caller's
//! next step, and [`InstalledDir::remove`] takes the copy back when it is declined.

use std::path::{Path, PathBuf};

use bosun_plugins::catalog::MAX_COMPONENT_BYTES;
use bosun_plugins::discovery::install_staging_dir;
use bosun_plugins::source::{MAX_SOURCE_DEPTH, MAX_SOURCE_FILES};

/// Most files a plugin directory may hold to be installed: as many as the loader reads.
pub const MAX_INSTALL_FILES: usize = MAX_SOURCE_FILES;
/// Most bytes a plugin directory may hold to be installed: the largest component the loader
/// reads (more than a JavaScript plugin's snapshot may hold in all).
pub const MAX_INSTALL_BYTES: u64 = MAX_COMPONENT_BYTES;
/// Deepest nesting below the plugin directory.
pub const MAX_INSTALL_DEPTH: usize = MAX_SOURCE_DEPTH;

/// Entries never copied: version control, build output, package caches.
const SKIPPED: [&str; 3] = [".git", "target", "node_modules"];

/// Why a plugin could not be installed. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The path cannot be resolved.
    #[error("{} cannot be read", path.display())]
    Unreadable {
        /// What was named.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file that is no component.
    #[error(
        "{} is a file but not a .wasm component: give a plugin's directory or its .wasm",
        path.display()
    )]
    NotAComponent {
        /// The file.
        path: PathBuf,
    },
    /// A Rust crate whose component is not built.
    #[error(
        "{} is a Rust crate that is not built yet: (cd {} && cargo build --target wasm32-wasip2 --release), then install again",
        path.display(),
        path.display()
    )]
    NotBuilt {
        /// The crate.
        path: PathBuf,
    },
    /// A directory that holds no plugin.
    #[error(
        "{} holds no plugin: a plugin directory has plugin.wasm, plugin.json (Forge) or mod.ts (Triggerfish), or is a Rust crate",
        path.display()
    )]
    NoPlugin {
        /// The directory.
        path: PathBuf,
    },
    /// A plugin of that name is installed.
    #[error(
        "{} exists: a plugin `{name}` is installed already (choose another --name, or remove that directory)",
        target.display()
    )]
    Exists {
        /// The plugin's directory.
        target: PathBuf,
        /// Its name.
        name: String,
    },
    /// Over [`MAX_INSTALL_FILES`].
    #[error("{} holds more than {MAX_INSTALL_FILES} files: that is not a plugin", dir.display())]
    TooManyFiles {
        /// The plugin directory.
        dir: PathBuf,
    },
    /// Over [`MAX_INSTALL_BYTES`].
    #[error("{} holds more than {} MiB: that is not a plugin", dir.display(), MAX_INSTALL_BYTES >> 20)]
    TooLarge {
        /// The plugin directory.
        dir: PathBuf,
    },
    /// Nested deeper than [`MAX_INSTALL_DEPTH`].
    #[error("{} is nested more than {MAX_INSTALL_DEPTH} directories deep: that is not a plugin", path.display())]
    TooDeep {
        /// The directory too deep.
        path: PathBuf,
    },
    /// A symbolic link inside the plugin.
    #[error(
        "{} is a symbolic link: a plugin is installed as plain files (copy what it points to)",
        path.display()
    )]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// Reading, copying or moving failed.
    #[error("{doing}")]
    Io {
        /// What was being done, with the path.
        doing: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn io(doing: impl FnOnce() -> String) -> impl FnOnce(std::io::Error) -> InstallError {
    move |source| InstallError::Io {
        doing: doing(),
        source,
    }
}

/// What a path given to install holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallSource {
    /// A directory Bosun loads as it is.
    Dir(PathBuf),
    /// A component to install as `plugin.wasm`.
    Wasm(PathBuf),
}

impl InstallSource {
    /// What `path` holds, and the name it suggests: a `.wasm` file (named after its stem), a
    /// plugin directory (after the directory), or a Rust crate whose component is built in
    /// `cargo_target_dir` (else the crate's `target`), named after the crate.
    pub fn of(
        path: &Path,
        cargo_target_dir: Option<&Path>,
    ) -> Result<(Self, String), InstallError> {
        let path = path
            .canonicalize()
            .map_err(|source| InstallError::Unreadable {
                path: path.to_owned(),
                source,
            })?;
        if path.is_file() {
            if path.extension().is_some_and(|e| e == "wasm") {
                let stem = path
                    .file_stem()
                    .map(|n| n.to_string_lossy().replace('_', "-"))
                    .unwrap_or_default();
                return Ok((Self::Wasm(path), stem));
            }
            return Err(InstallError::NotAComponent { path });
        }
        if ["plugin.wasm", "plugin.json", "mod.ts"]
            .iter()
            .any(|f| path.join(f).is_file())
        {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok((Self::Dir(path), name));
        }
        if let Some(name) = crate_name(&path) {
            let target = cargo_target_dir.map_or_else(|| path.join("target"), Path::to_owned);
            let wasm = target
                .join("wasm32-wasip2/release")
                .join(format!("{}.wasm", name.replace('-', "_")));
            if !wasm.is_file() {
                return Err(InstallError::NotBuilt { path });
            }
            return Ok((Self::Wasm(wasm), name));
        }
        Err(InstallError::NoPlugin { path })
    }

    /// Copies the plugin into `<plugins>/<name>`, which must not exist: staged in
    /// `plugins` and moved into place whole, so nothing half-copied is ever under `name`.
    pub fn install_into(&self, plugins: &Path, name: &str) -> Result<InstalledDir, InstallError> {
        let target = plugins.join(name);
        if target.symlink_metadata().is_ok() {
            return Err(InstallError::Exists {
                target,
                name: name.to_owned(),
            });
        }
        std::fs::create_dir_all(plugins)
            .map_err(io(|| format!("creating {}", plugins.display())))?;
        let staging = install_staging_dir(plugins, name, std::process::id());
        let _ = std::fs::remove_dir_all(&staging);
        let copied = match self {
            Self::Dir(dir) => copy_plugin_dir(dir, &staging),
            Self::Wasm(wasm) => std::fs::create_dir(&staging)
                .and_then(|()| std::fs::copy(wasm, staging.join("plugin.wasm")).map(|_| ()))
                .map_err(io(|| format!("copying {}", wasm.display()))),
        };
        let moved = copied.and_then(|()| {
            std::fs::rename(&staging, &target)
                .map_err(io(|| format!("moving it to {}", target.display())))
        });
        if let Err(e) = moved {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
        Ok(InstalledDir { path: target })
    }
}

impl InstallSource {
    /// Replaces the plugin installed as `<plugins>/<name>` with this one (a rebuilt plugin):
    /// the new copy is staged whole first, the old directory is moved aside, the new one moved
    /// in; if that fails, the old one is put back. The old one is kept aside until the caller
    /// [`Replaced::commit`]s (or put back by [`Replaced::rollback`], when enabling the new one
    /// fails or is declined). Installs as [`InstallSource::install_into`] when nothing is there.
    pub fn replace_into(&self, plugins: &Path, name: &str) -> Result<Replaced, InstallError> {
        let target = plugins.join(name);
        if target.symlink_metadata().is_err() {
            return Ok(Replaced {
                installed: self.install_into(plugins, name)?,
                aside: None,
            });
        }
        if !target.is_dir() || target.is_symlink() {
            return Err(InstallError::Exists {
                target,
                name: name.to_owned(),
            });
        }
        let aside = plugins.join(format!(".replaced-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&aside);
        // Staged under a temporary name so the old plugin is untouched until the copy is whole.
        let staged_name = format!(".new-{name}-{}", std::process::id());
        let _ = std::fs::remove_dir_all(plugins.join(&staged_name));
        let staged = self.install_into(plugins, &staged_name)?;
        if let Err(e) = std::fs::rename(&target, &aside) {
            staged.remove();
            return Err(io(|| format!("moving {} aside", target.display()))(e));
        }
        if let Err(e) = std::fs::rename(&staged.path, &target) {
            let _ = std::fs::rename(&aside, &target);
            staged.remove();
            return Err(io(|| {
                format!("moving the new copy to {}", target.display())
            })(e));
        }
        Ok(Replaced {
            installed: InstalledDir { path: target },
            aside: Some(aside),
        })
    }
}

/// A plugin put in place of an installed one, the old one kept aside until committed.
#[derive(Debug)]
pub struct Replaced {
    /// The new copy, in place.
    pub installed: InstalledDir,
    aside: Option<PathBuf>,
}

impl Replaced {
    /// Keeps the new plugin: the old one is deleted.
    pub fn commit(self) {
        if let Some(aside) = &self.aside {
            let _ = std::fs::remove_dir_all(aside);
        }
    }

    /// Puts the old plugin back (or, when there was none, removes the new copy).
    pub fn rollback(self) {
        let target = self.installed.path.clone();
        match &self.aside {
            Some(aside) => {
                let _ = std::fs::remove_dir_all(&target);
                let _ = std::fs::rename(aside, &target);
            }
            None => self.installed.remove(),
        }
    }
}

/// A plugin copied into place, not yet trusted or enabled.
#[derive(Debug)]
pub struct InstalledDir {
    /// Its directory.
    pub path: PathBuf,
}

impl InstalledDir {
    /// Takes the copy back (enabling it failed or was declined).
    pub fn remove(self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The crate's `[package] name`, if `dir` is a Rust crate (its `Cargo.toml` a regular file of at
/// most 1 MiB, not a link).
fn crate_name(dir: &Path) -> Option<String> {
    let text = bosun_fsio::read_text(&dir.join("Cargo.toml"), 1 << 20).ok()?;
    let doc: toml::Table = text.parse().ok()?;
    doc.get("package")?.get("name")?.as_str().map(str::to_owned)
}

/// Copies the files of `from` into `to` (which must not exist), without [`SKIPPED`] entries,
/// refusing links and anything over the install bounds.
fn copy_plugin_dir(from: &Path, to: &Path) -> Result<(), InstallError> {
    let mut total = 0u64;
    let mut files = 0usize;
    let mut pending = vec![(from.to_path_buf(), to.to_path_buf(), 0usize)];
    std::fs::create_dir(to).map_err(io(|| format!("creating {}", to.display())))?;
    while let Some((src, dst, depth)) = pending.pop() {
        let reading = || format!("reading {}", src.display());
        for entry in std::fs::read_dir(&src).map_err(io(reading))? {
            let entry = entry.map_err(io(reading))?;
            let name = entry.file_name();
            if SKIPPED.iter().any(|skip| name == *skip) {
                continue;
            }
            let kind = entry.file_type().map_err(io(reading))?;
            let (from_path, to_path) = (entry.path(), dst.join(&name));
            if kind.is_symlink() {
                return Err(InstallError::Symlink { path: from_path });
            } else if kind.is_dir() {
                if depth + 1 > MAX_INSTALL_DEPTH {
                    return Err(InstallError::TooDeep { path: from_path });
                }
                std::fs::create_dir(&to_path)
                    .map_err(io(|| format!("creating {}", to_path.display())))?;
                pending.push((from_path, to_path, depth + 1));
            } else if kind.is_file() {
                files += 1;
                if files > MAX_INSTALL_FILES {
                    return Err(InstallError::TooManyFiles {
                        dir: from.to_owned(),
                    });
                }
                // Listed as a file; read so that one swapped since for a link or a FIFO is
                // refused (not followed, not waited on), and no more than the bound has left.
                let (bytes, meta) = bosun_fsio::read_regular_with_metadata(
                    &from_path,
                    MAX_INSTALL_BYTES.saturating_sub(total),
                )
                .map_err(|e| match e {
                    bosun_fsio::OpenError::NotRegular {
                        found: bosun_fsio::Found::Link,
                        ..
                    } => InstallError::Symlink {
                        path: from_path.clone(),
                    },
                    bosun_fsio::OpenError::TooLarge { .. } => InstallError::TooLarge {
                        dir: from.to_owned(),
                    },
                    bosun_fsio::OpenError::Io { source, .. } => InstallError::Io {
                        doing: format!("copying {}: {source}", from_path.display()),
                        source,
                    },
                    refused => InstallError::Io {
                        doing: refused.to_string(),
                        source: refused.into_io(),
                    },
                })?;
                total += bytes.len() as u64;
                // Created, never opened over something there (a link is not followed), with
                // the permission bits of the file read (its scripts stay executable).
                bosun_fsio::create_file(&to_path, &bytes, file_mode(&meta))
                    .map_err(io(|| format!("copying {}", from_path.display())))?;
            }
        }
    }
    Ok(())
}

/// The permission bits of a file read, for its copy.
#[cfg(unix)]
fn file_mode(meta: &std::fs::Metadata) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777
}

#[cfg(not(unix))]
fn file_mode(_meta: &std::fs::Metadata) -> u32 {
    0o644
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_install_over_the_bounds_leaves_nothing_under_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("big");
        std::fs::create_dir(&plugin).unwrap();
        std::fs::write(plugin.join("plugin.json"), "{}").unwrap();
        for i in 0..MAX_INSTALL_FILES {
            std::fs::write(plugin.join(format!("f{i}.mjs")), "").unwrap();
        }
        let plugins = dir.path().join("plugins");
        let (source, name) = InstallSource::of(&plugin, None).unwrap();
        assert_eq!(name, "big");
        let error = source.install_into(&plugins, &name).unwrap_err();
        assert!(
            matches!(error, InstallError::TooManyFiles { .. }),
            "{error}"
        );
        let left: Vec<_> = std::fs::read_dir(&plugins).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_link_inside_a_plugin_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("linked");
        std::fs::create_dir(&plugin).unwrap();
        std::fs::write(plugin.join("mod.ts"), "").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", plugin.join("passwd")).unwrap();
        let (source, name) = InstallSource::of(&plugin, None).unwrap();
        let error = source
            .install_into(&dir.path().join("plugins"), &name)
            .unwrap_err();
        assert!(matches!(error, InstallError::Symlink { .. }), "{error}");
        assert!(!dir.path().join("plugins/linked").exists());
    }

    #[test]
    fn an_installed_plugin_is_copied_whole_without_build_output() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("tidy");
        std::fs::create_dir_all(plugin.join("lib")).unwrap();
        std::fs::create_dir_all(plugin.join("node_modules/x")).unwrap();
        std::fs::write(plugin.join("plugin.json"), "{}").unwrap();
        std::fs::write(plugin.join("lib/util.mjs"), "export {}").unwrap();
        std::fs::write(plugin.join("node_modules/x/i.js"), "").unwrap();
        let (source, name) = InstallSource::of(&plugin, None).unwrap();
        let installed = source
            .install_into(&dir.path().join("plugins"), &name)
            .unwrap();
        assert!(installed.path.join("lib/util.mjs").is_file());
        assert!(!installed.path.join("node_modules").exists());
        let again = source.install_into(&dir.path().join("plugins"), &name);
        assert!(matches!(again, Err(InstallError::Exists { .. })));
        installed.remove();
        assert!(!dir.path().join("plugins/tidy").exists());
    }

    #[test]
    fn a_replaced_plugin_stays_when_the_new_copy_fails_and_goes_back_on_rollback() {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        let plugin = dir.path().join("tool");
        std::fs::create_dir(&plugin).unwrap();
        std::fs::write(plugin.join("mod.ts"), "// one").unwrap();
        let (source, name) = InstallSource::of(&plugin, None).unwrap();
        source.install_into(&plugins, &name).unwrap();
        let installed = || std::fs::read_to_string(plugins.join("tool/mod.ts")).unwrap();

        // A rebuilt copy that cannot be installed (a link inside): the old one is untouched.
        std::fs::write(plugin.join("mod.ts"), "// two").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", plugin.join("passwd")).unwrap();
        let error = source.replace_into(&plugins, &name).unwrap_err();
        assert!(matches!(error, InstallError::Symlink { .. }), "{error}");
        assert_eq!(installed(), "// one");

        std::fs::remove_file(plugin.join("passwd")).unwrap();
        let replaced = source.replace_into(&plugins, &name).unwrap();
        assert_eq!(installed(), "// two");
        replaced.rollback();
        assert_eq!(installed(), "// one");
        source.replace_into(&plugins, &name).unwrap().commit();
        assert_eq!(installed(), "// two");
        let names: Vec<_> = std::fs::read_dir(&plugins)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["tool"]);
    }
}
