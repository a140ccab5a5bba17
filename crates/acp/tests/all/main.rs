//! `bosun_acp::serve` driven by the `agent-client-protocol` crate's own client side over an
//! in-memory pipe, against the scripted model: the shapes of the messages an editor receives,
//! an unknown session, and a client that disappears mid-turn (the turn is cancelled and the
//! session stored).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::type_complexity,
    missing_docs
)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    SessionNotification, SessionUpdate, StopReason, TextContent,
};
use agent_client_protocol::{ByteStreams, Client, ErrorCode};
use bosun_agent::scripted::{Script, ScriptedModel, ScriptedServer, Step};
use pretty_assertions::assert_eq;
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
}

fn fixture(server: &ScriptedServer) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "default_model = \"scripted\"\n[models.scripted]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let ws = ws.canonicalize().unwrap();
    Fixture {
        _dir: dir,
        home,
        ws,
    }
}

/// Starts Bosun's agent on one end of a pipe; returns the client's transport.
fn agent(
    home: &Path,
) -> (
    ByteStreams<
        tokio_util::compat::Compat<tokio::io::WriteHalf<tokio::io::DuplexStream>>,
        tokio_util::compat::Compat<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    >,
    tokio::task::JoinHandle<Result<(), bosun_acp::AcpError>>,
) {
    let (client, agent) = tokio::io::duplex(1 << 20);
    let (agent_read, agent_write) = tokio::io::split(agent);
    let served = tokio::spawn(bosun_acp::serve(agent_read, agent_write, home.to_owned()));
    let (client_read, client_write) = tokio::io::split(client);
    (
        ByteStreams::new(client_write.compat_write(), client_read.compat()),
        served,
    )
}

fn text(prompt: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(prompt))]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_message_chunks_and_ends_its_turn() {
    let server = ScriptedModel::serve(Script::new([Step {
        reasoning: Some("Thinking it over.".to_owned()),
        text: Some("Hello from the scripted model.".to_owned()),
        ..Step::default()
    }]))
    .await
    .unwrap();
    let f = fixture(&server);
    let (transport, served) = agent(&f.home);
    let (updates, mut received) = mpsc::unbounded_channel();
    let ws = f.ws.clone();
    let stop = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let _ = updates.send(notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert!(init.agent_capabilities.load_session);
            assert_eq!(init.agent_info.unwrap().name, "bosun");
            let session = cx
                .send_request(NewSessionRequest::new(ws))
                .block_task()
                .await?;
            let modes = session.modes.unwrap();
            assert_eq!(&*modes.current_mode_id.0, "workspace-write");
            let done = cx
                .send_request(PromptRequest::new(session.session_id, text("Say hello.")))
                .block_task()
                .await?;
            Ok(done.stop_reason)
        })
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    served.await.unwrap().unwrap();
    let mut said = String::new();
    let mut thought = String::new();
    let mut commands = false;
    while let Ok(notification) = received.try_recv() {
        match notification.update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let ContentBlock::Text(t) = chunk.content {
                    said.push_str(&t.text);
                }
            }
            SessionUpdate::AgentThoughtChunk(chunk) => {
                if let ContentBlock::Text(t) = chunk.content {
                    thought.push_str(&t.text);
                }
            }
            SessionUpdate::AvailableCommandsUpdate(update) => {
                commands = update
                    .available_commands
                    .iter()
                    .any(|c| c.name == "compact");
            }
            _ => {}
        }
    }
    assert_eq!(said, "Hello from the scripted model.");
    assert!(thought.contains("Thinking it over."), "{thought}");
    assert!(commands, "available_commands_update names /compact");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_session_gets_an_error_naming_it() {
    let server = ScriptedModel::serve(Script::new([Step::text("unused")]))
        .await
        .unwrap();
    let f = fixture(&server);
    let (transport, served) = agent(&f.home);
    let error = Client
        .v1()
        .connect_with(transport, async move |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let answer = cx
                .send_request(PromptRequest::new("no-such-session", text("hi")))
                .block_task()
                .await;
            Ok(answer.expect_err("an unknown session is an error"))
        })
        .await
        .unwrap();
    assert_eq!(error.code, ErrorCode::RESOURCE_NOT_FOUND);
    assert!(
        error.message.contains("no session `no-such-session`"),
        "{}",
        error.message
    );
    served.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disappears_mid_turn_loses_no_session() {
    let server = ScriptedModel::serve(Script::new([Step {
        text: Some("Working on it".to_owned()),
        hang: true,
        ..Step::default()
    }]))
    .await
    .unwrap();
    let f = fixture(&server);
    let (transport, served) = agent(&f.home);
    let (updates, mut received) = mpsc::unbounded_channel();
    let ws = f.ws.clone();
    let session = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let _ = updates.send(notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(ws))
                .block_task()
                .await?;
            let id = session.session_id.clone();
            // The prompt is sent and never awaited: the editor goes away while the model is
            // still talking.
            cx.send_request(PromptRequest::new(id.clone(), text("Start.")))
                .detach();
            loop {
                let notification = received.recv().await.expect("updates");
                if matches!(notification.update, SessionUpdate::AgentMessageChunk(_)) {
                    break;
                }
            }
            Ok(id)
        })
        .await
        .unwrap();
    // The agent notices, cancels the turn, stores the session and ends.
    tokio::time::timeout(Duration::from_secs(30), served)
        .await
        .expect("the agent ends when the client goes")
        .unwrap()
        .ok();
    let stored =
        std::fs::read_to_string(f.home.join("sessions").join(format!("{}.json", session.0)))
            .expect("the session was stored");
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored["run_ids"].as_array().unwrap().len(), 1, "{stored:#}");
    assert_eq!(stored["messages"][0]["text"], "Start.");
}

/// The smallest valid PNG (one transparent pixel), base64 as an editor sends it.
const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAACklEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";

fn with_images(config: &Path, images: bool) {
    let text = std::fs::read_to_string(config).unwrap();
    std::fs::write(config, format!("{text}images = {images}\n")).unwrap();
}

/// Sends one prompt of `blocks` in a new session; returns whether `initialize` advertised
/// images and the prompt's answer.
async fn prompt_once(
    home: &Path,
    ws: PathBuf,
    blocks: Vec<ContentBlock>,
) -> (bool, Result<StopReason, agent_client_protocol::Error>) {
    let (transport, served) = agent(home);
    let answer = Client
        .v1()
        .connect_with(transport, async move |cx| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(ws))
                .block_task()
                .await?;
            let answer = cx
                .send_request(PromptRequest::new(session.session_id, blocks))
                .block_task()
                .await
                .map(|done| done.stop_reason);
            Ok((init.agent_capabilities.prompt_capabilities.image, answer))
        })
        .await
        .unwrap();
    served.await.unwrap().unwrap();
    answer
}

fn image_block(data: &str) -> ContentBlock {
    ContentBlock::Image(agent_client_protocol::v1::schema::ImageContent::new(
        data,
        "image/png",
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_in_the_prompt_reaches_a_model_that_takes_images() {
    let server = ScriptedModel::serve(Script::new([Step::text("A dot.")]))
        .await
        .unwrap();
    let f = fixture(&server);
    with_images(&f.home.join("config.toml"), true);
    let mut blocks = vec![image_block(PNG_BASE64)];
    blocks.extend(text("What is this?"));
    let (advertised, answer) = prompt_once(&f.home, f.ws.clone(), blocks).await;
    assert!(advertised, "initialize advertises the image capability");
    assert_eq!(answer.unwrap(), StopReason::EndTurn);
    let sent = server.requests();
    let user = sent[0]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        user["content"],
        serde_json::json!([
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_BASE64}")}},
            {"type": "text", "text": "What is this?"},
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_to_a_text_only_model_is_refused_naming_the_key() {
    let server = ScriptedModel::serve(Script::new([Step::text("never")]))
        .await
        .unwrap();
    let f = fixture(&server);
    let mut blocks = vec![image_block(PNG_BASE64)];
    blocks.extend(text("What is this?"));
    let (advertised, answer) = prompt_once(&f.home, f.ws.clone(), blocks).await;
    assert!(
        !advertised,
        "a text-only default model: no image capability"
    );
    let error = answer.expect_err("refused");
    assert!(
        error
            .message
            .contains("set `images = true` in [models.scripted]"),
        "{}",
        error.message
    );
    assert!(server.requests().is_empty(), "nothing reached the model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_that_is_not_one_is_refused_whatever_its_mime_type() {
    let server = ScriptedModel::serve(Script::new([Step::text("never")]))
        .await
        .unwrap();
    let f = fixture(&server);
    with_images(&f.home.join("config.toml"), true);
    // A shell script, base64, claimed to be a PNG.
    let script = "IyEvYmluL3NoCmVjaG8gaGkK";
    let (_, answer) = prompt_once(&f.home, f.ws.clone(), vec![image_block(script)]).await;
    let error = answer.expect_err("refused");
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(
        error
            .message
            .contains("is not a PNG, JPEG, GIF or WebP image"),
        "{}",
        error.message
    );
    assert!(server.requests().is_empty());
}

/// A client that sends garbage — a line that is not JSON, a request whose params have the wrong
/// shape, a method that does not exist — gets a JSON-RPC error for each request (invalid params,
/// method not found), and the connection serves the next request as if nothing happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_gets_clear_errors_and_the_connection_lives_on() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let server = ScriptedModel::serve(Script::new([Step::text("unused")]))
        .await
        .unwrap();
    let f = fixture(&server);
    let (client, agent) = tokio::io::duplex(1 << 20);
    let (agent_read, agent_write) = tokio::io::split(agent);
    let served = tokio::spawn(bosun_acp::serve(agent_read, agent_write, f.home.clone()));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let mut send = async |line: &str| {
        client_write.write_all(line.as_bytes()).await.unwrap();
        client_write.write_all(b"\n").await.unwrap();
    };
    send("this is not JSON").await;
    send(r#"{"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": 5, "prompt": "x"}}"#).await;
    send(r#"{"jsonrpc": "2.0", "id": 8, "method": "no/such/method", "params": {}}"#).await;
    send(
        r#"{"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"protocolVersion": 1}}"#,
    )
    .await;
    let mut answers = std::collections::BTreeMap::new();
    while answers.len() < 3 {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("the agent answers: so far {answers:?}"))
            .unwrap()
            .expect("the connection is open");
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = message["id"].as_u64() {
            answers.insert(id, message);
        }
    }
    let bad_params = &answers[&7]["error"];
    assert_eq!(bad_params["code"], -32602, "{bad_params}");
    assert_eq!(answers[&8]["error"]["code"], -32601, "{}", answers[&8]);
    assert_eq!(
        answers[&9]["result"]["agentInfo"]["name"], "bosun",
        "{}",
        answers[&9]
    );
    drop(client_write);
    drop(lines);
    tokio::time::timeout(Duration::from_secs(30), served)
        .await
        .expect("the agent ends when the client goes")
        .unwrap()
        .ok();
}

/// `session/load` with an id that would make a path (`../`, absolute, a NUL, 10,000
/// characters) and `session/new` with a cwd that is relative, missing, a file or holds a NUL:
/// each is an invalid-params error naming what is wrong, nothing is opened, and the connection
/// lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_session_ids_and_working_directories_are_refused_and_the_connection_lives_on() {
    let server = ScriptedModel::serve(Script::new([Step::text("unused")]))
        .await
        .unwrap();
    let f = fixture(&server);
    std::fs::write(f.ws.join("file.txt"), "not a folder").unwrap();
    let ws = f.ws.clone();
    let (transport, served) = agent(&f.home);
    let (answers, opened) = Client
        .v1()
        .connect_with(transport, async move |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let mut answers = Vec::new();
            let long = "a".repeat(10_000);
            for id in ["../../outside", "/etc/passwd", "abc\u{0}def", long.as_str()] {
                let answer = cx
                    .send_request(LoadSessionRequest::new(id.to_owned(), ws.clone()))
                    .block_task()
                    .await;
                answers.push((format!("id {id:.20}"), answer.map(|_| ())));
            }
            for cwd in [
                PathBuf::from("relative/dir"),
                ws.join("missing"),
                ws.join("file.txt"),
                ws.join("a\u{0}b"),
            ] {
                let answer = cx
                    .send_request(NewSessionRequest::new(cwd.clone()))
                    .block_task()
                    .await;
                answers.push((format!("cwd {}", cwd.display()), answer.map(|_| ())));
            }
            let opened = cx
                .send_request(NewSessionRequest::new(ws.clone()))
                .block_task()
                .await?;
            Ok((answers, opened.session_id))
        })
        .await
        .unwrap();
    for (what, answer) in answers {
        let error = answer.expect_err(&what);
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{what}: {error:?}");
        assert!(
            error.message.contains("not a session id") || error.message.contains("cwd"),
            "{what}: {}",
            error.message
        );
        assert!(error.message.len() < 1_000, "{what}: {}", error.message);
        assert!(!error.message.contains('\0'), "{what}: {}", error.message);
    }
    assert!(!opened.0.is_empty());
    // The agent may still be writing the new session's updates when the client goes: it ends
    // (never hangs or panics), with or without a broken pipe.
    tokio::time::timeout(Duration::from_secs(30), served)
        .await
        .expect("the agent ends when the client goes")
        .unwrap()
        .ok();
}

/// A resource link in a prompt (`file:///etc/shadow`, a link to a file of the workspace) is
/// named to the model as its URI and never read here: the model reads a file only through the
/// chokepoint, where policy and the workspace's bounds judge it.
#[test]
fn a_resource_link_is_named_never_read_outside_the_chokepoint() {
    use agent_client_protocol::v1::schema::ResourceLink;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "the-secret-bytes").unwrap();
    let uri = format!("file://{}", secret.display());
    let prompt = bosun_acp::prompt_content(&[
        ContentBlock::Text(TextContent::new("look at these")),
        ContentBlock::ResourceLink(ResourceLink::new("secret.txt", uri.clone())),
        ContentBlock::ResourceLink(ResourceLink::new("shadow", "file:///etc/shadow")),
    ])
    .unwrap();
    assert_eq!(
        prompt.text,
        format!("look at these\n\n@{uri}\n\n@file:///etc/shadow")
    );
    assert!(!prompt.text.contains("the-secret-bytes"));
}

/// Enforcement: `bosun_acp::serve` puts every transport behind the same wire as stdio's
/// (`wire::filtered`, `Outgoing`). A caller serving an editor over its own pipe, whose editor
/// stops reading while a turn sends megabytes of updates, would otherwise have them pile up in
/// the protocol crate's unbounded queue: past the bound the connection is closed and serving
/// ends though the editor keeps its side open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_own_transport_is_bounded_like_stdio() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let big = "x".repeat(1 << 20);
    let writes: Vec<bosun_agent::scripted::ScriptedCall> = (0..20)
        .map(|i| bosun_agent::scripted::ScriptedCall {
            name: "create_file".to_owned(),
            arguments: serde_json::json!({"path": format!("big{i}.txt"), "content": big}),
            id: None,
        })
        .collect();
    let server = ScriptedModel::serve(Script::new([
        Step {
            tool_calls: writes,
            ..Step::default()
        },
        Step::text("Refused, all of them."),
    ]))
    .await
    .unwrap();
    let f = fixture(&server);
    let config = f.home.join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("mode = \"read-only\"\n{text}")).unwrap();
    let (client, agent) = tokio::io::duplex(64 * 1024);
    let (agent_read, agent_write) = tokio::io::split(agent);
    let served = tokio::spawn(bosun_acp::serve(agent_read, agent_write, f.home.clone()));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let mut send = async |message: serde_json::Value| {
        client_write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    };
    send(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})).await;
    send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": f.ws, "mcpServers": []}})).await;
    let session = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the agent answers")
            .unwrap()
            .expect("the connection is open");
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 2 {
            break message["result"]["sessionId"].as_str().unwrap().to_owned();
        }
    };
    // From here on the editor reads nothing, and keeps its side of the pipe open.
    send(serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "Write them."}]}})).await;
    tokio::time::timeout(Duration::from_secs(120), served)
        .await
        .expect("serving an editor that reads nothing ends at the bound")
        .unwrap()
        .ok();
    drop((lines, client_write));
}
