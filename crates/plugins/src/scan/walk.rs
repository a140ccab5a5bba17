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
    let (file, _) = bosun_fsio::open_regular(path).map_err(bosun_fsio::OpenError::into_io)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}
