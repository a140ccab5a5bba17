//! A subagent run through the library, against the scripted model on loopback: cancelling the
//! parent's run stops the child it started.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bosun_agent::run::{Agent, RunEnd, system_prompt};
use bosun_agent::scripted::{Script, ScriptedModel, Step};
use bosun_agent::subagent::{ChildModel, attach};
use bosun_core::Redactor;
use bosun_host::approval::AutoApprove;
use bosun_host::trace::{Trace, read_run};
use bosun_host::{Host, Session};
use bosun_models::{Connection, OpenAiChat};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_stops_its_child() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, ws) = (base.join("home"), base.join("ws"));
    std::fs::create_dir_all(home.join("agents")).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(
        home.join("agents/reader.md"),
        "---\nname: reader\ndescription: Reads.\ntools: read_file\n---\nRead.\n",
    )
    .unwrap();
    let server = Arc::new(
        ScriptedModel::serve(Script::new([
            Step::call("agent_reader", json!({"task": "read everything"})),
            // The child's first answer never ends.
            Step {
                hang: true,
                ..Step::text("reading")
            },
        ]))
        .await
        .unwrap(),
    );
    let host = Host::builder()
        .workspace_of(&ws)
        .home(&home)
        .without_plugins()
        .build()
        .unwrap();
    let provider = Arc::new(OpenAiChat::new(Connection::new(server.base_url())).unwrap());
    let model = ChildModel {
        provider: provider.clone(),
        model: "scripted".into(),
        context: Default::default(),
        sink: None,
    };
    let (prompt, _) = system_prompt(&home, &ws, true, &[]);
    let warnings = attach(&host, &model, &prompt, &|_| {
        Err(bosun_agent::assembly::TurnError::NoModel {
            config: "no other models".into(),
        })
    });
    assert!(warnings.is_empty(), "{warnings:?}");
    let chokepoint = Arc::new(host.chokepoint(Arc::new(AutoApprove)).unwrap());
    let agent = Agent::builder(provider, "scripted", chokepoint)
        .system_prompt(prompt)
        .build();
    let runs = home.join("runs");
    let trace = Trace::create(
        &runs,
        "parent".into(),
        None,
        Arc::new(Redactor::new(Vec::<(String, String)>::new())),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let session = Arc::new(Session::new("s"));
    let canceller = {
        let cancel = cancel.clone();
        let server = server.clone();
        tokio::spawn(async move {
            // Once the child has asked its model, cancel the parent.
            let deadline = Instant::now() + Duration::from_secs(30);
            while server.requests().len() < 2 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cancel.cancel();
        })
    };
    let started = Instant::now();
    let report = agent
        .run(Vec::new(), "Read it all", &session, &trace, &cancel)
        .await;
    canceller.await.unwrap();
    assert!(matches!(report.end, RunEnd::Cancelled), "{:?}", report.end);
    assert!(started.elapsed() < Duration::from_secs(30));
    // The child's own trace ended cancelled too.
    let child = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| read_run(&e.unwrap().path()).unwrap())
        .find(|run| run[0].parent_run_id.as_deref() == Some("parent"))
        .expect("the child's trace");
    let last = serde_json::to_value(&child.last().unwrap().event).unwrap();
    assert_eq!(last["type"], "run.finished", "{last}");
    assert_eq!(last["outcome"], "cancelled", "{last}");
}

/// An agent file is read by the same front-matter parser as a skill: a byte order mark and
/// CRLF line ends are accepted (they were refused), and the keys of a nested map are not taken
/// for top-level fields (an indented `model:` set the agent's model).
#[test]
fn an_agent_file_is_read_like_a_skill() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("reader.md"),
        "\u{feff}---\r\nname: reader\r\ndescription: Reads.\r\ntools:\r\n  - read_file\r\n  - search\r\nmetadata:\r\n  model: other\r\n---\r\nRead.\r\n",
    )
    .unwrap();
    let (specs, warnings) = bosun_agent::subagent::agent_files(tmp.path(), false);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(specs.len(), 1);
    let spec = &specs[0];
    assert_eq!(spec.name, "reader");
    assert_eq!(spec.description, "Reads.");
    assert_eq!(spec.tools, ["read_file", "search"]);
    assert_eq!(spec.model, None);
    assert_eq!(spec.instructions, "Read.");
}
