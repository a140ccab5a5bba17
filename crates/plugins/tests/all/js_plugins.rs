//! Forge and Triggerfish plugins in the catalog: formats, snapshots, trust states.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bosun_plugins::{
    Catalog, CatalogInput, Change, JsManifest, PluginConfig, PluginEntry, PluginFormat,
    PluginScope, PluginState, SourceSnapshot, TrustStore,
};
use chrono::Utc;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{BUILTINS, nested, valid_metadata};

const INDEX: &str =
    "export default function activate(api) {\n  api.registerTool({ name: \"count_text\" });\n}\n";

const WEATHER: &str = r#"import type { PluginManifest } from "../../src/plugin/types.ts";

export const manifest: PluginManifest = {
  name: "weather",
  version: "1.0.0",
  description: "Weather forecasts.",
  classification: "PUBLIC" as const,
  trust: "sandboxed" as const,
  declaredEndpoints: ["https://api.weather.com"],
};

export const toolDefinitions = [];
export function createExecutor(context) {
  return async (name, input) => null;
}
"#;

fn forge_manifest(name: &str, capabilities: &[&str]) -> String {
    serde_json::to_string_pretty(&json!({
        "schemaVersion": 1,
        "apiVersion": "1",
        "name": name,
        "version": "1.0.0",
        "entry": "./index.mjs",
        "capabilities": capabilities,
    }))
    .unwrap()
}

struct Fixture {
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
    config: BTreeMap<String, PluginConfig>,
    trust: TrustStore,
}

impl Fixture {
    fn new() -> Self {
        let home = tempfile::tempdir().unwrap();
        let trust = TrustStore::empty(home.path().join("trust.toml"));
        Self {
            home,
            workspace: tempfile::tempdir().unwrap(),
            config: BTreeMap::new(),
            trust,
        }
    }

    fn root(&self) -> PathBuf {
        self.workspace.path().canonicalize().unwrap()
    }

    fn project_dir(&self, dir: &str) -> PathBuf {
        self.root().join(".bosun").join("plugins").join(dir)
    }

    fn write(&self, dir: &Path, file: &str, text: &str) {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn forge_project_plugin(&self, dir: &str, capabilities: &[&str]) -> PathBuf {
        let path = self.project_dir(dir);
        self.write(&path, "plugin.json", &forge_manifest(dir, capabilities));
        self.write(&path, "index.mjs", INDEX);
        path
    }

    fn catalog(&self) -> Catalog {
        let root = self.root();
        Catalog::build(CatalogInput {
            home: self.home.path(),
            user_plugins: &self.config,
            workspace: Some(&root),
            trust: &self.trust,
            builtins: BUILTINS,
            digests: None,
        })
    }

    fn trust(&mut self, local: &str) {
        let catalog = self.catalog();
        let entry = entry(&catalog, local);
        let record = entry.trust_record(Utc::now()).unwrap();
        self.trust.record(&entry.scope, &entry.local_name, record);
    }
}

fn entry<'a>(catalog: &'a Catalog, local: &str) -> &'a PluginEntry {
    catalog
        .entries()
        .iter()
        .find(|e| e.local_name == local)
        .unwrap_or_else(|| panic!("no {local} in {:?}", catalog.entries()))
}

fn changed(entry: &PluginEntry) -> &Change {
    match &entry.state {
        PluginState::Changed { what } => what,
        other => panic!("{}: {other:?}", entry.local_name),
    }
}

fn invalid_reason(entry: &PluginEntry) -> &str {
    match &entry.state {
        PluginState::Invalid { reason } => reason,
        other => panic!("{}: {other:?}", entry.local_name),
    }
}

#[test]
fn a_forge_plugin_is_untrusted_then_enabled_then_changed_with_the_capability_diff() {
    let mut fx = Fixture::new();
    let dir = fx.forge_project_plugin("count-text", &["tools:register"]);

    let catalog = fx.catalog();
    let e = entry(&catalog, "count-text");
    assert_eq!(e.state, PluginState::Untrusted);
    assert_eq!(e.format, PluginFormat::Forge);
    assert!(e.offers.is_empty() && e.manifest().is_none() && e.source().is_none());
    let js = e.js().unwrap();
    assert_eq!(
        (js.name(), js.version(), js.entry(), js.classification()),
        ("count-text", "1.0.0", "index.mjs", None)
    );
    let snapshot = SourceSnapshot::read(&dir).unwrap();
    assert_eq!(e.sha256.as_deref(), Some(snapshot.sha256()));
    let record = e.trust_record(Utc::now()).unwrap();
    assert_eq!(record.capabilities, ["forge:tools:register"]);
    assert!(record.tools.is_empty());
    assert_eq!(record.version, "1.0.0");

    fx.trust("count-text");
    let catalog = fx.catalog();
    let e = entry(&catalog, "count-text");
    assert_eq!(e.state, PluginState::Enabled);
    assert_eq!(e.source().unwrap().as_ref(), &snapshot);
    assert!(e.bytes().is_none());
    // Its tools are named only once it runs.
    assert!(catalog.resolve("count_text").is_none());
    assert_eq!(catalog.enabled().count(), 1);

    // Any edit to any file changes the hash.
    fx.write(&dir, "lib/helper.mjs", "export const x = 1;\n");
    let catalog = fx.catalog();
    let what = changed(entry(&catalog, "count-text"));
    assert_eq!(what.old_sha256, snapshot.sha256());
    assert_ne!(what.new_sha256, snapshot.sha256());
    assert!(what.added_capabilities.is_empty() && what.removed_capabilities.is_empty());

    // A new capability is listed in the change.
    fx.trust("count-text");
    fx.write(
        &dir,
        "plugin.json",
        &forge_manifest("count-text", &["tools:register", "network:access"]),
    );
    let catalog = fx.catalog();
    let what = changed(entry(&catalog, "count-text"));
    assert_eq!(what.added_capabilities, ["forge:network:access"]);
    assert!(what.removed_capabilities.is_empty());
    assert_eq!(
        (what.old_version.as_str(), what.new_version.as_str()),
        ("1.0.0", "1.0.0")
    );
}

#[test]
fn an_enabled_js_plugin_keeps_the_files_that_were_hashed() {
    let mut fx = Fixture::new();
    let dir = fx.forge_project_plugin("count-text", &["tools:register"]);
    fx.trust("count-text");
    let catalog = fx.catalog();
    // The directory changes after the catalog read it: the engine still gets what was hashed.
    fx.write(&dir, "index.mjs", "export default () => { steal(); }");
    let e = entry(&catalog, "count-text");
    let source = e.source().unwrap();
    assert_eq!(&*source.get("index.mjs").unwrap().bytes, INDEX.as_bytes());
    assert_eq!(e.sha256.as_deref(), Some(source.sha256()));
}

#[test]
fn a_triggerfish_plugin_records_its_endpoints_and_its_trust() {
    let mut fx = Fixture::new();
    let dir = fx.project_dir("weather");
    fx.write(&dir, "mod.ts", WEATHER);
    let catalog = fx.catalog();
    let e = entry(&catalog, "weather");
    assert_eq!(
        (e.format, &e.state),
        (PluginFormat::Triggerfish, &PluginState::Untrusted)
    );
    let Some(JsManifest::Triggerfish(m)) = e.js() else {
        panic!("{:?}", e.js())
    };
    assert_eq!(
        m.endpoint_authorities,
        [bosun_core::Authority::new("api.weather.com", None)]
    );
    assert_eq!(e.js().unwrap().entry(), "mod.ts");
    assert_eq!(
        e.js().unwrap().classification(),
        Some(bosun_core::Classification::Public)
    );
    assert_eq!(
        e.trust_record(Utc::now()).unwrap().capabilities,
        ["net.http:api.weather.com"]
    );

    fx.trust("weather");
    assert_eq!(entry(&fx.catalog(), "weather").state, PluginState::Enabled);

    fx.write(
        &dir,
        "mod.ts",
        &WEATHER
            .replace("\"sandboxed\"", "\"trusted\"")
            .replace("https://api.weather.com", "https://api.weather.com:8443"),
    );
    let catalog = fx.catalog();
    let what = changed(entry(&catalog, "weather"));
    assert_eq!(
        what.added_capabilities,
        ["net.http:api.weather.com:8443", "triggerfish:trusted"]
    );
    assert_eq!(what.removed_capabilities, ["net.http:api.weather.com"]);
}

#[test]
fn a_triggerfish_manifest_that_is_not_a_literal_is_invalid_with_the_reason() {
    let fx = Fixture::new();
    fx.write(
        &fx.project_dir("weather"),
        "mod.ts",
        "const base = { trust: \"trusted\" };\nexport const manifest = { ...base, name: \"weather\" };\n",
    );
    let catalog = fx.catalog();
    let reason = invalid_reason(entry(&catalog, "weather"));
    assert!(
        reason.contains("mod.ts:2:27: the manifest must be a literal object so Bosun can read it without running the plugin"),
        "{reason}"
    );
}

#[test]
fn a_directory_with_a_component_and_a_forge_manifest_is_invalid() {
    let fx = Fixture::new();
    let dir = fx.forge_project_plugin("both", &[]);
    std::fs::write(dir.join("plugin.wasm"), nested(&valid_metadata())).unwrap();
    fx.write(&dir, "mod.ts", WEATHER);
    let catalog = fx.catalog();
    let e = entry(&catalog, "both");
    let reason = invalid_reason(e);
    assert!(
        reason.contains(
            "holds plugin.wasm, plugin.json and mod.ts: a plugin directory holds exactly one of"
        ),
        "{reason}"
    );
    assert!(e.sha256.is_none() && e.trust_record(Utc::now()).is_none());
}

#[test]
fn a_user_forge_plugin_is_named_after_its_directory_not_its_local_name() {
    let mut fx = Fixture::new();
    let plugins = fx.home.path().join("plugins");
    let good = plugins.join("count-text");
    fx.write(&good, "plugin.json", &forge_manifest("count-text", &[]));
    fx.write(&good, "index.mjs", INDEX);
    let bad = plugins.join("renamed");
    fx.write(&bad, "plugin.json", &forge_manifest("count-text", &[]));
    fx.write(&bad, "index.mjs", INDEX);
    fx.config
        .insert("counter".to_owned(), PluginConfig::new("count-text"));
    fx.config
        .insert("other".to_owned(), PluginConfig::new("renamed"));

    let catalog = fx.catalog();
    let e = entry(&catalog, "counter");
    assert_eq!(
        (e.scope.clone(), &e.state),
        (PluginScope::User, &PluginState::Untrusted)
    );
    let reason = invalid_reason(entry(&catalog, "other"));
    assert!(
        reason.contains("`name` is \"count-text\" but the plugin's directory is \"renamed\""),
        "{reason}"
    );
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_inside_a_js_plugin_makes_it_invalid() {
    let fx = Fixture::new();
    let dir = fx.forge_project_plugin("count-text", &[]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.join("data.txt")).unwrap();
    let catalog = fx.catalog();
    let reason = invalid_reason(entry(&catalog, "count-text"));
    assert!(reason.contains("data.txt is a symbolic link"), "{reason}");
}

#[test]
fn js_entries_serialise_with_their_format_and_manifest() {
    let fx = Fixture::new();
    fx.forge_project_plugin("count-text", &["tools:register"]);
    let catalog = fx.catalog();
    let value = serde_json::to_value(entry(&catalog, "count-text")).unwrap();
    assert_eq!(value["format"], "forge");
    assert_eq!(
        value["js"]["forge"],
        json!({"name": "count-text", "version": "1.0.0", "entry": "index.mjs", "capabilities": ["tools:register"]})
    );
    assert_eq!(value["manifest"], Value::Null);
    assert!(value.get("source").is_none());
}
