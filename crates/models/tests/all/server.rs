//! A loopback HTTP/1.1 server that plays scripted replies — SSE bodies written in pieces,
//! error statuses, streams cut or left hanging — and records every request it received.
//!
//! Written on bare tokio sockets so that a test controls exactly which bytes go out and when
//! the connection closes, which a full server framework hides.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// Longest a hanging reply waits for the client to go away.
const HANG_LIMIT: Duration = Duration::from_secs(30);

/// Reads `tests/fixtures/<provider>/<name>.sse`.
pub fn fixture(provider: &str, name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(provider)
        .join(format!("{name}.sse"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// How the server answers one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An event stream.
    Sse(SseReply),
    /// A complete non-streaming response.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

/// An event-stream reply.
#[derive(Debug, Clone)]
pub struct SseReply {
    body: String,
    /// Bytes per write; 0 writes the body at once.
    piece: usize,
    delay: Duration,
    /// Chunked framing (with a terminating chunk unless cut) or, when false, a body delimited
    /// by closing the connection.
    chunked: bool,
    /// Write only this many bytes, then close without ending the body properly.
    cut_after: Option<usize>,
    /// After the body, keep the connection open until the client closes it.
    hang: bool,
}

impl Reply {
    pub fn sse(body: impl Into<String>) -> SseReply {
        SseReply {
            body: body.into(),
            piece: 0,
            delay: Duration::ZERO,
            chunked: true,
            cut_after: None,
            hang: false,
        }
    }

    pub fn status(status: u16, body: impl Into<String>) -> Self {
        Self::Status {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Self::Status { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

impl SseReply {
    pub fn in_pieces(mut self, piece: usize, delay: Duration) -> Self {
        self.piece = piece;
        self.delay = delay;
        self
    }

    pub fn cut_after(mut self, bytes: usize) -> Self {
        self.cut_after = Some(bytes);
        self
    }

    pub fn close_delimited(mut self) -> Self {
        self.chunked = false;
        self
    }

    pub fn then_hang(mut self) -> Self {
        self.hang = true;
        self
    }
}

impl From<SseReply> for Reply {
    fn from(reply: SseReply) -> Self {
        Reply::Sse(reply)
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Lower-cased names.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    pub at: Instant,
}

#[derive(Default)]
struct State {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    disconnects: Mutex<Vec<Instant>>,
    disconnected: Notify,
}

pub struct TestServer {
    pub url: String,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Starts a server on 127.0.0.1 that plays `replies` in order, one per request.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            replies: Mutex::new(replies.into_iter().collect()),
            ..State::default()
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, shared.clone()));
            }
        });
        Self {
            url: format!("http://{addr}"),
            state,
            task,
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The JSON bodies received so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|r| r.body).collect()
    }

    /// Waits until a hanging reply saw its client close the connection.
    pub async fn wait_for_disconnect(&self, within: Duration) -> Option<Instant> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.state.disconnected.notified();
            if let Some(at) = self.state.disconnects.lock().unwrap().first() {
                return Some(*at);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }
}

async fn serve(mut socket: TcpStream, state: Arc<State>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    state.requests.lock().unwrap().push(request);
    let reply = state.replies.lock().unwrap().pop_front();
    let reply = reply.unwrap_or_else(|| {
        Reply::status(
            500,
            r#"{"error":{"message":"test server: no reply scripted"}}"#,
        )
    });
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                reason(status),
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
        Reply::Sse(sse) => {
            let framing = if sse.chunked {
                "transfer-encoding: chunked\r\n"
            } else {
                ""
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n{framing}connection: close\r\n\r\n"
            );
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let bytes = sse.body.as_bytes();
            let end = sse.cut_after.unwrap_or(bytes.len()).min(bytes.len());
            let piece = if sse.piece == 0 {
                end.max(1)
            } else {
                sse.piece
            };
            for part in bytes[..end].chunks(piece) {
                let written = if sse.chunked {
                    let mut framed = format!("{:x}\r\n", part.len()).into_bytes();
                    framed.extend_from_slice(part);
                    framed.extend_from_slice(b"\r\n");
                    socket.write_all(&framed).await
                } else {
                    socket.write_all(part).await
                };
                if written.is_err() || socket.flush().await.is_err() {
                    return;
                }
                if !sse.delay.is_zero() {
                    tokio::time::sleep(sse.delay).await;
                }
            }
            if sse.hang {
                // The client has sent its whole request, so a read returns only when it
                // closes the connection.
                let mut buf = [0u8; 64];
                let _ = tokio::time::timeout(HANG_LIMIT, socket.read(&mut buf)).await;
                state.disconnects.lock().unwrap().push(Instant::now());
                state.disconnected.notify_waiters();
                return;
            }
            if sse.cut_after.is_none() && sse.chunked {
                let _ = socket.write_all(b"0\r\n\r\n").await;
            }
            let _ = socket.shutdown().await;
        }
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > 1 << 20 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
        at: Instant::now(),
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}
