//! A turn built and run through the library, as `bosun run` and the terminal UI build theirs:
//! the conversation chooses its model from the config, the builder assembles the host, prompt
//! and trace, and the finished turn is stored so the next one resumes it.

use std::sync::Arc;

use bosun_agent::assembly::TurnError;
use bosun_agent::conversation::Conversation;
use bosun_agent::run::RunEnd;
use bosun_agent::scripted::{Script, ScriptedModel, Step};
use bosun_agent::turn::TurnBuilder;
use bosun_core::Event;
use bosun_host::Workspace;
use bosun_host::approval::AutoApprove;
use bosun_host::config::LoadedConfig;
use bosun_host::trace::read_run;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_built_turn_runs_records_its_start_and_stores_the_conversation() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, ws) = (base.join("home"), base.join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let server = ScriptedModel::serve(Script::new([Step::text("hello")]))
        .await
        .unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[models.scripted]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let workspace = Arc::new(Workspace::discover(&ws).unwrap());
    let config = Arc::new(LoadedConfig::load(&home, &workspace).unwrap());

    // The only model configured is the one chosen.
    let mut conversation = Conversation::open(&config, workspace.root(), None, None).unwrap();
    assert_eq!(conversation.stored.model, "scripted");
    let turn = TurnBuilder::new(workspace.clone(), config.clone())
        .broker(Arc::new(AutoApprove))
        .command("library test")
        .build(&conversation, "say hello")
        .unwrap();
    let done = turn
        .run(&mut conversation, "say hello", &CancellationToken::new())
        .await;
    assert_eq!(done.report.end, RunEnd::Completed);
    assert_eq!(done.report.text, "hello");
    assert!(done.saved && !done.discarded, "{:?}", done.warnings);
    assert_eq!(conversation.stored.run_ids, vec![turn.run_id.clone()]);

    let events = read_run(&home.join("runs").join(format!("{}.jsonl", turn.run_id))).unwrap();
    match &events[0].event {
        Event::RunStarted { command, .. } => assert_eq!(command, "library test"),
        other => panic!("the trace starts with {other:?}"),
    }

    // `last` resumes it, with the conversation so far.
    let resumed = Conversation::open(&config, workspace.root(), Some("last"), None).unwrap();
    assert_eq!(resumed.stored.id, conversation.stored.id);
    assert_eq!(resumed.stored.messages.len(), 2);

    // A model that is not configured fails before anything runs.
    let missing = Conversation::open(&config, workspace.root(), None, Some("absent"));
    assert!(matches!(missing, Err(TurnError::Model { .. })));
}

/// The smallest valid PNG: one transparent pixel.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];
const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAACklEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_image_is_sent_kept_by_digest_and_never_traced() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, ws) = (base.join("home"), base.join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let server = ScriptedModel::serve(Script::new([
        Step::text("a dot"),
        Step::text("still a dot"),
        Step::text("never"),
    ]))
    .await
    .unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "default_model = \"seeing\"\n\
             [models.seeing]\nprovider = \"openai-chat\"\nbase_url = \"{url}\"\nmodel = \"bosun-scripted\"\nimages = true\n\
             [models.blind]\nprovider = \"openai-chat\"\nbase_url = \"{url}\"\nmodel = \"bosun-scripted\"\n",
            url = server.base_url()
        ),
    )
    .unwrap();
    let workspace = Arc::new(Workspace::discover(&ws).unwrap());
    let config = Arc::new(LoadedConfig::load(&home, &workspace).unwrap());
    let image = bosun_models::Image::from_bytes("dot.png", PNG.to_vec()).unwrap();

    let mut conversation = Conversation::open(&config, workspace.root(), None, None).unwrap();
    let turn = TurnBuilder::new(workspace.clone(), config.clone())
        .broker(Arc::new(AutoApprove))
        .images(vec![image.clone()])
        .build(&conversation, "what is this?")
        .unwrap();
    let done = turn
        .run(
            &mut conversation,
            "what is this?",
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(done.report.end, RunEnd::Completed, "{:?}", done.warnings);
    let sent = &server.requests()[0]["messages"];
    let user = sent.as_array().unwrap().last().unwrap();
    assert_eq!(
        user["content"][0]["image_url"]["url"],
        format!("data:image/png;base64,{PNG_BASE64}")
    );

    // The trace names the image and never holds its bytes.
    let trace_file = home.join("runs").join(format!("{}.jsonl", turn.run_id));
    let trace_text = std::fs::read_to_string(&trace_file).unwrap();
    assert!(
        !trace_text.contains(&PNG_BASE64[..24]),
        "bytes in the trace"
    );
    let events = read_run(&trace_file).unwrap();
    assert!(events.iter().any(|e| e.event
        == Event::InputImage {
            sha256: image.sha256.clone(),
            media_type: "image/png".into(),
            bytes: PNG.len() as u64,
        }));

    // The session file holds the reference; the bytes are beside it, once.
    let session_file = home
        .join("sessions")
        .join(format!("{}.json", conversation.stored.id));
    let stored = std::fs::read_to_string(&session_file).unwrap();
    assert!(!stored.contains(&PNG_BASE64[..24]));
    let kept = home
        .join("sessions")
        .join(&conversation.stored.id)
        .join("images")
        .join(&image.sha256);
    assert_eq!(std::fs::read(&kept).unwrap(), PNG);

    // Resumed, the next turn sends the earlier image again, from the stored bytes.
    let mut resumed = Conversation::open(&config, workspace.root(), Some("last"), None).unwrap();
    let turn = TurnBuilder::new(workspace.clone(), config.clone())
        .build(&resumed, "and now?")
        .unwrap();
    let done = turn
        .run(&mut resumed, "and now?", &CancellationToken::new())
        .await;
    assert_eq!(done.report.end, RunEnd::Completed);
    let sent = &server.requests()[1]["messages"];
    assert_eq!(
        sent[1]["content"][0]["image_url"]["url"],
        format!("data:image/png;base64,{PNG_BASE64}")
    );

    // A model that takes no images is refused the new image before anything runs, and is told
    // of the earlier one in words.
    let blind = Conversation::open(&config, workspace.root(), Some("last"), Some("blind")).unwrap();
    let refused = TurnBuilder::new(workspace.clone(), config.clone())
        .images(vec![image.clone()])
        .build(&blind, "look");
    let Err(error) = refused else {
        panic!("an image to a text-only model was accepted")
    };
    assert!(matches!(error, TurnError::ImagesNotTaken { .. }));
    assert!(
        error
            .to_string()
            .contains("set `images = true` in [models.blind]"),
        "{error}"
    );
    let mut blind = blind;
    let turn = TurnBuilder::new(workspace.clone(), config.clone())
        .build(&blind, "text only")
        .unwrap();
    let done = turn
        .run(&mut blind, "text only", &CancellationToken::new())
        .await;
    assert_eq!(done.report.end, RunEnd::Completed, "{:?}", done.report.end);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let earlier = &requests[2]["messages"][1]["content"];
    assert!(
        earlier
            .as_str()
            .is_some_and(|t| t.contains("this model takes no images")),
        "{earlier}"
    );
}
