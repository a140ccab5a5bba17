//! `/config`: each setting in force with the layer that set it (`managed`, `user`, `project`,
//! `flag` for what this session switched with `/mode`, Shift-Tab or `/model`, `default`), where
//! it is written and the managed rule constraining it — the same view as `bosun config show
//! --layers`, from the same function, so the two faces cannot drift. It changes nothing.

use bosun_host::layers::{Flags, layers, render};
use bosun_host::permission::PermissionMode;

use crate::env::Env;

/// The view for `env`'s config, with this session's mode and model where they differ from it.
pub(crate) fn config(env: &Env, mode: PermissionMode, model: &str) -> Result<String, String> {
    let configured: PermissionMode = env.config.user.mode.into();
    let flags = Flags {
        mode: (mode != configured).then_some(mode),
        mode_from: "/mode (this session)",
        model: (!model.is_empty() && env.config.user.default_model.as_deref() != Some(model))
            .then(|| model.to_owned()),
        model_from: "/model (this session)",
    };
    layers(&env.config, &flags).map(|settings| render(&settings).trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_names_what_this_session_switched_as_the_flag_layer() {
        let dir = tempfile::tempdir().unwrap();
        let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let model = |name: &str| {
            format!(
                "[models.{name}]\nprovider = \"openai-chat\"\nmodel = \"{name}\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
            )
        };
        std::fs::write(
            home.join("config.toml"),
            format!(
                "mode = \"read-only\"\ndefault_model = \"a\"\n\n{}\n{}",
                model("a"),
                model("b")
            ),
        )
        .unwrap();
        let env = crate::env::load_in(&ws, &home).unwrap();
        let user = home.join("config.toml").display().to_string();
        let line = |text: &str, key: &str| {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(key))
                .unwrap_or_else(|| panic!("no {key} in\n{text}"))
                .to_owned()
        };
        // As configured: the user's file and its lines.
        let text = config(&env, PermissionMode::ReadOnly, "a").unwrap();
        assert!(
            line(&text, "mode").contains(&format!("read-only  [user {user}:1]")),
            "{text}"
        );
        assert!(
            line(&text, "default_model").contains(&format!("a  [user {user}:2]")),
            "{text}"
        );
        assert!(
            line(&text, "models.b.provider").contains(&format!("[user {user}:")),
            "{text}"
        );
        // Switched in this session: the flag layer, named by where it was switched.
        let text = config(&env, PermissionMode::Plan, "b").unwrap();
        assert!(
            line(&text, "mode").contains("plan  [flag /mode (this session)]"),
            "{text}"
        );
        assert!(
            line(&text, "default_model").contains("b  [flag /model (this session)]"),
            "{text}"
        );
    }
}
