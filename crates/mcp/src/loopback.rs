//! Tests only: a loopback HTTP/1.1 server on bare tokio sockets that answers each request
//! with what a closure returns and records every request it received (method, target,
//! lower-cased headers, body), so a test controls the exact bytes a hostile server sends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

/// An answer: status, headers, body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn new(status: u16) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: String::new(),
        }
    }

    pub fn json(value: serde_json::Value) -> Answer {
        Answer::new(200)
            .header("content-type", "application/json")
            .body(value.to_string())
    }

    pub fn header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, body: String) -> Answer {
        self.body = body;
        self
    }
}

pub struct Loopback {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Handler = dyn Fn(&Seen, u16) -> Answer + Send + Sync;

impl Loopback {
    /// Serves on a free loopback port; `answer` gets each request and the server's own port.
    pub async fn start(answer: impl Fn(&Seen, u16) -> Answer + Send + Sync + 'static) -> Loopback {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let answer: Arc<Handler> = Arc::new(answer);
        let record = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, record.clone(), answer.clone(), port));
            }
        });
        Loopback { port, seen, task }
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(
    mut stream: tokio::net::TcpStream,
    record: Arc<Mutex<Vec<Seen>>>,
    answer: Arc<Handler>,
    port: u16,
) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(n) if n > 0 => buffer.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_owned();
    let target = first.next().unwrap_or_default().to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(n) if n > 0 => body.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    }
    let seen = Seen {
        method,
        target,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    record.lock().unwrap().push(seen.clone());
    let reply = answer(&seen, port);
    let mut out = format!("HTTP/1.1 {} X\r\n", reply.status);
    for (name, value) in &reply.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{}",
        reply.body.len(),
        reply.body
    ));
    if stream.write_all(out.as_bytes()).await.is_ok() {
        let _ = stream.shutdown().await;
    }
}
