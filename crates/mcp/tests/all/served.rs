//! A host served over MCP — on an in-process pipe and over Streamable HTTP on loopback — and
//! read back by Bosun's own client: listing, calling through the serving host's chokepoint,
//! the per-session trace, and approved tools attached to a second host.

use std::collections::BTreeMap;
use std::sync::Arc;

use bosun_core::{ToolCall, ToolResult};
use bosun_host::approval::AutoApprove;
use bosun_host::mcp_config::McpServerConfig;
use bosun_host::trace::{Trace, read_run};
use bosun_host::{Host, Session};
use bosun_launch::Launcher;
use bosun_mcp::client::{Server, model_name};
use bosun_mcp::pins::{Pin, PinStore, PinnedTool, identity};
use bosun_mcp::{HttpOptions, Served, attach, serve_http};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::{Dirs, host_of};

/// Serves `host` on a loopback port until the returned token is cancelled; the endpoint's URL.
async fn serve(host: Host, token: Option<&str>) -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let cancel = CancellationToken::new();
    let options = HttpOptions {
        token: token.map(str::to_owned),
        clients: Vec::new(),
        allowed_origins: Vec::new(),
        allowed_hosts: Vec::new(),
        limits: bosun_mcp::http::Limits::default(),
        cancel: cancel.clone(),
    };
    let served = Served::new(Arc::new(host), "serve --http").unwrap();
    tokio::spawn(serve_http(served, listener, options));
    (url, cancel)
}

fn url_config(url: &str) -> McpServerConfig {
    toml::from_str(&format!("url = \"{url}\"\n")).unwrap()
}

/// One in-process session of `host`: the client's side, and the server's task.
async fn session(
    host: Host,
) -> (
    rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tokio::task::JoinHandle<()>,
) {
    let served = Served::new(Arc::new(host), "serve --stdio").unwrap();
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(async move {
        if let Ok(running) = served.session().serve(tokio::io::split(server_io)).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(tokio::io::split(client_io)).await.unwrap();
    (client, server)
}

/// The text of a tool's answer, and whether it was an error.
async fn call_read_file(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
) -> (bool, String) {
    let arguments = json!({"path": "hello.txt"});
    let result = client
        .call_tool(
            CallToolRequestParams::new("read_file")
                .with_arguments(arguments.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    (
        result.is_error == Some(true),
        serde_json::to_string(&result).unwrap(),
    )
}

#[tokio::test]
async fn a_call_policy_denies_is_a_tool_error_saying_so() {
    let dirs = Dirs::new();
    std::fs::write(
        dirs.home.join("config.toml"),
        "[[policy.rules]]\naction = \"builtin.tool.read_file\"\ndecision = \"deny\"\n",
    )
    .unwrap();
    let (client, server) = session(dirs.host()).await;
    let (failed, text) = call_read_file(&client).await;
    assert!(failed, "{text}");
    assert!(text.contains("policy denies"), "{text}");
    assert!(!text.contains("hello from the served workspace"), "{text}");
    client.cancel().await.unwrap();
    let _ = server.await;
}

/// A client that declares no elicitation cannot be asked: a call policy asks about is refused
/// with the way to allow it, and never runs.
#[tokio::test]
async fn a_call_policy_asks_about_is_refused_when_the_client_cannot_be_asked() {
    let dirs = Dirs::new();
    std::fs::write(
        dirs.home.join("config.toml"),
        "[[policy.rules]]\naction = \"builtin.tool.read_file\"\ndecision = \"ask\"\n",
    )
    .unwrap();
    let (client, server) = session(dirs.host()).await;
    let (failed, text) = call_read_file(&client).await;
    assert!(failed, "{text}");
    assert!(
        text.contains("needs_approval") || text.contains("nobody can answer"),
        "{text}"
    );
    assert!(!text.contains("hello from the served workspace"), "{text}");
    client.cancel().await.unwrap();
    let _ = server.await;
}

#[tokio::test]
async fn a_session_lists_the_hosts_tools_and_calls_them_through_its_chokepoint() {
    let dirs = Dirs::new();
    let (client, server) = session(dirs.host()).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"read_file"), "{names:?}");

    let (failed, text) = call_read_file(&client).await;
    assert!(!failed, "{text}");
    assert!(text.contains("hello from the served workspace"), "{text}");

    // A tool the host does not have is a tool error, not a broken session.
    let missing = client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await;
    match missing {
        Ok(result) => assert_eq!(result.is_error, Some(true), "{result:?}"),
        Err(rmcp::ServiceError::McpError(_)) => {}
        Err(other) => panic!("the session broke: {other}"),
    }

    client.cancel().await.unwrap();
    let _ = server.await;

    // The session wrote a trace of its own, with the call in it.
    let runs: Vec<_> = std::fs::read_dir(dirs.home.join("runs"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let trace = serde_json::to_string(&read_run(&runs[0]).unwrap()).unwrap();
    assert!(trace.contains("read_file"), "{trace}");
    assert!(trace.contains("serve --stdio"), "{trace}");
}

#[tokio::test]
async fn bosuns_client_lists_a_served_host_and_runs_its_approved_tools() {
    let served_dirs = Dirs::new();
    let (url, cancel) = serve(served_dirs.host(), None).await;

    // Listing starts a session and says what each tool is.
    let client_dirs = Dirs::new();
    let server = Server::new(
        "remote",
        url_config(&url),
        &client_dirs.ws,
        &client_dirs.home,
        Arc::new(Launcher::unconfined()),
    );
    let listed = server.list().await.unwrap();
    server.shutdown().await;
    let read_file = listed
        .iter()
        .find(|t| t.name == "read_file")
        .expect("read_file is listed");
    assert_eq!(read_file.refused, None);

    // Nothing approved: attaching offers nothing and says how to review the server.
    std::fs::write(
        client_dirs.home.join("config.toml"),
        format!("[mcp.remote]\nurl = \"{url}\"\ntrusted = true\n"),
    )
    .unwrap();
    let warnings = attach(&client_dirs.host()).unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("bosun mcp trust remote")),
        "{warnings:?}"
    );

    // Approved: the tool is offered under its MCP name and runs on the served host.
    let trusted: McpServerConfig =
        toml::from_str(&format!("url = \"{url}\"\ntrusted = true\n")).unwrap();
    let mut pins = PinStore::default();
    pins.servers.insert(
        "remote".into(),
        Pin {
            identity: identity(&trusted),
            tools: BTreeMap::from([(
                "read_file".to_owned(),
                PinnedTool::approve(
                    &model_name("remote", "read_file"),
                    read_file.hash.clone(),
                    &read_file.raw,
                ),
            )]),
        },
    );
    pins.save(&client_dirs.home).unwrap();
    let host = host_of(&client_dirs.ws, &client_dirs.home);
    let warnings = attach(&host).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let name = model_name("remote", "read_file");
    assert!(host.tools().iter().any(|t| t.spec().name.as_str() == name));

    let chokepoint = host.chokepoint(Arc::new(AutoApprove)).unwrap();
    let trace = Trace::in_memory("run".into(), Arc::new(host.config().redactor()));
    let outcome = chokepoint
        .call(
            ToolCall {
                id: "c1".into(),
                name: name.clone(),
                input: json!({"path": "hello.txt"}),
            },
            &Arc::new(Session::new("s")),
            &trace,
            &CancellationToken::new(),
        )
        .await;
    match &outcome.result {
        ToolResult::Ok { output, .. } => {
            let text = output.to_string();
            assert!(text.contains("hello from the served workspace"), "{text}");
        }
        ToolResult::Err { error, .. } => panic!("{name} failed: {error:?}"),
    }
    for tool in host.tools() {
        tool.shutdown().await;
    }
    cancel.cancel();
}

#[tokio::test]
async fn a_served_host_with_a_token_refuses_a_client_without_it() {
    let dirs = Dirs::new();
    let (url, cancel) = serve(dirs.host(), Some("s3cret-token")).await;
    let client_dirs = Dirs::new();
    let server = Server::new(
        "remote",
        url_config(&url),
        &client_dirs.ws,
        &client_dirs.home,
        Arc::new(Launcher::unconfined()),
    );
    // The refusal reads as a server that wants a sign-in, with the command for it.
    let error = server.list().await.unwrap_err().to_string();
    assert!(error.contains("bosun mcp login remote"), "{error}");
    server.shutdown().await;
    cancel.cancel();
}

#[tokio::test]
async fn serving_beyond_loopback_without_a_token_is_refused() {
    let dirs = Dirs::new();
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let served = Served::new(Arc::new(dirs.host()), "serve --http").unwrap();
    let error = serve_http(served, listener, HttpOptions::default())
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("bearer token"), "{message}");
}

#[tokio::test]
async fn a_client_that_trickles_its_headers_or_idles_is_dropped_and_others_are_served() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dirs = Dirs::new();
    let (url, cancel) = serve(dirs.host(), None).await;
    let address = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    // Slowloris: headers begun and never finished; and a connection that never sends a byte.
    let mut trickling = tokio::net::TcpStream::connect(&address).await.unwrap();
    trickling
        .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\n").as_bytes())
        .await
        .unwrap();
    let mut idle = tokio::net::TcpStream::connect(&address).await.unwrap();
    for (what, stream) in [("trickling", &mut trickling), ("idle", &mut idle)] {
        let mut buffer = [0u8; 1024];
        let ended = tokio::time::timeout(
            bosun_mcp::http::HEADER_TIMEOUT * 3,
            stream.read(&mut buffer),
        )
        .await;
        assert!(
            matches!(ended, Ok(Ok(_)) | Ok(Err(_))),
            "the {what} connection was still held after three header timeouts"
        );
    }
    // A client that sends a whole request is still served.
    let client_dirs = Dirs::new();
    let server = Server::new(
        "remote",
        url_config(&url),
        &client_dirs.ws,
        &client_dirs.home,
        Arc::new(Launcher::unconfined()),
    );
    assert!(server.list().await.is_ok());
    server.shutdown().await;
    cancel.cancel();
}
