//! Build settings of the `bosun` binary.
//!
//! **Version stamp.** The commit and date it was built from, for `bosun --version`: read from git
//! when the source is a checkout, `BOSUN_BUILD_COMMIT` / `BOSUN_BUILD_DATE` when a packager sets
//! them, else `unknown` (a source tarball builds the same).
//!
//! **Packed relative relocations.** Every command starts by having the dynamic loader relocate
//! the position-independent binary: about 135,000 relative relocations, each a 24-byte
//! `.rela.dyn` entry (3.3 MB) read before `main`, and resident afterwards. Where the C toolchain can
//! pack them (`-z pack-relative-relocs`: GNU ld 2.38 or later with glibc 2.36 or later, or lld),
//! they become a `DT_RELR` bitmap of a few kilobytes. The binary stays position-independent (its
//! address is still randomised); only the table shrinks. Probed here, so an older toolchain links
//! as before. `BOSUN_RELR` tells the tests which it was, so a build that silently lost the packing
//! fails `binary::relative_relocations_are_packed_where_the_toolchain_can`.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    stamp_version();
    pack_relative_relocations();
}

fn stamp_version() {
    println!("cargo:rerun-if-env-changed=BOSUN_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=BOSUN_BUILD_DATE");
    // A new commit or checkout changes HEAD (or the branch it names) in the git directory.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/logs/HEAD");
    }
    let commit = std::env::var("BOSUN_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    let date = std::env::var("BOSUN_BUILD_DATE")
        .ok()
        .filter(|d| !d.is_empty())
        .or_else(|| git(&["log", "-1", "--format=%cs"]))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=BOSUN_COMMIT={commit}");
    println!("cargo:rustc-env=BOSUN_COMMIT_DATE={date}");
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn pack_relative_relocations() {
    println!("cargo:rerun-if-env-changed=CC");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let packed = target_os == "linux" && target_env == "gnu" && linker_packs_relocations();
    if packed {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let relr = if packed { "packed" } else { "unsupported" };
    println!("cargo:rustc-env=BOSUN_RELR={relr}");
}

/// Whether the C compiler (rustc's linker driver on this target) links a program with packed
/// relative relocations, silently.
fn linker_packs_relocations() -> bool {
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
