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
