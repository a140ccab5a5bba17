//! `bosun plugins search | install NAME | update | verify | publish`, `bosun skills search |
//! install | update | publish`, and
//! `bosun registry keygen | init | trust`: the registry commands. They parse, call
//! `bosun-registry` and the host's install path (`plugin_runtime::install::registry`), and
//! print; a download shows a progress bar on a terminal and nothing on a pipe.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Context, Result, bail};
use bosun_host::plugin_runtime::install::registry as install;
use bosun_registry::fetch::{Progress, Quiet};
use bosun_registry::key::{PrivateKey, display_fingerprint};
use bosun_registry::publish::{Expiry, Signing};
use bosun_registry::{ArtifactKind, Registries, RegistryKind, Requested, Source, Target};
use serde_json::json;

use crate::env::{Env, load, print_json};
use crate::exit;
use crate::plugins::confirm;
use crate::term::{errln, outln};

/// A progress bar on stderr when it is a terminal.
struct Bar(Option<indicatif::ProgressBar>);

impl Bar {
    fn new() -> Self {
        Self(
            std::io::stderr()
                .is_terminal()
                .then(indicatif::ProgressBar::hidden),
        )
    }
}

impl Progress for Bar {
    fn start(&self, what: &str, total: Option<u64>) {
        if let Some(bar) = &self.0 {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar.set_length(total.unwrap_or(0));
            let style = indicatif::ProgressStyle::with_template(
                "{msg} {bytes}/{total_bytes} {bytes_per_sec} {wide_bar}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_message(what.rsplit('/').next().unwrap_or(what).to_owned());
        }
    }
    fn advance(&self, bytes: u64) {
        if let Some(bar) = &self.0 {
            bar.inc(bytes);
        }
    }
    fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// The registries in effect, with every kind's opener (OCI, Claude Code marketplaces); their
/// configuration warnings printed once.
pub(crate) fn registries(env: &Env) -> Result<Registries> {
    let registries = install::registries(&env.config)?;
    for warning in registries.warnings() {
        errln!("warning: {warning}");
    }
    Ok(registries)
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

/// The sources to look in: the one named, else every source in effect.
fn sources(env: &Env, from: Option<&str>) -> Result<Vec<Box<dyn Source>>> {
    sources_of(env, &registries(env)?, from)
}

fn sources_of(
    env: &Env,
    registries: &Registries,
    from: Option<&str>,
) -> Result<Vec<Box<dyn Source>>> {
    let names: Vec<String> = match from {
        Some(name) => vec![name.to_owned()],
        None => registries.names().into_iter().collect(),
    };
    if names.is_empty() {
        bail!(
            "no registry is configured: add one to {} (for example [registries.reef] kind = \"reef\", url = \"https://reef.trigger.fish\"); see docs/publishing.md",
            crate::env::config_path(env)
        );
    }
    names
        .iter()
        .map(|n| Ok(registries.open(n, &env.config.home)?))
        .collect()
}

fn target_json(source: &dyn Source, t: &Target) -> serde_json::Value {
    json!({
        "source": source.name(), "trust": source.label(), "name": t.claims.name,
        "version": t.claims.version, "description": t.claims.description, "tags": t.claims.tags,
        "sha256": t.sha256, "signer": t.signer.describe(), "claims": t.claims,
    })
}

/// One search result.
pub(crate) struct Found {
    /// As `--json` prints it.
    pub json: serde_json::Value,
    /// What the source says it holds.
    pub target: Target,
    /// The source's name.
    pub source: String,
    /// Its trust label (signed, or "unsigned: checksum from the same origin").
    pub label: String,
}

/// Searches every source in effect (or the one named) for `query`; a source that fails is a
/// warning, not the end. Prints nothing: the terminal and the TUI share it.
pub(crate) fn find(
    env: &Env,
    kind: ArtifactKind,
    query: &str,
    from: Option<&str>,
) -> Result<(Vec<Found>, Vec<String>)> {
    let registries = install::registries(&env.config)?;
    let mut warnings: Vec<String> = registries.warnings().to_vec();
    let rt = runtime()?;
    let mut found = Vec::new();
    for source in sources_of(env, &registries, from)? {
        match rt.block_on(source.entries(kind, now())) {
            Ok(entries) => {
                for t in bosun_registry::source::search(entries, query, 50) {
                    found.push(Found {
                        json: target_json(source.as_ref(), &t),
                        target: t,
                        source: source.name().to_owned(),
                        label: source.label(),
                    });
                }
            }
            Err(e) => warnings.push(format!("the registry `{}`: {e}", source.name())),
        }
    }
    Ok((found, warnings))
}

/// One line of a search result: name, version, source and its trust label, description.
pub(crate) fn found_line(f: &Found) -> String {
    format!(
        "{} {}  [{}: {}]  {}",
        f.target.claims.name,
        f.target.claims.version,
        f.source,
        f.label,
        bosun_core::escape_hidden(&f.target.claims.description)
    )
}

/// `bosun plugins search QUERY` / `bosun skills search QUERY`.
pub fn search(kind: ArtifactKind, query: &str, from: Option<&str>, json: bool) -> Result<u8> {
    let env = load()?;
    let (found, warnings) = find(&env, kind, query, from)?;
    for warning in &warnings {
        errln!("warning: {warning}");
    }
    if json {
        print_json(&json!({"results": found.iter().map(|f| &f.json).collect::<Vec<_>>()}))?;
        return Ok(exit::OK);
    }
    if found.is_empty() {
        outln!("nothing matches `{}`", bosun_core::escape_hidden(query));
    }
    for f in &found {
        outln!("{}", found_line(f));
    }
    Ok(exit::OK)
}

/// Whether `bosun plugins install ARG` names a registry plugin rather than a path.
pub fn names_registry_plugin(arg: &Path, from: Option<&str>) -> bool {
    from.is_some() || (!arg.exists() && arg.to_str().is_some_and(|s| Requested::parse(s).is_ok()))
}

/// The one source holding `requested`, or an error naming them when several do.
fn locate(
    env: &Env,
    rt: &tokio::runtime::Runtime,
    kind: ArtifactKind,
    requested: &Requested,
    from: Option<&str>,
) -> Result<Box<dyn Source>> {
    let mut holding = Vec::new();
    let mut problems = Vec::new();
    for source in sources(env, from)? {
        match rt.block_on(source.resolve(kind, requested, now())) {
            Ok(_) => holding.push(source),
            Err(e) => problems.push(format!("{}: {e}", source.name())),
        }
    }
    match holding.len() {
        1 => Ok(holding.remove(0)),
        0 => bail!("`{requested}` was not found: {}", problems.join("; ")),
        _ => bail!(
            "`{requested}` is in several registries ({}): choose one with --from",
            holding
                .iter()
                .map(|s| s.name().to_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Stages `requested` of `kind` from `source`: fetched, verified, read and compared.
fn stage(
    env: &Env,
    rt: &tokio::runtime::Runtime,
    kind: ArtifactKind,
    source: &dyn Source,
    requested: &Requested,
    progress: &dyn Progress,
    force: bool,
) -> Result<install::Staged, install::RegistryInstallError> {
    let home = &env.config.home;
    if kind == ArtifactKind::Plugin {
        // Judged before anything is fetched: the plugin's name, and where it would live.
        bosun_host::managed::check_plugin(
            env.config.managed.as_ref(),
            &bosun_host::managed::PluginArrival {
                name: &requested.name,
                how: bosun_host::managed::PluginPath::Registry,
                dir: Some(&install::installed_root(home, kind).join(&requested.name)),
                source: None,
            },
            home,
        )
        .map_err(|refusal| install::RegistryInstallError::Managed(refusal.to_string()))?;
    }
    rt.block_on(async {
        match kind {
            ArtifactKind::Plugin => {
                install::stage(home, source, requested, now(), progress, force, &[]).await
            }
            ArtifactKind::Skill => {
                install::stage_skill(home, source, requested, now(), progress, force).await
            }
        }
    })
}

/// `bosun plugins install NAME[@VERSION]` / `bosun skills install NAME[@VERSION]`
/// `[--from SOURCE] [--force] [--yes]`.
pub fn install(
    kind: ArtifactKind,
    spec: &str,
    from: Option<&str>,
    force: bool,
    yes: bool,
    json: bool,
) -> Result<u8> {
    let requested = Requested::parse(spec)?;
    let env = load()?;
    let rt = runtime()?;
    let source = locate(&env, &rt, kind, &requested, from)?;
    let bar = Bar::new();
    let progress: &dyn Progress = if json { &Quiet } else { &bar };
    let staged = stage(
        &env,
        &rt,
        kind,
        source.as_ref(),
        &requested,
        progress,
        force,
    )?;
    errln!("{}", staged.review());
    if !confirm(
        &format!(
            "Install {} {}?",
            staged.name(),
            staged.target.claims.version
        ),
        yes,
    )? {
        errln!("nothing installed (pass --yes to install without a terminal)");
        return Ok(exit::NEEDS_APPROVAL);
    }
    let record = staged.commit(&env.workspace, &env.config.home, now())?;
    if json {
        print_json(&json!({"installed": record}))?;
    } else {
        outln!(
            "installed {} {} from {} ({})",
            record.name,
            record.version,
            record.source,
            record.signer
        );
    }
    Ok(exit::OK)
}

/// `bosun plugins update [NAME] [--check] [--force] [--yes]` / `bosun skills update …`.
pub fn update(
    kind: ArtifactKind,
    name: Option<&str>,
    check: bool,
    force: bool,
    yes: bool,
    json: bool,
) -> Result<u8> {
    let env = load()?;
    let rt = runtime()?;
    let lock = bosun_plugins::lock::InstallLock::load(&env.config.home)?;
    let registries = registries(&env)?;
    let records = match kind {
        ArtifactKind::Plugin => lock.plugins(),
        ArtifactKind::Skill => lock.skills(),
    };
    let names: Vec<String> = match name {
        Some(n) => vec![n.to_owned()],
        None => records.keys().cloned().collect(),
    };
    let mut report = Vec::new();
    let mut code = exit::OK;
    for name in names {
        let Some(record) = records.get(&name) else {
            bail!(
                "`{name}` was not installed from a registry (`bosun {} update` lists those that were)",
                kind.dir()
            );
        };
        let source = registries.open(&record.source, &env.config.home)?;
        let requested = Requested::parse(&record.name)?;
        let newest = rt.block_on(source.resolve(kind, &requested, now()))?;
        let newer = semver::Version::parse(&newest.claims.version).ok()
            > semver::Version::parse(&record.version).ok();
        if !newer {
            report.push(json!({"name": name, "installed": record.version, "newest": newest.claims.version, "update": false}));
            if !json {
                outln!("{name} {} is up to date", record.version);
            }
            continue;
        }
        if check {
            report.push(json!({"name": name, "installed": record.version, "newest": newest.claims.version, "update": true}));
            if !json {
                outln!(
                    "{name}: {} -> {} available",
                    record.version,
                    newest.claims.version
                );
            }
            continue;
        }
        let exact = Requested::parse(&format!("{}@{}", record.name, newest.claims.version))?;
        let bar = Bar::new();
        let progress: &dyn Progress = if json { &Quiet } else { &bar };
        let staged = match stage(&env, &rt, kind, source.as_ref(), &exact, progress, force) {
            Ok(staged) => staged,
            Err(e) => {
                errln!("{name}: not updated, {} keeps serving: {e}", record.version);
                code = exit::TOOL_ERROR;
                continue;
            }
        };
        errln!("{}", staged.review());
        let question = if staged.grew() {
            format!(
                "{name} {} asks for more than {} (marked GREW above). Update?",
                newest.claims.version, record.version
            )
        } else {
            format!("Update {name} to {}?", newest.claims.version)
        };
        if !confirm(&question, yes)? {
            errln!("{name}: not updated ({} keeps serving)", record.version);
            code = exit::NEEDS_APPROVAL;
            continue;
        }
        let changes = staged.changes.clone();
        let done = staged.commit(&env.workspace, &env.config.home, now())?;
        report.push(
            json!({"name": name, "installed": done.version, "changes": changes, "update": true}),
        );
        if !json {
            outln!("updated {name} to {}", done.version);
        }
    }
    if json {
        print_json(&json!({kind.dir(): report}))?;
    }
    Ok(code)
}

/// `bosun plugins verify [NAME] [--accept]`: each registry plugin's files against its record.
pub fn verify(name: Option<&str>, accept: bool, json: bool) -> Result<u8> {
    let env = load()?;
    let home = &env.config.home;
    let lock = bosun_plugins::lock::InstallLock::load(home)?;
    let names: Vec<String> = match name {
        Some(n) => vec![n.to_owned()],
        None => lock.plugins().keys().cloned().collect(),
    };
    let mut results = Vec::new();
    let mut code = exit::OK;
    for name in names {
        let Some((record, drift)) = install::verify(home, &name)? else {
            bail!("`{name}` was not installed from a registry");
        };
        if !drift.is_empty() && accept {
            let catalog = env.listing()?;
            let sha = catalog
                .entries()
                .iter()
                .find(|e| e.local_name == name && e.scope == bosun_plugins::PluginScope::User)
                .and_then(|e| e.sha256.clone())
                .context("the plugin cannot be read to accept it")?;
            if !confirm(
                &format!("Accept {name} as it is on disk now ({drift})?"),
                false,
            )? && !std::io::stdin().is_terminal()
            {
                bail!("accepting a changed plugin needs a person at a terminal");
            }
            install::accept(home, &name, &sha, now())?;
            outln!(
                "{name}: accepted as changed; run `bosun plugins trust {name}` to trust it again"
            );
            continue;
        }
        if !drift.is_empty() {
            code = exit::DENIED;
        }
        if !json {
            if drift.is_empty() {
                outln!(
                    "{name} {}: intact ({}; {})",
                    record.version,
                    record.source,
                    record.signer
                );
            } else {
                outln!(
                    "{name} {}: CHANGED on disk: {drift} (refused at load; reinstall or `bosun plugins verify {name} --accept`)",
                    record.version
                );
            }
        }
        results.push(
            json!({"name": name, "record": record, "intact": drift.is_empty(), "drift": drift}),
        );
    }
    if json {
        print_json(&json!({"plugins": results}))?;
    }
    Ok(code)
}

/// `bosun plugins publish PATH --to SOURCE [--key FILE]` / `bosun skills publish …`: to a
/// signed catalog folder, or to an OCI registry (a configured `kind = "oci"` source, or
/// `oci://HOST[:PORT]/NAMESPACE`) as the standard artifact with a signature by the key as its
/// referrer. What is published is read without running it: a plugin by the plugin catalog's
/// readers, a skill by the skills' discovery.
pub fn publish(
    kind: ArtifactKind,
    path: &Path,
    to: &str,
    key: Option<&Path>,
    json: bool,
) -> Result<u8> {
    let env = load()?;
    let key = load_key(&env, key)?;
    let prepared = match kind {
        ArtifactKind::Plugin => bosun_registry::publish::prepare_plugin(path)?,
        ArtifactKind::Skill => install::prepare_skill(path)?,
    };
    match publish_target(&env, to)? {
        PublishTarget::Catalog(dir) => publish_to_catalog(kind, prepared, &dir, &key, json),
        PublishTarget::Oci {
            url,
            timeout_secs,
            auth,
        } => publish_to_oci(
            kind,
            prepared,
            &url,
            timeout_secs,
            auth.as_ref(),
            &key,
            json,
        ),
    }
}

/// Where `--to` points.
enum PublishTarget {
    /// A signed catalog folder.
    Catalog(std::path::PathBuf),
    /// An OCI registry and namespace (`host[:port]/namespace`, or with a scheme).
    Oci {
        url: String,
        timeout_secs: Option<u64>,
        /// The configured source's login, when `--to` names one.
        auth: Option<bosun_registry::config::RegistryAuth>,
    },
}

fn publish_target(env: &Env, to: &str) -> Result<PublishTarget> {
    if let Some(rest) = to.strip_prefix("oci://") {
        return Ok(PublishTarget::Oci {
            url: rest.to_owned(),
            timeout_secs: None,
            auth: None,
        });
    }
    let path = Path::new(to);
    if path.is_dir() {
        return Ok(PublishTarget::Catalog(path.to_owned()));
    }
    match env.config.user.registries.get(to) {
        Some(config) if config.kind == RegistryKind::Oci => Ok(PublishTarget::Oci {
            url: config.url.clone().unwrap_or_default(),
            timeout_secs: config.timeout_secs,
            auth: config.auth.clone(),
        }),
        Some(config) if config.path.is_some() && config.url.is_none() => Ok(
            PublishTarget::Catalog(config.path.clone().unwrap_or_default()),
        ),
        Some(_) => bail!(
            "the registry `{to}` is not a folder: publish to its folder (bosun plugins publish PATH --to /the/catalog), then serve that folder"
        ),
        None => {
            bail!("`{to}` is neither a configured registry, a folder, nor oci://HOST/NAMESPACE")
        }
    }
}

fn publish_to_catalog(
    kind: ArtifactKind,
    prepared: bosun_registry::publish::Prepared,
    dir: &Path,
    key: &PrivateKey,
    json: bool,
) -> Result<u8> {
    let signing = Signing {
        key,
        now: now(),
        expiry: Expiry::default(),
    };
    let published = bosun_registry::publish::add(
        dir,
        kind,
        prepared.claims,
        prepared.file,
        &prepared.bytes,
        &signing,
    )?;
    if json {
        print_json(
            &json!({"path": published.path, "sha256": published.sha256, "length": published.length, "claims": published.claims}),
        )?;
    } else {
        outln!(
            "published {} {} to {} ({}, sha256 {})",
            published.claims.name,
            published.claims.version,
            dir.display(),
            published.path,
            published.sha256
        );
    }
    Ok(exit::OK)
}

/// The login for pushing: `BOSUN_OCI_USERNAME` with `BOSUN_OCI_PASSWORD` (a password or access
/// token), or `BOSUN_OCI_TOKEN` (a bearer token); else the source's `auth` (or a login the
/// Docker config stores for the registry), as pulling finds it.
fn oci_credentials(
    auth: Option<&bosun_registry::config::RegistryAuth>,
    host_port: &str,
) -> Result<bosun_registry::oci::Credentials> {
    use bosun_registry::oci::Credentials;
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (
        var("BOSUN_OCI_USERNAME"),
        var("BOSUN_OCI_PASSWORD"),
        var("BOSUN_OCI_TOKEN"),
    ) {
        (Some(username), Some(password), None) => Ok(Credentials::Basic { username, password }),
        (None, None, Some(token)) => Ok(Credentials::Bearer(token)),
        (None, None, None) => Ok(bosun_registry::oci::credentials(auth, host_port)?),
        _ => bail!(
            "set BOSUN_OCI_USERNAME and BOSUN_OCI_PASSWORD together, or BOSUN_OCI_TOKEN alone, to log in to the registry"
        ),
    }
}

fn publish_to_oci(
    kind: ArtifactKind,
    prepared: bosun_registry::publish::Prepared,
    url: &str,
    timeout_secs: Option<u64>,
    auth: Option<&bosun_registry::config::RegistryAuth>,
    key: &PrivateKey,
    json: bool,
) -> Result<u8> {
    let (anonymous, _) = bosun_registry::oci::client_for(url, timeout_secs)
        .with_context(|| format!("reading the OCI registry address `{url}`"))?;
    let login = oci_credentials(auth, &anonymous.registry().host_port())?;
    let (client, namespace) = bosun_registry::oci::client_with(url, timeout_secs, login)
        .with_context(|| format!("reading the OCI registry address `{url}`"))?;
    let rt = runtime()?;
    let published = rt.block_on(bosun_registry::oci::publish_kind(
        &client, &namespace, kind, prepared, key,
    ))?;
    if json {
        print_json(&json!({
            "reference": published.reference,
            "manifest": published.manifest.to_string(),
            "signature": published.signature.to_string(),
            "claims": published.claims,
        }))?;
    } else {
        outln!(
            "published {} {} to {} (signature {})",
            published.claims.name,
            published.claims.version,
            published.reference,
            published.signature
        );
    }
    Ok(exit::OK)
}

fn load_key(env: &Env, key: Option<&Path>) -> Result<PrivateKey> {
    let path = key.map_or_else(
        || env.config.home.join("registry").join("signing-key.json"),
        Path::to_owned,
    );
    PrivateKey::load(&path).with_context(|| {
        format!(
            "reading the signing key (make one with `bosun registry keygen {}`)",
            path.display()
        )
    })
}

/// `bosun registry keygen FILE`.
pub fn keygen(file: Option<&Path>) -> Result<u8> {
    let home = bosun_host::config::bosun_home()?;
    let path = file.map_or_else(
        || home.join("registry").join("signing-key.json"),
        Path::to_owned,
    );
    let key = PrivateKey::generate()?;
    key.save(&path)?;
    let id = key.public().keyid();
    outln!(
        "wrote {} (keep it secret)\nkey id: {id}\nfingerprint: {}",
        path.display(),
        display_fingerprint(&id)
    );
    Ok(exit::OK)
}

/// `bosun registry init DIR [--key FILE]`.
pub fn init(dir: &Path, key: Option<&Path>) -> Result<u8> {
    let env = load()?;
    let key = load_key(&env, key)?;
    let signing = Signing {
        key: &key,
        now: now(),
        expiry: Expiry::default(),
    };
    bosun_registry::publish::init(dir, &signing)?;
    outln!(
        "a signed catalog is in {}; its root key id (what users pin) is {}",
        dir.display(),
        key.public().keyid()
    );
    Ok(exit::OK)
}

/// `bosun registry refresh DIR [--key FILE]`: re-signs before the timestamp expires.
pub fn refresh(dir: &Path, key: Option<&Path>) -> Result<u8> {
    let env = load()?;
    let key = load_key(&env, key)?;
    let signing = Signing {
        key: &key,
        now: now(),
        expiry: Expiry::default(),
    };
    bosun_registry::publish::refresh(dir, &signing)?;
    outln!("re-signed {}", dir.display());
    Ok(exit::OK)
}

/// `bosun registry trust SOURCE [--yes]`: shows the root keys and pins them once confirmed.
pub fn trust(name: &str, yes: bool) -> Result<u8> {
    let env = load()?;
    let registries = registries(&env)?;
    let source = registries.signed(name, &env.config.home)?;
    let rt = runtime()?;
    let ids = rt.block_on(source.first_root_keyids())?;
    errln!("The registry `{name}` is signed by these root keys:");
    for id in &ids {
        errln!("  {}", display_fingerprint(id));
    }
    errln!("Compare them with what its publisher gave you through another channel.");
    if !confirm("Pin these keys for this registry?", yes)? {
        errln!("nothing pinned");
        return Ok(exit::NEEDS_APPROVAL);
    }
    let mut edit = bosun_host::config_edit::UserConfigEdit::open(&env.config.home)?;
    edit.pin_registry_keys(name, &ids)?;
    edit.save()?;
    outln!("pinned {} key(s) for {name}", ids.len());
    Ok(exit::OK)
}
