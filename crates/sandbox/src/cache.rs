//! Precompiled components on disk, so a plugin is compiled once per content and engine.
//!
//! An artefact lives at `<cache_dir>/<sha256 of the component>-<engine fingerprint>.cwasm`; the
//! engine fingerprint covers the wasmtime version and every setting wasmtime checks before it
//! accepts precompiled code. Each file starts with a header holding the SHA-256 of the artefact
//! and of the component it came from; a file that is short, fails its digest, names another
//! component or is refused by wasmtime is recompiled and rewritten. Writes go to a temporary
//! file in the same directory and are renamed into place, so readers never see half a file.
//!
//! This module never decides what to load: callers hand it bytes; it only makes them faster to
//! load the second time.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Engine, Module};

use crate::SandboxError;
use crate::engine::{engine_fingerprint, hex};

/// Magic bytes opening every artefact file, with the layout version.
const MAGIC: &[u8; 8] = b"BOSUNC01";
/// Magic, SHA-256 of the component, SHA-256 of the artefact.
const HEADER_LEN: usize = 8 + 32 + 32;

/// How a component was obtained, for callers that report or measure it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// No cache directory is configured; the component was compiled in memory.
    Disabled,
    /// A valid artefact was found and loaded without compiling.
    Hit,
    /// No artefact existed; the component was compiled and the artefact written.
    Miss,
    /// An artefact existed but was unusable (corrupt, truncated, for another engine); the
    /// component was compiled again and the artefact replaced.
    Replaced,
}

/// The on-disk artefact cache of one sandbox.
#[derive(Debug)]
pub(crate) struct ArtefactCache {
    dir: PathBuf,
    fingerprint: String,
}

impl ArtefactCache {
    /// Opens (creating if needed) the cache directory and restricts it to the current user.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> Result<Self, SandboxError> {
        let fail = |reason: String| SandboxError::CacheDir {
            path: dir.to_owned(),
            reason,
        };
        create_private_dir(dir).map_err(|e| fail(e.to_string()))?;
        Ok(Self {
            dir: dir.to_owned(),
            fingerprint: engine_fingerprint(engine),
        })
    }

    /// The file an artefact for `component_hash` lives in.
    pub(crate) fn artefact_path(&self, component_hash: &[u8; 32]) -> PathBuf {
        self.dir.join(format!(
            "{}-{}.cwasm",
            hex(component_hash),
            self.fingerprint
        ))
    }

    /// The component (or core module) from a valid artefact for `component_hash`, if there is
    /// one.
    pub(crate) fn hit<C: Compiled>(&self, engine: &Engine, component_hash: &[u8; 32]) -> Option<C> {
        let path = self.artefact_path(component_hash);
        if !path.exists() {
            return None;
        }
        match read_artefact(&path, component_hash) {
            Some(artefact) => match C::deserialize_verified(engine, &artefact) {
                Ok(component) => return Some(component),
                Err(e) => tracing::warn!(
                    path = %path.display(),
                    "cached plugin artefact refused by wasmtime, recompiling: {e:#}"
                ),
            },
            None => tracing::warn!(
                path = %path.display(),
                "cached plugin artefact is corrupt or for another component, recompiling"
            ),
        }
        None
    }

    /// Loads the component (or core module) from its artefact, or compiles it and writes the
    /// artefact.
    pub(crate) fn load<C: Compiled>(
        &self,
        engine: &Engine,
        wasm: &[u8],
        component_hash: &[u8; 32],
    ) -> Result<(C, CacheOutcome), wasmtime::Error> {
        if let Some(component) = self.hit(engine, component_hash) {
            return Ok((component, CacheOutcome::Hit));
        }
        let path = self.artefact_path(component_hash);
        let existed = path.exists();
        let artefact = C::precompile(engine, wasm)?;
        // The bytes we just produced are ours; deserializing them is what `Component::new`
        // would do after compiling, without a second compilation.
        let component = C::deserialize_verified(engine, &artefact)?;
        if let Err(e) = write_artefact(&self.dir, &path, component_hash, &artefact) {
            tracing::warn!(
                path = %path.display(),
                "could not write the plugin artefact cache: {e}"
            );
        }
        let outcome = if existed {
            CacheOutcome::Replaced
        } else {
            CacheOutcome::Miss
        };
        Ok((component, outcome))
    }
}

/// SHA-256 of some bytes.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Reads an artefact file and returns the artefact if its header matches the component and
/// its digest matches its content.
fn read_artefact(path: &Path, component_hash: &[u8; 32]) -> Option<Vec<u8>> {
    let mut bytes = fs::read(path).ok()?;
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC || bytes[8..40] != component_hash[..] {
        return None;
    }
    let expected: [u8; 32] = bytes[40..HEADER_LEN].try_into().ok()?;
    if sha256(&bytes[HEADER_LEN..]) != expected {
        return None;
    }
    bytes.drain(..HEADER_LEN);
    Some(bytes)
}

/// Writes the header and artefact to a private temporary file and renames it into place.
fn write_artefact(
    dir: &Path,
    path: &Path,
    component_hash: &[u8; 32],
    artefact: &[u8],
) -> std::io::Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".cwasm")
        .tempfile_in(dir)?;
    tmp.write_all(MAGIC)?;
    tmp.write_all(component_hash)?;
    tmp.write_all(&sha256(artefact))?;
    tmp.write_all(artefact)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// What the cache holds: components and core modules (Chock plugins).
pub(crate) trait Compiled: Sized {
    /// Compiles `wasm` to artefact bytes.
    fn precompile(engine: &Engine, wasm: &[u8]) -> wasmtime::Result<Vec<u8>>;
    /// Turns verified artefact bytes (see [`read_artefact`]) back into code.
    fn deserialize_verified(engine: &Engine, artefact: &[u8]) -> wasmtime::Result<Self>;
}

// SAFETY (both impls): `deserialize` trusts that the bytes are machine code wasmtime produced;
// wasmtime itself checks the version and engine settings but cannot check the code. Here the
// bytes were produced by `precompile` (in this process, or in an earlier one and stored by
// `write_artefact`), and a stored artefact is accepted only if: it was read from our cache
// directory, which we create with mode 0700 so other users cannot write it; its file name is
// the SHA-256 of the wasm bytes plus this engine's fingerprint; and its header repeats that
// hash and holds the SHA-256 of the artefact, which `read_artefact` recomputed over the exact
// bytes passed here (read into memory first, so the file changing afterwards cannot affect
// them). A truncated, corrupted or swapped file fails those checks and is recompiled instead;
// an artefact of the other kind (component vs module) is refused by wasmtime and recompiled.
impl Compiled for Component {
    fn precompile(engine: &Engine, wasm: &[u8]) -> wasmtime::Result<Vec<u8>> {
        engine.precompile_component(wasm)
    }

    #[allow(unsafe_code)]
    fn deserialize_verified(engine: &Engine, artefact: &[u8]) -> wasmtime::Result<Self> {
        // SAFETY: see above.
        unsafe { Component::deserialize(engine, artefact) }
    }
}

impl Compiled for Module {
    fn precompile(engine: &Engine, wasm: &[u8]) -> wasmtime::Result<Vec<u8>> {
        engine.precompile_module(wasm)
    }

    #[allow(unsafe_code)]
    fn deserialize_verified(engine: &Engine, artefact: &[u8]) -> wasmtime::Result<Self> {
        // SAFETY: see above.
        unsafe { Module::deserialize(engine, artefact) }
    }
}

/// Creates `dir` (and parents) and sets it to mode 0700.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let meta = fs::symlink_metadata(dir)?;
        if !meta.is_dir() {
            return Err(std::io::Error::other("not a directory (or a symlink)"));
        }
        if meta.permissions().mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        fs::create_dir_all(dir)
    }
}
