//! Three `bosun serve --http` instances behind a real HAProxy (Debian's, from
//! `scripts/lb-peers`), round-robin on loopback, driven by the official Python MCP SDK on
//! 2026-07-28 (`tests/peers/fleet_client.py`): calls work; an ask answered on retry lands on
//! another instance and works there; a forged and a replayed request state (replayed to the
//! instance that redeemed it, and to another, through the shared redemption directory) are
//! refused with the documented error and run nothing; each instance exports its spans with its
//! own `service.instance.id` to one real OTLP receiver (`oteltap`); one instance killed during a
//! load run costs the clients retries, never a call. With a shared `[serve] idempotency_dir`
//! (`tests/peers/fleet_idempotency.py`), a keyed side-effecting call sent to every instance runs
//! once, another caller's same key is its own, and a dead instance's claim expires.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Env;
use super::serve::{HttpServer, python};
use pretty_assertions::assert_eq;

/// HAProxy as `scripts/lb-peers` unpacked it, with its libraries.
fn haproxy() -> (PathBuf, PathBuf) {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("tools/haproxy");
    let binary = dir.join("usr/sbin/haproxy");
    assert!(
        binary.exists(),
        "HAProxy is not installed: run scripts/lb-peers (scripts/test does)"
    );
    (binary, dir.join("usr/lib/x86_64-linux-gnu"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Three `bosun serve --http` instances of `env` sharing one state key, behind HAProxy
/// (round-robin) on `port`: the instances and the balancer (each stopped when dropped), and each
/// instance's own URL by its backend name (`s1`…`s3`).
fn three_behind_haproxy(
    env: &Env,
    port: u16,
) -> (Vec<HttpServer>, Balancer, serde_json::Map<String, Value>) {
    let key = [(
        "BOSUN_FLEET_STATE_KEY",
        "fleet-test-key-0123456789abcdef0123456789abcdef",
    )];
    let instances: Vec<HttpServer> = (0..3).map(|_| HttpServer::start(env, &[], &key)).collect();
    let backends: Vec<(String, String)> = instances
        .iter()
        .enumerate()
        .map(|(n, server)| {
            let addr = server
                .url
                .trim_start_matches("http://")
                .trim_end_matches("/mcp")
                .to_owned();
            (format!("s{}", n + 1), addr)
        })
        .collect();
    let balancer = Balancer::start(env.dir.path(), port, &backends);
    let direct = backends
        .iter()
        .zip(&instances)
        .map(|((name, _), server)| (name.clone(), json!(server.url)))
        .collect();
    (instances, balancer, direct)
}

/// HAProxy in the foreground, stopped on drop.
struct Balancer(Child);

impl Balancer {
    fn start(dir: &std::path::Path, port: u16, backends: &[(String, String)]) -> Self {
        let servers: String = backends
            .iter()
            .map(|(name, addr)| {
                format!("    server {name} {addr} check inter 200ms fall 1 rise 2\n")
            })
            .collect();
        let config = format!(
            "global\n    maxconn 512\n\
             defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n\
             \x20   retries 3\n    option redispatch\n    retry-on conn-failure\n\
             frontend fleet\n    bind 127.0.0.1:{port}\n    default_backend bosun\n\
             backend bosun\n    balance roundrobin\n    http-response set-header X-Bosun-Instance %[srv_name]\n{servers}"
        );
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let (binary, libs) = haproxy();
        let check = Command::new(&binary)
            .args(["-c", "-f"])
            .arg(&path)
            .env("LD_LIBRARY_PATH", &libs)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
        let child = Command::new(&binary)
            .args(["-db", "-f"])
            .arg(&path)
            .env("LD_LIBRARY_PATH", &libs)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "HAProxy did not listen in 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self(child)
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_client(plan: &Value) -> Value {
    run_peer("fleet_client.py", plan)
}

fn run_peer(script: &str, plan: &Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(script);
    let mut child = Command::new(python())
        .arg(script)
        .arg(plan.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the fleet client did not finish in 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| {
        panic!(
            "{e}: client printed {out:?}; stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// `oteltap` (from `scripts/otel-peers`) re-emitting to a sink that reports each span's resource
/// (`tests/peers/otel_resource_tap.py`); stopped on drop.
struct ResourceTap {
    child: Child,
    port: u16,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl ResourceTap {
    fn start() -> Self {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
        let python = target.join("tools/oteltap/venv/bin/python");
        assert!(
            python.exists(),
            "the OTLP receiver is not installed: run scripts/otel-peers (scripts/test does)"
        );
        let port = free_port();
        let mut child = Command::new(python)
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/otel_resource_tap.py"))
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && send.send(value).is_err()
                {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "oteltap did not listen in 20 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port, lines }
    }

    /// Spans received until `enough` holds of them or 20 s passed.
    fn spans(&self, enough: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !enough(&got) && Instant::now() < deadline {
            if let Ok(value) = self.lines.recv_timeout(Duration::from_millis(200)) {
                got.push(value);
            }
        }
        got
    }
}

impl Drop for ResourceTap {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON-RPC error a raw request got back.
fn rpc_error(answer: &Value) -> (i64, String) {
    let error = &answer["message"]["error"];
    (
        error["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no JSON-RPC error in {answer:#}")),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Every `tool.completed` of `tool` in the runs the instances wrote.
fn completed(env: &Env, tool: &str) -> usize {
    env.runs()
        .iter()
        .flat_map(|run| {
            std::fs::read_to_string(run)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|v| v["event"]["type"] == "tool.completed" && v["event"]["tool"] == tool)
                .collect::<Vec<_>>()
        })
        .count()
}

#[test]
fn three_instances_behind_haproxy_share_asks_refuse_forged_and_replayed_states_and_survive_a_kill()
{
    let env = Env::new();
    let port = free_port();
    let tap = ResourceTap::start();
    let redemptions = env.dir.path().join("shared/redeemed-states");
    env.user_config(&format!(
        "[serve]\nstate_key_env = \"BOSUN_FLEET_STATE_KEY\"\nallowed_hosts = [\"127.0.0.1:{port}\"]\nstate_redemptions_dir = {:?}\n\n[telemetry]\ntraces = {{ otlp-http = {{ endpoint = \"http://127.0.0.1:{}/v1/traces\" }} }}\n",
        redemptions.display().to_string(),
        tap.port
    ));
    let (instances, _balancer, direct) = three_behind_haproxy(&env, port);
    let out = run_client(&json!({
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "instances": direct,
        "kill": instances[1].pid(),
        "clients": 8,
        "calls": 60,
        "settle": 3,
    }));

    assert_eq!(out["protocol"], "2026-07-28", "{out}");
    assert!(out["read"]["isError"] != true, "{out}");
    assert!(out["read"].to_string().contains("pub fn answer"), "{out}");
    // The ask: the first attempt ended with input_required on one instance, the retry with the
    // answer was served by another, and the command ran exactly once.
    let attempts: Vec<&str> = out["asked_attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(attempts.len() >= 2, "{out}");
    assert_ne!(attempts[0], attempts[attempts.len() - 1], "{out}");
    assert_eq!(out["retry_found"], true, "{out}");
    assert!(out["asked"]["isError"] != true, "{out}");
    assert!(env.ws().join("asked.txt").exists(), "{out}");

    // A forged state and a replayed one — to the instance that redeemed it, and to another
    // (the shared redemption directory) — are refused with the documented JSON-RPC error
    // (invalid params, one message for every failure to open, the kind in parentheses), and
    // run nothing.
    let refusal = |kind: &str| {
        format!(
            "requestState refused ({kind}): call again without requestState and inputResponses to be asked anew"
        )
    };
    for (what, kind) in [
        (
            "forged",
            "the request state was not issued for this caller and this call",
        ),
        ("replayed", "the request state was already used"),
        ("replayed_elsewhere", "the request state was already used"),
    ] {
        assert_eq!(out[what]["status"], 200, "{what}: {:#}", out[what]);
        assert_eq!(rpc_error(&out[what]), (-32602, refusal(kind)), "{what}");
    }
    assert_ne!(
        out["replayed_elsewhere"]["to"],
        out["asked_attempts"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone(),
        "{out}"
    );
    assert_eq!(completed(&env, "run_command"), 1, "{out}");
    assert!(
        std::fs::read_dir(&redemptions).unwrap().count() >= 1,
        "the redemption was recorded where every instance sees it"
    );

    // Each instance exports its spans with its own service.instance.id to the one collector:
    // the call sent straight to each instance, in a trace of its own, arrives under one id per
    // instance, and the three ids differ.
    let traced = out["traced"].as_object().unwrap().clone();
    assert_eq!(traced.len(), 3, "{out}");
    let trace_ids: Vec<String> = traced
        .values()
        .map(|t| t["trace_id"].as_str().unwrap().to_owned())
        .collect();
    let spans = tap.spans(|got| {
        trace_ids.iter().all(|id| {
            got.iter()
                .any(|s| s["traceId"] == id.as_str() && s["name"] == "execute_tool read_file")
        })
    });
    let mut ids = std::collections::BTreeSet::new();
    for (name, t) in &traced {
        assert!(t["message"]["result"].is_object(), "{name}: {t:#}");
        let of_trace: std::collections::BTreeSet<&str> = spans
            .iter()
            .filter(|s| s["traceId"] == t["trace_id"])
            .filter_map(|s| s["resource"]["service.instance.id"].as_str())
            .collect();
        assert_eq!(
            of_trace.len(),
            1,
            "{name}: one instance id in its trace: {spans:#?}"
        );
        ids.extend(of_trace);
    }
    assert_eq!(ids.len(), 3, "three instances, three ids: {ids:?}");
    assert!(ids.iter().all(|id| !id.is_empty()), "{ids:?}");

    // The load run: one instance was killed a third of the way; every call succeeded.
    assert_eq!(out["load"]["calls"], 480, "{out}");
    assert_eq!(out["load"]["failed"], 0, "{out}");
    assert!(out["load"]["killed_at"].as_u64().is_some(), "{out}");
}

/// The text a JSON-RPC `tools/call` answer carries.
fn answer_text(answer: &Value) -> String {
    answer["message"]["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Lines of a file the commands append to (none when it was never written).
fn lines_of(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_keyed_call_runs_once_across_instances_sharing_an_idempotency_dir() {
    let env = Env::new();
    let port = free_port();
    let shared = env.dir.path().join("shared/idempotency");
    let claim_secs = 14;
    env.user_config(&format!(
        "[serve]\nstate_key_env = \"BOSUN_FLEET_STATE_KEY\"\nallowed_hosts = [\"127.0.0.1:{port}\"]\nidempotency_dir = {:?}\nidempotency_claim_secs = {claim_secs}\n\n[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"allow\"\n\n[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"allow\"\n",
        shared.display().to_string(),
    ));
    let (instances, _balancer, direct) = three_behind_haproxy(&env, port);
    let out = run_peer(
        "fleet_idempotency.py",
        &json!({
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "instances": direct,
            "doomed": "s3",
            "doomed_pid": instances[2].pid(),
            "claim_secs": claim_secs,
            "shared_dir": shared,
        }),
    );

    // The first call ran the command once; every repeat, through the balancer and straight to
    // each live instance, got the first answer and ran nothing.
    assert!(out["first"]["isError"] != true, "{out:#}");
    let ran = lines_of(&env.ws().join("once.txt"));
    let first: String = out["first"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(first.contains(&ran[0]), "{out:#}");
    let mut served_by = std::collections::BTreeSet::new();
    served_by.insert(
        out["first_instance"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    );
    for repeat in out["repeats"].as_array().unwrap() {
        assert_eq!(repeat["status"], 200, "{repeat:#}");
        assert_eq!(answer_text(repeat), first, "{repeat:#}");
        if let Some(to) = repeat["to"].as_str().or(repeat["instance"].as_str()) {
            served_by.insert(to.to_owned());
        }
    }
    assert!(
        served_by.len() >= 2,
        "repeats reached other instances: {served_by:?}"
    );

    // Sent to two instances at once: one ran it, both answered with that run.
    let together = out["together"].as_array().unwrap();
    let ran_together = lines_of(&env.ws().join("together.txt"));
    assert_eq!(ran_together.len(), 1, "{out:#}");
    for answer in together {
        assert!(answer_text(answer).contains(&ran_together[0]), "{answer:#}");
    }

    // Another caller with the same key: its own run, and an answer that is not the first's.
    let other = &out["other_caller"];
    assert_eq!(other["status"], 200, "{other:#}");
    let ran = lines_of(&env.ws().join("once.txt"));
    assert_eq!(ran.len(), 2, "the other caller's call ran: {out:#}");
    assert!(answer_text(other).contains(&ran[1]), "{other:#}");
    assert!(!answer_text(other).contains(&ran[0]), "{other:#}");

    // The dead instance's claim: "in progress" and nothing run, until it expired; then the
    // retry ran.
    let (code, message) = rpc_error(&out["while_claimed"]);
    assert_eq!(code, -32603, "{out:#}");
    assert!(message.contains("still in progress"), "{message}");
    assert!(
        out["after_expiry"]["message"]["result"].is_object(),
        "{out:#}"
    );
    assert!(
        out["after_expiry"]["message"]["result"]["isError"] != true,
        "{out:#}"
    );
    // Nothing in the shared directory names a caller or a key.
    for entry in std::fs::read_dir(&shared).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(!name.contains("key-"), "{name}");
    }
}
