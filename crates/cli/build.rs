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
//!
//! **The unwinder linked in.** Rust's standard library unwinds panics with libgcc's unwinder,
//! which it takes from the shared `libgcc_s.so.1`: one more library for the loader to find, map,
//! relocate and bind at every start, and whose constructor probes the CPU (`cpuid`, a trap to the
//! hypervisor on a virtual machine). Where the C toolchain ships the same unwinder as an archive
//! (`libgcc_eh.a`, what `gcc -static-libgcc` links), it is linked into the binary instead, ahead
//! of `-lgcc_s`, which `--as-needed` then drops. Panics unwind exactly as before (the same code,
//! in the binary); libc stays shared. `BOSUN_UNWINDER` tells the tests which it was
//! (`binary::the_unwinder_is_linked_in_where_the_toolchain_has_it`).
//!
//! **Identical code folded** (release builds): lld's `--icf=all` keeps one copy of functions
//! whose code and relocations are identical, which generic code and derived impls make common.
//! Rust promises no distinct addresses for distinct functions, so nothing may rely on them. Only
//! where rustc links with its own lld (the default on x86_64 Linux) and no flag chose another
//! linker.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    stamp_version();
    pack_relative_relocations();
    link_unwinder();
    fold_identical_code();
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

/// Links `libgcc_eh.a` (libgcc's unwinder, as an archive) into every target of this package, so
/// the binary does not load `libgcc_s.so.1`. A native library of the package comes on the link
/// line before the standard library's `-lgcc_s`, so the unwinder's symbols are found here first.
fn link_unwinder() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // A `crt-static` build links libgcc's archives already.
    let static_crt = std::env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|features| features.split(',').any(|f| f == "crt-static"));
    let archive = (target_os == "linux" && target_env == "gnu" && !static_crt)
        .then(unwinder_archive)
        .flatten();
    let linked = archive.is_some_and(|archive| {
        let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
            return false;
        };
        // Only this archive in the search path: the C toolchain's directory also holds
        // `libgcc_s.so`, which must keep being found where it was.
        let dir = out.join("unwinder");
        let copied = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::copy(&archive, dir.join("libgcc_eh.a")))
            .is_ok();
        if copied {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static:+verbatim=libgcc_eh.a");
        }
        copied
    });
    let unwinder = if linked { "static" } else { "shared" };
    println!("cargo:rustc-env=BOSUN_UNWINDER={unwinder}");
}

/// Where the C compiler keeps `libgcc_eh.a`, if it has one.
fn unwinder_archive() -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let out = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    // A compiler without the file prints its bare name back.
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (path.is_absolute() && path.is_file()).then_some(path)
}

/// `--icf=all` for release links made by rustc's own lld.
fn fold_identical_code() {
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = std::env::var("TARGET").unwrap_or_default();
    // rustc links x86_64 Linux with its own lld unless told otherwise.
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let other_linker = [
        "linker-features",
        "link-self-contained",
        "fuse-ld",
        "linker=",
    ]
    .iter()
    .any(|flag| flags.contains(flag));
    if release && target == "x86_64-unknown-linux-gnu" && !other_linker {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
}
