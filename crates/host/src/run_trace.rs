//! Starting a run's trace: the one place where a run — a model's turn, a subagent, `bosun tools
//! call`, an MCP client's session — gets its trace file, its watchers and its `run.started`.
//! It records and never judges: what a run does is recorded by the chokepoint and the run loop.

use std::path::PathBuf;
use std::sync::Arc;

use bosun_core::{Classification, Event, Redactor};

use crate::chokepoint::Chokepoint;
use crate::config::LoadedConfig;
use crate::trace::{self, Observer, Trace, TraceError};

/// How a run's trace is opened: where it is written (if anywhere), whose child the run is, its
/// redaction and who watches its events.
#[must_use]
pub struct TraceBuilder {
    run_id: String,
    parent_run_id: Option<String>,
    runs_dir: Option<PathBuf>,
    redactor: Arc<Redactor>,
    observers: Vec<Arc<dyn Observer>>,
}

impl TraceBuilder {
    /// The trace of run `run_id`, in memory until [`TraceBuilder::runs_dir`] names a directory.
    pub fn new(run_id: impl Into<String>, redactor: Arc<Redactor>) -> Self {
        Self {
            run_id: run_id.into(),
            parent_run_id: None,
            runs_dir: None,
            redactor,
            observers: Vec::new(),
        }
    }

    /// A new run's trace as `config` wants it: a fresh run id, written to
    /// `$BOSUN_HOME/runs` with the configured redaction, exported when `[telemetry]` says so.
    pub fn for_config(config: &LoadedConfig) -> Self {
        Self::new(trace::new_run_id(), Arc::new(config.redactor()))
            .runs_dir(config.runs_dir())
            .telemetry(config, None)
    }

    /// Exports the run as `config`'s `[telemetry]` says (nothing when it is off); its span is
    /// a child of `remote_parent` when a caller sent a `traceparent`.
    pub fn telemetry(
        self,
        config: &LoadedConfig,
        remote_parent: Option<bosun_telemetry::SpanContext>,
    ) -> Self {
        match crate::telemetry::observer(config, &self.run_id, remote_parent) {
            Some(observer) => self.observe(observer),
            None => self,
        }
    }

    /// Writes the trace to `<dir>/<run_id>.jsonl`.
    pub fn runs_dir(mut self, dir: PathBuf) -> Self {
        self.runs_dir = Some(dir);
        self
    }

    /// Marks the run as started by run `parent` (a subagent's).
    pub fn parent(mut self, parent: String) -> Self {
        self.parent_run_id = Some(parent);
        self
    }

    /// Adds a watcher of the run's events, recorded and live.
    pub fn observe(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Opens the trace: its file when a directory was named, else in memory.
    pub fn open(self) -> Result<Trace, TraceError> {
        let trace = match &self.runs_dir {
            Some(dir) => Trace::create(dir, self.run_id, self.parent_run_id, self.redactor)?,
            None => Trace::in_memory_of(self.run_id, self.parent_run_id, self.redactor),
        };
        Ok(self
            .observers
            .into_iter()
            .fold(trace, |trace, observer| trace.observe(observer)))
    }

    /// Opens the trace, in memory when its file cannot be created; says whether it is written.
    pub fn open_or_in_memory(self) -> (Trace, bool) {
        let persisted = self.runs_dir.is_some();
        let fallback = (
            self.run_id.clone(),
            self.parent_run_id.clone(),
            self.redactor.clone(),
        );
        let observers = self.observers.clone();
        match self.open() {
            Ok(trace) => (trace, persisted),
            Err(_) => {
                let trace = Trace::in_memory_of(fallback.0, fallback.1, fallback.2);
                let trace = observers
                    .into_iter()
                    .fold(trace, |trace, observer| trace.observe(observer));
                (trace, false)
            }
        }
    }

    /// Opens the trace and records `run.started` for a run of `command` over `chokepoint`
    /// (a run without a model loop: a single call, an MCP client's session) in a session at
    /// `level`.
    pub fn start(
        self,
        chokepoint: &Chokepoint,
        command: &str,
        level: Classification,
    ) -> Result<Trace, TraceError> {
        let trace = self.open()?;
        trace.record(run_started(chokepoint, command, level));
        Ok(trace)
    }
}

/// The `run.started` of a run of `command` over `chokepoint`: where it runs, in which mode,
/// what the sandbox enforces, and the level its session holds already (`Session::taint`: a
/// conversation's later turn, a subagent's inherited level), which every event of the run
/// carries at least.
pub fn run_started(chokepoint: &Chokepoint, command: &str, level: Classification) -> Event {
    Event::RunStarted {
        command: command.to_owned(),
        workspace: chokepoint.workspace().root().display().to_string(),
        mode: chokepoint.policy().mode().to_string(),
        sandbox: chokepoint.launcher().status().summary(),
        level,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use bosun_core::{Envelope, Event, Redactor};

    use super::TraceBuilder;
    use crate::trace::Observer;

    struct Parents(Mutex<Vec<Option<String>>>);

    impl Observer for Parents {
        fn observe(&self, envelope: &Envelope) {
            self.0.lock().unwrap().push(envelope.parent_run_id.clone());
        }
    }

    /// A subagent's run kept in memory (no runs directory: an embedding, a server without one)
    /// names its parent like a written one, so the exporter puts it in the parent's trace
    /// instead of starting a new one.
    #[test]
    fn a_child_run_names_its_parent_in_memory_as_on_disk() {
        let tmp = tempfile::tempdir().unwrap();
        for dir in [None, Some(tmp.path().to_owned())] {
            let seen = Arc::new(Parents(Mutex::new(Vec::new())));
            let mut builder = TraceBuilder::new("child-1", Arc::new(Redactor::default()))
                .parent("parent-0".to_owned())
                .observe(seen.clone());
            if let Some(dir) = &dir {
                builder = builder.runs_dir(dir.clone());
            }
            let (trace, _) = builder.open_or_in_memory();
            trace.record(Event::BudgetExhausted {
                budget: bosun_core::Budget::ToolCalls,
                limit: 1,
            });
            assert_eq!(
                *seen.0.lock().unwrap(),
                vec![Some("parent-0".to_owned())],
                "{dir:?}"
            );
        }
    }
}
