//! Reading one source file for the scanner, as the loader reads it: not through a link, not
//! blocking on a FIFO, a regular file, bounded. A directory is read as the loader's snapshot
//! ([`crate::source::SourceSnapshot`]), never walked here.

use std::io::Read;
use std::path::Path;

use super::MAX_FILE_BYTES;

/// Read one source file: not through a link (the open refuses one swapped in after the
/// listing), not blocking on a FIFO, a regular file, at most [`MAX_FILE_BYTES`] (one byte more
/// is read, so that a file grown since its size was checked is still seen as too large).
pub(super) fn read_source(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    );
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}
