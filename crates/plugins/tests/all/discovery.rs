//! Where plugins are found, and what discovery refuses.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;

use bosun_plugins::discovery::{discover_project, discover_user};
use bosun_plugins::{
    Catalog, CatalogInput, PluginConfig, PluginError, PluginFormat, PluginState, TrustStore,
    check_plugin_configs,
};
use pretty_assertions::assert_eq;

use crate::support::{BUILTINS, install, metadata_with_tools, nested};

fn bytes(name: &str) -> Vec<u8> {
    nested(&metadata_with_tools(name, &[("t", serde_json::json!([]))]))
}

fn names(found: &[bosun_plugins::discovery::Discovered]) -> Vec<(&str, bool)> {
    found
        .iter()
        .map(|d| (d.local_name.as_str(), d.wanted))
        .collect()
}

#[test]
fn user_plugins_are_the_configured_ones_then_the_other_directories_sorted_and_disabled() {
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join("plugins");
    for dir in ["zeta", "alpha", "web-tools", "mid"] {
        install(&plugins, dir, &bytes("p"));
    }
    std::fs::create_dir_all(plugins.join("no-wasm-here")).unwrap();
    std::fs::write(plugins.join("stray-file"), b"x").unwrap();
    let mut config = BTreeMap::new();
    config.insert("web".to_owned(), PluginConfig::new("web-tools"));
    let mut off = PluginConfig::new(plugins.join("mid"));
    off.enabled = false;
    config.insert("middle".to_owned(), off);

    let (found, warnings) = discover_user(home.path(), &config);
    assert!(warnings.is_empty());
    assert_eq!(
        names(&found),
        vec![
            ("middle", false),
            ("web", true),
            ("alpha", false),
            ("zeta", false)
        ]
    );
    assert_eq!(found[1].dir, plugins.join("web-tools"));
    assert_eq!(found[1].wasm, plugins.join("web-tools").join("plugin.wasm"));

    let trust = TrustStore::empty(home.path().join("trust.toml"));
    let catalog = Catalog::build(CatalogInput {
        home: home.path(),
        user_plugins: &config,
        workspace: None,
        trust: &trust,
        builtins: BUILTINS,
        digests: None,
    });
    let states: Vec<(&str, String)> = catalog
        .entries()
        .iter()
        .map(|e| (e.local_name.as_str(), e.state.to_string()))
        .collect();
    assert_eq!(
        states,
        vec![
            ("middle", "disabled".into()),
            ("web", "untrusted".into()),
            ("alpha", "disabled".into()),
            ("zeta", "disabled".into())
        ]
    );
    // Disabled plugins are listed with their metadata.
    assert!(catalog.entries()[0].manifest().is_some());
}

/// `bosun plugins install` copies a plugin to `.install-<name>-<pid>` before renaming it into
/// place: while it copies, that directory already holds the plugin's file, and is no plugin.
#[test]
fn an_install_still_staging_its_copy_is_not_discovered_as_a_plugin() {
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join("plugins");
    install(&plugins, "web", &bytes("p"));
    let staging = bosun_plugins::discovery::install_staging_dir(&plugins, "web-2", 4242);
    assert_eq!(staging, plugins.join(".install-web-2-4242"));
    install(&plugins, ".install-web-2-4242", &bytes("p"));
    std::fs::write(staging.join("plugin.json"), b"{").unwrap();

    let (found, warnings) = discover_user(home.path(), &BTreeMap::new());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(names(&found), vec![("web", false)]);
    let trust = TrustStore::empty(home.path().join("trust.toml"));
    let catalog = Catalog::build(CatalogInput {
        home: home.path(),
        user_plugins: &BTreeMap::new(),
        workspace: None,
        trust: &trust,
        builtins: BUILTINS,
        digests: None,
    });
    let listed: Vec<&str> = catalog
        .entries()
        .iter()
        .map(|e| e.local_name.as_str())
        .collect();
    assert_eq!(listed, vec!["web"]);
}

#[test]
fn symlinked_plugin_directories_are_skipped() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let real = install(elsewhere.path(), "real", &bytes("p"));
    let plugins = home.path().join("plugins");
    install(&plugins, "b-real", &bytes("p"));
    symlink(&real, plugins.join("a-link")).unwrap();
    let (found, _) = discover_user(home.path(), &BTreeMap::new());
    assert_eq!(names(&found), vec![("b-real", false)]);

    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let project = root.join(".bosun").join("plugins");
    install(&project, "b-real", &bytes("p"));
    symlink(&real, project.join("a-link")).unwrap();
    let (found, _) = discover_project(&root);
    assert_eq!(names(&found), vec![("b-real", true)]);
}

#[test]
fn a_configured_symlinked_directory_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let real = install(elsewhere.path(), "real", &bytes("p"));
    std::fs::create_dir_all(home.path().join("plugins")).unwrap();
    symlink(&real, home.path().join("plugins").join("link")).unwrap();
    let mut config = BTreeMap::new();
    config.insert("web".to_owned(), PluginConfig::new("link"));
    let (found, _) = discover_user(home.path(), &config);
    assert!(matches!(
        found[0].problem,
        Some(PluginError::Symlink {
            what: "directory",
            ..
        })
    ));
}

#[test]
fn plugin_symlinked_wasm_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("evil.wasm");
    std::fs::write(&target, bytes("p")).unwrap();
    let dir = home.path().join("plugins").join("web");
    std::fs::create_dir_all(&dir).unwrap();
    symlink(&target, dir.join("plugin.wasm")).unwrap();
    let mut config = BTreeMap::new();
    config.insert("web".to_owned(), PluginConfig::new("web"));
    let trust = TrustStore::empty(home.path().join("trust.toml"));
    let catalog = Catalog::build(CatalogInput {
        home: home.path(),
        user_plugins: &config,
        workspace: None,
        trust: &trust,
        builtins: BUILTINS,
        digests: None,
    });
    let entry = &catalog.entries()[0];
    match &entry.state {
        PluginState::Invalid { reason } => {
            assert!(reason.contains("is a symbolic link"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(entry.sha256.is_none());
}

#[test]
fn a_fifo_named_plugin_wasm_does_not_hang_discovery() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("plugins").join("web");
    std::fs::create_dir_all(&dir).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("plugin.wasm"))
        .status()
        .unwrap();
    assert!(status.success());
    let mut config = BTreeMap::new();
    config.insert("web".to_owned(), PluginConfig::new("web"));
    let trust = TrustStore::empty(home.path().join("trust.toml"));
    let catalog = Catalog::build(CatalogInput {
        home: home.path(),
        user_plugins: &config,
        workspace: None,
        trust: &trust,
        builtins: BUILTINS,
        digests: None,
    });
    match &catalog.entries()[0].state {
        PluginState::Invalid { reason } => {
            assert!(reason.contains("is not a regular file"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_enabled_plugin_is_invalid_with_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let mut config = BTreeMap::new();
    config.insert("web".to_owned(), PluginConfig::new("web-tools"));
    std::fs::create_dir_all(home.path().join("plugins").join("empty")).unwrap();
    config.insert("empty".to_owned(), PluginConfig::new("empty"));
    let trust = TrustStore::empty(home.path().join("trust.toml"));
    let catalog = Catalog::build(CatalogInput {
        home: home.path(),
        user_plugins: &config,
        workspace: None,
        trust: &trust,
        builtins: BUILTINS,
        digests: None,
    });
    for entry in catalog.entries() {
        let expected = match entry.local_name.as_str() {
            "web" => "does not exist: install the plugin there or fix `path` in [plugins.web]",
            _ => {
                "holds no plugin.wasm (native), plugin.json (Forge) or mod.ts (Triggerfish): install the plugin there or fix `path` in [plugins.empty]"
            }
        };
        match &entry.state {
            PluginState::Invalid { reason } => assert!(reason.contains(expected), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn project_plugins_are_sorted_and_named_after_their_directory() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let project = root.join(".bosun").join("plugins");
    for dir in ["lint", "fmt", "Bad Name"] {
        install(&project, dir, &bytes("p"));
    }
    let (found, warnings) = discover_project(&root);
    assert!(warnings.is_empty());
    assert_eq!(
        names(&found),
        vec![("Bad Name", true), ("fmt", true), ("lint", true)]
    );
    assert!(matches!(found[0].problem, Some(PluginError::Config { .. })));
    assert!(found[1].problem.is_none());
}

#[test]
fn a_symlinked_project_plugins_directory_disables_project_plugins() {
    let workspace = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    install(elsewhere.path(), "fmt", &bytes("p"));
    let root = workspace.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".bosun")).unwrap();
    symlink(elsewhere.path(), root.join(".bosun").join("plugins")).unwrap();
    let (found, warnings) = discover_project(&root);
    assert!(found.is_empty());
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].message.contains("symbolic link"));
}

#[test]
fn plugin_config_is_strict() {
    let text = r#"
        [plugins.web]
        path = "web-tools"
        timeout_ms = 30000
        memory_mib = 256
        [plugins.web.config]
        search_endpoint = "https://search.example.com/api"
        since = 2024-01-02T03:04:05Z
        hosts = ["a.example.com", "b.example.com"]
    "#;
    #[derive(serde::Deserialize)]
    struct Wrapper {
        plugins: BTreeMap<String, PluginConfig>,
    }
    let parsed: Wrapper = toml::from_str(text).unwrap();
    let web = &parsed.plugins["web"];
    assert!(web.enabled);
    assert_eq!(web.timeout_ms, Some(30000));
    assert_eq!(
        web.config_json("search_endpoint"),
        Some(serde_json::json!("https://search.example.com/api"))
    );
    assert_eq!(
        web.config_json("since"),
        Some(serde_json::json!("2024-01-02T03:04:05Z"))
    );
    assert_eq!(
        web.config_json("hosts"),
        Some(serde_json::json!(["a.example.com", "b.example.com"]))
    );
    assert!(check_plugin_configs(&parsed.plugins).is_ok());

    let unknown = "[plugins.web]\npath = \"w\"\ntimeout = 5\n";
    let err = toml::from_str::<Wrapper>(unknown).err().unwrap();
    assert!(err.to_string().contains("unknown field `timeout`"), "{err}");
}

#[test]
fn plugin_config_values_are_checked_with_their_key() {
    let cases: Vec<(&str, PluginConfig, &str)> = vec![
        ("Web", PluginConfig::new("w"), "plugins.Web"),
        ("web", PluginConfig::new(""), "plugins.web.path"),
        ("web", PluginConfig::new("../outside"), "plugins.web.path"),
        (
            "web",
            PluginConfig {
                timeout_ms: Some(0),
                ..PluginConfig::new("w")
            },
            "plugins.web.timeout_ms",
        ),
        (
            "web",
            PluginConfig {
                memory_mib: Some(1 << 20),
                ..PluginConfig::new("w")
            },
            "plugins.web.memory_mib",
        ),
    ];
    for (local, config, key) in cases {
        let mut map = BTreeMap::new();
        map.insert(local.to_owned(), config);
        match check_plugin_configs(&map) {
            Err(PluginError::Config { key: got, .. }) => assert_eq!(got, key),
            other => panic!("{key}: {other:?}"),
        }
    }
    let mut map = BTreeMap::new();
    map.insert("web_2-x".to_owned(), PluginConfig::new("/abs/dir"));
    assert!(check_plugin_configs(&map).is_ok());
}

#[test]
fn project_plugins_of_every_format_are_found_and_other_directories_skipped() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let plugins = root.join(".bosun").join("plugins");
    for (dir, file) in [
        ("forge", "plugin.json"),
        ("native", "plugin.wasm"),
        ("triggerfish", "mod.ts"),
        ("notes", "README.md"),
    ] {
        std::fs::create_dir_all(plugins.join(dir)).unwrap();
        std::fs::write(plugins.join(dir).join(file), b"").unwrap();
    }
    std::fs::write(plugins.join("native").join("plugin.json"), b"{}").unwrap();
    let (found, warnings) = discover_project(&root);
    assert!(warnings.is_empty());
    let formats: Vec<(&str, PluginFormat, bool)> = found
        .iter()
        .map(|d| (d.local_name.as_str(), d.format, d.problem.is_some()))
        .collect();
    assert_eq!(
        formats,
        [
            ("forge", PluginFormat::Forge, false),
            ("native", PluginFormat::Native, true),
            ("triggerfish", PluginFormat::Triggerfish, false),
        ]
    );
    let problem = found[1].problem.as_ref().unwrap().to_string();
    assert!(
        problem.contains("holds plugin.wasm and plugin.json"),
        "{problem}"
    );
}
