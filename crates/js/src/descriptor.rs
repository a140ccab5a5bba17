//! The JSON the host and the engine exchange: the activation request and the plugin's
//! descriptor (see `crates/js/engine/js/README.md`).

use bosun_core::Risk;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which plugin format the engine should load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `plugin.json` + an ES module exporting `activate(api)`.
    Forge,
    /// `mod.ts` exporting `manifest`, `toolDefinitions`, `createExecutor`.
    Triggerfish,
}

/// A Triggerfish plugin's effective trust (manifest says trusted AND config says trusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// May read the few `Deno` values Triggerfish's examples use, through the host.
    Trusted,
    /// Everything else.
    #[default]
    Sandboxed,
}

/// Limits the plugin sees in its tool context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JsLimits {
    /// `context.limits.maxOutputBytes`.
    pub max_output_bytes: u64,
    /// `context.limits.maxEntries`.
    pub max_entries: u64,
    /// `context.limits.commandTimeoutMs`.
    pub command_timeout_ms: u64,
}

impl Default for JsLimits {
    fn default() -> Self {
        Self {
            max_output_bytes: 65_536,
            max_entries: 200,
            command_timeout_ms: 60_000,
        }
    }
}

/// What `activate` is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivationRequest {
    /// The format.
    pub format: Format,
    /// The plugin's name (Forge: `plugin.json` name; Triggerfish: the directory name).
    pub name: String,
    /// The entry file, relative to the plugin directory.
    pub entry: String,
    /// Forge capabilities from `plugin.json`.
    pub capabilities: Vec<String>,
    /// Triggerfish effective trust.
    pub trust: Trust,
    /// The plugin's config table (`[plugins.<name>.config]`).
    pub config: Value,
    /// Limits in the tool context.
    pub limits: JsLimits,
    /// Tool names the plugin may not register (built-ins and host tools).
    pub reserved_tool_names: Vec<String>,
    /// Whether the plugin may build code from strings (`eval`, `Function`): its manifest asked
    /// for it and the person trusting it was shown that.
    #[serde(default)]
    pub code_from_strings: bool,
    /// The host variables the user passes to the plugin (`[plugins.<name>] env`): its
    /// `process.env`, or a trusted Triggerfish plugin's `Deno.env`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// The plugin's own directory for `node:fs` to read: every file of the snapshot the trust
    /// review hashed, plugin-relative path → its bytes in standard base64. Nothing else of any
    /// file system reaches the engine.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub directory: std::collections::BTreeMap<String, String>,
    /// The plugin's `.js` files that are CommonJS, as Node decides (package.json `type`, else
    /// the file's own syntax); `.cjs` files are CommonJS by name and need no entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commonjs: Vec<String>,
}

/// One tool a plugin registered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JsTool {
    /// The tool's name as the plugin registered it.
    pub name: String,
    /// Its description.
    pub description: String,
    /// `read`, `write`, `process` or `network`, read once here: a risk Bosun does not know is
    /// this tool's error alone (the plugin's other tools are still offered).
    #[serde(with = "tool_risk")]
    pub risk: Result<Risk, UnknownRisk>,
    /// Its input schema, converted to JSON Schema by the engine.
    pub input_schema: Value,
}

/// A risk a plugin's tool declares that a JavaScript tool cannot have (Bosun's four are `read`,
/// `write`, `process` and `network`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown risk `{0}`")]
pub struct UnknownRisk(pub String);

/// Reads a tool's risk word. `model` is a risk of Bosun's own tools, never a plugin's.
pub fn tool_risk_of(word: &str) -> Result<Risk, UnknownRisk> {
    match word {
        "read" => Ok(Risk::Read),
        "write" => Ok(Risk::Write),
        "process" => Ok(Risk::Process),
        "network" => Ok(Risk::Network),
        other => Err(UnknownRisk(other.to_owned())),
    }
}

/// A tool's `risk` field as the engine writes it: the word, parsed by [`tool_risk_of`]; written
/// back as the same word (the descriptor cache stores descriptors as JSON).
mod tool_risk {
    use bosun_core::Risk;
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{UnknownRisk, tool_risk_of};

    pub(super) fn serialize<S: Serializer>(
        risk: &Result<Risk, UnknownRisk>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match risk {
            Ok(risk) => serializer.collect_str(risk),
            Err(UnknownRisk(word)) => serializer.serialize_str(word),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Result<Risk, UnknownRisk>, D::Error> {
        let word = String::deserialize(deserializer)?;
        Ok(tool_risk_of(&word))
    }
}

/// A Forge command (`bosun plugins run NAME`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsCommand {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
}

/// A Forge subagent's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct JsSubagentLimits {
    /// Model steps for one child run.
    #[serde(default)]
    pub max_model_steps: Option<u32>,
    /// Tool calls for one child run.
    #[serde(default)]
    pub max_tool_calls: Option<u32>,
}

/// A Forge subagent registration (recorded and validated; run by the subagent runner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JsSubagent {
    /// Its kebab-case name.
    pub name: String,
    /// The tool that delegates to it.
    pub tool_name: String,
    /// The delegate tool's description.
    pub description: String,
    /// The child's instructions.
    pub instructions: String,
    /// The tools the child may use.
    pub tools: Vec<String>,
    /// The child's budget.
    #[serde(default)]
    pub limits: JsSubagentLimits,
}

/// How many hooks of each kind the plugin registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HookCounts {
    /// Prompt contributions.
    #[serde(default)]
    pub prompt: u32,
    /// Policy restrictions.
    #[serde(default)]
    pub restrict: u32,
    /// Run-event observers.
    #[serde(default)]
    pub observe: u32,
}

/// What an activated plugin offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Its tools.
    #[serde(default)]
    pub tools: Vec<JsTool>,
    /// Its commands.
    #[serde(default)]
    pub commands: Vec<JsCommand>,
    /// Its subagents.
    #[serde(default)]
    pub subagents: Vec<JsSubagent>,
    /// Its hooks.
    #[serde(default)]
    pub hooks: HookCounts,
    /// Triggerfish: the exported manifest, for the host to validate.
    #[serde(default)]
    pub manifest: Option<Value>,
    /// Triggerfish: the exported system prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
}
