//! Deadlines, cancellation, memory, stack, output and log bounds, each against a guest that
//! tries to break them.

use std::time::{Duration, Instant};

use bosun_sandbox::{CallErrorKind, CallOptions, Grants};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use crate::support::{STOPPED_BY_NOW, call, short_grants, wat_instance};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_returns_input_and_instance_is_reused() {
    let mut instance = wat_instance(Grants::default()).await;
    for i in 0..3 {
        let input = format!(r#"{{"n":{i}}}"#);
        let out = call(&mut instance, "echo", &input).await.unwrap();
        assert_eq!(out.output_json, input);
    }
    assert!(!instance.is_poisoned());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_error_keeps_the_instance_usable() {
    let mut instance = wat_instance(Grants::default()).await;
    let err = call(&mut instance, "fail", "{}").await.unwrap_err();
    assert_eq!(
        err.kind,
        CallErrorKind::Tool {
            code: "invalid_input".into(),
            message: "unknown tool".into(),
            retryable: false
        }
    );
    assert_eq!(err.code(), "invalid_input");
    assert_eq!(err.plugin.as_deref(), Some("wat"));
    assert!(!instance.is_poisoned());
    assert!(call(&mut instance, "echo", "{}").await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loop_is_stopped_at_its_deadline() {
    let timeout = Duration::from_millis(200);
    let mut spinner = wat_instance(short_grants(timeout)).await;
    let mut other = wat_instance(Grants::default()).await;

    let started = Instant::now();
    let spinning = tokio::spawn(async move {
        let result = call(&mut spinner, "spin", "{}").await;
        (result, started.elapsed(), spinner)
    });
    // Another instance keeps answering while the first one spins.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let out = call(&mut other, "echo", r#"{"still":"here"}"#)
        .await
        .unwrap();
    assert_eq!(out.output_json, r#"{"still":"here"}"#);

    let (result, elapsed, mut spinner) = spinning.await.unwrap();
    let err = result.unwrap_err();
    assert_eq!(err.kind, CallErrorKind::TimedOut { timeout_ms: 200 });
    assert_eq!(err.code(), "timed_out");
    assert!(elapsed >= timeout, "stopped early: {elapsed:?}");
    assert!(elapsed < STOPPED_BY_NOW, "not stopped: {elapsed:?}");
    assert!(spinner.is_poisoned());
    let again = call(&mut spinner, "echo", "{}").await.unwrap_err();
    assert_eq!(again.kind, CallErrorKind::Poisoned);

    // A fresh instance of the same plugin works.
    let mut fresh = wat_instance(Grants::default()).await;
    assert!(call(&mut fresh, "echo", "{}").await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_a_spinning_guest() {
    let mut instance = wat_instance(Grants::default()).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let opts = CallOptions {
        cancel,
        ..CallOptions::default()
    };
    let err = instance.call("spin", "{}", opts).await.unwrap_err();
    assert_eq!(err.kind, CallErrorKind::Cancelled);
    assert_eq!(err.code(), "cancelled");
    assert!(started.elapsed() < STOPPED_BY_NOW);
    assert!(instance.is_poisoned());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn is_cancelled_tells_a_cooperative_guest_its_deadline_passed() {
    let mut instance = wat_instance(short_grants(Duration::from_millis(100))).await;
    let result = call(&mut instance, "wait", "{}").await;
    // The guest either notices `is-cancelled` and returns, or the epoch stops it first.
    match result {
        Ok(out) => assert_eq!(out.output_json, "{}"),
        Err(err) => assert_eq!(err.code(), "timed_out"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bomb_is_memory_exceeded() {
    let grants = Grants {
        memory_bytes: 32 << 20,
        ..Grants::default()
    };
    let mut instance = wat_instance(grants).await;
    let err = call(&mut instance, "grow", "{}").await.unwrap_err();
    assert_eq!(
        err.kind,
        CallErrorKind::MemoryExceeded {
            limit_bytes: 32 << 20
        }
    );
    assert_eq!(err.code(), "limit_reached");
    assert!(instance.is_poisoned());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_recursion_traps_and_a_fresh_instance_works() {
    let mut instance = wat_instance(Grants::default()).await;
    let err = call(&mut instance, "deep", "{}").await.unwrap_err();
    match &err.kind {
        CallErrorKind::Trap { message } => {
            assert!(message.contains("call stack exhausted"), "{message}");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert_eq!(err.code(), "plugin_error");
    assert!(instance.is_poisoned());
    let mut fresh = wat_instance(Grants::default()).await;
    assert!(call(&mut fresh, "echo", "{}").await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_output_is_output_too_large() {
    let mut instance = wat_instance(Grants::default()).await;
    let err = call(&mut instance, "huge", "{}").await.unwrap_err();
    assert_eq!(
        err.kind,
        CallErrorKind::OutputTooLarge {
            actual_bytes: 100 << 20,
            limit_bytes: 16 << 20
        }
    );
    assert_eq!(err.code(), "output_limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_flood_is_bounded() {
    let mut instance = wat_instance(Grants::default()).await;
    let out = call(&mut instance, "chatty", "{}").await.unwrap();
    let report = out.report;
    assert_eq!(report.logs.len(), 1_000);
    assert_eq!(report.dropped_logs, 4_000);
    assert!(
        report
            .logs
            .iter()
            .all(|l| l.message.len() == 4096 && l.truncated)
    );
    // The bound is per call: the next call starts empty.
    let out = call(&mut instance, "echo", "{}").await.unwrap();
    assert_eq!(out.report.logs.len(), 0);
    assert_eq!(out.report.dropped_logs, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_is_served_from_the_grant() {
    let grants = Grants {
        config: [("greeting".to_owned(), r#""ahoy""#.to_owned())].into(),
        ..Grants::default()
    };
    let mut instance = wat_instance(grants).await;
    let out = call(&mut instance, "config", "{}").await.unwrap();
    assert_eq!(out.output_json, r#""ahoy""#);
    let mut bare = wat_instance(Grants::default()).await;
    assert_eq!(
        call(&mut bare, "config", "{}").await.unwrap().output_json,
        "null"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_grant_above_the_engine_maximum_is_refused() {
    let loaded = crate::support::shared_sandbox()
        .load(crate::support::wat_plugin())
        .unwrap();
    let err = loaded
        .instantiate(Grants {
            memory_bytes: 8 << 30,
            ..Grants::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, bosun_sandbox::SandboxError::MemoryGrantTooLarge { .. }),
        "{err}"
    );
}
