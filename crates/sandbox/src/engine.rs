//! The wasmtime engine every plugin runs on: component model, epoch interruption, a pooling
//! allocator with fixed bounds (or instances allocated one by one, under the same count, for a
//! process that runs one command), and the background thread that advances the epoch.
//!
//! This module decides how code is compiled and where instances live; it never decides what a
//! plugin may do (that is fixed per instance by the grants, see `instance.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use wasmtime::{Config, Engine, EngineWeak, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::SandboxError;

/// The native stack a guest may use (4 MiB).
const MAX_WASM_STACK: usize = 4 << 20;

/// How the engine is built. Part of [`SandboxConfig`](crate::SandboxConfig).
#[derive(Debug, Clone)]
pub struct EngineLimits {
    /// Largest linear memory any plugin may be granted, in bytes (default 1 GiB). Grants above it
    /// are refused at instantiation.
    pub max_memory_bytes: usize,
    /// How many plugin instances may be alive at once (default 64). With the pooling allocator
    /// each one has a reserved slot; without it the sandbox counts live instances itself.
    /// Either way instantiation beyond it fails with [`SandboxError::PoolFull`] until one is
    /// dropped.
    pub max_instances: u32,
    /// Use wasmtime's pooling allocator (default true). Pooling reserves address space and
    /// fiber stacks (each with its guard page, one `mprotect` apiece) for every slot when the
    /// engine is built, which pays off in a process that makes instances again and again
    /// (`bosun serve`). Turn it off for a process that runs one command and exits, where that
    /// set-up is most of what the engine costs, and on hosts that limit virtual address space.
    /// Without it each instance's memory, tables and stack are made when the instance is, the
    /// memory limiter bounds memory and tables as before, and `max_instances` is still the cap.
    pub pooling: bool,
    /// How often the epoch advances (default 10 ms). A call is stopped at most one tick after
    /// its deadline.
    pub epoch_tick: Duration,
}

impl Default for EngineLimits {
    fn default() -> Self {
        Self {
            max_memory_bytes: 1 << 30,
            max_instances: 64,
            pooling: true,
            epoch_tick: Duration::from_millis(10),
        }
    }
}

/// Builds the engine and starts its epoch ticker. The ticker stops on its own once the engine
/// (held by the sandbox, loaded components and stores) is gone.
pub(crate) fn build_engine(limits: &EngineLimits) -> Result<(Engine, EpochTicker), SandboxError> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    // JavaScript engines recurse deeply on the native wasm stack (QuickJS ignores its own stack
    // limit on WASI): 512 KiB, wasmtime's default, ends a plugin at a few hundred JS frames.
    // Async stacks must be larger than the wasm stack they host.
    config.max_wasm_stack(MAX_WASM_STACK);
    config.async_stack_size(MAX_WASM_STACK + (1 << 20));
    if limits.pooling {
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config(limits)));
    }
    let engine = Engine::new(&config).map_err(|e| SandboxError::Engine {
        reason: format!("{e:#}"),
    })?;
    let ticker = EpochTicker::start(engine.weak(), limits.epoch_tick)?;
    Ok((engine, ticker))
}

/// Pool bounds sized for plugins: a component made by wit-bindgen has a handful of core
/// instances, one or two memories and tables; JavaScript engines compiled to components have
/// large function tables, hence the generous `table_elements`.
fn pooling_config(limits: &EngineLimits) -> PoolingAllocationConfig {
    let n = limits.max_instances.max(1);
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(n)
        .total_core_instances(n.saturating_mul(16))
        .total_memories(n.saturating_mul(4))
        .total_tables(n.saturating_mul(4))
        .total_stacks(n.saturating_mul(2))
        .max_memories_per_component(4)
        .max_tables_per_component(8)
        .max_core_instances_per_component(32)
        .max_memory_size(limits.max_memory_bytes)
        .table_elements(200_000);
    pool
}

/// The live instances of an engine built without a pool, counted against
/// [`EngineLimits::max_instances`] as the pool's slots would be.
#[derive(Debug, Default)]
pub(crate) struct InstanceCount {
    live: AtomicU32,
}

impl InstanceCount {
    /// Takes one of `max` places (at least one), or `None` when all are taken. The place is
    /// given back when the returned value is dropped.
    pub(crate) fn take(self: &Arc<Self>, max: u32) -> Option<InstancePlace> {
        let max = max.max(1);
        self.live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |live| {
                (live < max).then_some(live + 1)
            })
            .ok()?;
        Some(InstancePlace(Arc::clone(self)))
    }

    /// How many places are taken now.
    #[cfg(test)]
    fn live(&self) -> u32 {
        self.live.load(Ordering::Acquire)
    }
}

/// One live instance's place in an [`InstanceCount`], given back on drop.
#[derive(Debug)]
pub(crate) struct InstancePlace(Arc<InstanceCount>);

impl Drop for InstancePlace {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The thread that advances the engine's epoch every tick.
#[derive(Debug)]
pub(crate) struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    fn start(engine: EngineWeak, tick: Duration) -> Result<Self, SandboxError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let tick = tick.max(Duration::from_millis(1));
        std::thread::Builder::new()
            .name("bosun-epoch".to_owned())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    match engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| SandboxError::Engine {
                reason: format!("cannot start the epoch thread: {e}"),
            })?;
        Ok(Self { stop })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A string naming the engine build and configuration, for cache keys: the wasmtime version
/// and a digest of everything wasmtime itself checks before accepting a precompiled artefact.
pub(crate) fn engine_fingerprint(engine: &Engine) -> String {
    use sha2::Digest;
    use std::hash::Hash;

    struct ShaHasher(sha2::Sha256);
    impl std::hash::Hasher for ShaHasher {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }

    let mut hasher = ShaHasher(sha2::Sha256::new());
    WASMTIME_VERSION.hash(&mut hasher);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hex(&hasher.0.finalize()[..16])
}

/// The wasmtime version this crate is built against; part of every cache key.
pub(crate) const WASMTIME_VERSION: &str = "48.0.8";

pub(crate) use bosun_core::text::hex;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_without_a_pool_counts_its_instances_against_the_same_cap() {
        let count = Arc::new(InstanceCount::default());
        let one = count.take(2).expect("first place");
        let two = count.take(2).expect("second place");
        assert!(
            count.take(2).is_none(),
            "a third instance past a cap of two"
        );
        drop(one);
        let three = count.take(2).expect("a place given back is free again");
        assert_eq!(count.live(), 2);
        drop((two, three));
        assert_eq!(count.live(), 0);
        // A cap of zero still lets one instance live, as the pool's `max(1)` does.
        let only = count.take(0).expect("one place at least");
        assert!(count.take(0).is_none());
        drop(only);
    }
}
