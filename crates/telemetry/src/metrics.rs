//! Bosun's metrics, counted as the trace's events pass and read as a cumulative snapshot by the
//! exporter: tool calls by tool and decision, call duration, denials, approvals waited for,
//! tokens by model (`gen_ai.client.token.usage`), sandbox failures.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::signal::{
    Attribute, CounterPoint, HistogramPoint, Metric, MetricData, MetricsSnapshot, Value,
};

/// Seconds: the GenAI conventions' duration buckets.
const DURATION_BOUNDS: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// Tokens: the GenAI conventions' token buckets.
const TOKEN_BOUNDS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// A metric Bosun keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Counter {
    /// `bosun.tool.calls` {`gen_ai.tool.name`, `bosun.policy.decision`}.
    ToolCalls,
    /// `bosun.tool.denials` {`gen_ai.tool.name`, `bosun.policy.rule`}.
    Denials,
    /// `bosun.approvals` {`gen_ai.tool.name`, `bosun.approval.answer`}.
    Approvals,
    /// `bosun.sandbox.failures` {`gen_ai.tool.name`, `error.type`}.
    SandboxFailures,
}

/// A histogram Bosun keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Histogram {
    /// `bosun.tool.duration` (s) {`gen_ai.tool.name`, `error.type`?}.
    ToolDuration,
    /// `bosun.approval.wait` (s): how long a person took to answer.
    ApprovalWait,
    /// `gen_ai.client.token.usage` {`gen_ai.request.model`, `gen_ai.token.type`}.
    Tokens,
}

impl Counter {
    fn describe(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::ToolCalls => (
                "bosun.tool.calls",
                "Tool calls judged, by tool and decision",
                "{call}",
            ),
            Self::Denials => (
                "bosun.tool.denials",
                "Tool calls denied, by tool and rule",
                "{call}",
            ),
            Self::Approvals => (
                "bosun.approvals",
                "Approvals a person was asked for, by answer",
                "{approval}",
            ),
            Self::SandboxFailures => (
                "bosun.sandbox.failures",
                "Calls that failed in the sandbox: a plugin's trap or limit, a confined process that could not start",
                "{call}",
            ),
        }
    }
}

impl Histogram {
    fn describe(self) -> (&'static str, &'static str, &'static str, &'static [f64]) {
        match self {
            Self::ToolDuration => (
                "bosun.tool.duration",
                "Wall time of tool calls",
                "s",
                DURATION_BOUNDS,
            ),
            Self::ApprovalWait => (
                "bosun.approval.wait",
                "Time a call waited for a person's answer",
                "s",
                DURATION_BOUNDS,
            ),
            Self::Tokens => (
                "gen_ai.client.token.usage",
                "Tokens used, by model and type",
                "{token}",
                TOKEN_BOUNDS,
            ),
        }
    }
}

type Key = Vec<(String, String)>;

#[derive(Default)]
struct Buckets {
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    counts: Vec<u64>,
}

/// The process's metrics: cumulative since `start_ns`.
pub struct Metrics {
    start_ns: u64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    counters: BTreeMap<(Counter, Key), u64>,
    histograms: BTreeMap<(Histogram, Key), Buckets>,
    changed: bool,
}

fn key(attributes: &[(&str, &str)]) -> Key {
    attributes
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn to_attributes(key: &Key) -> Vec<Attribute> {
    key.iter()
        .map(|(k, v)| (k.clone(), Value::Str(v.clone())))
        .collect()
}

impl Metrics {
    /// Counting from `start_ns`.
    pub fn new(start_ns: u64) -> Self {
        Self {
            start_ns,
            state: Mutex::new(State::default()),
        }
    }

    /// Adds one to `counter` for this attribute set.
    pub fn add(&self, counter: Counter, attributes: &[(&str, &str)]) {
        if let Ok(mut state) = self.state.lock() {
            *state
                .counters
                .entry((counter, key(attributes)))
                .or_default() += 1;
            state.changed = true;
        }
    }

    /// Records `value` in `histogram` for this attribute set.
    pub fn record(&self, histogram: Histogram, value: f64, attributes: &[(&str, &str)]) {
        let bounds = histogram.describe().3;
        if let Ok(mut state) = self.state.lock() {
            let buckets = state
                .histograms
                .entry((histogram, key(attributes)))
                .or_default();
            if buckets.count == 0 {
                buckets.counts = vec![0; bounds.len() + 1];
                buckets.min = value;
                buckets.max = value;
            }
            buckets.count += 1;
            buckets.sum += value;
            buckets.min = buckets.min.min(value);
            buckets.max = buckets.max.max(value);
            let at = bounds
                .iter()
                .position(|b| value <= *b)
                .unwrap_or(bounds.len());
            if let Some(slot) = buckets.counts.get_mut(at) {
                *slot += 1;
            }
            state.changed = true;
        }
    }

    /// The totals as of `now_ns`; `None` when nothing was counted since the last snapshot
    /// (`force` takes one anyway, as the last export of a process does).
    pub fn snapshot(&self, now_ns: u64, force: bool) -> Option<MetricsSnapshot> {
        let mut state = self.state.lock().ok()?;
        if !state.changed && !force {
            return None;
        }
        state.changed = false;
        let mut metrics: Vec<Metric> = Vec::new();
        let mut counters: BTreeMap<Counter, Vec<CounterPoint>> = BTreeMap::new();
        for ((counter, key), value) in &state.counters {
            counters.entry(*counter).or_default().push(CounterPoint {
                attributes: to_attributes(key),
                value: *value,
            });
        }
        for (counter, points) in counters {
            let (name, description, unit) = counter.describe();
            metrics.push(Metric {
                name,
                description,
                unit,
                data: MetricData::Counter(points),
            });
        }
        let mut histograms: BTreeMap<Histogram, Vec<HistogramPoint>> = BTreeMap::new();
        for ((histogram, key), buckets) in &state.histograms {
            histograms
                .entry(*histogram)
                .or_default()
                .push(HistogramPoint {
                    attributes: to_attributes(key),
                    count: buckets.count,
                    sum: buckets.sum,
                    bucket_counts: buckets.counts.clone(),
                    min: buckets.min,
                    max: buckets.max,
                });
        }
        for (histogram, points) in histograms {
            let (name, description, unit, bounds) = histogram.describe();
            metrics.push(Metric {
                name,
                description,
                unit,
                data: MetricData::Histogram {
                    bounds: bounds.to_vec(),
                    points,
                },
            });
        }
        if metrics.is_empty() {
            return None;
        }
        Some(MetricsSnapshot {
            start_ns: self.start_ns,
            time_ns: now_ns.max(self.start_ns),
            metrics,
        })
    }
}
