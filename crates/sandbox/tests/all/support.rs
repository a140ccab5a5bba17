//! Shared test helpers: sandboxes with a private cache, and a hand-written guest component.
//!
//! `wat_plugin()` is a real component built from a core module written in WAT and the v1 WIT
//! world (with `wit-component`, as wit-bindgen does): it needs no guest toolchain, so the
//! engine-level hostile behaviours (spinning, memory bombs, recursion, huge output, log floods)
//! are tested byte-for-byte as written here.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bosun_sandbox::{
    CallOptions, EngineLimits, Grants, Instance, Resolver, Sandbox, SandboxConfig,
};

/// A sandbox with its own cache directory and a small pool.
pub fn sandbox_with(cache: &tempfile::TempDir, resolver: Option<Arc<dyn Resolver>>) -> Sandbox {
    let mut config = SandboxConfig {
        cache_dir: Some(cache.path().join("cache")),
        engine: EngineLimits {
            max_instances: 16,
            ..EngineLimits::default()
        },
        ..SandboxConfig::default()
    };
    if let Some(resolver) = resolver {
        config.resolver = resolver;
    }
    Sandbox::new(config).unwrap()
}

/// One sandbox shared by tests that do not care about the cache or resolver.
pub fn shared_sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<(tempfile::TempDir, Sandbox)> = OnceLock::new();
    &SANDBOX
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let sandbox = sandbox_with(&dir, None);
            (dir, sandbox)
        })
        .1
}

/// Within this a stopped call has ended, however loaded the machine: far past the short
/// deadlines and cancellations the tests set (a call stops within one epoch tick of them), and
/// well short of the default 30 s deadline a call that was never stopped would run into. How
/// close to its deadline a call stops is not asserted: on a loaded machine the test's own
/// thread can wait longer than a tick for a core.
pub const STOPPED_BY_NOW: Duration = Duration::from_secs(10);

/// Grants with a short deadline, for tests that expect to be stopped.
pub fn short_grants(timeout: Duration) -> Grants {
    Grants {
        timeout,
        ..Grants::default()
    }
}

/// Instantiates the WAT plugin in the shared sandbox.
pub async fn wat_instance(grants: Grants) -> Instance {
    shared_sandbox()
        .load(wat_plugin())
        .unwrap()
        .with_label("wat")
        .instantiate(grants)
        .await
        .unwrap()
}

/// Calls a tool with default options.
pub async fn call(
    instance: &mut Instance,
    tool: &str,
    input: &str,
) -> Result<bosun_sandbox::CallOutput, bosun_sandbox::CallError> {
    instance.call(tool, input, CallOptions::default()).await
}

/// The WAT plugin's component bytes. Its tools, chosen by the tool name's first letter:
/// `echo` returns its input; `spin` loops forever; `grow` grows memory without end; `deep`
/// recurses without end; `huge` returns 100 MB; `fail` returns an `invalid_input` tool error;
/// `chatty` logs 5,000 lines of 5,000 bytes; `wait` loops until `is-cancelled`; `config`
/// returns the config value for key `greeting`.
pub fn wat_plugin() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(build_wat_plugin)
}

const WAT: &str = r#"
(module
  (import "bosun:plugin/host@1.0.0" "log" (func $log (param i32 i32 i32)))
  (import "bosun:plugin/host@1.0.0" "is-cancelled" (func $is_cancelled (result i32)))
  (import "bosun:plugin/host@1.0.0" "config" (func $config (param i32 i32 i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))
  (data (i32.const 256) "invalid_input")
  (data (i32.const 320) "unknown tool")
  (data (i32.const 384) "{}")
  (data (i32.const 400) "greeting")
  (data (i32.const 416) "null")

  (func $alloc (param $align i32) (param $size i32) (result i32)
    (local $ptr i32) (local $need i32)
    (local.set $ptr
      (i32.and
        (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
        (i32.xor (i32.sub (local.get $align) (i32.const 1)) (i32.const -1))))
    (global.set $heap (i32.add (local.get $ptr) (local.get $size)))
    (local.set $need (i32.sub (global.get $heap) (i32.mul (memory.size) (i32.const 65536))))
    (if (i32.gt_s (local.get $need) (i32.const 0))
      (then
        (if (i32.eq
              (memory.grow (i32.div_u (i32.add (local.get $need) (i32.const 65535)) (i32.const 65536)))
              (i32.const -1))
          (then unreachable))))
    (local.get $ptr))

  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (call $alloc (local.get 2) (local.get 3)))

  (func $ok (param $ptr i32) (param $len i32) (result i32)
    (i32.store8 (i32.const 16) (i32.const 0))
    (i32.store (i32.const 20) (local.get $ptr))
    (i32.store (i32.const 24) (local.get $len))
    (i32.const 16))

  (func $err (param $cp i32) (param $cl i32) (param $mp i32) (param $ml i32) (result i32)
    (i32.store8 (i32.const 16) (i32.const 1))
    (i32.store (i32.const 20) (local.get $cp))
    (i32.store (i32.const 24) (local.get $cl))
    (i32.store (i32.const 28) (local.get $mp))
    (i32.store (i32.const 32) (local.get $ml))
    (i32.store8 (i32.const 36) (i32.const 0))
    (i32.const 16))

  (func $recurse (param i32) (result i32)
    (i32.add (call $recurse (i32.add (local.get 0) (i32.const 1))) (i32.const 1)))

  (func (export "bosun:plugin/tools@1.0.0#call")
    (param $tp i32) (param $tl i32) (param $ip i32) (param $il i32) (result i32)
    (local $c i32) (local $i i32) (local $p i32)
    (local.set $c (i32.load8_u (local.get $tp)))
    ;; echo
    (if (i32.eq (local.get $c) (i32.const 0x65))
      (then (return (call $ok (local.get $ip) (local.get $il)))))
    ;; spin
    (if (i32.eq (local.get $c) (i32.const 0x73))
      (then (loop $l (br $l))))
    ;; grow
    (if (i32.eq (local.get $c) (i32.const 0x67))
      (then (loop $l (drop (memory.grow (i32.const 64))) (br $l))))
    ;; deep
    (if (i32.eq (local.get $c) (i32.const 0x64))
      (then (drop (call $recurse (i32.const 0))) (unreachable)))
    ;; huge: 100 MB of zero bytes (valid UTF-8)
    (if (i32.eq (local.get $c) (i32.const 0x68))
      (then
        (local.set $p (call $alloc (i32.const 1) (i32.const 104857600)))
        (return (call $ok (local.get $p) (i32.const 104857600)))))
    ;; fail
    (if (i32.eq (local.get $c) (i32.const 0x66))
      (then (return (call $err (i32.const 256) (i32.const 13) (i32.const 320) (i32.const 12)))))
    ;; chatty
    (if (i32.eq (local.get $c) (i32.const 0x63))
      (then
        (if (i32.eq (i32.load8_u offset=1 (local.get $tp)) (i32.const 0x6f))
          (then
            ;; config: option<string> written at 48: [tag u8][ptr][len]
            (call $config (i32.const 400) (i32.const 8) (i32.const 48))
            (if (i32.eqz (i32.load8_u (i32.const 48)))
              (then (return (call $ok (i32.const 416) (i32.const 4)))))
            (return (call $ok (i32.load (i32.const 52)) (i32.load (i32.const 56))))))
        (local.set $p (call $alloc (i32.const 1) (i32.const 5000)))
        (memory.fill (local.get $p) (i32.const 0x61) (i32.const 5000))
        (local.set $i (i32.const 0))
        (loop $l
          (call $log (i32.const 2) (local.get $p) (i32.const 5000))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $l (i32.lt_u (local.get $i) (i32.const 5000))))
        (return (call $ok (i32.const 384) (i32.const 2)))))
    ;; wait
    (if (i32.eq (local.get $c) (i32.const 0x77))
      (then
        (loop $l (br_if $l (i32.eqz (call $is_cancelled))))
        (return (call $ok (i32.const 384) (i32.const 2)))))
    (call $err (i32.const 256) (i32.const 13) (i32.const 320) (i32.const 12)))

  (func (export "cabi_post_bosun:plugin/tools@1.0.0#call") (param i32))
)
"#;

fn build_wat_plugin() -> Vec<u8> {
    let mut module = wat::parse_str(WAT).unwrap();
    let mut resolve = wit_parser::Resolve::default();
    let wit = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk/wit/v1");
    let (package, _) = resolve.push_dir(wit).unwrap();
    let world = resolve.select_world(&[package], Some("plugin")).unwrap();
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap();
    wit_component::ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap()
}

/// Loads one of the guest components built by `bosun-test-programs` into the shared sandbox.
pub fn guest(path: &str) -> bosun_sandbox::Loaded {
    let bytes = std::fs::read(path).unwrap();
    let label = std::path::Path::new(path)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    shared_sandbox().load(&bytes).unwrap().with_label(label)
}

/// Instantiates a guest component with `grants`.
pub async fn guest_instance(path: &str, grants: Grants) -> Instance {
    guest(path).instantiate(grants).await.unwrap()
}

/// Calls a tool and parses its JSON output.
pub async fn call_json(
    instance: &mut Instance,
    tool: &str,
    input: serde_json::Value,
) -> serde_json::Value {
    let out = call(instance, tool, &input.to_string()).await.unwrap();
    serde_json::from_str(&out.output_json).unwrap()
}
