//! `kind = "dir"` over an OCI image layout: a plugin written into a layout with its signature
//! resolves and fetches through a pinned key; an unsigned layout is labelled so; a layout whose
//! blobs lie, link, leave `blobs/`, are missing or oversized, or whose signature is by an
//! unpinned key, installs nothing.

use std::collections::BTreeMap;
use std::path::Path;

use bosun_oci::manifest::ANNOTATION_REF_NAME;
use bosun_oci::{Annotations, Artifact, Index, Layout};
use bosun_registry::config::{RegistryConfig, RegistryKind};
use bosun_registry::layout::publish;
use bosun_registry::oci::{SIGNATURE_ARTIFACT, SIGNATURE_LAYER};
use bosun_registry::publish::prepare_plugin;
use bosun_registry::source::{ArtifactKind, Signer};
use bosun_registry::{Registries, RegistryError, Requested, Source, Target};
use pretty_assertions::assert_eq;

use crate::repo::{key, now};

const MANIFEST: &str = r#"export const manifest = {
  name: "weather",
  version: "1.2.0",
  description: "Weather by city",
  classification: "PUBLIC",
  trust: "sandboxed",
  declaredEndpoints: ["https://api.weather.example"],
};
export async function activate(ctx) {}
"#;

/// A layout at `root` holding weather 1.2.0 signed by `key(seed)`.
fn bundle(root: &Path, seed: u8) -> bosun_registry::layout::PublishedLayout {
    let plugin = tempfile::tempdir().unwrap();
    let dir = plugin.path().join("weather");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), MANIFEST).unwrap();
    publish(
        root,
        ArtifactKind::Plugin,
        prepare_plugin(&dir).unwrap(),
        &key(seed),
    )
    .unwrap()
}

/// The source `[registries.offline] kind = "dir", path = root, keys = pinned`.
fn source(root: &Path, pinned: &[u8]) -> Box<dyn Source> {
    let config = RegistryConfig {
        kind: RegistryKind::Dir,
        url: None,
        path: Some(root.to_owned()),
        keys: pinned.iter().map(|s| key(*s).public().keyid()).collect(),
        timeout_secs: None,
        auth: None,
    };
    let home = tempfile::tempdir().unwrap();
    Registries::new(&BTreeMap::from([("offline".to_owned(), config)]), None)
        .unwrap()
        .open("offline", home.path())
        .unwrap()
}

async fn resolve(source: &dyn Source) -> Result<Target, RegistryError> {
    source
        .resolve(
            ArtifactKind::Plugin,
            &Requested::parse("weather").unwrap(),
            now(),
        )
        .await
}

async fn fetch(source: &dyn Source, target: &Target) -> Result<Vec<u8>, RegistryError> {
    source.fetch(target, &bosun_registry::fetch::Quiet).await
}

/// The blob file of the plugin's one layer.
fn layer_file(root: &Path, target: &Target) -> std::path::PathBuf {
    root.join("blobs/sha256").join(&target.sha256)
}

#[tokio::test]
async fn a_plugin_written_into_a_layout_is_listed_resolved_through_its_signature_and_fetched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bundle");
    let written = bundle(&root, 41);
    assert_eq!(written.reference, "weather:1.2.0");
    assert!(root.join("oci-layout").is_file(), "a standard layout");

    let source = source(&root, &[41]);
    assert!(source.label().starts_with("signed"), "{}", source.label());
    let listed = source.entries(ArtifactKind::Plugin, now()).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].claims, written.claims);
    assert!(
        source
            .entries(ArtifactKind::Skill, now())
            .await
            .unwrap()
            .is_empty()
    );
    let target = resolve(source.as_ref()).await.unwrap();
    assert_eq!(target.file, "mod.ts");
    assert_eq!(target.location, written.manifest.to_string());
    assert!(matches!(target.signer, Signer::Signed { ref role, .. } if role == "oci-signature"));
    assert_eq!(
        fetch(source.as_ref(), &target).await.unwrap(),
        MANIFEST.as_bytes()
    );

    // A published version is never replaced.
    let plugin = tempfile::tempdir().unwrap();
    let again = plugin.path().join("weather");
    std::fs::create_dir(&again).unwrap();
    std::fs::write(again.join("mod.ts"), MANIFEST.replace("by city", "by town")).unwrap();
    let error = publish(
        &root,
        ArtifactKind::Plugin,
        prepare_plugin(&again).unwrap(),
        &key(41),
    )
    .unwrap_err();
    assert!(error.to_string().contains("never replaced"), "{error}");
    // Nor is a folder that is something else turned into a layout.
    let catalog = dir.path().join("catalog");
    std::fs::create_dir(&catalog).unwrap();
    std::fs::write(catalog.join("root.json"), b"{}").unwrap();
    assert!(
        publish(
            &catalog,
            ArtifactKind::Plugin,
            prepare_plugin(&again).unwrap(),
            &key(41)
        )
        .is_err()
    );
    assert!(!catalog.join("oci-layout").exists());
}

#[tokio::test]
async fn an_unsigned_layout_is_shown_and_installed_as_unsigned() {
    let dir = tempfile::tempdir().unwrap();
    bundle(dir.path(), 42);
    let source = source(dir.path(), &[]);
    assert!(
        source
            .label()
            .starts_with("unsigned: checksum from the same origin"),
        "{}",
        source.label()
    );
    let target = resolve(source.as_ref()).await.unwrap();
    assert!(matches!(target.signer, Signer::Unsigned { .. }));
    assert!(
        target
            .signer
            .describe()
            .starts_with("unsigned: checksum from the same origin")
    );
    assert_eq!(target.claims.name, "weather");
    assert_eq!(target.claims.version, "1.2.0");
    assert_eq!(
        fetch(source.as_ref(), &target).await.unwrap(),
        MANIFEST.as_bytes()
    );
}

#[tokio::test]
async fn a_layout_signed_by_an_unpinned_key_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    bundle(dir.path(), 43);
    let source = source(dir.path(), &[44]);
    let error = resolve(source.as_ref()).await.unwrap_err();
    assert!(
        matches!(error, RegistryError::Threshold { valid: 0, .. }),
        "{error}"
    );
    assert!(
        source
            .entries(ArtifactKind::Plugin, now())
            .await
            .unwrap()
            .is_empty(),
        "an entry no pinned key vouches for is not listed"
    );
    // Its signer is offered for a person to compare, not trusted.
    let layout = bosun_registry::layout::LayoutSource::new("offline", dir.path(), Vec::new());
    assert_eq!(
        layout.signer_keyids().unwrap(),
        vec![key(43).public().keyid()]
    );
}

#[tokio::test]
async fn a_signature_listed_under_the_sig_name_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let written = bundle(dir.path(), 45);
    // Re-list the signature without its subject, under `sha256-<hex>.sig` only.
    let layout = Layout::open(dir.path()).unwrap();
    let signature = layout.read_artifact(&written.signature).unwrap();
    let bare = Artifact::builder(SIGNATURE_ARTIFACT)
        .layer(
            SIGNATURE_LAYER,
            signature.layers()[0].bytes.clone(),
            Annotations::new(),
        )
        .build();
    let mut index: Index = layout.index().unwrap();
    index.manifests.retain(|d| d.digest != written.signature);
    std::fs::write(dir.path().join("index.json"), index.to_vec()).unwrap();
    layout
        .write_artifact(&bare, Some(&written.manifest.signature_tag()))
        .unwrap();
    let source = source(dir.path(), &[45]);
    let target = resolve(source.as_ref()).await.unwrap();
    assert!(matches!(target.signer, Signer::Signed { .. }));
}

#[tokio::test]
async fn a_layout_blob_whose_bytes_do_not_match_its_digest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    bundle(dir.path(), 46);
    let source = source(dir.path(), &[46]);
    let target = resolve(source.as_ref()).await.unwrap();
    let path = layer_file(dir.path(), &target);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 0x20; // same length, other bytes
    std::fs::write(&path, &bytes).unwrap();
    let error = fetch(source.as_ref(), &target).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::Oci(bosun_oci::OciError::DigestMismatch { .. })
        ),
        "{error}"
    );
}

#[tokio::test]
async fn a_layout_blob_bigger_than_its_descriptor_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    bundle(dir.path(), 47);
    let source = source(dir.path(), &[47]);
    let target = resolve(source.as_ref()).await.unwrap();
    let path = layer_file(dir.path(), &target);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend(std::iter::repeat_n(b'x', 1 << 20));
    std::fs::write(&path, &bytes).unwrap();
    let error = fetch(source.as_ref(), &target).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::Oci(bosun_oci::OciError::LengthMismatch { .. })
        ),
        "{error}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_layout_blob_that_is_a_link_or_leaves_blobs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bundle");
    bundle(&root, 48);
    let source = source(&root, &[48]);
    let target = resolve(source.as_ref()).await.unwrap();

    // The layer's file a link to the same bytes elsewhere.
    let path = layer_file(&root, &target);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::copy(&path, &elsewhere).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    let error = fetch(source.as_ref(), &target).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::Oci(bosun_oci::OciError::Layout { .. })
        ),
        "{error}"
    );
    std::fs::remove_file(&path).unwrap();
    std::fs::copy(&elsewhere, &path).unwrap();
    assert!(fetch(source.as_ref(), &target).await.is_ok());

    // `blobs/sha256` itself a link out of the layout.
    let moved = dir.path().join("moved");
    std::fs::rename(root.join("blobs/sha256"), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, root.join("blobs/sha256")).unwrap();
    let error = fetch(source.as_ref(), &target).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::Oci(bosun_oci::OciError::Layout { .. })
        ),
        "{error}"
    );
    std::fs::remove_file(root.join("blobs/sha256")).unwrap();
    std::fs::rename(&moved, root.join("blobs/sha256")).unwrap();

    // A digest that would climb out of `blobs/`: the index does not parse, nothing is read.
    let index = std::fs::read_to_string(root.join("index.json")).unwrap();
    let climbing = index.replacen(
        &format!("sha256:{}", target.location.trim_start_matches("sha256:")),
        "sha256:../../../../etc/passwd",
        1,
    );
    assert_ne!(climbing, index);
    std::fs::write(root.join("index.json"), climbing).unwrap();
    assert!(resolve(source.as_ref()).await.is_err());
    assert!(fetch(source.as_ref(), &target).await.is_err());
}

#[tokio::test]
async fn an_index_pointing_at_a_missing_blob_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    bundle(dir.path(), 49);
    let source = source(dir.path(), &[49]);
    let target = resolve(source.as_ref()).await.unwrap();
    std::fs::remove_file(layer_file(dir.path(), &target)).unwrap();
    let error = fetch(source.as_ref(), &target).await.unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::Oci(bosun_oci::OciError::NotFound { .. })
        ),
        "{error}"
    );
    // An entry naming a manifest the layout lacks is not listed, and does not resolve.
    let layout = Layout::open(dir.path()).unwrap();
    let mut index = layout.index().unwrap();
    let mut ghost = index.manifests[0].clone();
    ghost.digest = bosun_oci::Digest::of(b"no such manifest");
    ghost.annotations = Some(
        [(ANNOTATION_REF_NAME.to_owned(), "ghost:1.0.0".to_owned())]
            .into_iter()
            .collect(),
    );
    index.manifests.push(ghost);
    std::fs::write(dir.path().join("index.json"), index.to_vec()).unwrap();
    let ghost = source
        .resolve(
            ArtifactKind::Plugin,
            &Requested::parse("ghost").unwrap(),
            now(),
        )
        .await
        .unwrap_err();
    assert!(matches!(ghost, RegistryError::NotFound { .. }), "{ghost}");
}

#[tokio::test]
async fn a_skill_written_into_a_layout_is_a_skill_there_and_not_a_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let skill = "---\nname: notes\ndescription: Take notes\nversion: 1.0.0\n---\nWrite it down.\n";
    let written = publish(
        dir.path(),
        ArtifactKind::Skill,
        bosun_registry::publish::Prepared {
            claims: bosun_registry::Claims {
                name: "notes".to_owned(),
                version: "1.0.0".to_owned(),
                ..Default::default()
            },
            file: "SKILL.md",
            bytes: skill.as_bytes().to_vec(),
        },
        &key(50),
    )
    .unwrap();
    assert_eq!(written.reference, "skills/notes:1.0.0");
    let source = source(dir.path(), &[50]);
    assert!(
        source
            .entries(ArtifactKind::Plugin, now())
            .await
            .unwrap()
            .is_empty()
    );
    let target = source
        .resolve(
            ArtifactKind::Skill,
            &Requested::parse("notes").unwrap(),
            now(),
        )
        .await
        .unwrap();
    assert_eq!(target.file, "SKILL.md");
    assert!(matches!(target.signer, Signer::Signed { .. }));
    assert_eq!(
        fetch(source.as_ref(), &target).await.unwrap(),
        skill.as_bytes()
    );
}
