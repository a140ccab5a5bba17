//! Against a real distribution registry: artifacts pushed and pulled by digest, chunked
//! uploads, folder artifacts, the referrers fallback and the `.sig` tag, a blob tampered with in
//! the registry's own storage, tag listing, and the image layout round trip.

use bosun_oci::wasm::WASM_CONFIG;
use bosun_oci::{
    Annotations, Artifact, Layout, Limits, OciError, Repository, Tag, TreeKind, UnpackLimits,
    WasmKind, read_tree_artifact, read_wasm_artifact, tree_artifact, unpack, wasm_artifact,
};
use pretty_assertions::assert_eq;

use super::peers::LocalRegistry;
use super::{component, fixed_annotations};

fn repo(name: &str) -> Repository {
    name.parse().unwrap()
}

fn tag(name: &str) -> Tag {
    name.parse().unwrap()
}

#[tokio::test]
async fn a_component_round_trips_by_digest() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let wasm = component("says hello", 0);
    let artifact = wasm_artifact(wasm.clone(), "hello.wasm", fixed_annotations()).unwrap();
    let repository = repo("bosun/hello");
    let digest = client
        .push_artifact(&repository, &artifact, Some(&tag("1.0.0")))
        .await
        .unwrap();
    assert_eq!(&digest, artifact.digest());
    let resolved = client.resolve(&repository, &tag("1.0.0")).await.unwrap();
    assert_eq!(resolved.digest, digest);
    assert_eq!(resolved.size, artifact.manifest.bytes.len() as u64);

    let pulled = client.pull_artifact(&repository, &digest).await.unwrap();
    assert_eq!(pulled, artifact);
    let package = read_wasm_artifact(&pulled).unwrap();
    assert_eq!(package.kind, WasmKind::Component);
    assert_eq!(package.wasm.as_ref(), wasm.as_slice());
    assert_eq!(package.config.os, "wasip2");
    assert_eq!(
        package.config.component.as_ref().map(|c| c.imports.clone()),
        Some(vec!["host-log".to_owned()])
    );
    assert_eq!(
        package
            .annotations
            .get("org.opencontainers.image.description")
            .map(String::as_str),
        Some("says hello")
    );
    assert_eq!(
        pulled.manifest.manifest.artifact_type.as_deref(),
        Some(WASM_CONFIG)
    );
}

#[tokio::test]
async fn a_chunked_upload_reassembles_the_blob() {
    let registry = LocalRegistry::start();
    let client = registry.client_with(Limits {
        chunk_bytes: 64 * 1024,
        ..Limits::default()
    });
    let repository = repo("bosun/chunked");
    let wasm = component("big", 300 * 1024);
    let artifact = wasm_artifact(wasm.clone(), "big.wasm", fixed_annotations()).unwrap();
    // Over chunk_bytes: push_artifact sends the layer in five PATCH requests.
    let digest = client
        .push_artifact(&repository, &artifact, None)
        .await
        .unwrap();
    let pulled = client.pull_artifact(&repository, &digest).await.unwrap();
    assert_eq!(
        read_wasm_artifact(&pulled).unwrap().wasm.as_ref(),
        wasm.as_slice()
    );

    let blob = b"a blob in three chunks".repeat(10);
    let blob_digest = client
        .push_blob_chunked(&repository, &blob, 100)
        .await
        .unwrap();
    assert!(client.blob_exists(&repository, &blob_digest).await.unwrap());
    let descriptor = bosun_oci::Descriptor::of("application/octet-stream", &blob);
    assert_eq!(
        client.pull_blob(&repository, &descriptor).await.unwrap(),
        blob
    );
}

#[tokio::test]
async fn a_plugin_folder_round_trips_as_a_tar_artifact() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir(folder.path().join("lib")).unwrap();
    std::fs::write(folder.path().join("mod.ts"), "export const tools = [];\n").unwrap();
    std::fs::write(folder.path().join("lib/util.ts"), "export const x = 1;\n").unwrap();
    let artifact = tree_artifact(
        TreeKind::Plugin,
        folder.path(),
        "weather",
        Annotations::new(),
    )
    .unwrap();
    let again = tree_artifact(
        TreeKind::Plugin,
        folder.path(),
        "weather",
        Annotations::new(),
    )
    .unwrap();
    assert_eq!(
        artifact.digest(),
        again.digest(),
        "packing is deterministic"
    );

    let repository = repo("bosun/weather");
    let digest = client
        .push_artifact(&repository, &artifact, Some(&tag("0.1.0")))
        .await
        .unwrap();
    let pulled = client.pull_artifact(&repository, &digest).await.unwrap();
    assert!(matches!(
        read_tree_artifact(&pulled, TreeKind::Skill),
        Err(OciError::NotAnArtifact { .. })
    ));
    assert!(matches!(
        read_wasm_artifact(&pulled),
        Err(OciError::NotAnArtifact { .. })
    ));
    let layer = read_tree_artifact(&pulled, TreeKind::Plugin).unwrap();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("weather");
    unpack(&layer, &dest, &UnpackLimits::default()).unwrap();
    assert_eq!(
        std::fs::read_to_string(dest.join("lib/util.ts")).unwrap(),
        "export const x = 1;\n"
    );
}

#[tokio::test]
async fn signatures_are_found_through_the_referrers_tag_and_the_sig_tag() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let repository = repo("bosun/signed");
    let subject = wasm_artifact(component("signed", 0), "s.wasm", fixed_annotations()).unwrap();
    let subject_digest = client
        .push_artifact(&repository, &subject, Some(&tag("1.0.0")))
        .await
        .unwrap();
    let signature_type = "application/vnd.bosun.signature.v1";
    let signature = Artifact::builder(signature_type)
        .layer(signature_type, &b"signature bytes"[..], Annotations::new())
        .subject(subject.manifest.descriptor())
        .build();
    let other = Artifact::builder("application/vnd.example.sbom")
        .layer("application/json", &b"{}"[..], Annotations::new())
        .subject(subject.manifest.descriptor())
        .build();
    // distribution 2.8 has no referrers API: the client keeps the sha256-<hex> tag.
    client
        .push_artifact(&repository, &signature, None)
        .await
        .unwrap();
    client
        .push_artifact(&repository, &other, None)
        .await
        .unwrap();
    let referrers = client
        .referrers(&repository, &subject_digest, Some(signature_type))
        .await
        .unwrap();
    assert_eq!(
        referrers
            .iter()
            .map(|d| d.digest.clone())
            .collect::<Vec<_>>(),
        vec![signature.digest().clone()]
    );
    let all = client
        .referrers(&repository, &subject_digest, None)
        .await
        .unwrap();
    assert_eq!(all.len(), 2);

    assert_eq!(
        client
            .signature_tag(&repository, &subject_digest)
            .await
            .unwrap(),
        None
    );
    let cosign_style = Artifact::builder("application/vnd.dev.cosign.artifact.sig.v1+json")
        .layer(
            "application/vnd.dev.cosign.simplesigning.v1+json",
            &b"{}"[..],
            Annotations::new(),
        )
        .build();
    let sig_tag: Tag = subject_digest.signature_tag().parse().unwrap();
    client
        .push_artifact(&repository, &cosign_style, Some(&sig_tag))
        .await
        .unwrap();
    let tagged = client
        .signature_tag(&repository, &subject_digest)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&tagged.digest, cosign_style.digest());
    let candidates = client
        .signatures(&repository, &subject_digest, signature_type)
        .await
        .unwrap();
    assert_eq!(
        candidates
            .iter()
            .map(|d| d.digest.clone())
            .collect::<Vec<_>>(),
        vec![signature.digest().clone(), cosign_style.digest().clone()]
    );
}

#[tokio::test]
async fn a_blob_tampered_with_in_registry_storage_is_refused() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let repository = repo("bosun/tampered");
    let artifact = wasm_artifact(component("honest", 0), "h.wasm", fixed_annotations()).unwrap();
    let digest = client
        .push_artifact(&repository, &artifact, None)
        .await
        .unwrap();
    let layer = &artifact.layers()[0].descriptor;
    let file = registry.blob_file(layer.digest.hex());
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let error = client
        .pull_artifact(&repository, &digest)
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::DigestMismatch { .. }), "{error}");
    assert_eq!(error.code(), "denied");

    // And to a file: nothing is left behind, not even the partial download.
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("h.wasm");
    let error = client
        .pull_blob_to_file(&repository, layer, &path, |_| {})
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::DigestMismatch { .. }), "{error}");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

/// The partial download's name cannot be known in advance: a link planted at the name it once
/// had (`<file>.partial`) is not written through, and the blob lands as a regular file.
#[tokio::test]
async fn a_download_is_not_written_through_a_link_planted_beside_it() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let repository = repo("bosun/planted");
    let artifact = wasm_artifact(component("planted", 0), "p.wasm", fixed_annotations()).unwrap();
    client
        .push_artifact(&repository, &artifact, None)
        .await
        .unwrap();
    let layer = &artifact.layers()[0].descriptor;
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("theirs");
    std::fs::write(&target, b"theirs").unwrap();
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("p.wasm");
    std::os::unix::fs::symlink(&target, out.path().join("p.wasm.partial")).unwrap();
    client
        .pull_blob_to_file(&repository, layer, &path, |_| {})
        .await
        .unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"theirs");
    assert!(path.symlink_metadata().unwrap().is_file());
    assert_eq!(
        bosun_oci::Digest::of(&std::fs::read(&path).unwrap()),
        layer.digest
    );
}

#[tokio::test]
async fn tags_are_listed_and_a_missing_manifest_is_not_found() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let repository = repo("bosun/tags");
    let artifact = wasm_artifact(component("t", 0), "t.wasm", fixed_annotations()).unwrap();
    for t in ["1.0.0", "1.1.0", "latest"] {
        client
            .push_artifact(&repository, &artifact, Some(&tag(t)))
            .await
            .unwrap();
    }
    let mut tags: Vec<String> = client
        .list_tags(&repository)
        .await
        .unwrap()
        .iter()
        .map(|t| t.to_string())
        .collect();
    tags.sort();
    assert_eq!(tags, ["1.0.0", "1.1.0", "latest"]);
    let missing = client
        .resolve(&repository, &tag("9.9.9"))
        .await
        .unwrap_err();
    assert!(matches!(missing, OciError::NotFound { .. }), "{missing}");
    let unknown = bosun_oci::Digest::of(b"nothing");
    let error = client
        .pull_manifest(&repository, &unknown)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "not_found", "{error}");
}

#[tokio::test]
async fn an_artifact_travels_through_an_image_layout_bundle() {
    let registry = LocalRegistry::start();
    let client = registry.client();
    let source = repo("bosun/bundled");
    let artifact = wasm_artifact(component("bundled", 0), "b.wasm", fixed_annotations()).unwrap();
    let digest = client
        .push_artifact(&source, &artifact, Some(&tag("2.0.0")))
        .await
        .unwrap();
    // Mirror into an air-gapped bundle, then from the bundle into another repository.
    let pulled = client.pull_artifact(&source, &digest).await.unwrap();
    let bundle = tempfile::tempdir().unwrap();
    let layout = Layout::create(bundle.path()).unwrap();
    layout
        .write_artifact(&pulled, Some("bosun/bundled:2.0.0"))
        .unwrap();
    let reopened = Layout::open(bundle.path()).unwrap();
    let named = reopened.resolve("bosun/bundled:2.0.0").unwrap();
    assert_eq!(named.digest, digest);
    let from_bundle = reopened.read_artifact(&named.digest).unwrap();
    assert_eq!(from_bundle, artifact);
    let target = repo("mirror/bundled");
    let mirrored = client
        .push_artifact(&target, &from_bundle, Some(&tag("2.0.0")))
        .await
        .unwrap();
    assert_eq!(mirrored, digest);
}
