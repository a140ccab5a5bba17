//! The precompiled-artefact cache: reused across sandboxes, and never trusted when damaged.
//! What loading costs is measured in `benches/load.rs`, not here.

use bosun_sandbox::{CacheOutcome, Grants};
use pretty_assertions::assert_eq;

use crate::support::{call, sandbox_with, wat_plugin};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artefact_is_written_then_reused() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_plugin();

    let first = sandbox_with(&dir, None);
    let loaded = first.load(wasm).unwrap();
    assert_eq!(loaded.cache_outcome(), CacheOutcome::Miss);
    let path = first.artefact_path(wasm).unwrap();
    assert!(path.is_file(), "{} missing", path.display());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(first.cache_dir().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    // A new sandbox (as in a new process) finds the artefact.
    let second = sandbox_with(&dir, None);
    let loaded = second.load(wasm).unwrap();
    assert_eq!(loaded.cache_outcome(), CacheOutcome::Hit);

    let mut instance = loaded.instantiate(Grants::default()).await.unwrap();
    assert_eq!(
        call(&mut instance, "echo", "{}").await.unwrap().output_json,
        "{}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_artefact_is_recompiled() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_plugin();
    let sandbox = sandbox_with(&dir, None);
    sandbox.load(wasm).unwrap();
    let path = sandbox.artefact_path(wasm).unwrap();

    // Flip one byte in the middle of the machine code.
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();

    let again = sandbox_with(&dir, None);
    let loaded = again.load(wasm).unwrap();
    assert_eq!(loaded.cache_outcome(), CacheOutcome::Replaced);
    let mut instance = loaded.instantiate(Grants::default()).await.unwrap();
    assert_eq!(
        call(&mut instance, "echo", "[1]")
            .await
            .unwrap()
            .output_json,
        "[1]"
    );

    // The rewritten artefact is whole again.
    let third = sandbox_with(&dir, None);
    assert_eq!(third.load(wasm).unwrap().cache_outcome(), CacheOutcome::Hit);

    // A truncated file is recompiled as well.
    std::fs::write(&path, &bytes[..10]).unwrap();
    let fourth = sandbox_with(&dir, None);
    assert_eq!(
        fourth.load(wasm).unwrap().cache_outcome(),
        CacheOutcome::Replaced
    );
}

#[test]
fn not_a_component_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = sandbox_with(&dir, None);
    let err = sandbox.load(b"\0asm\x01\0\0\0").unwrap_err();
    let message = err.to_string();
    assert!(message.contains("wasm32-wasip2"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_instance_pool_is_reported_and_frees_up() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = bosun_sandbox::Sandbox::new(bosun_sandbox::SandboxConfig {
        cache_dir: Some(dir.path().join("cache")),
        engine: bosun_sandbox::EngineLimits {
            max_instances: 2,
            ..bosun_sandbox::EngineLimits::default()
        },
        ..bosun_sandbox::SandboxConfig::default()
    })
    .unwrap();
    let loaded = sandbox.load(wat_plugin()).unwrap();
    let first = loaded.instantiate(Grants::default()).await.unwrap();
    let _second = loaded.instantiate(Grants::default()).await.unwrap();
    let err = loaded.instantiate(Grants::default()).await.unwrap_err();
    assert!(
        matches!(
            err,
            bosun_sandbox::SandboxError::PoolFull {
                max_instances: 2,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.code(), "limit_reached");
    drop(first);
    assert!(loaded.instantiate(Grants::default()).await.is_ok());
}

/// A cached artefact is run from a sealed copy taken while it was hashed: rewriting the file on
/// disk in place (same inode) after loading changes nothing that runs, and the loaded copy
/// cannot be written by anyone — not even through `/proc`, the way another process of the
/// same user would reach it.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_artefact_is_a_sealed_copy_that_nothing_can_rewrite() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_plugin();
    sandbox_with(&dir, None).load(wasm).unwrap();
    let sandbox = sandbox_with(&dir, None);
    let loaded = sandbox.load(wasm).unwrap();
    assert_eq!(loaded.cache_outcome(), CacheOutcome::Hit);

    // The file on disk, rewritten in place: every byte after the header inverted.
    let path = sandbox.artefact_path(wasm).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    for b in &mut bytes[72..] {
        *b ^= 0xff;
    }
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all(&bytes).unwrap();
    file.sync_all().unwrap();

    // The sealed copies this process holds refuse every write.
    let mut sealed = 0;
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if !target.to_string_lossy().contains("memfd:bosun-artefact") {
            continue;
        }
        sealed += 1;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(entry.path())
            .and_then(|mut f| f.write_all(b"\0\0\0\0"));
        assert!(written.is_err(), "{} could be written", target.display());
    }
    assert!(sealed > 0, "no sealed artefact copy is open");

    let mut instance = loaded.instantiate(Grants::default()).await.unwrap();
    assert_eq!(
        call(&mut instance, "echo", "[2]")
            .await
            .unwrap()
            .output_json,
        "[2]"
    );
    // And the damaged file is noticed by the next load, which compiles again.
    assert_eq!(
        sandbox_with(&dir, None).load(wasm).unwrap().cache_outcome(),
        CacheOutcome::Replaced
    );
}

/// Compiling a component again after an upgrade removes its artefact in the first layout
/// (`….cwasm`, which is never read again), and leaves other files alone.
#[test]
fn an_artefact_in_the_old_layout_is_removed_when_its_component_is_compiled_again() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_plugin();
    let sandbox = sandbox_with(&dir, None);
    let path = sandbox.artefact_path(wasm).unwrap();
    let name = path.file_name().unwrap().to_str().unwrap();
    let old = path.with_file_name(name.replace(".c2.cwasm", ".cwasm"));
    assert_ne!(old, path);
    let other = path.with_file_name("another-component.cwasm");
    std::fs::write(&old, b"BOSUNC01 stale").unwrap();
    std::fs::write(&other, b"kept").unwrap();
    assert_eq!(
        sandbox.load(wasm).unwrap().cache_outcome(),
        CacheOutcome::Miss
    );
    assert!(!old.exists(), "{} was left behind", old.display());
    assert!(other.exists() && path.exists());
}
