//! Builds the guest workspace (`guests/Cargo.toml`: the SDK, `examples/plugins/*`,
//! `tests/programs/*`) for `wasm32-wasip2` and writes `$OUT_DIR/guests.rs`, one path constant
//! per component, in the manner of wasmtime's test-programs artefacts.
//!
//! The guests get their own target directory (`target/guests`, or `$BOSUN_GUEST_TARGET_DIR`),
//! so this nested cargo never waits on the outer build's lock, and every profile of the outer
//! build (check, clippy, test, release) shares one guest build. The nested cargo joins the outer
//! jobserver through `CARGO_MAKEFLAGS`, so the machine is not oversubscribed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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

    println!("cargo:rerun-if-env-changed=BOSUN_GUEST_TARGET_DIR");
    for watched in [
        "guests/Cargo.toml",
        "guests/Cargo.lock",
        "crates/sdk",
        "examples/plugins",
        "tests/programs",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    guest_build::check_target_installed("Bosun's test plugins")?;
    let packages = guest_packages(&guests)?;

    let status = nested_cargo()
        .args([
            "build",
            "--release",
            "--locked",
            "--workspace",
            // The JavaScript engine needs a C toolchain for wasm; crates/js builds it.
            "--exclude",
            "bosun-js-engine",
            "--target",
            TARGET,
        ])
        .arg("--manifest-path")
        .arg(&guests)
        .env("CARGO_TARGET_DIR", &target_dir)
        .status()
        .map_err(|e| format!("running cargo for the guests: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the guests failed ({status}); reproduce with\n  CARGO_TARGET_DIR={} cargo build --release --locked --workspace --target {TARGET} --manifest-path {}",
            target_dir.display(),
            guests.display()
        ));
    }

    let out_dir = target_dir.join(TARGET).join("release");
    let mut code = String::new();
    let mut lists: [(&str, Vec<(String, String)>); 3] = [
        ("all", Vec::new()),
        ("examples", Vec::new()),
        ("programs", Vec::new()),
    ];
    for package in &packages {
        let wasm = out_dir.join(format!("{}.wasm", package.lib_name));
        if !wasm.is_file() {
            return Err(format!(
                "cargo built the guests but {} is missing",
                wasm.display()
            ));
        }
        let path = wasm.display().to_string();
        let constant = package.name.to_uppercase().replace('-', "_");
        let _ = writeln!(
            code,
            "/// The `{}` component, built from `{}`.\npub const {constant}: &str = {path:?};",
            package.name, package.dir
        );
        lists[0].1.push((package.name.clone(), constant.clone()));
        let group = if package.dir.starts_with("examples/") {
            1
        } else {
            2
        };
        lists[group].1.push((package.name.clone(), constant));
    }
    for (function, entries) in &lists {
        let doc = match *function {
            "all" => "Every guest component: (package name, path).",
            "examples" => "The example plugins (`examples/plugins`): (package name, path).",
            _ => "The hostile test programs (`tests/programs`): (package name, path).",
        };
        let _ = writeln!(
            code,
            "/// {doc}\npub fn {function}() -> &'static [(&'static str, &'static str)] {{\n    &["
        );
        for (name, constant) in entries {
            let _ = writeln!(code, "        ({name:?}, {constant}),");
        }
        let _ = writeln!(code, "    ]\n}}");
    }
    let generated = PathBuf::from(env_var("OUT_DIR")?).join("guests.rs");
    std::fs::write(&generated, code).map_err(|e| format!("writing {}: {e}", generated.display()))
}

/// A guest package that builds a component.
struct GuestPackage {
    name: String,
    lib_name: String,
    /// Its directory relative to the workspace root, with `/`.
    dir: String,
}

/// The packages of the guest workspace with a `cdylib` target, sorted by name.
fn guest_packages(guests: &Path) -> Result<Vec<GuestPackage>, String> {
    let output = nested_cargo()
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(guests)
        .output()
        .map_err(|e| format!("running cargo metadata for the guests: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata for {} failed:\n{}",
            guests.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let stdout = String::from_utf8(output.stdout)
        .map_err(|e| format!("cargo metadata printed something that is not UTF-8: {e}"))?;
    let metadata = cargo_metadata::MetadataCommand::parse(stdout)
        .map_err(|e| format!("cargo metadata printed something unexpected: {e}"))?;
    let root = metadata
        .workspace_root
        .parent()
        .ok_or("the guest workspace has no parent directory")?
        .canonicalize()
        .map_err(|e| format!("resolving the repository root: {e}"))?;
    let mut packages = Vec::new();
    for package in &metadata.packages {
        if package.name.as_str() == "bosun-js-engine" {
            continue;
        }
        let Some(cdylib) = package
            .targets
            .iter()
            .find(|t| t.kind.contains(&cargo_metadata::TargetKind::CDyLib))
        else {
            continue;
        };
        let dir = package
            .manifest_path
            .parent()
            .and_then(|dir| dir.as_std_path().strip_prefix(&root).ok())
            .map(|dir| dir.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        packages.push(GuestPackage {
            name: package.name.to_string(),
            lib_name: cdylib.name.replace('-', "_"),
            dir,
        });
    }
    packages.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(packages)
}
