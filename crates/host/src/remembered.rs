//! "Always in this workspace": an approval remembered as narrow policy rules.
//!
//! When a person answers an approval with *always* and confirms the rules they are shown, the
//! chokepoint writes them to `$BOSUN_HOME/approvals/<workspace key>.toml`: one `allow` rule for
//! the tool's action and one for each capability request exactly as judged — the program, the
//! path, the host — so allowing `cargo test` does not allow `curl`, and allowing `src/a.rs`
//! does not allow `.git/config`. The file is the user's (the repository cannot write it), is
//! loaded as user rules only for the workspace it names, and is written atomically; delete it,
//! or a rule in it, to take the approval back.
//!
//! A value that would read as a glob (`*`, `?`, `[`, `{`, `\`) cannot be remembered exactly, so
//! such a call is never remembered: the person is told and the call runs once.

use std::path::{Path, PathBuf};

use bosun_core::{CapabilityRequest, Decision};
use bosun_policy::{PolicyFile, Rule};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Why an approval cannot be remembered; the call runs once either way.
#[derive(Debug, thiserror::Error)]
pub enum RememberError {
    /// A value would read as a glob, so no rule can name it exactly.
    #[error("the {what} `{value}` contains a glob character, so no rule can name it exactly")]
    NotExact {
        /// What the value is (`action`, `program`, `path`, …).
        what: String,
        /// The value, with hidden characters escaped.
        value: String,
    },
    /// The workspace's file is not a policy file.
    #[error("{} is not a valid policy file ({message}); fix or delete it", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What the policy parser said.
        message: String,
    },
    /// The rules could not be serialised.
    #[error("cannot write the rules: {0}")]
    Serialise(String),
    /// Reading, creating or writing a file failed.
    #[error("cannot {doing} {}: {source}", path.display())]
    Io {
        /// `read`, `create` or `write`.
        doing: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The directory the remembered approvals live in.
pub fn dir(home: &Path) -> PathBuf {
    home.join("approvals")
}

/// The file that remembers approvals for `workspace` (its canonical root).
pub fn file_for(home: &Path, workspace: &Path) -> PathBuf {
    let digest = Sha256::digest(workspace.as_os_str().as_encoded_bytes());
    let key = bosun_core::text::hex(&digest[..8]);
    dir(home).join(format!("{key}.toml"))
}

/// The rules an *always* answer writes for a call of `action` with `capabilities`.
///
/// # Errors
/// Why the call cannot be remembered exactly (a value that would read as a glob).
pub fn rules_for(
    action: &str,
    capabilities: &[CapabilityRequest],
    tool: &str,
) -> Result<Vec<Rule>, RememberError> {
    let reason = format!("remembered: always allowed for {tool} in this workspace");
    let exact = |value: &str, what: &str| {
        // The matcher's own test, so a remembered value never reads as a wider pattern.
        if bosun_policy::is_glob(value) {
            Err(RememberError::NotExact {
                what: what.to_owned(),
                value: bosun_core::escape_hidden(value),
            })
        } else {
            Ok(value.to_owned())
        }
    };
    let mut rules = vec![Rule {
        reason: Some(reason.clone()),
        ..Rule::new(exact(action, "action")?, Decision::Allow)
    }];
    for request in capabilities {
        let scope = &request.scope;
        let rule = Rule {
            host: scope
                .host
                .as_deref()
                .map(|h| exact(h, "host"))
                .transpose()?,
            // A whole directory (a plugin's preopen) is remembered as everything beneath it,
            // as the person was shown it: `dir/**`, or `**` for the workspace root.
            path: scope
                .path
                .as_deref()
                .map(|p| exact(p, "path"))
                .transpose()?
                .map(|p| match (scope.whole_directory, p.as_str()) {
                    (false, _) => p,
                    (true, "." | "") => "**".to_owned(),
                    (true, dir) => format!("{}/**", dir.trim_end_matches('/')),
                }),
            program: scope
                .program
                .as_deref()
                .map(|p| exact(p, "program"))
                .transpose()?,
            reason: Some(reason.clone()),
            ..Rule::new(request.capability.as_action(), Decision::Allow)
        };
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    Ok(rules)
}

/// Each rule as one line a person reads before confirming.
pub fn describe(rules: &[Rule]) -> Vec<String> {
    rules
        .iter()
        .map(|rule| {
            let mut text = format!("allow {}", rule.action);
            for (key, value) in [
                ("program", &rule.program),
                ("path", &rule.path),
                ("host", &rule.host),
            ] {
                if let Some(value) = value {
                    text.push_str(&format!(" {key}={}", bosun_core::escape_hidden(value)));
                }
            }
            text
        })
        .collect()
}

#[derive(Serialize)]
struct Document<'a> {
    policy: Section<'a>,
}

#[derive(Serialize)]
struct Section<'a> {
    rules: &'a [Rule],
}

/// Adds `rules` to the workspace's file (rules already there are kept once), atomically.
///
/// # Errors
/// A [`RememberError`] naming the file and what went wrong.
pub fn remember(home: &Path, workspace: &Path, rules: &[Rule]) -> Result<PathBuf, RememberError> {
    let path = file_for(home, workspace);
    // Under the file's lock, on the file as it is now: another Bosun remembering an answer for
    // the same workspace at the same moment keeps its rules.
    let _lock = crate::state_lock::lock(&path).map_err(|source| RememberError::Io {
        doing: "lock",
        path: path.clone(),
        source,
    })?;
    let mut all: Vec<Rule> = match bosun_fsio::read_state_text(&path) {
        Ok(Some(text)) => PolicyFile::parse(&text)
            .map_err(|e| RememberError::Invalid {
                path: path.clone(),
                message: e.to_string(),
            })?
            .rules
            .into_iter()
            .map(toml::Spanned::into_inner)
            .collect(),
        Ok(None) => Vec::new(),
        Err(source) => {
            return Err(RememberError::Io {
                doing: "read",
                path,
                source,
            });
        }
    };
    for rule in rules {
        if !all.contains(rule) {
            all.push(rule.clone());
        }
    }
    let body = toml::to_string(&Document {
        policy: Section { rules: &all },
    })
    .map_err(|e| RememberError::Serialise(e.to_string()))?;
    let text = format!(
        "# Approvals remembered for the workspace {}\n# (written when you answered \"always\"; delete a rule to take it back).\n\n{body}",
        workspace.display().to_string().replace('\n', " ")
    );
    std::fs::create_dir_all(dir(home)).map_err(|source| RememberError::Io {
        doing: "create",
        path: dir(home),
        source,
    })?;
    if let Err(source) = crate::write_atomic(&path, text.as_bytes()) {
        return Err(RememberError::Io {
            doing: "write",
            path,
            source,
        });
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Remembered answers are not read through a link planted at their file: the rules of a
    /// file elsewhere are never taken in (and written back as this workspace's).
    #[test]
    fn remembered_answers_are_not_read_through_a_link_planted_in_their_place() {
        let home = tempfile::tempdir().unwrap();
        let ws = Path::new("/work/project");
        let rules =
            rules_for("builtin.tool.run_command", &[spawn("cargo")], "run_command").unwrap();
        let path = remember(home.path(), ws, &rules).unwrap();
        let planted = home.path().join("planted.toml");
        std::fs::rename(&path, &planted).unwrap();
        let before = std::fs::read(&planted).unwrap();
        bosun_fsio::testing::plant_link(&path, &planted);
        let error = remember(home.path(), ws, &rules).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read(&planted).unwrap(), before);
        assert!(path.symlink_metadata().unwrap().file_type().is_symlink());
    }

    fn spawn(program: &str) -> CapabilityRequest {
        CapabilityRequest::parse(&format!("process.spawn:{program}")).unwrap()
    }

    #[test]
    fn rules_name_exactly_what_was_shown() {
        let rules =
            rules_for("builtin.tool.run_command", &[spawn("cargo")], "run_command").unwrap();
        assert_eq!(
            describe(&rules),
            [
                "allow builtin.tool.run_command",
                "allow process.spawn program=cargo"
            ]
        );
        assert!(rules_for("builtin.tool.run_command", &[spawn("c*")], "run_command").is_err());
    }

    #[test]
    fn remembering_twice_keeps_one_copy_and_the_file_parses() {
        let home = tempfile::tempdir().unwrap();
        let ws = Path::new("/work/project");
        let rules =
            rules_for("builtin.tool.run_command", &[spawn("cargo")], "run_command").unwrap();
        let path = remember(home.path(), ws, &rules).unwrap();
        remember(home.path(), ws, &rules).unwrap();
        let more = rules_for("builtin.tool.run_command", &[spawn("npm")], "run_command").unwrap();
        remember(home.path(), ws, &more).unwrap();
        let file = PolicyFile::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(file.rules.len(), 3);
        assert_ne!(
            file_for(home.path(), ws),
            file_for(home.path(), Path::new("/work/other"))
        );
    }

    #[test]
    fn a_broken_file_is_reported_and_left_alone() {
        let home = tempfile::tempdir().unwrap();
        let ws = Path::new("/w");
        let path = file_for(home.path(), ws);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "not toml [").unwrap();
        let rules = rules_for("a.b", &[], "t").unwrap();
        let err = remember(home.path(), ws, &rules).unwrap_err();
        assert!(err.to_string().contains("fix or delete it"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not toml [");
    }

    /// Eight answers of "always" at once, for the same workspace, from separate processes'
    /// worth of threads: every rule is kept.
    #[test]
    fn concurrent_answers_keep_every_rule() {
        let home = tempfile::tempdir().unwrap();
        let ws = Path::new("/work/project");
        let writers = 8;
        let start = std::sync::Arc::new(std::sync::Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let home = home.path().to_owned();
                let start = std::sync::Arc::clone(&start);
                std::thread::spawn(move || {
                    let rules = rules_for(
                        "builtin.tool.run_command",
                        &[spawn(&format!("prog{i}"))],
                        "run_command",
                    )
                    .unwrap();
                    start.wait();
                    remember(&home, ws, &rules).unwrap();
                    rules
                })
            })
            .collect();
        let mut wanted: Vec<Rule> = Vec::new();
        for rule in handles.into_iter().flat_map(|h| h.join().unwrap()) {
            // The rule for the tool itself is the same for every answer: kept once.
            if !wanted.contains(&rule) {
                wanted.push(rule);
            }
        }
        let text = std::fs::read_to_string(file_for(home.path(), ws)).unwrap();
        let kept: Vec<Rule> = PolicyFile::parse(&text)
            .unwrap()
            .rules
            .into_iter()
            .map(toml::Spanned::into_inner)
            .collect();
        for rule in &wanted {
            assert!(kept.contains(rule), "lost {rule:?}");
        }
        assert_eq!(kept.len(), wanted.len());
    }
}
