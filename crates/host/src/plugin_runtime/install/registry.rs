//! Installing and updating from a registry: one path for every source (Reef, Bosun's signed
//! catalogs, offline folders, OCI through the same seam).
//!
//! 1. The name and version were checked when they were parsed (`Requested`), before any URL or
//!    path is built; the source resolves them to a target with its length and SHA-256.
//! 2. A downgrade below what the lock records is refused unless forced.
//! 3. The source fetches the bytes with a size cap and a timeout and verifies length, digest
//!    and (for signed sources) the catalog's signatures.
//! 4. They are laid out in a staging folder beside the plugins (`.install-NAME-PID/plugins/NAME`),
//!    read by the catalog's readers without running anything, and scanned (JS/TS).
//! 5. The catalog's claims must agree with what the plugin declares.
//! 6. The caller shows [`Staged::review`] (source, signer, digest, tools, capabilities,
//!    endpoints, classification, and for an update what changed) and asks.
//! 7. [`Staged::commit`] swaps it in atomically (the old version kept aside until the new one
//!    is enabled and trusted, and put back if that fails), then writes the integrity record
//!    to the lock, which the catalog checks at every load.
//!
//! Any failure before the swap leaves the installed version serving and no staging behind.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bosun_plugins::discovery::{install_staging_dir, user_plugins_dir};
use bosun_plugins::lock::{InstallLock, LockRecord, file_digests};
use bosun_registry::fetch::Progress;
use bosun_registry::inspect::{Inspected, Strictness, compare, inspect_plugin};
use bosun_registry::{ArtifactKind, Claims, RegistryError, Requested, Signer, Source, Target};
use chrono::{DateTime, Utc};

use crate::user_plugins::{Trusted, UserPluginError};
use crate::workspace::Workspace;

/// Why an install from a registry did not happen. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RegistryInstallError {
    /// The source refused, or what it served did not verify.
    #[error(transparent)]
    Registry(#[from] RegistryError),
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
        "{name} {version} is installed already (from {source_name}); `bosun plugins verify {name}` checks it"
    )]
    Current {
        /// The plugin.
        name: String,
        /// Its version.
        version: String,
        /// Where it came from.
        source_name: String,
    },
    /// A plugin of that name is installed but not from a registry.
    #[error(
        "a plugin `{name}` is installed already and did not come from a registry: remove it first (bosun plugins remove {name}) or pass --force to replace it"
    )]
    NotFromRegistry {
        /// The plugin.
        name: String,
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

/// A verified plugin in its staging folder, not yet in place.
#[derive(Debug)]
pub struct Staged {
    /// What the catalog said.
    pub target: Target,
    /// What the plugin declares.
    pub inspected: Inspected,
    /// The source's name.
    pub source: String,
    /// The record of the version installed now, for an update.
    pub previous: Option<LockRecord>,
    /// What changes against it.
    pub changes: Vec<Change>,
    staging: Option<PathBuf>,
    plugins: PathBuf,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(staging) = self.staging.take() {
            let _ = std::fs::remove_dir_all(staging);
        }
    }
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
    let target = source.resolve(ArtifactKind::Plugin, requested, now).await?;
    let name = target.claims.name.clone();
    let plugins = user_plugins_dir(home);
    let lock = InstallLock::load(home)?;
    let previous = lock.plugin(&name).cloned();
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
        None if plugins.join(&name).symlink_metadata().is_ok() && !force => {
            return Err(RegistryInstallError::NotFromRegistry { name });
        }
        None => {}
    }
    let bytes = source.fetch(&target, progress).await?;

    let staging = install_staging_dir(&plugins, &name, std::process::id());
    let _ = std::fs::remove_dir_all(&staging);
    let laid = staging.join("plugins").join(&name);
    std::fs::create_dir_all(&laid).map_err(io(format!("creating {}", laid.display())))?;
    // From here the staging folder goes with `staged` on any error.
    let mut staged = Staged {
        target,
        inspected: Inspected {
            claims: Claims::default(),
            sha256: String::new(),
            format: bosun_plugins::PluginFormat::Native,
        },
        source: source.name().to_owned(),
        previous,
        changes: Vec::new(),
        staging: Some(staging.clone()),
        plugins,
    };
    bosun_registry::artifact::lay_out(&staged.target.file, &bytes, &laid)?;
    drop(bytes);
    staged.inspected = inspect_plugin(&staging, &name, builtins)?;
    if staged.inspected.format.is_js() {
        let report =
            bosun_plugins::scan::scan_dir(&laid).map_err(|e| RegistryInstallError::Io {
                doing: format!("scanning {}", laid.display()),
                source: std::io::Error::other(e.to_string()),
            })?;
        if report.refused {
            return Err(RegistryInstallError::Scan {
                name,
                version: staged.target.claims.version.clone(),
                total: report.total,
            });
        }
    }
    let strictness = match staged.target.signer {
        Signer::Unsigned { .. } => Strictness::Stated,
        Signer::Signed { .. } => Strictness::Every,
    };
    compare(&staged.target.claims, &staged.inspected.claims, strictness)?;
    if let Some(previous) = &staged.previous {
        staged.changes = changes(
            previous,
            &staged.inspected.claims,
            &staged.target.signer.describe(),
        );
    }
    Ok(staged)
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
        let c = &self.inspected.claims;
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
            c.format.as_deref().unwrap_or("plugin"),
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

    /// Step 7: swaps the plugin in, enables and trusts exactly what was staged, and writes its
    /// integrity record. A failure after the swap puts the previous version (or nothing) back.
    pub fn commit(
        mut self,
        workspace: &Workspace,
        home: &Path,
        now: DateTime<Utc>,
    ) -> Result<LockRecord, RegistryInstallError> {
        let name = self.name().to_owned();
        let staging = self.staging.clone().unwrap_or_default();
        let laid = staging.join("plugins").join(&name);
        let files = file_digests(&laid);
        let target = self.plugins.join(&name);
        let aside = self
            .plugins
            .join(format!(".replaced-{name}-{}", std::process::id()));
        let had_old = target.symlink_metadata().is_ok();
        if had_old {
            let _ = std::fs::remove_dir_all(&aside);
            std::fs::rename(&target, &aside)
                .map_err(io(format!("moving {} aside", target.display())))?;
        }
        if let Err(e) = std::fs::rename(&laid, &target) {
            if had_old {
                let _ = std::fs::rename(&aside, &target);
            }
            return Err(io(format!(
                "moving the new version to {}",
                target.display()
            ))(e));
        }
        let expected = self.inspected.sha256.clone();
        let c = &self.inspected.claims;
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
        let before = lock.plugin(&name).cloned();
        lock.set_plugin(&name, record.clone());
        let put_back = |lock: &mut InstallLock| {
            let _ = std::fs::remove_dir_all(&target);
            if had_old {
                let _ = std::fs::rename(&aside, &target);
            }
            match &before {
                Some(old) => lock.set_plugin(&name, old.clone()),
                None => {
                    lock.remove_plugin(&name);
                }
            }
            let _ = lock.save();
        };
        if let Err(e) = lock.save() {
            put_back(&mut lock);
            return Err(e.into());
        }
        let enabled = crate::user_plugins::enable(
            workspace,
            home,
            &name,
            Some(Path::new(&name)),
            |_review| {
                // The person decided on the registry's review; trust pins only what is in place,
                // and what it pinned is compared with what was verified below.
                Ok(true)
            },
        );
        match enabled {
            Ok(Trusted::Now(_) | Trusted::Already) => {}
            Ok(Trusted::Declined) => {
                put_back(&mut lock);
                return Err(RegistryInstallError::Enable(Box::new(
                    UserPluginError::NotFound { name },
                )));
            }
            Err(e) => {
                put_back(&mut lock);
                return Err(RegistryInstallError::Enable(Box::new(e)));
            }
        }
        // What trust pinned must be what was verified: a change between swap and trust fails.
        let store = bosun_plugins::TrustStore::load(home.join("trust.toml")).ok();
        let pinned = store
            .as_ref()
            .and_then(|s| s.get(&bosun_plugins::PluginScope::User, &name))
            .map(|r| r.sha256.clone());
        if pinned.as_deref() != Some(expected.as_str()) {
            put_back(&mut lock);
            return Err(RegistryError::Digest {
                what: format!("{name} as installed"),
                expected,
                got: pinned.unwrap_or_default(),
            }
            .into());
        }
        if had_old {
            let _ = std::fs::remove_dir_all(&aside);
        }
        if let Some(staging) = self.staging.take() {
            let _ = std::fs::remove_dir_all(staging);
        }
        Ok(record)
    }
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
