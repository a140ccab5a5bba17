//! A tiny HTTP/1.1 server on loopback serving a folder, for tests: `GET /path` answers the
//! file (or 404); `/hang/…` never answers; `/endless/…` sends bytes until the client hangs up,
//! with no length. It records every path asked for; answers scripted for a path
//! ([`Server::script`]) are sent first, one per request, in order.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Raw answers to send for a path before its file.
type Script = Arc<Mutex<BTreeMap<String, VecDeque<String>>>>;

pub struct Server {
    pub url: String,
    pub requests: Arc<Mutex<Vec<String>>>,
    script: Script,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Answers the next request for `path` with `status` and `headers` (no body).
    pub fn script(&self, path: &str, status: &str, headers: &[(&str, &str)]) {
        let mut head = format!("HTTP/1.1 {status}\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("Content-Length: 0\r\nConnection: close\r\n\r\n");
        self.script
            .lock()
            .unwrap()
            .entry(path.to_owned())
            .or_default()
            .push_back(head);
    }

    /// How many requests asked for `path`.
    pub fn asked(&self, path: &str) -> usize {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|p| *p == path)
            .count()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn serve(root: PathBuf) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let script: Script = Arc::default();
    let scripted = script.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let root = root.clone();
            let seen = seen.clone();
            let scripted = scripted.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut read = 0;
                while !buf[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf[read..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..read]).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                seen.lock().unwrap().push(path.clone());
                let next = scripted
                    .lock()
                    .unwrap()
                    .get_mut(&path)
                    .and_then(VecDeque::pop_front);
                if let Some(answer) = next {
                    let _ = stream.write_all(answer.as_bytes()).await;
                    return;
                }
                if path.starts_with("/hang/") {
                    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                    return;
                }
                if path.starts_with("/endless/") {
                    let _ = stream
                        .write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
                        .await;
                    let chunk = vec![b'x'; 65536];
                    while stream.write_all(&chunk).await.is_ok() {}
                    return;
                }
                let file = root.join(path.trim_start_matches('/'));
                let response = match std::fs::read(&file) {
                    Ok(body) if !path.contains("..") => {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        r.extend(body);
                        r
                    }
                    _ => {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_vec()
                    }
                };
                let _ = stream.write_all(&response).await;
            });
        }
    });
    Server {
        url,
        requests,
        script,
        task,
    }
}
