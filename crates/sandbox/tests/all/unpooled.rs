//! An engine built without wasmtime's pooling allocator (`EngineLimits::pooling = false`, what a
//! process that runs one command uses): every bound the pool held still holds — the cap on live
//! instances, now counted by the sandbox, the memory grant and the engine's memory ceiling —
//! and an artefact compiled by a pooled engine is the one it loads.

use bosun_sandbox::{
    CacheOutcome, CallErrorKind, EngineLimits, Grants, Sandbox, SandboxConfig, SandboxError,
};
use pretty_assertions::assert_eq;

use crate::support::{call, wat_plugin};

fn unpooled(cache: &tempfile::TempDir, max_instances: u32) -> Sandbox {
    Sandbox::new(SandboxConfig {
        cache_dir: Some(cache.path().join("cache")),
        engine: EngineLimits {
            max_instances,
            pooling: false,
            ..EngineLimits::default()
        },
        ..SandboxConfig::default()
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_pool_the_instance_cap_still_holds_and_frees_up() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = unpooled(&dir, 2).load(wat_plugin()).unwrap();
    let first = loaded.instantiate(Grants::default()).await.unwrap();
    let mut second = loaded.instantiate(Grants::default()).await.unwrap();
    let err = loaded.instantiate(Grants::default()).await.unwrap_err();
    assert!(
        matches!(
            err,
            SandboxError::PoolFull {
                max_instances: 2,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.code(), "limit_reached");
    // An instance that failed to start gives its place back too: the refusal above took none.
    drop(first);
    let mut third = loaded.instantiate(Grants::default()).await.unwrap();
    assert!(loaded.instantiate(Grants::default()).await.is_err());
    for instance in [&mut second, &mut third] {
        let out = call(instance, "echo", r#"{"n":1}"#).await.unwrap();
        assert_eq!(out.output_json, r#"{"n":1}"#);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_pool_a_memory_bomb_is_memory_exceeded() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = unpooled(&dir, 4).load(wat_plugin()).unwrap();
    let mut instance = loaded
        .instantiate(Grants {
            memory_bytes: 32 << 20,
            ..Grants::default()
        })
        .await
        .unwrap();
    let err = call(&mut instance, "grow", "{}").await.unwrap_err();
    assert_eq!(
        err.kind,
        CallErrorKind::MemoryExceeded {
            limit_bytes: 32 << 20
        }
    );
    assert!(instance.is_poisoned());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_pool_a_grant_above_the_engine_maximum_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = unpooled(&dir, 4).load(wat_plugin()).unwrap();
    let err = loaded
        .instantiate(Grants {
            memory_bytes: 8 << 30,
            ..Grants::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, SandboxError::MemoryGrantTooLarge { .. }),
        "{err}"
    );
}

/// The allocation strategy is not part of what wasmtime checks before it accepts compiled
/// code, so a one-command process reads the artefact a long-lived one wrote (and the reverse)
/// instead of compiling the plugin again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_and_unpooled_engines_share_one_artefact() {
    let dir = tempfile::tempdir().unwrap();
    let pooled = crate::support::sandbox_with(&dir, None);
    assert_eq!(
        pooled.load(wat_plugin()).unwrap().cache_outcome(),
        CacheOutcome::Miss
    );
    let loaded = unpooled(&dir, 4).load(wat_plugin()).unwrap();
    assert_eq!(loaded.cache_outcome(), CacheOutcome::Hit);
    let mut instance = loaded.instantiate(Grants::default()).await.unwrap();
    let out = call(&mut instance, "echo", "{}").await.unwrap();
    assert_eq!(out.output_json, "{}");
}
