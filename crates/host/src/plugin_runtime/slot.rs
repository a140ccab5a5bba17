//! [`InstanceSlot`]: a plugin's one live instance, created on first use, replaced after it is
//! poisoned (a trap, a deadline, a memory failure), and released while idle when the engine's
//! instance pool is full and another plugin needs a slot — the same for every format, so no
//! runtime can reuse an instance that failed or lose one that is in a call. Module state does
//! not survive a replacement or a release.
//!
//! Every session of the process shares the instance, so its module state can carry one
//! session's data to another. Each instance therefore keeps a label ([`SessionLabels`]): the
//! highest level and the first untrusted input of every session whose data reached it. A use
//! raises it to the using session's labels before the plugin's code runs, and hands back the
//! label after, for the chokepoint to raise the session to (what the plugin returns may hold
//! anything its state holds). The label lives with the instance: a fresh one starts without.
//!
//! Each slot enters its engine's [`SlotRegistry`] at its first use with the moment it was last
//! used; making an instance that meets [`SandboxError::PoolFull`] releases the least recently
//! used idle instance of any plugin of that engine and tries again. An instance in a call holds
//! its slot's lock, and a slot whose lock is held is never released.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bosun_sandbox::{KeptInstance, SandboxError, SlotRegistry};
use tokio::sync::Mutex;

use crate::hooks::SessionLabels;

/// An instance that a failed call may leave unusable.
pub(crate) trait Poisonable {
    /// Whether it must not be used again.
    fn is_poisoned(&self) -> bool;
}

impl Poisonable for bosun_sandbox::Instance {
    fn is_poisoned(&self) -> bool {
        bosun_sandbox::Instance::is_poisoned(self)
    }
}

impl Poisonable for bosun_js::JsPlugin {
    fn is_poisoned(&self) -> bool {
        bosun_js::JsPlugin::is_poisoned(self)
    }
}

/// An error of making an instance, which may say the engine's instance pool is full.
pub(crate) trait Creation {
    /// Whether every slot of the pool was taken.
    fn pool_full(&self) -> bool;
}

impl Creation for SandboxError {
    fn pool_full(&self) -> bool {
        matches!(self, SandboxError::PoolFull { .. })
    }
}

impl Creation for bosun_js::JsError {
    fn pool_full(&self) -> bool {
        matches!(self, bosun_js::JsError::Sandbox(e) if e.pool_full())
    }
}

/// What a call is told of instances coming and going: the trace lines an operator reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotNote<'a> {
    /// The idle instance of this other plugin was released to make room for this call.
    Released(&'a str),
    /// This plugin's own instance had been released while idle (for another plugin, during a
    /// call, a hook or an activation that had no call to tell): this call starts it afresh.
    StartedAfresh(&'a str),
}

impl SlotNote<'_> {
    /// The trace line.
    pub(crate) fn line(self) -> String {
        match self {
            SlotNote::Released(released) => format!(
                "every plugin instance slot was taken: the idle instance of plugin `{released}` \
                 (the least recently used) was released for this call; `{released}` starts \
                 afresh at its next call, without its module state"
            ),
            SlotNote::StartedAfresh(plugin) => format!(
                "the idle instance of plugin `{plugin}` had been released to make room for \
                 another plugin: this call starts it afresh, without its module state"
            ),
        }
    }
}

/// One lazily created, poison-replaced, idle-released instance, used by one call at a time.
pub(crate) struct InstanceSlot<T> {
    shared: Arc<Shared<T>>,
}

/// A live instance and the labels of every session whose data reached it.
struct Labelled<T> {
    instance: T,
    /// Only rises while the instance lives; dropped with it.
    reached: SessionLabels,
}

struct Shared<T> {
    /// The plugin's local name.
    label: String,
    live: Mutex<Option<Labelled<T>>>,
    /// The registry's clock when a call last began or ended here.
    last_used: AtomicU64,
    entered: AtomicBool,
    /// The instance was released while idle and no call has been told yet.
    released: AtomicBool,
}

impl<T> std::fmt::Debug for InstanceSlot<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceSlot")
            .field("label", &self.shared.label)
            .finish_non_exhaustive()
    }
}

impl<T: Send> KeptInstance for Shared<T> {
    fn label(&self) -> &str {
        &self.label
    }

    fn last_used(&self) -> u64 {
        self.last_used.load(Ordering::Relaxed)
    }

    fn release_if_idle(&self) -> bool {
        // A held lock is a call (or the making of an instance): never taken from it.
        let Ok(mut live) = self.live.try_lock() else {
            return false;
        };
        // Marked under the lock, so the next call to take it sees the mark.
        let released = live.take().is_some();
        if released {
            self.released.store(true, Ordering::Relaxed);
        }
        released
    }

    fn in_call(&self) -> bool {
        self.live.try_lock().is_err()
    }
}

impl<T: Poisonable + Send + 'static> InstanceSlot<T> {
    /// A slot of the plugin `label`, with no instance yet.
    pub(crate) fn empty(label: &str) -> Self {
        Self {
            shared: Arc::new(Shared {
                label: label.to_owned(),
                live: Mutex::new(None),
                last_used: AtomicU64::new(0),
                entered: AtomicBool::new(false),
                released: AtomicBool::new(false),
            }),
        }
    }

    /// Runs `call` on the live instance, whose label first rises to `from` (the labels of the
    /// session whose data the call hands it), and returns what `call` returned with the
    /// instance's label after it: what the result may carry. A new one is made with `create`
    /// first when there is none, the last one is poisoned, or `fits` says it was made for
    /// something else (it starts with no label); when the
    /// engine's pool is full, the least recently used idle instance in `slots` is released
    /// and `create` tried again. `tell` is given a [`SlotNote`] for each release made for this
    /// call, and one when this plugin's own instance had been released while idle; it says
    /// whether it could pass the note on (a hook has no call to tell), and an untold
    /// [`SlotNote::StartedAfresh`] waits for the next use that can. An instance the call
    /// poisons is dropped, so the next call gets a fresh one.
    ///
    /// # Errors
    /// `create`'s error — [`SandboxError::PoolFull`] only when no instance was idle to release;
    /// the slot is then empty.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn with<R, E: Creation, Made: Future<Output = Result<T, E>>>(
        &self,
        slots: &SlotRegistry,
        from: &SessionLabels,
        fits: impl FnOnce(&T) -> bool,
        create: impl Fn() -> Made,
        call: impl AsyncFnOnce(&mut T) -> R,
        tell: impl Fn(SlotNote<'_>) -> bool,
    ) -> Result<(R, SessionLabels), E> {
        self.enter(slots);
        let shared = &self.shared;
        let mut live = shared.live.lock().await;
        shared.last_used.store(slots.tick(), Ordering::Relaxed);
        if live
            .as_ref()
            .is_some_and(|kept| kept.instance.is_poisoned() || !fits(&kept.instance))
        {
            // Dropped before its successor is made: never two instances of one plugin at once.
            *live = None;
        }
        let kept = match live.take() {
            Some(kept) => kept,
            None => loop {
                match create().await {
                    Ok(instance) => {
                        break Labelled {
                            instance,
                            reached: SessionLabels::default(),
                        };
                    }
                    Err(e) if e.pool_full() => match slots.release_least_recent() {
                        Some(plugin) => {
                            tell(SlotNote::Released(&plugin));
                        }
                        // Every other instance is in a call: say so rather than wait.
                        None => return Err(e),
                    },
                    Err(e) => return Err(e),
                }
            },
        };
        if shared.released.swap(false, Ordering::Relaxed)
            && !tell(SlotNote::StartedAfresh(&shared.label))
        {
            shared.released.store(true, Ordering::Relaxed);
        }
        let kept = live.insert(kept);
        // The data flows in before any of the plugin's code sees it.
        kept.reached.raise(from);
        let result = call(&mut kept.instance).await;
        // Read under the lock, after the call: no other call ran on this instance meanwhile.
        let reached = kept.reached.clone();
        if kept.instance.is_poisoned() {
            *live = None;
        }
        shared.last_used.store(slots.tick(), Ordering::Relaxed);
        Ok((result, reached))
    }

    /// Whether a usable instance is live now.
    pub(crate) async fn is_live(&self) -> bool {
        self.shared
            .live
            .lock()
            .await
            .as_ref()
            .is_some_and(|kept| !kept.instance.is_poisoned())
    }

    /// Puts the slot among `slots`' candidates for release, once.
    fn enter(&self, slots: &SlotRegistry) {
        if !self.shared.entered.swap(true, Ordering::Relaxed) {
            let shared: Arc<dyn KeptInstance> = self.shared.clone();
            slots.enter(Arc::downgrade(&shared));
        }
    }
}

#[cfg(test)]
mod tests {
    use bosun_core::Classification;

    use super::*;

    /// An instance whose call may poison it.
    struct Fake {
        poisoned: bool,
    }

    impl Poisonable for Fake {
        fn is_poisoned(&self) -> bool {
            self.poisoned
        }
    }

    #[derive(Debug)]
    struct NeverFull;

    impl Creation for NeverFull {
        fn pool_full(&self) -> bool {
            false
        }
    }

    async fn use_slot(
        slot: &InstanceSlot<Fake>,
        slots: &SlotRegistry,
        from: &SessionLabels,
        poison: bool,
    ) -> SessionLabels {
        let ((), reached) = slot
            .with(
                slots,
                from,
                |_| true,
                || async { Ok::<_, NeverFull>(Fake { poisoned: false }) },
                async |fake: &mut Fake| fake.poisoned = poison,
                |_| true,
            )
            .await
            .unwrap();
        reached
    }

    #[tokio::test]
    async fn an_instance_label_rises_with_every_session_and_a_fresh_instance_starts_without() {
        let slots = SlotRegistry::default();
        let slot = InstanceSlot::<Fake>::empty("memo");
        let public = SessionLabels::default();
        let secret = SessionLabels {
            level: Classification::Restricted,
            untrusted: None,
        };
        let marked = SessionLabels {
            level: Classification::Internal,
            untrusted: Some("the network (example.com)".into()),
        };
        assert_eq!(use_slot(&slot, &slots, &secret, false).await, secret);
        // A PUBLIC session gets the instance's label back; it never falls.
        assert_eq!(use_slot(&slot, &slots, &public, false).await, secret);
        let both = SessionLabels {
            level: Classification::Restricted,
            untrusted: marked.untrusted.clone(),
        };
        assert_eq!(use_slot(&slot, &slots, &marked, false).await, both);
        // The call that poisons it still hands back what it held; its successor holds nothing.
        assert_eq!(use_slot(&slot, &slots, &public, true).await, both);
        assert_eq!(use_slot(&slot, &slots, &public, false).await, public);
        // Released while idle: the next instance starts without the label too.
        assert_eq!(use_slot(&slot, &slots, &secret, false).await, secret);
        assert!(slot.shared.release_if_idle());
        assert_eq!(use_slot(&slot, &slots, &public, false).await, public);
    }
}
