//! The `[models.<name>]` configuration: which provider, where, which model, and the name of the
//! environment variable that holds the key — never the key itself. Turns an entry into a ready
//! [`Provider`], and lists the entries with whether their key is present.
//!
//! ```toml
//! default_model = "sonnet"
//!
//! [models.sonnet]
//! provider = "anthropic"            # or "openai-chat", "openai-responses"
//! model = "claude-sonnet-4-5"
//! api_key_env = "ANTHROPIC_API_KEY"
//! context_window = 200000
//! max_output_tokens = 16000
//!
//! [models.local]
//! provider = "openai-chat"
//! base_url = "http://127.0.0.1:11434/v1"   # Ollama; no api_key_env: no key is sent
//! model = "qwen3:8b"
//!
//! [models.vision]
//! provider = "openai-chat"
//! base_url = "http://127.0.0.1:11434/v1"
//! model = "qwen2.5vl:7b"
//! images = true                     # reads images; known for the official providers' models
//!
//! [models.cheap]
//! provider = "openai-chat"
//! base_url = "https://llm.example.com/v1"
//! model = "small"
//! classification = "INTERNAL"       # the most sensitive data this model may be sent
//! ```
//!
//! A model is a sink with a level ([`ModelsConfig::level_of`]): a session holding data above it
//! sends it nothing. Left out, `default_model` and every entry talking to its API root may be
//! sent every level (the person chose that provider as the data's home), any other `PUBLIC`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::transport::{ApiKey, Connection};
use crate::{Anthropic, ModelError, ModelRequest, OpenAiChat, OpenAiResponses, Provider};

/// Where the official APIs live, used when `base_url` is not set.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// See [`OPENAI_BASE_URL`].
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The wire format a model entry speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM, llama.cpp, LM Studio,
    /// OpenRouter, …).
    OpenaiChat,
    /// The OpenAI Responses API.
    OpenaiResponses,
    /// The Anthropic Messages API.
    Anthropic,
}

impl ProviderKind {
    /// The name used in configuration and errors.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenaiChat => "openai-chat",
            Self::OpenaiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
        }
    }

    /// The official endpoint.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenaiChat | Self::OpenaiResponses => OPENAI_BASE_URL,
            Self::Anthropic => ANTHROPIC_BASE_URL,
        }
    }

    /// The variable the provider's own tools read the key from, used for the official endpoint
    /// when an entry names no `api_key_env`.
    pub fn standard_key_env(self) -> &'static str {
        match self {
            Self::OpenaiChat | Self::OpenaiResponses => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The models section: a default and named entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsConfig {
    /// The entry used when none is named.
    #[serde(default)]
    pub default_model: Option<String>,
    /// Entries by name.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
}

/// One `[models.<name>]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The wire format.
    pub provider: ProviderKind,
    /// The API root; the provider's official endpoint when absent.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The provider's model id.
    pub model: String,
    /// The environment variable holding the key. Absent: the provider's standard variable
    /// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) for its official endpoint, and no key at all for
    /// any other `base_url` (local servers).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Tokens the model can take in, for the agent's context accounting.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Cap on generated tokens per request.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Longest silence from the server, in seconds (before its answer starts and between two
    /// chunks of it); 30 when absent, so a hung server fails fast. Raise it for models that
    /// think for long before their first token.
    #[serde(default)]
    pub read_timeout_secs: Option<u64>,
    /// Whether the model reads images. Absent: known for the official providers' models
    /// ([`crate::capability::known_images`]), no for any other. A request with an image to an
    /// entry that takes none is refused before it is sent, naming this key.
    #[serde(default)]
    pub images: Option<bool>,
    /// The most sensitive data the model may be sent: a session holding more sends it no
    /// request, no subagent's task and no conversation to compact. Absent: see
    /// [`ModelsConfig::level_of`]. User config only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<bosun_core::Classification>,
}

impl ModelConfig {
    /// The API root this entry talks to.
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or_else(|| self.provider.default_base_url())
    }

    /// Whether the model reads images: `images`, else the known table, else no.
    pub fn takes_images(&self) -> bool {
        self.images
            .or_else(|| crate::capability::known_images(&self.model))
            .unwrap_or(false)
    }

    /// The variable the key is read from: `api_key_env`, else the provider's standard variable
    /// when the entry talks to the official endpoint; `None` for a keyless local server.
    pub fn key_env(&self) -> Option<&str> {
        match &self.api_key_env {
            Some(var) => Some(var),
            None if self.base_url().trim_end_matches('/') == self.provider.default_base_url() => {
                Some(self.provider.standard_key_env())
            }
            None => None,
        }
    }
}

/// A configuration that cannot be used, and how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The TOML did not parse or had unknown keys; the message carries line and column.
    #[error("invalid models configuration: {0}")]
    Parse(String),
    /// A value is out of range or malformed.
    #[error("[models.{model}] {key}: {message}")]
    Invalid {
        /// The entry.
        model: String,
        /// The key.
        key: &'static str,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// `default_model` names no entry.
    #[error("default_model = \"{name}\" but there is no [models.{name}]; defined: {known}")]
    UnknownDefault {
        /// The name given.
        name: String,
        /// The names defined, comma-separated.
        known: String,
    },
    /// A model was asked for by a name that has no entry.
    #[error("no model named `{name}`: add a [models.{name}] entry or use one of: {known}")]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The names defined, comma-separated.
        known: String,
    },
    /// No model was named and there is no `default_model`.
    #[error("no model chosen: set default_model or name a model; defined: {known}")]
    NoDefault {
        /// The names defined, comma-separated.
        known: String,
    },
    /// The key's environment variable is not set.
    #[error(
        "the API key for [models.{model}] is missing: set {env} or change api_key_env in [models.{model}]"
    )]
    MissingKey {
        /// The entry.
        model: String,
        /// The variable that should hold the key.
        env: String,
    },
    /// The adapter could not be built.
    #[error("[models.{model}]: {source}")]
    Provider {
        /// The entry.
        model: String,
        /// Why.
        source: Box<ModelError>,
    },
}

/// Whether a model's key is available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyStatus {
    /// The entry talks to a server that takes no key (no `api_key_env`, a custom `base_url`).
    NotNeeded,
    /// The variable is set.
    Present,
    /// The variable is not set, or empty.
    Missing,
}

/// One line of [`ModelsConfig::list`]. Holds no key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelListing {
    /// The entry's name.
    pub name: String,
    /// Its wire format.
    pub provider: ProviderKind,
    /// The provider's model id.
    pub model: String,
    /// The API root.
    pub base_url: String,
    /// The key's variable: `api_key_env`, or the provider's standard one for its official
    /// endpoint.
    pub api_key_env: Option<String>,
    /// Whether the key is there.
    pub key: KeyStatus,
    /// Whether it is `default_model`.
    pub is_default: bool,
}

/// A model ready to use: its adapter and the entry's limits.
#[derive(Debug, Clone)]
pub struct ConfiguredModel {
    /// The entry's name.
    pub name: String,
    /// The adapter.
    pub provider: Arc<dyn Provider>,
    /// The provider's model id.
    pub model: String,
    /// The entry's context window, if set.
    pub context_window: Option<u64>,
    /// The entry's output cap, if set.
    pub max_output_tokens: Option<u32>,
    /// Whether the model reads images ([`ModelConfig::takes_images`]).
    pub images: bool,
    /// The most sensitive data it may be sent ([`ModelsConfig::level_of`]).
    pub level: bosun_core::Classification,
}

impl ConfiguredModel {
    /// An empty request for this model with the entry's output cap.
    pub fn request(&self) -> ModelRequest {
        ModelRequest {
            max_output_tokens: self.max_output_tokens,
            ..ModelRequest::new(self.model.clone())
        }
    }
}

/// Reads an environment variable as a key source: unset and empty are both missing.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ModelsConfig {
    /// Parses and checks a TOML document holding `default_model` and `[models.*]`.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    fn known(&self) -> String {
        if self.models.is_empty() {
            "none (add a [models.<name>] entry)".to_owned()
        } else {
            self.models.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    }

    /// Checks every entry and the default.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, entry) in &self.models {
            let invalid = |key, message: String| ConfigError::Invalid {
                model: name.clone(),
                key,
                message,
            };
            if let Some(secs) = entry.read_timeout_secs
                && !(1..=3600).contains(&secs)
            {
                return Err(invalid(
                    "read_timeout_secs",
                    format!("{secs} is out of range: use 1 to 3600 seconds"),
                ));
            }
            if entry.model.trim().is_empty() {
                return Err(invalid(
                    "model",
                    "is empty: give the provider's model id".into(),
                ));
            }
            let base_url = entry.base_url();
            match reqwest::Url::parse(base_url) {
                Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {}
                _ => {
                    return Err(invalid(
                        "base_url",
                        format!("`{base_url}` is not an http:// or https:// URL"),
                    ));
                }
            }
            if let Some(env) = &entry.api_key_env
                && !is_env_name(env)
            {
                return Err(invalid(
                    "api_key_env",
                    "must be the name of an environment variable (like OPENAI_API_KEY), never the key itself"
                        .into(),
                ));
            }
            if entry.context_window == Some(0) {
                return Err(invalid("context_window", "must be positive".into()));
            }
            match (entry.max_output_tokens, entry.context_window) {
                (Some(0), _) => {
                    return Err(invalid("max_output_tokens", "must be positive".into()));
                }
                (Some(max), Some(window)) if u64::from(max) >= window => {
                    return Err(invalid(
                        "max_output_tokens",
                        format!("{max} leaves no room for input in a context_window of {window}"),
                    ));
                }
                _ => {}
            }
        }
        if let Some(name) = &self.default_model
            && !self.models.contains_key(name)
        {
            return Err(ConfigError::UnknownDefault {
                name: name.clone(),
                known: self.known(),
            });
        }
        Ok(())
    }

    /// Opens the entry called `name`, reading its key through `env`.
    pub fn open(
        &self,
        name: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ConfiguredModel, ConfigError> {
        let entry = self
            .models
            .get(name)
            .ok_or_else(|| ConfigError::UnknownModel {
                name: name.to_owned(),
                known: self.known(),
            })?;
        Ok(ConfiguredModel {
            name: name.to_owned(),
            provider: build_provider(name, entry, env)?,
            model: entry.model.clone(),
            context_window: entry.context_window,
            max_output_tokens: entry.max_output_tokens,
            images: entry.takes_images(),
            level: self.level_of(name),
        })
    }

    /// The most sensitive data the entry `name` may be sent: its `classification`; else every
    /// level when it talks to the API root of `default_model` (the provider the person chose as
    /// the data's home, which is sent all a session holds already), else `PUBLIC`, like every
    /// sink nobody labelled. An unknown name is `PUBLIC`.
    pub fn level_of(&self, name: &str) -> bosun_core::Classification {
        use bosun_core::Classification;
        let Some(entry) = self.models.get(name) else {
            return Classification::Public;
        };
        if let Some(level) = entry.classification {
            return level;
        }
        let root = |entry: &ModelConfig| entry.base_url().trim_end_matches('/').to_owned();
        match self
            .default_model
            .as_deref()
            .and_then(|d| self.models.get(d))
        {
            Some(default) if root(default) == root(entry) => Classification::Restricted,
            _ => Classification::Public,
        }
    }

    /// Opens `default_model`.
    pub fn open_default(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ConfiguredModel, ConfigError> {
        let name = self
            .default_model
            .as_deref()
            .ok_or_else(|| ConfigError::NoDefault {
                known: self.known(),
            })?;
        self.open(name, env)
    }

    /// Every entry, by name, with whether its key is present in `env`.
    pub fn list(&self, env: impl Fn(&str) -> Option<String>) -> Vec<ModelListing> {
        self.models
            .iter()
            .map(|(name, entry)| ModelListing {
                name: name.clone(),
                provider: entry.provider,
                model: entry.model.clone(),
                base_url: entry.base_url().to_owned(),
                api_key_env: entry.key_env().map(str::to_owned),
                key: match entry.key_env() {
                    None => KeyStatus::NotNeeded,
                    Some(var) if env(var).is_some_and(|v| !v.is_empty()) => KeyStatus::Present,
                    Some(_) => KeyStatus::Missing,
                },
                is_default: self.default_model.as_deref() == Some(name.as_str()),
            })
            .collect()
    }
}

/// Builds the adapter for the entry `name`, reading its key through `env` (use
/// [`process_env`] for the process environment).
pub fn build_provider(
    name: &str,
    entry: &ModelConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ConfigError> {
    connect(name, entry, env, entry.base_url())
}

/// [`build_provider`] against `base_url` (the entry's, or a test server standing in for the
/// official endpoint).
fn connect(
    name: &str,
    entry: &ModelConfig,
    env: impl Fn(&str) -> Option<String>,
    base_url: &str,
) -> Result<Arc<dyn Provider>, ConfigError> {
    let mut connection = Connection::new(base_url);
    if let Some(secs) = entry.read_timeout_secs {
        connection = connection.timeouts(crate::Timeouts {
            idle: std::time::Duration::from_secs(secs),
            ..crate::Timeouts::default()
        });
    }
    if let Some(var) = entry.key_env() {
        let key = env(var)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| ConfigError::MissingKey {
                model: name.to_owned(),
                env: var.to_owned(),
            })?;
        connection = connection.api_key(ApiKey::new(key), Some(var.to_owned()));
    }
    let provider: Result<Arc<dyn Provider>, ModelError> = match entry.provider {
        ProviderKind::OpenaiChat => OpenAiChat::new(connection).map(|p| Arc::new(p) as _),
        ProviderKind::OpenaiResponses => OpenAiResponses::new(connection).map(|p| Arc::new(p) as _),
        ProviderKind::Anthropic => Anthropic::new(connection).map(|p| Arc::new(p) as _),
    };
    let provider = provider.map_err(|source| ConfigError::Provider {
        model: name.to_owned(),
        source: Box::new(source),
    })?;
    if entry.takes_images() {
        Ok(provider)
    } else {
        Ok(Arc::new(crate::capability::TextOnly {
            inner: provider,
            entry: name.to_owned(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const CONFIG: &str = r#"
default_model = "sonnet"

[models.sonnet]
provider = "anthropic"
model = "claude-sonnet-4-5"
api_key_env = "ANTHROPIC_API_KEY"
context_window = 200000
max_output_tokens = 16000

[models.local]
provider = "openai-chat"
base_url = "http://127.0.0.1:11434/v1"
model = "qwen3:8b"

[models.gpt]
provider = "openai-responses"
model = "gpt-5"
api_key_env = "OPENAI_API_KEY"
"#;

    fn env(name: &str) -> Option<String> {
        (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-secret".to_owned())
    }

    /// A model is a sink: its `classification`, else every level on the default model's API
    /// root (a trailing slash is the same root), else `PUBLIC`; a label is parsed strictly.
    #[test]
    fn a_models_level_is_its_label_else_every_level_on_the_default_root_else_public() {
        use bosun_core::Classification;
        let entry = |name: &str, url: &str, level: &str| {
            format!(
                "[models.{name}]\nprovider = \"openai-chat\"\nmodel = \"m\"\nbase_url = \"{url}\"\n{level}"
            )
        };
        let config = ModelsConfig::from_toml(&format!(
            "default_model = \"main\"\n{}{}{}{}",
            entry("main", "http://127.0.0.1:8000/v1", ""),
            entry("same", "http://127.0.0.1:8000/v1/", ""),
            entry("other", "http://127.0.0.1:9000/v1", ""),
            entry(
                "labelled",
                "http://127.0.0.1:9000/v1",
                "classification = \"INTERNAL\"\n"
            ),
        ))
        .unwrap();
        let levels: Vec<Classification> = ["main", "same", "other", "labelled", "unknown"]
            .iter()
            .map(|name| config.level_of(name))
            .collect();
        assert_eq!(
            levels,
            [
                Classification::Restricted,
                Classification::Restricted,
                Classification::Public,
                Classification::Internal,
                Classification::Public,
            ]
        );
        assert_eq!(
            config.open("labelled", |_| None).unwrap().level,
            Classification::Internal
        );
        let strict = ModelsConfig::from_toml(&entry(
            "x",
            "http://127.0.0.1:9000/v1",
            "classification = \"internal\"\n",
        ));
        assert!(matches!(strict, Err(ConfigError::Parse(_))), "{strict:?}");
    }

    #[test]
    fn parses_and_lists_without_keys() {
        let config = ModelsConfig::from_toml(CONFIG).unwrap();
        let listing = config.list(env);
        assert_eq!(
            listing,
            vec![
                ModelListing {
                    name: "gpt".into(),
                    provider: ProviderKind::OpenaiResponses,
                    model: "gpt-5".into(),
                    base_url: OPENAI_BASE_URL.into(),
                    api_key_env: Some("OPENAI_API_KEY".into()),
                    key: KeyStatus::Missing,
                    is_default: false,
                },
                ModelListing {
                    name: "local".into(),
                    provider: ProviderKind::OpenaiChat,
                    model: "qwen3:8b".into(),
                    base_url: "http://127.0.0.1:11434/v1".into(),
                    api_key_env: None,
                    key: KeyStatus::NotNeeded,
                    is_default: false,
                },
                ModelListing {
                    name: "sonnet".into(),
                    provider: ProviderKind::Anthropic,
                    model: "claude-sonnet-4-5".into(),
                    base_url: ANTHROPIC_BASE_URL.into(),
                    api_key_env: Some("ANTHROPIC_API_KEY".into()),
                    key: KeyStatus::Present,
                    is_default: true,
                },
            ]
        );
        let shown = format!("{listing:?} {}", serde_json::to_string(&listing).unwrap());
        assert!(!shown.contains("sk-ant-secret"));
    }

    #[test]
    fn opens_entries_and_hides_the_key() {
        let config = ModelsConfig::from_toml(CONFIG).unwrap();
        let model = config.open_default(env).unwrap();
        assert_eq!(model.provider.name(), "anthropic");
        assert_eq!(model.request().max_output_tokens, Some(16000));
        assert_eq!(model.request().model, "claude-sonnet-4-5");
        assert!(!format!("{model:?}").contains("sk-ant-secret"));
        assert_eq!(
            config.open("local", env).unwrap().provider.name(),
            "openai-chat"
        );
    }

    #[test]
    fn refuses_unknown_keys_and_bad_values() {
        let err = ModelsConfig::from_toml(
            "[models.x]\nprovider = \"anthropic\"\nmodel = \"m\"\napi_key = \"sk-1\"\n",
        )
        .unwrap_err();
        assert!(
            matches!(&err, ConfigError::Parse(m) if m.contains("unknown field `api_key`") && m.contains("line 4")),
            "{err}"
        );
        let err = ModelsConfig::from_toml(
            "[models.x]\nprovider = \"anthropic\"\nmodel = \"m\"\napi_key_env = \"sk-ant-123\"\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "[models.x] api_key_env: must be the name of an environment variable (like OPENAI_API_KEY), never the key itself"
        );
        let err = ModelsConfig::from_toml(
            "default_model = \"y\"\n[models.x]\nprovider = \"openai-chat\"\nmodel = \"m\"\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "default_model = \"y\" but there is no [models.y]; defined: x"
        );
        let err = ModelsConfig::from_toml("[models.x]\nprovider = \"gemini\"\nmodel = \"m\"\n")
            .unwrap_err();
        assert!(
            err.to_string().contains("unknown variant `gemini`"),
            "{err}"
        );
        let err = ModelsConfig::from_toml(
            "[models.x]\nprovider = \"openai-chat\"\nmodel = \"m\"\nbase_url = \"localhost:8080\"\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "[models.x] base_url: `localhost:8080` is not an http:// or https:// URL"
        );
        let err = ModelsConfig::from_toml(
            "[models.x]\nprovider = \"openai-chat\"\nmodel = \"m\"\ncontext_window = 1000\nmax_output_tokens = 1000\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "[models.x] max_output_tokens: 1000 leaves no room for input in a context_window of 1000"
        );
    }

    #[test]
    fn official_endpoints_fall_back_to_the_standard_variable() {
        let config = ModelsConfig::from_toml(
            "[models.claude]\nprovider = \"anthropic\"\nmodel = \"m\"\n\
             [models.gpt]\nprovider = \"openai-chat\"\nmodel = \"m\"\nbase_url = \"https://api.openai.com/v1/\"\n\
             [models.local]\nprovider = \"openai-chat\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:8000/v1\"\n",
        )
        .unwrap();
        let keys: Vec<_> = config
            .list(env)
            .into_iter()
            .map(|m| (m.name, m.api_key_env, m.key))
            .collect();
        assert_eq!(
            keys,
            vec![
                (
                    "claude".to_owned(),
                    Some("ANTHROPIC_API_KEY".to_owned()),
                    KeyStatus::Present
                ),
                (
                    "gpt".to_owned(),
                    Some("OPENAI_API_KEY".to_owned()),
                    KeyStatus::Missing
                ),
                ("local".to_owned(), None, KeyStatus::NotNeeded),
            ]
        );
        assert_eq!(
            config.open("gpt", env).unwrap_err().to_string(),
            "the API key for [models.gpt] is missing: set OPENAI_API_KEY or change api_key_env in [models.gpt]"
        );
        assert!(config.open("local", env).is_ok());
    }

    /// The official endpoint, played by a loopback server that records the request's head and
    /// refuses it.
    async fn request_head(entry: &ModelConfig, env: impl Fn(&str) -> Option<String>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).await.unwrap() == 1 {
                head.push(byte[0]);
            }
            let body = r#"{"error":{"message":"no"}}"#;
            let reply = format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(reply.as_bytes()).await.unwrap();
            String::from_utf8_lossy(&head).to_ascii_lowercase()
        });
        let provider = connect("official", entry, env, &url).unwrap();
        let error = provider
            .stream(&ModelRequest::new("m"), crate::CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert!(matches!(error, ModelError::Auth { .. }), "{error:?}");
        server.await.unwrap()
    }

    #[tokio::test]
    async fn the_official_endpoint_gets_the_key_from_the_standard_variable() {
        let entry = |provider| ModelConfig {
            provider,
            base_url: None,
            model: "m".into(),
            api_key_env: None,
            context_window: None,
            max_output_tokens: None,
            read_timeout_secs: None,
            images: None,
            classification: None,
        };
        let env = |name: &str| match name {
            "ANTHROPIC_API_KEY" => Some("sk-ant-standard".to_owned()),
            "OPENAI_API_KEY" => Some("sk-openai-standard".to_owned()),
            _ => None,
        };
        let head = request_head(&entry(ProviderKind::Anthropic), env).await;
        assert!(head.contains("x-api-key: sk-ant-standard\r\n"), "{head}");
        let head = request_head(&entry(ProviderKind::OpenaiResponses), env).await;
        assert!(
            head.contains("authorization: bearer sk-openai-standard\r\n"),
            "{head}"
        );
    }

    #[test]
    fn names_unknown_models() {
        let config = ModelsConfig::from_toml(CONFIG).unwrap();
        assert_eq!(
            config.open("opus", env).unwrap_err().to_string(),
            "no model named `opus`: add a [models.opus] entry or use one of: gpt, local, sonnet"
        );
        assert_eq!(
            ModelsConfig::default()
                .open_default(env)
                .unwrap_err()
                .to_string(),
            "no model chosen: set default_model or name a model; defined: none (add a [models.<name>] entry)"
        );
    }
}
