//! Publishing to a folder catalog and reading it back through the same client.

use bosun_registry::key::PrivateKey;
use bosun_registry::publish::{Expiry, Signing, init, publish_plugin};
use bosun_registry::source::{ArtifactKind, Source};

use crate::repo::now;

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

#[tokio::test]
async fn a_published_plugin_resolves_fetches_and_verifies() {
    let catalog = tempfile::tempdir().unwrap();
    let key = PrivateKey::from_seed([11; 32]);
    let signing = Signing {
        key: &key,
        now: now(),
        expiry: Expiry::default(),
    };
    init(catalog.path(), &signing).unwrap();
    let plugin = tempfile::tempdir().unwrap();
    let dir = plugin.path().join("weather");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), MANIFEST).unwrap();
    let published = publish_plugin(catalog.path(), &dir, &signing).unwrap();
    assert_eq!(published.path, "plugins/weather/1.2.0/mod.ts");
    assert_eq!(
        published.claims.endpoints.iter().collect::<Vec<_>>(),
        ["https://api.weather.example"]
    );
    // A published version is never replaced.
    assert!(publish_plugin(catalog.path(), &dir, &signing).is_err());

    let home = tempfile::tempdir().unwrap();
    let source = bosun_registry::signed::SignedSource::new(
        "local",
        bosun_registry::fetch::Origin::dir(catalog.path()),
        vec![key.public().keyid()],
        home.path(),
    );
    let requested = bosun_registry::Requested::parse("weather").unwrap();
    let target = source
        .resolve(ArtifactKind::Plugin, &requested, now())
        .await
        .unwrap();
    assert_eq!(target.claims, published.claims);
    let bytes = source
        .fetch(&target, &bosun_registry::fetch::Quiet)
        .await
        .unwrap();
    assert_eq!(bytes, MANIFEST.as_bytes());
    // A key that is not the catalog's cannot publish to it.
    let other = PrivateKey::from_seed([12; 32]);
    let error = publish_plugin(
        catalog.path(),
        &dir,
        &Signing {
            key: &other,
            ..signing
        },
    )
    .unwrap_err();
    assert!(
        matches!(error, bosun_registry::RegistryError::Key { .. }),
        "{error}"
    );
}
