//! A run's projection as the run's thread sees it: the trace hands each event over as the line
//! it wrote (or, for a live event or a saved run, as an envelope), and this only appends the
//! bytes to the run's feed; the exporter's thread parses and projects them
//! (`projector.rs`). What a call must know at once — its span's `traceparent` — comes from
//! [`crate::ids`], so nothing on the run's path waits for the projection. It never blocks and
//! never fails a run: a feed that is full drops (counted, one warning).

use std::sync::Arc;

use bosun_core::{Envelope, Event};

use crate::context::SpanContext;
use crate::export::Exporter;
use crate::ids;
use crate::projector::{Feed, Projector};

/// Bytes of trace lines one projection holds for the exporter's thread at most; beyond, events
/// are dropped and counted (the run trace keeps everything).
pub const MAX_PENDING_BYTES: usize = 8 * 1024 * 1024;
/// Pending bytes past which the exporter's thread is woken rather than left to its next round.
const WAKE_AT_BYTES: usize = 512 * 1024;

/// Projects the events of one run and its subagents into the exporter.
pub struct Projection {
    exporter: Arc<Exporter>,
    feed: Arc<Feed>,
    /// The caller's span (an incoming `traceparent`): the run's span becomes its child.
    remote_parent: Option<SpanContext>,
    /// Whether the model's streamed text is exported (the only live events projected).
    model_output: bool,
}

impl Projection {
    /// A projection into `exporter`, its run a child of `remote_parent` when a caller sent a
    /// `traceparent`.
    pub fn new(exporter: Arc<Exporter>, remote_parent: Option<SpanContext>) -> Self {
        let settings = exporter.settings();
        let content = settings.content;
        let projector = Projector::new(
            remote_parent,
            content,
            settings.classification,
            settings.logs.is_some(),
            exporter.shared_metrics(),
        );
        let feed = Arc::new(Feed::new(projector));
        exporter.register(feed.clone());
        Self {
            exporter,
            feed,
            remote_parent,
            model_output: content.model_output,
        }
    }

    /// Plugins' digests by local name, recorded as `bosun.plugin.digest` on their calls.
    #[must_use]
    pub fn plugin_digests(self, digests: impl IntoIterator<Item = (String, String)>) -> Self {
        self.feed.set_plugin_digests(digests.into_iter().collect());
        self
    }

    /// Fixes the root span of run `run_id` (whose trace is opening) now, so its calls'
    /// `traceparent` is known before its events are projected.
    pub fn open_run(&self, run_id: &str, parent_run_id: Option<&str>) {
        ids::run_root(run_id, parent_run_id, self.remote_parent);
    }

    /// Takes one recorded event as the trace wrote it: one JSON envelope, redacted, without
    /// its newline. Only the bytes are copied here.
    pub fn observe_line(&self, line: &[u8]) {
        let Ok(mut pending) = self.feed.pending.lock() else {
            return;
        };
        if pending.lines.len() + line.len() + 1 > MAX_PENDING_BYTES {
            pending.dropped += 1;
            drop(pending);
            self.exporter.lost(1);
            return;
        }
        let before = pending.lines.len();
        pending.lines.extend_from_slice(line);
        pending.lines.push(b'\n');
        let wake = before < WAKE_AT_BYTES && pending.lines.len() >= WAKE_AT_BYTES;
        drop(pending);
        if wake {
            self.exporter.wake();
        }
    }

    /// Takes one event as an envelope (a live event, a saved run's): written as its line.
    pub fn observe(&self, envelope: &Envelope) {
        // Of the live events only the model's text is projected, and only as content.
        if envelope.event.is_live()
            && !(self.model_output && matches!(envelope.event, Event::ModelText { .. }))
        {
            return;
        }
        match serde_json::to_vec(envelope) {
            Ok(line) => self.observe_line(&line),
            Err(_) => self.exporter.lost(1),
        }
    }

    /// Ends the spans still open (a trace read back without its `run.finished`) at `now_ns`,
    /// after the events taken so far.
    pub fn finish(&self, now_ns: u64) {
        if let Ok(mut pending) = self.feed.pending.lock() {
            pending.finish_at = Some(now_ns);
        }
        self.exporter.wake();
    }
}

impl Drop for Projection {
    fn drop(&mut self) {
        // The exporter's thread finishes what is open and forgets the feed.
        if let Ok(mut pending) = self.feed.pending.lock() {
            pending.closed = true;
        }
        self.exporter.wake();
    }
}
