//! The files `bosun plugins new NAME` writes (crates/sdk/template) make a crate that builds for
//! wasm32-wasip2 and passes its own tests. The template names the SDK as crates.io's
//! `bosun-sdk = "0.1"`; a `[patch.crates-io]` points it at the copy of the SDK written into the
//! crate, as `bosun plugins new` does, so the crate builds away from this repository.

use std::path::Path;

use super::{cargo, root, run};

/// Writes the template into `dir` as the CLI does: `{{name}}` and `{{name_snake}}` replaced,
/// `Cargo.toml.tmpl` written as `Cargo.toml` and `gitignore` as `.gitignore`.
fn render(template: &Path, dir: &Path, name: &str) {
    let mut pending = vec![template.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path.strip_prefix(template).unwrap().to_str().unwrap();
            let target = match relative {
                "Cargo.toml.tmpl" => "Cargo.toml",
                "gitignore" => ".gitignore",
                other => other,
            };
            let text = std::fs::read_to_string(&path)
                .unwrap()
                .replace("{{name}}", name)
                .replace("{{name_snake}}", &name.replace('-', "_"));
            let target = dir.join(target);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(target, text).unwrap();
        }
    }
}

#[test]
fn template_builds_a_component_and_passes_its_own_tests() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("template-check");
    render(&root().join("crates/sdk/template"), &dir, "template-check");
    for file in [
        "Cargo.toml",
        ".gitignore",
        "build.rs",
        "src/lib.rs",
        "src/spec.rs",
        "src/tests.rs",
    ] {
        assert!(dir.join(file).is_file(), "the template has no {file}");
    }
    // The SDK as `bosun plugins new` writes it into the crate: its own copy, named relatively.
    for (path, text) in bosun_plugins::scaffold::VENDORED_SDK {
        let target = dir.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, text).unwrap();
    }
    std::fs::write(
        dir.join("vendor/bosun-sdk/Cargo.toml"),
        bosun_plugins::scaffold::vendored_sdk_manifest(),
    )
    .unwrap();
    let manifest = dir.join("Cargo.toml");
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    assert!(!text.contains("{{"), "a placeholder is left:\n{text}");
    text.push_str(&bosun_plugins::scaffold::sdk_patch("vendor/bosun-sdk"));
    std::fs::write(&manifest, text).unwrap();
    // The guest workspace's lock pins the same dependency versions the SDK is built with.
    std::fs::copy(root().join("guests/Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    let mut build = cargo();
    build
        .current_dir(&dir)
        .args(["build", "--release", "--target", "wasm32-wasip2"]);
    run(build);
    let wasm = super::guest_target_dir().join("wasm32-wasip2/release/template_check.wasm");
    let bytes = std::fs::read(&wasm).unwrap();
    assert_eq!(&bytes[..8], b"\0asm\x0d\x00\x01\x00", "not a component");

    let mut test = cargo();
    test.current_dir(&dir).arg("test");
    run(test);
}
