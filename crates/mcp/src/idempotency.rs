//! Idempotency keys for `tools/call`: a client that retries a call (its connection dropped, a
//! response timed out) sends the same key, and gets the first attempt's result instead of
//! running the call — a command, a write — a second time.
//!
//! The key comes from the `Idempotency-Key` HTTP header or `_meta` `io.bosun/idempotencyKey`,
//! and is the caller's: the same key from another caller is another entry. A key reused for a
//! different call (another tool or other arguments) is refused. While the first attempt runs,
//! a retry waits for it. Only finished calls are kept — one that ended asking for input, or was
//! cancelled, is not, so its retry runs. Results are kept for [`DEFAULT_KEY_TTL`], at most
//! [`MAX_KEYS`] of them, in this instance's memory: instances share no results, so a retry that
//! reaches another instance after the first died runs the call again there (clients retry
//! across instances only what is safe to run twice).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

/// How long a finished call's result answers retries.
pub const DEFAULT_KEY_TTL: Duration = Duration::from_secs(600);

/// Most keys one instance keeps; the oldest go first.
pub const MAX_KEYS: usize = 4096;

/// Longest key taken, in bytes.
const MAX_KEY_LEN: usize = 255;

/// One key's call: which call it names, and its result once finished.
struct Entry<R> {
    call: String,
    created: Instant,
    result: OnceCell<R>,
}

/// Why a key cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyRefused {
    /// Empty, too long or not printable ASCII.
    #[error("the idempotency key must be 1-255 printable ASCII characters (a UUID is a good key)")]
    Malformed,
    /// The caller used it for another call.
    #[error(
        "this idempotency key was already used for a different call (another tool or other arguments): use a new key for each call"
    )]
    OtherCall,
}

/// Keyed calls by caller and key.
type Entries<R> = HashMap<(String, String), Arc<Entry<R>>>;

/// The results of keyed calls on this instance.
pub struct Idempotency<R> {
    ttl: Duration,
    entries: Mutex<Entries<R>>,
}

impl<R: Clone> Idempotency<R> {
    /// Keeps results for `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `run` for `caller`'s `key` naming `call` (a digest of tool and arguments), or
    /// returns the result of the run that already finished (or is running) under that key.
    /// `run` says whether its result may answer retries (`Ok`) or not (`Err`: asked for input,
    /// cancelled); what it returns either way is this attempt's answer.
    ///
    /// # Errors
    /// [`KeyRefused`] for a malformed key or one used for another call.
    pub async fn run<F, Fut>(
        &self,
        caller: &str,
        key: &str,
        call: &str,
        run: F,
    ) -> Result<R, KeyRefused>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<R, R>>,
    {
        if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(KeyRefused::Malformed);
        }
        let entry = {
            let now = Instant::now();
            let mut entries = self
                .entries
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let id = (caller.to_owned(), key.to_owned());
            let expired = entries
                .get(&id)
                .is_some_and(|e| now.duration_since(e.created) >= self.ttl);
            if expired {
                entries.remove(&id);
            }
            if !entries.contains_key(&id) && entries.len() >= MAX_KEYS {
                let ttl = self.ttl;
                entries.retain(|_, e| now.duration_since(e.created) < ttl);
                while entries.len() >= MAX_KEYS {
                    let Some(oldest) = entries
                        .iter()
                        .min_by_key(|(_, e)| e.created)
                        .map(|(id, _)| id.clone())
                    else {
                        break;
                    };
                    entries.remove(&oldest);
                }
            }
            entries
                .entry(id)
                .or_insert_with(|| {
                    Arc::new(Entry {
                        call: call.to_owned(),
                        created: now,
                        result: OnceCell::new(),
                    })
                })
                .clone()
        };
        if entry.call != call {
            return Err(KeyRefused::OtherCall);
        }
        // The cell lets one attempt run at a time: a retry arriving while the first runs waits,
        // then takes its result; if the first's result may not be kept, the retry runs.
        match entry.result.get_or_try_init(run).await {
            Ok(kept) => Ok(kept.clone()),
            Err(this_attempt) => Ok(this_attempt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn a_retry_with_the_same_key_gets_the_first_result_without_running_again() {
        let keys = Idempotency::<u32>::new(DEFAULT_KEY_TTL);
        let runs = AtomicU32::new(0);
        let run = || async { Ok(runs.fetch_add(1, Ordering::SeqCst) + 1) };
        runtime().block_on(async {
            assert_eq!(keys.run("alice", "k1", "call", run).await, Ok(1));
            assert_eq!(keys.run("alice", "k1", "call", run).await, Ok(1));
            // Another caller's same key is its own.
            assert_eq!(keys.run("bob", "k1", "call", run).await, Ok(2));
            // The same key for another call is refused, and runs nothing.
            assert_eq!(
                keys.run("alice", "k1", "other", run).await,
                Err(KeyRefused::OtherCall)
            );
            assert_eq!(
                keys.run("alice", "", "call", run).await,
                Err(KeyRefused::Malformed)
            );
        });
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn concurrent_retries_wait_for_the_first_attempt() {
        let keys = Idempotency::<u32>::new(DEFAULT_KEY_TTL);
        let runs = AtomicU32::new(0);
        let run = || async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            Ok(runs.fetch_add(1, Ordering::SeqCst) + 1)
        };
        let (a, b) = runtime().block_on(async {
            tokio::join!(
                keys.run("alice", "k", "call", run),
                keys.run("alice", "k", "call", run)
            )
        });
        assert_eq!((a, b), (Ok(1), Ok(1)));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn an_attempt_that_may_not_be_kept_lets_the_retry_run() {
        let keys = Idempotency::<u32>::new(DEFAULT_KEY_TTL);
        runtime().block_on(async {
            assert_eq!(keys.run("a", "k", "c", || async { Err(7) }).await, Ok(7));
            assert_eq!(keys.run("a", "k", "c", || async { Ok(8) }).await, Ok(8));
            assert_eq!(keys.run("a", "k", "c", || async { Ok(9) }).await, Ok(8));
        });
    }

    #[test]
    fn an_expired_key_runs_again() {
        let keys = Idempotency::<u32>::new(Duration::from_millis(1));
        runtime().block_on(async {
            assert_eq!(keys.run("a", "k", "c", || async { Ok(1) }).await, Ok(1));
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(keys.run("a", "k", "c", || async { Ok(2) }).await, Ok(2));
        });
    }
}
