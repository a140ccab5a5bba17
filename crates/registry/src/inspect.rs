//! What a plugin declares, read without running it — by the plugin catalog's own readers
//! (`bosun_plugins::catalog`), so a publisher's claims and an installer's comparison see exactly
//! what loading would see — and the comparison of a catalog's claims with it.

use std::collections::BTreeMap;
use std::path::Path;

use bosun_plugins::catalog::{Catalog, CatalogInput, PluginContent};
use bosun_plugins::trust::TrustStore;
use bosun_plugins::{PluginFormat, PluginState};

use crate::error::RegistryError;
use crate::source::Claims;

/// A plugin as read from a folder laid out like a home (`<home>/plugins/<name>/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspected {
    /// What it declares, as claims.
    pub claims: Claims,
    /// The content hash the catalog computes (what trust and the lock pin).
    pub sha256: String,
    /// Its format.
    pub format: PluginFormat,
}

/// Reads plugin `name` under `home/plugins/` as the catalog would, with `builtins` as the
/// names its tools may not take. A plugin the catalog finds invalid is refused with its reason.
pub fn inspect_plugin(
    home: &Path,
    name: &str,
    builtins: &[&str],
) -> Result<Inspected, RegistryError> {
    let trust = TrustStore::empty(home.join("trust.toml"));
    let user_plugins = BTreeMap::new();
    let catalog = Catalog::build(CatalogInput {
        home,
        user_plugins: &user_plugins,
        workspace: None,
        trust: &trust,
        builtins,
        digests: None,
    });
    let entry = catalog
        .entries()
        .iter()
        .find(|e| e.local_name == name)
        .ok_or_else(|| RegistryError::NotFound {
            what: format!(
                "a plugin (plugin.wasm, plugin.json or mod.ts) in {}",
                home.join("plugins").join(name).display()
            ),
        })?;
    if let PluginState::Invalid { reason } = &entry.state {
        return Err(RegistryError::malformed(format!("plugin {name}"), reason));
    }
    let sha256 = entry.sha256.clone().ok_or_else(|| {
        RegistryError::malformed(format!("plugin {name}"), "it could not be read")
    })?;
    let mut claims = Claims {
        format: Some(entry.format.to_string()),
        ..Claims::default()
    };
    match &entry.content {
        Some(PluginContent::Native { manifest, .. } | PluginContent::Chock { manifest, .. }) => {
            claims.name = manifest.name.clone();
            claims.version = manifest.version.to_string();
            claims.description = manifest.description.clone().unwrap_or_default();
            claims.tools = manifest.tool_names();
            claims.capabilities = manifest.grants();
        }
        Some(PluginContent::Js { manifest, .. }) => {
            claims.name = manifest.name().to_owned();
            claims.version = manifest.version().to_owned();
            claims.capabilities = manifest.capabilities();
            claims.classification = manifest.classification().map(|c| c.to_string());
            if let bosun_plugins::catalog::JsManifest::Triggerfish(m) = manifest {
                claims.description = m.description.clone();
                claims.endpoints = m.declared_endpoints.iter().cloned().collect();
                claims.trust = Some(m.trust.to_string());
            }
        }
        None => {
            return Err(RegistryError::malformed(
                format!("plugin {name}"),
                "its metadata could not be read",
            ));
        }
    }
    Ok(Inspected {
        claims,
        sha256,
        format: entry.format,
    })
}

/// How strictly a catalog's claims are compared with the plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// Every field (Bosun's catalogs, whose publisher wrote the claims from the plugin).
    Every,
    /// What the catalog says (Reef: name, version, endpoints, classification and trust).
    Stated,
}

/// Refuses when the catalog's `claims` disagree with what the plugin declares: name, version,
/// tools, capabilities, endpoints, classification; a plugin asking for more trust than the
/// catalog showed is refused too.
pub fn compare(
    claims: &Claims,
    plugin: &Claims,
    strictness: Strictness,
) -> Result<(), RegistryError> {
    let mismatch = |field: &str, catalog: String, plugin: String| RegistryError::ClaimMismatch {
        field: field.to_owned(),
        catalog,
        plugin,
    };
    let list = |s: &std::collections::BTreeSet<String>| {
        format!("[{}]", s.iter().cloned().collect::<Vec<_>>().join(", "))
    };
    if claims.name != plugin.name {
        return Err(mismatch("name", claims.name.clone(), plugin.name.clone()));
    }
    if claims.version != plugin.version {
        return Err(mismatch(
            "version",
            claims.version.clone(),
            plugin.version.clone(),
        ));
    }
    let every = strictness == Strictness::Every;
    if every && claims.tools != plugin.tools {
        return Err(mismatch("tools", list(&claims.tools), list(&plugin.tools)));
    }
    if every && claims.capabilities != plugin.capabilities {
        return Err(mismatch(
            "capabilities",
            list(&claims.capabilities),
            list(&plugin.capabilities),
        ));
    }
    if (every || !claims.endpoints.is_empty() || !plugin.endpoints.is_empty())
        && claims.endpoints != plugin.endpoints
    {
        return Err(mismatch(
            "endpoints",
            list(&claims.endpoints),
            list(&plugin.endpoints),
        ));
    }
    let upper = |c: &Option<String>| c.as_deref().map(str::to_ascii_uppercase);
    if (every || claims.classification.is_some())
        && upper(&claims.classification) != upper(&plugin.classification)
    {
        return Err(mismatch(
            "classification",
            claims
                .classification
                .clone()
                .unwrap_or_else(|| "none".to_owned()),
            plugin
                .classification
                .clone()
                .unwrap_or_else(|| "none".to_owned()),
        ));
    }
    let asks_trust = |c: &Claims| c.trust.as_deref() == Some("trusted");
    if asks_trust(plugin) && !asks_trust(claims) {
        return Err(mismatch(
            "trust",
            claims.trust.clone().unwrap_or_else(|| "none".to_owned()),
            "trusted".to_owned(),
        ));
    }
    Ok(())
}
