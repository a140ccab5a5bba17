//! The JavaScript engine component (`bosun:js/js-plugin@1.0.0`, see `crates/js/wit`): loading it
//! pre-initialised, and the host side of its `runtime` imports.
//!
//! The engine is QuickJS built for `wasm32-wasip2`. Before its first use the sandbox runs the
//! engine's `component-init` export (which evaluates the JavaScript layer and zod) and snapshots
//! the instance's memory with wizer; the snapshot is compiled and cached like any component, so
//! every later instance starts with zod already evaluated. The snapshot is keyed by the engine's
//! own SHA-256: a new engine build is pre-initialised again.
//!
//! The `runtime` imports reach only what the instance and the current call were granted:
//! - the session's taint through the call's [`JsSession`] (none: `PUBLIC`, and escalation fails);
//! - host facts only when the instance's [`JsGrants::host_info`] is set;
//! - `Intl` computations (`bosun-intl`): pure functions of their input, the host's time zone
//!   and the locale data compiled in;
//! - DNS only for a host the current call's [`NetGrant`](crate::NetGrant) names, and only with
//!   the HTTP grant, so a plugin cannot use names as a side channel to reach anyone else.

use wasmtime::component::{
    Component, ComponentExportIndex, Instance as WasmInstance, Lift, WasmList,
};
use wasmtime::{Store, StoreContextMut};

use crate::store::StoreState;

/// Host bindings for `bosun:js@1.0.0`; `bosun:plugin/host` is shared with the native world.
pub(crate) mod bindings {
    #![allow(missing_docs)]
    wasmtime::component::bindgen!({
        path: "../js/wit",
        world: "bosun:js/js-plugin",
        imports: {
            "bosun:js/runtime.lookup": async,
            "bosun:js/runtime.spawn": async,
            "bosun:js/runtime.process-write": async,
            "bosun:js/runtime.process-poll": async,
        },
        exports: { default: async },
        with: { "bosun:plugin/host": crate::wit::v1::bosun::plugin::host },
    });
}

use bindings::bosun::js::runtime;

/// Why a plugin's `escalateTaint` was refused; the plugin sees the message.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
enum EscalateRefusal {
    /// The label is not one of Bosun's four classifications.
    #[error("unknown classification \"{0}\"")]
    UnknownLabel(String),
    /// The call has no session.
    #[error("this call runs outside a session; there is no taint to raise")]
    OutsideSession,
}

impl StoreState {
    /// Reads the plugin's label (once, here) and raises the call's session to it.
    fn escalate(&self, level: &str) -> Result<(), EscalateRefusal> {
        let session = self
            .js
            .session
            .as_ref()
            .ok_or(EscalateRefusal::OutsideSession)?;
        let level: bosun_core::Classification = level
            .parse()
            .map_err(|e: bosun_core::ClassificationError| EscalateRefusal::UnknownLabel(e.0))?;
        session.escalate(level);
        Ok(())
    }
}

impl runtime::Host for StoreState {
    fn session_taint(&mut self) -> String {
        self.js
            .session
            .as_ref()
            .map_or(bosun_core::Classification::Public, |s| s.taint())
            .to_string()
    }

    fn escalate_taint(&mut self, level: String) -> Result<(), String> {
        self.escalate(&level).map_err(|e| e.to_string())
    }

    fn host_info(&mut self, key: String) -> Option<String> {
        if !self.js.grants.host_info {
            return None;
        }
        match key.as_str() {
            "hostname" => hostname(),
            "memory-usage" | "memoryUsage" => {
                let used = self.limiter_used();
                Some(format!(
                    r#"{{"rss":{used},"heapTotal":{used},"heapUsed":{used},"external":0}}"#
                ))
            }
            "build" => Some(format!(
                r#"{{"target":"{}-unknown-{}","arch":"{}","os":"{}","vendor":"unknown"}}"#,
                std::env::consts::ARCH,
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::env::consts::OS
            )),
            // Deno's fields, each saying what really runs the plugin: Bosun's QuickJS-ng engine
            // in wasmtime, TypeScript with its types erased (not checked) by oxc.
            "version" => Some(format!(
                r#"{{"deno":"bosun-{v} (QuickJS-ng in wasmtime, not Deno)","v8":"none (QuickJS-ng)","typescript":"types erased by oxc, not checked","bosun":"{v}","engine":"quickjs-ng"}}"#,
                v = env!("CARGO_PKG_VERSION")
            )),
            _ => None,
        }
    }

    fn intl(&mut self, op: String, request: String) -> Result<String, String> {
        bosun_intl::call(&op, &request).map_err(|e| e.to_string())
    }

    async fn spawn(&mut self, request: String) -> Result<u32, String> {
        self.js
            .processes
            .spawn(&request)
            .await
            .map_err(|e| e.to_string())
    }

    async fn process_write(&mut self, id: u32, data: Vec<u8>) -> Result<(), String> {
        self.js
            .processes
            .write(id, &data)
            .await
            .map_err(|e| e.to_string())
    }

    fn process_close_stdin(&mut self, id: u32) {
        self.js.processes.close_stdin(id);
    }

    fn process_kill(&mut self, id: u32, signal: String) {
        self.js.processes.kill(id, &signal);
    }

    async fn process_poll(&mut self, wait_ms: u32) -> Vec<runtime::ProcessEvent> {
        let wait = std::time::Duration::from_millis(u64::from(wait_ms));
        self.js
            .processes
            .poll(wait)
            .await
            .into_iter()
            .map(|event| match event {
                crate::process::ProcessEvent::Stdout(id, data) => runtime::ProcessEvent {
                    id,
                    kind: "stdout".to_owned(),
                    data,
                    code: None,
                    signal: None,
                },
                crate::process::ProcessEvent::Stderr(id, data) => runtime::ProcessEvent {
                    id,
                    kind: "stderr".to_owned(),
                    data,
                    code: None,
                    signal: None,
                },
                crate::process::ProcessEvent::Exit { id, code, signal } => runtime::ProcessEvent {
                    id,
                    kind: "exit".to_owned(),
                    data: Vec::new(),
                    code,
                    signal,
                },
            })
            .collect()
    }

    async fn lookup(&mut self, host: String) -> Result<Vec<String>, String> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if !self.guard_enabled() {
            return Err(format!(
                "refused: this plugin has no network capability, so it may not resolve {host}"
            ));
        }
        if let Ok(ip) = host.parse::<std::net::IpAddr>() {
            return Ok(vec![ip.to_string()]);
        }
        if !self.net_names_host(&host) {
            return Err(format!(
                "refused: {host} is not granted to this call; resolving it would reach outside the grant"
            ));
        }
        let resolver = self.resolver();
        let timeout = self.dns_timeout();
        match tokio::time::timeout(timeout, resolver.resolve(&host, 443)).await {
            Ok(Ok(addrs)) if addrs.is_empty() => Err(format!("{host}: not found")),
            Ok(Ok(addrs)) => {
                let mut ips: Vec<String> = addrs.iter().map(ToString::to_string).collect();
                ips.dedup();
                Ok(ips)
            }
            Ok(Err(e)) => Err(format!("{host}: not found ({e})")),
            Err(_) => Err(format!("{host}: resolution timed out")),
        }
    }
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Runs the engine's `component-init` in a fresh instance and returns the snapshot: the same
/// component with its memory and globals as `component-init` left them.
pub(crate) async fn preinitialise(
    store: &mut Store<StoreState>,
    linker: &wasmtime::component::Linker<StoreState>,
    wasm: &[u8],
) -> wasmtime::Result<Vec<u8>> {
    let mut wizer = wasmtime_wizer::Wizer::new();
    // Keep `component-init` exported: the host bindings expect the world's exports intact.
    wizer.keep_init_func(true);
    let (cx, instrumented) = wizer
        .instrument_component(wasm)
        .map_err(|e| wasmtime::Error::msg(format!("instrumenting the engine: {e:#}")))?;
    let component = Component::new(store.engine(), &instrumented)?;
    let instance = linker.instantiate_async(&mut *store, &component).await?;
    let init = instance
        .get_typed_func::<(), ()>(&mut *store, "component-init")
        .map_err(|e| wasmtime::Error::msg(format!("the engine has no component-init: {e:#}")))?;
    init.call_async(&mut *store, ()).await?;
    let mut state = Snapshotting {
        store,
        instance,
        failed: None,
    };
    let snapshot = wizer
        .snapshot_component(&cx, &mut state)
        .await
        .map_err(|e| wasmtime::Error::msg(format!("snapshotting the engine: {e:#}")))?;
    match state.failed {
        // A state read that failed would leave a zero in the snapshot: refuse it whole.
        Some(what) => Err(wasmtime::Error::msg(format!(
            "snapshotting the engine: could not read {what}"
        ))),
        None => Ok(snapshot),
    }
}

/// Lets wizer read the initialised instance's state through its instrumentation exports.
struct Snapshotting<'a> {
    store: &'a mut Store<StoreState>,
    instance: WasmInstance,
    /// The first state read that failed.
    failed: Option<String>,
}

impl Snapshotting<'_> {
    async fn call<R, R2>(
        &mut self,
        instance: &str,
        func: &str,
        use_ret: impl FnOnce(StoreContextMut<'_, StoreState>, R) -> R2,
    ) -> Option<R2>
    where
        R: Lift + Send + Sync + 'static,
    {
        let result = self.try_call(instance, func).await;
        match result {
            Some(ret) => Some(use_ret(self.store.as_context_mut(), ret)),
            None => {
                self.failed
                    .get_or_insert_with(|| format!("{instance}#{func}"));
                None
            }
        }
    }

    async fn try_call<R>(&mut self, instance: &str, func: &str) -> Option<R>
    where
        R: Lift + Send + Sync + 'static,
    {
        let export: ComponentExportIndex =
            self.instance
                .get_export_index(&mut *self.store, None, instance)?;
        let func_export = self
            .instance
            .get_export_index(&mut *self.store, Some(&export), func)?;
        let func = self
            .instance
            .get_typed_func::<(), (R,)>(&mut *self.store, func_export)
            .ok()?;
        let (ret,) = func.call_async(&mut *self.store, ()).await.ok()?;
        Some(ret)
    }
}

use wasmtime::AsContextMut as _;

impl wasmtime_wizer::ComponentInstanceState for Snapshotting<'_> {
    async fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) {
        let _ = self
            .call(instance, func, |store, list: WasmList<u8>| {
                contents(list.as_le_slice(&store));
            })
            .await;
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func, |_, r| r)
            .await
            .unwrap_or_default()
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func, |_, r| r)
            .await
            .unwrap_or_default()
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call(instance, func, |_, r: f32| r.to_bits())
            .await
            .unwrap_or_default()
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call(instance, func, |_, r: f64| r.to_bits())
            .await
            .unwrap_or_default()
    }
}
