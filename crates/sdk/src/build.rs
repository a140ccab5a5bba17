//! For a plugin's `build.rs`: write the metadata JSON where [`crate::embed_metadata!`] picks it
//! up. Compiled with the `build` feature, natively, with no bindings.
//!
//! ```rust,ignore
//! // build.rs
//! #[path = "src/spec.rs"]
//! mod spec;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     bosun_sdk::build::write_metadata(&spec::plugin())?;
//!     Ok(())
//! }
//! ```

use std::path::PathBuf;

use crate::spec::{PluginSpec, SpecError};

/// The file under `OUT_DIR` that holds the metadata.
pub const METADATA_FILE: &str = "bosun-plugin-metadata.json";

/// Why the metadata could not be written.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The spec breaks a rule.
    #[error("the plugin spec: {0}")]
    Spec(#[from] SpecError),
    /// Not run by cargo as a build script.
    #[error("OUT_DIR is not set: call write_metadata from the plugin's build.rs")]
    NoOutDir,
    /// Writing the file failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Checks the spec and writes its metadata to `$OUT_DIR/bosun-plugin-metadata.json`.
pub fn write_metadata(plugin: &PluginSpec) -> Result<PathBuf, BuildError> {
    write(plugin.metadata_json()?)
}

/// Writes the spec's metadata without any check: for test programs that must carry metadata
/// the host refuses (a shadowed built-in, an oversize schema, a hidden character).
pub fn write_metadata_unchecked(plugin: &PluginSpec) -> Result<PathBuf, BuildError> {
    let json = serde_json::to_string_pretty(&plugin.metadata_unchecked())
        .map_err(|e| SpecError::Json(e.to_string()))?;
    write(json)
}

/// Writes metadata text exactly as given (it need not even be JSON).
pub fn write_metadata_raw(text: &str) -> Result<PathBuf, BuildError> {
    write(text.to_owned())
}

fn write(json: String) -> Result<PathBuf, BuildError> {
    let dir = std::env::var_os("OUT_DIR").ok_or(BuildError::NoOutDir)?;
    let path = PathBuf::from(dir).join(METADATA_FILE);
    std::fs::write(&path, json).map_err(|source| BuildError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}
