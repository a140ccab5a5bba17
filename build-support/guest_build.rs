//! What both guest-building build scripts share (`crates/test-programs/build.rs` builds the
//! guest workspace, `crates/js/build.rs` builds the JavaScript engine in it): where the guest
//! workspace and its target directory are, a cargo that does not inherit the outer build's
//! host-target settings, and the check that the wasm target is installed. Included by path
//! (`#[path = "../../build-support/guest_build.rs"]`) by both.

#![allow(dead_code)]

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The guests' target triple.
pub const TARGET: &str = "wasm32-wasip2";

/// Where the guest workspace is and where it builds.
pub struct Guests {
    /// The repository root.
    pub root: PathBuf,
    /// `guests/Cargo.toml`.
    pub manifest: PathBuf,
    /// `target/guests`, or `$BOSUN_GUEST_TARGET_DIR`: one guest build shared by every profile
    /// of the outer build.
    pub target_dir: PathBuf,
}

/// Locates the guest workspace from the calling crate (which must be `crates/<name>`).
pub fn guests() -> Result<Guests, String> {
    let manifest_dir = PathBuf::from(env_var("CARGO_MANIFEST_DIR")?);
    let root = manifest_dir
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| {
            format!(
                "{} is not two levels below the workspace root",
                manifest_dir.display()
            )
        })?
        .to_path_buf();
    println!("cargo:rerun-if-env-changed=BOSUN_GUEST_TARGET_DIR");
    println!(
        "cargo:rerun-if-changed={}",
        root.join("build-support").join("guest_build.rs").display()
    );
    let target_dir = match env::var_os("BOSUN_GUEST_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => root.join("target").join("guests"),
    };
    Ok(Guests {
        manifest: root.join("guests").join("Cargo.toml"),
        root,
        target_dir,
    })
}

/// Cargo as the outer build runs it, with the outer build's flags and wrappers removed: those
/// are for the host target, and `cargo clippy`'s wrapper would otherwise lint (and rebuild) every
/// guest under other settings.
pub fn nested_cargo() -> Command {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
    ] {
        command.env_remove(var);
    }
    command
}

/// Fails early, with the fix, when the toolchain has no wasm32-wasip2 standard library; `what`
/// names what needs it.
pub fn check_target_installed(what: &str) -> Result<(), String> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("running rustc --print sysroot: {e}"))?;
    let sysroot = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let std_dir = Path::new(&sysroot).join("lib").join("rustlib").join(TARGET);
    if std_dir.is_dir() {
        Ok(())
    } else {
        Err(format!(
            "the {TARGET} target is not installed for the toolchain at {sysroot}, and {what} \
             is built for it; install it with\n  rustup target add {TARGET}"
        ))
    }
}

/// A variable cargo sets for build scripts.
pub fn env_var(name: &str) -> Result<String, String> {
    env::var(name).map_err(|_| format!("{name} is not set: this runs as a cargo build script"))
}
