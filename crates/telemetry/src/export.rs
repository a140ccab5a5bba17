//! The exporter: one thread that projects the runs' events (each run's feed of trace lines,
//! taken every [`FEED_INTERVAL`]), batches spans and log records, snapshots the metrics, and
//! POSTs them over OTLP/HTTP. A run only appends bytes to its feed or `try_send`s: a full feed
//! or queue drops (counted, one warning), a collector that is down, slow or answering 500 costs
//! one warning per signal and never an error of the run. A process's exit waits a bounded time
//! to flush.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::config::{Endpoint, Settings, Signal};
use crate::ids;
use crate::metrics::Metrics;
use crate::otlp::{self, Origin};
use crate::projector::{Feed, Out};
use crate::signal::{LogRecord, Span};

/// Where the exporter's warnings go (a person reads them once).
pub type Warn = Arc<dyn Fn(&str) + Send + Sync>;

/// Items the queue holds at most; beyond, items are dropped and counted.
pub const QUEUE_CAPACITY: usize = 4096;
/// Spans or log records sent in one request at most.
pub const MAX_BATCH: usize = 512;
/// How long a span waits for its batch to fill before it is sent anyway.
const SCHEDULED_DELAY: Duration = Duration::from_secs(2);
/// How often metrics are sent while the process runs (and once more at its end).
const METRIC_INTERVAL: Duration = Duration::from_secs(30);
/// After a failed export of a signal, its batches are dropped for this long rather than
/// queueing behind a collector that hangs.
const BACKOFF: Duration = Duration::from_secs(5);
/// How often the exporter's thread takes what the runs' feeds hold (sooner when one fills).
pub const FEED_INTERVAL: Duration = Duration::from_millis(200);

enum Message {
    Span(Span),
    Log(LogRecord),
    /// A feed holds much, or was finished or dropped: take the feeds now.
    Wake,
    Flush(SyncSender<()>),
}

/// The runs' feeds the exporter's thread projects.
type Feeds = Arc<Mutex<Vec<Arc<Feed>>>>;

/// A running exporter; cheap to share, safe to call from any thread.
pub struct Exporter {
    sender: SyncSender<Message>,
    settings: Settings,
    metrics: Arc<Metrics>,
    dropped: AtomicU64,
    warned_full: AtomicBool,
    failures: Arc<AtomicU64>,
    warn: Warn,
    feeds: Feeds,
}

/// Nanoseconds since the epoch, now.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Exporter {
    /// Starts the exporter's thread for `settings`; `None` when nothing is exported or the
    /// thread cannot start (said through `warn`).
    pub fn start(settings: Settings, warn: Warn) -> Option<Arc<Self>> {
        if !settings.enabled() {
            return None;
        }
        let (sender, receiver) = std::sync::mpsc::sync_channel(QUEUE_CAPACITY);
        let metrics = Arc::new(Metrics::new(now_ns()));
        let origin = Origin {
            resource: settings.resource.clone(),
            scope: "bosun",
            version: env!("CARGO_PKG_VERSION"),
        };
        let failures = Arc::new(AtomicU64::new(0));
        let feeds = Feeds::default();
        let worker = Worker {
            feeds: feeds.clone(),
            failures: failures.clone(),
            settings: settings.clone(),
            origin,
            metrics: metrics.clone(),
            warn: warn.clone(),
            warned: Default::default(),
            backoff: Default::default(),
        };
        let spawned = std::thread::Builder::new()
            .name("bosun-telemetry".to_owned())
            .spawn(move || worker.run(receiver));
        if let Err(e) = spawned {
            warn(&format!(
                "telemetry is off for this process: its export thread could not start ({e})"
            ));
            return None;
        }
        ids::set_exporting();
        Some(Arc::new(Self {
            feeds,
            sender,
            settings,
            metrics,
            dropped: AtomicU64::new(0),
            warned_full: AtomicBool::new(false),
            failures,
            warn,
        }))
    }

    /// What is exported and with which content.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The process's metrics, counted as events pass.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Whether `signal` is exported.
    pub fn exports(&self, signal: Signal) -> bool {
        self.settings.endpoint(signal).is_some()
    }

    /// The process's metrics, shared with the projections counting into them.
    pub(crate) fn shared_metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// Adds a run's feed to those the exporter's thread projects.
    pub(crate) fn register(&self, feed: Arc<Feed>) {
        if let Ok(mut feeds) = self.feeds.lock() {
            feeds.push(feed);
        }
    }

    /// Asks the exporter's thread to take the feeds now; never blocks.
    pub(crate) fn wake(&self) {
        let _ = self.sender.try_send(Message::Wake);
    }

    /// Counts `n` events a full feed refused, warning once.
    pub(crate) fn lost(&self, n: u64) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
        self.warn_full();
    }

    fn warn_full(&self) {
        if !self.warned_full.swap(true, Ordering::Relaxed) {
            (self.warn)(
                "telemetry: the export queue is full (the collector is slow or down); \
                 spans are dropped until it catches up — the run trace keeps everything",
            );
        }
    }

    /// Queues a finished span; never blocks.
    pub fn span(&self, span: Span) {
        if self.settings.traces.is_some() {
            self.offer(Message::Span(span));
        }
    }

    /// Queues a log record; never blocks.
    pub fn log(&self, record: LogRecord) {
        if self.settings.logs.is_some() {
            self.offer(Message::Log(record));
        }
    }

    fn offer(&self, message: Message) {
        match self.sender.try_send(message) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.lost(1),
            Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Spans and records dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Exports that failed (refused, unanswered or skipped while backing off after one).
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Sends everything queued and the metrics, waiting at most `timeout`; whether it finished.
    pub fn flush(&self, timeout: Duration) -> bool {
        let (reply, done) = std::sync::mpsc::sync_channel(1);
        let deadline = Instant::now() + timeout;
        let mut message = Message::Flush(reply);
        // The queue may be full: retry until the deadline rather than block.
        loop {
            match self.sender.try_send(message) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    message = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return false,
            }
        }
        done.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok()
    }
}

struct Worker {
    feeds: Feeds,
    failures: Arc<AtomicU64>,
    settings: Settings,
    origin: Origin,
    metrics: Arc<Metrics>,
    warn: Warn,
    warned: Mutex<Vec<Signal>>,
    backoff: Mutex<Vec<(Signal, Instant)>>,
}

impl Worker {
    fn run(self, receiver: Receiver<Message>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let client = bosun_models::tls_config()
            .map_err(|e| e.to_string())
            .and_then(|tls| {
                reqwest::Client::builder()
                    .tls_backend_preconfigured(tls)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| e.to_string())
            });
        let (runtime, client) = match (runtime, client) {
            (Ok(runtime), Ok(client)) => (runtime, client),
            (Err(e), _) => {
                (self.warn)(&format!("telemetry is off: cannot start its runtime ({e})"));
                return;
            }
            (_, Err(e)) => {
                (self.warn)(&format!(
                    "telemetry is off: cannot build its HTTP client ({e})"
                ));
                return;
            }
        };
        let mut spans: Vec<Span> = Vec::new();
        let mut logs: Vec<LogRecord> = Vec::new();
        let mut oldest: Option<Instant> = None;
        let mut next_metrics = Instant::now() + METRIC_INTERVAL;
        let mut next_feeds = Instant::now() + FEED_INTERVAL;
        loop {
            let mut due = oldest
                .map(|t| t + SCHEDULED_DELAY)
                .unwrap_or(next_metrics)
                .min(next_metrics);
            if self.has_feeds() {
                due = due.min(next_feeds);
            }
            let message = receiver.recv_timeout(due.saturating_duration_since(Instant::now()));
            let mut flush: Option<SyncSender<()>> = None;
            let mut closed = false;
            let mut wake = false;
            match message {
                Ok(Message::Span(span)) => {
                    spans.push(span);
                    oldest.get_or_insert_with(Instant::now);
                }
                Ok(Message::Wake) => wake = true,
                Ok(Message::Log(record)) => {
                    logs.push(record);
                    oldest.get_or_insert_with(Instant::now);
                }
                Ok(Message::Flush(reply)) => flush = Some(reply),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => closed = true,
            }
            let now = Instant::now();
            if wake || flush.is_some() || closed || now >= next_feeds {
                let mut out = Out {
                    spans: std::mem::take(&mut spans),
                    logs: std::mem::take(&mut logs),
                };
                self.drain_feeds(&mut out);
                (spans, logs) = (out.spans, out.logs);
                if !spans.is_empty() || !logs.is_empty() {
                    oldest.get_or_insert(now);
                }
                next_feeds = now + FEED_INTERVAL;
            }
            let batch_due = oldest.is_some_and(|t| now >= t + SCHEDULED_DELAY);
            if flush.is_some() || closed || batch_due || spans.len() >= MAX_BATCH {
                self.send_spans(&runtime, &client, &mut spans);
            }
            if flush.is_some() || closed || batch_due || logs.len() >= MAX_BATCH {
                self.send_logs(&runtime, &client, &mut logs);
            }
            if spans.is_empty() && logs.is_empty() {
                oldest = None;
            }
            if flush.is_some() || closed || now >= next_metrics {
                self.send_metrics(&runtime, &client, flush.is_some() || closed);
                next_metrics = Instant::now() + METRIC_INTERVAL;
            }
            if let Some(reply) = flush {
                let _ = reply.try_send(());
            }
            if closed {
                return;
            }
        }
    }

    fn has_feeds(&self) -> bool {
        self.feeds.lock().is_ok_and(|feeds| !feeds.is_empty())
    }

    /// Projects what every feed holds into `out`, and forgets the feeds whose projection is
    /// gone (after finishing their open runs).
    fn drain_feeds(&self, out: &mut Out) {
        let feeds: Vec<Arc<Feed>> = match self.feeds.lock() {
            Ok(feeds) => feeds.clone(),
            Err(_) => return,
        };
        let now = now_ns();
        let closed: Vec<Arc<Feed>> = feeds
            .into_iter()
            .filter(|feed| feed.drain(out, now))
            .collect();
        if !closed.is_empty()
            && let Ok(mut feeds) = self.feeds.lock()
        {
            feeds.retain(|feed| !closed.iter().any(|c| Arc::ptr_eq(c, feed)));
        }
    }

    fn send_spans(
        &self,
        runtime: &tokio::runtime::Runtime,
        client: &reqwest::Client,
        spans: &mut Vec<Span>,
    ) {
        let Some(endpoint) = &self.settings.traces else {
            spans.clear();
            return;
        };
        while !spans.is_empty() {
            let batch: Vec<Span> = spans.drain(..spans.len().min(MAX_BATCH)).collect();
            let body = otlp::traces(&self.origin, &batch, endpoint.protocol);
            self.post(runtime, client, Signal::Traces, endpoint, body);
        }
    }

    fn send_logs(
        &self,
        runtime: &tokio::runtime::Runtime,
        client: &reqwest::Client,
        logs: &mut Vec<LogRecord>,
    ) {
        let Some(endpoint) = &self.settings.logs else {
            logs.clear();
            return;
        };
        while !logs.is_empty() {
            let batch: Vec<LogRecord> = logs.drain(..logs.len().min(MAX_BATCH)).collect();
            let body = otlp::logs(&self.origin, &batch, endpoint.protocol);
            self.post(runtime, client, Signal::Logs, endpoint, body);
        }
    }

    fn send_metrics(
        &self,
        runtime: &tokio::runtime::Runtime,
        client: &reqwest::Client,
        last: bool,
    ) {
        let Some(endpoint) = &self.settings.metrics else {
            return;
        };
        if let Some(snapshot) = self.metrics.snapshot(now_ns(), last) {
            let body = otlp::metrics(&self.origin, &snapshot, endpoint.protocol);
            self.post(runtime, client, Signal::Metrics, endpoint, body);
        }
    }

    fn post(
        &self,
        runtime: &tokio::runtime::Runtime,
        client: &reqwest::Client,
        signal: Signal,
        endpoint: &Endpoint,
        body: otlp::Body,
    ) {
        if let Ok(backoff) = self.backoff.lock()
            && backoff
                .iter()
                .any(|(s, until)| *s == signal && Instant::now() < *until)
        {
            self.failures.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut request = client
            .post(&endpoint.url)
            .timeout(endpoint.timeout)
            .header("content-type", body.content_type)
            .body(body.bytes);
        for (name, value) in &endpoint.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let outcome = runtime.block_on(async {
            let response = request.send().await.map_err(|e| describe(&e))?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(format!("it answered HTTP {}", status.as_u16()))
            }
        });
        match outcome {
            Ok(()) => {
                if let Ok(mut backoff) = self.backoff.lock() {
                    backoff.retain(|(s, _)| *s != signal);
                }
            }
            Err(reason) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut backoff) = self.backoff.lock() {
                    backoff.retain(|(s, _)| *s != signal);
                    backoff.push((signal, Instant::now() + BACKOFF));
                }
                let first = self
                    .warned
                    .lock()
                    .map(|mut warned| {
                        let first = !warned.contains(&signal);
                        warned.push(signal);
                        first
                    })
                    .unwrap_or(false);
                if first {
                    (self.warn)(&format!(
                        "telemetry: cannot export {} to {}: {reason}; runs go on, and their trace \
                         files keep everything (`bosun inspect RUN --export` sends one later)",
                        signal.as_str(),
                        endpoint.url
                    ));
                }
            }
        }
    }
}

/// An error without the URL's query (which may hold a token) and without header values.
fn describe(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "it did not answer in time"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "the request failed"
    };
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(error);
    let mut detail = String::new();
    while let Some(cause) = source {
        detail = cause.to_string();
        source = cause.source();
    }
    if detail.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind} ({detail})")
    }
}

static GLOBAL: OnceLock<Option<Arc<Exporter>>> = OnceLock::new();

/// The process's exporter: started by the first caller with these settings, shared by every
/// later run of the process (one thread, one queue). `None` when nothing is exported.
pub fn global(
    settings: impl FnOnce() -> Option<Settings>,
    warn: impl FnOnce() -> Warn,
) -> Option<Arc<Exporter>> {
    GLOBAL
        .get_or_init(|| settings().and_then(|settings| Exporter::start(settings, warn())))
        .clone()
}

pub use crate::ids::exporting;

/// Sends what the process's exporter holds, waiting at most `timeout` (at exit).
pub fn flush_global(timeout: Duration) {
    if let Some(Some(exporter)) = GLOBAL.get() {
        exporter.flush(timeout);
    }
}
