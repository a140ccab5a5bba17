//! The real peers: Debian's `docker-registry` on a loopback port with its own storage folder and
//! config, and Python's ORAS SDK — both installed under the target directory by
//! `scripts/oci-peers`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bosun_oci::{Client, Limits};

/// `$CARGO_TARGET_DIR/tools`, where `scripts/oci-peers` installs the peers.
pub fn tools() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
            PathBuf::from,
        )
        .join("tools")
}

/// A `docker-registry` serving 127.0.0.1 on a free port until dropped.
pub struct LocalRegistry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
    storage: tempfile::TempDir,
}

impl LocalRegistry {
    pub fn start() -> Self {
        let binary = tools().join("docker-registry/usr/bin/docker-registry");
        assert!(
            binary.exists(),
            "Debian's docker-registry is not installed at {}: run scripts/oci-peers (scripts/test does)",
            binary.display()
        );
        let storage = tempfile::tempdir().unwrap();
        let port = free_port();
        let address = format!("127.0.0.1:{port}");
        let config = storage.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {address}\n",
                storage.path().join("data").display()
            ),
        )
        .unwrap();
        let child = Command::new(&binary)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {}: {e}", binary.display()));
        let registry = Self {
            child,
            address,
            storage,
        };
        registry.wait_until_up();
        registry
    }

    fn wait_until_up(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(mut stream) = TcpStream::connect(&self.address) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = stream.write_all(b"GET /v2/ HTTP/1.0\r\n\r\n");
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                if answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200") {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "docker-registry did not answer on {} within 20 s",
            self.address
        );
    }

    /// A client of this registry.
    pub fn client(&self) -> Client {
        self.client_with(Limits::default())
    }

    /// A client of this registry with `limits`.
    pub fn client_with(&self, limits: Limits) -> Client {
        Client::builder(self.address.parse().unwrap())
            .limits(limits)
            .build()
            .unwrap()
    }

    /// The file the registry keeps a blob's bytes in.
    pub fn blob_file(&self, hex: &str) -> PathBuf {
        self.storage
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The Python with the ORAS SDK.
pub fn oras_python() -> PathBuf {
    let python = tools().join("oras/venv/bin/python");
    assert!(
        python.exists(),
        "Python's oras is not installed at {}: run scripts/oci-peers (scripts/test does)",
        python.display()
    );
    python
}

/// Runs `tests/peers/oras_peer.py` with `args` in `dir`; fails the test when it fails.
pub fn oras(dir: &Path, args: &[&str]) -> Output {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/oras_peer.py");
    let output = Command::new(oras_python())
        .arg(&script)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "oras_peer.py {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
