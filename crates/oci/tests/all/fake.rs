//! A scripted loopback HTTP/1.1 server for the hostile cases: each request is recorded and
//! answered by a handler, which may lie about lengths, hang, or redirect.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How to answer.
pub enum Reply {
    /// A status, headers and a body; `Content-Length` is added unless a header sets it.
    Full(u16, Vec<(String, String)>, Vec<u8>),
    /// These bytes, exactly, then close.
    Raw(Vec<u8>),
    /// These bytes, then nothing, the connection held open.
    Hang(Vec<u8>),
    /// A 200 with this body, one byte at a time with this pause before each.
    Trickle(Vec<u8>, Duration),
}

impl Reply {
    pub fn ok(body: impl Into<Vec<u8>>) -> Self {
        Self::Full(200, vec![], body.into())
    }

    pub fn status(status: u16) -> Self {
        Self::Full(status, vec![], vec![])
    }

    pub fn with(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Self {
        Self::Full(
            status,
            headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body.into(),
        )
    }
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A running fake server.
pub struct Fake {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Fake {
    pub async fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let task = {
            let seen = seen.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let seen = seen.clone();
                    let handler = handler.clone();
                    tokio::spawn(serve(stream, seen, handler));
                }
            })
        };
        Self { addr, seen, task }
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, seen: Arc<Mutex<Vec<Seen>>>, handler: Arc<Handler>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    let request = Seen {
        method,
        target,
        headers,
        body,
    };
    seen.lock().unwrap().push(request.clone());
    match handler(&request) {
        Reply::Full(status, headers, body) => {
            let mut out = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n");
            let has_length = headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-length"));
            for (name, value) in &headers {
                out.push_str(&format!("{name}: {value}\r\n"));
            }
            if !has_length {
                out.push_str(&format!("Content-Length: {}\r\n", body.len()));
            }
            out.push_str("\r\n");
            let mut bytes = out.into_bytes();
            if request.method != "HEAD" {
                bytes.extend_from_slice(&body);
            }
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Reply::Trickle(body, pause) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for byte in body {
                tokio::time::sleep(pause).await;
                if stream.write_all(&[byte]).await.is_err() || stream.flush().await.is_err() {
                    return;
                }
            }
            let _ = stream.shutdown().await;
        }
        Reply::Hang(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.flush().await;
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
}
