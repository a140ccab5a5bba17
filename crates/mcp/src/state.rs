//! The sealed `requestState` of 2026-07-28 calls (SEP-2322 multi-round-trip requests).
//!
//! A 2026-07-28 call that needs an answer ends with `input_required` and a `requestState` the
//! client echoes in its retry; behind a load balancer that retry may reach another instance.
//! The state is therefore sealed with a key every instance holds (`[serve] state_key_env`):
//! HMAC-SHA256 through the SDK's `RequestStateCodec`, with an expiry, and bound to the caller
//! and the call (tool and arguments digest) as associated data, so a state cannot be forged,
//! outlive its expiry, or be carried to another caller or another call.
//!
//! Each state carries a nonce, and an instance opens a nonce once: a replayed state is refused
//! by the instance that already redeemed it. With `[serve] state_redemptions_dir` — a directory
//! every instance reaches (a shared volume whose file system creates files exclusively: local,
//! or NFSv3 and later) — an instance also records each nonce it opens there as a file created
//! with `O_EXCL`, so a state replayed to *another* instance is refused too; a nonce that cannot
//! be recorded is refused (fail closed), and records older than the expiry are swept. Without
//! it, instances share no redemption list, and a state replayed to a different instance within
//! its expiry (`[serve] state_ttl_secs`, five minutes by default) is accepted there, bound to
//! the same caller and the same call: a replay can repeat that caller's answered call once per
//! instance. This module never decides anything itself: it seals and opens.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// How long a request state may be answered by default.
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(300);

/// Most redeemed nonces one instance remembers. Past it, after forgetting expired ones, new
/// states are refused rather than opened unremembered (a replay must never pass for lack of
/// room).
const MAX_REDEEMED: usize = 200_000;

/// Why a state sent with a retry was refused. The client is told one thing for all of them
/// (SEP-2322: opening failures map to one error); the kind is for the server's own record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateRefused {
    /// Not sealed with the instances' key, altered, for another caller or another call.
    #[error("the request state was not issued for this caller and this call")]
    Forged,
    /// Past its expiry.
    #[error("the request state has expired")]
    Expired,
    /// Already redeemed on this instance.
    #[error("the request state was already used")]
    Replayed,
    /// Too many states redeemed and not yet expired to remember another.
    #[error("too many request states are in flight on this server")]
    Busy,
    /// The shared redemption directory could not record it, so it cannot be known unused.
    #[error("the request state could not be recorded as used")]
    Unrecorded,
}

/// Nonces redeemed by every instance, as files in one shared directory.
#[derive(Debug)]
struct SharedRedemptions {
    dir: PathBuf,
    /// When the directory was last swept of expired records.
    swept: Mutex<Instant>,
}

impl SharedRedemptions {
    /// Records `nonce` as redeemed; `Replayed` when any instance already did.
    fn redeem(&self, nonce: &str, ttl: Duration) -> Result<(), StateRefused> {
        // Nonces are this module's own (`<hex>-<hex>`) and sealed, so this never refuses a
        // genuine one; it keeps a path out of anything else.
        if nonce.is_empty() || !nonce.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
            return Err(StateRefused::Forged);
        }
        self.sweep(ttl);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.dir.join(nonce))
        {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(StateRefused::Replayed),
            Err(_) => Err(StateRefused::Unrecorded),
        }
    }

    /// Removes the records of states that have expired (older than the expiry and a minute for
    /// clocks that differ), at most once per half expiry, by whichever call comes first.
    fn sweep(&self, ttl: Duration) {
        let Ok(mut swept) = self.swept.try_lock() else {
            return;
        };
        if swept.elapsed() < ttl / 2 {
            return;
        }
        *swept = Instant::now();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let keep = ttl + Duration::from_secs(60);
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age > keep);
            if old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// A sealed state's contents: the caller's value and the nonce that makes it single-use.
#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    n: String,
    v: T,
}

/// Seals request states and opens each at most once.
pub struct StateSeal {
    codec: RequestStateCodec,
    ttl: Duration,
    /// Unique per process (random), so two instances never issue the same nonce.
    prefix: String,
    counter: AtomicU64,
    /// Nonces opened here, with when they may be forgotten (their state has expired by then).
    redeemed: Mutex<HashMap<String, Instant>>,
    /// Nonces opened by every instance, when they share a directory.
    shared: Option<SharedRedemptions>,
}

impl std::fmt::Debug for StateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSeal")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// Reads `n` bytes from the kernel's random source.
fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    crate::random::bytes(n)
        .map_err(|e| format!("reading /dev/urandom for a request-state key: {e}"))
}

impl StateSeal {
    /// A seal with `key` (at least 32 bytes; the same on every instance) and states valid for
    /// `ttl`.
    ///
    /// # Errors
    /// A key shorter than 32 bytes, or no random source for the nonces.
    pub fn new(key: &[u8], ttl: Duration) -> Result<Self, String> {
        let codec = RequestStateCodec::try_new(key.to_vec()).map_err(|e| match e {
            RequestStateError::KeyTooShort { minimum, actual } => format!(
                "the request-state key is {actual} bytes; use at least {minimum} random bytes (e.g. `openssl rand -hex 32`)"
            ),
            other => other.to_string(),
        })?;
        Ok(Self {
            codec,
            ttl,
            prefix: bosun_core::text::hex(&random_bytes(8)?),
            counter: AtomicU64::new(0),
            redeemed: Mutex::new(HashMap::new()),
            shared: None,
        })
    }

    /// Records every redeemed nonce in `dir` as well, a directory every instance shares, so a
    /// state opens once across all of them.
    ///
    /// # Errors
    /// The directory cannot be created, or a file cannot be created in it.
    pub fn with_shared_redemptions(mut self, dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir)
            .and_then(|()| {
                let probe = dir.join(format!("probe-{}", self.prefix));
                // Created, never opened over something there: a link planted at the
                // probe's name is not written through.
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&probe)?;
                std::fs::remove_file(probe)
            })
            .map_err(|e| {
                format!(
                    "[serve] state_redemptions_dir {}: {e}: it must be a directory every instance can create files in",
                    dir.display()
                )
            })?;
        self.shared = Some(SharedRedemptions {
            dir: dir.to_owned(),
            // The first call sweeps what instances before this one left.
            swept: Mutex::new(Instant::now() - self.ttl),
        });
        Ok(self)
    }

    /// A seal with a random key of this process alone: states open only on this instance.
    ///
    /// # Errors
    /// No random source.
    pub fn ephemeral(ttl: Duration) -> Result<Self, String> {
        Self::new(&random_bytes(32)?, ttl)
    }

    /// How long a state stays valid.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Seals `value` bound to `binding` (the caller and the call). `None` only when `value`
    /// cannot be written as JSON.
    pub(crate) fn seal<T: Serialize>(&self, value: &T, binding: &[u8]) -> Option<String> {
        let number = self.counter.fetch_add(1, Ordering::Relaxed);
        let envelope = Envelope {
            n: format!("{}-{number:x}", self.prefix),
            v: value,
        };
        self.codec
            .seal_json_with(
                &envelope,
                &SealOptions::new().associated_data(binding).ttl(self.ttl),
            )
            .ok()
    }

    /// Opens `sealed` for `binding` and redeems it: the same state never opens twice here.
    pub(crate) fn open<T: DeserializeOwned>(
        &self,
        sealed: &str,
        binding: &[u8],
    ) -> Result<T, StateRefused> {
        let envelope: Envelope<T> =
            self.codec
                .open_json_with(sealed, binding)
                .map_err(|e| match e {
                    RequestStateError::Expired => StateRefused::Expired,
                    _ => StateRefused::Forged,
                })?;
        let now = Instant::now();
        let mut redeemed = self
            .redeemed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if redeemed.contains_key(&envelope.n) {
            return Err(StateRefused::Replayed);
        }
        if redeemed.len() >= MAX_REDEEMED {
            redeemed.retain(|_, forget_at| *forget_at > now);
            if redeemed.len() >= MAX_REDEEMED {
                return Err(StateRefused::Busy);
            }
        }
        if let Some(shared) = &self.shared {
            shared.redeem(&envelope.n, self.ttl)?;
        }
        redeemed.insert(envelope.n, now + self.ttl);
        Ok(envelope.v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_state_opens_once_for_its_binding_on_any_instance_with_the_key() {
        let one = StateSeal::new(KEY, DEFAULT_STATE_TTL).unwrap();
        let two = StateSeal::new(KEY, DEFAULT_STATE_TTL).unwrap();
        let sealed = one.seal(&"answers", b"alice\ncall-1").unwrap();
        // Another instance holding the key opens it.
        assert_eq!(
            two.open::<String>(&sealed, b"alice\ncall-1").unwrap(),
            "answers"
        );
        // Not twice on the same instance.
        assert_eq!(
            two.open::<String>(&sealed, b"alice\ncall-1"),
            Err(StateRefused::Replayed)
        );
        // Another caller or another call: refused, and this refusal redeems nothing.
        assert_eq!(
            one.open::<String>(&sealed, b"mallory\ncall-1"),
            Err(StateRefused::Forged)
        );
        assert_eq!(
            one.open::<String>(&sealed, b"alice\ncall-2"),
            Err(StateRefused::Forged)
        );
        assert_eq!(
            one.open::<String>(&sealed, b"alice\ncall-1").unwrap(),
            "answers"
        );
    }

    #[test]
    fn a_forged_altered_or_foreign_state_is_refused() {
        let seal = StateSeal::new(KEY, DEFAULT_STATE_TTL).unwrap();
        let other =
            StateSeal::new(b"another-key-of-at-least-32-bytes!!", DEFAULT_STATE_TTL).unwrap();
        let foreign = other.seal(&"answers", b"b").unwrap();
        assert_eq!(
            seal.open::<String>(&foreign, b"b"),
            Err(StateRefused::Forged)
        );
        let sealed = seal.seal(&"answers", b"b").unwrap();
        let mut altered = sealed.clone().into_bytes();
        let middle = altered.len() / 2;
        altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert_eq!(
            seal.open::<String>(&altered, b"b"),
            Err(StateRefused::Forged)
        );
        // The unsealed JSON the server used to send is no state at all now.
        assert_eq!(
            seal.open::<String>(r#"{"call":"x","answers":{},"asked":[]}"#, b"b"),
            Err(StateRefused::Forged)
        );
        assert!(StateSeal::new(b"short", DEFAULT_STATE_TTL).is_err());
    }

    #[test]
    fn a_shared_redemption_directory_refuses_a_replay_on_another_instance() {
        let dir = tempfile::tempdir().unwrap();
        let shared = |dir: &Path| {
            StateSeal::new(KEY, DEFAULT_STATE_TTL)
                .unwrap()
                .with_shared_redemptions(dir)
                .unwrap()
        };
        let (one, two) = (shared(dir.path()), shared(dir.path()));
        let sealed = one.seal(&"answers", b"alice\ncall-1").unwrap();
        assert_eq!(
            one.open::<String>(&sealed, b"alice\ncall-1").unwrap(),
            "answers"
        );
        // The other instance never opened it, but the directory says it was used.
        assert_eq!(
            two.open::<String>(&sealed, b"alice\ncall-1"),
            Err(StateRefused::Replayed)
        );
        // Without the directory, the other instance would have opened it.
        let alone = StateSeal::new(KEY, DEFAULT_STATE_TTL).unwrap();
        assert_eq!(
            alone.open::<String>(&sealed, b"alice\ncall-1").unwrap(),
            "answers"
        );
        // A directory that cannot record refuses rather than opening unrecorded.
        let gone = dir.path().join("gone");
        let three = shared(&gone);
        std::fs::remove_dir(&gone).unwrap();
        let fresh = one.seal(&"answers", b"b").unwrap();
        assert_eq!(
            three.open::<String>(&fresh, b"b"),
            Err(StateRefused::Unrecorded)
        );
        assert!(
            StateSeal::new(KEY, DEFAULT_STATE_TTL)
                .unwrap()
                .with_shared_redemptions(Path::new("/proc/version/x"))
                .is_err()
        );
    }

    #[test]
    fn an_expired_state_is_refused() {
        let seal = StateSeal::new(KEY, Duration::from_millis(1)).unwrap();
        let sealed = seal.seal(&"answers", b"b").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            seal.open::<String>(&sealed, b"b"),
            Err(StateRefused::Expired)
        );
    }
}
