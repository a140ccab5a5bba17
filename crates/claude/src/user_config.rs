//! A plugin's `userConfig`: the answers a person gives when installing it, checked against
//! what the plugin declares (type, `required`, `min`/`max`, `multiple`), and where each is kept.
//! Answers that are not secrets belong to the user's config (the host writes them); answers
//! marked `sensitive` are kept here, in `$BOSUN_HOME/claude/secrets/<id>.json` (mode 0600, its
//! folder 0700): outside every workspace and plugin folder, in Bosun's home, which no sandboxed
//! process and no file tool reads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::ClaudeError;
use crate::install::{claude_home, write_atomic};
use crate::manifest::{UserConfigOption, UserConfigType};

/// `$BOSUN_HOME/claude/secrets/<id>.json`.
pub fn secrets_path(home: &Path, id: &str) -> PathBuf {
    claude_home(home).join("secrets").join(format!("{id}.json"))
}

/// The secrets kept for `id` (none when there is no file).
pub fn load_secrets(home: &Path, id: &str) -> Result<BTreeMap<String, String>, ClaudeError> {
    let path = secrets_path(home, id);
    // Not through a link planted in its place: another file's values would be handed to the
    // plugin as its secrets.
    match bosun_fsio::read_state_text(&path) {
        Ok(Some(text)) => serde_json::from_str(&text).map_err(|e| ClaudeError::Manifest {
            what: path.display().to_string(),
            message: format!("{e}; configure the plugin again to replace it"),
        }),
        Ok(None) => Ok(BTreeMap::new()),
        Err(e) => Err(ClaudeError::io(format!("reading {}", path.display()), e)),
    }
}

/// Every secret kept for every installed plugin, as `(name, value)` pairs for the trace's
/// redaction (`claude:<id>:<key>`). A file that cannot be read or parsed is skipped here: the
/// plugin that needs it is refused when it loads, with the reason.
pub fn all_secrets(home: &Path) -> Vec<(String, String)> {
    let dir = claude_home(home).join("secrets");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if let Ok(secrets) = load_secrets(home, id) {
            out.extend(
                secrets
                    .into_iter()
                    .map(|(key, value)| (format!("claude:{id}:{key}"), value)),
            );
        }
    }
    out
}

/// Keeps `secrets` for `id`, replacing what was kept: the file is 0600 and its folder 0700.
pub fn save_secrets(
    home: &Path,
    id: &str,
    secrets: &BTreeMap<String, String>,
) -> Result<(), ClaudeError> {
    use std::os::unix::fs::PermissionsExt;
    let path = secrets_path(home, id);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| ClaudeError::io(format!("creating {}", dir.display()), e))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| ClaudeError::io(format!("restricting {}", dir.display()), e))?;
    let text = serde_json::to_vec_pretty(secrets).map_err(|e| ClaudeError::Manifest {
        what: path.display().to_string(),
        message: e.to_string(),
    })?;
    write_atomic(&path, &text, 0o600)
}

/// One answer, checked against its option: the value to store (typed as JSON) or why not.
pub fn check_answer(key: &str, option: &UserConfigOption, text: &str) -> Result<Value, String> {
    let items: Vec<&str> = if option.multiple {
        text.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect()
    } else {
        vec![text.trim()]
    };
    let mut values = Vec::new();
    for item in items {
        let value = match option.kind {
            UserConfigType::String | UserConfigType::Directory | UserConfigType::File => {
                if matches!(
                    option.kind,
                    UserConfigType::Directory | UserConfigType::File
                ) && !item.is_empty()
                    && !Path::new(item).is_absolute()
                {
                    return Err(format!("{key}: `{item}` is not an absolute path"));
                }
                Value::String(item.to_owned())
            }
            UserConfigType::Number => {
                let number: f64 = item
                    .parse()
                    .map_err(|_| format!("{key}: `{item}` is not a number"))?;
                if !number.is_finite() {
                    return Err(format!("{key}: `{item}` is not a finite number"));
                }
                if option.min.is_some_and(|min| number < min)
                    || option.max.is_some_and(|max| number > max)
                {
                    return Err(format!(
                        "{key}: {item} is outside {}..{}",
                        option.min.map_or("".to_owned(), |m| m.to_string()),
                        option.max.map_or("".to_owned(), |m| m.to_string())
                    ));
                }
                serde_json::Number::from_f64(number)
                    .map(Value::Number)
                    .ok_or_else(|| format!("{key}: `{item}` is not a number"))?
            }
            UserConfigType::Boolean => match item {
                "true" | "yes" | "y" | "1" => Value::Bool(true),
                "false" | "no" | "n" | "0" => Value::Bool(false),
                _ => return Err(format!("{key}: `{item}` is not true or false")),
            },
        };
        values.push(value);
    }
    if option.required && values.iter().all(|v| v.as_str().is_some_and(str::is_empty)) {
        return Err(format!("{key}: an answer is required ({})", option.title));
    }
    Ok(if option.multiple {
        Value::Array(values)
    } else {
        values.pop().unwrap_or(Value::String(String::new()))
    })
}

/// The text `${user_config.KEY}` expands to for a stored value.
pub fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(","),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// A plugin's answers as its variables expand them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answers {
    /// Every answer (defaults for those not given), by key.
    pub values: BTreeMap<String, String>,
    /// The keys whose answers are secrets.
    pub sensitive: BTreeSet<String>,
    /// Required keys with no answer: the plugin must be configured before its servers and
    /// hooks run.
    pub missing: Vec<String>,
}

impl Answers {
    /// The answers of `options`: `stored` (the user config's, not secrets), `secrets` (kept
    /// apart), then each option's default.
    pub fn resolve(
        options: &BTreeMap<String, UserConfigOption>,
        stored: &BTreeMap<String, String>,
        secrets: &BTreeMap<String, String>,
    ) -> Answers {
        let mut answers = Answers::default();
        for (key, option) in options {
            let given = if option.sensitive {
                answers.sensitive.insert(key.clone());
                secrets.get(key).cloned()
            } else {
                stored.get(key).cloned()
            };
            match given.or_else(|| option.default.as_ref().map(text_of)) {
                Some(value) => {
                    answers.values.insert(key.clone(), value);
                }
                None if option.required => answers.missing.push(key.clone()),
                None => {}
            }
        }
        answers
    }

    /// The answers that are not secrets (what may appear in what a person reviews).
    pub fn public(&self) -> BTreeMap<String, String> {
        self.values
            .iter()
            .filter(|(k, _)| !self.sensitive.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The secret values given (non-empty), for the redaction of traces.
    pub fn secret_values(&self) -> Vec<String> {
        self.values
            .iter()
            .filter(|(k, v)| self.sensitive.contains(*k) && !v.is_empty())
            .map(|(_, v)| v.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(kind: UserConfigType) -> UserConfigOption {
        UserConfigOption {
            kind,
            title: "T".to_owned(),
            description: "d".to_owned(),
            required: false,
            default: None,
            multiple: false,
            sensitive: false,
            min: None,
            max: None,
        }
    }

    #[test]
    fn answers_are_checked_against_their_declared_type() {
        let mut number = option(UserConfigType::Number);
        number.min = Some(1.0);
        number.max = Some(10.0);
        assert_eq!(
            check_answer("n", &number, "3").unwrap(),
            serde_json::json!(3.0)
        );
        assert!(check_answer("n", &number, "11").is_err());
        assert!(check_answer("n", &number, "three").is_err());
        let boolean = option(UserConfigType::Boolean);
        assert_eq!(
            check_answer("b", &boolean, "yes").unwrap(),
            Value::Bool(true)
        );
        assert!(check_answer("b", &boolean, "maybe").is_err());
        let dir = option(UserConfigType::Directory);
        assert!(check_answer("d", &dir, "relative/x").is_err());
        let mut required = option(UserConfigType::String);
        required.required = true;
        assert!(check_answer("r", &required, "  ").is_err());
        let mut many = option(UserConfigType::String);
        many.multiple = true;
        let value = check_answer("m", &many, "a, b,,c").unwrap();
        assert_eq!(text_of(&value), "a,b,c");
        assert_eq!(text_of(&serde_json::json!(3.0)), "3");
    }

    #[test]
    fn answers_resolve_from_store_secrets_then_defaults() {
        let mut token = option(UserConfigType::String);
        token.sensitive = true;
        token.required = true;
        let mut greeting = option(UserConfigType::String);
        greeting.default = Some(Value::String("ahoy".to_owned()));
        let options = BTreeMap::from([
            ("api_token".to_owned(), token),
            ("greeting".to_owned(), greeting),
        ]);
        let none = Answers::resolve(&options, &BTreeMap::new(), &BTreeMap::new());
        assert_eq!(none.missing, ["api_token"]);
        assert_eq!(none.values["greeting"], "ahoy");
        // A secret is never taken from the user config, where a model could read it back.
        let stored = BTreeMap::from([("api_token".to_owned(), "in-config".to_owned())]);
        let secrets = BTreeMap::from([("api_token".to_owned(), "s3cret".to_owned())]);
        let answers = Answers::resolve(&options, &stored, &secrets);
        assert_eq!(answers.values["api_token"], "s3cret");
        assert!(answers.missing.is_empty());
        assert_eq!(answers.secret_values(), ["s3cret"]);
        assert!(!answers.public().contains_key("api_token"));
    }

    #[test]
    fn secrets_are_kept_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let secrets = BTreeMap::from([("k".to_owned(), "v".to_owned())]);
        save_secrets(home.path(), "p@m", &secrets).unwrap();
        let path = secrets_path(home.path(), "p@m");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(load_secrets(home.path(), "p@m").unwrap(), secrets);
    }
}
