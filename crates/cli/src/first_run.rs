//! The way in when no model is configured: find what this machine offers (the official
//! providers' key variables, a local Ollama or vLLM on its usual port), write the `[models.*]`
//! entry after asking, and otherwise open the terminal UI on the scripted demo model so it can be
//! tried without a key. Also the starter config of `bosun config init`.
//!
//! Never prints a key, never asks without a terminal (it says what to run instead), and writes
//! the user config only whole (`write_atomic`).

use std::io::{BufRead, IsTerminal, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bosun_agent::scripted::{Script, ScriptedModel, ScriptedServer};
use bosun_host::config::LoadedConfig;
use bosun_models::{ModelConfig, ProviderKind, process_env};

use crate::env::Env;
use crate::term::{err, errln};

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

/// The script of the demo model: what it says to every task.
const DEMO_SCRIPT: &str = include_str!("demo-model.json");

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

fn entry(
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

/// `bosun config init [--force]`: writes the starter config to `$BOSUN_HOME/config.toml`.
pub fn config_init(force: bool) -> Result<u8> {
    let home = bosun_host::config::bosun_home()?;
    let path = home.join("config.toml");
    if path.exists() && !force {
        bail!(
            "{} already exists: `bosun config check` validates it; pass --force to replace it with the starter config",
            path.display()
        );
    }
    let candidates = detect();
    bosun_host::write_atomic(&path, starter_config(&candidates).as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    crate::term::outln!("wrote {}", path.display());
    match candidates.first() {
        Some(first) => crate::term::outln!("default model: {}", first.describe()),
        None => crate::term::outln!(
            "no model found (no OPENAI_API_KEY or ANTHROPIC_API_KEY, no local Ollama or vLLM): uncomment one of the [models.*] examples"
        ),
    }
    Ok(crate::exit::OK)
}

/// Adds `candidate` to the user config as its default model: the starter config when there is no
/// config file yet, else the entry and `default_model` added to the file as it is.
fn add_model(home: &Path, candidate: &Candidate) -> Result<()> {
    let path = home.join("config.toml");
    if !path.exists() {
        return bosun_host::write_atomic(
            &path,
            starter_config(std::slice::from_ref(candidate)).as_bytes(),
        )
        .with_context(|| format!("writing {}", path.display()));
    }
    crate::plugins::edit_user_config(home, |doc| {
        let added: toml_edit::DocumentMut = candidate
            .toml()
            .parse()
            .context("building the model entry")?;
        let models = doc
            .entry("models")
            .or_insert(toml_edit::table())
            .as_table_mut()
            .context("`models` in the config is not a table")?;
        models.set_implicit(true);
        if let Some(new) = added.get("models").and_then(|m| m.get(&candidate.name)) {
            models.insert(&candidate.name, new.clone());
        }
        // A top-level key: toml_edit writes it with the others, before the first table.
        doc.insert("default_model", toml_edit::value(candidate.name.clone()));
        Ok(())
    })
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

/// Asks on the terminal whether to use each candidate in turn and writes the first accepted.
/// Returns whether one was written.
fn offer(env: &Env, candidates: &[Candidate]) -> Result<bool> {
    let path = crate::env::config_path(env);
    errln!("No model is configured yet.");
    for candidate in candidates {
        errln!(
            "Found {}:\n{}",
            candidate.found,
            candidate.toml().trim_end()
        );
        err!("Add it to {path} as the default model? [Y/n] ");
        std::io::stderr().flush()?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        if matches!(line.trim().to_ascii_lowercase().as_str(), "" | "y" | "yes") {
            add_model(&env.config.home, candidate)?;
            errln!("wrote [models.{}] to {path}", candidate.name);
            return Ok(true);
        }
    }
    Ok(false)
}

/// The demo model running for this process, kept alive while it is used.
pub struct Demo {
    _server: ScriptedServer,
    _runtime: tokio::runtime::Runtime,
}

/// For `bosun` with no model configured: the first run. On a terminal it offers what
/// [`detect`] found and reloads the configuration after writing an entry; otherwise (declined,
/// nothing found) the configuration is given a `[models.demo]` entry on the scripted demo model,
/// for this process only (nothing is written).
pub fn prepare_interactive(env: Env) -> Result<(Env, Option<Demo>)> {
    if !env.config.user.models.is_empty() {
        return Ok((env, None));
    }
    let candidates = detect();
    if std::io::stdin().is_terminal() && !candidates.is_empty() && offer(&env, &candidates)? {
        return Ok((crate::env::load()?, None));
    }
    let (env, demo) = with_demo_model(env)?;
    errln!(
        "Opening on the scripted DEMO model (not a real model: it answers every task from a script). {}",
        hint(&candidates, &crate::env::config_path(&env))
    );
    Ok((env, Some(demo)))
}

/// For `bosun run` with no model configured: on a terminal, offers what [`detect`] found; returns
/// the reloaded configuration when an entry was written, `None` when the run cannot go on (the
/// caller reports that no model is configured, with [`hint`]).
pub fn prepare_run(env: &Env) -> Result<Option<Env>> {
    if !env.config.user.models.is_empty() {
        return Ok(None);
    }
    let candidates = detect();
    if std::io::stdin().is_terminal() && !candidates.is_empty() && offer(env, &candidates)? {
        return Ok(Some(crate::env::load()?));
    }
    bail!("{}", hint(&candidates, &crate::env::config_path(env)))
}

/// `env` with `[models.demo]` on a scripted model served on loopback by this process.
fn with_demo_model(env: Env) -> Result<(Env, Demo)> {
    let script =
        Script::from_json(DEMO_SCRIPT).map_err(|e| anyhow::anyhow!("the demo script: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the demo model")?;
    let server = runtime
        .block_on(ScriptedModel::serve(script))
        .context("starting the demo model on 127.0.0.1")?;
    let mut config: LoadedConfig =
        Arc::try_unwrap(env.config).map_err(|_| anyhow::anyhow!("the configuration is in use"))?;
    config.user.models.insert(
        "demo".to_owned(),
        entry(
            ProviderKind::OpenaiChat,
            Some(server.base_url()),
            bosun_agent::scripted::SCRIPTED_MODEL_ID,
            None,
        ),
    );
    config.user.default_model = Some("demo".to_owned());
    Ok((
        Env {
            workspace: env.workspace,
            config: Arc::new(config),
        },
        Demo {
            _server: server,
            _runtime: runtime,
        },
    ))
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
            let config: bosun_host::config::Config = toml::from_str(&text).unwrap();
            config.models_config().validate().unwrap();
            assert_eq!(config.models.len(), candidates.len(), "{text}");
        }
        let text = starter_config(std::slice::from_ref(&candidate));
        assert!(text.contains("default_model = \"ollama\""), "{text}");
        assert!(!text.contains("# [models.ollama]"), "{text}");
    }

    #[test]
    fn the_demo_script_is_valid() {
        let script = Script::from_json(DEMO_SCRIPT).unwrap();
        assert!(script.each_task);
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
        let config: bosun_host::config::Config = toml::from_str(&after).unwrap();
        assert_eq!(config.default_model.as_deref(), Some("claude"), "{after}");
        assert_eq!(config.models["claude"], candidate.entry);
        assert_eq!(config.policy.rules.len(), 1, "{after}");
    }
}
