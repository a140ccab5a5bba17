//! Turns an open event stream into [`ModelEvent`]s: reads chunks under the idle timeout and the
//! cancellation token, decodes SSE, hands each event to the adapter's [`WireParser`] and says
//! what had been received when the stream breaks. Never retries: by now the caller has seen
//! part of the answer.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::truncate;
use crate::sse::{SseDecoder, SseError, SseEvent};
use crate::transport::{OpenStream, Transport, error_chain};
use crate::{ModelError, ModelEvent, ModelStream};

/// One adapter's reading of its wire format.
pub(crate) trait WireParser: Send + 'static {
    /// Handles one SSE event, pushing what it completes onto `out`.
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;

    /// Whether the terminal event arrived (nothing more will be read).
    fn is_done(&self) -> bool;

    /// The body ended without the terminal event. Push what completes the answer if the
    /// format allows ending here and return `Ok(None)`, or return what is missing.
    fn end_of_body(&mut self, out: &mut Vec<ModelEvent>) -> Result<Option<String>, ModelError>;
}

/// What arrived so far, for error messages.
#[derive(Debug, Default)]
struct Received {
    bytes: usize,
    events: usize,
    text_chars: usize,
    tool_calls: usize,
}

impl Received {
    fn describe(&self) -> String {
        format!(
            "{} bytes in {} events ({} characters of text, {} complete tool call{})",
            self.bytes,
            self.events,
            self.text_chars,
            self.tool_calls,
            if self.tool_calls == 1 { "" } else { "s" }
        )
    }

    fn count(&mut self, event: &ModelEvent) {
        match event {
            ModelEvent::TextDelta(text) => self.text_chars += text.chars().count(),
            ModelEvent::ToolCall(_) => self.tool_calls += 1,
            ModelEvent::Reasoning(_) | ModelEvent::Usage(_) | ModelEvent::Finished { .. } => {}
        }
    }
}

struct Driver<P> {
    provider: &'static str,
    first: Option<bytes::Bytes>,
    body: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    decoder: SseDecoder,
    parser: P,
    queue: VecDeque<Result<ModelEvent, ModelError>>,
    received: Received,
    cancel: CancellationToken,
    idle: Duration,
    finished: bool,
}

enum Chunk {
    Data(bytes::Bytes),
    End,
    Broken(reqwest::Error),
    Idle,
    Cancelled,
}

/// Sends the request (with retries) and reads the answer with `parser`.
pub(crate) async fn start<P: WireParser>(
    transport: &Transport,
    path: &str,
    headers: &reqwest::header::HeaderMap,
    body: &Value,
    parser: P,
    cancel: CancellationToken,
) -> Result<ModelStream, ModelError> {
    let open = transport.open(path, headers.clone(), body, &cancel).await?;
    Ok(drive(
        transport.provider,
        open,
        parser,
        transport.idle,
        cancel,
    ))
}

/// Wraps an open stream; the returned stream owns the connection, so dropping it (or the
/// token firing) closes the connection.
fn drive<P: WireParser>(
    provider: &'static str,
    open: OpenStream,
    parser: P,
    idle: Duration,
    cancel: CancellationToken,
) -> ModelStream {
    let driver = Driver {
        provider,
        first: Some(open.first),
        body: open.rest,
        decoder: SseDecoder::new(),
        parser,
        queue: VecDeque::new(),
        received: Received::default(),
        cancel,
        idle,
        finished: false,
    };
    futures_util::stream::unfold(driver, |mut driver| async move {
        let item = driver.next_item().await?;
        Some((item, driver))
    })
    .boxed()
}

impl<P: WireParser> Driver<P> {
    async fn next_item(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        loop {
            if self.cancel.is_cancelled() && !self.finished {
                return Some(self.fail(ModelError::Cancelled));
            }
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if self.finished {
                return None;
            }
            match self.read().await {
                Chunk::Data(bytes) => {
                    self.received.bytes += bytes.len();
                    match self.decoder.feed(&bytes) {
                        Ok(events) => {
                            for event in events {
                                self.handle(event);
                                if self.finished {
                                    break;
                                }
                            }
                        }
                        Err(e) => self.queue.push_back(Err(self.sse_error(e))),
                    }
                }
                Chunk::End => self.end(),
                Chunk::Broken(e) => {
                    let error = ModelError::Interrupted {
                        provider: self.provider.to_owned(),
                        received: self.received.describe(),
                        reason: error_chain(&e),
                    };
                    self.queue.push_back(Err(error));
                }
                Chunk::Idle => {
                    let error = ModelError::Idle {
                        provider: self.provider.to_owned(),
                        idle: self.idle,
                        received: self.received.describe(),
                    };
                    self.queue.push_back(Err(error));
                }
                Chunk::Cancelled => return Some(self.fail(ModelError::Cancelled)),
            }
            if self.parser.is_done() || self.queue.iter().any(Result::is_err) {
                self.close();
            }
        }
    }

    async fn read(&mut self) -> Chunk {
        if let Some(first) = self.first.take() {
            return Chunk::Data(first);
        }
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Chunk::Cancelled,
            next = tokio::time::timeout(self.idle, self.body.next()) => match next {
                Err(_) => Chunk::Idle,
                Ok(None) => Chunk::End,
                Ok(Some(Err(e))) => Chunk::Broken(e),
                Ok(Some(Ok(bytes))) => Chunk::Data(bytes),
            },
        }
    }

    fn handle(&mut self, event: SseEvent) {
        if self.parser.is_done() {
            return;
        }
        self.received.events += 1;
        let mut out = Vec::new();
        let result = self.parser.event(event, &mut out);
        self.push(out);
        if let Err(error) = result {
            self.queue.push_back(Err(error));
            self.close();
        }
    }

    fn end(&mut self) {
        match self.decoder.finish() {
            Ok(Some(event)) => self.handle(event),
            Ok(None) => {}
            Err(e) => {
                let error = self.sse_error(e);
                self.queue.push_back(Err(error));
            }
        }
        if self.finished || self.parser.is_done() {
            self.close();
            return;
        }
        let mut out = Vec::new();
        let result = self.parser.end_of_body(&mut out);
        self.push(out);
        match result {
            Ok(None) => {}
            Ok(Some(missing)) => {
                let error = ModelError::Interrupted {
                    provider: self.provider.to_owned(),
                    received: self.received.describe(),
                    reason: format!("the connection closed before {missing}"),
                };
                self.queue.push_back(Err(error));
            }
            Err(error) => self.queue.push_back(Err(error)),
        }
        self.close();
    }

    fn push(&mut self, events: Vec<ModelEvent>) {
        for event in events {
            self.received.count(&event);
            self.queue.push_back(Ok(event));
        }
    }

    fn sse_error(&self, error: SseError) -> ModelError {
        let (message, line) = match error {
            SseError::NotUtf8(line) => ("a line is not UTF-8".to_owned(), truncate(&line)),
            SseError::TooLarge => (
                format!(
                    "an event is larger than {} MiB",
                    crate::sse::MAX_EVENT_BYTES >> 20
                ),
                String::new(),
            ),
        };
        ModelError::Protocol {
            provider: self.provider.to_owned(),
            message,
            line,
        }
    }

    /// Stops reading and drops the connection; queued items are still delivered.
    fn close(&mut self) {
        self.finished = true;
        self.body = futures_util::stream::empty().boxed();
    }

    fn fail(&mut self, error: ModelError) -> Result<ModelEvent, ModelError> {
        self.queue.clear();
        self.close();
        Err(error)
    }
}

/// Parses an SSE event's data as JSON, or names the offending line.
pub(crate) fn parse_json(provider: &'static str, data: &str) -> Result<Value, ModelError> {
    serde_json::from_str(data).map_err(|e| ModelError::Protocol {
        provider: provider.to_owned(),
        message: format!("invalid JSON: {e}"),
        line: truncate(data),
    })
}

/// Parses a tool call's assembled arguments. An empty string means no arguments (some servers
/// send nothing for a tool without parameters).
pub(crate) fn parse_arguments(
    provider: &'static str,
    call_id: &str,
    tool: &str,
    arguments: &str,
) -> Result<Value, ModelError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(arguments).map_err(|e| ModelError::ToolArguments {
        provider: provider.to_owned(),
        tool: tool.to_owned(),
        call_id: call_id.to_owned(),
        message: e.to_string(),
        arguments: truncate(arguments),
    })
}

/// A protocol error about a JSON event that parsed but did not have the expected shape.
pub(crate) fn shape_error(
    provider: &'static str,
    message: impl Into<String>,
    data: &str,
) -> ModelError {
    ModelError::Protocol {
        provider: provider.to_owned(),
        message: message.into(),
        line: truncate(data),
    }
}
