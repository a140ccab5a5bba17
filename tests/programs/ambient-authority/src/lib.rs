//! Hostile: declares nothing and looks for what a process usually inherits — environment
//! variables, arguments, a working directory, stdin, preopened directories — and for the
//! network below HTTP: TCP, UDP and DNS through `wasi:sockets`. The host links all of these
//! with an empty context: every list comes back empty and every socket refused.

use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::time::Duration;

use bosun_sdk::{NoInput, Plugin, ToolError, Tools};
use serde_json::{Value, json};

#[derive(Default)]
struct AmbientAuthority;

impl Plugin for AmbientAuthority {
    fn tools() -> Tools<Self> {
        Tools::new()
            .tool("environment", environment)
            .tool("tcp_connect", tcp_connect)
            .tool("udp_send", udp_send)
            .tool("resolve", resolve)
    }
}

bosun_sdk::export!(AmbientAuthority);

fn environment(_: NoInput) -> Result<Value, ToolError> {
    let mut stdin = Vec::new();
    let stdin = match std::io::stdin().take(1024).read_to_end(&mut stdin) {
        Ok(_) => json!({"ok": true, "bytes": String::from_utf8_lossy(&stdin)}),
        Err(e) => json!({"ok": false, "error": e.to_string()}),
    };
    let preopens: Vec<String> = wasip2_preopens();
    Ok(json!({
        "vars": std::env::vars().collect::<Vec<_>>(),
        "args": std::env::args().collect::<Vec<_>>(),
        "cwd": std::env::current_dir().map(|d| d.display().to_string()).map_err(|e| e.to_string()),
        "stdin": stdin,
        "preopens": preopens,
    }))
}

#[cfg(target_arch = "wasm32")]
fn wasip2_preopens() -> Vec<String> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .map(|(_, path)| path)
        .collect()
}

#[cfg(not(target_arch = "wasm32"))]
fn wasip2_preopens() -> Vec<String> {
    Vec::new()
}

fn address(input: &Value) -> String {
    input["address"].as_str().unwrap_or_default().to_owned()
}

fn tcp_connect(input: Value) -> Result<Value, ToolError> {
    let address = address(&input);
    let outcome = address
        .to_socket_addrs()
        .map_err(|e| format!("resolving: {e}"))
        .and_then(|mut addrs| addrs.next().ok_or_else(|| "no address".to_owned()))
        .and_then(|addr| {
            TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .map_err(|e| format!("connecting: {e}"))
        });
    Ok(match outcome {
        Ok(stream) => {
            json!({"address": address, "ok": true, "peer": stream.peer_addr().map(|a| a.to_string()).ok()})
        }
        Err(error) => json!({"address": address, "ok": false, "error": error}),
    })
}

fn udp_send(input: Value) -> Result<Value, ToolError> {
    let address = address(&input);
    let outcome = UdpSocket::bind("0.0.0.0:0")
        .and_then(|socket| socket.send_to(b"ambient-authority", &address));
    Ok(match outcome {
        Ok(sent) => json!({"address": address, "ok": true, "sent": sent}),
        Err(e) => json!({"address": address, "ok": false, "error": e.to_string()}),
    })
}

fn resolve(input: Value) -> Result<Value, ToolError> {
    let address = address(&input);
    Ok(match address.to_socket_addrs() {
        Ok(addrs) => {
            json!({"address": address, "ok": true, "addresses": addrs.map(|a| a.to_string()).collect::<Vec<_>>()})
        }
        Err(e) => json!({"address": address, "ok": false, "error": e.to_string()}),
    })
}
