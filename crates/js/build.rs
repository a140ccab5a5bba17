//! Builds Bosun's JavaScript engine (`crates/js/engine`, QuickJS through rquickjs) for
//! `wasm32-wasip2` and embeds it in this crate.
//!
//! QuickJS is C, so the build needs a C compiler for wasm. rquickjs's own build script would
//! download a wasi-sdk; Bosun uses Debian's packages instead (`clang-19 lld-19 llvm-19 wasi-libc
//! libclang-rt-19-dev-wasm32`, installed by `scripts/setup`) and points the compiler at them:
//! `RQUICKJS_SYS_NO_WASI_SDK=1`, `CC_wasm32_wasip2=clang-19`, `AR_wasm32_wasip2=llvm-ar-19`, and
//! a sysroot in `OUT_DIR` whose `include` is Debian's wasm32-wasi headers. Each can be
//! overridden from the environment.
//!
//! The engine shares the guest target directory (`target/guests`, or `$BOSUN_GUEST_TARGET_DIR`)
//! with the test programs, so every profile of the outer build reuses one engine build.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use sha2::Digest;

const PACKAGE: &str = "bosun-js-engine";

#[path = "../../build-support/guest_build.rs"]
mod guest_build;

use guest_build::{Guests, TARGET, env_var, nested_cargo};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let Guests {
        root,
        manifest: guests,
        target_dir,
    } = guest_build::guests()?;
    let out_dir = PathBuf::from(env_var("OUT_DIR")?);

    for var in [
        "BOSUN_GUEST_TARGET_DIR",
        "CC_wasm32_wasip2",
        "AR_wasm32_wasip2",
        "CFLAGS_wasm32_wasip2",
        "BOSUN_WASI_INCLUDE",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    for watched in [
        "guests/Cargo.toml",
        "guests/Cargo.lock",
        "crates/js/engine",
        "crates/js/wit",
        "crates/sdk/src",
        "crates/sdk/wit",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    let cc = env::var("CC_wasm32_wasip2").unwrap_or_else(|_| "clang-19".into());
    let ar = env::var("AR_wasm32_wasip2").unwrap_or_else(|_| "llvm-ar-19".into());
    let cflags = match env::var("CFLAGS_wasm32_wasip2") {
        Ok(flags) => flags,
        Err(_) => format!("--sysroot={}", sysroot(&out_dir)?.display()),
    };
    check_tool(&cc)?;
    check_tool(&ar)?;

    let status = nested_cargo()
        .args([
            "build",
            "--release",
            "--locked",
            "-p",
            PACKAGE,
            "--target",
            TARGET,
        ])
        .arg("--manifest-path")
        .arg(&guests)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("RQUICKJS_SYS_NO_WASI_SDK", "1")
        .env("CC_wasm32_wasip2", &cc)
        .env("AR_wasm32_wasip2", &ar)
        .env("CFLAGS_wasm32_wasip2", &cflags)
        .status()
        .map_err(|e| format!("running cargo for the JavaScript engine: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the JavaScript engine failed ({status}); reproduce with\n  RQUICKJS_SYS_NO_WASI_SDK=1 CC_wasm32_wasip2={cc} AR_wasm32_wasip2={ar} CFLAGS_wasm32_wasip2='{cflags}' CARGO_TARGET_DIR={} cargo build --release --locked -p {PACKAGE} --target {TARGET} --manifest-path {}",
            target_dir.display(),
            guests.display()
        ));
    }
    let wasm = target_dir
        .join(TARGET)
        .join("release")
        .join("bosun_js_engine.wasm");
    let embedded = out_dir.join("bosun_js_engine.wasm");
    let bytes = std::fs::read(&wasm).map_err(|e| format!("reading {}: {e}", wasm.display()))?;
    std::fs::write(&embedded, &bytes)
        .map_err(|e| format!("writing {}: {e}", embedded.display()))?;
    // The engine's digest, so a host does not hash its megabytes on every start.
    let digest: [u8; 32] = sha2::Sha256::digest(&bytes).into();
    let digest_rs = out_dir.join("bosun_js_engine_sha256.rs");
    std::fs::write(&digest_rs, format!("{digest:?}\n"))
        .map_err(|e| format!("writing {}: {e}", digest_rs.display()))?;
    Ok(())
}

/// A sysroot whose `include` is Debian's wasm32-wasi headers (what `wasi-libc` installs).
fn sysroot(out_dir: &Path) -> Result<PathBuf, String> {
    let include =
        env::var("BOSUN_WASI_INCLUDE").unwrap_or_else(|_| "/usr/include/wasm32-wasi".into());
    if !Path::new(&include).join("stdlib.h").is_file() {
        return Err(format!(
            "the wasm32-wasi C headers are not at {include}; install them with\n  apt-get install clang-19 lld-19 llvm-19 wasi-libc libclang-rt-19-dev-wasm32\n(or run scripts/setup), or set BOSUN_WASI_INCLUDE to their directory"
        ));
    }
    let sysroot = out_dir.join("wasi-sysroot");
    std::fs::create_dir_all(&sysroot)
        .map_err(|e| format!("creating {}: {e}", sysroot.display()))?;
    let link = sysroot.join("include");
    if std::fs::read_link(&link).ok().as_deref() != Some(Path::new(&include)) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&include, &link)
            .map_err(|e| format!("linking {} to {include}: {e}", link.display()))?;
    }
    Ok(sysroot)
}

fn check_tool(tool: &str) -> Result<(), String> {
    match Command::new(tool).arg("--version").output() {
        Ok(output) if output.status.success() => Ok(()),
        _ => Err(format!(
            "{tool} is needed to build the JavaScript engine (QuickJS is C) and was not found; install it with\n  apt-get install clang-19 lld-19 llvm-19 wasi-libc libclang-rt-19-dev-wasm32\n(or run scripts/setup)"
        )),
    }
}
