//! Shared helpers: one sandbox and one pre-initialised engine per test process, plugins read
//! from fixture directories or written inline as plain Forge plugins, a loopback HTTP server
//! that counts its connections, and a session that records taint raises.
//!
//! The sandbox keeps its artefact cache in Cargo's per-target temporary directory, so the
//! engine is pre-initialised once per build rather than once per test process (nextest runs
//! each test in its own process).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bosun_core::Classification;
use bosun_js::{
    ActivationRequest, ENGINE, Format, JsError, JsLimits, JsPlugin, ToolOutcome, Trust,
};
use bosun_sandbox::{
    CallError, CallOptions, CallReport, Grants, JsSession, Loaded, NetGrant, Sandbox,
    SandboxConfig, StaticResolver,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Public-looking names the shared resolver maps to 127.0.0.1. The HTTP guard still refuses
/// them unless a call's `NetGrant.private_allowed` names 127.0.0.1.
pub const LOOPBACK_NAMES: &[&str] = &["api.weather.test", "docs.public.test"];

/// The tool names a plugin may not take (built-ins), as the host would pass them.
const BUILTINS: &[&str] = &[
    "list_files",
    "read_file",
    "search",
    "create_file",
    "apply_patch",
    "run_command",
    "restrict_self",
];

/// The sandbox every test in this process shares.
pub fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bosun-js-tests-cache");
        let mut resolver = StaticResolver::new();
        for name in LOOPBACK_NAMES {
            resolver = resolver.with(name, [LOOPBACK]);
        }
        Sandbox::new(SandboxConfig {
            cache_dir: Some(cache),
            resolver: Arc::new(resolver),
            ..SandboxConfig::default()
        })
        .unwrap()
    })
}

/// The pre-initialised engine (from the shared cache after the first process built it).
pub async fn engine() -> &'static Loaded {
    static LOADED: tokio::sync::OnceCell<Loaded> = tokio::sync::OnceCell::const_new();
    LOADED
        .get_or_init(|| async { sandbox().load_js_engine(&ENGINE).await.unwrap() })
        .await
}

/// Grants with a deadline of `timeout`, for tests that expect to be stopped.
pub fn grants_with_timeout(timeout: Duration) -> Grants {
    Grants {
        timeout,
        ..Grants::default()
    }
}

/// A plugin's files and the activation request the host would build for it.
#[derive(Debug, Clone)]
pub struct PluginSource {
    pub files: Vec<(String, String)>,
    pub request: ActivationRequest,
}

/// The directory of a fixture shared with the JavaScript layer's Node tests.
pub fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("engine/js/test/fixtures")
        .join(name)
}

fn read_tree(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            read_tree(root, &path, files);
            continue;
        }
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let is_source = [".mjs", ".js", ".ts"]
            .iter()
            .any(|ext| relative.ends_with(ext));
        if is_source || relative == "plugin.json" {
            files.push((relative, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

fn request(
    format: Format,
    name: &str,
    entry: &str,
    capabilities: Vec<String>,
) -> ActivationRequest {
    ActivationRequest {
        format,
        name: name.to_owned(),
        entry: entry.trim_start_matches("./").to_owned(),
        capabilities,
        trust: Trust::Sandboxed,
        config: json!({}),
        limits: JsLimits::default(),
        reserved_tool_names: BUILTINS.iter().map(|s| (*s).to_owned()).collect(),
        code_from_strings: false,
        env: Default::default(),
        directory: Default::default(),
        commonjs: Default::default(),
    }
}

impl PluginSource {
    /// A fixture directory: Forge when it has `plugin.json` (name, entry and capabilities from
    /// it), else Triggerfish (`mod.ts`, named after the directory).
    pub fn fixture(name: &str) -> Self {
        let dir = fixture_dir(name);
        let mut files = Vec::new();
        read_tree(&dir, &dir, &mut files);
        Self::from_files(name, files)
    }

    /// A plain Forge plugin written inline: `plugin.json` for `name` with `capabilities`, and
    /// `index.mjs`.
    pub fn forge(name: &str, capabilities: &[&str], index_mjs: &str) -> Self {
        let manifest = json!({
            "schemaVersion": 1,
            "apiVersion": "1",
            "name": name,
            "version": "1.0.0",
            "entry": "./index.mjs",
            "capabilities": capabilities,
        });
        let files = vec![
            ("plugin.json".to_owned(), manifest.to_string()),
            ("index.mjs".to_owned(), index_mjs.to_owned()),
        ];
        Self::from_files(name, files)
    }

    /// A Triggerfish plugin from JavaScript (types already stripped) as its `mod.ts`.
    pub fn triggerfish(name: &str, mod_ts: &str) -> Self {
        Self::from_files(name, vec![("mod.ts".to_owned(), mod_ts.to_owned())])
    }

    fn from_files(directory: &str, mut files: Vec<(String, String)>) -> Self {
        let manifest = files
            .iter()
            .position(|(path, _)| path == "plugin.json")
            .map(|index| files.remove(index).1);
        let request = match manifest {
            Some(text) => {
                let manifest: Value = serde_json::from_str(&text).unwrap();
                let capabilities = manifest["capabilities"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap().to_owned())
                    .collect();
                request(
                    Format::Forge,
                    manifest["name"].as_str().unwrap(),
                    manifest["entry"].as_str().unwrap(),
                    capabilities,
                )
            }
            None => request(Format::Triggerfish, directory, "mod.ts", Vec::new()),
        };
        Self { files, request }
    }

    /// The same plugin with Triggerfish's effective trust `trusted`.
    pub fn trusted(mut self) -> Self {
        self.request.trust = Trust::Trusted;
        self
    }

    /// The same plugin with its manifest's opt-in to code built from strings.
    pub fn with_code_from_strings(mut self) -> Self {
        self.request.code_from_strings = true;
        self
    }

    /// Instantiates a fresh engine with `grants` and activates the plugin.
    pub async fn activate_with(&self, grants: Grants) -> Result<JsPlugin, JsError> {
        JsPlugin::activate(
            engine().await,
            grants,
            &self.files,
            &self.request,
            CallOptions::default(),
        )
        .await
    }

    /// Activates with default grants; panics if activation fails.
    pub async fn start(&self) -> JsPlugin {
        self.activate_with(Grants::default()).await.unwrap()
    }
}

/// The sandbox's error from a failed activation or call.
pub fn call_error(error: JsError) -> CallError {
    match error {
        JsError::Call { source, .. } => source,
        other => panic!("expected a call error, got {other:?}"),
    }
}

/// Calls `tool` with `input` and default options; panics unless the plugin answered.
pub async fn call(plugin: &mut JsPlugin, tool: &str, input: Value) -> ToolOutcome {
    call_with(plugin, tool, input, CallOptions::default())
        .await
        .unwrap()
        .0
}

/// Calls `tool` with `input` and `opts`.
pub async fn call_with(
    plugin: &mut JsPlugin,
    tool: &str,
    input: Value,
    opts: CallOptions,
) -> Result<(ToolOutcome, CallReport), CallError> {
    plugin
        .call(tool, &input.to_string(), opts)
        .await
        .map_err(call_error)
}

/// A successful tool outcome.
pub fn ok(output: Value) -> ToolOutcome {
    ToolOutcome::Ok {
        output,
        truncated: false,
    }
}

/// A tool error outcome.
pub fn tool_error(code: &str, message: &str, retryable: bool) -> ToolOutcome {
    ToolOutcome::Err {
        code: code.to_owned(),
        message: message.to_owned(),
        thrown_at: bosun_js::ThrownAt::find(message),
        retryable,
    }
}

/// Call options reaching `hosts`, with `private` the non-public addresses a rule named.
pub fn net(hosts: &[String], private: &[IpAddr]) -> CallOptions {
    CallOptions {
        net: NetGrant {
            hosts: hosts.iter().map(|h| h.parse().unwrap()).collect(),
            private_allowed: private.to_vec(),
        },
        ..CallOptions::default()
    }
}

/// Grants with outgoing HTTP linked (each call still names its hosts).
pub fn http_grants() -> Grants {
    Grants {
        http: true,
        ..Grants::default()
    }
}

/// A Forge plugin in the style of Forge's web-tools example: `web_fetch` fetches a URL
/// (redirects followed by `fetch`, each hop checked by the host), bounded by the call's signal
/// and a timeout, and reports the page or why the request failed.
pub fn web_fetch_plugin() -> PluginSource {
    PluginSource::forge(
        "web-fetch",
        &["tools:register", "network:access"],
        r#"
export default function activate(api) {
  const z = api.z;
  api.registerTool({
    name: "web_fetch",
    description: "Fetch a URL and return its status and text.",
    risk: "network",
    inputSchema: z.object({
      url: z.string().url(),
      maxBytes: z.number().int().positive().max(65536).default(4096),
    }).strict(),
    execute: async ({ url, maxBytes }, context) => {
      try {
        const response = await fetch(url, {
          headers: { accept: "text/html,text/plain,application/json" },
          signal: AbortSignal.any([context.signal, AbortSignal.timeout(10000)]),
        });
        const text = (await response.text()).slice(0, maxBytes);
        return {
          ok: true,
          output: {
            status: response.status,
            contentType: response.headers.get("content-type"),
            redirected: response.redirected,
            finalUrl: response.url,
            text,
          },
          truncated: false,
        };
      } catch (error) {
        const cause = error?.cause;
        return {
          ok: false,
          error: {
            code: "io_error",
            message: `${error?.name}: ${error?.message}${cause ? ` (${cause.code}: ${cause.message})` : ""}`,
            retryable: true,
          },
        };
      }
    },
  });
}
"#,
    )
}

/// An HTTP/1.1 server on a loopback address that counts the connections it accepts.
///
/// Routes: `/redirect?to=URL` answers 302 to URL; `/v1/forecast?...` answers JSON with the
/// request's path and `Host`; anything else answers `text/html` naming the path.
pub struct LoopbackServer {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl LoopbackServer {
    pub async fn start(ip: IpAddr) -> Self {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (counter, seen) = (Arc::clone(&connections), Arc::clone(&paths));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(answer(stream, Arc::clone(&seen)));
            }
        });
        Self {
            addr,
            connections,
            paths,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `host:port` for `host`.
    pub fn authority(&self, host: &str) -> String {
        format!("{host}:{}", self.port())
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Request paths served so far.
    pub fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

async fn answer(mut stream: tokio::net::TcpStream, paths: Arc<Mutex<Vec<String>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 << 10 {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let host = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("host")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    paths.lock().unwrap().push(path.clone());
    let (status, headers, body) = if let Some(to) = path.strip_prefix("/redirect?to=") {
        ("302 Found", format!("location: {to}\r\n"), String::new())
    } else if path.starts_with("/v1/forecast") {
        (
            "200 OK",
            "content-type: application/json\r\n".to_owned(),
            json!({"path": path, "host": host, "forecast": "sun"}).to_string(),
        )
    } else {
        (
            "200 OK",
            "content-type: text/html; charset=utf-8\r\n".to_owned(),
            format!("<p>page {path}</p>"),
        )
    };
    let response = format!(
        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Triggerfish's classification labels, lowest first.
const LEVELS: [&str; 4] = ["PUBLIC", "INTERNAL", "CONFIDENTIAL", "RESTRICTED"];

/// A session that holds a taint level and records every escalation it accepted.
#[derive(Debug)]
pub struct RecordingSession {
    state: Mutex<(usize, Vec<String>)>,
}

impl RecordingSession {
    pub fn new(level: &str) -> Arc<Self> {
        let rank = LEVELS.iter().position(|l| *l == level).unwrap();
        Arc::new(Self {
            state: Mutex::new((rank, Vec::new())),
        })
    }

    /// The escalations accepted, in order.
    pub fn raises(&self) -> Vec<String> {
        self.state.lock().unwrap().1.clone()
    }
}

impl JsSession for RecordingSession {
    fn taint(&self) -> Classification {
        LEVELS[self.state.lock().unwrap().0].parse().unwrap()
    }

    fn escalate(&self, level: Classification) {
        let level = level.to_string();
        let rank = LEVELS.iter().position(|l| *l == level).unwrap();
        let mut state = self.state.lock().unwrap();
        state.0 = state.0.max(rank);
        state.1.push(level);
    }
}
