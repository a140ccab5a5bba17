//! The span contexts of runs and calls, known on the run's own thread before anything is
//! projected: a run's root span is fixed when its trace opens (or first asked for), and a call's
//! span id is derived from the run's root span and the call id with a keyed hash. So a call can
//! hand its `traceparent` to what it reaches (an MCP request's `_meta`, a process's
//! `TRACEPARENT`) while the projection of its events runs later, on the exporter's thread, and
//! both arrive at the same ids. It keeps ids only; it never holds a span or blocks.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::context::{SpanContext, SpanId, TraceId};

/// Runs and adopted callers kept at most; beyond, the oldest are forgotten (a run whose end was
/// never seen must not grow this forever).
const MAX_KEPT: usize = 4096;

static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Whether this process has started its exporter: ids are handed out only then.
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Marks the process as exporting (its exporter started).
pub(crate) fn set_exporting() {
    EXPORTING.store(true, Ordering::Relaxed);
}

#[derive(Default)]
struct Registry {
    /// Each open run's root span, with the order it was registered in.
    roots: HashMap<String, (u64, SpanContext)>,
    /// Callers' spans adopted by calls (`(run, call)`): a `bosun serve` request's `traceparent`.
    callers: HashMap<(String, String), (u64, SpanContext)>,
    next: u64,
}

impl Registry {
    fn stamp(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

fn trim<K: Clone + Eq + std::hash::Hash>(map: &mut HashMap<K, (u64, SpanContext)>) {
    if map.len() < MAX_KEPT {
        return;
    }
    // Forget the older half at once, so trimming is rare.
    let mut stamps: Vec<u64> = map.values().map(|(stamp, _)| *stamp).collect();
    stamps.sort_unstable();
    let cut = stamps[stamps.len() / 2];
    map.retain(|_, (stamp, _)| *stamp > cut);
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// The key of the hash that derives calls' span ids: random per process, so the ids say
/// nothing about the calls to whoever sees them.
fn key() -> (u64, u64) {
    static KEY: OnceLock<(u64, u64)> = OnceLock::new();
    *KEY.get_or_init(|| (fastrand::u64(..), fastrand::u64(..)))
}

/// The root span of run `run_id`, registered on first use: in the trace of its parent run
/// (a subagent's) or of `caller` (a remote caller's span), else a new trace.
pub fn run_root(
    run_id: &str,
    parent_run_id: Option<&str>,
    caller: Option<SpanContext>,
) -> SpanContext {
    let Ok(mut registry) = registry().lock() else {
        // A poisoned registry: ids that join nothing, never a failed run.
        return SpanContext {
            trace_id: TraceId::random(),
            span_id: SpanId::random(),
            sampled: true,
        };
    };
    root_in(&mut registry, run_id, parent_run_id, caller)
}

fn root_in(
    registry: &mut Registry,
    run_id: &str,
    parent_run_id: Option<&str>,
    caller: Option<SpanContext>,
) -> SpanContext {
    if let Some((_, root)) = registry.roots.get(run_id) {
        return *root;
    }
    let trace_id = match parent_run_id {
        Some(parent) => root_in(registry, parent, None, None).trace_id,
        None => caller.map_or_else(TraceId::random, |c| c.trace_id),
    };
    let root = SpanContext {
        trace_id,
        span_id: SpanId::random(),
        sampled: true,
    };
    trim(&mut registry.roots);
    let stamp = registry.stamp();
    registry.roots.insert(run_id.to_owned(), (stamp, root));
    root
}

/// Forgets run `run_id` and the callers its calls adopted (its spans have ended).
pub(crate) fn forget_run(run_id: &str) {
    if let Ok(mut registry) = registry().lock() {
        registry.roots.remove(run_id);
        registry.callers.retain(|(run, _), _| run != run_id);
    }
}

/// Forgets the caller call `call_id` of run `run_id` adopted (its span has ended).
pub(crate) fn forget_call(run_id: &str, call_id: &str) {
    if let Ok(mut registry) = registry().lock()
        && !registry.callers.is_empty()
    {
        registry
            .callers
            .remove(&(run_id.to_owned(), call_id.to_owned()));
    }
}

/// The span id of call `call_id` in the run whose root span is `root`: a keyed hash of both,
/// never zero.
pub fn call_span_id(root: &SpanContext, call_id: &str) -> SpanId {
    let (k0, k1) = key();
    let mut hasher = DefaultHasher::new();
    hasher.write_u64(k0);
    hasher.write(&root.trace_id.0);
    hasher.write(&root.span_id.0);
    hasher.write_u64(k1);
    hasher.write(call_id.as_bytes());
    let id = hasher.finish();
    SpanId(if id == 0 { 1 } else { id }.to_be_bytes())
}

/// The caller's span call `call_id` of run `run_id` adopted, if any.
pub(crate) fn caller_of(run_id: &str, call_id: &str) -> Option<SpanContext> {
    let registry = registry().lock().ok()?;
    if registry.callers.is_empty() {
        return None;
    }
    registry
        .callers
        .get(&(run_id.to_owned(), call_id.to_owned()))
        .map(|(_, context)| *context)
}

/// The span of call `call_id` in the run whose root span is `root`: in the caller's trace when
/// the call adopted one.
pub(crate) fn call_context(
    root: &SpanContext,
    caller: Option<&SpanContext>,
    call_id: &str,
) -> SpanContext {
    SpanContext {
        trace_id: caller.map_or(root.trace_id, |c| c.trace_id),
        span_id: call_span_id(root, call_id),
        sampled: true,
    }
}

/// Makes the span of call `call_id` of run `run_id` (recorded next) a child of the caller's
/// span `traceparent` (an MCP request's `_meta.traceparent` or HTTP header), in the caller's
/// trace. A malformed header is ignored; nothing is kept when this process exports nothing.
pub fn adopt_parent(run_id: &str, call_id: &str, traceparent: &str) {
    if !exporting() {
        return;
    }
    if let (Some(context), Ok(mut registry)) = (
        SpanContext::from_traceparent(traceparent),
        registry().lock(),
    ) {
        trim(&mut registry.callers);
        let stamp = registry.stamp();
        registry
            .callers
            .insert((run_id.to_owned(), call_id.to_owned()), (stamp, context));
    }
}

/// The `traceparent` of call `call_id` of run `run_id` (the run's own span when `call_id` is
/// empty): what Bosun hands to the MCP server or process the call reaches, so their spans join
/// the run's trace. `None` when this process exports nothing.
pub fn traceparent(run_id: &str, parent_run_id: Option<&str>, call_id: &str) -> Option<String> {
    if !exporting() {
        return None;
    }
    let root = run_root(run_id, parent_run_id, None);
    if call_id.is_empty() {
        return Some(root.traceparent());
    }
    let caller = caller_of(run_id, call_id);
    Some(call_context(&root, caller.as_ref(), call_id).traceparent())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subagent_shares_its_parents_trace_and_calls_get_stable_distinct_ids() {
        let parent = run_root("ids-parent", None, None);
        let child = run_root("ids-child", Some("ids-parent"), None);
        assert_eq!(child.trace_id, parent.trace_id);
        assert_ne!(child.span_id, parent.span_id);
        assert_eq!(run_root("ids-parent", None, None), parent);
        let a = call_span_id(&parent, "c1");
        assert_eq!(call_span_id(&parent, "c1"), a);
        assert_ne!(call_span_id(&parent, "c2"), a);
        assert_ne!(call_span_id(&child, "c1"), a);
        let caller = SpanContext::from_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .unwrap();
        let remote = run_root("ids-served", None, Some(caller));
        assert_eq!(remote.trace_id, caller.trace_id);
        forget_run("ids-parent");
        forget_run("ids-child");
        forget_run("ids-served");
        assert_ne!(run_root("ids-parent", None, None), parent);
        forget_run("ids-parent");
    }
}
