//! [`SlotRegistry`]: the instances an engine's callers keep alive between calls, each with the
//! moment it was last used, so that when the pool has no free slot left the least recently used
//! *idle* one can be given up for a new instance.
//!
//! The registry never takes an instance from a call: each kept instance says itself whether it
//! is idle, and only an idle one gives its instance up. It holds its entries weakly, so a
//! plugin that is gone leaves nothing behind here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

/// An instance a caller keeps alive between calls (for the host: one plugin's slot).
pub trait KeptInstance: Send + Sync {
    /// Names its plugin, for the note that says its instance was released.
    fn label(&self) -> &str;
    /// The registry's clock ([`SlotRegistry::tick`]) when it was last used.
    fn last_used(&self) -> u64;
    /// Drops its instance if it holds one and no call holds it; whether one was dropped.
    fn release_if_idle(&self) -> bool;
    /// Whether a call (or the making of its instance) holds it now.
    fn in_call(&self) -> bool;
}

/// The kept instances of one engine. Clones share one registry.
#[derive(Clone, Default)]
pub struct SlotRegistry {
    inner: Arc<Registry>,
}

#[derive(Default)]
struct Registry {
    clock: AtomicU64,
    kept: Mutex<Vec<Weak<dyn KeptInstance>>>,
}

impl std::fmt::Debug for SlotRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotRegistry")
            .field("kept", &self.live().len())
            .finish()
    }
}

impl SlotRegistry {
    /// Adds `kept` to the candidates for release. A kept instance enters once.
    pub fn enter(&self, kept: Weak<dyn KeptInstance>) {
        self.pruned().push(kept);
    }

    /// The next moment of the registry's clock: larger than every one before it.
    pub fn tick(&self) -> u64 {
        self.inner.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Releases the instance of the least recently used kept instance that is idle, and names
    /// its plugin; `None` when every kept instance is empty or in a call.
    pub fn release_least_recent(&self) -> Option<String> {
        let mut candidates = self.live();
        candidates.sort_by_key(|k| k.last_used());
        // Each is asked without the registry's lock held: releasing drops a whole store.
        candidates
            .into_iter()
            .find(|k| k.release_if_idle())
            .map(|k| k.label().to_owned())
    }

    /// The plugins whose kept instance a call holds now.
    pub fn in_call(&self) -> Vec<String> {
        self.live()
            .into_iter()
            .filter(|k| k.in_call())
            .map(|k| k.label().to_owned())
            .collect()
    }

    fn live(&self) -> Vec<Arc<dyn KeptInstance>> {
        self.pruned().iter().filter_map(Weak::upgrade).collect()
    }

    /// The kept instances, locked, with those whose owner is gone dropped.
    fn pruned(&self) -> MutexGuard<'_, Vec<Weak<dyn KeptInstance>>> {
        let mut all = self
            .inner
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        all.retain(|k| k.strong_count() > 0);
        all
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    struct Fake {
        label: String,
        last_used: u64,
        live: AtomicBool,
        busy: bool,
    }

    impl KeptInstance for Fake {
        fn label(&self) -> &str {
            &self.label
        }
        fn last_used(&self) -> u64 {
            self.last_used
        }
        fn release_if_idle(&self) -> bool {
            !self.busy && self.live.swap(false, Ordering::Relaxed)
        }
        fn in_call(&self) -> bool {
            self.busy
        }
    }

    fn fake(label: &str, last_used: u64, busy: bool) -> Arc<Fake> {
        Arc::new(Fake {
            label: label.to_owned(),
            last_used,
            live: AtomicBool::new(true),
            busy,
        })
    }

    /// The oldest idle instance goes first; one in a call is passed over however old it is;
    /// one already released is not counted twice; with nothing idle left, nothing is released.
    #[test]
    fn the_least_recently_used_idle_instance_is_released_first() {
        let registry = SlotRegistry::default();
        let kept = [
            fake("busy-oldest", 1, true),
            fake("newest", 9, false),
            fake("older", 3, false),
            fake("middle", 5, false),
        ];
        for k in &kept {
            let k: Arc<dyn KeptInstance> = k.clone();
            registry.enter(Arc::downgrade(&k));
        }
        let released: Vec<_> = std::iter::from_fn(|| registry.release_least_recent()).collect();
        assert_eq!(released, ["older", "middle", "newest"]);
        assert_eq!(registry.in_call(), ["busy-oldest"]);
    }

    /// An entry whose owner is gone is dropped, not released or named.
    #[test]
    fn a_dropped_owner_leaves_nothing_behind() {
        let registry = SlotRegistry::default();
        let gone: Arc<dyn KeptInstance> = fake("gone", 1, false);
        registry.enter(Arc::downgrade(&gone));
        drop(gone);
        assert_eq!(registry.release_least_recent(), None);
        assert!(registry.live().is_empty());
    }

    #[test]
    fn the_clock_only_moves_forward() {
        let registry = SlotRegistry::default();
        let a = registry.tick();
        let b = registry.clone().tick();
        assert!(b > a);
    }
}
