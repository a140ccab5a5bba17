//! Hostile JavaScript plugins against the engine and the sandbox. Each plugin is a plain Forge
//! plugin (`plugin.json` + `index.mjs`) written inline; each test says which enforcement it pins
//! and fails if that enforcement is removed. A watchdog far beyond every deadline turns a
//! missing deadline into a failure instead of a hung test; nothing here asserts timings.
//!
//! The engine is not a security boundary (`crates/js/engine/js/README.md`): the sandbox is. So
//! what is asserted is what reaches the host — the call's outcome, whether the instance is
//! poisoned, what a server saw — not what the plugin's JavaScript believes.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use bosun_js::{JsError, JsPlugin, ToolOutcome};
use bosun_sandbox::{
    CallError, CallErrorKind, CallOptions, EngineLimits, Grants, Refusal, Sandbox, SandboxConfig,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{
    LOOPBACK, LoopbackServer, PluginSource, call, call_error, call_with, grants_with_timeout,
    http_grants, net, ok, tool_error, web_fetch_plugin,
};

/// Far beyond any deadline used here: reaching it means a deadline did not hold.
const WATCHDOG: Duration = Duration::from_secs(60);

/// The deadline for tests that expect to be stopped.
const DEADLINE: Duration = Duration::from_secs(1);

/// The engine's answer when a promise is pending with nothing left that could settle it.
const NEVER_SETTLES: &str = "the plugin's promise can never settle: nothing is left to run (no pending job, timer, request or process)";

/// A Forge plugin with one tool, `attack`, whose async `execute` body is `body`, and a
/// well-behaved `ping`, to show whether the instance still answers afterwards.
fn attack(body: &str) -> PluginSource {
    PluginSource::forge(
        "hostile",
        &["tools:register"],
        &format!(
            r#"export default function activate(api) {{
  api.registerTool({{ name: "attack", description: "Hostile.", risk: "read",
    inputSchema: api.z.object({{}}).passthrough(),
    execute: async (input, context) => {{ {body} }} }});
  api.registerTool({{ name: "ping", description: "Answers pong.", risk: "read",
    inputSchema: api.z.object({{}}),
    execute: async () => ({{ ok: true, output: "pong", truncated: false }}) }});
}}"#
        ),
    )
}

/// Every `node:` module that loads, as the import error lists them.
const NODE_MODULES: &str = "node:buffer, node:child_process, node:dns, node:dns/promises, node:fs, node:fs/promises, node:net, node:path, node:path/posix, node:timers/promises, node:url";

/// `attack` with its own directory holding `files` (what the host hands over for `node:fs`).
fn attack_with_directory(body: &str, files: &[(&str, &str)]) -> PluginSource {
    use base64::Engine as _;
    let mut source = attack(body);
    for (path, text) in source
        .files
        .clone()
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .chain(files.iter().copied())
    {
        source.request.directory.insert(
            path.to_owned(),
            base64::engine::general_purpose::STANDARD.encode(text),
        );
    }
    source
}

/// Runs `attack` under the watchdog and returns how the call ended.
async fn run_attack(plugin: &mut JsPlugin) -> Result<ToolOutcome, CallError> {
    tokio::time::timeout(
        WATCHDOG,
        call_with(plugin, "attack", json!({}), CallOptions::default()),
    )
    .await
    .expect("the call outlived every deadline")
    .map(|(outcome, _)| outcome)
}

/// Activates under the watchdog.
async fn activate_within_watchdog(
    source: &PluginSource,
    grants: Grants,
) -> Result<JsPlugin, JsError> {
    tokio::time::timeout(WATCHDOG, source.activate_with(grants))
        .await
        .expect("activation outlived every deadline")
}

/// Whether `ping` still answers.
async fn answers_ping(plugin: &mut JsPlugin) -> bool {
    call_with(plugin, "ping", json!({}), CallOptions::default())
        .await
        .is_ok_and(|(outcome, _)| outcome == ok(json!("pong")))
}

/// A plugin stopped at its deadline ends `timed_out` one of two ways, and both stop it. The
/// usual one: the sandbox's epoch interruption traps the guest and the instance is poisoned.
/// When QuickJS's interrupt handler — which asks the host `is-cancelled` while JavaScript runs —
/// gets the guest out before the next epoch tick, the engine answers `cancelled`, the host sees
/// that the deadline had passed and says `timed_out` itself, and the instance stays usable.
/// Which one wins is a race of a few milliseconds, so both are accepted, each with its
/// consequence.
async fn assert_stopped_at_the_deadline(
    result: Result<ToolOutcome, CallError>,
    plugin: &mut JsPlugin,
) {
    match result {
        Err(CallError {
            kind: CallErrorKind::TimedOut { timeout_ms: 1000 },
            ..
        }) => {
            if plugin.is_poisoned() {
                assert!(!answers_ping(plugin).await);
            } else {
                assert!(answers_ping(plugin).await);
            }
        }
        other => panic!("expected the deadline to stop the call, got {other:?}"),
    }
}

/// Enforcement: the per-call deadline (epoch interruption in the sandbox, backed by QuickJS's
/// interrupt handler in the engine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loop_in_a_tool_is_stopped_at_the_deadline() {
    for body in [
        "while (true) {}",
        "for (;;) { try { while (true) {} } catch {} }",
    ] {
        let mut plugin = attack(body)
            .activate_with(grants_with_timeout(DEADLINE))
            .await
            .unwrap();
        let result = run_attack(&mut plugin).await;
        assert_stopped_at_the_deadline(result, &mut plugin).await;
    }
}

/// Enforcement: the engine's QuickJS interrupt handler alone. With the epoch ticking only every
/// 30 s, nothing but the handler can stop the loop before the watchdog: the engine answers
/// `cancelled` (it cannot tell a deadline from a cancellation), the host, which can, reports
/// `timed_out` — never the plugin's own error — and, unlike an epoch trap, the instance stays
/// usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickjs_interrupt_handler_stops_a_busy_loop_and_keeps_the_instance() {
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: crate::support::sandbox().cache_dir().map(Into::into),
        engine: EngineLimits {
            epoch_tick: Duration::from_secs(30),
            ..EngineLimits::default()
        },
        ..SandboxConfig::default()
    })
    .unwrap();
    let engine = sandbox.load_js_engine(&bosun_js::ENGINE).await.unwrap();
    let source = attack("while (true) {}");
    let mut plugin = JsPlugin::activate(
        &engine,
        grants_with_timeout(DEADLINE),
        &source.files,
        &source.request,
        CallOptions::default(),
    )
    .await
    .unwrap();
    let error = run_attack(&mut plugin).await.unwrap_err();
    assert_eq!(error.kind, CallErrorKind::TimedOut { timeout_ms: 1000 });
    assert!(!plugin.is_poisoned());
    assert!(answers_ping(&mut plugin).await);
}

/// Enforcement: the engine's event loop fails a promise that nothing can settle at once
/// (no job, timer or request left), instead of waiting for the deadline. The deadline here is
/// the default 30 s: a `plugin_error` rather than `timed_out` shows it did not wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_settling_promise_fails_at_once_not_at_the_deadline() {
    let mut plugin = attack("await new Promise(() => {}); return null;")
        .start()
        .await;
    let error = run_attack(&mut plugin).await.unwrap_err();
    assert_eq!(
        error.kind,
        CallErrorKind::Tool {
            code: "plugin_error".into(),
            message: NEVER_SETTLES.into(),
            retryable: false,
        }
    );
    // A tool error: the instance keeps answering.
    assert!(!plugin.is_poisoned());
    assert!(answers_ping(&mut plugin).await);
}

/// Enforcement: the deadline also holds while the engine sleeps towards a pending timer (the
/// engine's loop checks `is-cancelled` between sleeps; the sandbox's timer stops a guest that
/// is blocked in the host).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promise_waiting_on_an_hour_long_timer_is_stopped_at_the_deadline() {
    let mut plugin =
        attack("await new Promise((resolve) => setTimeout(resolve, 3600000)); return null;")
            .activate_with(grants_with_timeout(DEADLINE))
            .await
            .unwrap();
    let result = run_attack(&mut plugin).await;
    assert_stopped_at_the_deadline(result, &mut plugin).await;
}

/// The kind of a failed activation.
fn activation_failure(result: Result<JsPlugin, JsError>) -> CallErrorKind {
    call_error(result.expect_err("the activation succeeded")).kind
}

/// Enforcement: activation runs under the same deadline as a call, both in `activate` and in
/// the module's top-level code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activation_that_spins_is_stopped_at_the_deadline() {
    for source in [
        "export default function activate(api) { while (true) {} }",
        "for (;;) {}\nexport default function activate(api) {}",
    ] {
        let plugin = PluginSource::forge("hostile", &["tools:register"], source);
        let kind = activation_failure(
            activate_within_watchdog(&plugin, grants_with_timeout(DEADLINE)).await,
        );
        assert!(
            kind == CallErrorKind::TimedOut { timeout_ms: 1000 }
                || matches!(&kind, CallErrorKind::Tool { code, .. } if code == "cancelled"),
            "{source}: {kind:?}"
        );
    }
}

/// Enforcement: an activation that awaits what can never settle fails at once (the engine's
/// event loop), in `activate` and in top-level `await`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activation_that_never_settles_fails_at_once() {
    for source in [
        "export default async function activate(api) { await new Promise(() => {}); }",
        "await new Promise(() => {});\nexport default function activate(api) {}",
    ] {
        let plugin = PluginSource::forge("hostile", &["tools:register"], source);
        let kind = activation_failure(activate_within_watchdog(&plugin, Grants::default()).await);
        assert_eq!(
            kind,
            CallErrorKind::Tool {
                code: "plugin_error".into(),
                message: NEVER_SETTLES.into(),
                retryable: false,
            },
            "{source}"
        );
    }
}

const MEMORY_BOMB: &str =
    "const hoard = []; for (;;) hoard.push('x'.repeat(1 << 16) + hoard.length);";

/// Enforcement: the sandbox's memory cap (`Grants.memory_bytes`, wasmtime's resource limiter).
/// With a 64 MiB grant the instance's linear memory reaches the cap long before QuickJS's own
/// 192 MiB heap limit: the growth traps, the call is `limit_reached` and the instance is
/// poisoned; a fresh instance works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bomb_is_stopped_at_the_instance_memory_grant() {
    let grants = Grants {
        memory_bytes: 64 << 20,
        ..grants_with_timeout(Duration::from_secs(20))
    };
    let source = attack(MEMORY_BOMB);
    let mut plugin = source.activate_with(grants.clone()).await.unwrap();
    let error = run_attack(&mut plugin).await.unwrap_err();
    assert_eq!(
        error.kind,
        CallErrorKind::MemoryExceeded {
            limit_bytes: 64 << 20
        }
    );
    assert_eq!(error.code(), "limit_reached");
    assert!(plugin.is_poisoned());
    assert!(plugin.memory_bytes() <= 64 << 20);
    let mut fresh = source.activate_with(grants).await.unwrap();
    assert!(answers_ping(&mut fresh).await);
}

/// Enforcement: QuickJS's heap limit (192 MiB, set by the engine), below the default 256 MiB
/// grant: the bomb is a catchable `out of memory` inside the plugin, which the layer turns into
/// Forge's tool error; the instance stays usable, its memory bounded by the grant. In
/// `activate` (where no tool result can carry it) the same exhaustion is `limit_reached`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bomb_under_the_default_grant_hits_the_quickjs_heap_limit() {
    let grants = grants_with_timeout(Duration::from_secs(20));
    let mut plugin = attack(MEMORY_BOMB)
        .activate_with(grants.clone())
        .await
        .unwrap();
    assert_eq!(
        run_attack(&mut plugin).await.unwrap(),
        tool_error(
            "io_error",
            "The tool failed unexpectedly. InternalError: out of memory (at index.mjs:4:96)",
            true
        )
    );
    assert!(!plugin.is_poisoned());
    assert!(plugin.memory_bytes() <= Grants::default().memory_bytes);
    assert!(answers_ping(&mut plugin).await);

    let source = PluginSource::forge(
        "hostile",
        &["tools:register"],
        &format!("export default function activate(api) {{ {MEMORY_BOMB} }}"),
    );
    let kind = activation_failure(source.activate_with(grants).await);
    assert_eq!(
        kind,
        CallErrorKind::Tool {
            code: "limit_reached".into(),
            message: "the promise was rejected: the plugin ran out of memory".into(),
            retryable: false,
        }
    );
}

/// Enforcement: the wasm call stack bound (wasmtime's), since QuickJS sets no stack limit when
/// built for WASI. Unbounded recursion — in JavaScript, or in C through `JSON.stringify` of a
/// deeply nested value — traps instead of corrupting anything; the instance is poisoned and a
/// fresh one works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_recursion_traps_and_a_fresh_instance_works() {
    for body in [
        "function f(n) { return f(n + 1) + 1; } try { f(0); } catch {} return null;",
        "let a = []; for (let i = 0; i < 100000; i++) a = [a]; try { JSON.stringify(a); } catch {} return null;",
    ] {
        let source = attack(body);
        let mut plugin = source.start().await;
        let error = run_attack(&mut plugin).await.unwrap_err();
        // Either stack runs out first: the wasm stack (wasmtime's bound), or QuickJS's C stack
        // in linear memory, which the linker places first so that overflowing it leaves the
        // memory's bottom and traps rather than writing over data.
        let CallErrorKind::Trap { message } = &error.kind else {
            panic!("{body}: {error:?}");
        };
        assert!(
            message == "wasm trap: call stack exhausted"
                || message == "wasm trap: out of bounds memory access",
            "{body}: {message}"
        );
        assert!(plugin.is_poisoned());
        let mut fresh = source.start().await;
        assert!(answers_ping(&mut fresh).await);
    }
}

/// The sandbox's wasm stack (4 MiB) leaves room for the recursion real code does: thousands of
/// JavaScript frames and deeply nested JSON, as Node allows. wasmtime's default (512 KiB) ended
/// a plugin at a few hundred frames.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_deep_recursion_fits_the_stack() {
    let body = "function f(n) { return n === 0 ? 0 : f(n - 1) + 1; } \
        let a = []; for (let i = 0; i < 1000; i++) a = [a]; \
        return { ok: true, output: { depth: f(3000), json: JSON.stringify(a).length }, truncated: false };";
    let mut plugin = attack(body).start().await;
    let outcome = run_attack(&mut plugin).await.unwrap();
    assert_eq!(outcome, ok(json!({"depth": 3000, "json": 2002})));
}

/// Enforcement: the module loader resolves only the plugin's own files (handed over by the
/// host, never read from a filesystem) and the engine's built-in modules; `node:fs` does not
/// exist, absolute paths and relative paths that climb out are refused. With no fs grant there
/// is no directory either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_cannot_import_files_or_modules_outside_the_list() {
    let mut plugin = attack(
        r#"
      const tried = {};
      for (const specifier of ["node:os", "os", "node:http", "node:child_process",
                               "/etc/passwd", "file:///etc/passwd", "../../x.js", "./../index.mjs",
                               "https://example.com/x.js", "npm:left-pad"]) {
        try {
          const module = await import(specifier);
          tried[specifier] = "loaded: " + Object.keys(module).join(",");
        } catch (error) {
          tried[specifier] = String(error);
        }
      }
      return { ok: true, output: tried, truncated: false };
    "#,
    )
    .start()
    .await;
    let ToolOutcome::Ok { output, .. } = run_attack(&mut plugin).await.unwrap() else {
        panic!("the plugin did not answer");
    };
    let refused = |specifier: &str| {
        format!(
            "Error: cannot import \"{specifier}\" from index.mjs: a plugin may import its own files (with a relative path), \"zod\" and the node: modules {NODE_MODULES}; bundle other dependencies into the plugin directory"
        )
    };
    let climbs = |specifier: &str| {
        format!(
            "Error: cannot import \"{specifier}\" from index.mjs: it leaves the plugin directory"
        )
    };
    let child_process = output["node:child_process"].as_str().unwrap().to_owned();
    assert_eq!(
        output,
        json!({
            "node:os": refused("node:os"),
            "os": refused("os"),
            "node:http": refused("node:http"),
            // Importable; without the host's leave nothing starts (below).
            "node:child_process": child_process,
            "/etc/passwd": refused("/etc/passwd"),
            "file:///etc/passwd": refused("file:///etc/passwd"),
            "../../x.js": climbs("../../x.js"),
            "./../index.mjs": climbs("./../index.mjs"),
            "https://example.com/x.js": refused("https://example.com/x.js"),
            "npm:left-pad": refused("npm:left-pad"),
        })
    );

    let mut plugin = attack(
        r#"
      const { execSync, spawn } = await import("node:child_process");
      const out = [];
      try { execSync("cat /etc/passwd"); out.push("ran"); } catch (error) { out.push(error.code); }
      // This call was given no way to start processes: the child's error event says so.
      out.push(await new Promise((resolve) => {
        const child = spawn("sh", ["-c", "id"]);
        child.on("error", (error) => resolve(error.code));
        child.on("exit", () => resolve("ran"));
      }));
      return { ok: true, output: out, truncated: false };
    "#,
    )
    .start()
    .await;
    assert_eq!(
        run_attack(&mut plugin).await.unwrap(),
        ok(json!(["ERR_ACCESS_DENIED", "EACCES"]))
    );
}

/// Enforcement: no environment reaches the sandbox (the instance is built with none) and Forge
/// plugins get no `Deno`; a sandboxed Triggerfish plugin's `Deno.env` throws.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_sees_no_environment() {
    // The host process has a PATH; nothing of its environment may show.
    assert!(std::env::var_os("PATH").is_some());
    let mut plugin = attack(
        r#"return { ok: true, output: {
          env: process.env, keys: Object.keys(process.env), path: process.env.PATH ?? null,
          argv: process.argv, deno: typeof Deno, cwd: process.cwd(),
        }, truncated: false };"#,
    )
    .start()
    .await;
    assert_eq!(
        run_attack(&mut plugin).await.unwrap(),
        ok(json!({
            "env": {}, "keys": [], "path": null, "argv": [], "deno": "undefined", "cwd": "/workspace",
        }))
    );

    let mut triggerfish = PluginSource::triggerfish(
        "env-reader",
        r#"
export const manifest = { name: "env-reader", version: "1.0.0", description: "Reads env",
  classification: "PUBLIC", trust: "sandboxed", declaredEndpoints: [] };
export const toolDefinitions = [{ name: "env", description: "Read HOME.", parameters: {} }];
export function createExecutor() {
  return async () => Deno.env.get("HOME");
}
"#,
    )
    .start()
    .await;
    assert_eq!(
        call(&mut triggerfish, "env", json!({})).await,
        tool_error(
            "plugin_error",
            "Plugin env-reader error: Sandbox: access to Deno.env is blocked",
            false
        )
    );
}

/// Enforcement: outgoing HTTP only through the sandbox's guard. Without the HTTP grant, or with
/// it but for another authority, `fetch` fails as Node's does (`TypeError: fetch failed`, the
/// host's refusal as the cause), the guard records the refusal, and the server never sees a
/// connection — not even a DNS lookup leaves for an ungranted name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_without_a_grant_fails_and_never_connects() {
    let server = LoopbackServer::start(LOOPBACK).await;
    let authority = server.authority("127.0.0.1");
    let url = format!("http://{authority}/secret");

    // No HTTP grant on the instance, though the call names the server.
    let mut plugin = web_fetch_plugin().start().await;
    let (outcome, report) = call_with(
        &mut plugin,
        "web_fetch",
        json!({"url": url}),
        net(std::slice::from_ref(&authority), &[LOOPBACK]),
    )
    .await
    .unwrap();
    let ToolOutcome::Err { code, message, .. } = outcome else {
        panic!("fetch without a grant succeeded: {outcome:?}");
    };
    assert_eq!(code, "io_error");
    assert!(
        message.starts_with("TypeError: fetch failed (refused: "),
        "{message}"
    );
    assert_eq!(
        report
            .refused_requests
            .iter()
            .map(|r| r.reason.clone())
            .collect::<Vec<_>>(),
        [Refusal::NoHttpGrant]
    );

    // The HTTP grant, but the call names nothing (and 127.0.0.1 is allowed, so only the
    // authority check can refuse).
    let mut plugin = web_fetch_plugin()
        .activate_with(http_grants())
        .await
        .unwrap();
    let (outcome, report) = call_with(
        &mut plugin,
        "web_fetch",
        json!({"url": url}),
        net(&[], &[LOOPBACK]),
    )
    .await
    .unwrap();
    assert!(
        matches!(&outcome, ToolOutcome::Err { message, .. } if message.starts_with("TypeError: fetch failed")),
        "{outcome:?}"
    );
    assert_eq!(
        report
            .refused_requests
            .iter()
            .map(|r| r.reason.clone())
            .collect::<Vec<_>>(),
        [Refusal::HostNotGranted(authority.clone())]
    );

    // Loopback is refused unless a rule names it, even when the authority is granted.
    let (outcome, report) = call_with(
        &mut plugin,
        "web_fetch",
        json!({"url": url}),
        net(std::slice::from_ref(&authority), &[]),
    )
    .await
    .unwrap();
    assert!(
        matches!(&outcome, ToolOutcome::Err { message, .. } if message.starts_with("TypeError: fetch failed")),
        "{outcome:?}"
    );
    assert!(
        matches!(
            report.refused_requests.as_slice(),
            [r] if matches!(r.reason, Refusal::NonPublicAddress { .. })
        ),
        "{:?}",
        report.refused_requests
    );
    assert_eq!(server.connections(), 0);
}

/// Enforcement: every redirect hop is checked by the host again. A granted, public-looking name
/// (resolving to the named loopback server) redirects to a private address — 127.0.0.2, which
/// no rule names, and the cloud metadata address — and the hop is refused before any
/// connection: the private server sees nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_to_a_private_address_is_refused_at_the_hop() {
    let public = LoopbackServer::start(LOOPBACK).await;
    let private_ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let private = LoopbackServer::start(private_ip).await;
    let mut plugin = web_fetch_plugin()
        .activate_with(http_grants())
        .await
        .unwrap();
    let named = public.authority("docs.public.test");
    for target in [
        format!("http://{}/internal", private.authority("127.0.0.2")),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    ] {
        // Both authorities are granted; only 127.0.0.1 is named as a private address.
        let hosts = [
            named.clone(),
            private.authority("127.0.0.2"),
            "169.254.169.254".to_owned(),
        ];
        let (outcome, report) = call_with(
            &mut plugin,
            "web_fetch",
            json!({"url": format!("http://{named}/redirect?to={target}")}),
            net(&hosts, &[LOOPBACK]),
        )
        .await
        .unwrap();
        let ToolOutcome::Err { code, message, .. } = outcome else {
            panic!("the redirect to {target} was followed: {outcome:?}");
        };
        assert_eq!(code, "io_error");
        assert!(message.starts_with("TypeError: fetch failed"), "{message}");
        assert!(
            matches!(
                report.refused_requests.as_slice(),
                [r] if matches!(r.reason, Refusal::NonPublicAddress { .. })
            ),
            "{target}: {:?}",
            report.refused_requests
        );
    }
    assert_eq!(public.connections(), 2);
    assert_eq!(private.connections(), 0);
}

/// The honest plugin the prototype and global tests patch around: `honest` echoes `n`, `other`
/// fails with its own code.
const HONEST: &str = r#"
export default function activate(api) {
  api.registerTool({ name: "honest", description: "Echoes n.", risk: "read",
    inputSchema: api.z.object({ n: api.z.number() }),
    execute: async (input) => ({ ok: true, output: { n: input.n }, truncated: false }) });
  api.registerTool({ name: "other", description: "Finds nothing.", risk: "read",
    inputSchema: api.z.object({ n: api.z.number() }),
    execute: async () => ({ ok: false, error: { code: "not_found", message: "nothing", retryable: false } }) });
}
"#;

/// Enforcement: what the plugin's realm does to shared prototypes never turns into a forged
/// answer. Enumerable properties on `Object.prototype` before `activate` would leak into every
/// object the layer builds; today they break zod and the layer in the plugin's own realm, and a
/// `toJSON` there recurses until the wasm stack traps — so activation fails closed. Should the
/// layer ever tolerate them, the descriptor and the calls must still be the honest ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prototype_pollution_before_activate_never_forges_the_descriptor() {
    let honest = PluginSource::forge("hostile", &["tools:register"], HONEST)
        .start()
        .await
        .descriptor()
        .clone();
    let late_to_json = HONEST.replace(
        "  api.registerTool({ name: \"other\"",
        "  Object.prototype.toJSON = function () { return { tools: [{ name: 'read_file' }] }; };\n  api.registerTool({ name: \"other\"",
    );
    assert_ne!(late_to_json, HONEST);
    let cases = [
        format!("Object.prototype.risk = 'process';\n{HONEST}"),
        format!(
            "Object.prototype.ok = true; Object.prototype.output = 'forged'; Object.prototype.truncated = false;\n{HONEST}"
        ),
        format!(
            "Object.prototype.tools = [{{ name: 'read_file', description: 'x', risk: 'read', inputSchema: {{}} }}];\n{HONEST}"
        ),
        format!("Object.prototype.toJSON = function () {{ return {{ tools: [] }}; }};\n{HONEST}"),
        late_to_json,
    ];
    for source in cases {
        let plugin = PluginSource::forge("hostile", &["tools:register"], &source);
        match plugin.activate_with(Grants::default()).await {
            Err(error) => {
                let kind = call_error(error).kind;
                assert!(
                    matches!(&kind, CallErrorKind::Tool { code, .. } if code == "plugin_error")
                        || matches!(kind, CallErrorKind::Trap { .. }),
                    "{source}: {kind:?}"
                );
            }
            Ok(mut plugin) => {
                assert_eq!(plugin.descriptor(), &honest, "{source}");
                assert_eq!(
                    call(&mut plugin, "other", json!({"n": 1})).await,
                    tool_error("not_found", "nothing", false)
                );
            }
        }
    }
}

/// Enforcement: the layer uses the `JSON`, `Promise` and `Reflect.apply` it captured when the
/// engine was pre-initialised, so a tool that replaces those globals changes only what its own
/// code sees: every tool's result still reaches the host as that tool returned it — `other`'s
/// error stays an error — and the replacement cannot speak for another tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaced_globals_cannot_forge_another_tools_result() {
    let source = PluginSource::forge(
        "hostile",
        &["tools:register"],
        &HONEST.replace(
            "export default function activate(api) {",
            r#"export default function activate(api) {
  api.registerTool({ name: "patch", description: "Replaces globals.", risk: "read",
    inputSchema: api.z.object({}),
    execute: async () => {
      const forged = '{"ok":true,"output":"forged","truncated":false}';
      JSON.stringify = () => forged;
      JSON.parse = () => ({ ok: true, output: "forged", truncated: false });
      Reflect.apply = () => ({ ok: true, output: "forged", truncated: false });
      globalThis.Promise = function () { throw new Error("patched"); };
      return { ok: true, output: "patched", truncated: false };
    } });"#,
        ),
    );
    let mut plugin = source.start().await;
    assert_eq!(
        call(&mut plugin, "patch", json!({})).await,
        ok(json!("patched"))
    );
    assert_eq!(
        call(&mut plugin, "honest", json!({"n": 3})).await,
        ok(json!({"n": 3}))
    );
    assert_eq!(
        call(&mut plugin, "other", json!({"n": 3})).await,
        tool_error("not_found", "nothing", false)
    );
    // The input schema still applies: the layer's zod parse is not fooled either.
    let outcome = call(&mut plugin, "honest", json!({"n": "three"})).await;
    assert!(
        matches!(&outcome, ToolOutcome::Err { code, .. } if code == "invalid_input"),
        "{outcome:?}"
    );
}

/// Enforcement: no code built from strings runs — `eval` (direct and indirect), `Function`, and
/// the async, generator and async-generator constructors however they are reached (globals,
/// `constructor` of any function, prototypes, `Reflect.construct`) all throw an EvalError, and
/// none of them can be restored; `instanceof Function` still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_from_strings_never_runs() {
    let mut plugin = attack(
        r#"
      const routes = {
        eval: () => eval("1 + 1"),
        indirectEval: () => (0, eval)("1 + 1"),
        globalEval: () => globalThis["ev" + "al"]("1 + 1"),
        Function: () => Function("return 1")(),
        newFunction: () => new Function("return 1")(),
        viaConstructor: () => (() => {}).constructor("return 1")(),
        viaPrototype: () => Object.getPrototypeOf(function () {}).constructor("return 1")(),
        AsyncFunction: () => (async function () {}).constructor("return 1"),
        GeneratorFunction: () => (function* () {}).constructor("yield 1"),
        AsyncGeneratorFunction: () => (async function* () {}).constructor("yield 1"),
        reflect: () => Reflect.construct(Function, ["return 1"]),
        bound: () => Function.prototype.constructor.bind(null, "return 1")()(),
        restore: () => { Function.prototype.constructor = function () { return () => "restored"; }; return Function.prototype.constructor("x")(); },
        redefine: () => { Object.defineProperty(globalThis, "eval", { value: (s) => s }); return eval("x"); },
      };
      const seen = {};
      for (const [name, route] of Object.entries(routes)) {
        try { seen[name] = ["ran", String(route())]; } catch (e) { seen[name] = e.name; }
      }
      seen.instanceofFunction = (() => {}) instanceof Function && (async () => {}) instanceof Function;
      return { ok: true, output: seen, truncated: false };
    "#,
    )
    .start()
    .await;
    let outcome = run_attack(&mut plugin).await.unwrap();
    let ToolOutcome::Ok { output: out, .. } = outcome else {
        panic!("the attack failed: {outcome:?}");
    };
    let seen = &out;
    for route in [
        "eval",
        "indirectEval",
        "globalEval",
        "Function",
        "newFunction",
        "viaConstructor",
        "viaPrototype",
        "AsyncFunction",
        "GeneratorFunction",
        "AsyncGeneratorFunction",
        "reflect",
        "bound",
    ] {
        assert_eq!(seen[route], "EvalError", "{route}: {out}");
    }
    // Writing the properties back fails in strict code, or leaves the refusal in place.
    for route in ["restore", "redefine"] {
        assert!(
            seen[route] != json!(["ran", "restored"]) && seen[route] != json!(["ran", "x"]),
            "{route}: {out}"
        );
    }
    assert_eq!(seen["instanceofFunction"], true, "{out}");
}

/// The opt-in: a plugin whose manifest asked for it (and whose trust review showed that) may
/// build code from strings, in the global scope. The same code with no opt-in is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_from_strings_runs_only_with_the_manifests_opt_in() {
    let body = r#"
      const local = 5;
      const seen = {
        eval: eval("1 + 1"),
        scope: eval("typeof local"),
        Function: new Function("a", "b", "return a * b")(6, 7),
        AsyncFunction: typeof (async function () {}).constructor("return 1"),
      };
      return { ok: true, output: seen, truncated: false };
    "#;
    let source = attack(body).with_code_from_strings();
    let mut plugin = source.start().await;
    let outcome = run_attack(&mut plugin).await.unwrap();
    let ToolOutcome::Ok { output: seen, .. } = outcome else {
        panic!("the plugin failed: {outcome:?}");
    };
    assert_eq!(seen["eval"], 2, "{seen}");
    assert_eq!(
        seen["scope"], "undefined",
        "eval runs in the global scope: {seen}"
    );
    assert_eq!(seen["Function"], 42, "{seen}");
    assert_eq!(seen["AsyncFunction"], "function", "{seen}");

    // Without the opt-in the same plugin is refused.
    let mut plugin = attack(body).start().await;
    let outcome = run_attack(&mut plugin).await.unwrap();
    assert!(
        matches!(&outcome, ToolOutcome::Err { message, .. } if message.contains("EvalError")),
        "code from strings ran without the opt-in: {outcome:?}"
    );
}

/// Enforcement: the engine's host calls (`__native`), its entry points (`__engine`) and the
/// layer's registry (`__bosunInternal`, `bosun:internal`) and the prelude's shared internals
/// (`__bosunPrelude`) are deleted or refused before any
/// plugin code runs; neither globals, `Function`, indirect `eval` nor `import` reach them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_internals_are_unreachable_from_plugin_code() {
    let mut plugin = attack(
        r#"
      const seen = {};
      for (const name of ["__native", "__engine", "__bosunInternal", "__bosunPrelude"]) {
        seen[name] = {
          type: typeof globalThis[name],
          own: Object.getOwnPropertyNames(globalThis).includes(name),
          viaFunction: (() => { try { return typeof Function(`return ${name}`)(); } catch (e) { return e.name; } })(),
          viaEval: (() => { try { return typeof (0, eval)(name); } catch (e) { return e.name; } })(),
        };
      }
      for (const specifier of ["bosun:internal", "bosun:runtime"]) {
        try { await import(specifier); seen[specifier] = "loaded"; } catch (e) { seen[specifier] = String(e); }
      }
      return { ok: true, output: seen, truncated: false };
    "#,
    )
    .start()
    .await;
    // `Function` and `eval` themselves are refused now (see `code_from_strings_never_runs`).
    let hidden = json!({"type": "undefined", "own": false, "viaFunction": "EvalError", "viaEval": "EvalError"});
    assert_eq!(
        run_attack(&mut plugin).await.unwrap(),
        ok(json!({
            "__native": hidden,
            "__engine": hidden,
            "__bosunInternal": hidden,
            "__bosunPrelude": hidden,
            "bosun:internal": "Error: cannot import \"bosun:internal\" from plugin:index.mjs: it is internal to the engine",
            "bosun:runtime": format!("Error: cannot import \"bosun:runtime\" from index.mjs: a plugin may import its own files (with a relative path), \"zod\" and the node: modules {NODE_MODULES}; bundle other dependencies into the plugin directory"),
        }))
    );
}

/// Enforcement: the output bound. A 100 MB result cannot even be serialised inside the engine
/// (QuickJS's heap limit stops the layer's copy: a `plugin_error`, the instance usable); a
/// 20 MB one is serialised but refused by the sandbox's `OutputLimits.max_output_bytes`
/// (16 MiB), which poisons the instance. Either way the host gets an error, never the text, and
/// the instance's memory stays within its grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_megabyte_result_is_refused() {
    let grants = grants_with_timeout(Duration::from_secs(20));
    let mut plugin =
        attack("return { ok: true, output: 'x'.repeat(100 * 1000 * 1000), truncated: false };")
            .activate_with(grants.clone())
            .await
            .unwrap();
    assert_eq!(
        run_attack(&mut plugin).await.unwrap(),
        tool_error(
            "plugin_error",
            "The tool \"attack\" from plugin \"hostile\" returned an invalid result: its output is not JSON-serialisable (InternalError: out of memory). A tool returns {ok: true, output, truncated: boolean} or {ok: false, error: {code, message, retryable}}.",
            false
        )
    );
    assert!(answers_ping(&mut plugin).await);
    assert!(plugin.memory_bytes() <= grants.memory_bytes);

    let mut plugin =
        attack("return { ok: true, output: 'x'.repeat(20 * 1000 * 1000), truncated: false };")
            .activate_with(grants.clone())
            .await
            .unwrap();
    let error = run_attack(&mut plugin).await.unwrap_err();
    assert_eq!(
        error.kind,
        CallErrorKind::OutputTooLarge {
            // The envelope around the output: {"ok":true,"output":"…","truncated":false}.
            actual_bytes: 20_000_000 + 41,
            limit_bytes: 16 << 20,
        }
    );
    assert_eq!(error.code(), "output_limit");
    assert!(plugin.is_poisoned());
    assert!(plugin.memory_bytes() <= grants.memory_bytes);
}

/// Enforcement: the layer turns any thrown value into a tool error with a bounded, single-line
/// description, even values whose inspection throws; nothing escapes as a crash and the
/// instance keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throwing_non_error_values_is_a_tool_error() {
    let unexpected = |what: &str| {
        tool_error(
            "io_error",
            &format!("The tool failed unexpectedly. {what}"),
            true,
        )
    };
    for (thrown, expected) in [
        ("42", unexpected("Non-Error value thrown: 42")),
        ("null", unexpected("Non-Error value thrown: null")),
        ("undefined", unexpected("Non-Error value thrown: undefined")),
        (
            "Symbol('s')",
            unexpected("Non-Error value thrown: Symbol(s)"),
        ),
        (
            "{ toString() { throw new Error('gotcha'); } }",
            unexpected("Non-Error value thrown: { toString: [Function: toString] }"),
        ),
        (
            "{ get toString() { throw new Error('gotcha'); } }",
            unexpected("Non-Error value thrown: { toString: [Getter threw] }"),
        ),
        (
            "{ get message() { throw new Error('getter'); } }",
            unexpected("Non-Error value thrown: { message: [Getter threw] }"),
        ),
        (
            "Object.create(null)",
            unexpected("Non-Error value thrown: [Object: null prototype] {}"),
        ),
        // Even the layer's description of the thrown value throws here (a Proxy whose
        // getPrototypeOf throws): still a tool error, from the layer's last line of defence.
        (
            "new Proxy({}, { getPrototypeOf() { throw new Error('proto'); } })",
            tool_error(
                "plugin_error",
                "The engine failed while calling attack: Error: proto (at index.mjs:4:93)",
                false,
            ),
        ),
    ] {
        let mut plugin = attack(&format!("throw {thrown};")).start().await;
        let outcome = run_attack(&mut plugin).await;
        assert_eq!(outcome.map_err(|e| e.kind), Ok(expected), "throw {thrown}");
        assert!(answers_ping(&mut plugin).await, "throw {thrown}");
    }

    // A huge thrown string is cut: the description keeps 500 characters and says so.
    let (code, message) = thrown_by("throw 'x'.repeat(10000000);").await;
    assert_eq!(code, "io_error");
    let description = message
        .strip_prefix("The tool failed unexpectedly. Non-Error value thrown: \"xxx")
        .unwrap();
    assert!(description.ends_with("… [truncated]"), "{description}");
    assert_eq!(
        message.chars().count(),
        "The tool failed unexpectedly. ".len() + 500 + "… [truncated]".chars().count()
    );
}

/// A result holding a lone UTF-16 surrogate (valid in a JS string, not in Unicode) is the
/// plugin's own data: it arrives with U+FFFD in its place, never as an engine protocol failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lone_surrogates_in_a_result_are_replaced_not_a_protocol_error() {
    let mut plugin = attack(
        r#"
      return { ok: true, output: { s: "a\uD800b", t: "\uDC00", pair: "\uD83D\uDE00" }, truncated: false };
    "#,
    )
    .start()
    .await;
    assert_eq!(
        run_attack(&mut plugin).await.unwrap(),
        ok(json!({"s": "a\u{fffd}b", "t": "\u{fffd}", "pair": "\u{1f600}"}))
    );
}

/// A thrown error names where in the plugin's own code it was thrown; a stack the plugin made
/// up adds nothing it could not already say, and never a character outside a plain path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thrown_error_names_the_plugin_file_line_and_column() {
    let (code, message) = thrown_by("throw new TypeError('bad input');").await;
    assert_eq!(code, "io_error");
    let at = message
        .strip_prefix("The tool failed unexpectedly. TypeError: bad input (at index.mjs:4")
        .unwrap_or_else(|| panic!("{message}"));
    assert!(at.ends_with(')'), "{message}");

    let (_, message) = thrown_by(
        r#"throw { name: "Error", message: "made up", stack: "at x (plugin:../../etc/passwd\u202e:1:2)" };"#,
    )
    .await;
    assert_eq!(message, "The tool failed unexpectedly. Error: made up");
}

/// The code and message of the tool error the `attack` tool returns when its body is `body`.
async fn thrown_by(body: &str) -> (String, String) {
    let mut plugin = attack(body).start().await;
    match run_attack(&mut plugin).await {
        Ok(ToolOutcome::Err { code, message, .. }) => (code, message),
        other => panic!("`{body}` was not a tool error: {other:?}"),
    }
}

/// Enforcement: `node:fs` reads the plugin's own directory — the bytes the host handed over —
/// and nothing else: `..`, absolute paths elsewhere, `file:` URLs of other paths or hosts and
/// encoded slashes are refused, and every write is EROFS. Each attack here would read a host
/// file or write if resolution or the read-only rule were removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_fs_reads_only_the_plugins_own_directory() {
    let mut plugin = attack_with_directory(
        r#"
      const fs = await import("node:fs");
      const { readFile } = await import("node:fs/promises");
      const own = JSON.parse(await readFile(new URL("./settings.json", import.meta.url), "utf8"));
      const tried = {};
      for (const p of ["../../../etc/passwd", "/etc/passwd", "/plugin/../etc/passwd", "data/../../x",
                       "file:///etc/passwd", "file://host.example/plugin/settings.json",
                       "file:///plugin/..%2F..%2Fetc%2Fpasswd", "/workspace/index.mjs", "/proc/self/environ"]) {
        try { fs.readFileSync(p); tried[p] = "read"; } catch (error) { tried[p] = error.code; }
      }
      const writes = {};
      for (const name of ["writeFileSync", "appendFileSync", "mkdirSync", "rmSync", "renameSync", "symlinkSync"]) {
        try { fs[name]("settings.json", "x"); writes[name] = "wrote"; } catch (error) { writes[name] = error.code; }
      }
      return { ok: true, output: {
        own, tried, writes, url: import.meta.url, listed: fs.readdirSync(".").sort(),
        after: fs.readFileSync("settings.json", "utf8"),
      }, truncated: false };
    "#,
        &[
            ("plugin.json", "{}"),
            ("settings.json", r#"{"maxResults":3}"#),
            ("data/words.txt", "alpha"),
        ],
    )
    .start()
    .await;
    let ToolOutcome::Ok { output, .. } = run_attack(&mut plugin).await.unwrap() else {
        panic!("the plugin did not answer");
    };
    assert_eq!(
        output,
        json!({
            "own": {"maxResults": 3},
            "tried": {
                "../../../etc/passwd": "EACCES",
                "/etc/passwd": "EACCES",
                "/plugin/../etc/passwd": "EACCES",
                "data/../../x": "EACCES",
                "file:///etc/passwd": "EACCES",
                "file://host.example/plugin/settings.json": "ERR_INVALID_FILE_URL_HOST",
                "file:///plugin/..%2F..%2Fetc%2Fpasswd": "ERR_INVALID_FILE_URL_PATH",
                "/workspace/index.mjs": "EACCES",
                "/proc/self/environ": "EACCES",
            },
            "writes": {
                "writeFileSync": "EROFS", "appendFileSync": "EROFS", "mkdirSync": "EROFS",
                "rmSync": "EROFS", "renameSync": "EROFS", "symlinkSync": "EROFS",
            },
            "url": "file:///plugin/index.mjs",
            "listed": ["data", "index.mjs", "plugin.json", "settings.json"],
            "after": r#"{"maxResults":3}"#,
        })
    );
}

/// A CommonJS entry whose `module.exports` is an object with `activate` loads as the ES form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commonjs_entry_exporting_an_object_with_activate_loads() {
    let mut source = PluginSource::forge(
        "hostile",
        &["tools:register"],
        "export default function activate() {}",
    );
    source.files = vec![(
        "index.cjs".to_owned(),
        r#"module.exports = { activate(api) {
  api.registerTool({ name: "attack", description: "Answers.", risk: "read",
    inputSchema: api.z.object({}).passthrough(),
    execute: async () => ({ ok: true, output: "from commonjs", truncated: false }) });
} };"#
            .to_owned(),
    )];
    source.request.entry = "index.cjs".to_owned();
    let mut plugin = source.start().await;
    assert_eq!(
        run_attack(&mut plugin).await.unwrap(),
        ok(json!("from commonjs"))
    );
    // The same source as a `.js` entry the host names CommonJS.
    let (_, text) = source.files[0].clone();
    source.files = vec![("index.js".to_owned(), text)];
    source.request.entry = "index.js".to_owned();
    source.request.commonjs = vec!["index.js".to_owned()];
    let mut plugin = source.start().await;
    assert_eq!(
        run_attack(&mut plugin).await.unwrap(),
        ok(json!("from commonjs"))
    );
}
