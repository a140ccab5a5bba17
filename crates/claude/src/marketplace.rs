//! `.claude-plugin/marketplace.json`: a named list of plugins and where each one's files are.
//! Unknown keys are ignored with a warning, as Claude Code does; a plugin entry may carry any
//! manifest field (with `strict: false` the entry is the manifest).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ClaudeError;
use crate::manifest::{Author, MANIFEST_KEYS, check_name, split_known};

/// The marketplace's top-level keys.
const MARKETPLACE_KEYS: &[&str] = &[
    "name",
    "owner",
    "plugins",
    "version",
    "description",
    "metadata",
    "forceRemoveDeletedPlugins",
    "allowCrossMarketplaceDependenciesOn",
];

/// Keys of a plugin entry besides the manifest's.
const ENTRY_KEYS: &[&str] = &["source", "strict", "category", "tags"];

/// Names only Anthropic's own marketplaces may take.
const RESERVED: &[&str] = &[
    "claude-plugins-official",
    "anthropic-marketplace",
    "anthropic-plugins",
    "claude-code-marketplace",
    "claude-code-plugins",
    "agent-skills",
];

/// Where a plugin's files are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PluginSource {
    /// `./plugins/x`, from the marketplace's root.
    Relative(String),
    /// Another place.
    Remote(RemoteSource),
}

/// A source outside the marketplace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RemoteSource {
    /// A GitHub repository.
    Github {
        /// `owner/repo`.
        repo: String,
        /// A branch or tag.
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        /// The commit, 40 hex digits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha: Option<String>,
    },
    /// Any git URL.
    Url {
        /// The repository.
        url: String,
        /// A branch or tag.
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        /// The commit, 40 hex digits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha: Option<String>,
    },
    /// A folder of a git repository.
    GitSubdir {
        /// The repository.
        url: String,
        /// The folder in it.
        path: String,
        /// A branch or tag.
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
        /// The commit, 40 hex digits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha: Option<String>,
    },
    /// An npm package (not supported: its install scripts run code).
    Npm {
        /// The package.
        package: String,
        /// Its version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// Its registry.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        registry: Option<String>,
    },
}

impl RemoteSource {
    /// The pinned commit, if any.
    pub fn sha(&self) -> Option<&str> {
        match self {
            Self::Github { sha, .. } | Self::Url { sha, .. } | Self::GitSubdir { sha, .. } => {
                sha.as_deref()
            }
            Self::Npm { .. } => None,
        }
    }

    /// The branch or tag asked for, if any.
    pub fn reference(&self) -> Option<&str> {
        match self {
            Self::Github { reference, .. }
            | Self::Url { reference, .. }
            | Self::GitSubdir { reference, .. } => reference.as_deref(),
            Self::Npm { .. } => None,
        }
    }

    /// The git URL to clone.
    pub fn git_url(&self) -> Option<String> {
        match self {
            Self::Github { repo, .. } => Some(format!("https://github.com/{repo}.git")),
            Self::Url { url, .. } | Self::GitSubdir { url, .. } => Some(url.clone()),
            Self::Npm { .. } => None,
        }
    }

    /// The folder inside the repository (`git-subdir`).
    pub fn subdir(&self) -> Option<&str> {
        match self {
            Self::GitSubdir { path, .. } => Some(path),
            _ => None,
        }
    }
}

impl std::fmt::Display for PluginSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Relative(p) => write!(f, "{p} (in the marketplace)"),
            Self::Remote(RemoteSource::Npm { package, .. }) => write!(f, "npm package {package}"),
            Self::Remote(r) => {
                write!(f, "git {}", r.git_url().unwrap_or_default())?;
                if let Some(dir) = r.subdir() {
                    write!(f, " folder {dir}")?;
                }
                match (r.sha(), r.reference()) {
                    (Some(sha), _) => write!(f, " at {sha}"),
                    (None, Some(reference)) => write!(f, " at {reference} (not pinned)"),
                    (None, None) => write!(f, " (not pinned)"),
                }
            }
        }
    }
}

/// One plugin a marketplace lists.
#[derive(Debug, Clone, PartialEq)]
pub struct MarketplaceEntry {
    /// Its name.
    pub name: String,
    /// Where its files are.
    pub source: PluginSource,
    /// `false`: the entry is the manifest (the plugin need not have one).
    pub strict: bool,
    /// Its version, as listed.
    pub version: Option<String>,
    /// One line on it.
    pub description: String,
    /// Who wrote it.
    pub author: Option<String>,
    /// Category and tags and keywords, for search.
    pub tags: Vec<String>,
    /// The manifest fields the entry carries (`strict: false`, or added to the plugin's own).
    pub manifest_fields: Map<String, Value>,
}

/// A marketplace.
#[derive(Debug, Clone, PartialEq)]
pub struct Marketplace {
    /// Its name: the `@MARKETPLACE` of its plugins' ids.
    pub name: String,
    /// Who runs it.
    pub owner: Author,
    /// One line on it.
    pub description: String,
    /// The folder relative sources are read from, relative to the root (`metadata.pluginRoot`).
    pub plugin_root: Option<String>,
    /// Its plugins.
    pub plugins: Vec<MarketplaceEntry>,
    /// What was ignored.
    pub warnings: Vec<String>,
}

fn text(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Reads a marketplace from its JSON text. `origin` says where it came from, for the reserved
/// names (only `github.com/anthropics/` may use them).
pub fn parse_marketplace(text_in: &str, origin: &str) -> Result<Marketplace, ClaudeError> {
    let bad = |message: String| ClaudeError::Manifest {
        what: "marketplace.json".to_owned(),
        message,
    };
    let value: Value = serde_json::from_str(text_in).map_err(|e| bad(e.to_string()))?;
    let Value::Object(object) = value else {
        return Err(bad("must be a JSON object".to_owned()));
    };
    let (top, mut warnings) = split_known(object, MARKETPLACE_KEYS, "marketplace.json");
    let name = text(&top, "name").ok_or_else(|| bad("needs \"name\"".to_owned()))?;
    check_name(&name, "marketplace.json")?;
    if RESERVED.contains(&name.as_str()) && !origin.starts_with("https://github.com/anthropics/") {
        return Err(bad(format!(
            "the name `{name}` is reserved for Anthropic's marketplaces, and this one comes from {origin}"
        )));
    }
    let owner: Author = serde_json::from_value(
        top.get("owner")
            .cloned()
            .ok_or_else(|| bad("needs \"owner\": {\"name\": …}".to_owned()))?,
    )
    .map_err(|e| bad(format!("owner: {e}")))?;
    let Some(Value::Array(items)) = top.get("plugins") else {
        return Err(bad("needs \"plugins\": [...]".to_owned()));
    };
    let metadata = top.get("metadata").and_then(Value::as_object);
    let plugin_root = metadata.and_then(|m| text(m, "pluginRoot"));
    let description = text(&top, "description")
        .or_else(|| metadata.and_then(|m| text(m, "description")))
        .unwrap_or_default();
    let mut plugins = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let Value::Object(entry) = item else {
            warnings.push(format!(
                "marketplace.json: plugins[{index}] is not an object: left out"
            ));
            continue;
        };
        match parse_entry(entry.clone(), index, &mut warnings) {
            Ok(entry) => {
                if plugins
                    .iter()
                    .any(|p: &MarketplaceEntry| p.name == entry.name)
                {
                    warnings.push(format!(
                        "marketplace.json: the plugin `{}` is listed twice: the first is kept",
                        entry.name
                    ));
                    continue;
                }
                plugins.push(entry);
            }
            Err(e) => warnings.push(format!("marketplace.json: plugins[{index}] left out: {e}")),
        }
    }
    Ok(Marketplace {
        name,
        owner,
        description,
        plugin_root,
        plugins,
        warnings,
    })
}

fn parse_entry(
    entry: Map<String, Value>,
    index: usize,
    warnings: &mut Vec<String>,
) -> Result<MarketplaceEntry, ClaudeError> {
    let bad = |message: String| ClaudeError::Manifest {
        what: format!("marketplace.json plugins[{index}]"),
        message,
    };
    let known: Vec<&str> = MANIFEST_KEYS.iter().chain(ENTRY_KEYS).copied().collect();
    let (mut entry, dropped) =
        split_known(entry, &known, &format!("marketplace.json plugins[{index}]"));
    warnings.extend(dropped);
    let name = text(&entry, "name").ok_or_else(|| bad("needs \"name\"".to_owned()))?;
    check_name(&name, "marketplace.json")?;
    let source: PluginSource = serde_json::from_value(
        entry
            .remove("source")
            .ok_or_else(|| bad("needs \"source\"".to_owned()))?,
    )
    .map_err(|e| bad(format!("source: {e}")))?;
    if let PluginSource::Remote(remote) = &source
        && let Some(sha) = remote.sha()
        && !(sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(bad(format!("source.sha `{sha}` is not 40 hex digits")));
    }
    let strict = entry
        .remove("strict")
        .map(|v| {
            v.as_bool()
                .ok_or_else(|| bad("strict must be true or false".to_owned()))
        })
        .transpose()?
        .unwrap_or(true);
    let mut tags: Vec<String> = Vec::new();
    if let Some(category) = entry
        .remove("category")
        .and_then(|v| v.as_str().map(str::to_owned))
    {
        tags.push(category);
    }
    for key in ["tags", "keywords"] {
        if let Some(Value::Array(list)) = entry.get(key) {
            tags.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
        }
    }
    entry.remove("tags");
    let author = entry.get("author").and_then(|a| {
        a.get("name")
            .and_then(Value::as_str)
            .or_else(|| a.as_str())
            .map(str::to_owned)
    });
    Ok(MarketplaceEntry {
        version: text(&entry, "version"),
        description: text(&entry, "description").unwrap_or_default(),
        name,
        source,
        strict,
        author,
        tags,
        manifest_fields: entry,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_of_every_form_are_read_and_bad_ones_left_out() {
        let m = parse_marketplace(
            r#"{"name":"mkt","owner":{"name":"o"},"shelf":1,"plugins":[
              {"name":"a","source":"./plugins/a","version":"1.0.0","category":"dev"},
              {"name":"b","source":{"source":"github","repo":"o/b","sha":"0123456789abcdef0123456789abcdef01234567"}},
              {"name":"c","source":{"source":"git-subdir","url":"https://git.example/c.git","path":"p/c","ref":"main"}},
              {"name":"d","source":{"source":"url","url":"https://x/d.git","sha":"short"}},
              {"name":"e","source":{"source":"npm","package":"e"}},
              {"name":"f"}
            ]}"#,
            "/tmp/mkt",
        )
        .unwrap();
        let names: Vec<&str> = m.plugins.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "e"]);
        assert_eq!(
            m.plugins[0].source,
            PluginSource::Relative("./plugins/a".to_owned())
        );
        assert_eq!(m.plugins[0].tags, ["dev"]);
        assert!(
            m.warnings.iter().any(|w| w.contains("shelf")),
            "{:?}",
            m.warnings
        );
        assert!(
            m.warnings.iter().any(|w| w.contains("40 hex")),
            "{:?}",
            m.warnings
        );
        assert!(
            m.warnings
                .iter()
                .any(|w| w.contains("needs \\\"source\\\"") || w.contains("source"))
        );
        let PluginSource::Remote(c) = &m.plugins[2].source else {
            panic!("not remote")
        };
        assert_eq!(c.subdir(), Some("p/c"));
        assert_eq!(c.reference(), Some("main"));
        assert_eq!(c.sha(), None);
    }

    #[test]
    fn reserved_names_are_refused_from_elsewhere() {
        let text = r#"{"name":"claude-plugins-official","owner":{"name":"o"},"plugins":[]}"#;
        assert!(parse_marketplace(text, "https://github.com/someone/x").is_err());
        assert!(
            parse_marketplace(
                text,
                "https://github.com/anthropics/claude-plugins-official"
            )
            .is_ok()
        );
    }
}
