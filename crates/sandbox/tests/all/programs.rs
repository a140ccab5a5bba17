//! The hostile guests from `tests/programs`, built for wasm32-wasip2 by `bosun-test-programs`:
//! each one attacks a bound, and each test fails if that bound is removed.

use std::time::{Duration, Instant};

use bosun_sandbox::{CallErrorKind, CallOptions, Grants};
use bosun_test_programs as programs;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{STOPPED_BY_NOW, call, call_json, guest_instance, short_grants};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_answers() {
    let mut hello = guest_instance(programs::HELLO, Grants::default()).await;
    let out = call_json(&mut hello, "greet", json!({"name": "Ada"})).await;
    assert_eq!(out, json!({"message": "Hello, Ada!"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spinning_guest_is_stopped_and_another_instance_keeps_answering() {
    let timeout = Duration::from_millis(300);
    let mut spinner = guest_instance(programs::SPIN_FOREVER, short_grants(timeout)).await;
    let mut hello = guest_instance(programs::HELLO, Grants::default()).await;
    let started = Instant::now();
    let spinning = tokio::spawn(async move {
        let result = call(&mut spinner, "spin", "{}").await;
        (result, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let out = call_json(&mut hello, "greet", json!({"name": "still here"})).await;
    assert_eq!(out["message"], "Hello, still here!");
    let (result, elapsed) = spinning.await.unwrap();
    assert_eq!(
        result.unwrap_err().kind,
        CallErrorKind::TimedOut { timeout_ms: 300 }
    );
    assert!(elapsed >= timeout, "stopped early: {elapsed:?}");
    assert!(elapsed < STOPPED_BY_NOW, "not stopped: {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_blocked_in_a_host_call_is_stopped_at_the_deadline() {
    let timeout = Duration::from_millis(300);
    let mut blocker = guest_instance(programs::SPIN_FOREVER, short_grants(timeout)).await;
    let started = Instant::now();
    let err = call(&mut blocker, "block", "{}").await.unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(err.kind, CallErrorKind::TimedOut { timeout_ms: 300 });
    assert!(elapsed < STOPPED_BY_NOW, "not stopped: {elapsed:?}");
    assert!(blocker.is_poisoned());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_a_guest_blocked_in_the_host() {
    let mut blocker = guest_instance(programs::SPIN_FOREVER, Grants::default()).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let opts = CallOptions {
        cancel,
        ..CallOptions::default()
    };
    let err = blocker.call("block", "{}", opts).await.unwrap_err();
    assert_eq!(err.kind, CallErrorKind::Cancelled);
    assert!(started.elapsed() < STOPPED_BY_NOW);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_guest_sees_is_cancelled() {
    let mut guest = guest_instance(programs::SPIN_FOREVER, Grants::default()).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let opts = CallOptions {
        cancel,
        ..CallOptions::default()
    };
    let err = guest
        .call("spin_until_cancelled", "{}", opts)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bomb_is_stopped_at_the_cap() {
    for tool in ["grow", "grow_gracefully"] {
        let grants = Grants {
            memory_bytes: 64 << 20,
            ..Grants::default()
        };
        let mut bomb = guest_instance(programs::MEMORY_BOMB, grants).await;
        let err = call(&mut bomb, tool, "{}").await.unwrap_err();
        assert_eq!(
            err.kind,
            CallErrorKind::MemoryExceeded {
                limit_bytes: 64 << 20
            },
            "{tool}"
        );
        assert!(bomb.is_poisoned());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_recursion_traps_and_a_fresh_instance_works() {
    let mut deep = guest_instance(programs::DEEP_RECURSION, Grants::default()).await;
    let err = call(&mut deep, "recurse", "{}").await.unwrap_err();
    assert!(matches!(err.kind, CallErrorKind::Trap { .. }), "{err}");
    assert_eq!(err.code(), "plugin_error");
    assert!(deep.is_poisoned());
    let mut hello = guest_instance(programs::HELLO, Grants::default()).await;
    assert!(call(&mut hello, "greet", r#"{"name":"x"}"#).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_megabyte_output_is_refused() {
    let mut huge = guest_instance(programs::HUGE_OUTPUT, Grants::default()).await;
    let err = call(&mut huge, "emit", r#"{"megabytes":100}"#)
        .await
        .unwrap_err();
    assert_eq!(
        err.kind,
        CallErrorKind::OutputTooLarge {
            actual_bytes: 100_000_002,
            limit_bytes: 16 << 20
        }
    );
    assert_eq!(err.code(), "output_limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_stdio_floods_are_bounded() {
    let mut flood = guest_instance(programs::LOG_FLOOD, Grants::default()).await;

    let out = call(&mut flood, "flood", r#"{"lines":200000}"#)
        .await
        .unwrap();
    assert_eq!(out.report.logs.len(), 1_000);
    assert_eq!(out.report.dropped_logs, 199_000);

    let out = call(&mut flood, "giant_line", r#"{"megabytes":10}"#)
        .await
        .unwrap();
    assert_eq!(out.report.logs.len(), 1);
    assert_eq!(out.report.logs[0].message.len(), 4096);
    assert!(out.report.logs[0].truncated);

    let out = call(&mut flood, "flood_stdio", r#"{"megabytes":20}"#)
        .await
        .unwrap();
    assert_eq!(out.report.stdout.len(), 64 << 10);
    assert_eq!(out.report.stderr.len(), 64 << 10);
    assert_eq!(
        out.report.dropped_stdio_bytes,
        2 * (20_000_000 - (64 << 10))
    );
    assert!(!flood.is_poisoned());
}
