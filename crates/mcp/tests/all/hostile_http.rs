//! `bosun serve --http` as a hostile client on the network sees it, over raw loopback sockets:
//! what it sends that is not MCP, what it holds open, and what it tries with another client's
//! session. Each test says what it attacks; every refusal is followed by a client that is
//! still served.

use std::sync::Arc;
use std::time::Duration;

use bosun_host::Host;
use bosun_mcp::http::{Client, Limits};
use bosun_mcp::server::ServeOptions;
use bosun_mcp::{HttpOptions, Served, serve_http};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::Dirs;

/// How long a test waits for an answer before calling the server stuck: a bound on a failure,
/// never a measure of speed.
const STUCK: Duration = Duration::from_secs(60);

/// A served host on a loopback port.
struct Server {
    address: String,
    cancel: CancellationToken,
    dirs: Dirs,
}

impl Server {
    async fn start(limits: Limits, token: Option<&str>) -> Self {
        Self::start_with(HttpOptions {
            token: token.map(str::to_owned),
            limits,
            ..HttpOptions::default()
        })
        .await
    }

    /// Serves with `options`, whose `cancel` is replaced by the server's own.
    async fn start_with(options: HttpOptions) -> Self {
        Self::start_served(options, ServeOptions::default(), Dirs::new()).await
    }

    /// Serves `dirs`' host with `options` over HTTP and `serve` for the calls.
    async fn start_served(options: HttpOptions, serve: ServeOptions, dirs: Dirs) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = dirs.host();
        Self::serve_on(listener, host, options, serve, dirs)
    }

    /// Serves `host` (of `dirs`) on `listener` with `options` over HTTP and `serve` for the
    /// calls.
    fn serve_on(
        listener: TcpListener,
        host: Host,
        options: HttpOptions,
        serve: ServeOptions,
        dirs: Dirs,
    ) -> Self {
        let address = listener.local_addr().unwrap().to_string();
        let cancel = CancellationToken::new();
        let options = HttpOptions {
            cancel: cancel.clone(),
            ..options
        };
        let served = Served::with_options(Arc::new(host), "serve --http", serve).unwrap();
        tokio::spawn(serve_http(served, listener, options));
        Self {
            address,
            cancel,
            dirs,
        }
    }

    /// Sends `raw` on a new connection and reads until the server closes it.
    async fn exchange(&self, raw: &[u8]) -> Answer {
        let mut stream = TcpStream::connect(&self.address).await.unwrap();
        // A server that refuses early may close before the whole request is written.
        let _ = stream.write_all(raw).await;
        read_all(&mut stream).await
    }

    /// A POST of `body` to `/mcp` with an MCP client's headers, `extra` added.
    async fn post(&self, body: &str, extra: &[(&str, &str)]) -> Answer {
        self.exchange(&request("POST", &self.address, body, extra))
            .await
    }

    /// A `tools/call` of the 2026-07-28 revision (no session) of `name` with `arguments`, as
    /// `auth` (an `Authorization` value) when given.
    async fn call_modern(&self, auth: Option<&str>, name: &str, arguments: &str) -> Answer {
        let (body, headers) = modern_call(name, arguments);
        let mut extra: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if let Some(auth) = auth {
            extra.push(("Authorization", auth));
        }
        self.post(&body, &extra).await
    }

    /// Opens a session of the 2025-06-18 revision as `auth` (an `Authorization` value) and
    /// finishes its handshake; the session's id.
    async fn open_session(&self, auth: &str) -> String {
        let answer = self.post(INITIALIZE, &[("Authorization", auth)]).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let id = answer
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let initialized = self
            .post(
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                &[("Authorization", auth), ("Mcp-Session-Id", id.as_str())],
            )
            .await;
        assert_eq!(initialized.status, 202, "{}", initialized.text);
        id
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}"#;
const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
const READ_HELLO: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"hello.txt"}}}"#;

/// A whole HTTP/1.1 request that asks the server to close the connection after answering.
fn request(method: &str, address: &str, body: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut raw = head.into_bytes();
    raw.extend_from_slice(body.as_bytes());
    raw
}

/// What came back on a connection.
#[derive(Debug)]
struct Answer {
    /// The status code; 0 when the connection closed without one.
    status: u16,
    text: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        let head = self.text.split("\r\n\r\n").next()?;
        head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then_some(value.trim())
        })
    }
}

/// Reads until the server closes the connection (or resets it).
async fn read_all(stream: &mut TcpStream) -> Answer {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 8192];
    let reading = async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => bytes.extend_from_slice(&buffer[..n]),
            }
        }
    };
    tokio::time::timeout(STUCK, reading)
        .await
        .expect("the server neither answered nor closed the connection");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    Answer { status, text }
}

#[tokio::test]
async fn a_session_id_is_256_random_bits_and_no_other_caller_can_use_it() {
    let server = Server::start(Limits::default(), None).await;
    let alice = server.open_session("Bearer alice-0123456789abcdef").await;
    let again = server.open_session("Bearer alice-0123456789abcdef").await;
    for id in [&alice, &again] {
        assert_eq!(id.len(), 64, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    }
    assert_ne!(alice, again);
    // Another caller (another Authorization, or none) holding alice's id: its requests, its
    // stream's resumption and its ending are answered as for an unknown session.
    for mallory in [
        vec![("Authorization", "Bearer mallory-0123456789abcd")],
        vec![],
    ] {
        let mut headers = mallory.clone();
        headers.push(("Mcp-Session-Id", alice.as_str()));
        let listed = server.post(TOOLS_LIST, &headers).await;
        assert_eq!(listed.status, 404, "{}", listed.text);
        assert!(!listed.text.contains("read_file"), "{}", listed.text);
        let mut resume = headers.clone();
        resume.push(("Last-Event-ID", "0"));
        let resumed = server
            .exchange(&request("GET", &server.address, "", &resume))
            .await;
        assert_eq!(resumed.status, 404, "{}", resumed.text);
        let ended = server
            .exchange(&request("DELETE", &server.address, "", &headers))
            .await;
        assert_eq!(ended.status, 404, "{}", ended.text);
    }
    // Alice's session is whole: she lists the tools in it.
    let listed = server
        .post(
            TOOLS_LIST,
            &[
                ("Authorization", "Bearer alice-0123456789abcdef"),
                ("Mcp-Session-Id", alice.as_str()),
            ],
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert!(listed.text.contains("read_file"), "{}", listed.text);
}

#[tokio::test]
async fn a_handshake_past_the_session_bound_is_answered_503_with_retry_after_until_one_ends() {
    let server = Server::start(
        Limits {
            sessions: 2,
            ..Limits::default()
        },
        None,
    )
    .await;
    let first = server.open_session("Bearer a-0123456789abcdef").await;
    server.open_session("Bearer b-0123456789abcdef").await;
    // A bound, not a fault: 503 with when to come back and what to do meanwhile.
    let refused = server.post(INITIALIZE, &[]).await;
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert_eq!(
        refused.header("retry-after"),
        Some("30"),
        "{}",
        refused.text
    );
    assert!(
        refused.text.contains("most open sessions (2)") && refused.text.contains("DELETE /mcp"),
        "{}",
        refused.text
    );
    // Ending one makes room; only its owner can end it.
    let ended = server
        .exchange(&request(
            "DELETE",
            &server.address,
            "",
            &[
                ("Authorization", "Bearer a-0123456789abcdef"),
                ("Mcp-Session-Id", first.as_str()),
            ],
        ))
        .await;
    assert_eq!(ended.status, 202, "{}", ended.text);
    server.open_session("Bearer c-0123456789abcdef").await;
}

#[tokio::test]
async fn a_body_trickled_past_its_deadline_is_refused_and_others_are_served() {
    let server = Server::start(
        Limits {
            body_timeout: Duration::from_secs(2),
            ..Limits::default()
        },
        None,
    )
    .await;
    // Headers whole, then a body announced at 200 bytes of which 10 come, and no more.
    let mut trickling = TcpStream::connect(&server.address).await.unwrap();
    let raw = request("POST", &server.address, &"x".repeat(200), &[]);
    trickling.write_all(&raw[..raw.len() - 190]).await.unwrap();
    // Meanwhile another client is served.
    server.open_session("Bearer other-0123456789abcdef").await;
    let answer = read_all(&mut trickling).await;
    assert_eq!(answer.status, 408, "{}", answer.text);
    assert!(
        answer.text.contains("did not arrive within 2 s"),
        "{}",
        answer.text
    );
}

#[tokio::test]
async fn connections_past_the_bound_are_answered_503() {
    let server = Server::start(
        Limits {
            connections: 2,
            // The two held connections must outlast the test, whatever the machine's load.
            header_timeout: Duration::from_secs(600),
            ..Limits::default()
        },
        None,
    )
    .await;
    let _held = [
        hold_connection(&server.address, "Bearer one-0123456789abcdef").await,
        hold_connection(&server.address, "Bearer two-0123456789abcdef").await,
    ];
    let answer = server.post(TOOLS_LIST, &[]).await;
    assert_eq!(answer.status, 503, "{}", answer.text);
    assert!(answer.header("retry-after").is_some(), "{}", answer.text);
    assert!(
        answer.text.contains("most connections open (2)"),
        "{}",
        answer.text
    );
}

/// Whether the server has closed `stream` (or reset it): a read that would wait means open.
fn closed_by_server(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.try_read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

#[tokio::test]
async fn silent_connections_never_take_the_place_of_a_client_that_speaks() {
    let limits = Limits {
        connections: 8,
        // Silent connections are not dropped for idling during the test, whatever its pace.
        header_timeout: Duration::from_secs(600),
        ..Limits::default()
    };
    // More than the server holds of either kind (8 attributed, 64 not yet).
    let silent_count = 88;
    for named in [true, false] {
        let server = if named {
            two_clients(limits.clone(), |alice| alice).await
        } else {
            Server::start(limits.clone(), None).await
        };
        // Anyone who reaches the port opens more connections than the server holds, and says
        // nothing on them.
        let mut silent = Vec::new();
        for _ in 0..silent_count {
            silent.push(TcpStream::connect(&server.address).await.unwrap());
        }
        // A client that speaks is served while the newest of them are still open.
        server.open_session(ALICE).await;
        let newest = &silent[silent.len() - 2..];
        assert!(
            newest.iter().all(|s| !closed_by_server(s)),
            "the newest silent connections were closed"
        );
        // The oldest were closed to make room, not left to hold places until they time out.
        let answer = read_all(&mut silent[0]).await;
        assert_eq!(answer.status, 0, "{}", answer.text);
    }
}

#[tokio::test]
async fn what_is_not_mcp_is_refused_clearly_and_the_server_keeps_serving() {
    let server = Server::start(
        Limits {
            body_bytes: 64 * 1024,
            ..Limits::default()
        },
        None,
    )
    .await;
    let address = server.address.clone();
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":{}"x"{}}}}}}}"#,
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    let batch = format!("[{INITIALIZE},{INITIALIZE}]");
    let many_headers: Vec<(String, String)> = (0..200)
        .map(|i| (format!("X-H{i}"), "v".to_owned()))
        .collect();
    let many_headers: Vec<(&str, &str)> = many_headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let long_header = "v".repeat(1024 * 1024);
    let cases: Vec<(&str, Vec<u8>, Vec<u16>)> = vec![
        // The answer is written before the unread rest of the body; closing on that rest may
        // reset the connection before the client reads it (RFC 9112 9.6), hence the 0.
        (
            "a body past the bound",
            request("POST", &address, &"x".repeat(65 * 1024), &[]),
            vec![413, 0],
        ),
        (
            "JSON nested 20,000 deep",
            request("POST", &address, &deep, &[]),
            vec![400, 415],
        ),
        (
            "a JSON-RPC batch",
            request("POST", &address, &batch, &[]),
            vec![400, 415],
        ),
        (
            "JSON cut short",
            request("POST", &address, r#"{"jsonrpc":"#, &[]),
            vec![400, 415],
        ),
        (
            "not JSON",
            request("POST", &address, "\u{0}\u{1}garbage", &[]),
            vec![400, 415],
        ),
        (
            "a body that is not JSON by its type",
            String::from_utf8(request("POST", &address, INITIALIZE, &[]))
                .unwrap()
                .replace("Content-Type: application/json", "Content-Type: text/plain")
                .into_bytes(),
            vec![415],
        ),
        (
            "an Accept without event streams",
            String::from_utf8(request("POST", &address, INITIALIZE, &[]))
                .unwrap()
                .replace(
                    "Accept: application/json, text/event-stream",
                    "Accept: application/json",
                )
                .into_bytes(),
            vec![406],
        ),
        (
            "a method MCP has not",
            request("PUT", &address, INITIALIZE, &[]),
            vec![405],
        ),
        (
            "200 headers",
            request("POST", &address, INITIALIZE, &many_headers),
            vec![431, 0],
        ),
        (
            "a header of a mebibyte",
            request(
                "POST",
                &address,
                INITIALIZE,
                &[("X-Long", long_header.as_str())],
            ),
            vec![431, 0],
        ),
        (
            "another Host (DNS rebinding)",
            String::from_utf8(request("POST", &address, INITIALIZE, &[]))
                .unwrap()
                .replace(&format!("Host: {address}"), "Host: evil.example")
                .into_bytes(),
            vec![403],
        ),
        (
            "a web page of another origin",
            request(
                "POST",
                &address,
                INITIALIZE,
                &[("Origin", "https://evil.example")],
            ),
            vec![403],
        ),
        (
            "a request that is not HTTP",
            b"\x16\x03\x01\x02\x00garbage\r\n\r\n".to_vec(),
            vec![400, 0],
        ),
    ];
    for (what, raw, expected) in cases {
        let answer = server.exchange(&raw).await;
        assert!(
            expected.contains(&answer.status),
            "{what}: {}",
            answer.text.chars().take(400).collect::<String>()
        );
        // The refusal says why in words (bar a connection closed before any).
        if ![0, 400, 431].contains(&answer.status) {
            let body = answer.text.split("\r\n\r\n").nth(1).unwrap_or_default();
            assert!(!body.trim().is_empty(), "{what}: {}", answer.text);
        }
        server.open_session("Bearer after-0123456789abcdef").await;
    }
}

#[tokio::test]
async fn a_token_is_checked_by_its_digest_in_any_case_of_scheme_and_never_kept() {
    let token = "0123456789abcdef0123456789abcdef";
    let server = Server::start(Limits::default(), Some(token)).await;
    let refused: [&[u8]; 7] = [
        b"Bearer wrong",
        b"Bearer 0123456789abcdef0123456789abcde",
        b"Bearer 0123456789abcdef0123456789abcdef0",
        b"Basic MDEyMzQ1Njc4OWFiY2RlZg==",
        b"Bearer",
        b"0123456789abcdef0123456789abcdef",
        b"Bearer \xff\xfe",
    ];
    for auth in refused {
        let plain = request("POST", &server.address, INITIALIZE, &[]);
        // Before the blank line that ends the headers.
        let end = plain.len() - INITIALIZE.len() - 2;
        let mut raw = plain[..end].to_vec();
        raw.extend_from_slice(b"Authorization: ");
        raw.extend_from_slice(auth);
        raw.extend_from_slice(b"\r\n");
        raw.extend_from_slice(&plain[end..]);
        let answer = server.exchange(&raw).await;
        assert_eq!(
            answer.status,
            401,
            "{}: {}",
            String::from_utf8_lossy(auth),
            answer.text
        );
        assert!(!answer.text.contains(token), "{}", answer.text);
    }
    // RFC 6750's scheme is case-insensitive.
    for scheme in ["Bearer", "bearer", "BEARER"] {
        server.open_session(&format!("{scheme} {token}")).await;
    }
    // A call made with it: the token is in no file the server wrote.
    let auth = format!("Bearer {token}");
    let id = server.open_session(&auth).await;
    let called = server
        .post(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"hello.txt"}}}"#,
            &[("Authorization", auth.as_str()), ("Mcp-Session-Id", id.as_str())],
        )
        .await;
    assert!(
        called.text.contains("hello from the served workspace"),
        "{}",
        called.text
    );
    let ended = server
        .exchange(&request(
            "DELETE",
            &server.address,
            "",
            &[
                ("Authorization", auth.as_str()),
                ("Mcp-Session-Id", id.as_str()),
            ],
        ))
        .await;
    assert_eq!(ended.status, 202, "{}", ended.text);
    let mut written = 0;
    for root in [&server.dirs.home, &server.dirs.ws] {
        for entry in walk(root) {
            written += 1;
            let bytes = std::fs::read(&entry).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(token),
                "{}",
                entry.display()
            );
        }
    }
    assert!(written > 1, "the call left no trace to search");
}

/// Every file under `root`.
fn walk(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// Opens a `subscriptions/listen` stream (2026-07-28) with request id 1, as every client may,
/// and reads until it is acknowledged; the stream, left open, and what it said.
async fn listen(address: &str) -> (TcpStream, String) {
    listen_as(address, None).await
}

/// [`listen`], as the client whose `Authorization` is `auth`.
async fn listen_as(address: &str, auth: Option<&str>) -> (TcpStream, String) {
    let stream = TcpStream::connect(address).await.unwrap();
    listen_over(stream, address, auth).await
}

/// [`listen_as`] on `stream`, connected to `address`.
async fn listen_over(
    mut stream: TcpStream,
    address: &str,
    auth: Option<&str>,
) -> (TcpStream, String) {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}"#;
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    if let Some(auth) = auth {
        headers.push(("Authorization", auth));
    }
    let raw = request("POST", address, body, &headers);
    stream.write_all(&raw).await.unwrap();
    let mut said = Vec::new();
    let mut buffer = [0u8; 4096];
    let reading = async {
        while !String::from_utf8_lossy(&said).contains("subscriptions/acknowledged") {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => said.extend_from_slice(&buffer[..n]),
            }
        }
    };
    tokio::time::timeout(STUCK, reading)
        .await
        .expect("the listen stream was never acknowledged");
    let said = String::from_utf8_lossy(&said).into_owned();
    assert!(said.contains("subscriptions/acknowledged"), "{said}");
    (stream, said)
}

#[tokio::test]
async fn listen_streams_past_the_bound_are_refused() {
    let server = Server::start(Limits::default(), None).await;
    let mut open = Vec::new();
    for _ in 0..bosun_mcp::server::MAX_LISTENERS {
        let (stream, said) = listen(&server.address).await;
        assert!(!said.contains("most subscriptions/listen"), "{said}");
        open.push(stream);
    }
    let (mut refused, said) = listen(&server.address).await;
    let rest = read_all(&mut refused).await;
    let text = format!("{said}{}", rest.text);
    assert!(
        text.contains("most subscriptions/listen streams open (256)"),
        "{text}"
    );
}

/// The plugin a model writes into the workspace and installs with `plugin_install`: its
/// installation and each `plugin_reload` change the set of tools, which every listener is told.
const WORD_TOOLS: &str = r#"export const manifest = {
  name: "word-tools",
  version: "1.0.0",
  description: "Counts words.",
  classification: "PUBLIC",
  trust: "sandboxed",
  declaredEndpoints: [],
} as const;

export const toolDefinitions = [
  {
    name: "count_words",
    description: "Counts the words in a text.",
    parameters: { text: { type: "string", description: "The text.", required: true } },
  },
];

export function createExecutor(_context: { pluginName: string }) {
  return async (_name: string, input: Record<string, unknown>): Promise<string | null> =>
    String(String(input.text ?? "").split(/\s+/).filter(Boolean).length);
}
"#;

/// The smallest socket buffer the kernel gives (it raises any smaller request to its floor):
/// a stream its client never reads is full after tens of notifications, not the thousands a
/// loopback connection's self-tuned buffers take. Only the buffers are small; the server's code
/// is the one `bosun serve --http` runs.
const SMALLEST_BUFFER: u32 = 1;

impl Server {
    /// A server whose host has the model's plugin tools, allowed by policy, and `word-tools`
    /// written in its workspace; every connection it accepts has the smallest send buffer.
    async fn with_a_plugin_to_install() -> Self {
        let dirs = Dirs::new();
        std::fs::write(
            dirs.home.join("config.toml"),
            "[[policy.rules]]\naction = \"builtin.tool.plugin_*\"\ndecision = \"allow\"\n",
        )
        .unwrap();
        let plugin = dirs.ws.join(".bosun/plugins/word-tools");
        std::fs::create_dir_all(&plugin).unwrap();
        std::fs::write(plugin.join("mod.ts"), WORD_TOOLS).unwrap();
        // Accepted connections inherit the listening socket's buffer sizes.
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_send_buffer_size(SMALLEST_BUFFER).unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(1024).unwrap();
        let host = dirs.host_with_plugins();
        Self::serve_on(
            listener,
            host,
            HttpOptions::default(),
            ServeOptions::default(),
            dirs,
        )
    }

    /// Changes the set of tools as a model does, through a call: installs `word-tools`.
    async fn install_plugin(&self) {
        let answer = self
            .call_modern(None, "plugin_install", r#"{"name":"word-tools"}"#)
            .await;
        assert!(
            answer.text.contains(r#"\"word-tools@1.0.0\" installed"#),
            "{}",
            answer.text
        );
    }

    /// Changes the set of tools again: `plugin_reload` swaps in the installed plugin's tools
    /// anew. Answered, or the test fails after [`STUCK`].
    async fn reload_plugin(&self) {
        let answer = self
            .call_modern(None, "plugin_reload", r#"{"name":"word-tools"}"#)
            .await;
        assert!(
            answer.text.contains(r#"\"word-tools@1.0.0\" reloaded"#),
            "{}",
            answer.text
        );
    }
}

/// Reads a `subscriptions/listen` stream, which has said `said` so far, until it has told of
/// `times` changes of the tool set in all; all it said.
async fn hear_changes(stream: &mut TcpStream, said: String, times: usize) -> String {
    let mut said = said.into_bytes();
    let heard = |said: &[u8]| {
        String::from_utf8_lossy(said)
            .matches("notifications/tools/list_changed")
            .count()
    };
    let mut buffer = [0u8; 4096];
    let reading = async {
        while heard(&said) < times {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => said.extend_from_slice(&buffer[..n]),
            }
        }
        true
    };
    let outcome = tokio::time::timeout(STUCK, reading).await;
    let said = String::from_utf8_lossy(&said).into_owned();
    match outcome {
        Ok(true) => said,
        Ok(false) => panic!("the stream ended before it told of {times} changes: {said}"),
        Err(_) => panic!("the stream told of fewer than {times} changes in {STUCK:?}: {said}"),
    }
}

/// How many times the tool set changes while a stream is not read: several times what its
/// connection's buffers and the server's queues hold with the smallest socket buffers (a call
/// that waited on the stream was held at about the sixtieth).
const CHANGES_UNREAD: usize = 200;

#[tokio::test]
async fn a_listen_stream_never_read_holds_up_no_call_that_changes_the_tools() {
    let server = Server::with_a_plugin_to_install().await;
    // A client opens a stream on a connection with the smallest receive window, and never
    // reads it again; another reads its own.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(SMALLEST_BUFFER).unwrap();
    let connected = socket
        .connect(server.address.parse().unwrap())
        .await
        .unwrap();
    let (_unread, _) = listen_over(connected, &server.address, None).await;
    let (mut read, said) = listen(&server.address).await;
    // Every call that changes the tools is answered, long after the unread stream is full.
    server.install_plugin().await;
    for _ in 0..CHANGES_UNREAD {
        server.reload_plugin().await;
    }
    // And so is every later call; the stream that is read was told.
    let later = server
        .call_modern(None, "read_file", r#"{"path":"hello.txt"}"#)
        .await;
    assert!(
        later.text.contains("hello from the served workspace"),
        "{}",
        later.text
    );
    hear_changes(&mut read, said, 1).await;
}

#[tokio::test]
async fn a_listen_stream_that_ends_leaves_another_clients_of_the_same_request_id() {
    let server = Server::with_a_plugin_to_install().await;
    server.install_plugin().await;
    // Two clients each listen with request id 1; the first goes away.
    let (ended, _) = listen_as(&server.address, Some("Bearer first-0123456789abcdef")).await;
    let (mut kept, mut said) =
        listen_as(&server.address, Some("Bearer second-0123456789abcdef")).await;
    drop(ended);
    // The second hears of every change that follows, the first of which finds the first
    // client's stream gone.
    for times in 1..=3 {
        server.reload_plugin().await;
        said = hear_changes(&mut kept, said, times).await;
    }
}

#[tokio::test]
async fn listen_streams_that_ended_give_their_places_back() {
    let server = Server::with_a_plugin_to_install().await;
    // One after another, more streams opened and closed than the server holds at once.
    for _ in 0..2 * bosun_mcp::server::MAX_LISTENERS {
        let (stream, _) = listen(&server.address).await;
        drop(stream);
    }
    // A stream opened now is held open, and is told of the next change.
    let (mut stream, said) = listen(&server.address).await;
    server.install_plugin().await;
    hear_changes(&mut stream, said, 1).await;
}

const ALICE: &str = "Bearer alice-token-0123456789abcdef";
const BOB: &str = "Bearer bob-token-0123456789abcdef01";

/// A server whose clients are alice and bob, each known by its own token; alice's entry
/// changed by `alice`.
async fn two_clients(limits: Limits, alice: impl FnOnce(Client) -> Client) -> Server {
    let token = |auth: &str| auth.trim_start_matches("Bearer ").to_owned();
    Server::start_with(HttpOptions {
        clients: vec![
            alice(Client::with_token("alice", &token(ALICE))),
            Client::with_token("bob", &token(BOB)),
        ],
        limits,
        ..HttpOptions::default()
    })
    .await
}

/// A connection on which `auth`'s client was answered once, held open (keep-alive).
async fn hold_connection(address: &str, auth: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let raw =
        format!("GET /elsewhere HTTP/1.1\r\nHost: {address}\r\nAuthorization: {auth}\r\n\r\n");
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut said = Vec::new();
    let mut buffer = [0u8; 4096];
    let reading = async {
        while !String::from_utf8_lossy(&said).contains("Bosun serves MCP at /mcp") {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => said.extend_from_slice(&buffer[..n]),
            }
        }
    };
    tokio::time::timeout(STUCK, reading)
        .await
        .expect("the held connection was never answered");
    let said = String::from_utf8_lossy(&said).into_owned();
    assert!(said.starts_with("HTTP/1.1 404"), "{said}");
    stream
}

#[tokio::test]
async fn a_client_holds_only_its_share_of_sessions_and_only_its_own_and_is_traced_by_name() {
    let server = two_clients(
        Limits {
            sessions: 4,
            ..Limits::default()
        },
        |alice| Client {
            sessions: Some(2),
            ..alice
        },
    )
    .await;
    let mine = server.open_session(ALICE).await;
    server.open_session(ALICE).await;
    // Alice's third handshake passes the server's bound (4) but not her share (2).
    let refused = server.post(INITIALIZE, &[("Authorization", ALICE)]).await;
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert!(refused.header("retry-after").is_some(), "{}", refused.text);
    assert!(
        refused.text.contains(
            "client `alice` already holds its most open sessions on this Bosun server (2)"
        ) && refused.text.contains("DELETE /mcp"),
        "{}",
        refused.text
    );
    // Bob's share is whole: his even half of the server's four.
    let his = server.open_session(BOB).await;
    server.open_session(BOB).await;
    // Neither reaches the other's session, nor does a request without a token.
    for (auth, id) in [(BOB, &mine), (ALICE, &his)] {
        let listed = server
            .post(
                TOOLS_LIST,
                &[("Authorization", auth), ("Mcp-Session-Id", id.as_str())],
            )
            .await;
        assert_eq!(listed.status, 404, "{}", listed.text);
    }
    let anonymous = server
        .post(TOOLS_LIST, &[("Mcp-Session-Id", mine.as_str())])
        .await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.text);
    // Alice's call in her session: its trace names her.
    let called = server
        .post(
            READ_HELLO,
            &[("Authorization", ALICE), ("Mcp-Session-Id", mine.as_str())],
        )
        .await;
    assert!(
        called.text.contains("hello from the served workspace"),
        "{}",
        called.text
    );
    let traced = walk(&server.dirs.home).into_iter().any(|file| {
        std::fs::read_to_string(&file)
            .unwrap_or_default()
            .contains("serve --http (client alice)")
    });
    assert!(traced, "no trace names client alice");
}

#[tokio::test]
async fn a_client_holds_only_its_share_of_connections() {
    let server = two_clients(
        Limits {
            connections: 8,
            // The held connections must outlast the test, whatever the machine's load.
            header_timeout: Duration::from_secs(600),
            ..Limits::default()
        },
        |alice| Client {
            connections: Some(2),
            ..alice
        },
    )
    .await;
    let _held = [
        hold_connection(&server.address, ALICE).await,
        hold_connection(&server.address, ALICE).await,
    ];
    let refused = server.post(TOOLS_LIST, &[("Authorization", ALICE)]).await;
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert!(refused.header("retry-after").is_some(), "{}", refused.text);
    assert!(
        refused.text.contains(
            "client `alice` already has its most connections open on this Bosun server (2)"
        ),
        "{}",
        refused.text
    );
    // Bob, with connections of his own, is served.
    server.open_session(BOB).await;
}

#[tokio::test]
async fn a_client_holds_only_its_share_of_listen_streams() {
    let server = two_clients(Limits::default(), |alice| alice).await;
    let share = bosun_mcp::server::MAX_LISTENERS / 2;
    let mut open = Vec::new();
    for _ in 0..share {
        let (stream, said) = listen_as(&server.address, Some(ALICE)).await;
        assert!(!said.contains("most subscriptions/listen"), "{said}");
        open.push(stream);
    }
    let (mut refused, said) = listen_as(&server.address, Some(ALICE)).await;
    let rest = read_all(&mut refused).await;
    let text = format!("{said}{}", rest.text);
    assert!(
        text.contains(&format!(
            "this client already has its most subscriptions/listen streams open ({share})"
        )),
        "{text}"
    );
    let (_his, said) = listen_as(&server.address, Some(BOB)).await;
    assert!(!said.contains("most subscriptions/listen"), "{said}");
}

#[tokio::test]
async fn only_origins_the_operator_allowed_are_served_loopback_pages_included() {
    let server = Server::start_with(HttpOptions {
        allowed_origins: vec!["https://app.example.com:443".to_owned()],
        ..HttpOptions::default()
    })
    .await;
    // A page of any other local web server is a page like any other.
    for origin in [
        "http://localhost:3000",
        "http://127.0.0.1:8080",
        "https://localhost",
        "http://[::1]:5173",
        "null",
        "https://app.example.com:8443",
        "http://app.example.com",
        "https://evil.example",
    ] {
        let answer = server.post(INITIALIZE, &[("Origin", origin)]).await;
        assert_eq!(answer.status, 403, "{origin}: {}", answer.text);
    }
    // A client that is no browser sends no Origin; the allowed page is served, and so is the
    // server's own origin (no page of another server has it: another port is another origin).
    let port = server
        .address
        .rsplit_once(':')
        .map(|(_, port)| port)
        .unwrap_or_default();
    let own = format!("http://{}", server.address);
    let own_by_name = format!("http://localhost:{port}");
    for headers in [
        vec![],
        vec![("Origin", "https://app.example.com")],
        vec![("Origin", own.as_str())],
        vec![("Origin", own_by_name.as_str())],
    ] {
        let answer = server.post(INITIALIZE, &headers).await;
        assert_eq!(answer.status, 200, "{headers:?}: {}", answer.text);
    }
    // No preflight is answered with what would let a page send `Authorization` (or anything).
    let tokened = Server::start_with(HttpOptions {
        token: Some("0123456789abcdef0123456789abcdef".to_owned()),
        allowed_origins: vec!["https://app.example.com:443".to_owned()],
        ..HttpOptions::default()
    })
    .await;
    for server in [&server, &tokened] {
        for origin in ["https://app.example.com", "http://localhost:3000"] {
            let answer = server
                .exchange(&request(
                    "OPTIONS",
                    &server.address,
                    "",
                    &[
                        ("Origin", origin),
                        ("Access-Control-Request-Method", "POST"),
                        (
                            "Access-Control-Request-Headers",
                            "authorization, content-type, mcp-session-id",
                        ),
                    ],
                ))
                .await;
            assert!(
                [401, 403, 405].contains(&answer.status),
                "{origin}: {}",
                answer.text
            );
            assert!(
                !answer.text.to_ascii_lowercase().contains("access-control-"),
                "{origin}: {}",
                answer.text
            );
        }
    }
}

#[tokio::test]
async fn an_idempotency_key_replays_only_within_its_own_session() {
    let server = Server::start(Limits::default(), None).await;
    // One caller (one Authorization), two sessions: each with its own approvals and labels.
    let auth = "Bearer same-caller-0123456789ab";
    let first = server.open_session(auth).await;
    let second = server.open_session(auth).await;
    let call = |id: &str| {
        let id = id.to_owned();
        let server = &server;
        async move {
            server
                .post(
                    READ_HELLO,
                    &[
                        ("Authorization", auth),
                        ("Mcp-Session-Id", id.as_str()),
                        ("Idempotency-Key", "key-1"),
                    ],
                )
                .await
        }
    };
    let ran = call(&first).await;
    assert!(
        ran.text.contains("hello from the served workspace"),
        "{}",
        ran.text
    );
    std::fs::write(server.dirs.ws.join("hello.txt"), "written since\n").unwrap();
    // Its own retry is answered with its first result, without running again.
    let retried = call(&first).await;
    assert!(
        retried.text.contains("hello from the served workspace"),
        "{}",
        retried.text
    );
    // The other session's call with the same key runs, and reads what is there now.
    let other = call(&second).await;
    assert!(other.text.contains("written since"), "{}", other.text);
    assert!(
        !other.text.contains("hello from the served workspace"),
        "{}",
        other.text
    );
}

#[tokio::test]
async fn one_clients_idempotency_keys_never_push_out_anothers() {
    let server = Server::start_served(
        HttpOptions {
            clients: vec![
                Client::with_token("alice", ALICE.trim_start_matches("Bearer ")),
                Client::with_token("bob", BOB.trim_start_matches("Bearer ")),
            ],
            ..HttpOptions::default()
        },
        // Each client's even share is two keys.
        ServeOptions {
            idempotency_keys: Some(4),
            ..ServeOptions::default()
        },
        Dirs::new(),
    )
    .await;
    let call = |auth: &'static str, id: String, key: String| {
        let server = &server;
        async move {
            server
                .post(
                    READ_HELLO,
                    &[
                        ("Authorization", auth),
                        ("Mcp-Session-Id", id.as_str()),
                        ("Idempotency-Key", key.as_str()),
                    ],
                )
                .await
        }
    };
    let his = server.open_session(BOB).await;
    let ran = call(BOB, his.clone(), "bob-1".to_owned()).await;
    assert!(
        ran.text.contains("hello from the served workspace"),
        "{}",
        ran.text
    );
    std::fs::write(server.dirs.ws.join("hello.txt"), "written since\n").unwrap();
    // Alice fills the whole table, and more, with keys of her own.
    let hers = server.open_session(ALICE).await;
    for n in 0..6 {
        let answer = call(ALICE, hers.clone(), format!("alice-{n}")).await;
        assert!(answer.text.contains("written since"), "{}", answer.text);
    }
    // Bob's retry still gets his first answer: his call did not run twice.
    let retried = call(BOB, his.clone(), "bob-1".to_owned()).await;
    assert!(
        retried.text.contains("hello from the served workspace"),
        "{}",
        retried.text
    );
    // Alice's oldest went to make room for her newest.
    let hers_again = call(ALICE, hers.clone(), "alice-5".to_owned()).await;
    assert!(
        hers_again.text.contains("written since"),
        "{}",
        hers_again.text
    );
}

/// A `tools/call` of the 2026-07-28 revision (no session): `name` with `arguments`.
fn modern_call(name: &str, arguments: &str) -> (String, Vec<(&'static str, String)>) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"hostile","version":"0"}},"io.modelcontextprotocol/clientCapabilities":{{}}}},"name":"{name}","arguments":{arguments}}}}}"#
    );
    let headers = vec![
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", "tools/call".to_owned()),
        ("Mcp-Name", name.to_owned()),
    ];
    (body, headers)
}

#[tokio::test]
async fn one_callers_labels_never_reach_another_caller_of_the_stateless_revision() {
    let dirs = Dirs::new();
    std::fs::write(
        dirs.home.join("config.toml"),
        r#"
[classification]
write_down = "deny"

[[classification.paths]]
glob = "secrets/**"
level = "RESTRICTED"

[[classification.paths]]
glob = "public/**"
level = "PUBLIC"

[[policy.rules]]
action = "builtin.tool.create_file"
decision = "allow"
"#,
    )
    .unwrap();
    for dir in ["secrets", "public"] {
        std::fs::create_dir_all(dirs.ws.join(dir)).unwrap();
    }
    std::fs::write(dirs.ws.join("secrets/key.txt"), "hunter2\n").unwrap();
    // Loopback without tokens: each caller is told apart by the `Authorization` it sends.
    let server = Server::start_served(HttpOptions::default(), ServeOptions::default(), dirs).await;
    let call = |auth: &'static str, name: &'static str, arguments: &'static str| {
        server.call_modern(Some(auth), name, arguments)
    };
    let (mallory, carol) = (
        "Bearer mallory-0123456789abcdef",
        "Bearer carol-0123456789abcdef",
    );
    let read = call(mallory, "read_file", r#"{"path":"secrets/key.txt"}"#).await;
    assert!(read.text.contains("hunter2"), "{}", read.text);
    // Mallory's own calls carry what she read: her write-down is denied.
    let hers = call(
        mallory,
        "create_file",
        r#"{"path":"public/hers.txt","content":"x"}"#,
    )
    .await;
    assert!(hers.text.contains("denied"), "{}", hers.text);
    assert!(!server.dirs.ws.join("public/hers.txt").exists());
    // Carol read nothing: her write is her own, not judged by Mallory's labels.
    let theirs = call(
        carol,
        "create_file",
        r#"{"path":"public/carols.txt","content":"x"}"#,
    )
    .await;
    assert!(!theirs.text.contains("denied"), "{}", theirs.text);
    assert!(server.dirs.ws.join("public/carols.txt").exists());
}
