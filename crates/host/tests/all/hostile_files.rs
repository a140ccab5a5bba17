//! Files of trees Bosun does not control, planted where it reads: a FIFO answers an error
//! without waiting for a writer, a link to a file outside is not read.

use std::path::PathBuf;

use bosun_fsio::testing::{plant_fifo, plant_link, plant_oversized, returns_within_guard};
use bosun_host::plugin_runtime::install::InstallSource;
use bosun_host::{LoadedConfig, Workspace};

const SECRET: &str = "mode = \"the secret outside the workspace\"";

/// A home, a workspace with a `.bosun` folder, and a secret file outside both.
fn places() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(ws.join(".bosun")).unwrap();
    let secret = dir.path().join("secret.toml");
    std::fs::write(&secret, SECRET).unwrap();
    (dir, home, ws, secret)
}

fn load(home: PathBuf, ws: PathBuf, fifo: &std::path::Path) -> Result<(), String> {
    returns_within_guard(fifo, move || {
        let workspace = Workspace::new(&ws, &ws).unwrap();
        LoadedConfig::load_with(&home, &workspace, None)
            .map(drop)
            .map_err(|e| e.to_string())
    })
}

#[test]
fn a_fifo_as_the_project_config_is_refused_without_waiting() {
    let (_dir, home, ws, _) = places();
    let fifo = ws.join(".bosun/config.toml");
    plant_fifo(&fifo);
    let error = load(home, ws, &fifo).unwrap_err();
    assert!(error.contains("a FIFO"), "{error}");
    assert!(error.contains(".bosun/config.toml"), "{error}");
}

#[test]
fn a_link_as_the_project_config_to_a_file_outside_is_not_read() {
    let (_dir, home, ws, secret) = places();
    let link = ws.join(".bosun/config.toml");
    plant_link(&link, &secret);
    let error = load(home, ws, &link).unwrap_err();
    assert!(error.contains("a symbolic link"), "{error}");
    assert!(!error.contains("secret"), "{error}");
}

#[test]
fn an_oversized_project_config_is_refused_naming_the_bound() {
    let (_dir, home, ws, _) = places();
    let big = ws.join(".bosun/config.toml");
    plant_oversized(&big, bosun_host::config::MAX_PROJECT_CONFIG_BYTES + 1);
    let error = load(home, ws, &big).unwrap_err();
    assert!(
        error.contains(&bosun_host::config::MAX_PROJECT_CONFIG_BYTES.to_string()),
        "{error}"
    );
}

#[test]
fn a_fifo_as_the_cargo_toml_of_a_folder_to_install_is_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("plugin");
    std::fs::create_dir_all(&plugin).unwrap();
    let fifo = plugin.join("Cargo.toml");
    plant_fifo(&fifo);
    let error = returns_within_guard(&fifo, move || {
        InstallSource::of(&plugin, None).map(drop).unwrap_err()
    });
    // Not read as a crate: the folder is no plugin.
    assert!(
        matches!(
            error,
            bosun_host::plugin_runtime::install::InstallError::NoPlugin { .. }
        ),
        "{error}"
    );
}
