//! The store data of one instance (WASI, HTTP, host state, guard, memory limiter) and how a
//! store is made and linked. Nothing here runs plugin code.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, StoreContextMut, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::SandboxInner;
use crate::error::SandboxError;
use crate::grants::{FsGrant, Grants, JsState};
use crate::host::{BoundedPipe, CallClock, HostState};
use crate::http::{HttpGuard, NetGrant};
use crate::limits::MemoryLimiter;

/// The store data of one instance.
pub(crate) struct StoreState {
    pub(crate) wasi: WasiCtx,
    pub(crate) http: WasiHttpCtx,
    pub(crate) table: ResourceTable,
    pub(crate) host: HostState,
    pub(crate) guard: HttpGuard,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) interrupted: Option<Interrupt>,
    pub(crate) js: JsState,
}

impl StoreState {
    /// A store for `grants`, with stdout and stderr going to the given pipes.
    pub(crate) fn new(
        sandbox: &SandboxInner,
        grants: &Grants,
        stdout: BoundedPipe,
        stderr: BoundedPipe,
        label: Option<&String>,
    ) -> Result<Self, SandboxError> {
        let out = &sandbox.config.output;
        let mut wasi = WasiCtxBuilder::new();
        // The builder starts with no env, no args, closed stdin and no preopens; sockets are
        // switched off entirely rather than left with an empty address allow-list.
        wasi.stdout(stdout)
            .stderr(stderr)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for fs in &grants.fs {
            let perms = if fs.writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            let refused = |linked: bool, reason: String| SandboxError::Preopen {
                plugin: label.cloned(),
                path: fs.host_dir(),
                reason,
                linked,
            };
            // The directory is opened here, beneath its root through no link, and wasmtime is
            // handed that descriptor (see `opened_dir`), never the name again.
            let opened = open_granted(fs).map_err(|e| {
                let linked = bosun_fsio::beneath::is_link_on_path(&e);
                let reason = if linked {
                    "a symbolic link lies on the path now (it was not there when the call was \
                     judged), so the plugin is given nothing rather than where the link leads; \
                     remove the link or name the directory it leads to"
                        .to_owned()
                } else {
                    format!("{e:#}")
                };
                refused(linked, reason)
            })?;
            let by_descriptor =
                opened_dir(&opened).map_err(|e| refused(false, format!("{e:#}")))?;
            wasi.preopened_dir(&by_descriptor, &fs.guest_path, perms)
                .map_err(|e| refused(false, format!("{e:#}")))?;
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(out.max_resources);
        Ok(Self {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            table,
            host: HostState::new(
                grants.config.clone(),
                out.max_log_line_bytes,
                out.max_log_lines,
            ),
            guard: HttpGuard {
                enabled: grants.http,
                net: Arc::new(NetGrant::default()),
                resolver: Arc::clone(&sandbox.config.resolver),
                limits: sandbox.config.http.clone(),
                refusals: Arc::new(Mutex::new(Vec::new())),
            },
            limiter: MemoryLimiter::new(grants.memory_bytes),
            interrupted: None,
            js: JsState {
                grants: grants.js.clone(),
                session: None,
                processes: Default::default(),
            },
        })
    }

    pub(crate) fn limiter_used(&self) -> usize {
        self.limiter.used()
    }

    pub(crate) fn guard_enabled(&self) -> bool {
        self.guard.enabled
    }

    pub(crate) fn net_names_host(&self, host: &str) -> bool {
        self.guard.net.names_host(host)
    }

    pub(crate) fn resolver(&self) -> Arc<dyn crate::Resolver> {
        Arc::clone(&self.guard.resolver)
    }

    pub(crate) fn dns_timeout(&self) -> Duration {
        self.guard.limits.dns_timeout
    }
}

/// Opens the directory of `grant`: its root as given, then the granted directory beneath it
/// through no symbolic link at all.
fn open_granted(grant: &FsGrant) -> std::io::Result<OwnedFd> {
    let root = bosun_fsio::beneath::Root::open(&grant.root)?;
    root.open_dir_no_links(&grant.dir)
}

/// The name through which wasmtime-wasi (which takes a path, not a descriptor) opens exactly
/// `dir`: `/proc/self/fd/<n>`, a link of the kernel's own that opens the descriptor's directory
/// whatever has happened to its names since. Refused unless `/proc` is the kernel's procfs and
/// the name leads to that very directory.
fn opened_dir(dir: &OwnedFd) -> std::io::Result<PathBuf> {
    let path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    let procfs = rustix::fs::statfs("/proc/self/fd")
        .is_ok_and(|fs| fs.f_type == rustix::fs::PROC_SUPER_MAGIC);
    let same = || -> std::io::Result<bool> {
        let held = rustix::fs::fstat(dir)?;
        let named = rustix::fs::stat(&path)?;
        Ok((held.st_dev, held.st_ino) == (named.st_dev, named.st_ino))
    };
    if !procfs || !same()? {
        return Err(std::io::Error::other(
            "/proc is not the kernel's procfs here, so the directory opened cannot be handed \
             to the sandbox by its descriptor; mount procfs at /proc",
        ));
    }
    Ok(path)
}

/// Builds a store for start-up code: the grants' limits, the deadline callback, and a clock
/// that stops start-up code at the grant's timeout.
pub(crate) fn startup_store(
    sandbox: &SandboxInner,
    state: StoreState,
    timeout: Duration,
) -> Store<StoreState> {
    let mut store = Store::new(&sandbox.engine, state);
    store.limiter(|state| &mut state.limiter);
    store.epoch_deadline_callback(on_epoch);
    store.data_mut().host.clock = Some(CallClock {
        deadline: Instant::now() + timeout,
        cancel: CancellationToken::new(),
    });
    store.set_epoch_deadline(1);
    store
}

/// The store used to pre-initialise the JavaScript engine: no grants at all.
pub(crate) fn preinit_store(sandbox: &SandboxInner) -> Result<Store<StoreState>, SandboxError> {
    let grants = Grants {
        timeout: Duration::from_secs(120),
        ..Grants::default()
    };
    let out = &sandbox.config.output;
    let state = StoreState::new(
        sandbox,
        &grants,
        BoundedPipe::new(out.max_stdio_bytes),
        BoundedPipe::new(out.max_stdio_bytes),
        None,
    )?;
    Ok(startup_store(sandbox, state, grants.timeout))
}

/// Why the epoch callback stopped the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    TimedOut,
    Cancelled,
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for StoreState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.guard,
        }
    }
}

/// Runs at every epoch tick while the guest executes: stops it once the call is cancelled or
/// past its deadline, otherwise yields to the async runtime and waits for the next tick.
pub(crate) fn on_epoch(
    mut ctx: StoreContextMut<'_, StoreState>,
) -> wasmtime::Result<UpdateDeadline> {
    let state = ctx.data_mut();
    let interrupt = match &state.host.clock {
        Some(clock) if clock.cancel.is_cancelled() => Some(Interrupt::Cancelled),
        Some(clock) if Instant::now() >= clock.deadline => Some(Interrupt::TimedOut),
        _ => None,
    };
    match interrupt {
        Some(reason) => {
            state.interrupted = Some(reason);
            Ok(UpdateDeadline::Interrupt)
        }
        None => Ok(UpdateDeadline::Yield(1)),
    }
}
