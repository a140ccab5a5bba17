//! The agents of installed Claude Code plugins (`agents/*.md`), read as Claude Code reads a
//! plugin's subagent: front matter `name`, `description`, `tools`, `disallowedTools`, `model`,
//! `maxTurns`; the body is the instructions. `hooks`, `mcpServers` and `permissionMode` are
//! ignored with a note, as Claude Code ignores them for plugin agents. Each agent is named
//! `plugin:agent`. Claude Code's tool names are mapped to Bosun's
//! (`bosun_claude::tools`); what a name maps to is only ever a request — the subagent layer
//! gives a child no tool its parent lacks. Every file is read only when its bytes are the ones
//! reviewed at install. Nothing here runs anything.

use bosun_claude::LoadedPlugin;
use bosun_claude::components::qualified;

/// Front-matter fields Claude Code ignores for a plugin's agents, and so does Bosun.
const IGNORED_FOR_PLUGINS: &[&str] = &["hooks", "mcpServers", "permissionMode"];

/// One plugin agent, as its file declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginAgent {
    /// `plugin:agent`.
    pub name: String,
    /// The plugin's id, `name@marketplace`.
    pub plugin: String,
    /// When to delegate to it.
    pub description: String,
    /// Its instructions (the file's body).
    pub instructions: String,
    /// The Bosun tools it asks for; `None`: all its parent has (Claude Code's default).
    pub tools: Option<Vec<String>>,
    /// The Bosun tools it must not have.
    pub disallowed: Vec<String>,
    /// The model it names (`None` for none or `inherit`).
    pub model: Option<String>,
    /// `maxTurns`.
    pub max_turns: Option<u32>,
    /// What was ignored or could not be mapped, each a sentence.
    pub notes: Vec<String>,
}

/// The agents of `plugins`, and why any file was left out.
pub fn plugin_agents(plugins: &[LoadedPlugin]) -> (Vec<PluginAgent>, Vec<String>) {
    let mut agents = Vec::new();
    let mut warnings = Vec::new();
    for plugin in plugins {
        for file in plugin.agents() {
            let read = plugin
                .read_reviewed(&file.path)
                .map_err(|e| e.to_string())
                .and_then(|text| agent(plugin, &file.name, &text));
            match read {
                Ok(agent) => agents.push(agent),
                Err(why) => warnings.push(format!(
                    "the agent {} of the plugin `{}` is left out: {why}",
                    file.path, plugin.record.id
                )),
            }
        }
    }
    (agents, warnings)
}

/// Reads one agent file of `plugin`.
fn agent(plugin: &LoadedPlugin, stem: &str, text: &str) -> Result<PluginAgent, String> {
    let (front, body) = crate::front_matter::parse(text).map_err(|e| e.to_string())?;
    if let Some((key, found)) = front.hidden() {
        return Err(format!("`{key}` holds a hidden character ({found})"));
    }
    let own = front.text("name").unwrap_or(stem).to_owned();
    let mut notes = Vec::new();
    for key in IGNORED_FOR_PLUGINS {
        if front.has(key) {
            notes.push(format!(
                "`{key}` is ignored: Claude Code does not honour it for a plugin's agents, and neither does Bosun"
            ));
        }
    }
    let tools = match front.list("tools") {
        Some(items) if items.iter().any(|i| i.trim() == "*") => None,
        Some(items) => Some(mapped(&items, "tools", &mut notes)),
        None => None,
    };
    let disallowed = front
        .list("disallowedTools")
        .map(|items| mapped(&items, "disallowedTools", &mut notes))
        .unwrap_or_default();
    let model = front
        .text("model")
        .map(str::trim)
        .filter(|m| !m.is_empty() && *m != "inherit")
        .map(str::to_owned);
    let max_turns = match front.text("maxTurns") {
        None => None,
        Some(n) => Some(
            n.trim()
                .parse::<u32>()
                .map_err(|_| format!("maxTurns `{n}` is not a whole number"))?,
        ),
    };
    Ok(PluginAgent {
        name: qualified(plugin.name(), &own),
        plugin: plugin.record.id.clone(),
        description: front.text("description").unwrap_or_default().to_owned(),
        instructions: body.trim().to_owned(),
        tools,
        disallowed,
        model,
        max_turns,
        notes,
    })
}

/// Claude Code tool names (a permission pattern such as `Bash(git *)` counting as its tool)
/// as Bosun's; a name with no Bosun tool is a note.
fn mapped(items: &[String], key: &str, notes: &mut Vec<String>) -> Vec<String> {
    let (known, unknown) = bosun_claude::tools::list_to_bosun(items);
    if !unknown.is_empty() {
        notes.push(format!(
            "{key}: {} name no Bosun tool and are left out",
            unknown.join(", ")
        ));
    }
    known
}
