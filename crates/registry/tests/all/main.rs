//! The registry's tests: the signed catalog's attack table with keys made here and a fixed
//! clock, Reef served on loopback, publishing, and OCI sources against Debian's
//! `docker-registry` on loopback (installed by `scripts/oci-peers`).

// Helpers in a test binary may panic like the tests themselves: a failed unwrap is a failed
// test (clippy.toml allows it only inside `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod layout;
mod oci;
/// The OCI crate's real-registry helper, shared rather than copied.
#[path = "../../../oci/tests/all/peers.rs"]
#[allow(dead_code)]
mod oci_peers;
mod publish;
mod reef;
mod repo;
mod server;
mod tuf;
