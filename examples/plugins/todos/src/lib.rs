//! `todos`: a todo list the model keeps for its current task. State lives in the plugin
//! instance (one per plugin per session, as the host keeps it) and is gone when the instance is.
//! Every change returns the whole list, so the model always sees what it is working from.

pub mod spec;

use bosun_sdk::{NoInput, Plugin, ToolError, Tools};
use serde::Serialize;

use spec::{AddInput, RemoveInput, Status, UpdateInput};

/// The most items the list holds.
pub const MAX_ITEMS: usize = 100;
/// The longest item, in characters.
pub const MAX_CONTENT_CHARS: usize = 500;

/// One item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// Stable within the instance; never reused.
    pub id: u32,
    /// What to do.
    pub content: String,
    /// Where it stands.
    pub status: Status,
}

/// The list as every tool returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct List {
    /// The items, in the order they were added.
    pub items: Vec<Item>,
    /// Counts by status, e.g. `1 completed, 1 in progress, 2 pending`.
    pub summary: String,
}

/// The plugin and its state.
#[derive(Debug, Default)]
pub struct Todos {
    items: Vec<Item>,
    next_id: u32,
}

impl Plugin for Todos {
    fn tools() -> Tools<Self> {
        Tools::new()
            .tool(spec::TODO_ADD, Todos::add)
            .tool(spec::TODO_LIST, Todos::list)
            .tool(spec::TODO_UPDATE, Todos::update)
            .tool(spec::TODO_REMOVE, Todos::remove)
            .tool(spec::TODO_CLEAR, Todos::clear)
    }
}

bosun_sdk::export!(Todos);

impl Todos {
    /// `todo_add`.
    pub fn add(&mut self, input: AddInput) -> Result<List, ToolError> {
        if self.items.len() >= MAX_ITEMS {
            return Err(ToolError::limit_reached(format!(
                "the list holds {MAX_ITEMS} items: remove or clear some first"
            )));
        }
        let content = checked_content(&input.content)?;
        if input.status == Status::InProgress {
            self.check_none_in_progress(None)?;
        }
        self.next_id += 1;
        self.items.push(Item {
            id: self.next_id,
            content,
            status: input.status,
        });
        Ok(self.snapshot())
    }

    /// `todo_list`.
    pub fn list(&mut self, _input: NoInput) -> Result<List, ToolError> {
        Ok(self.snapshot())
    }

    /// `todo_update`.
    pub fn update(&mut self, input: UpdateInput) -> Result<List, ToolError> {
        let index = self.index_of(input.id)?;
        let content = input.content.as_deref().map(checked_content).transpose()?;
        if input.status == Some(Status::InProgress) {
            self.check_none_in_progress(Some(input.id))?;
        }
        let item = &mut self.items[index];
        if let Some(content) = content {
            item.content = content;
        }
        if let Some(status) = input.status {
            item.status = status;
        }
        Ok(self.snapshot())
    }

    /// `todo_remove`.
    pub fn remove(&mut self, input: RemoveInput) -> Result<List, ToolError> {
        let index = self.index_of(input.id)?;
        self.items.remove(index);
        Ok(self.snapshot())
    }

    /// `todo_clear`.
    pub fn clear(&mut self, _input: NoInput) -> Result<List, ToolError> {
        self.items.clear();
        Ok(self.snapshot())
    }

    fn index_of(&self, id: u32) -> Result<usize, ToolError> {
        self.items
            .iter()
            .position(|item| item.id == id)
            .ok_or_else(|| ToolError::not_found(format!("no item has id {id}: see todo_list")))
    }

    fn check_none_in_progress(&self, except: Option<u32>) -> Result<(), ToolError> {
        match self
            .items
            .iter()
            .find(|item| item.status == Status::InProgress && Some(item.id) != except)
        {
            Some(busy) => Err(ToolError::invalid_input(format!(
                "item {} ({:?}) is already in_progress: complete it or set it back to pending first",
                busy.id, busy.content
            ))),
            None => Ok(()),
        }
    }

    fn snapshot(&self) -> List {
        let count = |status| self.items.iter().filter(|i| i.status == status).count();
        List {
            items: self.items.clone(),
            summary: format!(
                "{} completed, {} in progress, {} pending",
                count(Status::Completed),
                count(Status::InProgress),
                count(Status::Pending)
            ),
        }
    }
}

fn checked_content(content: &str) -> Result<String, ToolError> {
    let content = content.trim();
    if content.is_empty() {
        return Err(ToolError::invalid_input("`content` is empty"));
    }
    if content.chars().count() > MAX_CONTENT_CHARS {
        return Err(ToolError::invalid_input(format!(
            "`content` is longer than {MAX_CONTENT_CHARS} characters: keep an item to one line"
        )));
    }
    Ok(content.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_sdk::testing::{self, Session};
    use serde_json::json;

    #[test]
    fn keeps_state_across_calls_of_one_instance() {
        let mut todos = Session::<Todos>::new();
        todos
            .call("todo_add", json!({"content": "read the code"}))
            .unwrap();
        todos
            .call(
                "todo_add",
                json!({"content": "write the test", "status": "in_progress"}),
            )
            .unwrap();
        let list = todos
            .call("todo_update", json!({"id": 1, "status": "completed"}))
            .unwrap();
        assert_eq!(list["summary"], "1 completed, 1 in progress, 0 pending");
        assert_eq!(
            list["items"][0],
            json!({"id": 1, "content": "read the code", "status": "completed"})
        );

        todos.call("todo_remove", json!({"id": 1})).unwrap();
        let list = todos.call("todo_list", json!({})).unwrap();
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
        todos.call("todo_clear", json!({})).unwrap();
        let list = todos.call("todo_add", json!({"content": "again"})).unwrap();
        assert_eq!(list["items"][0]["id"], 3, "ids are never reused");
    }

    #[test]
    fn only_one_item_is_in_progress() {
        let mut todos = Session::<Todos>::new();
        todos
            .call("todo_add", json!({"content": "a", "status": "in_progress"}))
            .unwrap();
        todos.call("todo_add", json!({"content": "b"})).unwrap();
        let err = todos
            .call("todo_update", json!({"id": 2, "status": "in_progress"}))
            .unwrap_err();
        assert_eq!(err.code, "invalid_input");
        assert!(err.message.contains("item 1"), "{err}");
        let err = todos
            .call("todo_add", json!({"content": "c", "status": "in_progress"}))
            .unwrap_err();
        assert_eq!(err.code, "invalid_input");
        // Re-marking the same item is fine.
        todos
            .call("todo_update", json!({"id": 1, "status": "in_progress"}))
            .unwrap();
    }

    #[test]
    fn bad_ids_and_bad_content_have_their_codes() {
        let mut todos = Session::<Todos>::new();
        assert_eq!(
            todos
                .call("todo_remove", json!({"id": 9}))
                .unwrap_err()
                .code,
            "not_found"
        );
        assert_eq!(
            todos
                .call("todo_add", json!({"content": " "}))
                .unwrap_err()
                .code,
            "invalid_input"
        );
        assert_eq!(
            todos
                .call("todo_add", json!({"content": "x", "status": "later"}))
                .unwrap_err()
                .code,
            "invalid_input"
        );
        assert_eq!(
            todos.call("todo_list", json!({"x": 1})).unwrap_err().code,
            "invalid_input"
        );
    }

    #[test]
    fn metadata_has_the_tools_and_the_prompt() {
        let doc = testing::check_metadata::<Todos>(bosun_sdk::metadata!()).unwrap();
        assert!(doc["prompt"].as_str().unwrap().contains("in_progress"));
        let status = &doc["tools"][0]["input_schema"]["properties"]["status"];
        let values: Vec<&serde_json::Value> = status["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| &v["const"])
            .collect();
        assert_eq!(
            values,
            [
                &json!("pending"),
                &json!("in_progress"),
                &json!("completed")
            ]
        );
    }
}
