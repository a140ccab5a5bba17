//! `bosun plugins new`.

use bosun_plugins::{PluginError, scaffold};
use pretty_assertions::assert_eq;

const TEMPLATES: &[(&str, &str)] = &[
    ("Cargo.toml", "[package]\nname = \"{{name}}\"\n"),
    ("src/lib.rs", "// {{name}}\nfn {{name_snake}}_tool() {}\n"),
];

#[test]
fn a_new_plugin_is_written_from_the_templates() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("plugins").join("web-tools");
    let written = scaffold(&target, "web-tools", TEMPLATES).unwrap();
    assert_eq!(
        written,
        vec![target.join("Cargo.toml"), target.join("src/lib.rs")]
    );
    assert_eq!(
        std::fs::read_to_string(target.join("Cargo.toml")).unwrap(),
        "[package]\nname = \"web-tools\"\n"
    );
    assert_eq!(
        std::fs::read_to_string(target.join("src/lib.rs")).unwrap(),
        "// web-tools\nfn web_tools_tool() {}\n"
    );
}

#[test]
fn an_existing_directory_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("web");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("Cargo.toml"), "mine").unwrap();
    let err = scaffold(&target, "web", TEMPLATES).unwrap_err();
    assert!(matches!(err, PluginError::AlreadyExists(_)), "{err}");
    assert_eq!(
        std::fs::read_to_string(target.join("Cargo.toml")).unwrap(),
        "mine"
    );
    // An empty directory is not taken over either.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(matches!(
        scaffold(&empty, "web", TEMPLATES),
        Err(PluginError::AlreadyExists(_))
    ));
}

#[test]
fn bad_names_and_escaping_template_paths_are_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("x");
    assert!(matches!(
        scaffold(&target, "Web_Tools", TEMPLATES),
        Err(PluginError::BadPluginName(_))
    ));
    for bad in ["../escape.rs", "/etc/passwd", "", "src/../../x"] {
        let err = scaffold(&target, "web", &[(bad, "x")]).unwrap_err();
        assert!(
            matches!(err, PluginError::BadTemplatePath(_)),
            "{bad}: {err}"
        );
    }
    assert!(!target.exists());
}
