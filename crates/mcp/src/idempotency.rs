//! Idempotency keys for `tools/call`: a client that retries a call (its connection dropped, a
//! response timed out) sends the same key, and gets the first attempt's result instead of
//! running the call — a command, a write — a second time.
//!
//! The key comes from the `Idempotency-Key` HTTP header or `_meta` `io.bosun/idempotencyKey`,
//! and is its scope's — the server names a session, or a caller where there are no sessions:
//! the same key in another scope is another entry. A key reused for a
//! different call (another tool or other arguments) is refused. While the first attempt runs,
//! a retry waits for it. Only finished calls are kept — one that ended asking for input, or was
//! cancelled, is not, so its retry runs. Results are kept for [`DEFAULT_KEY_TTL`].
//!
//! Without a shared directory, results live in this instance's memory (at most [`MAX_KEYS`]):
//! a retry that reaches another instance runs the call again there. The table is shared fairly
//! between callers: when it is full, the caller holding the most keys loses its oldest, so one
//! caller's keys never push out another's while that other holds no more than its even share
//! (a named client's, with the operator's few clients, is at least [`MAX_KEYS`] divided by
//! their number). With `[serve]
//! idempotency_dir` — a directory every instance reaches, like the redemption directory of
//! [`crate::state`] — each keyed call is *claimed* there before it runs, by creating its claim
//! file exclusively (`link(2)` of a file already written, atomic on local file systems and
//! NFSv3+), and its result is written there (to a temporary file renamed into place) before
//! the answer goes out. An attempt on any instance then finds the result and answers with it,
//! or finds the claim and waits (bounded) for the result; past the wait it answers "in
//! progress, retry" and runs nothing. A claim older than the claim expiry is an instance that
//! died mid-call: it is taken over. Files are named by an HMAC of the caller and the key under
//! the instances' shared key, so a caller cannot find (or be served) another caller's result,
//! and each result is authenticated with the same key and stored redacted like the trace.

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bosun_core::Redactor;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

/// How long a finished call's result answers retries.
pub const DEFAULT_KEY_TTL: Duration = Duration::from_secs(600);

/// How long a claim in the shared directory holds before it is taken for an instance that died
/// mid-call, by default: longer than a call may run.
pub const DEFAULT_CLAIM_TTL: Duration = Duration::from_secs(600);

/// How long an attempt that finds another instance's claim waits for its result by default.
pub const DEFAULT_CLAIM_WAIT: Duration = Duration::from_secs(10);

/// Most keys one instance keeps; the oldest go first.
pub const MAX_KEYS: usize = 4096;

/// Longest key taken, in bytes.
const MAX_KEY_LEN: usize = 255;

/// How often a waiting attempt looks for the result.
const POLL: Duration = Duration::from_millis(50);

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
    /// Another attempt with this key is still running (on this or another instance).
    #[error(
        "a call with this idempotency key is still in progress: retry in a few seconds with the same key (it was not run again)"
    )]
    InProgress,
    /// The shared directory could not be read or written, so whether the call ran is unknown.
    #[error(
        "the idempotency record of this key could not be read or written, so the call was not run: retry with the same key, or tell whoever runs this server to check [serve] idempotency_dir"
    )]
    Unavailable,
}

/// What a keyed call's result is stored as in the shared directory, and read back from.
pub trait Kept: Sized {
    /// The result as JSON, or `None` when it cannot be stored (it is then not kept).
    fn to_kept(&self) -> Option<Value>;
    /// The result read back; `None` when it does not parse.
    fn from_kept(value: Value) -> Option<Self>;
}

impl Kept for u32 {
    fn to_kept(&self) -> Option<Value> {
        Some(Value::from(*self))
    }
    fn from_kept(value: Value) -> Option<Self> {
        value.as_u64().and_then(|v| u32::try_from(v).ok())
    }
}

/// Keyed calls by scope and key.
type Entries<R> = HashMap<(String, String), Arc<Entry<R>>>;

/// The keyed calls in memory, by the caller holding them.
struct Table<R> {
    holders: HashMap<String, Entries<R>>,
    /// Entries of every holder.
    len: usize,
}

impl<R> Table<R> {
    /// Forgets what has expired, and holders left with nothing.
    fn sweep(&mut self, now: Instant, ttl: Duration) {
        for entries in self.holders.values_mut() {
            entries.retain(|_, e| now.duration_since(e.created) < ttl);
        }
        self.holders.retain(|_, entries| !entries.is_empty());
        self.len = self.holders.values().map(HashMap::len).sum();
    }

    /// Makes room for one more entry of `holder`: the oldest entry of another caller holding
    /// more than `holder` goes, else `holder`'s own oldest, so a caller within its even share
    /// is never pushed out by another. Whether an entry went.
    fn evict_for(&mut self, holder: &str) -> bool {
        let own = self.holders.get(holder).map_or(0, HashMap::len);
        let victim = self
            .holders
            .iter()
            .filter(|(id, _)| id.as_str() != holder)
            .map(|(id, entries)| (id, entries.len()))
            .max_by_key(|(_, len)| *len)
            .filter(|(_, len)| *len > own)
            .map_or_else(|| holder.to_owned(), |(id, _)| id.clone());
        let Some(entries) = self.holders.get_mut(&victim) else {
            return false;
        };
        let oldest = entries
            .iter()
            .min_by_key(|(_, e)| e.created)
            .map(|(id, _)| id.clone());
        let gone = oldest.is_some_and(|oldest| entries.remove(&oldest).is_some());
        if entries.is_empty() {
            self.holders.remove(&victim);
        }
        if gone {
            self.len -= 1;
        }
        gone
    }
}

/// The results of keyed calls: in this instance's memory, or in a directory every instance
/// shares.
pub struct Idempotency<R> {
    ttl: Duration,
    /// Most entries kept in memory.
    most: usize,
    table: Mutex<Table<R>>,
    shared: Option<SharedResults>,
}

impl<R: Clone + Kept> Idempotency<R> {
    /// Keeps results for `ttl`, in this instance's memory.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            most: MAX_KEYS,
            table: Mutex::new(Table {
                holders: HashMap::new(),
                len: 0,
            }),
            shared: None,
        }
    }

    /// Keeps at most `most` results in memory (at least one) rather than [`MAX_KEYS`].
    #[must_use]
    pub fn with_most_keys(mut self, most: usize) -> Self {
        self.most = most.max(1);
        self
    }

    /// Keeps results in `shared` instead, where every instance finds them.
    pub fn with_shared(mut self, shared: SharedResults) -> Self {
        self.shared = Some(shared);
        self
    }

    /// [`Idempotency::run_held`] where the scope is its own holder (one caller, no sessions).
    ///
    /// # Errors
    /// As [`Idempotency::run_held`].
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
        self.run_held(caller, caller, key, call, run).await
    }

    /// Runs `run` for `key` in `scope` (a caller, or one of its sessions) naming `call` (a
    /// digest of tool and arguments), or returns the result of the run that already finished
    /// (or is running) under that key. In memory the entry counts in `holder`'s (the caller's)
    /// share of the table.
    /// `run` says whether its result may answer retries (`Ok`) or not (`Err`: asked for input,
    /// cancelled); what it returns either way is this attempt's answer.
    ///
    /// # Errors
    /// [`KeyRefused`] for a malformed key or one used for another call; with a shared
    /// directory, also a call still running elsewhere past the wait, or a directory that
    /// cannot be used (nothing is run then).
    pub async fn run_held<F, Fut>(
        &self,
        holder: &str,
        scope: &str,
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
        if let Some(shared) = &self.shared {
            return shared.run(scope, key, call, self.ttl, run).await;
        }
        let entry = {
            let now = Instant::now();
            let mut table = self
                .table
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let id = (scope.to_owned(), key.to_owned());
            let ttl = self.ttl;
            let held = table
                .holders
                .get(holder)
                .and_then(|entries| entries.get(&id))
                .map(|e| now.duration_since(e.created) < ttl);
            if held == Some(false) {
                if let Some(entries) = table.holders.get_mut(holder) {
                    entries.remove(&id);
                }
                table.len -= 1;
            }
            if held != Some(true) && table.len >= self.most {
                table.sweep(now, ttl);
                while table.len >= self.most && table.evict_for(holder) {}
            }
            let entries = table.holders.entry(holder.to_owned()).or_default();
            let before = entries.len();
            let entry = entries
                .entry(id)
                .or_insert_with(|| {
                    Arc::new(Entry {
                        call: call.to_owned(),
                        created: now,
                        result: OnceCell::new(),
                    })
                })
                .clone();
            let added = entries.len() - before;
            table.len += added;
            entry
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

/// HMAC-SHA256 (RFC 2104) of `parts`, each followed by a zero byte so no two splits of the
/// same bytes agree.
fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut message = Vec::new();
    for part in parts {
        message.extend_from_slice(part);
        message.push(0);
    }
    hmac_sha256(key, &message)
}

/// HMAC-SHA256 (RFC 2104), with the one hash this crate already links.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Milliseconds since the epoch.
///
/// Records are dated in milliseconds, not seconds: with whole seconds, a claim made just before
/// a second turns looked a second old at once, so a one-second claim expired as soon as it was
/// made and a retry elsewhere ran the call again.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// When a record was made, in milliseconds since the epoch: `at_ms`, or for a record an older
/// instance wrote, `at` in whole seconds.
#[derive(Serialize, Deserialize, Clone, Copy)]
struct Dated {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<u64>,
}

impl Dated {
    fn at(now_ms: u64) -> Self {
        Self {
            at_ms: Some(now_ms),
            at: None,
        }
    }

    /// Whether the record is at least `ttl` old at `now_ms` (an undated record is).
    fn older_than(self, ttl: Duration, now_ms: u64) -> bool {
        let Some(made) = self.at_ms.or(self.at.map(|s| s.saturating_mul(1000))) else {
            return true;
        };
        u128::from(now_ms.saturating_sub(made)) >= ttl.as_millis()
    }
}

/// A claim: which call, made when.
#[derive(Serialize, Deserialize)]
struct Claim {
    call: String,
    #[serde(flatten)]
    made: Dated,
}

/// A kept result as written: the body (call, when, result) and its HMAC.
#[derive(Serialize, Deserialize)]
struct Stored {
    body: String,
    mac: String,
}

#[derive(Serialize, Deserialize)]
struct Body {
    call: String,
    #[serde(flatten)]
    made: Dated,
    result: Value,
}

/// What looking for a key's result found.
enum Found<R> {
    /// A kept result for this call.
    Result(R),
    /// Nothing kept (or an expired record, removed).
    Nothing,
}

/// What claiming a key came to.
enum Claimed {
    /// This attempt holds the claim: it runs the call.
    Ours(ClaimGuard),
    /// Another attempt holds it, for this call.
    Theirs,
    /// An instance that died holding it left it, and it was removed: claiming again can take it.
    Abandoned,
}

/// Removes the claim file when the attempt holding it ends, however it ends (a result kept, a
/// result not kept, a cancelled call).
struct ClaimGuard(PathBuf);

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Keyed calls' claims and results in a directory every instance shares (`[serve]
/// idempotency_dir`).
pub struct SharedResults {
    dir: PathBuf,
    key: Vec<u8>,
    claim_ttl: Duration,
    wait: Duration,
    redactor: Arc<Redactor>,
    /// Unique per process, so this instance's temporary files never meet another's.
    prefix: String,
    /// When the directory was last swept of expired records.
    swept: Mutex<Instant>,
    /// Milliseconds since the epoch, the time records are dated by and aged against (another
    /// instance reads them): the system clock, or in tests one they move by hand.
    clock: fn() -> u64,
}

impl std::fmt::Debug for SharedResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedResults")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl SharedResults {
    /// Claims and results in `dir`, named and authenticated with `key` (the instances' shared
    /// request-state key), results redacted by `redactor`; a claim older than `claim_ttl` is
    /// taken over, and an attempt waits at most `wait` for another's result.
    ///
    /// # Errors
    /// A key shorter than 32 bytes, or a directory files cannot be created in.
    pub fn new(
        dir: &Path,
        key: &[u8],
        claim_ttl: Duration,
        wait: Duration,
        redactor: Arc<Redactor>,
    ) -> Result<Self, String> {
        if key.len() < 32 {
            return Err("[serve] idempotency_dir needs the shared key of [serve] state_key_env (at least 32 bytes) on every instance: results are named and authenticated with it".to_owned());
        }
        let prefix = crate::random::hex(8).map_err(|e| format!("reading /dev/urandom: {e}"))?;
        std::fs::create_dir_all(dir)
            .and_then(|()| {
                let probe = dir.join(format!("probe-{prefix}"));
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
                    "[serve] idempotency_dir {}: {e}: it must be a directory every instance can create files in",
                    dir.display()
                )
            })?;
        Ok(Self {
            dir: dir.to_owned(),
            key: key.to_vec(),
            claim_ttl,
            wait,
            redactor,
            prefix,
            swept: Mutex::new(Instant::now() - DEFAULT_KEY_TTL),
            clock: now_ms,
        })
    }

    /// The file name of `caller`'s `key`: an HMAC, so it says nothing of either and no other
    /// caller's key leads to it.
    fn name(&self, caller: &str, key: &str) -> String {
        bosun_core::text::hex(&hmac(
            &self.key,
            &[b"bosun idempotency name", caller.as_bytes(), key.as_bytes()],
        ))
    }

    fn mac(&self, name: &str, body: &str) -> String {
        bosun_core::text::hex(&hmac(
            &self.key,
            &[
                b"bosun idempotency result",
                name.as_bytes(),
                body.as_bytes(),
            ],
        ))
    }

    /// A file this process writes and then links or renames into place.
    fn temporary(&self, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.dir.join(format!(
            "{name}.tmp-{}-{}",
            self.prefix,
            crate::random::hex(6)?
        ));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        Ok(path)
    }

    /// The kept result of `name`, if any; another call's is refused.
    fn result<R: Kept>(
        &self,
        name: &str,
        call: &str,
        ttl: Duration,
    ) -> Result<Found<R>, KeyRefused> {
        let path = self.dir.join(format!("{name}.result"));
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Nothing),
            Err(_) => return Err(KeyRefused::Unavailable),
        };
        let stored: Stored = serde_json::from_str(&text).map_err(|_| KeyRefused::Unavailable)?;
        // A record not written with the instances' key is not trusted to stand for the call.
        if stored.mac != self.mac(name, &stored.body) {
            return Err(KeyRefused::Unavailable);
        }
        let body: Body = serde_json::from_str(&stored.body).map_err(|_| KeyRefused::Unavailable)?;
        if body.made.older_than(ttl, (self.clock)()) {
            let _ = std::fs::remove_file(&path);
            return Ok(Found::Nothing);
        }
        if body.call != call {
            return Err(KeyRefused::OtherCall);
        }
        R::from_kept(body.result)
            .map(Found::Result)
            .ok_or(KeyRefused::Unavailable)
    }

    /// Claims `name` for `call`: created whole or not at all (a written file linked into
    /// place). A claim older than the claim expiry is taken over.
    fn claim(&self, name: &str, call: &str) -> Result<Claimed, KeyRefused> {
        let path = self.dir.join(format!("{name}.claim"));
        let claim = serde_json::to_vec(&Claim {
            call: call.to_owned(),
            made: Dated::at((self.clock)()),
        })
        .map_err(|_| KeyRefused::Unavailable)?;
        let written = self
            .temporary(name, &claim)
            .map_err(|_| KeyRefused::Unavailable)?;
        let linked = std::fs::hard_link(&written, &path);
        let _ = std::fs::remove_file(&written);
        match linked {
            Ok(()) => return Ok(Claimed::Ours(ClaimGuard(path))),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return Err(KeyRefused::Unavailable),
        }
        let theirs: Claim = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|_| KeyRefused::Unavailable)?,
            // Released between our link and our read: claim again.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return self.claim(name, call),
            Err(_) => return Err(KeyRefused::Unavailable),
        };
        if theirs.call != call {
            return Err(KeyRefused::OtherCall);
        }
        if !theirs.made.older_than(self.claim_ttl, (self.clock)()) {
            return Ok(Claimed::Theirs);
        }
        // An instance died holding it. Moved aside under a name of our own before it is
        // removed, so of two instances taking it over only one removes it; if what was moved
        // turns out to be a fresh claim (taken over just now by another), it is put back.
        let aside = self.dir.join(format!("{name}.stale-{}", self.prefix));
        if std::fs::rename(&path, &aside).is_ok() {
            let fresh = std::fs::read(&aside)
                .ok()
                .and_then(|b| serde_json::from_slice::<Claim>(&b).ok())
                .is_some_and(|c| !c.made.older_than(self.claim_ttl, (self.clock)()));
            if fresh {
                let _ = std::fs::hard_link(&aside, &path);
            }
            let _ = std::fs::remove_file(&aside);
            if !fresh {
                return Ok(Claimed::Abandoned);
            }
        }
        Ok(Claimed::Theirs)
    }

    /// Writes `result` for `name`, redacted and authenticated, atomically.
    fn keep(&self, name: &str, call: &str, mut result: Value) -> std::io::Result<()> {
        self.redactor.redact_value(&mut result);
        let body = serde_json::to_string(&Body {
            call: call.to_owned(),
            made: Dated::at((self.clock)()),
            result,
        })?;
        let stored = serde_json::to_vec(&Stored {
            mac: self.mac(name, &body),
            body,
        })?;
        let written = self.temporary(name, &stored)?;
        std::fs::rename(&written, self.dir.join(format!("{name}.result"))).inspect_err(|_| {
            let _ = std::fs::remove_file(&written);
        })
    }

    /// Removes expired results, claims and left-over temporary files, at most once per half
    /// expiry, by whichever call comes first.
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
        // A minute more for clocks that differ between instances.
        let keep = ttl.max(self.claim_ttl) + Duration::from_secs(60);
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

    async fn run<R, F, Fut>(
        &self,
        caller: &str,
        key: &str,
        call: &str,
        ttl: Duration,
        run: F,
    ) -> Result<R, KeyRefused>
    where
        R: Kept,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<R, R>>,
    {
        self.sweep(ttl);
        let name = self.name(caller, key);
        let deadline = Instant::now() + self.wait;
        let mut took_over = false;
        loop {
            if let Found::Result(kept) = self.result(&name, call, ttl)? {
                return Ok(kept);
            }
            match self.claim(&name, call)? {
                Claimed::Ours(guard) => {
                    // Another attempt may have finished between our look and our claim.
                    if let Found::Result(kept) = self.result(&name, call, ttl)? {
                        return Ok(kept);
                    }
                    return Ok(match run().await {
                        Ok(result) => {
                            // Kept before the answer goes out: a retry anywhere finds it. A
                            // result that cannot be written leaves the claim in place, so
                            // retries hear "in progress" until it expires rather than run the
                            // call again at once.
                            let kept = result
                                .to_kept()
                                .is_some_and(|value| self.keep(&name, call, value).is_ok());
                            if !kept {
                                std::mem::forget(guard);
                            }
                            result
                        }
                        // Not kept (asked, cancelled): the claim goes, and a retry runs.
                        Err(this_attempt) => this_attempt,
                    });
                }
                // Claimed again at once, not a poll later (with no wait, not at all): once, so
                // claims that keep looking abandoned (a clock far behind) cannot keep it here.
                Claimed::Abandoned if !took_over => took_over = true,
                Claimed::Theirs | Claimed::Abandoned => {
                    if Instant::now() >= deadline {
                        return Err(KeyRefused::InProgress);
                    }
                    tokio::time::sleep(POLL).await;
                }
            }
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

    fn shared(dir: &Path, claim_ttl: Duration, wait: Duration) -> Idempotency<u32> {
        Idempotency::new(DEFAULT_KEY_TTL).with_shared(store(dir, claim_ttl, wait))
    }

    fn store(dir: &Path, claim_ttl: Duration, wait: Duration) -> SharedResults {
        SharedResults::new(
            dir,
            b"0123456789abcdef0123456789abcdef",
            claim_ttl,
            wait,
            Arc::new(Redactor::default()),
        )
        .unwrap()
    }

    thread_local! {
        /// The time of [`by_hand`], moved by the test on this thread (whose runtime runs the
        /// calls on it too).
        static HAND: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// A clock the test sets, so an age is exactly what the test says, however long the
    /// machine took between two steps.
    fn by_hand() -> u64 {
        HAND.with(std::cell::Cell::get)
    }

    fn set_clock(now_ms: u64) {
        HAND.with(|hand| hand.set(now_ms));
    }

    /// Instances in `dir` whose records are dated and aged by [`by_hand`].
    fn shared_by_hand(dir: &Path, ttl: Duration, claim_ttl: Duration) -> Idempotency<u32> {
        let mut store = store(dir, claim_ttl, Duration::ZERO);
        store.clock = by_hand;
        Idempotency::new(ttl).with_shared(store)
    }

    /// 12:00:00.500 on some day: half a second into a second.
    const NOON_AND_A_HALF: u64 = 1_800_000_000_500;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test cases 2 and 6 (a key longer than a block).
        assert_eq!(
            bosun_core::text::hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            bosun_core::text::hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn instances_sharing_a_directory_run_a_key_once_and_keep_callers_apart() {
        let dir = tempfile::tempdir().unwrap();
        let a = shared(dir.path(), DEFAULT_CLAIM_TTL, Duration::from_secs(5));
        let b = shared(dir.path(), DEFAULT_CLAIM_TTL, Duration::from_secs(5));
        let runs = AtomicU32::new(0);
        let run = || async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(runs.fetch_add(1, Ordering::SeqCst) + 1)
        };
        runtime().block_on(async {
            // At once on two instances: one runs, the other waits for its result.
            let (x, y) = tokio::join!(
                a.run("alice", "k", "call", run),
                b.run("alice", "k", "call", run)
            );
            assert_eq!((x, y), (Ok(1), Ok(1)));
            assert_eq!(b.run("alice", "k", "call", run).await, Ok(1));
            // Another caller's same key finds nothing of alice's.
            assert_eq!(b.run("bob", "k", "call", run).await, Ok(2));
            assert_eq!(
                a.run("alice", "k", "other", run).await,
                Err(KeyRefused::OtherCall)
            );
        });
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        // Nothing in the directory names a caller or a key.
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(!name.contains("alice") && !name.contains("bob"), "{name}");
        }
    }

    #[test]
    fn a_claim_left_by_a_dead_instance_answers_in_progress_then_expires() {
        let dir = tempfile::tempdir().unwrap();
        let claim_ttl = Duration::from_secs(1);
        let dead = shared_by_hand(dir.path(), DEFAULT_KEY_TTL, claim_ttl);
        let alive = shared_by_hand(dir.path(), DEFAULT_KEY_TTL, claim_ttl);
        set_clock(NOON_AND_A_HALF);
        let store = dead.shared.as_ref().unwrap();
        let name = store.name("alice", "k");
        let Ok(Claimed::Ours(guard)) = store.claim(&name, "call") else {
            panic!("claimed");
        };
        // The instance dies mid-call: its claim stays.
        std::mem::forget(guard);
        runtime().block_on(async {
            // Held until the last millisecond of the claim expiry, then taken over.
            set_clock(NOON_AND_A_HALF + 999);
            assert_eq!(
                alive.run("alice", "k", "call", || async { Ok(5) }).await,
                Err(KeyRefused::InProgress)
            );
            set_clock(NOON_AND_A_HALF + 1000);
            assert_eq!(
                alive.run("alice", "k", "call", || async { Ok(6) }).await,
                Ok(6)
            );
        });
    }

    #[test]
    fn a_record_made_just_before_a_second_turned_is_not_a_second_old() {
        // Made 501 ms ago, in the second before this one: with whole seconds this was "one
        // second old", so a claim of 1 s had expired the moment it was made.
        let now = NOON_AND_A_HALF;
        let made = Dated::at(now - now % 1000 - 1);
        assert!(!made.older_than(Duration::from_secs(1), now));
        assert!(!made.older_than(Duration::from_millis(502), now));
        assert!(made.older_than(Duration::from_millis(501), now));
        assert!(made.older_than(Duration::ZERO, now));
        // A record an older instance dated in whole seconds is still read, and ages.
        let old: Claim =
            serde_json::from_str(&format!(r#"{{"call":"c","at":{}}}"#, now / 1000 - 10)).unwrap();
        assert!(old.made.older_than(Duration::from_secs(5), now));
        assert!(!old.made.older_than(Duration::from_secs(60), now));
        let undated: Claim = serde_json::from_str(r#"{"call":"c"}"#).unwrap();
        assert!(undated.made.older_than(Duration::from_secs(86_400), now));
        // The system clock dates a record now: not even a millisecond old.
        let dated = Dated::at(now_ms());
        assert!(!dated.older_than(Duration::from_secs(3600), now_ms()));
    }

    #[test]
    fn a_claim_made_just_before_a_second_turned_is_held_by_another_instance() {
        // Another instance's claim, made 501 ms ago in the second before this one, for a claim
        // expiry of 1 s: a retry here must hear "in progress", never run the call.
        let dir = tempfile::tempdir().unwrap();
        let retry = shared_by_hand(dir.path(), DEFAULT_KEY_TTL, Duration::from_secs(1));
        let name = retry.shared.as_ref().unwrap().name("alice", "k");
        std::fs::write(
            dir.path().join(format!("{name}.claim")),
            format!(
                r#"{{"call":"call","at_ms":{}}}"#,
                NOON_AND_A_HALF - NOON_AND_A_HALF % 1000 - 1
            ),
        )
        .unwrap();
        set_clock(NOON_AND_A_HALF);
        runtime().block_on(async {
            assert_eq!(
                retry.run("alice", "k", "call", || async { Ok(5) }).await,
                Err(KeyRefused::InProgress)
            );
        });
    }

    #[test]
    fn a_result_kept_for_less_than_a_second_answers_a_retry() {
        let dir = tempfile::tempdir().unwrap();
        let keys = shared_by_hand(
            dir.path(),
            Duration::from_millis(800),
            Duration::from_secs(1),
        );
        set_clock(NOON_AND_A_HALF);
        runtime().block_on(async {
            assert_eq!(keys.run("a", "k", "c", || async { Ok(1) }).await, Ok(1));
            set_clock(NOON_AND_A_HALF + 799);
            assert_eq!(keys.run("a", "k", "c", || async { Ok(2) }).await, Ok(1));
            // Kept 800 ms: gone, and the call runs again.
            set_clock(NOON_AND_A_HALF + 800);
            assert_eq!(keys.run("a", "k", "c", || async { Ok(3) }).await, Ok(3));
        });
    }

    #[test]
    fn a_result_not_written_with_the_key_is_refused_and_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let keys = shared(dir.path(), DEFAULT_CLAIM_TTL, Duration::from_secs(1));
        runtime().block_on(async {
            assert_eq!(keys.run("alice", "k", "c", || async { Ok(1) }).await, Ok(1));
        });
        let name = keys.shared.as_ref().unwrap().name("alice", "k");
        let path = dir.path().join(format!("{name}.result"));
        let text = std::fs::read_to_string(&path).unwrap();
        let altered = text.replace(r#"\"result\":1"#, r#"\"result\":9"#);
        assert_ne!(altered, text);
        std::fs::write(&path, altered).unwrap();
        runtime().block_on(async {
            assert_eq!(
                keys.run("alice", "k", "c", || async { Ok(2) }).await,
                Err(KeyRefused::Unavailable)
            );
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
