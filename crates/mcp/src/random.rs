//! Random bytes from the kernel's CSPRNG: request-state nonces and keys, session ids, the
//! names of temporary files. One reader, so every secret this crate makes comes from one place.

use std::io::Read;

/// `n` bytes read from `/dev/urandom`.
///
/// # Errors
/// The device cannot be opened or read (a sandbox without it).
pub(crate) fn bytes(n: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes))?;
    Ok(bytes)
}

/// `n` random bytes as lowercase hex (`2 * n` characters).
///
/// # Errors
/// As [`bytes`].
pub(crate) fn hex(n: usize) -> std::io::Result<String> {
    bytes(n).map(|b| bosun_core::text::hex(&b))
}
