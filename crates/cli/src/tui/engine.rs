//! Where the agent runs for the terminal UI: a tokio runtime of its own, on which each turn is
//! a task that builds the turn exactly as `bosun run` does ([`bosun_agent::turn::TurnBuilder`]), runs
//! it, stores the session, and sends back everything that happened as [`AppEvent`]s. Approvals
//! travel the same channel ([`ChannelBroker`]). The UI thread never waits on this side.

use std::sync::Arc;
use std::sync::mpsc::Sender;

use anyhow::Result;
use bosun_agent::conversation::Conversation;
use bosun_core::Envelope;
use bosun_host::approval::ChannelBroker;
use bosun_host::permission::PermissionMode;
use bosun_host::trace::Observer;
use tokio_util::sync::CancellationToken;

use super::events::{AppEvent, CommandEnd, CompactEnd, PersonCommand, TurnEnd};
use crate::env::Env;

/// What the trace says started a run from here.
const COMMAND: &str = "interactive";

/// Runs turns off the UI thread.
pub(crate) struct Engine {
    runtime: tokio::runtime::Runtime,
    events: Sender<AppEvent>,
}

impl Engine {
    /// An engine whose turns report on `events`.
    pub(crate) fn new(events: Sender<AppEvent>) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("bosun-agent")
            .enable_all()
            .build()?;
        Ok(Self { runtime, events })
    }

    /// The session's end for the plugins' `SessionEnd` hooks (the person left): what failed.
    pub(crate) fn end_session(&self, open: &Conversation) -> Vec<String> {
        self.runtime.block_on(open.end("prompt_input_exit"))
    }

    /// Starts a turn: `task` after the conversation of `open`, which comes back in
    /// [`AppEvent::TurnEnded`] with the session stored. Cancelling the returned token cancels
    /// the run as Ctrl-C does in `bosun run`.
    pub(crate) fn start(
        &self,
        env: Arc<Env>,
        open: Conversation,
        task: String,
        images: Vec<bosun_models::Image>,
        mode: PermissionMode,
    ) -> CancellationToken {
        let cancel = CancellationToken::new();
        let events = self.events.clone();
        let token = cancel.clone();
        self.runtime.spawn(async move {
            let end = turn(&env, open, &task, images, mode, &events, &token).await;
            let _ = events.send(AppEvent::TurnEnded(Box::new(end)));
        });
        cancel
    }

    /// Starts a `/compact` of `open` by `model` (the session's model now), which comes back in
    /// [`AppEvent::Compacted`].
    pub(crate) fn compact(
        &self,
        env: Arc<Env>,
        mut open: Conversation,
        model: String,
    ) -> CancellationToken {
        let cancel = CancellationToken::new();
        let events = self.events.clone();
        let token = cancel.clone();
        self.runtime.spawn(async move {
            let result =
                bosun_agent::turn::compact_conversation(&env.config, &mut open, &model, &token)
                    .await
                    .map_err(|e| format!("{:#}", anyhow::Error::from(e)));
            let _ = events.send(AppEvent::Compacted(Box::new(CompactEnd { open, result })));
        });
        cancel
    }
}

impl Engine {
    /// Runs `job` on a thread of its own (it may block: a registry's catalog over the network)
    /// and sends the event it makes, so the UI thread never waits on it.
    pub(crate) fn off_ui_thread(&self, job: impl FnOnce() -> AppEvent + Send + 'static) {
        let events = self.events.clone();
        let spawned = std::thread::Builder::new()
            .name("bosun-ui-job".to_owned())
            .spawn(move || {
                let _ = events.send(job());
            });
        if let Err(e) = spawned {
            let _ = self
                .events
                .send(AppEvent::Notice(format!("could not start the work: {e}")));
        }
    }
}

impl Engine {
    /// Runs a command the person typed (`!cmd`, the `git diff` of `/review`) as one call of
    /// `run_command` through the chokepoint, with the session's grants: the configured policy
    /// judges it (plan mode restrains the model, not the person), the sandbox confines it, its
    /// output streams into the transcript and the trace records it. Comes back in
    /// [`AppEvent::CommandEnded`] with the session.
    pub(crate) fn person_command(
        &self,
        env: Arc<Env>,
        open: Conversation,
        command: PersonCommand,
    ) -> CancellationToken {
        let cancel = CancellationToken::new();
        let events = self.events.clone();
        let token = cancel.clone();
        self.runtime.spawn(async move {
            let result = person_command(&env, &open, &command, &events, &token).await;
            let _ = events.send(AppEvent::CommandEnded(Box::new(CommandEnd {
                open,
                command,
                result,
            })));
        });
        cancel
    }
}

async fn person_command(
    env: &Env,
    open: &Conversation,
    command: &PersonCommand,
    events: &Sender<AppEvent>,
    cancel: &CancellationToken,
) -> Result<bosun_core::ToolResult, String> {
    let approvals = events.clone();
    let broker = ChannelBroker::new(cancel.clone(), move |pending| {
        let _ = approvals.send(AppEvent::Approval(pending));
    });
    let notices = events.clone();
    let host = env
        .build_host(Arc::new(move |notice: &str| {
            let _ = notices.send(AppEvent::Notice(notice.to_owned()));
        }))
        .map_err(|e| format!("{e:#}"))?;
    let outcome = async {
        let chokepoint = host
            .chokepoint_reviewed(
                Arc::new(broker),
                bosun_agent::assembly::reviewer(&env.config).map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
        let trace = bosun_host::TraceBuilder::for_config(&env.config)
            .observe(Arc::new(Forward(events.clone())))
            .start(
                &chokepoint,
                &format!("{COMMAND} {}", command.label()),
                open.grants.taint(),
            )
            .map_err(|e| e.to_string())?;
        let call = bosun_core::ToolCall {
            id: "person_1".to_owned(),
            name: command.tool().to_owned(),
            input: command.input(),
        };
        let outcome = chokepoint.call(call, &open.grants, &trace, cancel).await;
        trace.record(bosun_core::Event::RunFinished {
            outcome: crate::commands::run_outcome(&outcome.result),
        });
        trace.finish().map_err(|e| e.to_string())?;
        Ok::<_, String>(outcome.result)
    }
    .await;
    // Nothing the call started outlives it.
    host.shutdown().await;
    outcome
}

async fn turn(
    env: &Env,
    mut open: Conversation,
    task: &str,
    images: Vec<bosun_models::Image>,
    mode: PermissionMode,
    events: &Sender<AppEvent>,
    cancel: &CancellationToken,
) -> TurnEnd {
    let forward = Arc::new(Forward(events.clone()));
    let approvals = events.clone();
    let broker = ChannelBroker::new(cancel.clone(), move |pending| {
        // A UI that is gone drops the request, which the broker reads as nobody to ask.
        let _ = approvals.send(AppEvent::Approval(pending));
    });
    let notices = events.clone();
    let prepared = env
        .turn()
        .broker(Arc::new(broker))
        .observe(forward)
        .on_js_engine_compile(Arc::new(move |notice: &str| {
            let _ = notices.send(AppEvent::Notice(notice.to_owned()));
        }))
        .command(COMMAND)
        .mode(mode)
        .images(images)
        .build(&open, task);
    let turn = match prepared {
        Ok(turn) => turn,
        Err(e) => {
            return TurnEnd {
                open,
                run_id: None,
                result: Err(format!("{:#}", anyhow::Error::from(e))),
            };
        }
    };
    if !turn.warnings.is_empty() {
        let _ = events.send(AppEvent::Warnings(turn.warnings.clone()));
    }
    let done = turn.run(&mut open, task, cancel).await;
    TurnEnd {
        open,
        run_id: Some(turn.run_id.clone()),
        result: Ok(done),
    }
}

/// Sends what the run does to the UI: every event, recorded or live (already redacted).
struct Forward(Sender<AppEvent>);

impl Observer for Forward {
    fn observe(&self, envelope: &Envelope) {
        let _ = self.0.send(AppEvent::Trace(Box::new(envelope.clone())));
    }
}
