//! What `todos` declares: five tools over one list and a prompt that tells the model how to use
//! them. The list lives in the plugin instance's memory and reaches nothing outside it, so the
//! tools declare no capability and the `read` risk: changing the list changes no file, process
//! or remote state.

use bosun_sdk::NoInput;
use bosun_sdk::spec::{PluginSpec, Risk, ToolSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `todo_add` tool's name.
pub const TODO_ADD: &str = "todo_add";
/// The `todo_list` tool's name.
pub const TODO_LIST: &str = "todo_list";
/// The `todo_update` tool's name.
pub const TODO_UPDATE: &str = "todo_update";
/// The `todo_remove` tool's name.
pub const TODO_REMOVE: &str = "todo_remove";
/// The `todo_clear` tool's name.
pub const TODO_CLEAR: &str = "todo_clear";

/// Where an item stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on; at most one item at a time.
    InProgress,
    /// Done.
    Completed,
}

/// Input of `todo_add`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddInput {
    /// What to do, in one line.
    pub content: String,
    /// Its status (default `pending`).
    #[serde(default)]
    pub status: Status,
}

/// Input of `todo_update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateInput {
    /// The item's id.
    pub id: u32,
    /// New text, if it changes.
    pub content: Option<String>,
    /// New status, if it changes.
    pub status: Option<Status>,
}

/// Input of `todo_remove`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveInput {
    /// The item's id.
    pub id: u32,
}

const PROMPT: &str = "You have a todo list for the current task (todo_add, todo_list, \
todo_update, todo_remove, todo_clear). For work of three steps or more, add the steps first; \
keep exactly one item in_progress while you work on it; mark each completed as soon as it is \
done, not in batches; add what you discover along the way. Skip the list for a single quick step.";

/// The plugin as its metadata declares it.
pub fn plugin() -> PluginSpec {
    bosun_sdk::plugin_spec!()
        .prompt(PROMPT)
        .tool(
            ToolSpec::new::<AddInput>(TODO_ADD, "Adds an item to the todo list; returns the list.")
                .risk(Risk::Read),
        )
        .tool(ToolSpec::new::<NoInput>(TODO_LIST, "Returns the todo list.").risk(Risk::Read))
        .tool(
            ToolSpec::new::<UpdateInput>(
                TODO_UPDATE,
                "Changes an item's text or status (pending, in_progress, completed); only one item \
             may be in_progress. Returns the list.",
            )
            .risk(Risk::Read),
        )
        .tool(
            ToolSpec::new::<RemoveInput>(TODO_REMOVE, "Removes an item; returns the list.")
                .risk(Risk::Read),
        )
        .tool(ToolSpec::new::<NoInput>(TODO_CLEAR, "Empties the todo list.").risk(Risk::Read))
}
