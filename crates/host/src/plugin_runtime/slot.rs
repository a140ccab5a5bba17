//! [`InstanceSlot`]: a plugin's one live instance, created on first use and replaced after it
//! is poisoned (a trap, a deadline, a memory failure) — the same for every format, so no
//! runtime can reuse an instance that failed. Module state does not survive a replacement.

use tokio::sync::Mutex;

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

/// One lazily created, poison-replaced instance, used by one call at a time.
pub(crate) struct InstanceSlot<T> {
    live: Mutex<Option<T>>,
}

impl<T> std::fmt::Debug for InstanceSlot<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceSlot").finish_non_exhaustive()
    }
}

impl<T: Poisonable> InstanceSlot<T> {
    /// A slot with no instance yet.
    pub(crate) fn empty() -> Self {
        Self {
            live: Mutex::new(None),
        }
    }

    /// A slot holding `instance` already.
    pub(crate) fn holding(instance: T) -> Self {
        Self {
            live: Mutex::new(Some(instance)),
        }
    }

    /// Runs `call` on the live instance. A new one is made with `create` first when there is
    /// none, the last one is poisoned, or `fits` says it was made for something else; an
    /// instance the call poisons is dropped, so the next call gets a fresh one.
    ///
    /// # Errors
    /// `create`'s error; the slot is then empty.
    pub(crate) async fn with<R, E>(
        &self,
        fits: impl FnOnce(&T) -> bool,
        create: impl AsyncFnOnce() -> Result<T, E>,
        call: impl AsyncFnOnce(&mut T) -> R,
    ) -> Result<R, E> {
        let mut live = self.live.lock().await;
        if live
            .as_ref()
            .is_some_and(|instance| instance.is_poisoned() || !fits(instance))
        {
            // Dropped before its successor is made: never two instances of one plugin at once.
            *live = None;
        }
        let instance = match live.take() {
            Some(instance) => instance,
            None => create().await?,
        };
        let instance = live.insert(instance);
        let result = call(instance).await;
        if instance.is_poisoned() {
            *live = None;
        }
        Ok(result)
    }

    /// Whether a usable instance is live now.
    pub(crate) async fn is_live(&self) -> bool {
        self.live
            .lock()
            .await
            .as_ref()
            .is_some_and(|instance| !instance.is_poisoned())
    }
}
