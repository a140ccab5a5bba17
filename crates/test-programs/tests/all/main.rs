//! Tests of the guest components this crate builds, without a host: the metadata each carries,
//! the template `bosun plugins new` writes, and the guest workspace's own tests.

// Helpers in a test binary may panic like the tests themselves: a failed unwrap is a failed
// test (clippy.toml allows it only inside `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod guests;
mod metadata;
mod template;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The guest target directory the build script used, shared so nested builds reuse its work.
fn guest_target_dir() -> PathBuf {
    std::env::var_os("BOSUN_GUEST_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/guests"))
}

/// Cargo, without the outer build's flags and wrappers (they are for the host workspace).
fn cargo() -> Command {
    let mut command = Command::new(env!("CARGO"));
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
    ] {
        command.env_remove(var);
    }
    command.env("CARGO_TARGET_DIR", guest_target_dir());
    command
}

/// Runs `command` and fails the test with its output if it fails.
fn run(mut command: Command) {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
