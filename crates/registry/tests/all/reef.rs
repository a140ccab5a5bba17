//! Reef's layout served on loopback, read unchanged: catalog, cache, checksums, hostile
//! entries, a source that hangs or never stops sending.

use std::path::Path;
use std::time::Duration;

use bosun_registry::fetch::{Origin, Quiet};
use bosun_registry::reef::ReefSource;
use bosun_registry::source::{ArtifactKind, Source};
use bosun_registry::{RegistryError, Requested};
use serde_json::json;

use crate::repo::{now, sha};
use crate::server::serve;

pub const MOD_TS: &str = r#"export const manifest = {
  name: "weather",
  version: "1.0.0",
  description: "Weather",
  classification: "PUBLIC",
  trust: "sandboxed",
  declaredEndpoints: ["https://api.weather.example"],
};
export async function activate(ctx) {}
"#;

/// A Reef tree: one good plugin, hostile entries, one skill.
pub fn reef_tree(root: &Path, checksum: Option<String>) {
    let dir = root.join("plugins/weather/1.0.0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), MOD_TS).unwrap();
    let entry = |name: &str, version: &str, sum: String| {
        json!({
            "name": name, "version": version, "description": "Weather by city", "author": "someone",
            "classification": "PUBLIC", "trust": "sandboxed", "tags": ["weather"], "checksum": sum,
            "publishedAt": "2026-03-01T00:00:00Z", "declaredEndpoints": ["https://api.weather.example"],
        })
    };
    let good = checksum.unwrap_or_else(|| sha(MOD_TS.as_bytes()));
    let catalog = json!({
        "generatedAt": "2026-03-01T00:00:00Z",
        "entries": [
            entry("weather", "1.0.0", good.clone()),
            entry("../../etc", "1.0.0", good.clone()),
            entry("weather", "../../../x", good.clone()),
            entry("we\u{202e}ather", "1.0.0", good.clone()),
            entry("Weather", "1.0.0", good.clone()),
            entry("weather", "2.0.0", "not-a-checksum".to_owned()),
        ],
    });
    std::fs::create_dir_all(root.join("plugins/index")).unwrap();
    std::fs::write(root.join("plugins/index/catalog.json"), catalog.to_string()).unwrap();
    let skill =
        "---\nname: haiku\nversion: 1.0.0\ndescription: Writes haiku\n---\nWrite a haiku.\n";
    std::fs::create_dir_all(root.join("skills/haiku/1.0.0")).unwrap();
    std::fs::write(root.join("skills/haiku/1.0.0/SKILL.md"), skill).unwrap();
    std::fs::create_dir_all(root.join("index")).unwrap();
    std::fs::write(
        root.join("index/catalog.json"),
        json!({"generatedAt": "x", "entries": [{"name": "haiku", "version": "1.0.0", "description": "Writes haiku",
            "author": "a", "tags": ["poetry"], "category": "writing", "classificationCeiling": "PUBLIC",
            "checksum": sha(skill.as_bytes()), "publishedAt": "x"}]}).to_string(),
    )
    .unwrap();
}

#[tokio::test]
async fn reef_is_read_unchanged_and_hostile_entries_are_left_out() {
    let tree = tempfile::tempdir().unwrap();
    reef_tree(tree.path(), None);
    let server = serve(tree.path().to_owned()).await;
    let home = tempfile::tempdir().unwrap();
    let reef = ReefSource::new(
        "reef",
        Origin::http(&server.url, Duration::from_secs(5)).unwrap(),
        home.path(),
    );
    let plugins = reef.entries(ArtifactKind::Plugin, now()).await.unwrap();
    let names: Vec<(&str, &str)> = plugins
        .iter()
        .map(|t| (t.claims.name.as_str(), t.claims.version.as_str()))
        .collect();
    assert_eq!(names, [("weather", "1.0.0")]);
    assert_eq!(
        plugins[0].signer.describe(),
        format!("unsigned: checksum from the same origin ({})", server.url)
    );
    let target = reef
        .resolve(
            ArtifactKind::Plugin,
            &Requested::parse("weather").unwrap(),
            now(),
        )
        .await
        .unwrap();
    assert_eq!(target.location, "plugins/weather/1.0.0/mod.ts");
    assert_eq!(
        reef.fetch(&target, &Quiet).await.unwrap(),
        MOD_TS.as_bytes()
    );
    let skills = reef.entries(ArtifactKind::Skill, now()).await.unwrap();
    assert_eq!(skills[0].location, "skills/haiku/1.0.0/SKILL.md");
    assert!(skills[0].claims.tags.contains(&"writing".to_owned()));
    // Nothing was ever asked for outside the layout.
    let asked = server.requests.lock().unwrap().clone();
    assert!(
        asked.iter().all(|p| !p.contains("..") && !p.contains('%')),
        "{asked:?}"
    );
}

#[tokio::test]
async fn reef_checksum_mismatch_is_refused() {
    let tree = tempfile::tempdir().unwrap();
    reef_tree(tree.path(), Some("0".repeat(64)));
    let server = serve(tree.path().to_owned()).await;
    let home = tempfile::tempdir().unwrap();
    let reef = ReefSource::new(
        "reef",
        Origin::http(&server.url, Duration::from_secs(5)).unwrap(),
        home.path(),
    );
    let target = reef
        .resolve(
            ArtifactKind::Plugin,
            &Requested::parse("weather@1.0.0").unwrap(),
            now(),
        )
        .await
        .unwrap();
    let error = reef.fetch(&target, &Quiet).await.unwrap_err();
    assert!(matches!(error, RegistryError::Digest { .. }), "{error}");
}

#[tokio::test]
async fn reef_catalog_is_cached_for_an_hour_then_stale_with_a_warning() {
    let tree = tempfile::tempdir().unwrap();
    reef_tree(tree.path(), None);
    let server = serve(tree.path().to_owned()).await;
    let home = tempfile::tempdir().unwrap();
    let reef = ReefSource::new(
        "reef",
        Origin::http(&server.url, Duration::from_secs(5)).unwrap(),
        home.path(),
    );
    reef.entries(ArtifactKind::Plugin, now()).await.unwrap();
    std::fs::remove_file(tree.path().join("plugins/index/catalog.json")).unwrap();
    let count = || {
        server
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.ends_with("catalog.json"))
            .count()
    };
    assert_eq!(count(), 1);
    reef.entries(ArtifactKind::Plugin, now() + chrono::Duration::minutes(59))
        .await
        .unwrap();
    assert_eq!(count(), 1, "within the hour the cache answers");
    assert!(reef.take_warnings().is_empty());
    let stale = reef
        .entries(ArtifactKind::Plugin, now() + chrono::Duration::minutes(61))
        .await
        .unwrap();
    assert_eq!(count(), 2, "after the hour the origin is asked again");
    assert_eq!(stale.len(), 1);
    assert_eq!(reef.take_warnings().len(), 1);
}

#[tokio::test]
async fn a_source_that_hangs_times_out() {
    let tree = tempfile::tempdir().unwrap();
    let server = serve(tree.path().to_owned()).await;
    let origin = Origin::http(&format!("{}hang/", server.url), Duration::from_secs(1)).unwrap();
    let started = std::time::Instant::now();
    let error = origin
        .get("plugins/index/catalog.json", 1024, &Quiet)
        .await
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::Timeout { seconds: 1, .. }),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_source_sending_more_than_allowed_is_cut_off() {
    let tree = tempfile::tempdir().unwrap();
    let server = serve(tree.path().to_owned()).await;
    let origin = Origin::http(&format!("{}endless/", server.url), Duration::from_secs(20)).unwrap();
    let error = origin
        .get("plugins/weather/1.0.0/mod.ts", 100_000, &Quiet)
        .await
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::TooLarge { limit: 100_000, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn a_busy_or_failing_source_is_asked_again_a_bounded_number_of_times() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("files")).unwrap();
    std::fs::write(tree.path().join("files/catalog.json"), "{}").unwrap();
    let server = serve(tree.path().to_owned()).await;
    let origin = Origin::http(&server.url, Duration::from_secs(20)).unwrap();
    let path = "/files/catalog.json";
    // Busy, then overloaded with a Retry-After the client honours, then the file.
    server.script(path, "503 Service Unavailable", &[]);
    server.script(path, "429 Too Many Requests", &[("Retry-After", "1")]);
    let started = std::time::Instant::now();
    let bytes = origin
        .get("files/catalog.json", 1024, &Quiet)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bytes, b"{}");
    assert_eq!(server.asked(path), 3);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );

    // Failing every time: the bound, then the status.
    for _ in 0..bosun_registry::fetch::MAX_ATTEMPTS {
        server.script(path, "500 Internal Server Error", &[]);
    }
    let error = origin
        .get("files/catalog.json", 1024, &Quiet)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("HTTP 500"), "{error}");
    assert_eq!(
        server.asked(path),
        3 + bosun_registry::fetch::MAX_ATTEMPTS as usize
    );

    // A client error is not tried again, and a wait longer than Bosun's bound ends it at once.
    let before = server.asked(path);
    server.script(path, "403 Forbidden", &[]);
    assert!(
        origin
            .get("files/catalog.json", 1024, &Quiet)
            .await
            .is_err()
    );
    assert_eq!(server.asked(path), before + 1);
    server.script(path, "429 Too Many Requests", &[("Retry-After", "3600")]);
    let started = std::time::Instant::now();
    let error = origin
        .get("files/catalog.json", 1024, &Quiet)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("3600"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_static_hosts_redirects_are_followed_and_a_loop_is_cut() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("files")).unwrap();
    std::fs::write(tree.path().join("files/catalog.json"), "{}").unwrap();
    let server = serve(tree.path().to_owned()).await;
    let other = serve(tree.path().to_owned()).await;
    let origin = Origin::http(&server.url, Duration::from_secs(20)).unwrap();
    for (i, status) in [
        "301 Moved Permanently",
        "302 Found",
        "303 See Other",
        "307 Temporary Redirect",
        "308 Permanent Redirect",
    ]
    .into_iter()
    .enumerate()
    {
        let from = format!("/moved{i}/catalog.json");
        // Relative, and to another host of the same scheme (a CDN), as static hosts do.
        server.script(&from, status, &[("Location", "/hop/catalog.json")]);
        server.script(
            "/hop/catalog.json",
            status,
            &[("Location", &format!("{}files/catalog.json", other.url))],
        );
        let bytes = origin
            .get(&from[1..], 1024, &Quiet)
            .await
            .unwrap_or_else(|e| panic!("{status}: {e}"))
            .unwrap();
        assert_eq!(bytes, b"{}", "{status}");
    }
    assert_eq!(other.asked("/files/catalog.json"), 5);

    for _ in 0..=bosun_registry::fetch::MAX_REDIRECTS {
        server.script(
            "/loop/catalog.json",
            "302 Found",
            &[("Location", "/loop/catalog.json")],
        );
    }
    let error = origin
        .get("loop/catalog.json", 1024, &Quiet)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("redirects"), "{error}");
    assert_eq!(
        server.asked("/loop/catalog.json"),
        bosun_registry::fetch::MAX_REDIRECTS + 1
    );
}
