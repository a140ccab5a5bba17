//! Bosun's one way to write a file of its own (trust store, sessions, user config, caches), and
//! the sweep at start that removes what a killed writer left behind.
//!
//! A write goes to a temporary file `.<name>.<random>.tmp` beside the target, which the writer
//! holds an exclusive lock on until it is renamed into place. A process killed mid-write (even
//! by `SIGKILL`) leaves that file, but the kernel drops its lock. The sweep removes only files
//! that are provably abandoned: named as Bosun's writers name them, regular files, untouched for
//! [`STALE_AFTER`] and not locked by anyone. It never follows a symbolic link, never lists
//! `$BOSUN_HOME/runs` (traces are created in place, and there are many), and never enters
//! `$BOSUN_HOME/plugins`, whose files are the authors', not Bosun's — except for the
//! directories an install, a replacement or a removal has in flight
//! ([`crate::discovery::TRANSIENT_PREFIXES`]) whose process is gone: a staging copy or a plugin
//! being removed is deleted, and a previous version kept aside is put back when nothing took its
//! place (a kill between the two renames of a swap), so a crash leaves the old version or the
//! new one, never neither. An install from a registry holds its staging folder's
//! [`crate::discovery::STAGING_OWNER_FILE`] locked while it lives: a held lock is never swept,
//! and a free one whose process is gone is settled at once rather than after [`STALE_AFTER`].
//! `$BOSUN_HOME/skills` is settled the same way. The installs in flight are settled at every
//! start; the walk through the rest of the home runs at most once per [`WALK_EVERY`] (the
//! modification time of `$BOSUN_HOME/.swept` says when it last ran), so a start does not list
//! every session and checkpoint file. The sidecar lock files of the state files
//! (`.<name>.lock`, taken while a state file is read, changed and written) are none of the
//! temporary names and are never swept.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long a temporary file must be untouched before the sweep may remove it. The lock is the
/// proof for [`write_atomic`]'s files; the age covers writers that take no lock (the compile
/// cache's and the sandbox probe's, which finish in seconds) and the instant between a file's
/// creation and its lock.
pub const STALE_AFTER: Duration = Duration::from_secs(10 * 60);

/// Most directory entries one sweep looks at, so a huge home never slows a start.
const MAX_SWEEP_ENTRIES: usize = 20_000;

/// Deepest directory under the home the sweep enters (`cache/js/…` is depth 2).
const MAX_SWEEP_DEPTH: usize = 4;

/// How often the walk through the home for writers' temporaries runs: a temporary is removed
/// only once untouched for [`STALE_AFTER`], so walking more often would find next to nothing
/// new, while every start paid for listing every session and checkpoint file (up to
/// [`MAX_SWEEP_ENTRIES`]). A leftover stays at most twice [`STALE_AFTER`].
const WALK_EVERY: Duration = STALE_AFTER;

/// `$BOSUN_HOME/.swept`, whose modification time is when the walk last ran.
const SWEPT_STAMP: &str = ".swept";

/// `$BOSUN_HOME/runs`, which the sweep never lists: a run's trace is created in place under its
/// own name, never through a temporary, so nothing there is a writer's leftover — and the
/// directory holds every trace ever written, which every start would otherwise read through.
const UNSWEPT_RUNS: &str = "runs";

/// Creates a directory (and parents) readable only by the owner.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Replaces `path` with `contents` so that a reader sees the old file or the new one, never a
/// mix, and a crash or error leaves the old file ([`bosun_fsio::write_atomic`]: a temporary
/// file created exclusively under an unpredictable name, mode 0600, locked while it exists,
/// synced, renamed over `path`, the directory synced). The directory is created (mode 0700) if
/// missing.
///
/// # Errors
/// Any I/O failure; the old file is then untouched.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    create_private_dir(dir_of(path))?;
    bosun_fsio::write_atomic(path, contents)
}

/// Creates `path` holding `contents` only if nothing is at that name, atomically
/// ([`bosun_fsio::write_new`]): an existing file or link is never replaced, even one another
/// process created a moment before. The directory is created (mode 0700) if missing.
///
/// # Errors
/// [`std::io::ErrorKind::AlreadyExists`] when something is at `path`; any other I/O failure.
pub fn write_new(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    create_private_dir(dir_of(path))?;
    bosun_fsio::write_new(path, contents)
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Whether `name` is a temporary name one of Bosun's writers gives: [`write_atomic`]'s
/// `.<name>.<random>.tmp`, the compile cache's `.tmp-<random>.cwasm` and the sandbox probe
/// cache's `.tmp<random>`, `<random>` being tempfile's six letters and digits.
pub fn is_temporary_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    let random = |s: &str| s.len() == 6 && s.chars().all(|c| c.is_ascii_alphanumeric());
    if let Some(stem) = rest.strip_suffix(".tmp") {
        // `<name>.<random>`, where `<name>` is not empty.
        return stem
            .rsplit_once('.')
            .is_some_and(|(target, r)| !target.is_empty() && random(r));
    }
    if let Some(r) = rest
        .strip_prefix("tmp-")
        .and_then(|r| r.strip_suffix(".cwasm"))
    {
        return random(r);
    }
    rest.strip_prefix("tmp").is_some_and(random)
}

/// Removes what a killed Bosun left in `home` and returns how many: at every start, the
/// installs, replacements and removals in flight in `plugins` and `skills` (a kill there can
/// leave a plugin missing until settled); at most once per [`WALK_EVERY`], the writers'
/// temporaries anywhere else (see the module doc for which ones). Best effort: a file that
/// cannot be read, locked or removed is left as it is.
pub fn sweep_stale_temporaries(home: &Path) -> usize {
    let now = SystemTime::now();
    let mut removed = 0;
    for authors in ["plugins", "skills"] {
        let dir = home.join(authors);
        // Only a real directory: a link is not Bosun's to settle.
        if dir.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            removed += sweep_install_staging(&dir, now);
        }
    }
    if walk_is_due(home, now) {
        mark_walked(home);
        removed += sweep_temporaries(home, now);
    }
    removed
}

/// Whether the temporaries walk is due: the stamp is missing, not a regular file, at least
/// [`WALK_EVERY`] old, or dated after `now` (the clock was set back).
fn walk_is_due(home: &Path, now: SystemTime) -> bool {
    let Ok(meta) = home.join(SWEPT_STAMP).symlink_metadata() else {
        return true;
    };
    let Ok(modified) = meta.modified() else {
        return true;
    };
    !meta.is_file()
        || now
            .duration_since(modified)
            .map_or(true, |age| age >= WALK_EVERY)
}

/// Dates the stamp now, before the walk, so starts running at the same moment do not all walk.
/// A home that cannot be written keeps no stamp, and every start walks, as before.
fn mark_walked(home: &Path) {
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(true).write(true);
    // O_NONBLOCK: a FIFO in the stamp's place fails the open instead of waiting for a reader.
    #[cfg(unix)]
    options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .mode(0o600);
    if let Ok(stamp) = options.open(home.join(SWEPT_STAMP)) {
        let _ = stamp.set_modified(SystemTime::now());
    }
}

/// The walk through `home` (never `runs`, `plugins` or `skills`) for writers' temporaries.
fn sweep_temporaries(home: &Path, now: SystemTime) -> usize {
    let mut budget = MAX_SWEEP_ENTRIES;
    let mut removed = 0;
    let mut pending = vec![(home.to_owned(), 0usize)];
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if budget == 0 {
                return removed;
            }
            budget -= 1;
            // The entry's own type: a symbolic link is neither entered nor removed.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if kind.is_dir() {
                let settled_apart = name == "plugins" || name == "skills";
                if depth == 0 && (settled_apart || name == UNSWEPT_RUNS) {
                    continue;
                } else if depth < MAX_SWEEP_DEPTH {
                    pending.push((entry.path(), depth + 1));
                }
                continue;
            }
            if kind.is_file()
                && name.to_str().is_some_and(is_temporary_name)
                && remove_if_abandoned(&entry.path(), now)
            {
                removed += 1;
            }
        }
    }
    removed
}

/// Settles what installs, replacements and removals left in `plugins` (or `skills`) when killed
/// ([`crate::discovery::transient`]), for those whose process is gone: a previous version kept
/// aside (`.replaced-<name>-<pid>`) is renamed back to `<name>` when nothing is there — at
/// once, since the rename cannot succeed once anything took its place — and every other
/// leftover is deleted: at once when its install's owner lock is free and its process gone,
/// else once untouched for [`STALE_AFTER`] (a pid seen from another PID namespace may look
/// gone). An owner lock still held is a live install: nothing of it is touched. Nothing else
/// of the authors' directory is looked at.
fn sweep_install_staging(plugins: &Path, now: SystemTime) -> usize {
    use crate::discovery::{Transient, transient};
    let Ok(entries) = std::fs::read_dir(plugins) else {
        return 0;
    };
    let mut removed = 0;
    let mut in_flight: Vec<(std::fs::DirEntry, String)> = entries
        .flatten()
        .take(MAX_SWEEP_ENTRIES)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            transient(&name)?;
            Some((e, name))
        })
        .collect();
    // Staging folders last: their owner lock tells about the swap of the same install.
    in_flight.sort_by_key(|(_, name)| name.starts_with(crate::discovery::INSTALL_STAGING_PREFIX));
    for (entry, file_name) in in_flight {
        let Some((kind, plugin, pid)) = transient(&file_name) else {
            continue;
        };
        // `DirEntry::metadata` does not follow links: only a real directory is Bosun's.
        let Some(meta) = entry.metadata().ok().filter(std::fs::Metadata::is_dir) else {
            continue;
        };
        let staging = plugins.join(format!(
            "{}{plugin}-{pid}",
            crate::discovery::INSTALL_STAGING_PREFIX
        ));
        let owner = owner_lock(&staging.join(crate::discovery::STAGING_OWNER_FILE));
        if owner == Owner::Held || process_is_alive(pid) && owner != Owner::Free {
            continue;
        }
        let target = plugins.join(plugin);
        if kind == Transient::Replaced
            && crate::discovery::is_local_name(plugin)
            && target.symlink_metadata().is_err()
        {
            if std::fs::rename(entry.path(), &target).is_ok() {
                removed += 1;
            }
            continue;
        }
        let abandoned = owner == Owner::Free && !process_is_alive(pid);
        let untouched = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if (abandoned || untouched) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The state of an install's owner lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// No lock file (an install that takes none, or the lock not made yet).
    Absent,
    /// Its process holds it: the install is alive.
    Held,
    /// Nobody holds it.
    Free,
}

fn owner_lock(path: &Path) -> Owner {
    // Not through a link, never waiting on a FIFO planted as the lock: a regular file only.
    let Ok((file, _)) = bosun_fsio::open_regular(path) else {
        return Owner::Absent;
    };
    match file.try_lock() {
        Ok(()) => Owner::Free,
        Err(_) => Owner::Held,
    }
}

/// Whether a process with this id exists, as `/proc` shows it; without `/proc` every process
/// counts as alive, so nothing is removed.
fn process_is_alive(pid: i32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// Removes `path` when it has been untouched for [`STALE_AFTER`] and nobody holds its lock
/// (a writer never opens an existing temporary name again, so a free lock on an old file means
/// its writer is gone).
fn remove_if_abandoned(path: &Path, now: SystemTime) -> bool {
    let Ok((file, meta)) = bosun_fsio::open_regular(path) else {
        return false;
    };
    let untouched = meta
        .modified()
        .ok()
        .and_then(|m| now.duration_since(m).ok())
        .is_some_and(|age| age >= STALE_AFTER);
    if !untouched || file.try_lock().is_err() {
        return false;
    }
    std::fs::remove_file(path).is_ok()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fs::File;

    use super::*;

    /// Writes `path` and dates it `age` ago.
    fn leftover(path: &Path, age: Duration) -> File {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        let file = File::create(path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
        file
    }

    const OLD: Duration = Duration::from_secs(3600);

    #[test]
    fn temporary_names_are_the_writers_names_only() {
        for name in [
            ".config.toml.a1B2c3.tmp",
            ".trust.toml.Zz9yX8.tmp",
            ".0190ab.json.abcdef.tmp",
            ".tmp-q1w2e3.cwasm",
            ".tmpQ1w2E3",
        ] {
            assert!(is_temporary_name(name), "{name}");
        }
        for name in [
            "config.toml",
            "config.toml.a1b2c3.tmp",
            "..a1b2c3.tmp",
            ".config.toml.tmp",
            ".config.toml.a1b2.tmp",
            ".config.toml.a1-b2c.tmp",
            ".tmpfiles",
            ".tmp-abc.cwasm",
            ".config.toml.bak",
            ".tmp",
        ] {
            assert!(!is_temporary_name(name), "{name}");
        }
    }

    /// The traces of every run are not listed at every start: nothing in `runs` is ever
    /// written through a temporary, so a temporary's name there is not Bosun's and is left.
    #[test]
    fn sweep_does_not_list_the_traces() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let in_runs = h.join("runs/.0190ab.jsonl.a1b2c3.tmp");
        leftover(&in_runs, OLD);
        leftover(&h.join("runs/0190ab.jsonl"), OLD);
        let in_sessions = h.join("sessions/.0190ab.json.a1b2c3.tmp");
        leftover(&in_sessions, OLD);
        assert_eq!(sweep_stale_temporaries(h), 1);
        assert!(in_runs.exists());
        assert!(!in_sessions.exists());
    }

    /// Every start settles the installs in flight, but walks the rest of the home for
    /// temporaries at most once per [`WALK_EVERY`], so a home with many sessions and
    /// checkpoints does not slow every command down.
    #[test]
    fn the_home_is_walked_once_per_interval_and_installs_are_settled_at_every_start() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        assert_eq!(sweep_stale_temporaries(h), 0);
        let stamp = h.join(SWEPT_STAMP);
        assert!(stamp.is_file(), "the walk leaves its stamp");

        let in_sessions = h.join("sessions/.0190ab.json.a1b2c3.tmp");
        leftover(&in_sessions, OLD);
        let dead_install = h.join("plugins/.install-web-99999999");
        std::fs::create_dir_all(&dead_install).unwrap();
        File::open(&dead_install)
            .unwrap()
            .set_modified(SystemTime::now() - OLD)
            .unwrap();
        assert_eq!(sweep_stale_temporaries(h), 1);
        assert!(
            !dead_install.exists(),
            "installs are settled at every start"
        );
        assert!(in_sessions.exists(), "the walk waits for its interval");

        // Once the interval has passed, the next start walks.
        File::options()
            .write(true)
            .open(&stamp)
            .unwrap()
            .set_modified(SystemTime::now() - WALK_EVERY - Duration::from_secs(1))
            .unwrap();
        assert_eq!(sweep_stale_temporaries(h), 1);
        assert!(!in_sessions.exists());
    }

    /// A stamp that cannot be believed does not stop the walk: dated in the future (the clock
    /// was set back), a directory, or a link (which is not followed, nor written through).
    #[test]
    fn a_stamp_that_cannot_be_believed_does_not_stop_the_walk() {
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("target");
        std::fs::write(&target, "theirs").unwrap();
        let future = |stamp: &Path| {
            File::create(stamp)
                .unwrap()
                .set_modified(SystemTime::now() + OLD)
                .unwrap();
        };
        let directory = |stamp: &Path| std::fs::create_dir(stamp).unwrap();
        let link = |stamp: &Path| std::os::unix::fs::symlink(&target, stamp).unwrap();
        for (what, make) in [
            ("future", &future as &dyn Fn(&Path)),
            ("directory", &directory),
            ("link", &link),
        ] {
            let home = tempfile::tempdir().unwrap();
            let h = home.path();
            make(&h.join(SWEPT_STAMP));
            let left = h.join("sessions/.0190ab.json.a1b2c3.tmp");
            leftover(&left, OLD);
            assert_eq!(sweep_stale_temporaries(h), 1, "{what}");
            assert!(!left.exists(), "{what}");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
    }

    #[test]
    fn sweep_removes_only_abandoned_temporaries() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let abandoned = [
            h.join(".config.toml.a1b2c3.tmp"),
            h.join(".trust.toml.d4e5f6.tmp"),
            h.join("sessions/.0190ab.json.g7h8i9.tmp"),
            h.join("cache/.tmp-j1k2l3.cwasm"),
            h.join("cache/.tmpm4n5o6"),
            h.join("mcp-credentials/.srv.json.p7q8r9.tmp"),
        ];
        for path in &abandoned {
            leftover(path, OLD);
        }
        // In flight: locked by a live writer however old, or written a moment ago.
        let locked = h.join(".config.toml.s1t2u3.tmp");
        let held = leftover(&locked, OLD);
        held.try_lock().unwrap();
        let fresh = h.join(".trust.toml.v4w5x6.tmp");
        leftover(&fresh, Duration::ZERO);
        // Not Bosun's: the authors' plugin files, other names, and links.
        let authors = h.join("plugins/web/.notes.a1b2c3.tmp");
        leftover(&authors, OLD);
        let other = h.join(".config.toml.bak");
        leftover(&other, OLD);
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join(".config.toml.y7z8a9.tmp");
        leftover(&target, OLD);
        std::os::unix::fs::symlink(&target, h.join(".trust.toml.b1c2d3.tmp")).unwrap();

        assert_eq!(sweep_stale_temporaries(h), abandoned.len());
        for path in &abandoned {
            assert!(!path.exists(), "{} was left", path.display());
        }
        for path in [&locked, &fresh, &authors, &other, &target] {
            assert!(path.exists(), "{} was removed", path.display());
        }
        assert!(h.join(".trust.toml.b1c2d3.tmp").symlink_metadata().is_ok());
        drop(held);
        // The writer is gone: its lock with it (at the next walk, due once the stamp is gone).
        std::fs::remove_file(h.join(SWEPT_STAMP)).unwrap();
        assert_eq!(sweep_stale_temporaries(h), 1);
        assert!(!locked.exists());
    }

    #[test]
    fn an_installs_staging_is_removed_only_when_its_process_is_gone() {
        let home = tempfile::tempdir().unwrap();
        let plugins = home.path().join("plugins");
        let staging = |name: &str, age: Duration| {
            let dir = plugins.join(name);
            std::fs::create_dir_all(dir.join("lib")).unwrap();
            std::fs::write(dir.join("lib/index.mjs"), "x").unwrap();
            File::open(&dir)
                .unwrap()
                .set_modified(SystemTime::now() - age)
                .unwrap();
            dir
        };
        // A pid above the kernel's largest (4194304) is never alive.
        let dead = staging(".install-web-99999999", OLD);
        let alive = staging(&format!(".install-web-{}", std::process::id()), OLD);
        let fresh = staging(".install-fresh-99999999", Duration::ZERO);
        let authors = staging("web", OLD);
        let odd = staging(".install-web-notapid", OLD);
        assert_eq!(sweep_stale_temporaries(home.path()), 1);
        assert!(!dead.exists());
        for kept in [&alive, &fresh, &authors, &odd] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
    }

    #[test]
    fn a_dead_installs_staging_goes_at_once_by_its_free_owner_lock_and_a_held_one_stays() {
        let home = tempfile::tempdir().unwrap();
        let staging = |root: &str, name: &str| {
            let dir = home.path().join(root).join(name);
            std::fs::create_dir_all(dir.join("skills/x")).unwrap();
            std::fs::write(dir.join("skills/x/SKILL.md"), "x").unwrap();
            let owner = File::create(dir.join(crate::discovery::STAGING_OWNER_FILE)).unwrap();
            (dir, owner)
        };
        // Written a moment ago, so only the lock can tell: a crashed install (lock free, pid
        // gone) in skills and in plugins, with the version it had moved aside.
        let (dead_skill, _) = staging("skills", ".install-notes-99999999");
        let (dead_plugin, _) = staging("plugins", ".install-web-99999999");
        std::fs::create_dir_all(home.path().join("plugins/web")).unwrap();
        let aside = home.path().join("plugins/.replaced-web-99999999");
        std::fs::create_dir_all(&aside).unwrap();
        // A live install holds its lock, however its pid looks from here.
        let (held, owner) = staging("plugins", ".install-api-99999998");
        owner.try_lock().unwrap();
        let old = File::open(&held).unwrap();
        old.set_modified(SystemTime::now() - OLD).unwrap();
        // Between creating its lock file and locking it: its process is alive.
        let (starting, _) = staging("skills", &format!(".install-new-{}", std::process::id()));

        assert_eq!(sweep_stale_temporaries(home.path()), 3);
        for gone in [&dead_skill, &dead_plugin, &aside] {
            assert!(!gone.exists(), "{} was left", gone.display());
        }
        for kept in [&held, &starting] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
        drop(owner);
        assert_eq!(sweep_stale_temporaries(home.path()), 1);
        assert!(!held.exists());
    }

    #[test]
    fn a_fifo_as_an_owner_lock_or_the_sweep_stamp_does_not_hold_up_the_sweep() {
        use bosun_fsio::testing::{plant_fifo, returns_within_guard};
        let home = tempfile::tempdir().unwrap();
        let staging = home.path().join("plugins/.install-web-99999999");
        std::fs::create_dir_all(&staging).unwrap();
        let owner = staging.join(crate::discovery::STAGING_OWNER_FILE);
        plant_fifo(&owner);
        let stamp = home.path().join(SWEPT_STAMP);
        plant_fifo(&stamp);
        let sweeping = home.path().to_owned();
        let removed = returns_within_guard(&owner, move || sweep_stale_temporaries(&sweeping));
        // No lock to read and written a moment ago: the staging stays, as one without a lock.
        assert_eq!(removed, 0);
        assert!(staging.exists());
        let sweeping = home.path().to_owned();
        returns_within_guard(&stamp, move || sweep_stale_temporaries(&sweeping));
    }

    #[test]
    fn a_killed_swap_leaves_the_old_version_or_the_new_never_neither() {
        let home = tempfile::tempdir().unwrap();
        let plugins = home.path().join("plugins");
        let dir = |name: &str, content: &str, age: Duration| {
            let dir = plugins.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("mod.ts"), content).unwrap();
            File::open(&dir)
                .unwrap()
                .set_modified(SystemTime::now() - age)
                .unwrap();
            dir
        };
        // Killed between the renames: the old version only aside, the new one staged.
        let aside = dir(".replaced-web-99999999", "old", Duration::ZERO);
        let new = dir(".new-web-99999999", "new", OLD);
        // Killed after both renames: the new one in place, the old one still aside.
        dir("api", "new", OLD);
        let stale_aside = dir(".replaced-api-99999999", "old", OLD);
        // Killed while removing, and while staging a registry install.
        let removing = dir(".removing-gone-99999999", "x", OLD);
        let staging = dir(".install-reg-99999999", "x", OLD);
        // A live process's swap is left alone.
        let live = dir(
            &format!(".replaced-live-{}", std::process::id()),
            "old",
            OLD,
        );
        let (found, _) = crate::discovery::discover_user(home.path(), &BTreeMap::new());
        let listed: Vec<&str> = found.iter().map(|d| d.local_name.as_str()).collect();
        assert_eq!(listed, ["api"], "nothing in flight is listed as a plugin");

        assert_eq!(sweep_stale_temporaries(home.path()), 5);
        assert_eq!(
            std::fs::read_to_string(plugins.join("web/mod.ts")).unwrap(),
            "old"
        );
        assert_eq!(
            std::fs::read_to_string(plugins.join("api/mod.ts")).unwrap(),
            "new"
        );
        for gone in [&aside, &new, &stale_aside, &removing, &staging] {
            assert!(!gone.exists(), "{} was left", gone.display());
        }
        assert!(live.exists());
    }

    #[test]
    fn a_write_in_flight_holds_its_lock_and_leaves_nothing() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("config.toml");
        write_atomic(&path, b"a = 1\n").unwrap();
        write_atomic(&path, b"a = 2\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a = 2\n");
        let names: Vec<_> = std::fs::read_dir(home.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["config.toml"]);
    }
}
