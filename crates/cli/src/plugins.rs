//! `bosun plugins …`: list, inspect, trust, enable and scaffold native plugins. Nothing here
//! runs plugin code: states come from the catalog, which only parses metadata.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use bosun_host::config::{LoadedConfig, bosun_home};
use bosun_host::plugin_runtime::install::InstallSource;
pub use bosun_plugins::scaffold::NewKind;
use bosun_plugins::{
    Catalog, JsManifest, PluginEntry, PluginScope, PluginState, TrustRecord, TrustStore,
};
use serde_json::json;

use crate::env::{Env, load, print_json};
use crate::exit;
use crate::term::{err, errln, out, outln};

/// The trust store of `$BOSUN_HOME`.
pub fn trust_store(config: &LoadedConfig) -> Result<TrustStore> {
    Ok(TrustStore::load(TrustStore::default_path(&config.home))?)
}

pub fn scope_label(scope: &PluginScope) -> &'static str {
    match scope {
        PluginScope::User => "user",
        PluginScope::Project { .. } => "project",
    }
}

fn state_detail(state: &PluginState) -> String {
    match state {
        PluginState::Invalid { reason } => format!("invalid: {reason}"),
        PluginState::Changed { what } => {
            let mut parts = vec![format!(
                "changed since trusted ({} → {})",
                short(&what.old_sha256),
                short(&what.new_sha256)
            )];
            if !what.added_capabilities.is_empty() {
                parts.push(format!(
                    "new capabilities: {}",
                    what.added_capabilities.join(", ")
                ));
            }
            if !what.added_tools.is_empty() {
                parts.push(format!("new tools: {}", what.added_tools.join(", ")));
            }
            parts.join("; ")
        }
        other => other.to_string(),
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

pub fn list(json: bool) -> Result<u8> {
    let env = load()?;
    let catalog = env.listing()?;
    if json {
        print_json(
            &json!({"plugins": catalog.entries(), "warnings": catalog.warnings().iter().map(ToString::to_string).collect::<Vec<_>>()}),
        )?;
        return Ok(exit::OK);
    }
    for line in list_lines(&catalog) {
        outln!("{line}");
    }
    for warning in catalog.warnings() {
        errln!("warning: {warning}");
    }
    Ok(exit::OK)
}

/// The listing for a person: a line per plugin (local name, scope, format, version, state, and
/// its tools — or, for a JavaScript plugin, whose tools are registered when it runs, its declared
/// capabilities), a second line with the details of an invalid or changed one, or a line saying
/// there are none. What `bosun plugins list` prints and the terminal UI's `/plugins` shows.
pub fn list_lines(catalog: &Catalog) -> Vec<String> {
    if catalog.entries().is_empty() {
        return vec!["no plugins; `bosun plugins new NAME` scaffolds one".to_owned()];
    }
    let mut lines = Vec::new();
    for entry in catalog.entries() {
        let tools: Vec<&str> = entry.offers.iter().map(|o| o.tool.as_str()).collect();
        let version = entry.version().unwrap_or_else(|| "-".to_owned());
        let summary = match entry.js() {
            Some(js) => Some(format!(
                "tools registered at activation; {}",
                js_capabilities(js)
            )),
            None => (entry.manifest().is_some() && !tools.is_empty()).then(|| tools.join(", ")),
        };
        lines.push(format!(
            "{:<20} {:<8} {:<11} {:<10} {:<9} {}",
            entry.local_name,
            scope_label(&entry.scope),
            entry.format.to_string(),
            version,
            entry.state.to_string(),
            summary
                .clone()
                .unwrap_or_else(|| state_detail(&entry.state))
        ));
        if matches!(
            entry.state,
            PluginState::Invalid { .. } | PluginState::Changed { .. }
        ) && summary.is_some()
        {
            lines.push(format!("{:<20} {}", "", state_detail(&entry.state)));
        }
    }
    lines
}

/// A JavaScript plugin's capabilities as trust records them, for a person.
fn js_capabilities(js: &JsManifest) -> String {
    let caps: Vec<String> = js.capabilities().into_iter().collect();
    if caps.is_empty() {
        "no capabilities".to_owned()
    } else {
        format!("capabilities: {}", caps.join(", "))
    }
}

pub fn find<'a>(catalog: &'a Catalog, name: &str) -> Result<&'a PluginEntry> {
    catalog
        .entries()
        .iter()
        .find(|e| e.local_name == name)
        .with_context(|| format!("no plugin named `{name}`; `bosun plugins list` shows them"))
}

fn review(entry: &PluginEntry) -> String {
    let mut text = format!(
        "{} ({} {} plugin) at {}\n",
        entry.local_name,
        scope_label(&entry.scope),
        entry.format,
        entry.reviewed_path().display()
    );
    if let Some(js) = entry.js() {
        text.push_str(&format!(
            "  {}@{}  entry {}  sha256 {} (every file of the directory)\n",
            js.name(),
            js.version(),
            js.entry(),
            entry.sha256.as_deref().unwrap_or("?")
        ));
        if let JsManifest::Triggerfish(m) = js {
            text.push_str(&format!(
                "  classification {}  trust {}  endpoints: {}\n",
                m.classification,
                m.trust,
                if m.declared_endpoints.is_empty() {
                    "none".to_owned()
                } else {
                    m.declared_endpoints.join(", ")
                }
            ));
        }
        text.push_str(&format!("  {}\n", js_capabilities(js)));
        if js.code_from_strings() {
            text.push_str(
                "  runs code built from strings (eval, Function): its manifest asks for it, so code the scan and this review did not see can run inside the sandbox\n",
            );
        }
        text.push_str(
            "  tools: registered at activation, by the plugin's code running in the sandbox once trusted\n",
        );
        let env = entry
            .config
            .as_ref()
            .map(|c| c.env.clone())
            .unwrap_or_default();
        text.push_str(&format!(
            "  environment it sees: {}\n",
            if env.is_empty() {
                "none".to_owned()
            } else {
                format!(
                    "{} ([plugins.{}] env; values redacted in traces)",
                    env.join(", "),
                    entry.local_name
                )
            }
        ));
        text.push_str(
            "  processes: a tool of risk `process` may start programs, each judged as process.spawn (asked by default) and run in the OS sandbox\n",
        );
    }
    if let Some(m) = entry.manifest() {
        text.push_str(&format!(
            "  {}@{}  sha256 {}\n",
            m.name,
            m.version,
            entry.sha256.as_deref().unwrap_or("?")
        ));
        if let Some(module) = entry.chock() {
            text.push_str(&format!(
                "  Chock plugin ABI {}  author {}  imports nothing: its capabilities are judged on every call and give it nothing to reach\n",
                module.abi.number(),
                if module.author.is_empty() {
                    "(none)"
                } else {
                    module.author.as_str()
                }
            ));
        }
        for tool in &m.tools {
            let caps: Vec<String> = tool.grants().into_iter().collect();
            text.push_str(&format!(
                "  tool {:<20} risk {:<8} {}\n",
                tool.spec.name.as_str(),
                tool.spec.risk.to_string(),
                if caps.is_empty() {
                    "no capabilities".to_owned()
                } else {
                    caps.join(", ")
                }
            ));
        }
    }
    for refused in entry.refused_tools() {
        text.push_str(&format!(
            "  tool {:<20} not offered: {}\n",
            refused.tool, refused.reason
        ));
    }
    text.push_str(&format!("  state: {}\n", state_detail(&entry.state)));
    text
}

pub fn info(name: &str, json: bool) -> Result<u8> {
    let env = load()?;
    let (_, catalog) = env.catalog()?;
    let entry = find(&catalog, name)?;
    if json {
        print_json(entry)?;
    } else {
        out!("{}", review(entry));
        if let Some(prompt) = entry.manifest().and_then(|m| m.prompt.as_ref()) {
            outln!("  prompt contribution: {} bytes", prompt.len());
        }
    }
    Ok(exit::OK)
}

/// Asks the person to confirm; `--yes` answers for them; with no terminal and no `--yes`, nothing
/// is recorded.
pub(crate) fn confirm(question: &str, yes: bool) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(false);
    }
    err!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(
        line.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Plugins reviewed for trust: the text a person reads before deciding, and the records
/// (content hashes) that trusting them writes — the bytes that were reviewed, nothing read later.
pub struct TrustReview {
    /// Each plugin's review, then what trust means.
    pub text: String,
    /// The plugins' local names.
    pub names: Vec<String>,
    records: Vec<(PluginScope, String, TrustRecord)>,
}

/// Reviews `name`, or without it every project plugin here that is not trusted as it is.
/// `None` when there is nothing to trust.
pub fn review_trust(catalog: &Catalog, name: Option<&str>) -> Result<Option<TrustReview>> {
    let wanted: Vec<&PluginEntry> = match name {
        Some(name) => vec![find(catalog, name)?],
        // Without a name: every project plugin of this workspace that is not trusted as it is.
        None => catalog
            .entries()
            .iter()
            .filter(|e| matches!(e.scope, PluginScope::Project { .. }))
            .filter(|e| {
                matches!(
                    e.state,
                    PluginState::Untrusted | PluginState::Changed { .. }
                )
            })
            .collect(),
    };
    if wanted.is_empty() {
        return Ok(None);
    }
    let now = chrono::Utc::now();
    let mut text = String::new();
    let mut records = Vec::new();
    for entry in &wanted {
        if let PluginState::Invalid { reason } = &entry.state {
            bail!(
                "`{}` is invalid and cannot be trusted: {reason}",
                entry.local_name
            );
        }
        text.push_str(&review(entry));
        let record = entry
            .trust_record(now)
            .with_context(|| format!("`{}` has no readable plugin", entry.local_name))?;
        records.push((entry.scope.clone(), entry.local_name.clone(), record));
    }
    text.push_str(
        "Trusted plugins run sandboxed, with the capabilities listed above, as your policy decides each call.\n",
    );
    Ok(Some(TrustReview {
        text,
        names: wanted.iter().map(|e| e.local_name.clone()).collect(),
        records,
    }))
}

/// Records a reviewed trust decision in `store` and saves it.
pub fn record_trust(store: &mut TrustStore, review: TrustReview) -> Result<()> {
    for (scope, name, record) in review.records {
        store.record(&scope, &name, record);
    }
    store.save()?;
    Ok(())
}

pub fn trust(name: Option<&str>, yes: bool) -> Result<u8> {
    let env = load()?;
    let (mut store, catalog) = env.catalog()?;
    let Some(review) = review_trust(&catalog, name)? else {
        outln!("nothing to trust: every project plugin here is already trusted as it is");
        return Ok(exit::OK);
    };
    err!("{}", review.text);
    if !confirm("Trust these plugins exactly as they are?", yes)? {
        errln!("nothing recorded (run in a terminal, or pass --yes)");
        return Ok(exit::NEEDS_APPROVAL);
    }
    let names = review.names.join(", ");
    record_trust(&mut store, review)?;
    outln!("trusted {names}");
    // A JavaScript plugin's first call would compile the engine: do it now, saying so.
    load()?.prepare_js_engine()?;
    Ok(exit::OK)
}

/// Forgets the trust of the plugin `name` of `env`'s catalog and says what happened.
pub fn untrust_named(env: &Env, name: &str) -> Result<String> {
    let (mut store, catalog) = env.catalog()?;
    let entry = find(&catalog, name)?;
    if store.remove(&entry.scope, name).is_none() {
        return Ok(format!("`{name}` was not trusted"));
    }
    store.save()?;
    Ok(format!(
        "untrusted {name}: its code will not load until trusted again"
    ))
}

pub fn untrust(name: &str) -> Result<u8> {
    let env = load()?;
    outln!("{}", untrust_named(&env, name)?);
    Ok(exit::OK)
}

/// Rewrites the user's config with `edit` applied, atomically and keeping comments.
pub(crate) fn edit_user_config(
    home: &Path,
    edit: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<()>,
) -> Result<()> {
    let path = home.join("config.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("parsing {}", path.display()))?;
    edit(&mut doc)?;
    bosun_host::write_atomic(&path, doc.to_string().as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

pub fn enable(name: &str, path: Option<&Path>, yes: bool) -> Result<u8> {
    if !bosun_plugins::is_local_name(name) {
        bail!("`{name}` is not a valid local name: use a-z, 0-9, - and _, starting with a letter");
    }
    let home = bosun_home()?;
    // Put back as it was if enabling fails at any step: a failed enable changes nothing.
    let config_path = home.join("config.toml");
    let before = match std::fs::read(&config_path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", config_path.display())),
    };
    let restore = || -> Result<()> {
        match &before {
            Some(bytes) => bosun_host::write_atomic(&config_path, bytes),
            None => match std::fs::remove_file(&config_path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        }
        .with_context(|| format!("restoring {}", config_path.display()))
    };
    let outcome = enable_and_trust(&home, name, path, yes);
    match outcome {
        Ok(code) if code == exit::OK => Ok(code),
        Ok(code) => {
            restore()?;
            errln!("`{name}` was not enabled: config.toml is as it was");
            Ok(code)
        }
        Err(e) => {
            restore()?;
            Err(e.context(format!(
                "`{name}` was not enabled: config.toml is as it was"
            )))
        }
    }
}

/// Sets `[plugins.NAME] enabled = true` with `path` when one is given; without one the path
/// already configured is kept (a Chock module file, a directory elsewhere), and only a plugin
/// with none gets `NAME` (its directory under `$BOSUN_HOME/plugins`).
fn enable_and_trust(home: &Path, name: &str, path: Option<&Path>, yes: bool) -> Result<u8> {
    let mut shown = PathBuf::from(name);
    edit_user_config(home, |doc| {
        let plugins = doc.entry("plugins").or_insert(toml_edit::table());
        let Some(plugins) = plugins.as_table_mut() else {
            bail!("`plugins` in config.toml is not a table");
        };
        plugins.set_implicit(true);
        let entry = plugins.entry(name).or_insert(toml_edit::table());
        let Some(entry) = entry.as_table_mut() else {
            bail!("`plugins.{name}` in config.toml is not a table");
        };
        match (path, entry.get("path")) {
            (Some(path), _) => entry["path"] = toml_edit::value(path.display().to_string()),
            (None, Some(configured)) => match configured.as_str() {
                Some(configured) => shown = PathBuf::from(configured),
                None => bail!(
                    "`plugins.{name}.path` in config.toml is not a string: write the plugin's directory or module file as a string"
                ),
            },
            (None, None) => entry["path"] = toml_edit::value(name),
        }
        entry["enabled"] = toml_edit::value(true);
        Ok(())
    })?;
    if let Some(path) = path {
        shown = path.to_owned();
    }
    // Enabling is the trust decision for a user plugin: review and record its hash now. A
    // plugin that cannot be loaded (missing, invalid manifest) fails here, before trust.
    let env = load()?;
    let (_, catalog) = env.catalog()?;
    if let Some(entry) = catalog.entries().iter().find(|e| e.local_name == name)
        && let PluginState::Invalid { reason } = &entry.state
    {
        bail!("the plugin at {} cannot be used: {reason}", shown.display());
    }
    trust(Some(name), yes)
}

pub fn disable(name: &str) -> Result<u8> {
    let home = bosun_home()?;
    edit_user_config(&home, |doc| {
        let Some(entry) = doc
            .get_mut("plugins")
            .and_then(|p| p.get_mut(name))
            .and_then(|e| e.as_table_mut())
        else {
            bail!("no [plugins.{name}] in config.toml");
        };
        entry["enabled"] = toml_edit::value(false);
        Ok(())
    })?;
    outln!("disabled {name}");
    Ok(exit::OK)
}

/// `bosun plugins new NAME [--forge | --triggerfish] [--dir DIR] [--sdk-path PATH]`.
pub fn new(name: &str, dir: Option<&Path>, kind: NewKind, sdk_path: Option<&Path>) -> Result<u8> {
    let dir = dir
        .map(Path::to_owned)
        .unwrap_or_else(|| PathBuf::from(name));
    let written = bosun_plugins::scaffold::new_plugin(&dir, name, kind, sdk_path)?;
    for file in written
        .iter()
        .filter(|f| !f.to_string_lossy().contains("vendor/"))
    {
        outln!("created {}", file.display());
    }
    match kind {
        NewKind::Rust => {
            if sdk_path.is_none() {
                outln!(
                    "created {} (the Rust SDK, so the crate builds anywhere)",
                    dir.join("vendor/bosun-sdk").display()
                );
            }
            outln!(
                "build it: (cd {} && cargo build --target wasm32-wasip2 --release)   (once: rustup target add wasm32-wasip2)",
                dir.display()
            );
            outln!(
                "then: bosun plugins install {} (after a rebuild: add --force)",
                dir.display()
            );
        }
        NewKind::Forge | NewKind::Triggerfish => {
            outln!(
                "try it: bosun plugins install {} (add --link while you edit it)",
                dir.display()
            );
        }
    }
    Ok(exit::OK)
}

/// `bosun plugins install PATH [--name NAME] [--link] [--yes]`.
pub fn install(path: &Path, name: Option<&str>, link: bool, force: bool, yes: bool) -> Result<u8> {
    let cargo_target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from);
    let (source, derived) = InstallSource::of(path, cargo_target.as_deref())?;
    let name = name.map_or(derived, str::to_owned);
    if !bosun_plugins::is_local_name(&name) {
        bail!(
            "`{name}` is not a valid local name: give one with --name (a-z, 0-9, - and _, starting with a letter)"
        );
    }
    let home = bosun_home()?;
    if link {
        let InstallSource::Dir(dir) = source else {
            bail!(
                "--link needs a directory Bosun loads as it is (with plugin.wasm, plugin.json or mod.ts); a crate or a .wasm file is installed as a copy"
            );
        };
        return enable(&name, Some(&dir), yes);
    }
    let plugins = bosun_plugins::discovery::user_plugins_dir(&home);
    if force {
        // A rebuilt plugin: the old copy stays in place until the new one is enabled.
        let replaced = source.replace_into(&plugins, &name)?;
        return match enable(&name, Some(Path::new(&name)), yes) {
            Ok(code) if code == exit::OK => {
                outln!("installed {name} in {}", replaced.installed.path.display());
                replaced.commit();
                Ok(code)
            }
            other => {
                replaced.rollback();
                other
            }
        };
    }
    let installed = source.install_into(&plugins, &name)?;
    match enable(&name, Some(Path::new(&name)), yes) {
        Ok(code) if code == exit::OK => {
            outln!("installed {name} in {}", installed.path.display());
            Ok(code)
        }
        other => {
            // Enabling failed or was declined: the copy goes too.
            installed.remove();
            other
        }
    }
}

/// `bosun plugins remove NAME [--yes]`: after confirming, forgets a user plugin — its
/// `[plugins.NAME]` entry and its trust — and deletes its installed copy under
/// `$BOSUN_HOME/plugins` (moved aside first, so it is never half there). A linked plugin's own
/// directory is never deleted.
pub fn remove(name: &str, yes: bool) -> Result<u8> {
    if !bosun_plugins::is_local_name(name) {
        bail!("`{name}` is not a plugin's local name");
    }
    let env = load()?;
    let plugins = bosun_plugins::discovery::user_plugins_dir(&env.config.home);
    let copy = plugins.join(name);
    let configured = env.config.user.plugins.get(name);
    // The installed copy is deleted only when it is the plugin's directory (not a linked one).
    let owns_copy = copy.is_dir()
        && !copy.is_symlink()
        && configured.is_none_or(|c| c.path == Path::new(name) || c.path == copy);
    if configured.is_none() && !owns_copy {
        bail!(
            "no user plugin `{name}`: neither [plugins.{name}] in {} nor {}",
            crate::env::config_path(&env),
            copy.display()
        );
    }
    let what = if owns_copy {
        format!(
            "Remove the plugin `{name}`: delete {}, its trust and its entry?",
            copy.display()
        )
    } else {
        format!("Remove the plugin `{name}`: its trust and its entry (its directory stays)?")
    };
    if !confirm(&what, yes)? {
        errln!("nothing removed (pass --yes to remove without a terminal)");
        return Ok(exit::NEEDS_APPROVAL);
    }
    let aside = plugins.join(format!(".removing-{name}-{}", std::process::id()));
    if owns_copy {
        std::fs::rename(&copy, &aside)
            .with_context(|| format!("moving {} aside", copy.display()))?;
    }
    let forgotten = (|| -> Result<()> {
        if configured.is_some() {
            edit_user_config(&env.config.home, |doc| {
                if let Some(table) = doc.get_mut("plugins").and_then(|p| p.as_table_like_mut()) {
                    table.remove(name);
                }
                Ok(())
            })?;
        }
        let (mut store, _) = env.catalog()?;
        if store
            .remove(&bosun_plugins::PluginScope::User, name)
            .is_some()
        {
            store.save()?;
        }
        Ok(())
    })();
    if let Err(e) = forgotten {
        if owns_copy {
            let _ = std::fs::rename(&aside, &copy);
        }
        return Err(e);
    }
    if owns_copy {
        std::fs::remove_dir_all(&aside).with_context(|| format!("deleting {}", aside.display()))?;
    }
    outln!("removed {name}");
    Ok(exit::OK)
}

/// `bosun plugins scan PATH`: the scanner's findings and verdict for a JavaScript/TypeScript
/// plugin directory (or one file). Reads syntax only; nothing the plugin ships is run.
pub fn scan(path: &Path, json: bool) -> Result<u8> {
    let report = bosun_plugins::scan::scan_dir(path)
        .with_context(|| format!("scanning {}", path.display()))?;
    if json {
        print_json(&report)?;
    } else {
        out!("{}", scan_text(&report));
    }
    Ok(if report.refused {
        exit::DENIED
    } else {
        exit::OK
    })
}

/// The human form of a scan report: one line per finding, a summary line, the verdict.
fn scan_text(report: &bosun_plugins::scan::ScanReport) -> String {
    use bosun_plugins::scan::rules::{CRITICAL_WEIGHT, REFUSE_TOTAL};
    let mut text = String::new();
    for f in &report.findings {
        let place = if f.line == 0 {
            f.file.clone()
        } else {
            format!("{}:{}:{}", f.file, f.line, f.column)
        };
        text.push_str(&format!(
            "{place}  [{}, weight {}]  {}\n",
            f.category, f.weight, f.message
        ));
    }
    let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    text.push_str(&format!(
        "{} scanned, {}, total {}",
        plural(report.files_scanned, "file"),
        plural(report.findings.len(), "finding"),
        report.total
    ));
    if report.findings_omitted > 0 {
        text.push_str(&format!(" ({} more not listed)", report.findings_omitted));
    }
    text.push('\n');
    if let Some(sha256) = &report.sha256 {
        text.push_str(&format!(
            "snapshot sha256 {sha256}: exactly the files trust would pin and the engine would load\n"
        ));
    }
    let critical = report.findings.iter().any(|f| f.weight >= CRITICAL_WEIGHT);
    text.push_str(&if critical {
        format!("refused: a finding of weight {CRITICAL_WEIGHT} refuses on its own\n")
    } else if report.refused {
        format!(
            "refused: the total {} reaches {REFUSE_TOTAL}\n",
            report.total
        )
    } else {
        "passed (a review aid: the sandbox still confines whatever the plugin does)\n".to_owned()
    });
    text
}
