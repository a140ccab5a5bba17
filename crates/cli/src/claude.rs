//! `bosun plugins install NAME@MARKETPLACE`: a Claude Code plugin from a
//! `kind = "claude-marketplace"` registry, fetched (git in the OS sandbox), reviewed — every
//! part that runs code listed, the content digest shown — and installed into the cache keyed by
//! that digest. Its `userConfig` is asked then: on a terminal each value in turn (a secret
//! without echo), else from `--config KEY=VALUE`; answers that are not secrets go to
//! `[claude.plugins."<id>"] config` in the user's config, secrets to
//! `$BOSUN_HOME/claude/secrets/<id>.json` (0600). A required value with no answer refuses the
//! install before anything is written.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Context, Result, bail};
use bosun_claude::install::{InstallOptions, open_marketplace, stage};
use bosun_claude::manifest::UserConfigOption;
use bosun_claude::user_config::{check_answer, load_secrets, save_secrets, text_of};
use bosun_registry::RegistryKind;
use serde_json::json;

use crate::env::{load, print_json};
use crate::exit;
use crate::plugins::confirm;
use crate::term::{errln, outln};

/// `NAME@MARKETPLACE` when `spec` names a plugin of a configured Claude marketplace.
pub fn names_claude_plugin(spec: &str) -> Option<(String, String)> {
    let (name, marketplace) = spec.rsplit_once('@')?;
    if name.is_empty() || marketplace.is_empty() || name.contains('/') {
        return None;
    }
    let env = load().ok()?;
    let config = env.config.user.registries.get(marketplace)?;
    (config.kind == RegistryKind::ClaudeMarketplace)
        .then(|| (name.to_owned(), marketplace.to_owned()))
}

/// Installs `name` from the marketplace `marketplace`.
pub fn install(
    name: &str,
    marketplace: &str,
    allow_unpinned: bool,
    yes: bool,
    json: bool,
    config: &[String],
) -> Result<u8> {
    let given = given_answers(config)?;
    let env = load()?;
    let registries = crate::registry::registries(&env)?;
    let config = registries.sources().get(marketplace).with_context(|| {
        format!("the marketplace `{marketplace}` is not in effect here (the project's [registries] allow leaves it out)")
    })?;
    let location = bosun_claude::source::location(marketplace, config)?;
    let home = &env.config.home;
    let launcher = bosun_launch::Launcher::new(env.config.user.sandbox.clone())
        .private(home)
        .cache_in(home.join("cache"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let staged = rt.block_on(async {
        let opened = open_marketplace(&location, &launcher, home).await?;
        for warning in &opened.marketplace.warnings {
            errln!("warning: {warning}");
        }
        if opened.marketplace.name != marketplace {
            errln!(
                "note: the marketplace calls itself `{}`; Bosun names it `{marketplace}` as your config does",
                opened.marketplace.name
            );
        }
        // Judged before the plugin is fetched: its name, and where its files come from.
        let entry = opened.marketplace.plugins.iter().find(|p| p.name == name);
        let source = entry.and_then(|entry| match &entry.source {
            bosun_claude::marketplace::PluginSource::Remote(remote) => remote.git_url(),
            bosun_claude::marketplace::PluginSource::Relative(_) => None,
        });
        bosun_host::managed::check_plugin(
            env.config.managed.as_ref(),
            &bosun_host::managed::PluginArrival {
                name,
                how: bosun_host::managed::PluginPath::ClaudeMarketplace,
                dir: None,
                source: source.as_deref(),
            },
            home,
        )
        .map_err(|refusal| anyhow::anyhow!("nothing was installed: {refusal}"))?;
        let options = InstallOptions {
            allow_unpinned,
            grant_bin: env.config.user.claude.bin(&format!("{name}@{marketplace}")),
        };
        anyhow::Ok(stage(&opened, marketplace, name, options, &launcher, home).await?)
    })?;
    let options = &staged.layout.manifest.user_config;
    let kept_public = env.config.user.claude.values(&staged.id);
    let kept_secrets = load_secrets(home, &staged.id)?;
    if staged.unchanged() {
        if !given.is_empty() {
            let answers = ask(
                &staged.id,
                options,
                &given,
                false,
                &kept_public,
                &kept_secrets,
            )?;
            keep_answers(home, &staged.id, answers)?;
            outln!("{}: its configuration is updated", staged.id);
        }
        outln!(
            "{} is installed already with the same content ({})",
            staged.id,
            staged.digest
        );
        return Ok(exit::OK);
    }
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    // Checked before the review: a plugin that cannot be configured here is not installed.
    if !interactive {
        ask(
            &staged.id,
            options,
            &given,
            false,
            &kept_public,
            &kept_secrets,
        )?;
    }
    errln!("{}", staged.review());
    if !confirm(
        &format!(
            "Install {} and let it run what is listed above, sandboxed?",
            staged.id
        ),
        yes,
    )? {
        errln!("nothing installed (pass --yes to install without a terminal)");
        return Ok(exit::NEEDS_APPROVAL);
    }
    let answers = ask(
        &staged.id,
        options,
        &given,
        interactive,
        &kept_public,
        &kept_secrets,
    )?;
    let record = staged.commit(home, chrono::Utc::now())?;
    keep_answers(home, &record.id, answers)?;
    if json {
        print_json(&json!({"installed": record}))?;
    } else {
        outln!("installed {} (content {})", record.id, record.digest);
    }
    Ok(exit::OK)
}

/// A plugin's answers, split as they are kept.
struct Answers {
    /// Not secrets: `[claude.plugins."<id>"] config`.
    public: BTreeMap<String, toml_edit::Value>,
    /// Secrets: `$BOSUN_HOME/claude/secrets/<id>.json`.
    secrets: BTreeMap<String, String>,
}

/// `--config KEY=VALUE`, each once.
fn given_answers(config: &[String]) -> Result<BTreeMap<String, String>> {
    let mut given = BTreeMap::new();
    for item in config {
        let Some((key, value)) = item.split_once('=') else {
            bail!("--config `{item}` is not KEY=VALUE");
        };
        if given
            .insert(key.trim().to_owned(), value.to_owned())
            .is_some()
        {
            bail!("--config gives `{}` twice", key.trim());
        }
    }
    Ok(given)
}

/// The answers to `options`: each from `given` (`--config`), else asked on the terminal when
/// `interactive`, else the one kept from before, else its default. A required value with none
/// of these refuses, naming the flags that would give it.
fn ask(
    id: &str,
    options: &BTreeMap<String, UserConfigOption>,
    given: &BTreeMap<String, String>,
    interactive: bool,
    kept_public: &BTreeMap<String, String>,
    kept_secrets: &BTreeMap<String, String>,
) -> Result<Answers> {
    if let Some(unknown) = given.keys().find(|k| !options.contains_key(*k)) {
        let asked: Vec<&str> = options.keys().map(String::as_str).collect();
        bail!(
            "the plugin `{id}` asks for no `{unknown}`; it asks for {}",
            if asked.is_empty() {
                "nothing".to_owned()
            } else {
                asked.join(", ")
            }
        );
    }
    let mut answers = Answers {
        public: BTreeMap::new(),
        secrets: BTreeMap::new(),
    };
    let mut missing = Vec::new();
    if interactive && !options.is_empty() && given.len() < options.len() {
        errln!("{id} asks for its configuration (Enter keeps what is shown in brackets):");
    }
    for (key, option) in options {
        let kept = if option.sensitive {
            kept_secrets.get(key)
        } else {
            kept_public.get(key)
        };
        let value = if let Some(text) = given.get(key) {
            Some(check_answer(key, option, text).map_err(anyhow::Error::msg)?)
        } else if interactive {
            Some(ask_one(key, option, kept.map(String::as_str))?)
        } else if let Some(kept) = kept {
            Some(check_answer(key, option, kept).map_err(anyhow::Error::msg)?)
        } else {
            if option.required && option.default.is_none() {
                missing.push(key.clone());
            }
            None
        };
        let Some(value) = value else { continue };
        if option.sensitive {
            answers.secrets.insert(key.clone(), text_of(&value));
        } else {
            answers.public.insert(key.clone(), toml_of(&value));
        }
    }
    if !missing.is_empty() {
        let flags: Vec<String> = missing
            .iter()
            .map(|k| format!("--config {k}=VALUE"))
            .collect();
        bail!(
            "the plugin `{id}` needs {} and there is no terminal to ask: pass {} (a secret is kept in $BOSUN_HOME/claude/secrets/{id}.json, readable only by you)",
            missing
                .iter()
                .map(|k| format!("`{k}` ({})", options[k].title))
                .collect::<Vec<_>>()
                .join(", "),
            flags.join(" ")
        );
    }
    Ok(answers)
}

/// Asks one value on the terminal until it is a valid one (three tries); a secret is read
/// without echo and its kept value is never shown.
fn ask_one(key: &str, option: &UserConfigOption, kept: Option<&str>) -> Result<serde_json::Value> {
    let shown_default = match (kept, &option.default) {
        (Some(_), _) if option.sensitive => Some("keep the one given before".to_owned()),
        (Some(kept), _) => Some(kept.to_owned()),
        (None, Some(default)) => Some(text_of(default)),
        (None, None) => None,
    };
    for _ in 0..3 {
        let mut question = format!("  {} ({key})", bosun_core::escape_hidden(&option.title));
        if !option.description.trim().is_empty() {
            question.push_str(&format!(
                ": {}",
                bosun_core::escape_hidden(option.description.trim())
            ));
        }
        if let Some(default) = &shown_default {
            question.push_str(&format!(" [{}]", bosun_core::escape_hidden(default)));
        }
        if option.sensitive {
            question.push_str(" (secret, not shown)");
        }
        let line = if option.sensitive {
            read_hidden_line(&question)?
        } else {
            crate::term::err!("{question}: ");
            std::io::stderr().flush()?;
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            line
        };
        let line = line.trim_end_matches(['\r', '\n']);
        let text = match (line.is_empty(), kept, &option.default) {
            (true, Some(kept), _) => kept.to_owned(),
            (true, None, Some(default)) => text_of(default),
            _ => line.to_owned(),
        };
        match check_answer(key, option, &text) {
            Ok(value) => return Ok(value),
            Err(why) => errln!("  {why}"),
        }
    }
    bail!("no valid answer for `{key}`: nothing installed")
}

/// Asks `question` and reads one line from the terminal with its echo off: raw mode for the
/// line, restored whatever happens; Backspace edits, Ctrl-C or Ctrl-D on an empty line gives up.
///
/// The echo goes off before the question is shown: a person (or a paste) answering as soon as
/// it appears would otherwise have the first characters of the secret echoed.
fn read_hidden_line(question: &str) -> Result<String> {
    use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    use ratatui::crossterm::terminal;
    terminal::enable_raw_mode().context("turning the terminal's echo off to read a secret")?;
    let read = (|| -> std::io::Result<Option<String>> {
        crate::term::err!("{question}: ");
        std::io::stderr().flush()?;
        let mut line = String::new();
        loop {
            let Event::Key(key) = event::read()? else {
                continue;
            };
            if key.kind == KeyEventKind::Release {
                continue;
            }
            let control = key.modifiers.contains(KeyModifiers::CONTROL);
            match key.code {
                KeyCode::Enter => return Ok(Some(line)),
                KeyCode::Char('c') if control => return Ok(None),
                KeyCode::Char('d') if control && line.is_empty() => return Ok(None),
                KeyCode::Backspace => {
                    line.pop();
                }
                KeyCode::Char(c) if !control => line.push(c),
                _ => {}
            }
        }
    })();
    let _ = terminal::disable_raw_mode();
    eprintln!();
    match read.context("reading a secret from the terminal")? {
        Some(line) => Ok(line),
        None => bail!("cancelled: nothing installed"),
    }
}

/// A checked answer as TOML: a whole number as an integer.
fn toml_of(value: &serde_json::Value) -> toml_edit::Value {
    match value {
        serde_json::Value::Bool(b) => (*b).into(),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => (f as i64).into(),
            Some(f) => f.into(),
            None => n.to_string().into(),
        },
        serde_json::Value::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(toml_of(item));
            }
            toml_edit::Value::Array(array)
        }
        other => text_of(other).into(),
    }
}

/// Keeps `answers`: the secrets (0600) first, then the config (comments kept).
fn keep_answers(home: &std::path::Path, id: &str, answers: Answers) -> Result<()> {
    if !answers.secrets.is_empty() {
        let mut secrets = load_secrets(home, id)?;
        secrets.extend(answers.secrets);
        save_secrets(home, id, &secrets)?;
    }
    if !answers.public.is_empty() {
        let mut edit = bosun_host::config_edit::UserConfigEdit::open(home)?;
        edit.set_claude_answers(id, &answers.public)?;
        edit.save()?;
    }
    Ok(())
}
