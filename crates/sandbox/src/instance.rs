//! One plugin instance: a store linked with exactly the capabilities its grants allow, and the
//! call path that runs a tool under a deadline, cancellation, a memory cap and an output bound.
//!
//! Everything the plugin can reach is fixed in [`Loaded::instantiate`], before any plugin code
//! runs: no environment, no arguments, empty stdin, captured stdout/stderr, no sockets or DNS,
//! `/workspace` only with an fs grant, HTTP only through the guard in `http.rs`. A call that
//! fails in any way but a tool error poisons the instance; callers drop it and instantiate a
//! fresh one.

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use wasmtime::Store;

use crate::SandboxInner;
use crate::cache::CacheOutcome;
use crate::chock::{Answer, ChockBound};
use crate::engine::hex;
use crate::error::{CallError, CallErrorKind, SandboxError};
use crate::grants::{CallOptions, Grants};
use crate::host::{BoundedPipe, CallClock};
use crate::js;
use crate::report::{CallOutput, CallReport};
use crate::store::{Interrupt, StoreState, startup_store};
use crate::wit::v1::{Plugin, PluginPre};

/// A linked component of either world.
#[derive(Clone)]
pub(crate) enum Pre {
    /// A native plugin built against WIT v1 (`bosun:plugin/plugin@1.0.0`).
    NativeV1(PluginPre<StoreState>),
    /// The JavaScript engine (`bosun:js/js-plugin`).
    Js(js::bindings::JsPluginPre<StoreState>),
    /// A Chock plugin: a core module, with the tool count its metadata declares.
    Chock(wasmtime::InstancePre<StoreState>, u32),
}

/// An instance's exports, of any kind.
enum Bound {
    NativeV1(Plugin),
    Js(js::bindings::JsPlugin),
    Chock(ChockBound),
}

/// A compiled, linked plugin, ready to instantiate. Cheap to clone.
#[derive(Clone)]
pub struct Loaded {
    pub(crate) sandbox: Arc<SandboxInner>,
    pub(crate) pre: Pre,
    pub(crate) label: Option<String>,
    pub(crate) content_hash: [u8; 32],
    pub(crate) cache: CacheOutcome,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("label", &self.label)
            .field("content_hash", &self.content_hash())
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl Loaded {
    /// Names the plugin in every error from its instances (normally its local name).
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The SHA-256 of the component bytes, in hex.
    pub fn content_hash(&self) -> String {
        hex(&self.content_hash)
    }

    /// Whether loading compiled the component or reused the cached artefact.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.cache
    }

    /// The kept instances of the engine this was loaded into ([`Sandbox::slots`]).
    ///
    /// [`Sandbox::slots`]: crate::Sandbox::slots
    pub fn slots(&self) -> &crate::SlotRegistry {
        &self.sandbox.slots
    }

    /// Creates an instance linked with exactly `grants` and runs the component's start-up code
    /// (under the grant's deadline and memory cap).
    ///
    /// # Errors
    /// [`SandboxError::MemoryGrantTooLarge`] when the grant exceeds the engine's maximum,
    /// [`SandboxError::Preopen`] when the fs grant's directory cannot be opened,
    /// [`SandboxError::PoolFull`] when every instance slot is in use,
    /// [`SandboxError::Instantiate`] when start-up traps or runs past the deadline.
    pub async fn instantiate(&self, grants: Grants) -> Result<Instance, SandboxError> {
        let sandbox = &self.sandbox;
        let max = sandbox.config.engine.max_memory_bytes;
        if grants.memory_bytes > max {
            return Err(SandboxError::MemoryGrantTooLarge {
                plugin: self.label.clone(),
                requested: grants.memory_bytes,
                max,
            });
        }
        // Without a pool, the sandbox counts live instances itself: the same cap, the same
        // error, so a caller that releases idle instances on `PoolFull` works either way.
        let place = if sandbox.config.engine.pooling {
            None
        } else {
            let max_instances = sandbox.config.engine.max_instances;
            Some(
                sandbox
                    .places
                    .take(max_instances)
                    .ok_or_else(|| SandboxError::PoolFull {
                        plugin: self.label.clone(),
                        reason: format!(
                            "all {} places for live instances are taken",
                            max_instances.max(1)
                        ),
                        max_instances,
                    })?,
            )
        };
        let out = &sandbox.config.output;
        let stdout = BoundedPipe::new(out.max_stdio_bytes);
        let stderr = BoundedPipe::new(out.max_stdio_bytes);
        let state = StoreState::new(
            sandbox,
            &grants,
            stdout.clone(),
            stderr.clone(),
            self.label.as_ref(),
        )?;
        // Start-up code runs under the same deadline as a call.
        let mut store = startup_store(sandbox, state, grants.timeout);
        let failed = |reason: String| SandboxError::Instantiate {
            plugin: self.label.clone(),
            reason,
        };
        // The epoch stops start-up code that runs; the timer stops start-up code blocked in
        // the host.
        let hard_stop = grants.timeout + sandbox.config.engine.epoch_tick;
        let instantiated = async {
            match &self.pre {
                Pre::NativeV1(pre) => pre.instantiate_async(&mut store).await.map(Bound::NativeV1),
                Pre::Js(pre) => pre.instantiate_async(&mut store).await.map(Bound::Js),
                Pre::Chock(pre, tools) => match pre.instantiate_async(&mut store).await {
                    Ok(instance) => {
                        ChockBound::new(&instance, &mut store, *tools).map(Bound::Chock)
                    }
                    Err(e) => Err(e),
                },
            }
        };
        let plugin = tokio::time::timeout(hard_stop, instantiated)
            .await
            .map_err(|_| {
                failed(format!(
                    "start-up ran past the {:?} deadline",
                    grants.timeout
                ))
            })?
            .map_err(
                |e| match e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>() {
                    Some(full) => SandboxError::PoolFull {
                        plugin: self.label.clone(),
                        reason: full.to_string(),
                        max_instances: sandbox.config.engine.max_instances,
                    },
                    None => failed(bounded_message(&format!("{e:#}"))),
                },
            )?;
        store.data_mut().host.clock = None;

        Ok(Instance {
            store,
            plugin,
            stdout,
            stderr,
            label: self.label.clone(),
            timeout: grants.timeout,
            tick: sandbox.config.engine.epoch_tick,
            max_output_bytes: out.max_output_bytes,
            poisoned: false,
            _place: place,
        })
    }
}

/// A running plugin. Calls run one at a time (`&mut self`); after any failure other than a
/// tool error the instance is poisoned and refuses further calls.
pub struct Instance {
    store: Store<StoreState>,
    plugin: Bound,
    stdout: BoundedPipe,
    stderr: BoundedPipe,
    label: Option<String>,
    timeout: Duration,
    tick: Duration,
    max_output_bytes: usize,
    poisoned: bool,
    /// Its place among the live instances of an engine without a pool; declared last, so the
    /// store (and its memory) is dropped before the place is given back.
    _place: Option<crate::engine::InstancePlace>,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("label", &self.label)
            .field("timeout", &self.timeout)
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

/// A tool error as either world's bindings return it.
struct GuestError {
    code: String,
    message: String,
    retryable: bool,
}

impl From<crate::wit::v1::exports::bosun::plugin::tools::ToolError> for GuestError {
    fn from(e: crate::wit::v1::exports::bosun::plugin::tools::ToolError) -> Self {
        Self {
            code: e.code,
            message: e.message,
            retryable: e.retryable,
        }
    }
}

impl From<js::bindings::exports::bosun::plugin::tools::ToolError> for GuestError {
    fn from(e: js::bindings::exports::bosun::plugin::tools::ToolError) -> Self {
        Self {
            code: e.code,
            message: e.message,
            retryable: e.retryable,
        }
    }
}

/// Which export a guest call runs.
enum GuestCall<'a> {
    /// `tools.call` (both worlds).
    Tool { tool: &'a str, input: &'a str },
    /// `engine.activate` (the JavaScript engine).
    Activate {
        files: &'a [(String, String)],
        request: &'a str,
    },
    /// `engine.hook` (the JavaScript engine).
    Hook { op: &'a str, payload: &'a str },
    /// `chock_plugin_call` (a Chock plugin).
    Chock { index: u32, args: &'a [u8] },
}

/// Runs one export on `bound`.
async fn run_export(
    bound: &mut Bound,
    store: &mut Store<StoreState>,
    call: GuestCall<'_>,
) -> wasmtime::Result<Result<String, GuestError>> {
    use js::bindings::exports::bosun::js::engine::SourceFile;
    Ok(match (bound, call) {
        (Bound::NativeV1(p), GuestCall::Tool { tool, input }) => p
            .bosun_plugin_tools()
            .call_call(store, tool, input)
            .await?
            .map_err(GuestError::from),
        (Bound::Js(p), GuestCall::Tool { tool, input }) => p
            .bosun_plugin_tools()
            .call_call(store, tool, input)
            .await?
            .map_err(GuestError::from),
        (Bound::Js(p), GuestCall::Activate { files, request }) => {
            let files: Vec<SourceFile> = files
                .iter()
                .map(|(path, text)| SourceFile {
                    path: path.clone(),
                    text: text.clone(),
                })
                .collect();
            p.bosun_js_engine()
                .call_activate(store, &files, request)
                .await?
                .map_err(GuestError::from)
        }
        (Bound::Js(p), GuestCall::Hook { op, payload }) => p
            .bosun_js_engine()
            .call_hook(store, op, payload)
            .await?
            .map_err(GuestError::from),
        (Bound::Chock(p), GuestCall::Chock { index, args }) => {
            match p.run(store, index, args).await? {
                Answer::Success(text) => Ok(text),
                Answer::Failure(text) => Err(GuestError {
                    code: "plugin_error".into(),
                    message: text,
                    retryable: false,
                }),
            }
        }
        (
            Bound::NativeV1(_) | Bound::Chock(_),
            GuestCall::Activate { .. } | GuestCall::Hook { .. },
        )
        | (Bound::NativeV1(_) | Bound::Js(_), GuestCall::Chock { .. })
        | (Bound::Chock(_), GuestCall::Tool { .. }) => Err(GuestError {
            code: "plugin_error".into(),
            message: "the plugin has no export for this kind of call".into(),
            retryable: false,
        }),
    })
}

/// How the guest call ended, before classification.
enum Ended {
    Returned(wasmtime::Result<Result<String, GuestError>>),
    Cancelled,
    TimedOut,
}

impl Instance {
    /// Whether an earlier call failed in a way that leaves this instance unusable.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Runs `tool` with `input_json` (already validated against the tool's schema).
    ///
    /// The call stops at the grant's deadline (within one epoch tick, also while the guest
    /// waits on I/O) or when `opts.cancel` fires.
    ///
    /// # Errors
    /// A [`CallError`] whose kind is the plugin's own tool error (the instance stays usable)
    /// or a trap, timeout, cancellation, memory or output limit (the instance is poisoned).
    pub async fn call(
        &mut self,
        tool: &str,
        input_json: &str,
        opts: CallOptions,
    ) -> Result<CallOutput, CallError> {
        self.run(
            GuestCall::Tool {
                tool,
                input: input_json,
            },
            opts,
        )
        .await
    }

    /// Chock plugins only: runs tool `index` (its position in the module's metadata) with
    /// Chock's argument record `args` (ABI 2) or the raw argument text (ABI 1). The answer's
    /// text is returned in [`CallOutput::output_json`] as it is (it is text, not JSON); a
    /// failure answer is a tool error with code `plugin_error`.
    ///
    /// # Errors
    /// As [`Instance::call`]; an answer outside the plugin's memory, an unknown outcome or an
    /// init that binds a different number of tools than the metadata declares is a trap.
    pub async fn call_chock(
        &mut self,
        index: u32,
        args: &[u8],
        opts: CallOptions,
    ) -> Result<CallOutput, CallError> {
        self.run(GuestCall::Chock { index, args }, opts).await
    }

    /// Bytes of linear memory the instance has grown to, counted by its memory limiter (every
    /// memory of every core instance in the component). Memory only grows: this is the
    /// instance's high-water mark, which the grant's `memory_bytes` caps.
    pub fn memory_bytes(&self) -> usize {
        self.store.data().limiter_used()
    }

    /// Whether this is a JavaScript engine instance.
    pub fn is_js(&self) -> bool {
        matches!(self.plugin, Bound::Js(_))
    }

    /// JavaScript engine only: hands the plugin's files (path, JavaScript source) to the engine
    /// and activates the plugin; returns the descriptor JSON (see `crates/js/engine/js/README.md`).
    ///
    /// # Errors
    /// As [`Instance::call`]; a native instance answers `plugin_error`.
    pub async fn activate(
        &mut self,
        files: &[(String, String)],
        request_json: &str,
        opts: CallOptions,
    ) -> Result<CallOutput, CallError> {
        self.run(
            GuestCall::Activate {
                files,
                request: request_json,
            },
            opts,
        )
        .await
    }

    /// JavaScript engine only: runs the plugin's hooks of kind `op` with a JSON payload.
    ///
    /// # Errors
    /// As [`Instance::call`].
    pub async fn hook(
        &mut self,
        op: &str,
        payload_json: &str,
        opts: CallOptions,
    ) -> Result<CallOutput, CallError> {
        self.run(
            GuestCall::Hook {
                op,
                payload: payload_json,
            },
            opts,
        )
        .await
    }

    async fn run(
        &mut self,
        guest_call: GuestCall<'_>,
        opts: CallOptions,
    ) -> Result<CallOutput, CallError> {
        if self.poisoned {
            return Err(self.error(CallErrorKind::Poisoned, CallReport::default()));
        }
        let deadline = Instant::now() + self.timeout;
        {
            let state = self.store.data_mut();
            state.interrupted = None;
            state.host.logs.clear();
            state.host.dropped_logs = 0;
            state.host.clock = Some(CallClock {
                deadline,
                cancel: opts.cancel.clone(),
            });
            state.guard.net = Arc::new(opts.net);
            state.js.session = opts.session;
            state.js.processes.begin(opts.processes);
            state
                .guard
                .refusals
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        }
        let _ = self.stdout.take();
        let _ = self.stderr.take();
        self.store.set_epoch_deadline(1);

        // The epoch callback stops running guest code; these two arms stop a guest that is
        // blocked in the host (waiting on HTTP, a pollable or a sleep).
        let hard_stop = tokio::time::Instant::from_std(deadline) + self.tick;
        let ended = tokio::select! {
            biased;
            () = opts.cancel.cancelled() => Ended::Cancelled,
            () = tokio::time::sleep_until(hard_stop) => Ended::TimedOut,
            result = run_export(&mut self.plugin, &mut self.store, guest_call) => Ended::Returned(result),
        };
        // Whether the call's time or its caller had ended when the guest returned: a guest that
        // saw it (through `is-cancelled`, as the JavaScript engine's interrupt handler does)
        // reports `cancelled`, a code only the host may give, and the host names what it
        // observed instead; a guest saying `cancelled` when neither happened stays its own
        // error (and becomes `plugin_error` at the chokepoint).
        let interrupted = if opts.cancel.is_cancelled() {
            Some(CallErrorKind::Cancelled)
        } else if Instant::now() >= deadline {
            Some(self.timed_out())
        } else {
            None
        };
        self.store.data_mut().host.clock = None;
        self.store.data_mut().js.session = None;
        // Whatever the plugin started in this call ends with it.
        self.store.data_mut().js.processes.end();

        let report = self.take_report();
        let kind = match ended {
            Ended::Cancelled => CallErrorKind::Cancelled,
            Ended::TimedOut => self.timed_out(),
            Ended::Returned(Ok(Ok(output))) => {
                // wasmtime has already copied the string out of the guest (at most the guest's
                // memory cap); a borrowed view would outlive the guest's post-return, which
                // frees it. Refusing here keeps the oversized text away from the caller.
                if output.len() > self.max_output_bytes {
                    CallErrorKind::OutputTooLarge {
                        actual_bytes: output.len(),
                        limit_bytes: self.max_output_bytes,
                    }
                } else {
                    return Ok(CallOutput {
                        output_json: output,
                        report,
                    });
                }
            }
            Ended::Returned(Ok(Err(e))) if e.code == "cancelled" && interrupted.is_some() => {
                // The guest got out by itself: its instance is whole and is kept.
                return Err(CallError {
                    kind: interrupted.unwrap_or(CallErrorKind::Cancelled),
                    plugin: self.label.clone(),
                    report,
                });
            }
            Ended::Returned(Ok(Err(e))) => {
                let size = e.code.len().saturating_add(e.message.len());
                if size > self.max_output_bytes {
                    CallErrorKind::OutputTooLarge {
                        actual_bytes: size,
                        limit_bytes: self.max_output_bytes,
                    }
                } else {
                    CallErrorKind::Tool {
                        code: stable_code(e.code),
                        message: e.message,
                        retryable: e.retryable,
                    }
                }
            }
            Ended::Returned(Err(e)) => self.classify_failure(&e),
        };
        Err(self.error(kind, report))
    }

    fn timed_out(&self) -> CallErrorKind {
        CallErrorKind::TimedOut {
            timeout_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// Names what stopped the guest: our own interrupt, the memory cap, or a crash.
    fn classify_failure(&self, error: &wasmtime::Error) -> CallErrorKind {
        let state = self.store.data();
        match state.interrupted {
            Some(Interrupt::Cancelled) => return CallErrorKind::Cancelled,
            Some(Interrupt::TimedOut) => return self.timed_out(),
            None => {}
        }
        if state.limiter.exceeded {
            return CallErrorKind::MemoryExceeded {
                limit_bytes: state.limiter.limit(),
            };
        }
        // A trap's own text names the fault; the wasm backtrace is for the plugin's author.
        tracing::debug!(plugin = ?self.label, "plugin call failed: {error:?}");
        let message = match error.downcast_ref::<wasmtime::Trap>() {
            Some(trap) => trap.to_string(),
            None => format!("{error:#}"),
        };
        CallErrorKind::Trap {
            message: bounded_message(&message),
        }
    }

    fn error(&mut self, kind: CallErrorKind, report: CallReport) -> CallError {
        if kind.poisons_instance() {
            self.poisoned = true;
        }
        CallError {
            kind,
            plugin: self.label.clone(),
            report,
        }
    }

    fn take_report(&mut self) -> CallReport {
        let (stdout, dropped_out) = self.stdout.take();
        let (stderr, dropped_err) = self.stderr.take();
        let state = self.store.data_mut();
        let refused_requests = std::mem::take(
            &mut *state
                .guard
                .refusals
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        CallReport {
            logs: std::mem::take(&mut state.host.logs),
            dropped_logs: std::mem::take(&mut state.host.dropped_logs),
            stdout,
            stderr,
            dropped_stdio_bytes: dropped_out.saturating_add(dropped_err),
            refused_requests,
        }
    }
}

/// A plugin's error code if it is shaped like Bosun's stable codes, else `plugin_error`.
fn stable_code(code: String) -> String {
    let well_formed = !code.is_empty()
        && code.len() <= 64
        && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    if well_formed {
        code
    } else {
        "plugin_error".to_owned()
    }
}

/// Cuts wasmtime's messages (which can include long backtraces) to a readable size.
fn bounded_message(message: &str) -> String {
    const MAX: usize = 2048;
    if message.len() <= MAX {
        return message.to_owned();
    }
    let mut end = MAX;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}
