//! Link settings of the `bosun` binary.
//!
//! Every command starts by having the dynamic loader relocate the position-independent binary:
//! about 135,000 relative relocations, each a 24-byte `.rela.dyn` entry read before `main`.
//! Where the C toolchain can pack them (`-z pack-relative-relocs`: GNU ld 2.38 or later with
//! glibc 2.36 or later, or lld), they become a `DT_RELR` bitmap of a few kilobytes. The binary
//! stays position-independent (its address is still randomised); only the table shrinks.
//! Probed here, so an older toolchain links as before.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os == "linux" && target_env == "gnu" && packs_relative_relocations() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the C compiler (rustc's linker driver on this target) links a program with packed
/// relative relocations, silently.
fn packs_relative_relocations() -> bool {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("relr-probe.c");
    let binary = out.join("relr-probe");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let Ok(output) = Command::new(cc)
        .arg("-Wl,-z,pack-relative-relocs")
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .output()
    else {
        return false;
    };
    // An ld that does not know the option only warns; a warning means no.
    output.status.success()
        && output.stderr.is_empty()
        && Command::new(&binary).status().is_ok_and(|s| s.success())
}
