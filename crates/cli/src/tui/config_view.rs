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
