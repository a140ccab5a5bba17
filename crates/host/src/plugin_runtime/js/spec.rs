//! [`JsPluginSpec`]: everything needed to start one JavaScript plugin, from the catalog's
//! snapshot or from a plugin the model built; what it is granted follows from it alone.

use std::collections::BTreeMap;
use std::time::Duration;

use bosun_core::{Authority, Classification, ToolName};
use bosun_js::{ActivationRequest, Format, JsLimits, ThrownAt, Trust};
use bosun_plugins::PluginContent;
use bosun_sandbox::{Grants, JsGrants};
use serde_json::Value;

use crate::plugin_runtime::error::LeftOut;
use crate::plugin_runtime::granter;

/// Everything needed to start one JavaScript plugin, independent of where it came from (the
/// catalog, or a plugin the model built during the run).
#[derive(Debug, Clone)]
pub struct JsPluginSpec {
    /// The local name: policy actions are `plugin.<local_name>.tool.<tool>`.
    pub local_name: String,
    /// The format.
    pub format: Format,
    /// The plugin's own name (Forge `plugin.json` name, Triggerfish directory name).
    pub name: String,
    /// The entry file, relative to the plugin directory.
    pub entry: String,
    /// The plugin's JavaScript files (TypeScript already stripped): relative path, source.
    pub files: Vec<(String, String)>,
    /// Every file of the plugin's directory as the trust review hashed it, relative path →
    /// standard base64: what `node:fs` reads (read-only; nothing of the host's file system).
    pub directory: BTreeMap<String, String>,
    /// The `.js` files that are CommonJS, as Node decides (`forge::commonjs_files`).
    pub commonjs: Vec<String>,
    /// Forge capabilities as declared (`tools:register`, `network:access`, ...), read once
    /// with the manifest.
    pub capabilities: Vec<bosun_plugins::ForgeCapability>,
    /// Triggerfish `declaredEndpoints` as authorities, read with the manifest.
    pub endpoints: Vec<Authority>,
    /// Classification of the plugin's results (Triggerfish manifest; Forge: `PUBLIC`).
    pub classification: Classification,
    /// Triggerfish effective trust.
    pub trust: Trust,
    /// The plugin's config table.
    pub config: Value,
    /// Per-call deadline.
    pub timeout: Duration,
    /// Memory cap of the instance.
    pub memory_bytes: usize,
    /// Limits the tool context reports.
    pub limits: JsLimits,
    /// Names no plugin tool may take (built-ins and host tools).
    pub reserved: Vec<String>,
    /// Triggerfish: the manifest read statically; the one the module exports must agree.
    pub static_manifest: Option<bosun_plugins::TriggerfishManifest>,
    /// The manifest asks to build code from strings (and trust recorded that).
    pub code_from_strings: bool,
    /// The host variables the user passes to it (`[plugins.<name>] env`), with their values
    /// now; nothing else of the environment reaches it.
    pub env: BTreeMap<String, String>,
    /// Why its results are untrusted input, when they are (a plugin the agent built: no person
    /// reviewed its code). A call's result then marks the session as having read untrusted input.
    pub untrusted_output: Option<String>,
    /// For each TypeScript file, where the JavaScript it became came from: an error's
    /// `(at file:line:column)` names the line the author wrote, not the stripped one.
    pub positions: BTreeMap<String, bosun_plugins::typescript::SourcePositions>,
}

/// A JavaScript plugin's manifest, as the catalog read it without running code.
#[derive(Debug, Clone, Copy)]
pub enum JsManifestRef<'a> {
    /// `plugin.json`.
    Forge(&'a bosun_plugins::ForgeManifest),
    /// The static `manifest` of `mod.ts`.
    Triggerfish(&'a bosun_plugins::TriggerfishManifest),
}

/// Where a plugin's limits come from.
#[derive(Debug, Clone, Copy)]
pub struct JsBounds {
    /// Per-call deadline.
    pub timeout: Duration,
    /// Memory cap of the instance.
    pub memory_bytes: usize,
    /// What the plugin's tool context reports as limits (Forge's `context.limits`).
    pub limits: JsLimits,
}

impl Default for JsBounds {
    fn default() -> Self {
        Self {
            timeout: granter::DEFAULT_TIMEOUT,
            memory_bytes: usize::try_from(granter::DEFAULT_MEMORY_MIB << 20).unwrap_or(usize::MAX),
            limits: JsLimits::default(),
        }
    }
}

impl JsBounds {
    /// The context limits of the host's own `[limits]`.
    pub fn with_host_limits(mut self, limits: &bosun_core::Limits) -> Self {
        self.limits = JsLimits {
            max_output_bytes: u64::try_from(limits.max_output_bytes).unwrap_or(u64::MAX),
            max_entries: u64::try_from(limits.max_entries).unwrap_or(u64::MAX),
            command_timeout_ms: limits.command_timeout_ms,
        };
        self
    }
}

impl JsPluginSpec {
    /// The spec for a plugin whose files are `snapshot` (exactly the bytes that were hashed,
    /// and scanned when the model installs it). TypeScript files are stripped of their types
    /// here; every other file the engine may import must be UTF-8 JavaScript.
    ///
    /// `config_trusted` is the user's half of Triggerfish's trust rule (the manifest's is the
    /// other half): a plugin is trusted only when both say so.
    ///
    /// # Errors
    /// A file that is not UTF-8 or does not parse as TypeScript, named with the reason.
    #[allow(clippy::too_many_arguments)]
    pub fn from_snapshot(
        local_name: &str,
        snapshot: &bosun_plugins::SourceSnapshot,
        manifest: JsManifestRef<'_>,
        config: Value,
        config_trusted: bool,
        bounds: JsBounds,
        reserved: Vec<String>,
    ) -> Result<Self, LeftOut> {
        let mut files = Vec::new();
        let mut positions = BTreeMap::new();
        let mut directory = BTreeMap::new();
        for file in snapshot.files() {
            let path = file.path.as_str();
            directory.insert(
                path.to_owned(),
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &file.bytes),
            );
            let is_ts = [".ts", ".mts", ".cts"].iter().any(|e| path.ends_with(e))
                && !path.ends_with(".d.ts");
            let is_js = [".js", ".mjs", ".cjs"].iter().any(|e| path.ends_with(e));
            if !is_ts && !is_js {
                continue;
            }
            let text = std::str::from_utf8(&file.bytes).map_err(|source| LeftOut::NotUtf8 {
                path: path.to_owned(),
                source,
            })?;
            let text = if is_ts {
                let stripped = bosun_plugins::typescript::strip_types_mapped(
                    std::path::Path::new(path),
                    text,
                )?;
                positions.insert(path.to_owned(), stripped.positions);
                stripped.code
            } else {
                text.to_owned()
            };
            files.push((path.to_owned(), text));
        }
        let spec = match manifest {
            JsManifestRef::Forge(m) => Self {
                local_name: local_name.to_owned(),
                format: Format::Forge,
                name: m.name.clone(),
                entry: m.entry.clone(),
                files,
                directory,
                commonjs: bosun_plugins::forge::commonjs_files(snapshot),
                capabilities: m.capabilities.clone(),
                endpoints: Vec::new(),
                classification: Classification::Public,
                trust: Trust::Sandboxed,
                config,
                timeout: bounds.timeout,
                memory_bytes: bounds.memory_bytes,
                limits: bounds.limits,
                reserved,
                static_manifest: None,
                code_from_strings: m.code_from_strings,
                env: BTreeMap::new(),
                untrusted_output: None,
                positions,
            },
            JsManifestRef::Triggerfish(m) => Self {
                local_name: local_name.to_owned(),
                format: Format::Triggerfish,
                name: m.name.clone(),
                entry: "mod.ts".to_owned(),
                files,
                directory,
                commonjs: Vec::new(),
                capabilities: Vec::new(),
                endpoints: m.endpoint_authorities.clone(),
                classification: m.classification,
                trust: if m.trust == bosun_plugins::ManifestTrust::Trusted && config_trusted {
                    Trust::Trusted
                } else {
                    Trust::Sandboxed
                },
                config,
                timeout: bounds.timeout,
                memory_bytes: bounds.memory_bytes,
                limits: bounds.limits,
                reserved,
                static_manifest: Some(m.clone()),
                code_from_strings: m.code_from_strings,
                env: BTreeMap::new(),
                untrusted_output: None,
                positions,
            },
        };
        Ok(spec)
    }

    /// `message` with the place its error was thrown (`at`, read from it once where it left
    /// the engine) moved from the stripped JavaScript of a TypeScript file to the TypeScript the
    /// author wrote. A message from a JavaScript file, or a place no mark covers, is returned as
    /// it is.
    pub fn place(&self, message: &str, at: Option<&ThrownAt>) -> String {
        let Some(at) = at else {
            return message.to_owned();
        };
        let Some(map) = self.positions.get(&at.file) else {
            return message.to_owned();
        };
        match map.original(at.line, at.column.unwrap_or(1)) {
            Some((line, column)) => at.replace_in(message, line, column),
            None => message.to_owned(),
        }
    }

    pub(super) fn network(&self) -> bool {
        match self.format {
            Format::Forge => self
                .capabilities
                .iter()
                .any(|c| c.judged_as() == Some(bosun_core::Capability::NetHttp)),
            Format::Triggerfish => !self.endpoints.is_empty(),
        }
    }

    pub(super) fn config_hosts(&self) -> Vec<String> {
        self.config
            .get("hosts")
            .and_then(Value::as_array)
            .map(|hosts| {
                hosts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_ascii_lowercase)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(super) fn grants(&self) -> Grants {
        Grants {
            fs: Vec::new(),
            http: self.network(),
            config: match &self.config {
                Value::Object(map) => map
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect(),
                _ => BTreeMap::new(),
            },
            memory_bytes: self.memory_bytes,
            timeout: self.timeout,
            js: JsGrants {
                host_info: self.format == Format::Triggerfish && self.trust == Trust::Trusted,
            },
        }
    }

    pub(super) fn request(&self) -> ActivationRequest {
        ActivationRequest {
            format: self.format,
            name: self.name.clone(),
            entry: self.entry.clone(),
            // The engine's activation request is JSON: Forge's spelling crosses there.
            capabilities: self
                .capabilities
                .iter()
                .map(|c| c.as_str().to_owned())
                .collect(),
            trust: self.trust,
            config: self.config.clone(),
            limits: self.limits,
            reserved_tool_names: self.reserved.clone(),
            code_from_strings: self.code_from_strings,
            env: self.env.clone(),
            directory: self.directory.clone(),
            commonjs: self.commonjs.clone(),
        }
    }

    /// The name the model calls `tool` by.
    pub(super) fn model_name(&self, tool: &str) -> Result<ToolName, LeftOut> {
        let result = match self.format {
            Format::Forge => ToolName::new(tool),
            Format::Triggerfish => ToolName::namespaced(format!("plugin_{}_{tool}", self.name)),
        };
        result.map_err(|e| LeftOut::ToolName {
            tool: tool.to_owned(),
            reason: e.to_string(),
        })
    }
}

/// The specs of the enabled Forge and Triggerfish plugins among `entries`, built from the exact
/// snapshots the catalog hashed. `reserved` are the built-in tool names. A plugin whose files
/// cannot be prepared is left out with a warning.
pub fn specs_from_catalog<'a>(
    entries: impl IntoIterator<Item = &'a bosun_plugins::PluginEntry>,
    reserved: &[String],
    host_limits: &bosun_core::Limits,
) -> (Vec<JsPluginSpec>, Vec<String>) {
    let mut specs = Vec::new();
    let mut warnings = Vec::new();
    for entry in entries {
        let Some(PluginContent::Js {
            manifest: js,
            source: Some(snapshot),
        }) = &entry.content
        else {
            continue;
        };
        let manifest = match js {
            bosun_plugins::JsManifest::Forge(m) => JsManifestRef::Forge(m),
            bosun_plugins::JsManifest::Triggerfish(m) => JsManifestRef::Triggerfish(m),
        };
        let config = entry.config.as_ref();
        let table: serde_json::Map<String, Value> = config
            .map(|c| {
                c.config
                    .keys()
                    .filter_map(|k| c.config_json(k).map(|v| (k.clone(), v)))
                    .collect()
            })
            .unwrap_or_default();
        // The user's half of Triggerfish's trust: `trust = "trusted"` in the plugin's config.
        let config_trusted = table.get("trust").and_then(Value::as_str) == Some("trusted");
        let bounds = JsBounds {
            timeout: config
                .and_then(|c| c.timeout_ms)
                .map_or(JsBounds::default().timeout, Duration::from_millis),
            memory_bytes: config
                .and_then(|c| c.memory_mib)
                .and_then(|mib| usize::try_from(mib << 20).ok())
                .unwrap_or(JsBounds::default().memory_bytes),
            limits: JsLimits::default(),
        }
        .with_host_limits(host_limits);
        match JsPluginSpec::from_snapshot(
            &entry.local_name,
            snapshot,
            manifest,
            Value::Object(table),
            config_trusted,
            bounds,
            reserved.to_vec(),
        ) {
            Ok(mut spec) => {
                // The variables the user named, read now; an unset one is simply absent.
                spec.env = config
                    .map(|c| {
                        c.env
                            .iter()
                            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v)))
                            .collect()
                    })
                    .unwrap_or_default();
                specs.push(spec);
            }
            Err(reason) => warnings.push(format!(
                "plugin `{}` was not loaded: {reason}",
                entry.local_name
            )),
        }
    }
    (specs, warnings)
}
