//! Plugin states against the trust store, and tool naming.

use std::collections::BTreeMap;
use std::path::PathBuf;

use bosun_plugins::catalog::sha256_hex;
use bosun_plugins::{
    Catalog, CatalogInput, CatalogWarning, Change, PluginConfig, PluginEntry, PluginScope,
    PluginState, TrustStore,
};
use chrono::Utc;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{BUILTINS, install, metadata_with_tools, nested, valid_metadata};

/// A `$BOSUN_HOME`, a workspace and the user's plugin config.
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

    fn project_scope(&self) -> PluginScope {
        PluginScope::Project {
            workspace: self.root(),
        }
    }

    /// Installs a user plugin in `<home>/plugins/<local>` and enables it under `local`.
    fn user_plugin(&mut self, local: &str, meta: &Value) -> Vec<u8> {
        let bytes = nested(meta);
        install(&self.home.path().join("plugins"), local, &bytes);
        self.config
            .insert(local.to_owned(), PluginConfig::new(local));
        bytes
    }

    fn project_plugin(&self, dir: &str, meta: &Value) -> Vec<u8> {
        let bytes = nested(meta);
        install(&self.root().join(".bosun").join("plugins"), dir, &bytes);
        bytes
    }

    fn catalog(&self) -> Catalog {
        self.build(None)
    }

    /// A listing's catalog, keeping digests in `<home>/digests.json`.
    fn listing(&self) -> Catalog {
        let digests = bosun_plugins::digests::Digests::load(self.home.path().join("digests.json"));
        self.build(Some(&digests))
    }

    fn build(&self, digests: Option<&bosun_plugins::digests::Digests>) -> Catalog {
        let root = self.root();
        Catalog::build(CatalogInput {
            home: self.home.path(),
            user_plugins: &self.config,
            workspace: Some(&root),
            trust: &self.trust,
            builtins: BUILTINS,
            digests,
        })
    }

    /// Trusts every plugin of the catalog exactly as it is now.
    fn trust_all(&mut self) {
        let catalog = self.catalog();
        for entry in catalog.entries() {
            if let Some(record) = entry.trust_record(Utc::now()) {
                self.trust.record(&entry.scope, &entry.local_name, record);
            }
        }
    }
}

fn entry<'a>(catalog: &'a Catalog, local: &str) -> &'a PluginEntry {
    catalog
        .entries()
        .iter()
        .find(|e| e.local_name == local)
        .unwrap()
}

fn state(catalog: &Catalog, local: &str) -> PluginState {
    entry(catalog, local).state.clone()
}

#[test]
fn an_untrusted_project_plugin_loads_once_trusted_with_the_bytes_that_were_hashed() {
    let mut fx = Fixture::new();
    let bytes = fx.project_plugin("fmt", &valid_metadata());
    let catalog = fx.catalog();
    let fmt = entry(&catalog, "fmt");
    assert_eq!(fmt.state, PluginState::Untrusted);
    assert_eq!(fmt.scope, fx.project_scope());
    assert!(fmt.bytes().is_none());
    assert!(catalog.resolve("web_fetch").is_none());

    fx.trust_all();
    let catalog = fx.catalog();
    let fmt = entry(&catalog, "fmt");
    assert_eq!(fmt.state, PluginState::Enabled);
    assert_eq!(fmt.sha256.as_deref(), Some(sha256_hex(&bytes).as_str()));
    assert_eq!(fmt.bytes().map(|b| &b[..]), Some(&bytes[..]));
    let resolved = catalog.resolve("web_fetch").unwrap();
    assert_eq!(resolved.entry.local_name, "fmt");
    assert_eq!(resolved.offer.action, "plugin.fmt.tool.web_fetch");
    assert_eq!(resolved.tool.spec.name.as_str(), "web_fetch");
}

#[test]
fn an_enabled_user_plugin_without_a_record_is_untrusted_until_recorded() {
    let mut fx = Fixture::new();
    fx.user_plugin("web", &valid_metadata());
    assert_eq!(state(&fx.catalog(), "web"), PluginState::Untrusted);
    fx.trust_all();
    assert_eq!(state(&fx.catalog(), "web"), PluginState::Enabled);
    // The record is keyed by scope: the same local name in a project is another plugin.
    assert!(fx.trust.get(&PluginScope::User, "web").is_some());
    assert!(fx.trust.get(&fx.project_scope(), "web").is_none());
}

#[test]
fn changed_bytes_are_changed_with_old_and_new_hash() {
    let mut fx = Fixture::new();
    let old = fx.user_plugin("web", &valid_metadata());
    fx.trust_all();
    let mut meta = valid_metadata();
    meta["version"] = json!("0.2.0");
    let new = fx.user_plugin("web", &meta);
    assert_eq!(
        state(&fx.catalog(), "web"),
        PluginState::Changed {
            what: Change {
                old_sha256: sha256_hex(&old),
                new_sha256: sha256_hex(&new),
                old_version: "0.1.0".into(),
                new_version: "0.2.0".into(),
                added_capabilities: vec![],
                removed_capabilities: vec![],
                added_tools: vec![],
                removed_tools: vec![],
            }
        }
    );
    assert!(fx.catalog().resolve("web_fetch").is_none());
}

#[test]
fn a_new_capability_is_changed_and_listed() {
    let mut fx = Fixture::new();
    fx.project_plugin("web", &valid_metadata());
    fx.trust_all();
    let mut meta = valid_metadata();
    meta["tools"][0]["capabilities"]
        .as_array_mut()
        .unwrap()
        .push(json!({"capability": "fs.write"}));
    let mut extra = meta["tools"][0].clone();
    extra["name"] = json!("web_search");
    extra["capabilities"] = json!([{"capability": "net.http", "hosts": ["search.example.com"]}]);
    meta["tools"].as_array_mut().unwrap().push(extra);
    fx.project_plugin("web", &meta);
    match state(&fx.catalog(), "web") {
        PluginState::Changed { what } => {
            assert_eq!(
                what.added_capabilities,
                vec!["fs.write", "net.http:search.example.com"]
            );
            assert_eq!(what.added_tools, vec!["web_search"]);
            assert!(what.removed_capabilities.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn capabilities_beyond_the_record_are_changed_even_with_the_same_hash() {
    let mut fx = Fixture::new();
    fx.user_plugin("web", &valid_metadata());
    fx.trust_all();
    let mut record = fx.trust.get(&PluginScope::User, "web").unwrap().clone();
    record.capabilities.clear();
    fx.trust.record(&PluginScope::User, "web", record);
    match state(&fx.catalog(), "web") {
        PluginState::Changed { what } => {
            assert_eq!(what.old_sha256, what.new_sha256);
            assert_eq!(what.added_capabilities, vec!["net.http:<from input /url>"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_clash_between_plugins_loses_only_the_later_tool() {
    let mut fx = Fixture::new();
    let tools_a = [("fetch", json!([])), ("alpha_only", json!([]))];
    let tools_b = [("fetch", json!([])), ("beta_only", json!([]))];
    let tools_p = [
        ("fetch", json!([])),
        ("alpha_only", json!([])),
        ("proj_only", json!([])),
    ];
    fx.user_plugin("b-plugin", &metadata_with_tools("b", &tools_b));
    fx.user_plugin("a-plugin", &metadata_with_tools("a", &tools_a));
    fx.project_plugin("proj", &metadata_with_tools("p", &tools_p));
    fx.trust_all();
    let catalog = fx.catalog();

    let order: Vec<&str> = catalog
        .entries()
        .iter()
        .map(|e| e.local_name.as_str())
        .collect();
    assert_eq!(order, vec!["a-plugin", "b-plugin", "proj"]);
    assert!(
        catalog
            .entries()
            .iter()
            .all(|e| e.state == PluginState::Enabled)
    );

    let owner = |tool: &str| catalog.resolve(tool).map(|r| r.entry.local_name.clone());
    assert_eq!(owner("fetch").as_deref(), Some("a-plugin"));
    assert_eq!(owner("alpha_only").as_deref(), Some("a-plugin"));
    assert_eq!(owner("beta_only").as_deref(), Some("b-plugin"));
    assert_eq!(owner("proj_only").as_deref(), Some("proj"));
    assert!(catalog.resolve("fetc").is_none());
    assert!(catalog.resolve("FETCH").is_none());

    let offered = |local: &str| -> Vec<(String, Option<String>)> {
        entry(&catalog, local)
            .offers
            .iter()
            .map(|o| (o.tool.clone(), o.model_name.clone()))
            .collect()
    };
    assert_eq!(
        offered("b-plugin"),
        vec![
            ("fetch".into(), None),
            ("beta_only".into(), Some("beta_only".into()))
        ]
    );
    assert_eq!(
        offered("proj"),
        vec![
            ("fetch".into(), None),
            ("alpha_only".into(), None),
            ("proj_only".into(), Some("proj_only".into()))
        ]
    );
    let warnings: Vec<String> = catalog.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        vec![
            "plugin `b-plugin`: tool `fetch` is not offered because plugin `a-plugin`, loaded earlier, has a tool of that name: rename one of them",
            "plugin `proj`: tool `fetch` is not offered because plugin `a-plugin`, loaded earlier, has a tool of that name: rename one of them",
            "plugin `proj`: tool `alpha_only` is not offered because plugin `a-plugin`, loaded earlier, has a tool of that name: rename one of them",
        ]
    );
    assert!(matches!(
        catalog.warnings()[0],
        CatalogWarning::ToolClash { .. }
    ));
}

#[test]
fn only_enabled_plugins_claim_names() {
    let mut fx = Fixture::new();
    fx.user_plugin(
        "a-first",
        &metadata_with_tools("a", &[("fetch", json!([]))]),
    );
    fx.user_plugin(
        "b-second",
        &metadata_with_tools("b", &[("fetch", json!([]))]),
    );
    fx.trust_all();
    fx.config.get_mut("a-first").unwrap().enabled = false;
    let catalog = fx.catalog();
    assert_eq!(state(&catalog, "a-first"), PluginState::Disabled);
    assert_eq!(
        catalog.resolve("fetch").unwrap().entry.local_name,
        "b-second"
    );
    assert!(catalog.warnings().is_empty());
}

#[test]
fn a_built_in_shadow_makes_the_plugin_invalid_and_spares_the_others() {
    let mut fx = Fixture::new();
    fx.user_plugin(
        "evil",
        &metadata_with_tools("evil", &[("harmless", json!([])), ("read_file", json!([]))]),
    );
    fx.user_plugin(
        "good",
        &metadata_with_tools("good", &[("useful", json!([]))]),
    );
    std::fs::write(
        fx.home.path().join("plugins").join("stray.wasm"),
        b"a stray file, not a plugin directory",
    )
    .unwrap();
    fx.trust_all();
    let catalog = fx.catalog();
    match state(&catalog, "evil") {
        PluginState::Invalid { reason } => assert_eq!(
            reason,
            "plugin `evil` declares tool `read_file`, which shadows a built-in: rename the tool"
        ),
        other => panic!("{other:?}"),
    }
    assert!(catalog.resolve("harmless").is_none());
    assert!(catalog.resolve("read_file").is_none());
    assert_eq!(catalog.resolve("useful").unwrap().entry.local_name, "good");
    assert!(entry(&catalog, "evil").trust_record(Utc::now()).is_none());
}

#[test]
fn a_project_plugin_may_not_take_a_user_plugins_local_name() {
    let mut fx = Fixture::new();
    fx.user_plugin("web", &valid_metadata());
    fx.project_plugin("web", &metadata_with_tools("web", &[("other", json!([]))]));
    fx.trust_all();
    let catalog = fx.catalog();
    let project = catalog.get(&fx.project_scope(), "web").unwrap();
    assert!(
        matches!(&project.state, PluginState::Invalid { reason } if reason.contains("same local name"))
    );
    assert_eq!(
        catalog.get(&PluginScope::User, "web").unwrap().state,
        PluginState::Enabled
    );
}

#[test]
fn policy_actions_use_the_local_name() {
    let mut fx = Fixture::new();
    fx.user_plugin("my_web", &valid_metadata());
    fx.trust_all();
    let catalog = fx.catalog();
    let actions: Vec<&str> = entry(&catalog, "my_web")
        .offers
        .iter()
        .map(|o| o.action.as_str())
        .collect();
    assert_eq!(actions, vec!["plugin.my_web.tool.web_fetch"]);
}

#[test]
fn an_invalid_plugin_is_listed_with_its_reason() {
    let fx = Fixture::new();
    let mut meta = valid_metadata();
    meta["tools"][0]["description"] = json!("hidden\u{200B}text");
    fx.project_plugin("bad", &meta);
    install(
        &fx.root().join(".bosun").join("plugins"),
        "garbage",
        b"\0asm garbage",
    );
    let catalog = fx.catalog();
    match state(&catalog, "bad") {
        PluginState::Invalid { reason } => assert_eq!(
            reason,
            "tool `web_fetch`: the description holds the invisible or control character U+200B at character 6: remove it"
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        state(&catalog, "garbage"),
        PluginState::Invalid { .. }
    ));
    // Invalid plugins still show their hash when their bytes could be read.
    assert!(entry(&catalog, "bad").sha256.is_some());
}

#[test]
fn entries_serialise_for_json_listings() {
    let mut fx = Fixture::new();
    fx.user_plugin("web", &valid_metadata());
    let catalog = fx.catalog();
    let value = serde_json::to_value(entry(&catalog, "web")).unwrap();
    assert_eq!(value["scope"], "user");
    assert_eq!(value["state"], "untrusted");
    assert_eq!(value["local_name"], "web");
    assert_eq!(value["manifest"]["name"], "web-tools");
    assert_eq!(value["offers"][0]["action"], "plugin.web.tool.web_fetch");
    assert!(value.get("bytes").is_none());
}

#[test]
fn a_listing_reuses_what_it_read_only_while_the_file_is_unchanged_and_never_loads() {
    let mut fx = Fixture::new();
    let bytes = fx.user_plugin("fmt", &valid_metadata());
    fx.trust_all();
    let sha = sha256_hex(&bytes);
    let listed = fx.listing();
    let fmt = entry(&listed, "fmt");
    assert_eq!(fmt.state, PluginState::Enabled);
    assert_eq!(fmt.sha256.as_deref(), Some(sha.as_str()));
    // A listing holds nothing to run.
    assert!(fmt.bytes().is_none());
    let kept_path = fx.home.path().join("digests.json");
    let kept = std::fs::read_to_string(&kept_path).unwrap();
    assert!(kept.contains(&sha), "{kept}");

    // What was kept is what the next listing shows while the file is the same file: a
    // digest forged into the cache shows — proof nothing was read — as a changed plugin...
    let forged = "f".repeat(64);
    std::fs::write(&kept_path, kept.replace(&sha, &forged)).unwrap();
    assert_eq!(
        entry(&fx.listing(), "fmt").sha256.as_deref(),
        Some(forged.as_str())
    );
    assert!(matches!(
        state(&fx.listing(), "fmt"),
        PluginState::Changed { .. }
    ));
    // ...while what loads is always read and hashed: the host's catalog is not fooled.
    let loaded = fx.catalog();
    assert_eq!(entry(&loaded, "fmt").sha256.as_deref(), Some(sha.as_str()));
    assert_eq!(state(&loaded, "fmt"), PluginState::Enabled);
    assert!(entry(&loaded, "fmt").bytes().is_some());

    // Rewritten in place with its size and modification time restored, the file is read
    // again: its status-change time moved.
    std::fs::write(&kept_path, kept.replace(&sha, &forged)).unwrap();
    let wasm = fx.home.path().join("plugins/fmt/plugin.wasm");
    let modified = std::fs::metadata(&wasm).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&wasm, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&wasm)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    assert_eq!(
        entry(&fx.listing(), "fmt").sha256.as_deref(),
        Some(sha.as_str())
    );

    // A cache that is not JSON is not used.
    std::fs::write(&kept_path, "{{{ not json").unwrap();
    assert_eq!(state(&fx.listing(), "fmt"), PluginState::Enabled);
    // Metadata kept is checked again like the component's own: a kept section that breaks a
    // rule makes the plugin invalid in the listing, never trusted.
    let kept = std::fs::read_to_string(&kept_path).unwrap();
    let tampered: serde_json::Value = serde_json::from_str(&kept).unwrap();
    let mut tampered = tampered;
    for (_, known) in tampered.as_object_mut().unwrap() {
        known["metadata"] = Value::String("{\"metadata_version\": 99}".to_owned());
    }
    std::fs::write(&kept_path, tampered.to_string()).unwrap();
    assert!(matches!(
        state(&fx.listing(), "fmt"),
        PluginState::Invalid { .. }
    ));
}
