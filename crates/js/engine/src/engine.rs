//! The interpreter's life: [`init`] (run once by pre-initialisation), [`activate`], [`call`] and
//! [`hook`], and the event loop that settles the promise each of them returns.
//!
//! The event loop drives QuickJS's job queue and the layer's timers; nothing else can make
//! progress inside the engine (host calls are synchronous), so a promise that is still pending
//! with no job and no timer left can never settle and fails at once instead of waiting for the
//! deadline. A cancelled call stops the loop at its next turn; QuickJS's interrupt handler asks
//! the host the same question while JavaScript runs, so a busy loop ends with an exception rather
//! than a killed instance. The host's epoch deadline remains the backstop.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use bosun_sdk::host;
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Module, Object, Persistent, Promise,
    Runtime, promise::PromiseState,
};

use crate::{loader, native};

/// QuickJS's own heap bound, below the sandbox's memory cap so that most exhaustion is a
/// catchable `out of memory` exception rather than a trap.
const HEAP_LIMIT_BYTES: usize = 192 << 20;
/// QuickJS's stack bound. On WASI quickjs-ng ignores it (it sets no stack limit when built for
/// `__wasi__`), so deep recursion is not a `RangeError` here: it exhausts the wasm call stack,
/// which the sandbox reports as a trap and which poisons the instance. Kept for the day QuickJS
/// honours it.
const STACK_LIMIT_BYTES: usize = 512 << 10;
/// The longest the loop sleeps before looking at cancellation again.
const MAX_SLEEP: Duration = Duration::from_millis(20);
/// Error messages are cut to this many bytes.
const MAX_MESSAGE_BYTES: usize = 4096;

/// Why an export failed: a stable tool-error code and a message.
#[derive(Debug)]
pub struct Failure {
    /// One of Bosun's stable codes.
    pub code: &'static str,
    /// What happened.
    pub message: String,
}

impl Failure {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: bounded(message.into()),
        }
    }
}

struct Engine {
    /// Owns the interpreter (its heap limit and interrupt handler); held for the instance's life.
    _runtime: Runtime,
    context: Context,
    /// `__engine` as the layer defined it.
    api: Persistent<Object<'static>>,
    /// Set by `activate`; tools and hooks need it.
    activated: bool,
    /// The plugin's config table as JSON (`__native.configAll`).
    config: String,
}

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
}

/// Builds the runtime and evaluates the layer and zod. Idempotent: an instance that was not
/// pre-initialised runs it on first use.
pub fn init() {
    let ready = ENGINE.with(|e| e.borrow().is_some());
    if ready {
        return;
    }
    match build() {
        Ok(engine) => ENGINE.with(|e| *e.borrow_mut() = Some(engine)),
        // There is no caller to report to during pre-initialisation; the first export call
        // builds again and reports the error to the host.
        Err(failure) => host::log(host::LogLevel::Error, &failure.message),
    }
}

fn build() -> Result<Engine, Failure> {
    let runtime = Runtime::new().map_err(|e| Failure::new("plugin_error", e.to_string()))?;
    runtime.set_memory_limit(HEAP_LIMIT_BYTES);
    runtime.set_max_stack_size(STACK_LIMIT_BYTES);
    runtime.set_loader(loader::PluginResolver, loader::PluginLoader);
    let context =
        Context::full(&runtime).map_err(|e| Failure::new("plugin_error", e.to_string()))?;
    let api = context.with(|ctx| -> Result<Persistent<Object<'static>>, Failure> {
        native::install(&ctx).map_err(|e| js_failure(&ctx, e, "installing host functions"))?;
        for (file, bytecode) in loader::PRELUDE {
            loader::run_script(&ctx, bytecode)
                .catch(&ctx)
                .map_err(|e| caught(&format!("evaluating {file}"), e))?;
        }
        let promise = Module::import(&ctx, "bosun:runtime")
            .catch(&ctx)
            .map_err(|e| caught("loading the runtime", e))?;
        settle_with(&ctx, &promise, None)
            .map_err(|f| Failure::new(f.code, format!("evaluating the runtime: {}", f.message)))?;
        let globals = ctx.globals();
        let api: Object = globals
            .get("__engine")
            .map_err(|_| Failure::new("plugin_error", "the runtime did not define __engine"))?;
        let _ = globals.remove("__engine");
        Ok(Persistent::save(&ctx, api))
    })?;
    // Only from here on may a running script be interrupted: pre-initialisation has no call.
    runtime.set_interrupt_handler(Some(Box::new(host::is_cancelled)));
    Ok(Engine {
        _runtime: runtime,
        context,
        api,
        activated: false,
        config: "{}".to_owned(),
    })
}

/// The plugin's config table as JSON.
pub fn plugin_config() -> String {
    ENGINE.with(|e| {
        e.try_borrow()
            .ok()
            .and_then(|e| e.as_ref().map(|e| e.config.clone()))
            .unwrap_or_else(|| "{}".to_owned())
    })
}

/// Loads the plugin's files and runs the layer's `activate`.
pub fn activate(files: BTreeMap<String, String>, request: &str) -> Result<String, Failure> {
    init();
    let parsed = serde_json::from_str::<serde_json::Value>(request).ok();
    let config = parsed
        .as_ref()
        .and_then(|r| r.get("config").map(ToString::to_string))
        .unwrap_or_else(|| "{}".to_owned());
    // The `.js` files the host found to be CommonJS (Node's rule: package.json `type`, else
    // the file's own syntax); `.cjs` files are CommonJS by name.
    let commonjs = parsed
        .as_ref()
        .and_then(|r| r.get("commonjs"))
        .and_then(serde_json::Value::as_array)
        .map(|files| {
            files
                .iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    with_engine(|engine| {
        if engine.activated {
            return Err(Failure::new(
                "plugin_error",
                "this engine instance already runs a plugin; instantiate a new one",
            ));
        }
        engine.config = config;
        Ok(())
    })?;
    loader::set_files(files, commonjs);
    let descriptor = invoke("activate", &[request])?;
    with_engine(|engine| {
        engine.activated = true;
        Ok(())
    })?;
    Ok(descriptor)
}

/// Runs a tool through the layer's `call`.
pub fn call(tool: &str, input: &str) -> Result<String, Failure> {
    require_activated()?;
    invoke("call", &[tool, input])
}

/// Runs hooks through the layer's `hook`.
pub fn hook(op: &str, payload: &str) -> Result<String, Failure> {
    require_activated()?;
    invoke("hook", &[op, payload])
}

fn require_activated() -> Result<(), Failure> {
    with_engine(|engine| {
        if engine.activated {
            Ok(())
        } else {
            Err(Failure::new(
                "plugin_error",
                "the plugin has not been activated",
            ))
        }
    })
}

fn with_engine<T>(f: impl FnOnce(&mut Engine) -> Result<T, Failure>) -> Result<T, Failure> {
    ENGINE.with(|cell| {
        let mut guard = cell
            .try_borrow_mut()
            .map_err(|_| Failure::new("plugin_error", "the engine is busy"))?;
        match guard.as_mut() {
            Some(engine) => f(engine),
            None => {
                let engine = build()?;
                let engine = guard.insert(engine);
                f(engine)
            }
        }
    })
}

/// Calls `__engine[name](...args)` and settles the promise it returns to a string.
fn invoke(name: &str, args: &[&str]) -> Result<String, Failure> {
    let (context, api) = with_engine(|engine| Ok((engine.context.clone(), engine.api.clone())))?;
    // No forced collection after the call: a full cycle collection walks the whole heap (zod
    // included) and cost about a millisecond per call, ten times the rest of a warm call.
    // QuickJS frees by reference count at once and runs its cycle collector when allocation
    // crosses its threshold; the instance's linear memory never shrinks either way.
    context.with(|ctx| -> Result<String, Failure> {
        let api = api
            .restore(&ctx)
            .map_err(|e| js_failure(&ctx, e, "restoring the engine"))?;
        let function: Function = api
            .get(name)
            .map_err(|e| js_failure(&ctx, e, "looking up the engine function"))?;
        let promise: Promise = match args {
            [a] => function.call((*a,)),
            [a, b] => function.call((*a, *b)),
            _ => return Err(Failure::new("plugin_error", "internal: wrong arity")),
        }
        .catch(&ctx)
        .map_err(|e| caught(name, e))?;
        settle_with(&ctx, &promise, Some(&api))
    })
}

/// The event loop: jobs, then timers, until `promise` settles.
fn settle_with<'js>(
    ctx: &Ctx<'js>,
    promise: &Promise<'js>,
    api: Option<&Object<'js>>,
) -> Result<String, Failure> {
    loop {
        while ctx.execute_pending_job() {}
        match promise.state() {
            PromiseState::Resolved => {
                return promise
                    .result::<rquickjs::Value>()
                    .unwrap_or(Err(rquickjs::Error::Unknown))
                    .catch(ctx)
                    .map_err(|e| caught("reading the result", e))
                    .map(|value| {
                        value
                            .as_string()
                            .and_then(|s| s.to_string().ok())
                            .unwrap_or_default()
                    });
            }
            PromiseState::Rejected => {
                let error = promise
                    .result::<rquickjs::Value>()
                    .unwrap_or(Err(rquickjs::Error::Unknown))
                    .catch(ctx)
                    .err();
                return Err(match error {
                    Some(e) => caught("the promise was rejected", e),
                    None => Failure::new("plugin_error", "the promise was rejected"),
                });
            }
            PromiseState::Pending => {}
        }
        if host::is_cancelled() {
            return Err(Failure::new(
                "cancelled",
                "the call was cancelled or ran past its deadline",
            ));
        }
        let next: Option<f64> = match api {
            Some(api) => {
                let next_timer: Function = api
                    .get("nextTimer")
                    .map_err(|e| js_failure(ctx, e, "looking up nextTimer"))?;
                next_timer
                    .call::<_, Option<f64>>(())
                    .catch(ctx)
                    .map_err(|e| caught("nextTimer", e))?
            }
            None => None,
        };
        let io_pending = match api {
            Some(api) => {
                let pending: Function = api
                    .get("ioPending")
                    .map_err(|e| js_failure(ctx, e, "looking up ioPending"))?;
                pending
                    .call::<_, bool>(())
                    .catch(ctx)
                    .map_err(|e| caught("ioPending", e))?
            }
            None => false,
        };
        let Some(api) = api.filter(|_| next.is_some() || io_pending) else {
            return Err(Failure::new(
                "plugin_error",
                "the plugin's promise can never settle: nothing is left to run (no pending job, timer, request or process)",
            ));
        };
        let wait_ms = next.unwrap_or(f64::INFINITY);
        if io_pending {
            // A running process: wait on its output (the host waits at most 100 ms) instead
            // of sleeping, so its events are handled as soon as they come.
            let poll_io: Function = api
                .get("pollIo")
                .map_err(|e| js_failure(ctx, e, "looking up pollIo"))?;
            let wait = wait_ms.min(MAX_SLEEP.as_secs_f64() * 1000.0 * 5.0);
            poll_io
                .call::<_, ()>((wait,))
                .catch(ctx)
                .map_err(|e| caught("a process event handler", e))?;
            while ctx.execute_pending_job() {}
        } else if wait_ms > 0.0 {
            let wait = Duration::from_secs_f64(wait_ms / 1000.0).min(MAX_SLEEP);
            std::thread::sleep(wait);
        }
        let run_timers: Function = api
            .get("runTimers")
            .map_err(|e| js_failure(ctx, e, "looking up runTimers"))?;
        run_timers
            .call::<_, ()>(())
            .catch(ctx)
            .map_err(|e| caught("a timer callback", e))?;
    }
}

fn js_failure(ctx: &Ctx<'_>, error: rquickjs::Error, doing: &str) -> Failure {
    let caught = CaughtError::from_error(ctx, error);
    self::caught(doing, caught)
}

fn caught(doing: &str, error: CaughtError<'_>) -> Failure {
    let text = match &error {
        CaughtError::Exception(exception) => {
            let message = exception.message().unwrap_or_default();
            if message.contains("interrupted") && host::is_cancelled() {
                return Failure::new(
                    "cancelled",
                    "the call was cancelled or ran past its deadline",
                );
            }
            if message.contains("out of memory") {
                // A memory bound, as the sandbox reports its own memory cap.
                return Failure::new(
                    "limit_reached",
                    format!("{doing}: the plugin ran out of memory"),
                );
            }
            match exception.stack() {
                Some(stack) if !stack.is_empty() => format!("{message}\n{stack}"),
                _ => message,
            }
        }
        CaughtError::Value(value) => format!("a non-Error value was thrown: {value:?}"),
        CaughtError::Error(e) => e.to_string(),
    };
    Failure::new("plugin_error", format!("{doing}: {text}"))
}

fn bounded(mut text: String) -> String {
    if text.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}
