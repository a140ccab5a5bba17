//! Installing and updating from a registry: one path for every source (Reef, Bosun's signed
//! catalogs, offline folders, OCI through the same seam) and for plugins and skills alike.
//!
//! 1. The name and version were checked when they were parsed (`Requested`), before any URL or
//!    path is built; the source resolves them to a target with its length and SHA-256.
//! 2. A downgrade below what the lock records is refused unless forced.
//! 3. The source fetches the bytes with a size cap and a timeout and verifies length, digest
//!    and (for signed sources) the catalog's signatures.
//! 4. They are laid out in a staging folder beside the plugins or skills
//!    (`.install-NAME-PID/<plugins|skills>/NAME`, whose `.owner` file this process holds locked
//!    while it lives, so the next start removes a dead install's folder at once and never a
//!    live one's), read by the loaders' own readers without running anything — the plugin
//!    catalog, or the skills' discovery — and scanned (JS/TS).
//! 5. The catalog's claims must agree with what the plugin or skill declares; a component is
//!    then precompiled into the artefact cache (which proves it compiles and fits the plugin
//!    world, and makes its first call a cache hit).
//! 6. The caller shows [`Staged::review`] (source, signer, digest, tools, capabilities,
//!    endpoints, classification, and for an update what changed) and asks.
//! 7. [`Staged::commit`] swaps it in atomically (the old version kept aside until the new one
//!    is in place — a plugin enabled and trusted — and put back if that fails), then writes the
//!    integrity record to the lock, which the plugin catalog and the skills' discovery check at
//!    every load.
//!
//! Any failure before the swap leaves the installed version serving and no staging behind.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bosun_plugins::discovery::{STAGING_OWNER_FILE, install_staging_dir, user_plugins_dir};
use bosun_plugins::lock::{InstallLock, LockRecord, file_digests};
use bosun_registry::fetch::Progress;
use bosun_registry::inspect::{Strictness, compare, inspect_plugin};
use bosun_registry::{ArtifactKind, Claims, RegistryError, Requested, Signer, Source, Target};
use chrono::{DateTime, Utc};

use crate::user_plugins::{Trusted, UserPluginError};
use crate::workspace::Workspace;

/// The registries in effect for `config`: the user's sources narrowed by the project's (a
/// project can never add one), with every kind's opener (OCI, Claude Code marketplaces). The
/// one place they are assembled: the CLI's commands, the TUI and the model's `plugin_install`
/// all open sources through it. Warnings are in [`bosun_registry::Registries::warnings`].
///
/// # Errors
/// A user entry that is not valid (its key and the fix named).
pub fn registries(
    config: &crate::config::LoadedConfig,
) -> Result<bosun_registry::Registries, RegistryError> {
    let project = config.project.as_ref().map(|(p, _)| &p.registries);
    Ok(
        bosun_registry::Registries::new(&config.user.registries, project)?
            .with_opener(bosun_registry::RegistryKind::Oci, bosun_registry::oci::open)
            .with_opener(
                bosun_registry::RegistryKind::ClaudeMarketplace,
                bosun_claude::source::open,
            ),
    )
}

/// Why an install from a registry did not happen. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RegistryInstallError {
    /// The source refused, or what it served did not verify.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The machine's managed policy refuses the plugin (the rule and what to do).
    #[error("nothing was installed: {0}")]
    Managed(String),
    /// The scanner refused the plugin.
    #[error(
        "the scanner refused {name} {version} (total {total}; run `bosun plugins scan` on a copy to see the findings): nothing was installed"
    )]
    Scan {
        /// The plugin.
        name: String,
        /// Its version.
        version: String,
        /// The scan's total.
        total: u32,
    },
    /// The version asked for is the one installed.
    #[error(
        "{name} {version} is installed already (from {source_name}); pass --force to install it again"
    )]
    Current {
        /// The plugin.
        name: String,
        /// Its version.
        version: String,
        /// Where it came from.
        source_name: String,
    },
    /// A plugin or skill of that name is installed but not from a registry.
    #[error(
        "a {} `{name}` is installed already and did not come from a registry: remove it first or pass --force to replace it",
        kind_word(*kind)
    )]
    NotFromRegistry {
        /// Plugin or skill.
        kind: ArtifactKind,
        /// Its name.
        name: String,
    },
    /// The skill as staged cannot be loaded.
    #[error("the skill {name} cannot be loaded ({reason}): nothing was installed")]
    Skill {
        /// The skill.
        name: String,
        /// Why, as the skills' discovery says it.
        reason: String,
    },
    /// The component does not compile for this machine, or does not fit the plugin world.
    #[error("{name} {version} does not compile ({reason}): nothing was installed")]
    Compile {
        /// The plugin.
        name: String,
        /// Its version.
        version: String,
        /// What wasmtime or the plugin world said.
        reason: String,
    },
    /// Enabling or trusting after the swap failed; the old version was put back.
    #[error("the new version could not be enabled ({0}); the previous state was restored")]
    Enable(#[source] Box<UserPluginError>),
    /// The lock could not be read or written.
    #[error(transparent)]
    Lock(#[from] bosun_plugins::lock::LockError),
    /// A file operation failed.
    #[error("{doing}: {source}")]
    Io {
        /// What was being done.
        doing: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Step 5: compiles a staged component for this machine into `home`'s artefact cache (where
/// its first call loads it from, keyed by its content), which also proves that wasmtime accepts
/// it and that it fits the plugin world before anyone is asked. JavaScript plugins run in the
/// shared engine, compiled once; Chock modules are compiled at their first load.
async fn precompile(
    home: &Path,
    wasm: &Path,
    name: &str,
    version: &str,
) -> Result<(), RegistryInstallError> {
    let bytes = bosun_fsio::read_regular(wasm, bosun_plugins::catalog::MAX_COMPONENT_BYTES)
        .map_err(|e| io(format!("reading {}", wasm.display()))(e.into_io()))?;
    let cache = home.join("cache");
    let compiled = tokio::task::spawn_blocking(move || {
        let sandbox = bosun_sandbox::Sandbox::new(bosun_sandbox::SandboxConfig {
            cache_dir: Some(cache),
            ..Default::default()
        })?;
        sandbox.load(&bytes).map(|_| ())
    })
    .await;
    let reason = match compiled {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(e)) => e.to_string(),
        Err(e) => e.to_string(),
    };
    Err(RegistryInstallError::Compile {
        name: name.to_owned(),
        version: version.to_owned(),
        reason,
    })
}

fn io(doing: impl Into<String>) -> impl FnOnce(std::io::Error) -> RegistryInstallError {
    let doing = doing.into();
    move |source| RegistryInstallError::Io { doing, source }
}

/// One change an update brings, as the review lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    /// `version`, `tools`, `capabilities`, `endpoints`, `classification` or `signer`.
    pub field: String,
    /// What it was.
    pub before: String,
    /// What it becomes.
    pub after: String,
    /// Whether it grants more than before (a new tool, capability or endpoint, a higher
    /// classification, another signer): the person is asked again.
    pub grew: bool,
}

fn kind_word(kind: ArtifactKind) -> &'static str {
    match kind {
        ArtifactKind::Plugin => "plugin",
        ArtifactKind::Skill => "skill",
    }
}

/// A staging folder of this process, `<root>/.install-<name>-<pid>`: its `.owner` file stays
/// locked while the process lives (the kernel releases the lock when it dies, however it
/// dies), so the next start's sweep removes a dead install's folder at once and leaves a live
/// one's alone (`bosun_plugins::sweep_stale_temporaries`). Removed when dropped.
#[derive(Debug)]
pub struct StagingDir {
    path: PathBuf,
    _owner: std::fs::File,
}

impl StagingDir {
    /// Creates the staging folder of `name` in `root` (removing one this pid left before).
    pub fn create(root: &Path, name: &str) -> Result<Self, RegistryInstallError> {
        let path = install_staging_dir(root, name, std::process::id());
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(io(format!("creating {}", path.display())))?;
        let owner_path = path.join(STAGING_OWNER_FILE);
        let owned = std::fs::File::create(&owner_path).and_then(|owner| {
            owner.try_lock().map_err(std::io::Error::other)?;
            Ok(owner)
        });
        match owned {
            Ok(owner) => Ok(Self {
                path,
                _owner: owner,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&path);
                Err(io(format!("locking {}", owner_path.display()))(e))
            }
        }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A verified plugin or skill in its staging folder, not yet in place.
#[derive(Debug)]
pub struct Staged {
    /// What the catalog said (its `kind` says whether this is a plugin or a skill).
    pub target: Target,
    /// What the plugin or skill declares, read by its loader's own reader.
    pub declared: Claims,
    /// The content hash that trust and the lock pin: the plugin catalog's, or a skill's
    /// `SKILL.md` digest.
    pub sha256: String,
    /// The source's name.
    pub source: String,
    /// The record of the version installed now, for an update.
    pub previous: Option<LockRecord>,
    /// What changes against it.
    pub changes: Vec<Change>,
    staging: Option<StagingDir>,
    root: PathBuf,
}

/// The classifications in order, so "higher" can be told.
fn classification_rank(c: Option<&str>) -> usize {
    match c.map(str::to_ascii_uppercase).as_deref() {
        None | Some("PUBLIC") => 0,
        Some("INTERNAL") => 1,
        Some("CONFIDENTIAL") => 2,
        Some("RESTRICTED") => 3,
        Some(_) => 4,
    }
}

fn set_change(field: &str, before: &BTreeSet<String>, after: &BTreeSet<String>) -> Option<Change> {
    (before != after).then(|| Change {
        field: field.to_owned(),
        before: before.iter().cloned().collect::<Vec<_>>().join(", "),
        after: after.iter().cloned().collect::<Vec<_>>().join(", "),
        grew: !after.is_subset(before),
    })
}

/// What changes from the installed `previous` to `claims` signed by `signer`.
pub fn changes(previous: &LockRecord, claims: &Claims, signer: &str) -> Vec<Change> {
    let mut out = Vec::new();
    if previous.version != claims.version {
        out.push(Change {
            field: "version".to_owned(),
            before: previous.version.clone(),
            after: claims.version.clone(),
            grew: false,
        });
    }
    out.extend(set_change("tools", &previous.tools, &claims.tools));
    out.extend(set_change(
        "capabilities",
        &previous.capabilities,
        &claims.capabilities,
    ));
    out.extend(set_change(
        "endpoints",
        &previous.endpoints,
        &claims.endpoints,
    ));
    if previous.classification != claims.classification {
        out.push(Change {
            field: "classification".to_owned(),
            before: previous
                .classification
                .clone()
                .unwrap_or_else(|| "none".to_owned()),
            after: claims
                .classification
                .clone()
                .unwrap_or_else(|| "none".to_owned()),
            grew: classification_rank(claims.classification.as_deref())
                > classification_rank(previous.classification.as_deref()),
        });
    }
    if previous.signer != signer {
        out.push(Change {
            field: "signer".to_owned(),
            before: previous.signer.clone(),
            after: signer.to_owned(),
            grew: true,
        });
    }
    out
}

/// Steps 1–5 for plugin `requested` from `source`: resolved, fetched, verified, staged, read,
/// scanned and compared. `force` allows a downgrade and replacing a plugin not installed from a
/// registry. `builtins` are the names no plugin tool may take.
pub async fn stage(
    home: &Path,
    source: &dyn Source,
    requested: &Requested,
    now: DateTime<Utc>,
    progress: &dyn Progress,
    force: bool,
    builtins: &[&str],
) -> Result<Staged, RegistryInstallError> {
    stage_kind(
        home,
        source,
        ArtifactKind::Plugin,
        requested,
        now,
        progress,
        force,
        builtins,
    )
    .await
}

/// Steps 1–5 for skill `requested` from `source`: resolved, fetched, verified, staged, read by
/// the skills' own discovery (front matter, hidden characters, name) and compared. `force`
/// allows a downgrade and replacing a skill not installed from a registry.
pub async fn stage_skill(
    home: &Path,
    source: &dyn Source,
    requested: &Requested,
    now: DateTime<Utc>,
    progress: &dyn Progress,
    force: bool,
) -> Result<Staged, RegistryInstallError> {
    stage_kind(
        home,
        source,
        ArtifactKind::Skill,
        requested,
        now,
        progress,
        force,
        &[],
    )
    .await
}

/// Where installed artifacts of `kind` live: `$BOSUN_HOME/plugins` or `$BOSUN_HOME/skills`.
pub fn installed_root(home: &Path, kind: ArtifactKind) -> PathBuf {
    match kind {
        ArtifactKind::Plugin => user_plugins_dir(home),
        ArtifactKind::Skill => crate::skills::user_skills_dir(home),
    }
}

fn record_of(lock: &InstallLock, kind: ArtifactKind, name: &str) -> Option<LockRecord> {
    match kind {
        ArtifactKind::Plugin => lock.plugin(name),
        ArtifactKind::Skill => lock.skill(name),
    }
    .cloned()
}

#[allow(clippy::too_many_arguments)]
async fn stage_kind(
    home: &Path,
    source: &dyn Source,
    kind: ArtifactKind,
    requested: &Requested,
    now: DateTime<Utc>,
    progress: &dyn Progress,
    force: bool,
    builtins: &[&str],
) -> Result<Staged, RegistryInstallError> {
    let target = source.resolve(kind, requested, now).await?;
    let name = target.claims.name.clone();
    if target.kind != kind || name != requested.name {
        return Err(RegistryError::ClaimMismatch {
            field: "name".to_owned(),
            catalog: bosun_core::escape_hidden(&name),
            plugin: requested.name.clone(),
        }
        .into());
    }
    let root = installed_root(home, kind);
    let lock = InstallLock::load(home)?;
    let previous = record_of(&lock, kind, &name);
    match &previous {
        Some(record) => {
            let installed = bosun_registry::name::parse_version(&record.version)?;
            let offered = bosun_registry::name::parse_version(&target.claims.version)?;
            if offered < installed && !force {
                return Err(RegistryError::Downgrade {
                    name,
                    trusted: record.version.clone(),
                    offered: target.claims.version.clone(),
                }
                .into());
            }
            if record.artifact_sha256 == target.sha256 && record.source == source.name() && !force {
                return Err(RegistryInstallError::Current {
                    name,
                    version: record.version.clone(),
                    source_name: record.source.clone(),
                });
            }
        }
        None if root.join(&name).symlink_metadata().is_ok() && !force => {
            return Err(RegistryInstallError::NotFromRegistry { kind, name });
        }
        None => {}
    }
    let bytes = source.fetch(&target, progress).await?;

    // From here the staging folder goes with it on any error.
    let staging = StagingDir::create(&root, &name)?;
    let laid = staging.path().join(kind.dir()).join(&name);
    let kind_dir = staging.path().join(kind.dir());
    std::fs::create_dir_all(&kind_dir).map_err(io(format!("creating {}", kind_dir.display())))?;
    bosun_registry::artifact::lay_out(&target.file, &bytes, &laid)?;
    drop(bytes);
    let mut component = false;
    let (declared, sha256) = match kind {
        ArtifactKind::Plugin => {
            let inspected = inspect_plugin(staging.path(), &name, builtins)?;
            component = inspected.format == bosun_plugins::PluginFormat::Native;
            if inspected.format.is_js() {
                let report =
                    bosun_plugins::scan::scan_dir(&laid).map_err(|e| RegistryInstallError::Io {
                        doing: format!("scanning {}", laid.display()),
                        source: std::io::Error::other(e.to_string()),
                    })?;
                if report.refused {
                    return Err(RegistryInstallError::Scan {
                        name,
                        version: target.claims.version.clone(),
                        total: report.total,
                    });
                }
            }
            (inspected.claims, inspected.sha256)
        }
        ArtifactKind::Skill => read_skill(staging.path(), &laid, &target)?,
    };
    let strictness = match target.signer {
        Signer::Unsigned { .. } => Strictness::Stated,
        Signer::Signed { .. } => Strictness::Every,
    };
    compare(&target.claims, &declared, strictness)?;
    if component {
        precompile(home, &laid.join("plugin.wasm"), &name, &declared.version).await?;
    }
    let changes = previous
        .as_ref()
        .map(|p| changes(p, &declared, &target.signer.describe()))
        .unwrap_or_default();
    Ok(Staged {
        target,
        declared,
        sha256,
        source: source.name().to_owned(),
        previous,
        changes,
        staging: Some(staging),
        root,
    })
}

/// Reads the skill laid out in `laid` (under `staging_home/skills/`) with the skills' own
/// discovery, as loading will: a skill it leaves out or remarks on is refused. A skill declares
/// no version, tools or endpoints; what it declares is its name and description.
fn read_skill(
    staging_home: &Path,
    laid: &Path,
    target: &Target,
) -> Result<(Claims, String), RegistryInstallError> {
    let name = &target.claims.name;
    let refuse = |reason: String| RegistryInstallError::Skill {
        name: name.clone(),
        reason,
    };
    let skill_md = laid.join("SKILL.md");
    let text =
        bosun_fsio::read_regular(&skill_md, crate::skills::MAX_SKILL_BYTES).map_err(|e| {
            if e.is_not_found() {
                refuse("it holds no SKILL.md at its top".to_owned())
            } else {
                refuse(e.to_string())
            }
        })?;
    let skills = crate::skills::Skills::discover(staging_home, &staging_home.join(".none"), false);
    if let Some(d) = skills.diagnostics().first() {
        return Err(refuse(d.message.clone()));
    }
    let skill = skills
        .all()
        .iter()
        .find(|s| s.source == crate::skills::SkillSource::User && &s.name == name)
        .ok_or_else(|| refuse("the skills' discovery does not find it".to_owned()))?;
    let declared = Claims {
        name: skill.name.clone(),
        version: target.claims.version.clone(),
        description: skill.description.clone(),
        format: Some("skill".to_owned()),
        // A skill declares neither; the catalog's values are requests shown in the review.
        classification: target.claims.classification.clone(),
        trust: target.claims.trust.clone(),
        ..Claims::default()
    };
    let sha256 = {
        use sha2::Digest as _;
        format!("{:x}", sha2::Sha256::digest(&text))
    };
    Ok((declared, sha256))
}

/// Reads the skill in `dir` for publishing, running nothing: its files (under the installer's
/// bounds, links refused), read by the skills' own discovery exactly as an install will read
/// them — a skill discovery leaves out or remarks on is refused — and its version from the
/// front matter's `version` (Reef's field). It travels as `SKILL.md` alone, or packed with its
/// resources ([`bosun_registry::artifact::TAR_FILE`]). The folder's name is the skill's name.
///
/// # Errors
/// A skill that does not load, has no `version`, or whose folder is not its name.
pub fn prepare_skill(
    dir: &Path,
) -> Result<bosun_registry::publish::Prepared, RegistryInstallError> {
    let files = bosun_registry::artifact::read_tree(dir)?;
    let name = bosun_plugins::discovery::dir_name(dir).unwrap_or_default();
    bosun_registry::name::check_name(&name)?;
    let refuse = |reason: String| RegistryInstallError::Skill {
        name: name.clone(),
        reason,
    };
    let skill_md = files
        .iter()
        .find(|(path, _)| path == "SKILL.md")
        .map(|(_, bytes)| bytes.clone())
        .ok_or_else(|| refuse(format!("{} holds no SKILL.md at its top", dir.display())))?;
    let scratch = tempfile::tempdir().map_err(io("creating a scratch folder"))?;
    let laid = scratch.path().join(ArtifactKind::Skill.dir()).join(&name);
    for (rel, bytes) in &files {
        let path = laid.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io(format!("creating {}", parent.display())))?;
        }
        std::fs::write(&path, bytes).map_err(io(format!("writing {}", path.display())))?;
    }
    let text = String::from_utf8(skill_md.clone())
        .map_err(|_| refuse("its SKILL.md is not UTF-8".to_owned()))?;
    let (front, _) = crate::front_matter::parse(&text).map_err(|e| refuse(e.to_string()))?;
    let version = front.text("version").map(str::to_owned).ok_or_else(|| {
        refuse("its front matter has no `version` (add `version: 1.0.0`; a published version is never replaced)".to_owned())
    })?;
    bosun_registry::name::parse_version(&version)?;
    let classification = front
        .text("classification_ceiling")
        .or_else(|| front.text("classification"))
        .map(str::to_owned);
    let asked = Target {
        kind: ArtifactKind::Skill,
        claims: Claims {
            name: name.clone(),
            version,
            classification,
            ..Claims::default()
        },
        length: None,
        sha256: String::new(),
        file: "SKILL.md".to_owned(),
        location: String::new(),
        signer: Signer::Unsigned {
            origin: String::new(),
        },
    };
    let (mut claims, _) = read_skill(scratch.path(), &laid, &asked)?;
    claims.trust = None;
    let (file, bytes) = if files.len() == 1 {
        ("SKILL.md", skill_md)
    } else {
        (
            bosun_registry::artifact::TAR_FILE,
            bosun_registry::artifact::pack(&files)?,
        )
    };
    Ok(bosun_registry::publish::Prepared {
        claims,
        file,
        bytes,
    })
}

/// The installed copy being replaced: moved aside while the new one goes in, put back or
/// removed once the outcome is known.
struct Swap {
    target: PathBuf,
    aside: PathBuf,
    had_old: bool,
}

impl Swap {
    /// Moves `laid` to `<root>/<name>`, the version there kept aside.
    fn into_place(root: &Path, name: &str, laid: &Path) -> Result<Self, RegistryInstallError> {
        let target = root.join(name);
        let aside = root.join(format!(".replaced-{name}-{}", std::process::id()));
        let had_old = target.symlink_metadata().is_ok();
        if had_old {
            let _ = std::fs::remove_dir_all(&aside);
            std::fs::rename(&target, &aside)
                .map_err(io(format!("moving {} aside", target.display())))?;
        }
        if let Err(e) = std::fs::rename(laid, &target) {
            if had_old {
                let _ = std::fs::rename(&aside, &target);
            }
            return Err(io(format!(
                "moving the new version to {}",
                target.display()
            ))(e));
        }
        Ok(Self {
            target,
            aside,
            had_old,
        })
    }

    /// Removes the new version and puts the previous one back.
    fn put_back(&self) {
        let _ = std::fs::remove_dir_all(&self.target);
        if self.had_old {
            let _ = std::fs::rename(&self.aside, &self.target);
        }
    }

    /// The new version stays: the previous one goes.
    fn keep(self) {
        if self.had_old {
            let _ = std::fs::remove_dir_all(&self.aside);
        }
    }
}

impl Staged {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.target.claims.name
    }

    /// Whether an update grants more than the installed version (the person is asked again).
    pub fn grew(&self) -> bool {
        self.changes.iter().any(|c| c.grew)
    }

    /// The trust review: what a person reads before deciding.
    pub fn review(&self) -> String {
        let c = &self.declared;
        let list = |s: &BTreeSet<String>| {
            if s.is_empty() {
                "none".to_owned()
            } else {
                s.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        };
        let mut text = format!(
            "{} {} ({}) from the registry `{}`\n  signer: {}\n  sha256: {}\n",
            c.name,
            c.version,
            c.format.as_deref().unwrap_or(kind_word(self.target.kind)),
            self.source,
            self.target.signer.describe(),
            self.target.sha256,
        );
        if !c.description.is_empty() {
            text.push_str(&format!(
                "  about: {}\n",
                bosun_core::escape_hidden(&c.description)
            ));
        }
        text.push_str(&format!("  tools: {}\n", list(&c.tools)));
        text.push_str(&format!("  capabilities: {}\n", list(&c.capabilities)));
        text.push_str(&format!("  endpoints: {}\n", list(&c.endpoints)));
        text.push_str(&format!(
            "  classification: {}{}\n",
            c.classification.as_deref().unwrap_or("none"),
            if c.classification.is_some() {
                " (a request: policy may lower it, never raise it)"
            } else {
                ""
            }
        ));
        if let Some(trust) = &c.trust {
            text.push_str(&format!(
                "  trust asked: {trust} (a request, granted only by your policy)\n"
            ));
        }
        if let Some(previous) = &self.previous {
            if self.changes.is_empty() {
                text.push_str(&format!(
                    "  replaces {} with the same declarations\n",
                    previous.version
                ));
            }
            for change in &self.changes {
                text.push_str(&format!(
                    "  {} {}: {} -> {}\n",
                    if change.grew { "GREW" } else { "changed" },
                    change.field,
                    if change.before.is_empty() {
                        "none"
                    } else {
                        &change.before
                    },
                    if change.after.is_empty() {
                        "none"
                    } else {
                        &change.after
                    },
                ));
            }
        }
        text
    }

    /// Step 7: swaps the plugin or skill in, enables and trusts exactly what was staged (a
    /// plugin), and writes its integrity record. A failure after the swap puts the previous
    /// version (or nothing) back.
    pub fn commit(
        mut self,
        workspace: &Workspace,
        home: &Path,
        now: DateTime<Utc>,
    ) -> Result<LockRecord, RegistryInstallError> {
        let name = self.name().to_owned();
        let kind = self.target.kind;
        let laid = self
            .staging
            .as_ref()
            .map(|s| s.path().join(kind.dir()).join(&name))
            .unwrap_or_default();
        let files = file_digests(&laid);
        let swap = Swap::into_place(&self.root, &name, &laid)?;
        let expected = self.sha256.clone();
        let c = &self.declared;
        let record = LockRecord {
            source: self.source.clone(),
            name: name.clone(),
            version: c.version.clone(),
            artifact_sha256: self.target.sha256.clone(),
            signer: self.target.signer.describe(),
            sha256: expected.clone(),
            files,
            tools: c.tools.clone(),
            capabilities: c.capabilities.clone(),
            endpoints: c.endpoints.clone(),
            classification: c.classification.clone(),
            installed_at: now,
        };
        // The record goes in before enabling: the catalog that enabling reads checks it.
        let mut lock = InstallLock::load(home)?;
        let before = record_of(&lock, kind, &name);
        match kind {
            ArtifactKind::Plugin => lock.set_plugin(&name, record.clone()),
            ArtifactKind::Skill => lock.set_skill(&name, record.clone()),
        }
        let put_back = |lock: &mut InstallLock| {
            swap.put_back();
            match (kind, &before) {
                (ArtifactKind::Plugin, Some(old)) => lock.set_plugin(&name, old.clone()),
                (ArtifactKind::Skill, Some(old)) => lock.set_skill(&name, old.clone()),
                (ArtifactKind::Plugin, None) => {
                    lock.remove_plugin(&name);
                }
                (ArtifactKind::Skill, None) => {
                    lock.remove_skill(&name);
                }
            }
            let _ = lock.save();
        };
        if let Err(e) = lock.save() {
            put_back(&mut lock);
            return Err(e.into());
        }
        if kind == ArtifactKind::Plugin
            && let Err(e) = enable_as_verified(workspace, home, &name, &expected)
        {
            put_back(&mut lock);
            return Err(e);
        }
        swap.keep();
        self.staging.take();
        Ok(record)
    }
}

/// Enables and trusts the plugin `name` just swapped in; what trust pinned must be `expected`,
/// what was verified (a change between swap and trust fails).
fn enable_as_verified(
    workspace: &Workspace,
    home: &Path,
    name: &str,
    expected: &str,
) -> Result<(), RegistryInstallError> {
    let enabled =
        crate::user_plugins::enable(workspace, home, name, Some(Path::new(name)), |_review| {
            // The person decided on the registry's review; trust pins only what is in place,
            // and what it pinned is compared with what was verified below.
            Ok(true)
        });
    match enabled {
        Ok(Trusted::Now(_) | Trusted::Already) => {}
        Ok(Trusted::Declined) => {
            return Err(RegistryInstallError::Enable(Box::new(
                UserPluginError::NotFound {
                    name: name.to_owned(),
                },
            )));
        }
        Err(e) => return Err(RegistryInstallError::Enable(Box::new(e))),
    }
    let store = bosun_plugins::TrustStore::load(home.join("trust.toml")).ok();
    let pinned = store
        .as_ref()
        .and_then(|s| s.get(&bosun_plugins::PluginScope::User, name))
        .map(|r| r.sha256.clone());
    if pinned.as_deref() != Some(expected) {
        return Err(RegistryError::Digest {
            what: format!("{name} as installed"),
            expected: expected.to_owned(),
            got: pinned.unwrap_or_default(),
        }
        .into());
    }
    Ok(())
}

/// How the plugin `name` as installed differs from its integrity record: `None` when it is not
/// from a registry, else the drift (empty when intact).
pub fn verify(
    home: &Path,
    name: &str,
) -> Result<Option<(LockRecord, bosun_plugins::lock::Drift)>, RegistryInstallError> {
    let lock = InstallLock::load(home)?;
    Ok(lock.plugin(name).map(|record| {
        let drift = bosun_plugins::lock::drift(record, &user_plugins_dir(home).join(name));
        (record.clone(), drift)
    }))
}

/// Accepts the plugin `name` as it is on disk now: its record takes the current files and
/// content hash (the person re-trusts it with `bosun plugins trust`).
pub fn accept(
    home: &Path,
    name: &str,
    sha256: &str,
    now: DateTime<Utc>,
) -> Result<bool, RegistryInstallError> {
    let mut lock = InstallLock::load(home)?;
    let Some(mut record) = lock.plugin(name).cloned() else {
        return Ok(false);
    };
    record.files = file_digests(&user_plugins_dir(home).join(name));
    record.sha256 = sha256.to_owned();
    record.signer = format!(
        "accepted by you as changed on disk (was: {})",
        record.signer
    );
    record.installed_at = now;
    lock.set_plugin(name, record);
    lock.save()?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn installed() -> LockRecord {
        LockRecord {
            source: "corp".to_owned(),
            name: "weather".to_owned(),
            version: "1.0.0".to_owned(),
            artifact_sha256: "a".repeat(64),
            signer: "signed by the `targets` role (key 1)".to_owned(),
            sha256: "b".repeat(64),
            files: std::collections::BTreeMap::new(),
            tools: set(&["forecast"]),
            capabilities: set(&["net.http"]),
            endpoints: set(&["https://api.weather.example"]),
            classification: Some("PUBLIC".to_owned()),
            installed_at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    fn claims_of(record: &LockRecord) -> Claims {
        Claims {
            name: record.name.clone(),
            version: "1.1.0".to_owned(),
            tools: record.tools.clone(),
            capabilities: record.capabilities.clone(),
            endpoints: record.endpoints.clone(),
            classification: record.classification.clone(),
            ..Claims::default()
        }
    }

    fn grew(changes: &[Change], field: &str) -> Option<bool> {
        changes.iter().find(|c| c.field == field).map(|c| c.grew)
    }

    #[test]
    fn an_update_whose_capabilities_grew_is_marked_grew_and_one_that_shrank_is_not() {
        let before = installed();
        let signer = before.signer.clone();
        // Same grants, newer version: a change, nothing grew.
        let same = changes(&before, &claims_of(&before), &signer);
        assert_eq!(grew(&same, "version"), Some(false));
        assert!(!same.iter().any(|c| c.grew), "{same:?}");

        let mut more = claims_of(&before);
        more.capabilities.insert("process.spawn".to_owned());
        let more = changes(&before, &more, &signer);
        assert_eq!(grew(&more, "capabilities"), Some(true), "{more:?}");

        let mut fewer = claims_of(&before);
        fewer.capabilities.clear();
        let fewer = changes(&before, &fewer, &signer);
        assert_eq!(grew(&fewer, "capabilities"), Some(false), "{fewer:?}");

        // A swapped capability is growth too (the new one was never granted).
        let mut swapped = claims_of(&before);
        swapped.capabilities = set(&["fs.write"]);
        assert_eq!(
            grew(&changes(&before, &swapped, &signer), "capabilities"),
            Some(true)
        );

        let mut tools = claims_of(&before);
        tools.tools.insert("alerts".to_owned());
        assert_eq!(
            grew(&changes(&before, &tools, &signer), "tools"),
            Some(true)
        );

        let mut raised = claims_of(&before);
        raised.classification = Some("CONFIDENTIAL".to_owned());
        assert_eq!(
            grew(&changes(&before, &raised, &signer), "classification"),
            Some(true)
        );
        let mut lowered = installed();
        lowered.classification = Some("CONFIDENTIAL".to_owned());
        assert_eq!(
            grew(
                &changes(&lowered, &claims_of(&before), &signer),
                "classification"
            ),
            Some(false)
        );

        // Another signer is always asked about again.
        assert_eq!(
            grew(
                &changes(
                    &before,
                    &claims_of(&before),
                    "unsigned: checksum from the same origin"
                ),
                "signer"
            ),
            Some(true)
        );
    }
}
