//! The outgoing-HTTP guard against the `http-anywhere` guest, with loopback servers.
//!
//! Every request here stays on this machine: the only servers are on 127.0.0.0/8, names are
//! resolved by a `StaticResolver`, and refused requests never leave the host.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bosun_sandbox::{
    CallErrorKind, CallOptions, Grants, Instance, NetGrant, Refusal, Sandbox, StaticResolver,
};
use bosun_test_programs as programs;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::sandbox_with;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A one-route-per-path HTTP/1.1 server on `ip`: `/host` answers with the `Host` header it
/// received, `/redirect?to=URL` answers 302 to URL, `/big` sends a 9 MiB body.
async fn serve(ip: IpAddr) -> SocketAddr {
    let listener = TcpListener::bind(SocketAddr::new(ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 << 10 {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    // A TLS ClientHello: hang up, as a plain-HTTP server would.
                    if buf.first() == Some(&0x16) {
                        return;
                    }
                }
                let head = String::from_utf8_lossy(&buf).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let host = head
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("host: ")
                            .or_else(|| l.strip_prefix("Host: "))
                    })
                    .unwrap_or("")
                    .to_owned();
                let response = if let Some(to) = path.strip_prefix("/redirect?to=") {
                    format!(
                        "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    )
                } else if path == "/big" {
                    let body = "x".repeat(9 << 20);
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                } else {
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{host}",
                        host.len()
                    )
                };
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    addr
}

struct Setup {
    _dir: tempfile::TempDir,
    sandbox: Sandbox,
}

fn setup(resolver: StaticResolver) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = sandbox_with(&dir, Some(Arc::new(resolver)));
    Setup { _dir: dir, sandbox }
}

async fn http_guest(setup: &Setup) -> Instance {
    let bytes = std::fs::read(programs::HTTP_ANYWHERE).unwrap();
    setup
        .sandbox
        .load(&bytes)
        .unwrap()
        .with_label("http-anywhere")
        .instantiate(Grants {
            http: true,
            timeout: Duration::from_secs(20),
            ..Grants::default()
        })
        .await
        .unwrap()
}

fn net(hosts: &[String], private_allowed: &[IpAddr]) -> CallOptions {
    CallOptions {
        net: NetGrant {
            hosts: hosts.iter().map(|h| h.parse().unwrap()).collect(),
            private_allowed: private_allowed.to_vec(),
        },
        ..CallOptions::default()
    }
}

/// Fetches `url` and returns the output, or the tool error code and the guard's refusals.
async fn fetch(
    guest: &mut Instance,
    input: Value,
    opts: CallOptions,
) -> Result<Value, (String, Vec<Refusal>)> {
    match guest.call("fetch", &input.to_string(), opts).await {
        Ok(out) => Ok(serde_json::from_str(&out.output_json).unwrap()),
        Err(err) => {
            assert!(
                matches!(err.kind, CallErrorKind::Tool { .. }),
                "refusals must reach the guest as errors, not crash it: {err}"
            );
            let refusals = err
                .report
                .refused_requests
                .iter()
                .map(|r| r.reason.clone())
                .collect();
            Err((err.code().to_owned(), refusals))
        }
    }
}

fn non_public(result: &Result<Value, (String, Vec<Refusal>)>) -> bool {
    match result {
        Err((code, refusals)) => {
            code == "denied" && matches!(refusals.as_slice(), [Refusal::NonPublicAddress { .. }])
        }
        Ok(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_loopback_server_is_reached_with_the_original_host() {
    let server = serve(LOOPBACK).await;
    let s = setup(StaticResolver::new().with("internal.test", [LOOPBACK]));
    let mut guest = http_guest(&s).await;

    let authority = format!("127.0.0.1:{}", server.port());
    let out = fetch(
        &mut guest,
        json!({"url": format!("http://{authority}/host")}),
        net(std::slice::from_ref(&authority), &[LOOPBACK]),
    )
    .await
    .unwrap();
    assert_eq!(out["status"], 200);
    assert_eq!(out["body"], authority);

    // A name is connected to at its checked address, keeping its own Host.
    let named = format!("internal.test:{}", server.port());
    let out = fetch(
        &mut guest,
        json!({"url": format!("http://{named}/host")}),
        net(std::slice::from_ref(&named), &[LOOPBACK]),
    )
    .await
    .unwrap();
    assert_eq!(out["body"], named);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undeclared_host_is_refused() {
    let server = serve(LOOPBACK).await;
    let s = setup(StaticResolver::new());
    let mut guest = http_guest(&s).await;
    let url = format!("http://127.0.0.1:{}/host", server.port());
    let result = fetch(&mut guest, json!({"url": url}), net(&[], &[LOOPBACK])).await;
    assert_eq!(
        result.unwrap_err(),
        (
            "denied".to_owned(),
            vec![Refusal::HostNotGranted(format!(
                "127.0.0.1:{}",
                server.port()
            ))]
        )
    );
    // Granting another port of the same host does not help.
    let other = format!("127.0.0.1:{}", server.port().wrapping_add(1));
    let result = fetch(&mut guest, json!({"url": url}), net(&[other], &[LOOPBACK])).await;
    assert!(
        matches!(result, Err((_, ref r)) if matches!(r.as_slice(), [Refusal::HostNotGranted(_)]))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_and_metadata_literals_are_refused_even_when_granted() {
    let server = serve(LOOPBACK).await;
    let port = server.port();
    let s = setup(StaticResolver::new());
    let mut guest = http_guest(&s).await;
    for authority in [
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        format!("2130706433:{port}"),
        format!("0x7f000001:{port}"),
        format!("0177.0.0.1:{port}"),
        format!("127.1:{port}"),
        "169.254.169.254".to_owned(),
    ] {
        let result = fetch(
            &mut guest,
            json!({"url": format!("http://{authority}/host"), "raw": true}),
            net(std::slice::from_ref(&authority), &[]),
        )
        .await;
        assert!(non_public(&result), "{authority}: {result:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn name_resolving_to_loopback_is_refused() {
    let server = serve(LOOPBACK).await;
    let s = setup(StaticResolver::new().with("sneaky.test", [LOOPBACK]));
    let mut guest = http_guest(&s).await;
    let authority = format!("sneaky.test:{}", server.port());
    let result = fetch(
        &mut guest,
        json!({"url": format!("http://{authority}/host")}),
        net(&[authority], &[]),
    )
    .await;
    assert!(non_public(&result), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_from_an_allowed_host_to_a_private_address_is_refused() {
    let allowed = serve(LOOPBACK).await;
    // A second loopback address stands in for the private target; no rule names it.
    let private_ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let private = serve(private_ip).await;
    let s = setup(StaticResolver::new());
    let mut guest = http_guest(&s).await;

    let target = format!("http://127.0.0.2:{}/host", private.port());
    let hosts = [
        format!("127.0.0.1:{}", allowed.port()),
        format!("127.0.0.2:{}", private.port()),
    ];
    let url = format!("http://127.0.0.1:{}/redirect?to={target}", allowed.port());
    let result = fetch(&mut guest, json!({"url": url}), net(&hosts, &[LOOPBACK])).await;
    assert!(non_public(&result), "{result:?}");

    // With the target named too, the same redirect is followed.
    let out = fetch(
        &mut guest,
        json!({"url": url}),
        net(&hosts, &[LOOPBACK, private_ip]),
    )
    .await
    .unwrap();
    assert_eq!(out["body"], format!("127.0.0.2:{}", private.port()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_without_http_grant_reaches_nothing() {
    let server = serve(LOOPBACK).await;
    let s = setup(StaticResolver::new());
    let bytes = std::fs::read(programs::HTTP_ANYWHERE).unwrap();
    let mut guest = s
        .sandbox
        .load(&bytes)
        .unwrap()
        .instantiate(Grants::default())
        .await
        .unwrap();
    let authority = format!("127.0.0.1:{}", server.port());
    let result = fetch(
        &mut guest,
        json!({"url": format!("http://{authority}/host")}),
        net(&[authority], &[LOOPBACK]),
    )
    .await;
    assert_eq!(result.unwrap_err().1, vec![Refusal::NoHttpGrant]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_response_is_refused() {
    let server = serve(LOOPBACK).await;
    let s = setup(StaticResolver::new());
    let mut guest = http_guest(&s).await;
    let authority = format!("127.0.0.1:{}", server.port());
    let result = fetch(
        &mut guest,
        json!({"url": format!("http://{authority}/big")}),
        net(&[authority], &[LOOPBACK]),
    )
    .await;
    let (code, refusals) = result.unwrap_err();
    assert_eq!(code, "io_error");
    assert_eq!(refusals, vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_http_schemes_are_refused() {
    let s = setup(StaticResolver::new());
    let mut guest = http_guest(&s).await;
    let result = fetch(
        &mut guest,
        json!({"url": "ftp://example.test/file", "raw": true}),
        net(&["example.test".to_owned()], &[]),
    )
    .await;
    let (_, refusals) = result.unwrap_err();
    assert!(refusals.is_empty() || matches!(refusals.as_slice(), [Refusal::Scheme(_)]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_goes_through_tls_to_the_checked_address() {
    // A plain-HTTP server cannot finish a TLS handshake: the request must fail as a transport
    // error (not a crash, not a refusal), which shows the TLS path connected to the address.
    let server = serve(LOOPBACK).await;
    let s = setup(StaticResolver::new().with("tls.test", [LOOPBACK]));
    let mut guest = http_guest(&s).await;
    let authority = format!("tls.test:{}", server.port());
    let result = fetch(
        &mut guest,
        json!({"url": format!("https://{authority}/host")}),
        net(std::slice::from_ref(&authority), &[LOOPBACK]),
    )
    .await;
    assert_eq!(result.unwrap_err(), ("io_error".to_owned(), vec![]));
}
