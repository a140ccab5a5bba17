//! Finding programs by name without ever looking in a relative `PATH` entry.
//!
//! A `PATH` may hold entries that are not absolute: `.`, an empty entry (which the C library
//! reads as `.`), or a bare `bin`. Each is resolved against the directory the lookup happens in,
//! and Bosun starts its children in the workspace (or in a clone it fetched): there, a file the
//! model wrote or a repository shipped — `./git`, `./npx`, `./docker-credential-desktop` — would
//! be run in place of the program the person configured, with that program's grants or, for a
//! credential helper, with none of the sandbox at all. So Bosun keeps only the absolute entries,
//! in their order, for every child it starts ([`Launcher::confine`](crate::Launcher::confine))
//! and for every program it looks up itself ([`find_program`]). Go's `os/exec` refuses such
//! lookups for the same reason (`ErrDot`).

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// `path` with every entry that is not an absolute path left out, the others in their order.
pub fn absolute_entries(path: &OsStr) -> OsString {
    let kept: Vec<PathBuf> = std::env::split_paths(path)
        .filter(|entry| entry.is_absolute())
        .collect();
    // Joining can fail only on an entry holding the separator, which splitting never yields.
    std::env::join_paths(kept).unwrap_or_default()
}

/// Whether `path` has an entry that is not absolute.
pub fn has_relative_entry(path: &OsStr) -> bool {
    std::env::split_paths(path).any(|entry| !entry.is_absolute())
}

/// The absolute path of the program `name` as the child's lookup would find it in `path`, but
/// only through absolute entries. `name` holding a `/` is returned as it is (the caller named
/// a path, not a program to look up). `None` when no absolute entry holds an executable file
/// of that name.
pub fn find_program_in(name: &OsStr, path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;

    if name.is_empty() {
        return None;
    }
    if name.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(name));
    }
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// [`find_program_in`] this process's `PATH` (or `/usr/bin:/bin` when it has none).
pub fn find_program(name: &OsStr) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
    find_program_in(name, &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_empty_entries_are_left_out_in_order() {
        let path = OsStr::new("/usr/local/bin::.:bin:/usr/bin:./tools:/bin");
        assert_eq!(
            absolute_entries(path),
            OsString::from("/usr/local/bin:/usr/bin:/bin")
        );
        assert!(has_relative_entry(path));
        assert!(!has_relative_entry(OsStr::new("/usr/bin:/bin")));
        // A leading or trailing separator is an empty entry, that is `.`.
        assert!(has_relative_entry(OsStr::new(":/usr/bin")));
        assert!(has_relative_entry(OsStr::new("/usr/bin:")));
        assert_eq!(absolute_entries(OsStr::new(":/usr/bin:")), "/usr/bin");
    }

    #[test]
    fn a_program_is_found_only_through_absolute_entries() {
        use std::os::unix::fs::PermissionsExt;

        let cwd = std::env::current_dir().unwrap();
        let dir = tempfile::tempdir_in(&cwd).unwrap();
        let program = dir.path().join("bosun-test-planted");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let relative = dir
            .path()
            .strip_prefix(&cwd)
            .unwrap()
            .as_os_str()
            .to_owned();
        let name = OsStr::new("bosun-test-planted");

        // The same folder, named relative to where the lookup happens, is not looked in.
        let mut path = relative.clone();
        path.push(":/usr/bin");
        assert_eq!(find_program_in(name, &path), None);
        assert_eq!(find_program_in(name, OsStr::new(".:/usr/bin")), None);
        // Named absolute, it is.
        let mut path = dir.path().as_os_str().to_owned();
        path.push(":/usr/bin");
        assert_eq!(find_program_in(name, &path), Some(program.clone()));

        // A file without an execute bit is not a program.
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(find_program_in(name, &path), None);
        // A name with a slash is a path, not a lookup.
        assert_eq!(
            find_program_in(OsStr::new("./x"), OsStr::new("/usr/bin")),
            Some(PathBuf::from("./x"))
        );
        assert_eq!(find_program_in(OsStr::new(""), &path), None);
    }
}
