//! Finding a model this machine can use without configuration — the official providers' key
//! variables, a local Ollama or vLLM on its usual port — and the starter config that names it.
//! What `bosun config init`, the first run and `bosun doctor` share.
//!
//! Never reads a key's value (only whether its variable is set), never sends anything beyond
//! this machine (only loopback servers are probed), and writes the user config only whole.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_models::{ModelConfig, ProviderKind, process_env};

use crate::config_edit::{ConfigEditError, UserConfigEdit};

/// How long a local server has to accept a connection (it is on this machine: it answers at once
/// or is not there).
const PROBE_CONNECT: Duration = Duration::from_millis(300);
/// How long it has to list its models.
const PROBE_READ: Duration = Duration::from_secs(2);
/// Largest model listing read from a local server.
const MAX_LISTING: u64 = 1024 * 1024;

/// The variable naming the local servers to probe instead of the usual ports, as a
/// comma-separated list of `NAME=http://HOST:PORT/v1` (for a server on another port).
pub const LOCAL_SERVERS_ENV: &str = "BOSUN_LOCAL_SERVERS";

/// The local servers probed by default: Ollama and vLLM on their usual ports.
const USUAL_LOCAL_SERVERS: [(&str, &str); 2] = [
    ("ollama", "http://127.0.0.1:11434/v1"),
    ("vllm", "http://127.0.0.1:8000/v1"),
];

/// A model entry this machine can use, found without configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The `[models.NAME]` to write.
    pub name: String,
    /// The entry.
    pub entry: ModelConfig,
    /// Why it was offered: `ANTHROPIC_API_KEY is set`, `Ollama answers at …`.
    pub found: String,
}

impl Candidate {
    fn official(name: &str, provider: ProviderKind, model: &str) -> Option<Self> {
        let var = provider.standard_key_env();
        process_env(var)?;
        Some(Self {
            name: name.to_owned(),
            entry: entry(provider, None, model, Some(var)),
            found: format!("{var} is set"),
        })
    }

    /// The entry as TOML lines, under its `[models.NAME]` header.
    pub fn toml(&self) -> String {
        let e = &self.entry;
        let mut text = format!(
            "[models.{}]\nprovider = \"{}\"\nmodel = \"{}\"\n",
            self.name, e.provider, e.model
        );
        if let Some(url) = &e.base_url {
            text.push_str(&format!("base_url = \"{url}\"\n"));
        }
        if let Some(var) = &e.api_key_env {
            text.push_str(&format!("api_key_env = \"{var}\"\n"));
        }
        text
    }

    /// One line for a person: `claude: anthropic claude-sonnet-4-5 (ANTHROPIC_API_KEY is set)`.
    pub fn describe(&self) -> String {
        format!(
            "[models.{}]: {} {} ({})",
            self.name, self.entry.provider, self.entry.model, self.found
        )
    }
}

/// A `[models.*]` entry with the provider's own limits (no window, output or timeout set).
pub fn entry(
    provider: ProviderKind,
    base_url: Option<&str>,
    model: &str,
    key: Option<&str>,
) -> ModelConfig {
    ModelConfig {
        provider,
        base_url: base_url.map(str::to_owned),
        model: model.to_owned(),
        api_key_env: key.map(str::to_owned),
        context_window: None,
        max_output_tokens: None,
        read_timeout_secs: None,
        images: None,
        classification: None,
    }
}

/// What this machine offers, best first: the official providers whose key variable is set, then
/// the local servers that answer with at least one model.
pub fn detect() -> Vec<Candidate> {
    let mut found: Vec<Candidate> = [
        Candidate::official("claude", ProviderKind::Anthropic, "claude-sonnet-4-5"),
        Candidate::official("gpt", ProviderKind::OpenaiResponses, "gpt-5"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let configured = std::env::var(LOCAL_SERVERS_ENV).ok();
    let servers: Vec<(String, String)> = match &configured {
        Some(list) => list
            .split(',')
            .filter_map(|item| item.split_once('='))
            .map(|(name, url)| (name.trim().to_owned(), url.trim().to_owned()))
            .collect(),
        None => USUAL_LOCAL_SERVERS
            .iter()
            .map(|(name, url)| ((*name).to_owned(), (*url).to_owned()))
            .collect(),
    };
    for (name, base_url) in servers {
        if let Some(model) = first_local_model(&base_url) {
            found.push(Candidate {
                found: format!("a server answers at {base_url}"),
                entry: entry(ProviderKind::OpenaiChat, Some(&base_url), &model, None),
                name,
            });
        }
    }
    found
}

/// The first model a loopback OpenAI-compatible server lists at `GET /v1/models`, or `None` when
/// nothing answers there (quickly) or it lists no model.
fn first_local_model(base_url: &str) -> Option<String> {
    let rest = base_url.strip_prefix("http://")?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let addr: SocketAddr = authority.parse().ok()?;
    // Only this machine is probed: nothing is sent over the network unasked.
    if !addr.ip().is_loopback() {
        return None;
    }
    let mut stream = TcpStream::connect_timeout(&addr, PROBE_CONNECT).ok()?;
    stream.set_read_timeout(Some(PROBE_READ)).ok()?;
    stream.set_write_timeout(Some(PROBE_READ)).ok()?;
    let path = format!("/{}/models", path.trim_matches('/')).replace("//", "/");
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n"
    )
    .ok()?;
    let mut response = Vec::new();
    stream.take(MAX_LISTING).read_to_end(&mut response).ok()?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.") || head.split_whitespace().nth(1) != Some("200") {
        return None;
    }
    let listing: serde_json::Value = serde_json::from_str(body).ok()?;
    listing
        .pointer("/data/0/id")
        .and_then(serde_json::Value::as_str)
        .filter(|id| !id.trim().is_empty())
        .map(str::to_owned)
}

/// The starter config of `bosun config init`: every setting a new user reaches for, commented,
/// with the `candidates` found on this machine as real entries (the first one the default).
pub fn starter_config(candidates: &[Candidate]) -> String {
    let mut text = String::from(
        "# Bosun's user configuration. Every key is described in docs/configuration.md;\n\
         # `bosun config check` validates this file, `bosun doctor` checks everything.\n\
         \n\
         # What tools may do without asking: read-only, workspace-write or full.\n\
         # mode = \"workspace-write\"\n\n",
    );
    match candidates.first() {
        Some(first) => text.push_str(&format!("default_model = \"{}\"\n\n", first.name)),
        None => text.push_str("# default_model = \"claude\"\n\n"),
    }
    text.push_str(
        "# Models: the key is read from the environment variable api_key_env names (OpenAI's and\n\
         # Anthropic's official endpoints read OPENAI_API_KEY and ANTHROPIC_API_KEY when it is not\n\
         # set); a local server with its own base_url gets no key. read_timeout_secs (default 30)\n\
         # is the longest the server may stay silent.\n",
    );
    for candidate in candidates {
        text.push_str(&format!("# Found: {}.\n", candidate.found));
        text.push_str(&candidate.toml());
        text.push('\n');
    }
    let examples = [
        "[models.claude]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n",
        "[models.gpt]\nprovider = \"openai-responses\"\nmodel = \"gpt-5\"\napi_key_env = \"OPENAI_API_KEY\"\n",
        "[models.ollama]\nprovider = \"openai-chat\"\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"qwen3:8b\"\n",
    ];
    for example in examples {
        let header = example.lines().next().unwrap_or_default();
        if candidates
            .iter()
            .any(|c| header == format!("[models.{}]", c.name))
        {
            continue;
        }
        for line in example.lines() {
            text.push_str(&format!("# {line}\n"));
        }
        text.push('\n');
    }
    text.push_str(
        "# Policy rules, plugins, MCP servers and the sandbox: see docs/policy.md, docs/plugins.md,\n\
         # docs/mcp.md and docs/security.md.\n\
         # [[policy.rules]]\n\
         # action = \"process.spawn\"\n\
         # program = \"cargo\"\n\
         # decision = \"allow\"\n",
    );
    text
}

/// Writes the starter config with `candidates` to `home/config.toml`; an existing file is kept
/// unless `replace`. Returns the file written.
///
/// # Errors
/// The file exists and `replace` is false, or it cannot be written.
pub fn write_starter_config(
    home: &Path,
    candidates: &[Candidate],
    replace: bool,
) -> Result<PathBuf, ConfigEditError> {
    let path = home.join("config.toml");
    // The check and the write under the file's lock: no other Bosun's config is replaced.
    let _lock = crate::config_edit::lock(&path)?;
    if path.exists() && !replace {
        return Err(ConfigEditError::Exists { path });
    }
    bosun_plugins::write_atomic(&path, starter_config(candidates).as_bytes()).map_err(
        |source| ConfigEditError::Write {
            path: path.clone(),
            source,
        },
    )?;
    Ok(path)
}

/// Adds `candidate` to the user config as its default model: the starter config when there is no
/// config file yet, else the entry and `default_model` added to the file as it is.
///
/// # Errors
/// The file cannot be read, is not TOML, or cannot be written; it is then unchanged.
pub fn add_model(home: &Path, candidate: &Candidate) -> Result<(), ConfigEditError> {
    let path = home.join("config.toml");
    let held = crate::config_edit::lock(&path)?;
    if !path.exists() {
        return bosun_plugins::write_atomic(
            &path,
            starter_config(std::slice::from_ref(candidate)).as_bytes(),
        )
        .map_err(|source| ConfigEditError::Write { path, source });
    }
    let mut edit = UserConfigEdit::open_locked(path, held)?;
    edit.add_model(&candidate.name, &candidate.entry, true)?;
    edit.save()
}

/// What to tell a person without a terminal: what was found and what to run.
pub fn hint(candidates: &[Candidate], config: &str) -> String {
    match candidates.first() {
        Some(first) => format!(
            "found {}; run `bosun config init` to write it to {config}",
            first.describe()
        ),
        None => format!(
            "set OPENAI_API_KEY or ANTHROPIC_API_KEY, or start Ollama or vLLM, then run `bosun config init` (writes {config}); `bosun` in a terminal opens on a scripted demo model without any key"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_starter_config_parses_with_and_without_candidates() {
        let candidate = Candidate {
            name: "ollama".into(),
            entry: entry(
                ProviderKind::OpenaiChat,
                Some("http://127.0.0.1:11434/v1"),
                "qwen3:8b",
                None,
            ),
            found: "a server answers".into(),
        };
        for candidates in [vec![], vec![candidate.clone()]] {
            let text = starter_config(&candidates);
            let config: crate::config::Config = toml::from_str(&text).unwrap();
            config.models_config().validate().unwrap();
            assert_eq!(config.models.len(), candidates.len(), "{text}");
        }
        let text = starter_config(std::slice::from_ref(&candidate));
        assert!(text.contains("default_model = \"ollama\""), "{text}");
        assert!(!text.contains("# [models.ollama]"), "{text}");
    }

    #[test]
    fn a_model_is_added_to_an_existing_config_keeping_it() {
        let home = tempfile::tempdir().unwrap();
        let before = "# my settings\nmode = \"read-only\"\n\n[[policy.rules]]\naction = \"fs.write\"\ndecision = \"deny\"\n";
        std::fs::write(home.path().join("config.toml"), before).unwrap();
        let candidate = Candidate {
            name: "claude".into(),
            entry: entry(
                ProviderKind::Anthropic,
                None,
                "claude-sonnet-4-5",
                Some("ANTHROPIC_API_KEY"),
            ),
            found: "ANTHROPIC_API_KEY is set".into(),
        };
        add_model(home.path(), &candidate).unwrap();
        let after = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
        assert!(after.starts_with("# my settings\n"), "{after}");
        let config: crate::config::Config = toml::from_str(&after).unwrap();
        assert_eq!(config.default_model.as_deref(), Some("claude"), "{after}");
        assert_eq!(config.models["claude"], candidate.entry);
        assert_eq!(config.policy.rules.len(), 1, "{after}");
    }

    #[test]
    fn the_starter_config_never_replaces_a_file_unasked() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), "# mine\n").unwrap();
        let err = write_starter_config(home.path(), &[], false).unwrap_err();
        assert!(matches!(err, ConfigEditError::Exists { .. }), "{err:?}");
        assert_eq!(
            std::fs::read_to_string(home.path().join("config.toml")).unwrap(),
            "# mine\n"
        );
        write_starter_config(home.path(), &[], true).unwrap();
        let text = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
        assert!(text.starts_with("# Bosun's user configuration"), "{text}");
    }

    #[test]
    fn only_loopback_servers_are_probed() {
        assert_eq!(first_local_model("http://192.0.2.1:11434/v1"), None);
        assert_eq!(first_local_model("https://127.0.0.1:1/v1"), None);
    }
}
