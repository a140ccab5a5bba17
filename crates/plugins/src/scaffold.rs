//! `bosun plugins new NAME`: writes a new plugin crate from template files, substituting the
//! plugin's name. It creates one new directory and never touches an existing one.

use std::path::{Component, Path, PathBuf};

use crate::PluginError;
use crate::metadata::is_plugin_name;

/// Writes `templates` (relative path, contents) under the new directory `dir`, replacing
/// `{{name}}` with `name` and `{{name_snake}}` with `name` with `-` turned into `_` (for Rust
/// identifiers and tool names). Refuses a `dir` that exists, a bad plugin name and a template
/// path that would leave `dir`; on a failure part-way, removes what it wrote. Returns the
/// files written, in template order.
pub fn scaffold(
    dir: &Path,
    name: &str,
    templates: &[(&str, &str)],
) -> Result<Vec<PathBuf>, PluginError> {
    if !is_plugin_name(name) {
        return Err(PluginError::BadPluginName(bosun_core::escape_hidden(name)));
    }
    for (path, _) in templates {
        let p = Path::new(path);
        let inside = !path.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
        if !inside {
            return Err(PluginError::BadTemplatePath((*path).to_owned()));
        }
    }
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| PluginError::Write { path, source }
    };
    if dir.symlink_metadata().is_ok() {
        return Err(PluginError::AlreadyExists(dir.to_owned()));
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(write_error(parent))?;
    }
    // `create_dir` fails if the directory appeared since the check: never write into one.
    std::fs::create_dir(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => PluginError::AlreadyExists(dir.to_owned()),
        _ => PluginError::Write {
            path: dir.to_owned(),
            source: e,
        },
    })?;
    let snake = name.replace('-', "_");
    let mut written = Vec::with_capacity(templates.len());
    for (path, contents) in templates {
        let target = dir.join(path);
        let text = contents
            .replace("{{name}}", name)
            .replace("{{name_snake}}", &snake);
        if let Err(e) = write_new(&target, &text) {
            // Best effort: the directory is ours, created above.
            let _ = std::fs::remove_dir_all(dir);
            return Err(e);
        }
        written.push(target);
    }
    Ok(written)
}

fn write_new(path: &Path, text: &str) -> Result<(), PluginError> {
    let error = |source| PluginError::Write {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    let mut file = options.open(path).map_err(error)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(error)
}
