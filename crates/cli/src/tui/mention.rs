//! The `@path` popup: while the word before the cursor starts with `@`, the workspace's files
//! that match what follows it, fuzzily (the letters in order, best at word starts and in the
//! file's name), are listed over the input; Up/Down choose, Enter puts the path in, Esc closes
//! the list. The files are walked once per popup from the workspace root, honouring
//! `.gitignore`, `.ignore` and git's excludes, never following a link and never listing one
//! that leads outside the workspace. Choosing only writes the path into the input: the model
//! reads the file through the chokepoint like any other — except an image (`@shot.png`), which
//! is attached to the request when it is sent ([`attach_images`], read beneath the root by
//! `bosun_agent::attach`); a path to an image pasted or dropped into the input becomes its
//! mention ([`pasted_image`]).

use std::path::Path;

/// Most files walked for the list.
const MAX_FILES: usize = 20_000;
/// Most matches kept (the popup shows the first few).
const MAX_MATCHES: usize = 50;

/// The popup's state.
#[derive(Debug, Default)]
pub(crate) struct Mentions {
    /// The workspace's files, walked when the popup opened; `None` while it is closed.
    files: Option<Vec<String>>,
    /// The list on screen, for the `@` word being typed.
    pub popup: Option<Popup>,
    /// The `@` word Esc closed the list for: it stays closed until the word changes.
    dismissed: Option<String>,
}

/// The list on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Popup {
    /// What follows the `@`.
    pub query: String,
    /// The matching files, best first.
    pub matches: Vec<String>,
    /// Which one Enter takes.
    pub selected: usize,
}

impl Mentions {
    /// Follows the input: `word` is what follows the `@` before the cursor, if the word there
    /// starts with one. Opens, narrows or closes the list.
    pub(crate) fn follow(&mut self, root: &Path, word: Option<&str>) {
        let Some(query) = word else {
            self.files = None;
            self.popup = None;
            self.dismissed = None;
            return;
        };
        if self.dismissed.as_deref() == Some(query) {
            return;
        }
        self.dismissed = None;
        if self.popup.as_ref().is_some_and(|p| p.query == query) {
            return;
        }
        let files = self.files.get_or_insert_with(|| workspace_files(root));
        let matches = ranked(files, query);
        self.popup = (!matches.is_empty()).then(|| Popup {
            query: query.to_owned(),
            matches,
            selected: 0,
        });
    }

    /// Esc: closes the list for this word.
    pub(crate) fn dismiss(&mut self) {
        if let Some(popup) = self.popup.take() {
            self.dismissed = Some(popup.query);
        }
    }

    /// Moves the choice by `by` rows, staying in the list.
    pub(crate) fn select(&mut self, by: isize) {
        if let Some(popup) = &mut self.popup {
            let last = popup.matches.len().saturating_sub(1);
            popup.selected = popup.selected.saturating_add_signed(by).min(last);
        }
    }

    /// The chosen path, closing the list.
    pub(crate) fn take(&mut self) -> Option<String> {
        let popup = self.popup.take()?;
        self.files = None;
        popup.matches.into_iter().nth(popup.selected)
    }
}

/// The files under `root`, relative, with `/` between parts: ignore files honoured (also
/// outside a git repository), hidden files included but `.git` never, links not followed and a
/// link to a file outside `root` left out. At most [`MAX_FILES`].
pub(crate) fn workspace_files(root: &Path) -> Vec<String> {
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    let mut files = Vec::new();
    for entry in walker.filter_map(Result::ok) {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            continue;
        }
        if kind.is_symlink()
            && !entry
                .path()
                .canonicalize()
                .is_ok_and(|target| target.starts_with(&canonical_root) && target.is_file())
        {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(parts) = relative
            .components()
            .map(|c| c.as_os_str().to_str())
            .collect::<Option<Vec<&str>>>()
        else {
            continue;
        };
        files.push(parts.join("/"));
        if files.len() >= MAX_FILES {
            break;
        }
    }
    files.sort();
    files
}

/// The files matching `query`, best first, at most [`MAX_MATCHES`].
pub(crate) fn ranked(files: &[String], query: &str) -> Vec<String> {
    let mut scored: Vec<(i64, &String)> = files
        .iter()
        .filter_map(|file| score(file, query).map(|s| (s, file)))
        .collect();
    scored.sort_by(|(a, x), (b, y)| b.cmp(a).then(x.len().cmp(&y.len())).then(x.cmp(y)));
    scored
        .into_iter()
        .take(MAX_MATCHES)
        .map(|(_, f)| f.clone())
        .collect()
}

/// How well `path` matches `query` (its characters in order, case ignored), or `None`.
/// Consecutive characters, the start of a part or word, and the file's own name count for more;
/// a longer path for a little less.
pub(crate) fn score(path: &str, query: &str) -> Option<i64> {
    let chars: Vec<char> = path.chars().collect();
    let name_start = path.rfind('/').map_or(0, |i| path[..=i].chars().count());
    let mut at = 0;
    let mut total: i64 = 0;
    let mut previous: Option<usize> = None;
    for wanted in query.chars() {
        let wanted = wanted.to_ascii_lowercase();
        let found = (at..chars.len()).find(|&i| chars[i].to_ascii_lowercase() == wanted)?;
        let mut points = 1;
        if previous.is_some_and(|p| p + 1 == found) {
            points += 5;
        }
        if found == 0 || matches!(chars[found - 1], '/' | '_' | '-' | '.' | ' ') {
            points += 4;
        }
        if found >= name_start {
            points += 2;
        }
        total += points;
        previous = Some(found);
        at = found + 1;
    }
    Some(total * 100 - i64::try_from(chars.len()).unwrap_or(i64::MAX / 200))
}

/// The images a task mentions (`@shot.png`, by the extension), each read beneath the
/// workspace root and checked by its bytes; the first that cannot be attached is the error.
pub(crate) fn attach_images(
    workspace: &bosun_host::Workspace,
    task: &str,
) -> Result<Vec<bosun_models::Image>, bosun_agent::attach::AttachError> {
    image_mentions(task)
        .into_iter()
        .map(|path| bosun_agent::attach::attach_image(workspace, path))
        .collect()
}

/// The paths of the `@` words of `task` that name images.
pub(crate) fn image_mentions(task: &str) -> Vec<&str> {
    task.split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|path| path.trim_end_matches([',', ';', ':', '!', '?', ')']))
        .filter(|path| bosun_agent::attach::is_image_path(path))
        .collect()
}

/// A pasted text that is one path to an image file (as a terminal pastes a dropped file:
/// perhaps quoted, perhaps a `file://` URL) as the `@` mention to insert: relative to the
/// workspace root when inside it, else as given (sending then refuses it).
pub(crate) fn pasted_image(root: &Path, text: &str) -> Option<String> {
    let trimmed = text.trim();
    let unquoted = trimmed
        .strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .or_else(|| trimmed.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
        .unwrap_or(trimmed);
    let path = unquoted.strip_prefix("file://").unwrap_or(unquoted);
    if path.is_empty()
        || path.contains(char::is_whitespace)
        || !bosun_agent::attach::is_image_path(path)
    {
        return None;
    }
    let full = Path::new(path);
    let shown = match full.strip_prefix(root) {
        Ok(relative) if full.is_absolute() => relative.display().to_string(),
        _ => path.to_owned(),
    };
    Some(format!("@{shown} "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_named_wins_over_letters_scattered_in_a_long_path() {
        let files: Vec<String> = [
            "crates/cli/src/main.rs",
            "docs/manual.md",
            "src/main.rs",
            "tests/many/apps/in/nested.rs",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(
            ranked(&files, "main"),
            vec![
                "src/main.rs",
                "crates/cli/src/main.rs",
                "tests/many/apps/in/nested.rs"
            ]
        );
        assert_eq!(ranked(&files, "MAN")[0], "docs/manual.md");
        assert!(ranked(&files, "zzz").is_empty());
    }

    #[test]
    fn the_walk_honours_ignore_files_and_stays_in_the_workspace() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(root.join("target/debug/out"), "").unwrap();
        std::fs::write(root.join("build.log"), "").unwrap();
        std::fs::write(root.join(".env.example"), "").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("leak")).unwrap();
        std::os::unix::fs::symlink(root.join("src/lib.rs"), root.join("lib-link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("outside-dir")).unwrap();
        assert_eq!(
            workspace_files(root),
            vec![".env.example", ".gitignore", "lib-link", "src/lib.rs"]
        );
    }

    #[test]
    fn image_mentions_and_pasted_image_paths() {
        assert_eq!(
            image_mentions("look at @shots/a.png, and @src/lib.rs and @b.JPG"),
            vec!["shots/a.png", "b.JPG"]
        );
        let root = Path::new("/work/p");
        assert_eq!(
            pasted_image(root, "'/work/p/shots/a b.png'"),
            None,
            "a path with spaces cannot be a mention"
        );
        assert_eq!(
            pasted_image(root, "file:///work/p/shots/a.png\n").as_deref(),
            Some("@shots/a.png ")
        );
        assert_eq!(
            pasted_image(root, "\"/etc/secret.png\"").as_deref(),
            Some("@/etc/secret.png ")
        );
        assert_eq!(pasted_image(root, "some text"), None);
    }

    #[test]
    fn esc_closes_the_list_until_the_word_changes() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("alpha.rs"), "").unwrap();
        std::fs::write(ws.path().join("beta.rs"), "").unwrap();
        let mut mentions = Mentions::default();
        mentions.follow(ws.path(), Some("a"));
        assert_eq!(mentions.popup.as_ref().unwrap().matches[0], "alpha.rs");
        mentions.dismiss();
        mentions.follow(ws.path(), Some("a"));
        assert!(mentions.popup.is_none());
        mentions.follow(ws.path(), Some("be"));
        assert_eq!(mentions.popup.as_ref().unwrap().matches, vec!["beta.rs"]);
        mentions.select(5);
        assert_eq!(mentions.take().as_deref(), Some("beta.rs"));
        mentions.follow(ws.path(), None);
        assert!(mentions.popup.is_none());
    }
}
