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
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bosun_core::{
    Authority, Capability, CapabilityRequest, ErrorCode, Scope, ToolError, ToolOutput, ToolSpec,
};
use bosun_plugins::{CapabilityDecl, PluginEntry, PluginTool as PluginToolMeta};
use bosun_policy::{Policy, Subject};
use bosun_sandbox::{
    CallErrorKind, CallOptions, FsGrant, Grants, Instance, Loaded, NetGrant, Sandbox,
};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::tool::{Tool, ToolContext};

/// Default per-call deadline of a plugin.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default memory cap of a plugin instance.
pub const DEFAULT_MEMORY_MIB: u64 = 256;

/// One enabled plugin: its bytes, grants and (once used) its compiled form and instance.
struct PluginRuntime {
    local_name: String,
    bytes: Arc<[u8]>,
    /// The SHA-256 the catalog computed over `bytes` when it checked them against trust.
    sha256: Option<[u8; 32]>,
    sandbox: Sandbox,
    grants: Grants,
    loaded: tokio::sync::OnceCell<Loaded>,
    /// The live instance and the directories it was linked with.
    instance: Mutex<Option<(Vec<FsGrant>, Instance)>>,
    /// The workspace root the plugin's directories come from.
    root: std::path::PathBuf,
    config: BTreeMap<String, Value>,
}

impl std::fmt::Debug for PluginRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginRuntime")
            .field("local_name", &self.local_name)
            .finish_non_exhaustive()
    }
}

impl PluginRuntime {
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
                .map_err(|e| plugin_error(&self.local_name, e.to_string()))
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
        // Exactly the directories this call was judged to use: none without a judged fs.read
        // or fs.write, writable only with fs.write, each narrowed to its judged path. An
        // instance linked with other directories is replaced (module state does not survive).
        let fs = fs_grants(&self.root, &ctx.granted);
        let mut slot = self.instance.lock().await;
        if slot
            .as_ref()
            .is_none_or(|(linked, instance)| instance.is_poisoned() || *linked != fs)
        {
            *slot = None;
            let instance = loaded
                .instantiate(Grants {
                    fs: fs.clone(),
                    ..self.grants.clone()
                })
                .await
                .map_err(|e| plugin_error(&self.local_name, e.to_string()))?;
            *slot = Some((fs, instance));
        }
        let Some((_, instance)) = slot.as_mut() else {
            return Err(plugin_error(&self.local_name, "no instance".to_owned()));
        };
        let result = instance
            .call(
                tool,
                &input.to_string(),
                CallOptions {
                    cancel: ctx.cancel.clone(),
                    net,
                    session: None,
                    processes: None,
                },
            )
            .await;
        match result {
            Ok(out) => {
                ctx.log_lines(
                    out.report
                        .logs
                        .iter()
                        .map(|l| (format!("{:?}", l.level).to_lowercase(), l.message.clone())),
                );
                let value: Value = serde_json::from_str(&out.output_json).map_err(|e| {
                    plugin_error(
                        &self.local_name,
                        format!("returned output that is not JSON ({e})"),
                    )
                })?;
                Ok(ToolOutput::new(value))
            }
            Err(error) => {
                if error.poisons_instance() {
                    // Never reuse an instance after a trap, a timeout or a memory failure.
                    *slot = None;
                }
                for refused in &error.report.refused_requests {
                    ctx.log_lines([("warn".to_owned(), format!("refused request: {refused:?}"))]);
                }
                Err(call_error(&self.local_name, &error.kind))
            }
        }
    }
}

/// The tool error for a failed sandbox call: the plugin's own error with its code (kept when it
/// is one of Bosun's stable codes that a plugin may report, else `plugin_error`: see
/// [`ToolError::from_plugin`]) and message; any other failure (trap, deadline, memory, output),
/// which the sandbox itself observed, with its stable code, named after the plugin.
pub(crate) fn call_error(plugin: &str, kind: &CallErrorKind) -> ToolError {
    match kind {
        CallErrorKind::Tool {
            code,
            message,
            retryable,
        } => ToolError::from_plugin(code, message.clone(), *retryable),
        kind => ToolError {
            code: kind.host_code().unwrap_or(ErrorCode::PluginError),
            message: format!("plugin `{plugin}`: {kind}"),
            retryable: kind.retryable(),
        },
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

fn plugin_error(plugin: &str, message: String) -> ToolError {
    ToolError::new(
        ErrorCode::PluginError,
        format!("plugin `{plugin}`: {message}"),
    )
}

/// One plugin tool as the chokepoint sees it.
pub struct PluginTool {
    runtime: Arc<PluginRuntime>,
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
                    let path = match &decl.path_from_input {
                        Some(pointer) => {
                            let text = input
                                .pointer(pointer)
                                .and_then(Value::as_str)
                                .unwrap_or(".");
                            // A write may name a file that does not exist yet.
                            let resolved = if decl.capability == Capability::FsWrite {
                                ctx.workspace.resolve_new(text)?
                            } else {
                                ctx.workspace.resolve(text)?
                            };
                            ctx.workspace.relative(&resolved)
                        }
                        None => ".".to_owned(),
                    };
                    // The preopen is the path's whole directory: what it reaches beyond the
                    // path (a denied `secrets/**` inside it, protected paths at any depth for
                    // a write) is judged too.
                    requests.extend(reached_within(
                        &self.policy,
                        ctx.workspace.root(),
                        &decl.capability,
                        &path,
                    ));
                    requests.push(CapabilityRequest {
                        capability: decl.capability.clone(),
                        scope: Scope {
                            path: Some(path),
                            ..Scope::default()
                        },
                    });
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
        let net = net_grant(&ctx.granted, &self.policy);
        self.runtime.call(&self.tool, &input, net, ctx).await
    }
}

/// The HTTP grant for one call: exactly the `net.http` authorities policy has just judged
/// (`granted`, from the chokepoint), and a literal private address only when a rule names it.
pub(crate) fn net_grant(granted: &[CapabilityRequest], policy: &Policy) -> NetGrant {
    let mut net = NetGrant::default();
    for authority in granted
        .iter()
        .filter(|r| r.capability == Capability::NetHttp)
        .filter_map(|r| r.scope.as_authority())
    {
        if let Ok(ip) = authority.host.parse::<IpAddr>()
            && policy.names_host(&authority.host)
        {
            // Inside addresses only when a rule names them literally.
            net.private_allowed.push(ip);
        }
        net.hosts.push(authority);
    }
    net
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
        let (Some(bytes), bosun_plugins::PluginFormat::Native) = (entry.bytes(), entry.format)
        else {
            continue;
        };
        let offered: Vec<(&PluginToolMeta, String, String)> = entry
            .tools()
            .filter_map(|(tool, offer)| {
                offer
                    .model_name
                    .clone()
                    .map(|name| (tool, name, offer.action.clone()))
            })
            .filter(|(tool, _, action)| !denied_outright(policy, tool, action))
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
            memory_bytes: memory_bytes(config),
            timeout: timeout(config),
            js: bosun_sandbox::JsGrants::default(),
        };
        let runtime = Arc::new(PluginRuntime {
            local_name: entry.local_name.clone(),
            bytes: bytes.clone(),
            sha256: entry.sha256.as_deref().and_then(digest_from_hex),
            sandbox: sandbox.clone(),
            grants,
            loaded: tokio::sync::OnceCell::new(),
            instance: Mutex::new(None),
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

/// What a preopen for `path` (relative to `root`) reaches beyond `path` itself, as requests of
/// their own for policy to judge: the paths of rules restricting `capability` that can lie in
/// the preopened directory (so a `secrets/**` deny inside a granted workspace denies the call,
/// rather than the plugin reading the secrets through its preopen), and, for `fs.write`, every
/// protected path (`.git`, `.bosun`, ...) at any depth below it.
pub(crate) fn reached_within(
    policy: &Policy,
    root: &std::path::Path,
    capability: &Capability,
    path: &str,
) -> Vec<CapabilityRequest> {
    let dir = grant_dir(root, path);
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
        out.extend(protected_below(root, &dir).into_iter().map(request));
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

/// The protected paths at any depth below `dir` (relative to `root`), relative to `root`;
/// symbolic links are not followed (the sandbox's preopen does not follow them out either).
fn protected_below(root: &std::path::Path, dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(relative) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&relative)) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_PROTECTED_WALK {
                // Too large to look at whole: treat every protected name as present anywhere.
                return bosun_policy::PROTECTED_DIRS
                    .iter()
                    .chain(bosun_policy::PROTECTED_FILES.iter())
                    .map(|name| format!("**/{name}"))
                    .collect();
            }
            let name = entry.file_name();
            let child = relative.join(&name);
            let text = child.to_string_lossy().replace('\\', "/");
            if bosun_policy::is_protected(&text) {
                found.push(text);
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(child);
            }
        }
    }
    found.sort();
    found
}

/// The directory a grant for `relative` preopens: the path itself when it is a directory, else
/// its nearest existing ancestor; relative to `root`, with no `.` or `..` components.
fn grant_dir(root: &std::path::Path, relative: &str) -> std::path::PathBuf {
    let mut dir = std::path::PathBuf::from(relative);
    while !(dir.as_os_str().is_empty() || root.join(&dir).is_dir()) {
        if !dir.pop() {
            break;
        }
    }
    dir.components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect()
}

/// The directories a call may reach: one preopen per judged `fs.read` / `fs.write` scope,
/// at the judged path's directory (the path itself when it is a directory, else its nearest
/// existing ancestor), read-only unless the request is `fs.write`, seen by the plugin at the
/// same place under `/workspace`.
pub(crate) fn fs_grants(root: &std::path::Path, granted: &[CapabilityRequest]) -> Vec<FsGrant> {
    let mut grants: Vec<FsGrant> = Vec::new();
    for request in granted {
        let writable = match request.capability {
            Capability::FsRead => false,
            Capability::FsWrite => true,
            _ => continue,
        };
        let relative = request.scope.path.as_deref().unwrap_or(".");
        let dir = grant_dir(root, relative);
        let guest_path = if dir.as_os_str().is_empty() {
            bosun_sandbox::WORKSPACE_GUEST_PATH.to_owned()
        } else {
            format!("{}/{}", bosun_sandbox::WORKSPACE_GUEST_PATH, dir.display())
        };
        let grant = FsGrant {
            host_dir: root.join(&dir),
            guest_path,
            writable,
        };
        // A writable grant of a place covers a read-only one of the same place.
        if let Some(same) = grants.iter_mut().find(|g| g.guest_path == grant.guest_path) {
            same.writable |= grant.writable;
        } else {
            grants.push(grant);
        }
    }
    grants.sort();
    grants
}

/// A plugin instance's memory cap: its config's `memory_mib`, or [`DEFAULT_MEMORY_MIB`].
pub(crate) fn memory_bytes(config: Option<&bosun_plugins::PluginConfig>) -> usize {
    usize::try_from(
        config
            .and_then(|c| c.memory_mib)
            .unwrap_or(DEFAULT_MEMORY_MIB)
            << 20,
    )
    .unwrap_or(usize::MAX)
}

/// A plugin call's deadline: its config's `timeout_ms`, or [`DEFAULT_TIMEOUT`].
pub(crate) fn timeout(config: Option<&bosun_plugins::PluginConfig>) -> Duration {
    config
        .and_then(|c| c.timeout_ms)
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// Whether policy denies a plugin tool before any call: its action, or one of its
/// capabilities unscoped. Such a tool is left out of the session.
pub(crate) fn denied_outright(policy: &Policy, tool: &PluginToolMeta, action: &str) -> bool {
    let mut subjects = vec![Subject::tool(action, tool.spec.risk)];
    subjects.extend(
        tool.capabilities
            .iter()
            .map(|d| Subject::capability(&CapabilityRequest::bare(d.capability.clone()))),
    );
    policy.decide(&subjects, &[], &[]).decision == bosun_core::Decision::Deny
}

#[cfg(test)]
mod tests {
    use super::{digest_from_hex, net_grant, pattern_can_lie_within};
    use bosun_core::{Authority, Capability, CapabilityRequest, Scope};
    use bosun_policy::{Mode, Policy, PolicyFile, Source};

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
    fn the_http_grant_is_exactly_the_judged_authorities() {
        let text =
            "[[policy.rules]]\naction = \"net.http\"\nhost = \"127.0.0.1\"\ndecision = \"allow\"\n";
        let policy = Policy::builder(Mode::WorkspaceWrite)
            .user(
                PolicyFile::parse(text).unwrap(),
                Source::with_text("u.toml", text),
            )
            .unwrap()
            .build();
        let judged = |a: &str| CapabilityRequest {
            capability: Capability::NetHttp,
            scope: Scope::authority(a.parse().unwrap()),
        };
        let granted = vec![
            judged("api.example.com:8443"),
            judged("127.0.0.1:4000"),
            judged("10.0.0.7"),
            // Not network requests: never a host grant.
            CapabilityRequest::bare(Capability::FsRead),
            CapabilityRequest::bare(Capability::NetHttp),
        ];
        let net = net_grant(&granted, &policy);
        assert_eq!(
            net.hosts,
            vec![
                Authority::new("api.example.com", Some(8443)),
                Authority::new("127.0.0.1", Some(4000)),
                Authority::new("10.0.0.7", None),
            ]
        );
        // An inside address is reachable only when a rule names it literally.
        assert_eq!(
            net.private_allowed,
            vec!["127.0.0.1".parse::<std::net::IpAddr>().unwrap()]
        );
        assert!(net_grant(&[], &policy).hosts.is_empty());
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
