//! Native plugins as tools: the bridge between the catalog (what is installed and trusted), the
//! sandbox (where plugin code runs) and the chokepoint (the only caller of [`Tool::call`]).
//!
//! A plugin's component is compiled and instantiated lazily, on the first call that passed
//! policy, from the exact bytes the catalog hashed. Its grants — the preopened workspace, whether
//! outgoing HTTP exists at all, its config values, memory and deadline — are fixed before any of
//! its code runs. Each call then names the hosts it may reach, taken from the call's own
//! capability scopes, which policy has just judged. An instance that traps, runs out of time or
//! memory is discarded; the next call gets a fresh one and no other plugin notices.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use bosun_core::{
    Authority, Capability, CapabilityRequest, ErrorCode, Scope, ToolError, ToolOutput, ToolSpec,
};
use bosun_plugins::{CapabilityDecl, PluginContent, PluginEntry, PluginTool as PluginToolMeta};
use bosun_policy::Policy;
use bosun_sandbox::{CallOptions, FsGrant, Grants, Instance, Loaded, NetGrant, Sandbox};
use serde_json::Value;

use crate::hooks::SessionLabels;
use crate::plugin_runtime::call_report;
use crate::plugin_runtime::contract::{Assembly, Offer, Prompts, Runtime};
use crate::plugin_runtime::error::{RuntimeError, call_error, plugin_error, sandbox_error};
use crate::plugin_runtime::granter::{self, grant_dir};
pub use crate::plugin_runtime::granter::{DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT};
use crate::plugin_runtime::slot::{InstanceSlot, Poisonable};
use crate::tool::{Tool, ToolContext};

/// An instance and the directories it was linked with.
struct Linked {
    fs: Vec<FsGrant>,
    instance: Instance,
}

impl Poisonable for Linked {
    fn is_poisoned(&self) -> bool {
        self.instance.is_poisoned()
    }
}

/// One enabled plugin: its bytes, grants and (once used) its compiled form and instance.
struct NativePlugin {
    local_name: String,
    bytes: Arc<[u8]>,
    /// The SHA-256 the catalog computed over `bytes` when it checked them against trust.
    sha256: Option<[u8; 32]>,
    sandbox: Sandbox,
    grants: Grants,
    loaded: tokio::sync::OnceCell<Loaded>,
    /// The live instance and the directories it was linked with.
    instance: InstanceSlot<Linked>,
    /// The workspace root the plugin's directories come from.
    root: std::path::PathBuf,
    config: BTreeMap<String, Value>,
}

impl std::fmt::Debug for NativePlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativePlugin")
            .field("local_name", &self.local_name)
            .finish_non_exhaustive()
    }
}

impl NativePlugin {
    async fn loaded(&self) -> Result<&Loaded, ToolError> {
        self.loaded
            .get_or_try_init(|| async {
                let sandbox = self.sandbox.clone();
                let bytes = self.bytes.clone();
                let label = self.local_name.clone();
                // Compiling (or reading the cached artefact) is CPU work: keep it off the
                // async workers.
                let sha256 = self.sha256;
                tokio::task::spawn_blocking(move || {
                    match sha256 {
                        Some(sha256) => sandbox.load_hashed(&bytes, sha256),
                        None => sandbox.load(&bytes),
                    }
                    .map(|l| l.with_label(label))
                })
                .await
                .map_err(|e| plugin_error(&self.local_name, format!("loading failed: {e}")))?
                .map_err(|e| plugin_error(&self.local_name, e))
            })
            .await
    }

    async fn call(
        &self,
        tool: &str,
        input: &Value,
        net: NetGrant,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let loaded = self.loaded().await?;
        // Exactly the directories this call was judged to reach as a whole: none without a
        // judged fs.read or fs.write, writable only with fs.write. An instance linked with
        // other directories is replaced (module state does not survive).
        let fs = granter::preopens(&self.root, &ctx.granted);
        let options = CallOptions {
            cancel: ctx.cancel.clone(),
            net,
            session: None,
            processes: None,
        };
        let (granted, grants) = (&fs, &self.grants);
        let (result, reached) = self
            .instance
            .with(
                loaded.slots(),
                &SessionLabels::of(&ctx.session),
                |linked| linked.fs == fs,
                move || async move {
                    let instance = loaded
                        .instantiate(Grants {
                            fs: granted.clone(),
                            ..grants.clone()
                        })
                        .await?;
                    Ok(Linked {
                        fs: granted.clone(),
                        instance,
                    })
                },
                async |linked| {
                    linked
                        .instance
                        .call(tool, &input.to_string(), options)
                        .await
                },
                |note| {
                    ctx.log_lines([("info".to_owned(), note.line())]);
                    true
                },
            )
            .await
            .map_err(|e| sandbox_error(&self.local_name, &e))?;
        ctx.instance_label.record(&self.local_name, &reached);
        match result {
            Ok(out) => {
                call_report::keep(ctx, &out.report);
                let value: Value = serde_json::from_str(&out.output_json).map_err(|e| {
                    plugin_error(
                        &self.local_name,
                        format!("returned output that is not JSON ({e})"),
                    )
                })?;
                Ok(ToolOutput::new(value))
            }
            Err(error) => {
                // A poisoned instance was already dropped by its slot.
                call_report::keep(ctx, &error.report);
                Err(call_error(&self.local_name, &error.kind))
            }
        }
    }
}

/// A 32-byte digest from its lowercase hex form, as the catalog writes it.
fn digest_from_hex(hex: &str) -> Option<[u8; 32]> {
    let mut digest = [0u8; 32];
    if hex.len() != 64 {
        return None;
    }
    for (byte, pair) in digest.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(digest)
}

/// One plugin tool as the chokepoint sees it.
pub struct PluginTool {
    runtime: Arc<NativePlugin>,
    spec: ToolSpec,
    tool: String,
    action: String,
    capabilities: Vec<CapabilityDecl>,
    policy: Arc<Policy>,
}

impl std::fmt::Debug for PluginTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginTool")
            .field("action", &self.action)
            .finish_non_exhaustive()
    }
}

/// The host of a URL held at `pointer` in `input`, with its port when one is given.
fn url_authority(input: &Value, pointer: &str) -> Result<Authority, ToolError> {
    let text = input
        .pointer(pointer)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ToolError::new(
                ErrorCode::InvalidInput,
                format!("the input needs a URL at {pointer}"),
            )
        })?;
    let url = url::Url::parse(text).map_err(|e| {
        ToolError::new(
            ErrorCode::InvalidInput,
            format!("`{text}` is not a URL: {e}"),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::new(
            ErrorCode::InvalidInput,
            format!(
                "only http and https URLs are allowed, not `{}`",
                url.scheme()
            ),
        ));
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_owned(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => {
            return Err(ToolError::new(
                ErrorCode::InvalidInput,
                format!("`{text}` has no host"),
            ));
        }
    };
    Ok(Authority::new(&host, url.port()))
}

fn host_of_config(value: Option<&Value>, key: &str) -> Result<Authority, ToolError> {
    let Some(Value::String(text)) = value else {
        return Err(ToolError::new(
            ErrorCode::InvalidInput,
            format!("this tool needs `{key}` in the plugin's [plugins.<name>.config] table"),
        ));
    };
    let wrapped = serde_json::json!({ "u": text });
    url_authority(&wrapped, "/u").or_else(|_| {
        Authority::parse(text).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidInput,
                format!("the plugin's config `{key}` is neither an http(s) URL nor a host: {e}"),
            )
        })
    })
}

impl PluginTool {
    /// The net.http authorities this call reaches.
    fn net_hosts(&self, input: &Value) -> Result<Vec<Authority>, ToolError> {
        let mut hosts = Vec::new();
        for decl in self
            .capabilities
            .iter()
            .filter(|d| d.capability == Capability::NetHttp)
        {
            for host in decl.hosts.iter().flatten() {
                hosts.push(Authority::new(host, None));
            }
            if let Some(pointer) = &decl.host_from_input {
                hosts.push(url_authority(input, pointer)?);
            }
            if let Some(key) = &decl.hosts_from_config {
                hosts.push(host_of_config(self.runtime.config.get(key), key)?);
            }
        }
        Ok(hosts)
    }
}

#[async_trait]
impl Tool for PluginTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        &self.action
    }

    fn capability_requests(
        &self,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        let mut requests = Vec::new();
        for decl in &self.capabilities {
            match decl.capability {
                Capability::NetHttp => {}
                Capability::FsRead | Capability::FsWrite => {
                    let scope = match &decl.path_from_input {
                        Some(pointer) => {
                            let text = input
                                .pointer(pointer)
                                .and_then(Value::as_str)
                                .unwrap_or(".");
                            // Judged without saying what is there (a write may name a file
                            // that does not exist yet).
                            ctx.workspace.judged_scope(text)?
                        }
                        None => Scope {
                            path: Some(".".to_owned()),
                            ..Scope::default()
                        },
                    };
                    let path = scope.path.clone().unwrap_or_else(|| ".".to_owned());
                    // The preopen is a directory: the judged path's nearest existing one,
                    // computed once here and judged as a whole (the preopen is made from that
                    // request and nothing else). What it reaches beyond that (a denied
                    // `secrets/**` inside it, protected paths at any depth for a write) is
                    // judged too.
                    let dir = grant_dir(ctx.workspace.root(), &path);
                    requests.extend(granter::judged_reach(&decl.capability, scope, &dir));
                    requests.extend(reached_within(
                        &self.policy,
                        ctx.workspace.root(),
                        &decl.capability,
                        &dir,
                    ));
                }
                _ => requests.push(CapabilityRequest::bare(decl.capability.clone())),
            }
        }
        let mut hosts = self.net_hosts(input)?;
        hosts.sort();
        hosts.dedup();
        requests.extend(hosts.into_iter().map(|authority| CapabilityRequest {
            capability: Capability::NetHttp,
            scope: Scope::authority(authority),
        }));
        Ok(requests)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        // A path judged where a link leading out of the workspace lies (policy judged the name
        // first, so a denied one said nothing more) is refused now, before a preopen could be
        // made through that link.
        for pointer in self
            .capabilities
            .iter()
            .filter_map(|decl| decl.path_from_input.as_deref())
        {
            let text = input
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or(".");
            ctx.workspace.inside(text)?;
        }
        let net = granter::network(&ctx.granted, &self.policy);
        self.runtime.call(&self.tool, &input, net, ctx).await
    }
}

/// Builds the runtimes and tools of every enabled plugin in the catalog.
///
/// A tool whose action, or one of whose capabilities (unscoped), policy denies outright is left
/// out of the session, and the capability grants follow only the tools that remain — so a denied
/// capability is not even linked.
pub fn plugin_tools(
    entries: impl IntoIterator<Item = impl std::ops::Deref<Target = PluginEntry>>,
    sandbox: &Sandbox,
    policy: &Arc<Policy>,
    workspace_root: &std::path::Path,
) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for entry in entries {
        let Some(PluginContent::Native {
            manifest,
            bytes: Some(bytes),
        }) = &entry.content
        else {
            continue;
        };
        let offered: Vec<(&PluginToolMeta, String, String)> = manifest
            .tools
            .iter()
            .zip(&entry.offers)
            .filter_map(|(tool, offer)| {
                offer
                    .model_name
                    .clone()
                    .map(|name| (tool, name, offer.action.clone()))
            })
            .filter(|(tool, _, action)| {
                !granter::withheld(
                    policy,
                    action,
                    tool.spec.risk,
                    tool.capabilities.iter().map(|d| &d.capability),
                )
            })
            .collect();
        if offered.is_empty() {
            continue;
        }
        let caps = |c: Capability| {
            offered
                .iter()
                .any(|(t, _, _)| t.capabilities.iter().any(|d| d.capability == c))
        };
        let config = entry.config.as_ref();
        let plugin_config: BTreeMap<String, Value> = config
            .map(|c| {
                c.config
                    .keys()
                    .filter_map(|k| c.config_json(k).map(|v| (k.clone(), v)))
                    .collect()
            })
            .unwrap_or_default();
        let grants = Grants {
            // Directories are granted per call, from what policy judged (`fs_grants`).
            fs: Vec::new(),
            http: caps(Capability::NetHttp),
            config: plugin_config
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
            memory_bytes: granter::memory_bytes(config),
            timeout: granter::timeout(config),
            js: bosun_sandbox::JsGrants::default(),
        };
        let runtime = Arc::new(NativePlugin {
            local_name: entry.local_name.clone(),
            bytes: bytes.clone(),
            sha256: entry.sha256.as_deref().and_then(digest_from_hex),
            sandbox: sandbox.clone(),
            grants,
            loaded: tokio::sync::OnceCell::new(),
            instance: InstanceSlot::empty(&entry.local_name),
            root: workspace_root.to_owned(),
            config: plugin_config,
        });
        for (tool, _model_name, action) in offered {
            tools.push(Arc::new(PluginTool {
                runtime: runtime.clone(),
                spec: tool.spec.clone(),
                tool: tool.spec.name.to_string(),
                action,
                capabilities: tool.capabilities.clone(),
                policy: policy.clone(),
            }));
        }
    }
    tools
}

/// Most entries looked at for protected paths below a writable directory; past it, every
/// protected name counts as present.
const MAX_PROTECTED_WALK: usize = 50_000;

/// What a preopen of `dir` (relative to `root`) reaches beyond the directory as a whole, as
/// requests of their own for policy to judge: the paths of rules restricting `capability` that can lie in
/// the preopened directory (so a `secrets/**` deny inside a granted workspace denies the call,
/// rather than the plugin reading the secrets through its preopen), and, for `fs.write`, every
/// protected path (`.git`, `.bosun`, ...) at any depth below it.
fn reached_within(
    policy: &Policy,
    root: &std::path::Path,
    capability: &Capability,
    dir: &std::path::Path,
) -> Vec<CapabilityRequest> {
    let dir_text = dir.to_string_lossy().replace('\\', "/");
    let request = |path: String| CapabilityRequest {
        capability: capability.clone(),
        scope: Scope {
            path: Some(path),
            ..Scope::default()
        },
    };
    let mut out: Vec<CapabilityRequest> = policy
        .restricted_paths(&capability.as_action())
        .into_iter()
        .filter(|pattern| pattern_can_lie_within(pattern, &dir_text))
        .map(request)
        .collect();
    if *capability == Capability::FsWrite {
        out.extend(protected_below(root, dir).into_iter().map(request));
    }
    out
}

/// Whether a rule's path glob can match something inside the directory `dir` ("" is the root).
fn pattern_can_lie_within(pattern: &str, dir: &str) -> bool {
    let pattern = pattern.trim_start_matches("./");
    let literal = pattern
        .find(['*', '?', '[', '{'])
        .map_or(pattern, |at| &pattern[..at]);
    if dir.is_empty() {
        return true;
    }
    let dir = format!("{dir}/");
    literal.starts_with(&dir) || dir.starts_with(literal) || pattern == dir.trim_end_matches('/')
}

/// The protected paths at any depth below `dir` (relative to `root`), relative to `root`. The
/// walk lists each directory through the descriptor it opened and follows no symbolic link
/// (`bosun_fsio::beneath::walk_no_links`), as the sandbox's preopen does: a directory swapped for
/// a link cannot show it another tree's listing. `dir` reached through a link, or a tree too
/// large to look at whole, fails closed: every protected name counts as present anywhere.
fn protected_below(root: &std::path::Path, dir: &std::path::Path) -> Vec<String> {
    let everywhere = || {
        bosun_policy::PROTECTED_DIRS
            .iter()
            .chain(bosun_policy::PROTECTED_FILES.iter())
            .map(|name| format!("**/{name}"))
            .collect::<Vec<_>>()
    };
    let Ok(handle) = bosun_fsio::beneath::Root::open(root) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut seen = 0usize;
    let walked = bosun_fsio::beneath::walk_no_links(handle.fd(), dir, |path, is_dir| {
        seen += 1;
        if seen > MAX_PROTECTED_WALK {
            return std::ops::ControlFlow::Break(());
        }
        let text = path.to_string_lossy().replace('\\', "/");
        if bosun_policy::is_protected(&text) {
            found.push(text);
            std::ops::ControlFlow::Continue(false)
        } else {
            std::ops::ControlFlow::Continue(is_dir)
        }
    });
    match walked {
        Err(e) if bosun_fsio::beneath::is_link_on_path(&e) => return everywhere(),
        _ if seen > MAX_PROTECTED_WALK => return everywhere(),
        _ => {}
    }
    found.sort();
    found
}

/// The runtime of native plugins: each enabled component's tools, built lazily on their first
/// call; their manifests' prompt contributions.
#[derive(Debug, Default)]
pub struct NativeRuntime {
    prompts: Vec<(String, String)>,
}

#[async_trait]
impl Runtime for NativeRuntime {
    fn offer(&mut self, at: &Assembly<'_>) -> Result<Offer, RuntimeError> {
        let native = || {
            at.enabled()
                .filter(|e| matches!(e.content, Some(PluginContent::Native { .. })))
        };
        self.prompts = native()
            .filter_map(|entry| {
                let prompt = entry.manifest()?.prompt.as_ref()?;
                Some((entry.local_name.clone(), prompt.clone()))
            })
            .collect();
        if native().next().is_none() {
            return Ok(Offer::default());
        }
        let tools = plugin_tools(native(), at.sandbox.get()?, at.policy, at.workspace);
        Ok(Offer {
            tools,
            ..Offer::default()
        })
    }

    async fn prompts(&self, _task: &str) -> Prompts {
        // A manifest's prompt is text on disk, written by no instance: it carries no label.
        Prompts {
            texts: self.prompts.clone(),
            ..Prompts::default()
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::{digest_from_hex, pattern_can_lie_within, protected_below};

    /// The directory a write preopen would reach, swapped for a link to a tree without a `.git`
    /// (so that the walk finds nothing, and the link is swapped back before the preopen): every
    /// protected name counts as present, so the call is judged as writing them.
    #[test]
    fn a_walk_through_a_link_finds_every_protected_name() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        for d in ["real/.git", "real/src/.bosun", "decoy/src"] {
            std::fs::create_dir_all(root.join(d)).unwrap_or_else(|e| panic!("{e}"));
        }
        std::os::unix::fs::symlink(root.join("decoy"), root.join("pub"))
            .unwrap_or_else(|e| panic!("{e}"));
        let found = protected_below(root, std::path::Path::new("pub"));
        assert!(found.contains(&"**/.git".to_owned()), "{found:?}");
        assert_eq!(
            protected_below(root, std::path::Path::new("real")),
            ["real/.git", "real/src/.bosun"]
        );
        assert_eq!(
            protected_below(root, std::path::Path::new("decoy")),
            Vec::<String>::new()
        );
    }

    /// The catalog's hex digest reads back to its bytes; anything else is no digest at all (the
    /// sandbox then hashes the bytes itself).
    #[test]
    fn a_hex_digest_reads_back_and_anything_else_is_none() {
        let digest: [u8; 32] = std::array::from_fn(|i| (i * 9) as u8);
        assert_eq!(
            digest_from_hex(&bosun_core::text::hex(&digest)),
            Some(digest)
        );
        for bad in ["", "00", &"g".repeat(64), &"0".repeat(63), &"é".repeat(32)] {
            assert_eq!(digest_from_hex(bad), None, "{bad}");
        }
    }

    #[test]
    fn rule_paths_are_matched_against_the_preopened_directory() {
        for (pattern, dir, inside) in [
            ("secrets/**", "", true),
            ("secrets/**", "src", false),
            ("src/**", "src/sub", true),
            ("src/sub/*.key", "src", true),
            ("**/.env", "src", true),
            ("./docs/private.txt", "docs", true),
            ("docs", "docs", true),
            ("docsx/**", "docs", false),
            ("s*/**", "src", true),
        ] {
            assert_eq!(
                pattern_can_lie_within(pattern, dir),
                inside,
                "{pattern} in {dir:?}"
            );
        }
    }
}
