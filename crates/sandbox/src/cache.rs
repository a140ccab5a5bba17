//! Precompiled components on disk, so a plugin is compiled once per content and engine.
//!
//! An artefact lives at `<cache_dir>/<sha256 of the component>-<engine fingerprint>.c2.cwasm`;
//! the engine fingerprint covers the wasmtime version and every setting wasmtime checks before
//! it accepts precompiled code, and `c2` the file's layout. Each file starts with a header
//! holding the SHA-256 of the component it came from and the BLAKE3 digest of the artefact
//! (BLAKE3 because the JavaScript engine's 7 MB are hashed at every start that runs JavaScript:
//! about three times faster than SHA-256 here, with the same 256-bit strength); a file that is
//! short, fails its digest, names another component or is refused by wasmtime is recompiled and
//! rewritten. Writes go to a temporary
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
const MAGIC: &[u8; 8] = b"BOSUNC02";
/// Magic, SHA-256 of the component, BLAKE3 of the artefact.
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
            "{}-{}.c2.cwasm",
            hex(component_hash),
            self.fingerprint
        ))
    }

    /// The component (or core module) from a valid artefact for `component_hash`, if there is
    /// one.
    pub(crate) fn hit<C: Compiled>(&self, engine: &Engine, component_hash: &[u8; 32]) -> Option<C> {
        let path = self.artefact_path(component_hash);
        let artefact = match read_artefact(&path, component_hash) {
            Ok(Some(artefact)) => artefact,
            Ok(None) => return None,
            Err(reason) => {
                tracing::warn!(
                    path = %path.display(),
                    "cached plugin artefact {reason}, recompiling"
                );
                return None;
            }
        };
        match artefact.deserialize::<C>(engine) {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(
                    path = %path.display(),
                    "cached plugin artefact refused by wasmtime, recompiling: {e:#}"
                );
                None
            }
        }
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
        // The same artefact in the first layout (`<hash>-<fingerprint>.cwasm`, SHA-256) is never
        // read again: do not leave megabytes behind for every component compiled before.
        let _ = fs::remove_file(self.dir.join(format!(
            "{}-{}.cwasm",
            hex(component_hash),
            self.fingerprint
        )));
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

/// A verified artefact: the bytes after the header, whose digest matched the header's.
enum Artefact {
    /// In a sealed in-memory file (Linux): nothing can change the bytes after they were hashed,
    /// and wasmtime maps them (code and the initial memory image alike) instead of copying.
    #[cfg(target_os = "linux")]
    Sealed(fs::File),
    /// In this process's memory.
    Bytes(Vec<u8>),
}

impl Artefact {
    fn deserialize<C: Compiled>(&self, engine: &Engine) -> wasmtime::Result<C> {
        match self {
            #[cfg(target_os = "linux")]
            Artefact::Sealed(file) => C::deserialize_sealed(engine, file),
            Artefact::Bytes(bytes) => C::deserialize_verified(engine, bytes),
        }
    }
}

/// Reads an artefact file and returns the artefact if its header matches the component and
/// its digest matches its content: `Ok(None)` when there is no file, `Err` with what is wrong
/// with one that is there.
///
/// On Linux the bytes are copied once, chunk by chunk, into a sealed memory file while they are
/// hashed: the file is sealed against every write before the digest is compared, so the bytes
/// wasmtime later maps are exactly the bytes hashed, whatever happens to the file on disk. (The
/// earlier path read the file, hashed it, moved it past the header, had wasmtime copy it into
/// its own mapping and copy the initial memory image into a memory file again: four copies of
/// the JavaScript engine's 7 MB where this makes one.)
fn read_artefact(
    path: &Path,
    component_hash: &[u8; 32],
) -> Result<Option<Artefact>, UnusableArtefact> {
    use std::io::Read;
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(UnusableArtefact::Open(e)),
    };
    let mut header = [0u8; HEADER_LEN];
    file.read_exact(&mut header)
        .map_err(|_| UnusableArtefact::Short)?;
    if &header[..8] != MAGIC || header[8..40] != component_hash[..] {
        return Err(UnusableArtefact::ForAnother);
    }
    let expected = &header[40..HEADER_LEN];
    let (artefact, digest) = copy_hashed(&mut file).map_err(UnusableArtefact::Read)?;
    if digest[..] != expected[..] {
        return Err(UnusableArtefact::Corrupt);
    }
    Ok(Some(artefact))
}

/// Why a cached artefact is not used (it is compiled again); the message follows "cached
/// plugin artefact".
#[derive(Debug, thiserror::Error)]
enum UnusableArtefact {
    /// It exists but cannot be opened.
    #[error("could not be opened ({0})")]
    Open(std::io::Error),
    /// It ends inside its header.
    #[error("is shorter than its header")]
    Short,
    /// Its header names another component or layout.
    #[error("is for another component or layout")]
    ForAnother,
    /// Reading it failed.
    #[error("could not be read ({0})")]
    Read(std::io::Error),
    /// Its digest does not match its bytes.
    #[error("is corrupt (its digest does not match)")]
    Corrupt,
}

/// Copies the rest of `file` into a sealed memory file (Linux) or a vector, hashing it on the
/// way. Where a memory file cannot be made or sealed, the bytes are read into memory instead.
fn copy_hashed(file: &mut fs::File) -> std::io::Result<(Artefact, [u8; 32])> {
    use std::io::{Read, Seek, SeekFrom};
    #[cfg(target_os = "linux")]
    match copy_sealed(file) {
        Ok(copied) => return Ok(copied),
        Err(e) => {
            tracing::debug!("no sealed copy of the artefact ({e}); reading it into memory");
            file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
        }
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let digest = blake3::hash(&bytes).into();
    Ok((Artefact::Bytes(bytes), digest))
}

/// The rest of `file`, hashed while copied into a memory file that is then sealed.
#[cfg(target_os = "linux")]
fn copy_sealed(file: &mut fs::File) -> std::io::Result<(Artefact, [u8; 32])> {
    use rustix::fs::SealFlags;
    use std::io::Read;
    let mut memfd = fs::File::from(sealable_memory_file()?);
    let mut hasher = blake3::Hasher::new();
    let mut chunk = vec![0u8; 256 << 10];
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&chunk[..n]);
        memfd.write_all(&chunk[..n])?;
    }
    rustix::fs::fcntl_add_seals(
        &memfd,
        SealFlags::WRITE | SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL,
    )?;
    Ok((Artefact::Sealed(memfd), hasher.finalize().into()))
}

/// An anonymous memory file that can be sealed.
#[cfg(target_os = "linux")]
fn sealable_memory_file() -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::MemfdFlags;
    Ok(rustix::fs::memfd_create(
        "bosun-artefact",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?)
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
    tmp.write_all(blake3::hash(artefact).as_bytes())?;
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
    /// Maps a verified artefact from its sealed memory file (see [`read_artefact`]).
    #[cfg(target_os = "linux")]
    fn deserialize_sealed(engine: &Engine, sealed: &fs::File) -> wasmtime::Result<Self>;
}

// SAFETY (both impls): `deserialize` trusts that the bytes are machine code wasmtime produced;
// wasmtime itself checks the version and engine settings but cannot check the code. Here the
// bytes were produced by `precompile` (in this process, or in an earlier one and stored by
// `write_artefact`), and a stored artefact is accepted only if: it was read from our cache
// directory, which we create with mode 0700 so other users cannot write it; its file name is
// the SHA-256 of the wasm bytes plus this engine's fingerprint; and its header repeats that
// hash and holds the BLAKE3 digest of the artefact, which `read_artefact` recomputed over the
// exact bytes passed here (read into memory first, or into a memory file sealed against writes
// before the digest was compared, so the file on disk changing afterwards cannot affect them).
// A truncated, corrupted or swapped file fails those checks and is recompiled instead; an
// artefact of the other kind (component vs module) is refused by wasmtime and recompiled.
impl Compiled for Component {
    fn precompile(engine: &Engine, wasm: &[u8]) -> wasmtime::Result<Vec<u8>> {
        engine.precompile_component(wasm)
    }

    #[allow(unsafe_code)]
    fn deserialize_verified(engine: &Engine, artefact: &[u8]) -> wasmtime::Result<Self> {
        // SAFETY: see above.
        unsafe { Component::deserialize(engine, artefact) }
    }

    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    fn deserialize_sealed(engine: &Engine, sealed: &fs::File) -> wasmtime::Result<Self> {
        use std::os::fd::AsRawFd;
        // Components are mapped from a path only: the sealed file's own entry in /proc (the
        // same file, not a copy of it). Without /proc, its bytes are copied instead.
        let path = format!("/proc/self/fd/{}", sealed.as_raw_fd());
        if fs::metadata(&path).is_err() {
            return Self::deserialize_verified(engine, &read_sealed(sealed)?);
        }
        // SAFETY: see above; the file is sealed, so the bytes mapped are the bytes hashed.
        unsafe { Component::deserialize_file(engine, &path) }
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

    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    fn deserialize_sealed(engine: &Engine, sealed: &fs::File) -> wasmtime::Result<Self> {
        // SAFETY: see above; the file is sealed, so the bytes mapped are the bytes hashed.
        unsafe { Module::deserialize_open_file(engine, sealed.try_clone()?) }
    }
}

/// All of a sealed memory file's bytes.
#[cfg(target_os = "linux")]
fn read_sealed(sealed: &fs::File) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(sealed.metadata()?.len()).map_err(std::io::Error::other)?;
    let mut bytes = vec![0u8; len];
    sealed.read_exact_at(&mut bytes, 0)?;
    Ok(bytes)
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
