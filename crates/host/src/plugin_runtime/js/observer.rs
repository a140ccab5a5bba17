//! [`JsObserver`]: run events handed to the JavaScript plugins that observe them, off the
//! run's path.

use std::sync::Arc;

use serde_json::Value;

use crate::hooks::SessionLabels;
use crate::labels::Reader;
use crate::plugin_runtime::js::plugin::JsRuntime;
use crate::session::Session;

/// Events waiting for one plugin's observers; beyond this the newest are dropped and counted.
const OBSERVER_QUEUE: usize = 1024;

/// Delivers every event of a run to the plugins that registered `observeRunEvents` observers.
/// Each event raises the observing instance's label to the labels, at delivery, of the session
/// that recorded it (which are at least those it had when the event was recorded: they only
/// rise): the run's own, or a subagent's — which may hold more than its parent until it returns
/// ([`crate::trace::Observer::child_run`]).
///
/// The trace hands events over already redacted; each plugin gets them in order on a worker
/// thread of its own, through a bounded queue, so a slow or stuck observer never stalls the run
/// (Forge awaits observers inline). Its warnings (an observer threw) and the events a full queue
/// dropped are logged.
pub struct JsObserver {
    queues: Vec<(String, std::sync::mpsc::SyncSender<(String, Value)>)>,
    sessions: Arc<RunSessions>,
    dropped: std::sync::atomic::AtomicU64,
    warnings: Arc<std::sync::Mutex<Vec<String>>>,
}

/// Warnings kept for a person; more are dropped.
const MAX_OBSERVER_WARNINGS: usize = 100;

fn push_warning(warnings: &std::sync::Mutex<Vec<String>>, warning: String) {
    let mut warnings = warnings
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if warnings.len() < MAX_OBSERVER_WARNINGS {
        warnings.push(warning);
    }
}

/// The session of each run whose events an observer gets: the run it was made for, and the
/// subagents' runs it was told of, by run id.
struct RunSessions {
    run: Arc<Session>,
    /// Kept for as long as the observer: an event of a child that has returned may still be
    /// waiting in a queue (a run starts at most a few children, each bounded in number).
    children: std::sync::Mutex<std::collections::HashMap<String, Arc<dyn Reader>>>,
}

impl RunSessions {
    /// The labels now of the session that recorded an event of `run_id`; the run's own for an
    /// event of a run it was never told of.
    fn labels(&self, run_id: &str) -> SessionLabels {
        let child = self
            .children
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(run_id)
            .cloned();
        match child {
            Some(child) => child.labels(),
            None => self.run.labels(),
        }
    }
}

impl std::fmt::Debug for JsObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsObserver")
            .field("plugins", &self.queues.len())
            .finish_non_exhaustive()
    }
}

impl JsObserver {
    /// An observer of the runs of `session` for the runtimes with observers; `None` when no
    /// plugin has one.
    pub fn for_runtimes(runtimes: &[Arc<JsRuntime>], session: &Arc<Session>) -> Option<Arc<Self>> {
        let mut queues = Vec::new();
        let warnings: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        let sessions = Arc::new(RunSessions {
            run: Arc::clone(session),
            children: std::sync::Mutex::default(),
        });
        for runtime in runtimes.iter().filter(|r| r.descriptor.hooks.observe > 0) {
            let sink = Arc::clone(&warnings);
            let (sender, receiver) =
                std::sync::mpsc::sync_channel::<(String, Value)>(OBSERVER_QUEUE);
            let name = runtime.spec.local_name.clone();
            let runtime = Arc::clone(runtime);
            let sessions = Arc::clone(&sessions);
            let spawned = std::thread::Builder::new()
                .name(format!("observe-{}", runtime.spec.local_name))
                .spawn(move || {
                    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return;
                    };
                    // Ends when the observer (the sender) is dropped with the trace.
                    while let Ok((run_id, event)) = receiver.recv() {
                        let from = sessions.labels(&run_id);
                        match rt.block_on(runtime.observe(&event, &from)) {
                            Ok(found) => {
                                for warning in found {
                                    push_warning(&sink, warning);
                                }
                            }
                            Err(e) => push_warning(
                                &sink,
                                format!(
                                    "plugin `{}`: its observers failed: {}",
                                    runtime.spec.local_name, e.message
                                ),
                            ),
                        }
                    }
                });
            if spawned.is_ok() {
                queues.push((name, sender));
            }
        }
        (!queues.is_empty()).then(|| {
            Arc::new(Self {
                queues,
                sessions,
                dropped: std::sync::atomic::AtomicU64::new(0),
                warnings,
            })
        })
    }

    /// The observers' warnings so far (an observer threw, or failed), taken.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .warnings
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Events dropped because a plugin's queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl crate::trace::Observer for JsObserver {
    fn observe(&self, envelope: &bosun_core::Envelope) {
        // Plugins observe what the trace records; streamed text is not recorded.
        if envelope.event.is_live() {
            return;
        }
        let Ok(event) = serde_json::to_value(envelope) else {
            return;
        };
        for (_, queue) in &self.queues {
            if queue
                .try_send((envelope.run_id.clone(), event.clone()))
                .is_err()
            {
                self.dropped
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    fn child_run(&self, run_id: &str, session: Arc<dyn Reader>) {
        self.sessions
            .children
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(run_id.to_owned(), session);
    }
}
