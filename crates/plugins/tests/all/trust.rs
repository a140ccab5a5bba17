//! The trust store: strict loading, round trips, atomic writes and saves that merge with what
//! another process wrote meanwhile.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bosun_plugins::{PluginError, PluginScope, TrustRecord, TrustStore};
use chrono::{TimeZone, Utc};
use pretty_assertions::assert_eq;

fn record(hash_byte: char) -> TrustRecord {
    TrustRecord {
        sha256: hash_byte.to_string().repeat(64),
        version: "0.1.0".into(),
        tools: vec!["web_fetch".into()],
        capabilities: vec!["net.http:<from input /url>".into()],
        trusted_at: Utc.with_ymd_and_hms(2025, 6, 1, 12, 0, 0).unwrap(),
    }
}

fn project(path: &str) -> PluginScope {
    PluginScope::Project {
        workspace: PathBuf::from(path),
    }
}

#[test]
fn a_missing_file_is_an_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = TrustStore::load(dir.path().join("trust.toml")).unwrap();
    assert_eq!(store.records().count(), 0);
}

#[test]
fn records_round_trip_with_private_modes() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("bosun-home");
    let path = home.join("trust.toml");
    let mut store = TrustStore::load(&path).unwrap();
    store.record(&PluginScope::User, "web", record('a'));
    store.record(&project("/home/me/src/app"), "fmt", record('b'));
    store.save().unwrap();

    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        r#"version = 1

[scopes."/home/me/src/app".fmt]
sha256 = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
version = "0.1.0"
tools = ["web_fetch"]
capabilities = ["net.http:<from input /url>"]
trusted_at = "2025-06-01T12:00:00Z"

[scopes.user.web]
sha256 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
version = "0.1.0"
tools = ["web_fetch"]
capabilities = ["net.http:<from input /url>"]
trusted_at = "2025-06-01T12:00:00Z"
"#
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&home), 0o700);

    let mut loaded = TrustStore::load(&path).unwrap();
    assert_eq!(loaded.get(&PluginScope::User, "web"), Some(&record('a')));
    assert_eq!(
        loaded.get(&project("/home/me/src/app"), "fmt"),
        Some(&record('b'))
    );
    assert_eq!(loaded.get(&project("/other"), "fmt"), None);

    assert_eq!(loaded.remove(&PluginScope::User, "web"), Some(record('a')));
    assert_eq!(loaded.remove(&PluginScope::User, "web"), None);
    loaded.save().unwrap();
    let again = TrustStore::load(&path).unwrap();
    let all: Vec<(&str, &str)> = again.records().map(|(s, n, _)| (s, n)).collect();
    assert_eq!(all, vec![("/home/me/src/app", "fmt")]);
    // No temporary file is left behind: only the store and its (empty) lock file.
    let mut leftovers: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    leftovers.sort();
    assert_eq!(leftovers, [".trust.toml.lock", "trust.toml"]);
}

#[test]
fn unknown_keys_are_errors_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.toml");
    std::fs::write(
        &path,
        "version = 1\n\n[scopes.user.web]\nsha256 = \"aa\"\nversion = \"1.0.0\"\ntools = []\ncapabilities = []\ntrusted_at = \"2025-06-01T12:00:00Z\"\nallow_everything = true\n",
    )
    .unwrap();
    let err = TrustStore::load(&path).unwrap_err();
    match &err {
        PluginError::TrustParse { path: p, line, .. } => {
            assert_eq!(p, &path);
            assert_eq!(*line, 9);
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("allow_everything"), "{err}");
    // The error names the way out, and loading rewrote nothing.
    assert!(
        err.to_string().contains("bosun plugins trust NAME"),
        "{err}"
    );
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("allow_everything = true")
    );

    std::fs::write(&path, "version = 1\nextra = 2\n").unwrap();
    match TrustStore::load(&path).unwrap_err() {
        PluginError::TrustParse { line, .. } => assert_eq!(line, 2),
        other => panic!("{other}"),
    }
}

#[test]
fn bad_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.toml");
    let body = "sha256 = \"aa\"\nversion = \"1.0.0\"\ntools = []\ncapabilities = []\ntrusted_at = \"2025-06-01T12:00:00Z\"\n";
    for (text, key) in [
        ("version = 2\n".to_owned(), "version"),
        (format!("version = 1\n[scopes.user.web]\n{body}"), "sha256"),
        (
            format!(
                "version = 1\n[scopes.relative.web]\n{}",
                body.replace("aa", &"a".repeat(64))
            ),
            "relative",
        ),
        (
            format!(
                "version = 1\n[scopes.user.Web]\n{}",
                body.replace("aa", &"a".repeat(64))
            ),
            "Web",
        ),
    ] {
        std::fs::write(&path, &text).unwrap();
        match TrustStore::load(&path).unwrap_err() {
            e @ PluginError::TrustInvalid { .. } => {
                let PluginError::TrustInvalid { key: got, .. } = &e else {
                    unreachable!()
                };
                assert!(got.contains(key), "{got} vs {key}");
                assert!(e.to_string().contains("bosun plugins trust NAME"), "{e}");
            }
            other => panic!("{text}: {other}"),
        }
    }
    std::fs::write(&path, "version = 1\n[scopes.user.web]\nsha256 = 5\n").unwrap();
    assert!(matches!(
        TrustStore::load(&path),
        Err(PluginError::TrustParse { .. })
    ));
}

/// Makes `dir` refuse new files until dropped: mode 0500 for an ordinary user, the immutable
/// attribute for root (which ignores modes). `None` when neither works here.
struct ReadOnlyDir(PathBuf, bool);

impl ReadOnlyDir {
    fn new(dir: &Path) -> Option<Self> {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o500)).unwrap();
        if probe_refused(dir) {
            return Some(Self(dir.to_owned(), false));
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let chattr = std::process::Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .status();
        if chattr.is_ok_and(|s| s.success()) && probe_refused(dir) {
            return Some(Self(dir.to_owned(), true));
        }
        None
    }
}

fn probe_refused(dir: &Path) -> bool {
    let probe = dir.join(".probe");
    let refused = std::fs::write(&probe, b"").is_err();
    let _ = std::fs::remove_file(probe);
    refused
}

impl Drop for ReadOnlyDir {
    fn drop(&mut self) {
        if self.1 {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&self.0)
                .status();
        }
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o700));
    }
}

#[test]
fn a_failed_write_leaves_the_old_file_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.toml");
    let mut store = TrustStore::load(&path).unwrap();
    store.record(&PluginScope::User, "web", record('a'));
    store.save().unwrap();
    let before = std::fs::read(&path).unwrap();

    store.record(&PluginScope::User, "other", record('c'));
    let Some(guard) = ReadOnlyDir::new(dir.path()) else {
        eprintln!("skipped: cannot make a directory refuse writes here");
        return;
    };
    let err = store.save().unwrap_err();
    drop(guard);
    assert!(matches!(err, PluginError::Write { .. }), "{err}");
    assert!(err.to_string().contains("trust.toml"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let reloaded = TrustStore::load(&path).unwrap();
    assert_eq!(reloaded.get(&PluginScope::User, "other"), None);
    assert_eq!(reloaded.get(&PluginScope::User, "web"), Some(&record('a')));
}

#[test]
fn save_replaces_the_file_rather_than_writing_through_it() {
    // A hard link to the old file keeps the old contents: the new file is a new inode, so a
    // reader never sees a half-written store.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.toml");
    let mut store = TrustStore::load(&path).unwrap();
    store.record(&PluginScope::User, "web", record('a'));
    store.save().unwrap();
    let link = dir.path().join("old-link");
    std::fs::hard_link(&path, &link).unwrap();
    let before = std::fs::read(&link).unwrap();
    store.record(&PluginScope::User, "web", record('d'));
    store.save().unwrap();
    assert_eq!(std::fs::read(&link).unwrap(), before);
    assert_ne!(std::fs::read(&path).unwrap(), before);
}

/// Eight processes' worth of stores (flock conflicts between separate opens in one process, so
/// threads with their own store are a faithful model) each load, then all record a different
/// plugin and save at once: every record is kept.
#[test]
fn concurrent_saves_keep_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.toml");
    let mut first = TrustStore::load(&path).unwrap();
    first.record(&PluginScope::User, "existing", record('e'));
    first.save().unwrap();
    let writers = 8;
    let loaded = std::sync::Arc::new(std::sync::Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|i| {
            let path = path.clone();
            let loaded = std::sync::Arc::clone(&loaded);
            std::thread::spawn(move || {
                let mut store = TrustStore::load(&path).unwrap();
                loaded.wait();
                store.record(&PluginScope::User, &format!("plugin{i}"), record('a'));
                store.save().unwrap();
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let store = TrustStore::load(&path).unwrap();
    let names: Vec<&str> = store.records().map(|(_, name, _)| name).collect();
    let mut expected: Vec<String> = (0..writers).map(|i| format!("plugin{i}")).collect();
    expected.insert(0, "existing".to_owned());
    assert_eq!(names, expected);
}

/// One process forgets a plugin while another trusts a new one and re-trusts a third: the
/// removal, the addition and each one's own change all survive, whichever saves first.
#[test]
fn a_removal_and_an_addition_at_once_both_survive() {
    for removal_saves_first in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.toml");
        let mut setup = TrustStore::load(&path).unwrap();
        setup.record(&PluginScope::User, "web", record('a'));
        setup.record(&PluginScope::User, "api", record('a'));
        setup.save().unwrap();

        let mut removing = TrustStore::load(&path).unwrap();
        let mut adding = TrustStore::load(&path).unwrap();
        assert_eq!(
            removing.remove(&PluginScope::User, "web"),
            Some(record('a'))
        );
        adding.record(&project("/home/me/src/app"), "fmt", record('b'));
        adding.record(&PluginScope::User, "api", record('c'));
        if removal_saves_first {
            removing.save().unwrap();
            adding.save().unwrap();
        } else {
            adding.save().unwrap();
            removing.save().unwrap();
        }
        let store = TrustStore::load(&path).unwrap();
        let all: Vec<(&str, &str, char)> = store
            .records()
            .map(|(s, n, r)| (s, n, r.sha256.chars().next().unwrap()))
            .collect();
        assert_eq!(
            all,
            [("/home/me/src/app", "fmt", 'b'), ("user", "api", 'c')],
            "removal saved first: {removal_saves_first}"
        );
        // Each store now holds what it wrote, the other's change included.
        let last = if removal_saves_first {
            &adding
        } else {
            &removing
        };
        assert_eq!(last.get(&PluginScope::User, "web"), None);
        assert!(last.get(&project("/home/me/src/app"), "fmt").is_some());
    }
}

/// A store on disk that no longer parses is not overwritten with this process's view: the
/// save fails naming the file and the fix, and the file is left for the person.
#[test]
fn a_save_over_a_file_that_no_longer_parses_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.toml");
    let mut store = TrustStore::load(&path).unwrap();
    store.record(&PluginScope::User, "web", record('a'));
    store.save().unwrap();
    std::fs::write(&path, "version = 1\n[scopes.user.web\n").unwrap();
    store.record(&PluginScope::User, "api", record('b'));
    let err = store.save().unwrap_err();
    assert!(matches!(err, PluginError::TrustParse { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("nothing was changed"), "{message}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "version = 1\n[scopes.user.web\n"
    );
}

/// Another process in the middle of changing the store (holding its lock) makes a save wait,
/// not write around it; once released, the save keeps both.
#[test]
fn a_save_waits_for_another_process_holding_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.toml");
    let mut store = TrustStore::load(&path).unwrap();
    store.record(&PluginScope::User, "web", record('a'));
    let held = bosun_plugins::state_lock::lock(&path).unwrap();
    let (started, waiting) = std::sync::mpsc::channel();
    let saver = std::thread::spawn(move || {
        started.send(()).unwrap();
        store.save()
    });
    waiting.recv().unwrap();
    // The holder writes its record while the save waits.
    std::fs::write(
        &path,
        "version = 1\n[scopes.user.api]\nsha256 = \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"\nversion = \"0.1.0\"\ntools = []\ncapabilities = []\ntrusted_at = \"2025-06-01T12:00:00Z\"\n",
    )
    .unwrap();
    drop(held);
    saver.join().unwrap().unwrap();
    let store = TrustStore::load(&path).unwrap();
    let names: Vec<&str> = store.records().map(|(_, name, _)| name).collect();
    assert_eq!(names, ["api", "web"]);
}
