//! Interop with Python's ORAS SDK both ways, through the real registry: what the crate pushes
//! `oras` pulls byte for byte, and what `oras` pushes the crate pulls, verifies and reads.

use bosun_oci::wasm::{WASM_CONFIG, WASM_LAYER, WasmConfig};
use bosun_oci::{
    Annotations, Repository, Tag, TreeKind, WasmKind, read_wasm_artifact, tree_artifact,
    wasm_artifact,
};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::peers::{LocalRegistry, oras};
use super::{component, fixed_annotations};

#[tokio::test]
async fn oras_pulls_a_component_the_crate_pushed() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let wasm = component("pushed by bosun", 0);
    let artifact = wasm_artifact(wasm.clone(), "hello.wasm", fixed_annotations()).unwrap();
    let repository: Repository = "interop/hello".parse().unwrap();
    let tag: Tag = "1.0.0".parse().unwrap();
    client
        .push_artifact(&repository, &artifact, Some(&tag))
        .await
        .unwrap();

    let out = tempfile::tempdir().unwrap();
    let target = format!("{}/interop/hello:1.0.0", registry.address);
    let outdir = out.path().join("pulled");
    oras(
        out.path(),
        &["pull", &registry.address, &target, outdir.to_str().unwrap()],
    );
    assert_eq!(std::fs::read(outdir.join("hello.wasm")).unwrap(), wasm);

    let manifest = oras(out.path(), &["manifest", &registry.address, &target]);
    let manifest: Value = serde_json::from_slice(&manifest.stdout).unwrap();
    assert_eq!(manifest["config"]["mediaType"], WASM_CONFIG);
    assert_eq!(manifest["artifactType"], WASM_CONFIG);
    assert_eq!(manifest["layers"][0]["mediaType"], WASM_LAYER);
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.version"],
        "1.0.0"
    );
}

#[tokio::test]
async fn the_crate_pulls_a_component_oras_pushed() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let dir = tempfile::tempdir().unwrap();
    let wasm = component("pushed by oras", 200 * 1024);
    std::fs::write(dir.path().join("tool.wasm"), &wasm).unwrap();
    let config = WasmConfig {
        created: "2026-12-01T00:00:00Z".to_owned(),
        author: None,
        architecture: "wasm".to_owned(),
        os: "wasip2".to_owned(),
        layer_digests: vec![bosun_oci::Digest::of(&wasm).to_string()],
        component: None,
    };
    std::fs::write(
        dir.path().join("config.json"),
        serde_json::to_vec(&config).unwrap(),
    )
    .unwrap();
    let target = format!("{}/interop/tool:2.0.0", registry.address);
    // Chunked on the ORAS side too (64 KiB chunks), so both upload paths meet the crate.
    oras(
        dir.path(),
        &[
            "push",
            &registry.address,
            &target,
            "config.json",
            WASM_CONFIG,
            "--chunked",
            "org.opencontainers.image.description=from oras",
            "--",
            &format!("tool.wasm:{WASM_LAYER}"),
        ],
    );

    let repository: Repository = "interop/tool".parse().unwrap();
    let resolved = client
        .resolve(&repository, &"2.0.0".parse().unwrap())
        .await
        .unwrap();
    let pulled = client
        .pull_artifact(&repository, &resolved.digest)
        .await
        .unwrap();
    let package = read_wasm_artifact(&pulled).unwrap();
    assert_eq!(package.kind, WasmKind::Component);
    assert_eq!(package.wasm.as_ref(), wasm.as_slice());
    assert_eq!(
        package
            .annotations
            .get("org.opencontainers.image.description")
            .map(String::as_str),
        Some("from oras")
    );
}

#[tokio::test]
async fn oras_pulls_a_plugin_folder_the_crate_pushed() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir(folder.path().join("src")).unwrap();
    std::fs::write(folder.path().join("mod.ts"), "export {};\n").unwrap();
    std::fs::write(folder.path().join("src/a.ts"), "export const a = 1;\n").unwrap();
    let artifact = tree_artifact(
        TreeKind::Plugin,
        folder.path(),
        "weather",
        Annotations::new(),
    )
    .unwrap();
    let repository: Repository = "interop/weather".parse().unwrap();
    client
        .push_artifact(&repository, &artifact, Some(&"0.1.0".parse().unwrap()))
        .await
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let outdir = out.path().join("pulled");
    oras(
        out.path(),
        &[
            "pull",
            &registry.address,
            &format!("{}/interop/weather:0.1.0", registry.address),
            outdir.to_str().unwrap(),
        ],
    );
    // ORAS unpacks a tar+gzip layer as a folder.
    assert_eq!(
        std::fs::read_to_string(outdir.join("src/a.ts")).unwrap(),
        "export const a = 1;\n"
    );
    assert_eq!(
        std::fs::read_to_string(outdir.join("mod.ts")).unwrap(),
        "export {};\n"
    );
}
