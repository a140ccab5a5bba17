//! Bosun's permission modes as ACP session modes (`read-only`, `workspace-write`, `full`,
//! switched with `session/set_mode`) and the `[models]` entries as the session's `model`
//! config option (`session/set_config_option`). Both are stable protocol v1.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState,
};
use bosun_policy::Mode;

/// The id of the model config option.
pub const MODEL_OPTION: &str = "model";

/// What a mode means to the person choosing it in the editor.
fn describe(mode: Mode) -> &'static str {
    match mode {
        Mode::ReadOnly => "Reads and searches; every write, command and network call is refused",
        Mode::WorkspaceWrite => {
            "Reads and edits in the workspace; commands and the network ask first (the default)"
        }
        Mode::Full => "Everything policy does not deny runs without asking",
    }
}

/// The modes offered, with `current` chosen.
pub fn mode_state(current: Mode) -> SessionModeState {
    SessionModeState::new(
        current.as_str(),
        Mode::ALL
            .iter()
            .map(|mode| SessionMode::new(mode.as_str(), mode.as_str()).description(describe(*mode)))
            .collect::<Vec<_>>(),
    )
}

/// The mode an editor's mode id names.
pub fn parse_mode(id: &str) -> Option<Mode> {
    Mode::ALL.into_iter().find(|mode| mode.as_str() == id)
}

/// The `[models.<name>]` entries as a select option with `current` chosen.
pub fn model_option(names: &[String], current: &str) -> SessionConfigOption {
    let options: Vec<SessionConfigSelectOption> = names
        .iter()
        .map(|name| SessionConfigSelectOption::new(name.clone(), name.clone()))
        .collect();
    SessionConfigOption::select(MODEL_OPTION, "Model", current.to_owned(), options)
        .description("The [models.<name>] entry of Bosun's config the next turn uses".to_owned())
        .category(SessionConfigOptionCategory::Model)
}
