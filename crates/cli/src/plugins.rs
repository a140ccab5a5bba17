//! `bosun plugins …`: list, inspect, trust, enable and scaffold native plugins. Nothing here
//! runs plugin code: states come from the catalog, which only parses metadata.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use bosun_host::config::{LoadedConfig, bosun_home};
use bosun_host::plugin_runtime::install::InstallSource;
pub use bosun_host::user_plugins::TrustReview;
use bosun_host::user_plugins::{
    Removal, Trusted, js_capabilities, review, scope_label, state_detail,
};
pub use bosun_plugins::scaffold::NewKind;
use bosun_plugins::{Catalog, PluginEntry, PluginState, TrustStore};
use serde_json::json;

use crate::env::{Env, load, print_json};
use crate::exit;
use crate::term::{err, errln, out, outln};

/// The trust store of `$BOSUN_HOME`.
pub fn trust_store(config: &LoadedConfig) -> Result<TrustStore> {
    Ok(bosun_host::user_plugins::trust_store(config)?)
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

/// The catalog entry named `name`.
pub fn find<'a>(catalog: &'a Catalog, name: &str) -> Result<&'a PluginEntry> {
    Ok(bosun_host::user_plugins::find(catalog, name)?)
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
pub(crate) fn confirm(question: &str, yes: bool) -> std::io::Result<bool> {
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

/// Reviews `name`, or without it every project plugin here that is not trusted as it is.
/// `None` when there is nothing to trust.
pub fn review_trust(catalog: &Catalog, name: Option<&str>) -> Result<Option<TrustReview>> {
    Ok(bosun_host::user_plugins::review_trust(catalog, name)?)
}

/// Records a reviewed trust decision in `store` and saves it.
pub fn record_trust(store: &mut TrustStore, review: TrustReview) -> Result<()> {
    Ok(review.record(store)?)
}

/// Shows `review` on stderr and asks whether to trust what it shows.
fn ask_trust(review: &TrustReview, yes: bool) -> std::io::Result<bool> {
    err!("{}", review.text);
    confirm("Trust these plugins exactly as they are?", yes)
}

/// What trusting came to, for a person; the exit code.
fn report_trust(outcome: Trusted) -> Result<u8> {
    match outcome {
        Trusted::Already => {
            outln!("nothing to trust: every project plugin here is already trusted as it is");
        }
        Trusted::Declined => {
            errln!("nothing recorded (run in a terminal, or pass --yes)");
            return Ok(exit::NEEDS_APPROVAL);
        }
        Trusted::Now(names) => {
            outln!("trusted {}", names.join(", "));
            // A JavaScript plugin's first call would compile the engine: do it now, saying so.
            load()?.prepare_js_engine()?;
        }
    }
    Ok(exit::OK)
}

pub fn trust(name: Option<&str>, yes: bool) -> Result<u8> {
    let env = load()?;
    let outcome = bosun_host::user_plugins::trust(&env.workspace, &env.config, name, |review| {
        ask_trust(review, yes)
    })?;
    report_trust(outcome)
}

/// Forgets the trust of the plugin `name` of `env`'s catalog and says what happened.
pub fn untrust_named(env: &Env, name: &str) -> Result<String> {
    Ok(
        if bosun_host::user_plugins::untrust(&env.workspace, &env.config, name)? {
            format!("untrusted {name}: its code will not load until trusted again")
        } else {
            format!("`{name}` was not trusted")
        },
    )
}

pub fn untrust(name: &str) -> Result<u8> {
    let env = load()?;
    outln!("{}", untrust_named(&env, name)?);
    Ok(exit::OK)
}

/// `bosun plugins enable NAME [--path PATH] [--yes]`: enabling a user plugin is trusting it,
/// after its review; declined or failed, its entry in config.toml is taken back.
pub fn enable(name: &str, path: Option<&Path>, yes: bool) -> Result<u8> {
    let home = bosun_home()?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let workspace = bosun_host::Workspace::discover(&cwd)
        .with_context(|| format!("finding the workspace of {}", cwd.display()))?;
    let outcome = bosun_host::user_plugins::enable(&workspace, &home, name, path, |review| {
        ask_trust(review, yes)
    })?;
    if outcome == Trusted::Declined {
        errln!("nothing recorded (run in a terminal, or pass --yes)");
        errln!("`{name}` was not enabled: its entry in config.toml was taken back");
        return Ok(exit::NEEDS_APPROVAL);
    }
    report_trust(outcome)
}

pub fn disable(name: &str) -> Result<u8> {
    bosun_host::user_plugins::disable(&bosun_home()?, name)?;
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
    // The folder named is where the plugin comes from: the managed policy's allowed folders
    // hold for it, so a copy into `$BOSUN_HOME/plugins` cannot launder a folder from elsewhere.
    let env = load()?;
    let from = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    bosun_host::managed::check_plugin(
        env.config.managed.as_ref(),
        &bosun_host::managed::PluginArrival {
            name: &name,
            how: bosun_host::managed::PluginPath::Directory,
            dir: Some(&from),
            source: None,
        },
        &env.config.home,
    )
    .map_err(|refusal| anyhow::anyhow!("nothing was installed: {refusal}"))?;
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

/// `bosun plugins remove NAME [--yes] [--json]`: after confirming, forgets a user plugin —
/// its `[plugins.NAME]` entry, its trust and a registry install's integrity record — and
/// deletes its installed copy under `$BOSUN_HOME/plugins` (moved aside first, so it is never
/// half there). A linked plugin's own directory is never deleted.
pub fn remove(name: &str, yes: bool, json: bool) -> Result<u8> {
    let env = load()?;
    let removal = Removal::plan(&env.config, name)?;
    if !confirm(&removal.question(), yes)? {
        errln!("nothing removed (pass --yes to remove without a terminal)");
        return Ok(exit::NEEDS_APPROVAL);
    }
    let deleted = removal.copy.clone();
    removal.carry_out()?;
    if json {
        print_json(&json!({"removed": name, "deleted": deleted}))?;
    } else {
        outln!("removed {name}");
    }
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
