//! Each setting in force and the layer that set it — `managed`, `user`, `project`, `flag` (a
//! command-line flag or the terminal's choice for the session) or `default` — with where it is
//! written (`file:line`) and the managed rule that constrains it: what `bosun config show
//! --layers` and the terminal's `/config` print. It starts from [`LoadedConfig::settings`] (the
//! settings the managed policy can force) and adds every other key the user's and the project's
//! files write, so nothing a file says is missing from the view. It reads; it never changes a
//! config.

use crate::config::{LoadedConfig, Setting};
use crate::permission::PermissionMode;

/// What a run's flags (or the terminal's session) choose over the files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// `--mode`, or the mode the terminal's session switched to.
    pub mode: Option<PermissionMode>,
    /// `--model`, or the model the terminal's session switched to.
    pub model: Option<String>,
    /// Where the flags were given, as the view names it (`--mode`, `/mode`).
    pub mode_from: &'static str,
    /// Where the model was chosen (`--model`, `/model`).
    pub model_from: &'static str,
}

/// Longest value shown; past it the value is cut with `…`.
const MAX_VALUE: usize = 80;

/// Every setting in force, ordered by key, with its layer.
///
/// # Errors
/// A mode the managed policy does not allow, named as loading the config would name it.
pub fn layers(config: &LoadedConfig, flags: &Flags) -> Result<Vec<Setting>, String> {
    let mut settings = config.settings();
    let user_model = config.user.default_model.clone();
    if let Some(mode) = flags.mode {
        if let Some(managed) = &config.managed {
            managed.check_mode(mode.policy_mode()).map_err(|r| {
                format!(
                    "{}: refused by the managed policy ({}): {}",
                    flags.mode_from, r.rule, r.message
                )
            })?;
        }
        if let Some(setting) = settings.iter_mut().find(|s| s.key == "mode") {
            setting.value = mode.as_str().to_owned();
            setting.layer = "flag";
            setting.at = Some(flags.mode_from.to_owned());
        }
    }
    let (model, layer, at) = match (&flags.model, &user_model) {
        (Some(model), _) => (
            Some(model.clone()),
            "flag",
            Some(flags.model_from.to_owned()),
        ),
        (None, Some(model)) => (
            Some(model.clone()),
            "user",
            written_at(config, &["default_model"]),
        ),
        (None, None) => (None, "default", None),
    };
    if let Some(model) = model {
        settings.push(Setting {
            key: "default_model".to_owned(),
            value: model,
            layer,
            at,
            constrained_by: None,
        });
    }
    let covered: Vec<String> = settings.iter().map(|s| s.key.clone()).collect();
    let files = config
        .user_file
        .iter()
        .map(|f| ("user", f))
        .chain(config.project.iter().map(|(_, f)| ("project", f)));
    for (layer, file) in files {
        for (key, value, line) in leaves(&file.text) {
            let shown = covered.iter().any(|c| {
                key == *c || key.starts_with(&format!("{c}.")) || c.starts_with(&format!("{key}."))
            });
            if shown {
                continue;
            }
            settings.push(Setting {
                key,
                value,
                layer,
                at: Some(format!("{}:{line}", file.path.display())),
                constrained_by: None,
            });
        }
    }
    settings.sort_by(|a, b| {
        a.key
            .cmp(&b.key)
            .then(layer_rank(a.layer).cmp(&layer_rank(b.layer)))
    });
    Ok(settings)
}

/// Stronger layers first where one key is set by several (`policy.rules`).
fn layer_rank(layer: &str) -> u8 {
    match layer {
        "flag" => 0,
        "managed" => 1,
        "project" => 2,
        "user" => 3,
        _ => 4,
    }
}

/// `file:line` of `path` in the user's file, if written there.
fn written_at(config: &LoadedConfig, path: &[&str]) -> Option<String> {
    let file = config.user_file.as_ref()?;
    leaves(&file.text)
        .into_iter()
        .find(|(key, _, _)| *key == path.join("."))
        .map(|(_, _, line)| format!("{}:{line}", file.path.display()))
}

/// Every key with a value in `text` (tables walked, arrays of tables left to their own
/// summaries), with its value as written and its 1-based line. A value under a key that
/// names a secret is not shown.
fn leaves(text: &str) -> Vec<(String, String, usize)> {
    let Ok(document) = toml_edit::Document::parse(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(text, document.as_table(), &mut Vec::new(), &mut out);
    out
}

fn walk(
    text: &str,
    table: &dyn toml_edit::TableLike,
    path: &mut Vec<String>,
    out: &mut Vec<(String, String, usize)>,
) {
    for (key, item) in table.iter() {
        path.push(key.to_owned());
        if let Some(inner) = item.as_table_like()
            && !item.is_inline_table()
        {
            walk(text, inner, path, out);
        } else if let Some(value) = item.as_value() {
            let line = table
                .key(key)
                .and_then(|k| k.span())
                .or_else(|| value.span())
                .map_or(1, |span| crate::config::line_col(text, span.start).0);
            out.push((path.join("."), shown(key, value), line));
        }
        path.pop();
    }
}

/// A value as the view shows it: as written, on one line, cut to [`MAX_VALUE`]; hidden under a
/// key that names a secret (a token, a password, a key that is not a variable's name).
fn shown(key: &str, value: &toml_edit::Value) -> String {
    let lower = key.to_ascii_lowercase();
    let secret = [
        "token",
        "secret",
        "password",
        "authorization",
        "api_key",
        "api-key",
    ]
    .iter()
    .any(|s| lower.contains(s))
        && !lower.ends_with("_env")
        && !lower.ends_with("-env");
    if secret {
        return "(hidden)".to_owned();
    }
    let text = value.to_string();
    let text = text.trim().replace('\n', " ");
    if text.chars().count() > MAX_VALUE {
        let cut: String = text.chars().take(MAX_VALUE - 1).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// The view as text, one setting a line: `key  value  [layer file:line] (managed: rule)`.
pub fn render(settings: &[Setting]) -> String {
    let width = settings.iter().map(|s| s.key.len()).max().unwrap_or(0);
    let mut out = String::new();
    for setting in settings {
        out.push_str(&format!(
            "{:width$}  {}  [{}{}]",
            setting.key,
            setting.value,
            setting.layer,
            setting
                .at
                .as_ref()
                .map(|at| format!(" {at}"))
                .unwrap_or_default(),
        ));
        if let Some(rule) = &setting.constrained_by {
            out.push_str(&format!(" (managed: {rule})"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_written_key_has_its_line_and_secrets_stay_hidden() {
        let text = "mode = \"full\"\n\n[agent]\nmax_steps = 7\n\n[models.gpt]\nprovider = \"openai-chat\"\napi_key = \"sk-live-xyz\"\napi_key_env = \"OPENAI_API_KEY\"\n\n[[policy.rules]]\naction = \"x\"\ndecision = \"deny\"\n";
        assert_eq!(
            leaves(text),
            vec![
                ("mode".to_owned(), "\"full\"".to_owned(), 1),
                ("agent.max_steps".to_owned(), "7".to_owned(), 4),
                (
                    "models.gpt.provider".to_owned(),
                    "\"openai-chat\"".to_owned(),
                    7
                ),
                ("models.gpt.api_key".to_owned(), "(hidden)".to_owned(), 8),
                (
                    "models.gpt.api_key_env".to_owned(),
                    "\"OPENAI_API_KEY\"".to_owned(),
                    9
                ),
            ]
        );
    }
}
