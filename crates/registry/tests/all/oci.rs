//! `kind = "oci"` against a real distribution registry: publish, resolve through a signature by
//! a pinned key, fetch the signed bytes; a foreign key or a moved tag resolves nothing.

use bosun_oci::{Annotations, Artifact, Repository};
use bosun_registry::config::{RegistryConfig, RegistryKind};
use bosun_registry::oci::{client_for, open, publish};
use bosun_registry::publish::prepare_plugin;
use bosun_registry::source::{ArtifactKind, Signer};
use bosun_registry::{RegistryError, Requested};
use pretty_assertions::assert_eq;

use crate::oci_peers::LocalRegistry;
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

fn config(registry: &LocalRegistry, keyid: String) -> RegistryConfig {
    RegistryConfig {
        kind: RegistryKind::Oci,
        url: Some(format!("{}/acme", registry.address)),
        path: None,
        keys: vec![keyid],
        timeout_secs: Some(10),
        auth: None,
    }
}

async fn published(registry: &LocalRegistry, seed: u8) -> bosun_registry::oci::PublishedOci {
    let plugin = tempfile::tempdir().unwrap();
    let dir = plugin.path().join("weather");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), MANIFEST).unwrap();
    let prepared = prepare_plugin(&dir).unwrap();
    let (client, namespace) = client_for(&format!("{}/acme", registry.address), None).unwrap();
    publish(&client, &namespace, prepared, &key(seed))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_plugin_published_to_oci_resolves_through_its_signature_and_fetches() {
    let registry = LocalRegistry::start();
    let pushed = published(&registry, 31).await;
    let home = tempfile::tempdir().unwrap();
    let source = open(
        "corp",
        &config(&registry, key(31).public().keyid()),
        home.path(),
    )
    .unwrap();
    let target = source
        .resolve(
            ArtifactKind::Plugin,
            &Requested::parse("weather").unwrap(),
            now(),
        )
        .await
        .unwrap();
    assert_eq!(target.claims, pushed.claims);
    assert_eq!(target.file, "mod.ts");
    assert_eq!(target.location, format!("acme/weather@{}", pushed.manifest));
    assert!(matches!(target.signer, Signer::Signed { ref role, .. } if role == "oci-signature"));
    let bytes = source
        .fetch(&target, &bosun_registry::fetch::Quiet)
        .await
        .unwrap();
    assert_eq!(bytes, MANIFEST.as_bytes());
    // The same version is never pushed twice.
    let plugin = tempfile::tempdir().unwrap();
    let dir = plugin.path().join("weather");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), MANIFEST).unwrap();
    let (client, namespace) = client_for(&format!("{}/acme", registry.address), None).unwrap();
    let again = publish(&client, &namespace, prepare_plugin(&dir).unwrap(), &key(31)).await;
    assert!(matches!(again, Err(RegistryError::Config { .. })));
}

#[tokio::test]
async fn an_oci_plugin_signed_by_an_unpinned_key_does_not_resolve() {
    let registry = LocalRegistry::start();
    published(&registry, 32).await;
    let home = tempfile::tempdir().unwrap();
    let source = open(
        "corp",
        &config(&registry, key(33).public().keyid()),
        home.path(),
    )
    .unwrap();
    let error = source
        .resolve(
            ArtifactKind::Plugin,
            &Requested::parse("weather@1.2.0").unwrap(),
            now(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::Threshold { valid: 0, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn an_oci_tag_moved_to_unsigned_content_does_not_resolve() {
    let registry = LocalRegistry::start();
    published(&registry, 34).await;
    // Someone with push rights but not the key moves the tag to other content.
    let (client, _) = client_for(&registry.address, None).unwrap();
    let repository: Repository = "acme/weather".parse().unwrap();
    let swapped = Artifact::builder(bosun_registry::oci::PLUGIN_ARTIFACT)
        .layer(
            "application/typescript",
            &b"export const evil = 1;"[..],
            Annotations::new(),
        )
        .build();
    client
        .push_artifact(&repository, &swapped, Some(&"1.2.0".parse().unwrap()))
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let source = open(
        "corp",
        &config(&registry, key(34).public().keyid()),
        home.path(),
    )
    .unwrap();
    let error = source
        .resolve(
            ArtifactKind::Plugin,
            &Requested::parse("weather").unwrap(),
            now(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::Threshold { valid: 0, .. }),
        "{error}"
    );
}

#[test]
fn an_oci_source_without_a_pinned_key_is_refused() {
    let config = RegistryConfig {
        kind: RegistryKind::Oci,
        url: Some("registry.example.com/acme".to_owned()),
        path: None,
        keys: vec![],
        timeout_secs: None,
        auth: None,
    };
    let home = tempfile::tempdir().unwrap();
    assert!(matches!(
        open("corp", &config, home.path()),
        Err(RegistryError::Config { .. })
    ));
}
