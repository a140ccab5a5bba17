//! A scripted model: a loopback HTTP server that speaks the OpenAI Chat Completions streaming
//! wire format (`POST /v1/chat/completions` with `stream: true`, `chat.completion.chunk` events,
//! a usage chunk, `data: [DONE]`) and answers each request with the next step of a script.
//!
//! It is **not a model**: it never reads the conversation except to notice whether the last tool
//! result was an error. Tests use it to drive whole agent runs over real HTTP and real SSE, and
//! the README's demo uses it to show a run without any API key. Every answer it sends carries the
//! model id `bosun-scripted` unless the script names another, so nobody mistakes it for a model.
//!
//! It binds 127.0.0.1 only and never serves anything but its script. It records every request
//! body it receives so that a test can check what the agent sent.
//!
//! A script, as JSON (`serde` of [`Script`]):
//!
//! ```json
//! {"steps": [
//!   {"text": "Let me look.", "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
//!   {"text": "Done.", "on_tool_error": {"text": "That failed: {{last_tool_error}}"}}
//! ]}
//! ```

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// The model id answers carry when the script does not name one.
pub const SCRIPTED_MODEL_ID: &str = "bosun-scripted";
/// Largest request body accepted.
const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;
/// Characters of text per `content` delta.
const TEXT_PIECE_CHARS: usize = 12;
/// Longest a hanging step keeps its stream open.
const HANG_LIMIT: Duration = Duration::from_secs(600);

/// What the scripted model says, step by step: the n-th request gets the n-th step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The model id sent in every chunk (default [`SCRIPTED_MODEL_ID`]).
    #[serde(default)]
    pub model: Option<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Play the script from its first step for each task: the step is chosen by the number of
    /// answers since the request's last user message, so the script never runs dry (a demo used
    /// again and again). Otherwise the n-th request of the server's life gets the n-th step.
    #[serde(default)]
    pub each_task: bool,
}

/// One answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Reasoning, streamed before the text as `delta.reasoning_content` (as vLLM and DeepSeek
    /// send it).
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Text, streamed a few characters at a time. `{{last_tool_error}}` is replaced by the last
    /// tool result's error (`code: message`), or by nothing when it was not an error.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls, after the text.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Played instead of this step when the last message of the request is a tool result that is
    /// an error (a Bosun result with `"ok": false`).
    #[serde(default)]
    pub on_tool_error: Option<Box<Step>>,
    /// Pause between two events, in milliseconds, so streaming can be seen.
    #[serde(default)]
    pub delay_ms: u64,
    /// After the text, keep the stream open without finishing (until the client goes away), to
    /// exercise cancellation.
    #[serde(default)]
    pub hang: bool,
    /// Instead of playing, answer with this HTTP error status (and `Retry-After: 1`), as a
    /// provider that is busy or rate-limiting does; the next request gets the next step.
    #[serde(default)]
    pub refuse: Option<u16>,
}

/// A tool call the script makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The tool's name.
    pub name: String,
    /// The arguments (default: `{}`).
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The call id (default: `call_<request>_<index>`, unique within the server's life).
    #[serde(default)]
    pub id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl Step {
    /// A step that says `text` and stops.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A step that calls one tool.
    pub fn call(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            tool_calls: vec![ScriptedCall {
                name: name.into(),
                arguments,
                id: None,
            }],
            ..Self::default()
        }
    }

    /// This step, with `alternative` played instead when the last tool result was an error.
    pub fn or_on_tool_error(mut self, alternative: Step) -> Self {
        self.on_tool_error = Some(Box::new(alternative));
        self
    }
}

impl Script {
    /// A script of `steps`.
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        Self {
            model: None,
            steps: steps.into_iter().collect(),
            each_task: false,
        }
    }

    /// Parses a script file's text.
    ///
    /// # Errors
    /// A [`ScriptError`] saying what a script looks like.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let script: Self =
            serde_json::from_str(text).map_err(|e| ScriptError::NotAScript(e.to_string()))?;
        if script.steps.is_empty() {
            return Err(ScriptError::NoSteps);
        }
        Ok(script)
    }
}

/// Why a script file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// It is not a script's JSON.
    #[error("not a scripted-model script ({0}); expected {{\"steps\": [{{\"text\": \"…\"}}, …]}}")]
    NotAScript(String),
    /// It has no steps.
    #[error("the script has no steps; add at least {{\"text\": \"…\"}}")]
    NoSteps,
}

struct State {
    script: Script,
    next: AtomicUsize,
    requests: Mutex<Vec<Value>>,
}

/// A running scripted model. Dropping it stops the server and closes its connections.
pub struct ScriptedServer {
    base_url: String,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts scripted models.
#[derive(Debug)]
pub struct ScriptedModel;

impl ScriptedModel {
    /// Serves `script` on an ephemeral loopback port. Call inside a tokio runtime.
    pub async fn serve(script: Script) -> std::io::Result<ScriptedServer> {
        Self::serve_on(script, 0).await
    }

    /// Serves `script` on `127.0.0.1:port` (0 picks a free port).
    pub async fn serve_on(script: Script, port: u16) -> std::io::Result<ScriptedServer> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            script,
            next: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            // Connections live in the set, so aborting this task closes them too.
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((socket, _)) = accepted else {
                            // Out of descriptors, say: wait instead of spinning.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        };
                        let state = shared.clone();
                        connections.spawn(async move {
                            let service = hyper::service::service_fn(move |request| {
                                let state = state.clone();
                                async move { Ok::<_, Infallible>(answer(&state, request).await) }
                            });
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(socket), service)
                                .await;
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(ScriptedServer {
            base_url: format!("http://{addr}/v1"),
            state,
            task,
        })
    }
}

impl ScriptedServer {
    /// The API root to configure: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.state
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// How many steps were played.
    pub fn steps_played(&self) -> usize {
        self.state.next.load(Ordering::SeqCst)
    }
}

/// A response body fed from a channel, so events can be written with pauses between them.
struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

fn whole(status: StatusCode, body: &Value) -> Response<ChannelBody> {
    let (tx, rx) = mpsc::channel(1);
    let _ = tx.try_send(Bytes::from(body.to_string()));
    let mut response = Response::new(ChannelBody { rx });
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn error(status: StatusCode, kind: &str, message: &str) -> Response<ChannelBody> {
    whole(
        status,
        &json!({"error": {"message": message, "type": kind, "code": kind}}),
    )
}

async fn answer(state: &Arc<State>, request: Request<Incoming>) -> Response<ChannelBody> {
    let path = request.uri().path().to_owned();
    let model = state
        .script
        .model
        .clone()
        .unwrap_or_else(|| SCRIPTED_MODEL_ID.to_owned());
    match (request.method(), path.as_str()) {
        (&Method::GET, "/v1/models") => {
            return whole(
                StatusCode::OK,
                &json!({"object": "list", "data": [{"id": model, "object": "model", "owned_by": "bosun-scripted"}]}),
            );
        }
        (&Method::POST, "/v1/chat/completions") => {}
        _ => {
            return error(
                StatusCode::NOT_FOUND,
                "not_found",
                "the scripted model serves only POST /v1/chat/completions",
            );
        }
    }
    let body = match Limited::new(request.into_body(), MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request",
                &e.to_string(),
            );
        }
    };
    let body: Value = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!("the body is not JSON: {e}"),
            );
        }
    };
    let played = state.next.fetch_add(1, Ordering::SeqCst);
    let index = if state.script.each_task {
        answers_since_task(&body)
    } else {
        played
    };
    if let Ok(mut requests) = state.requests.lock() {
        requests.push(body.clone());
    }
    if body.get("stream") != Some(&Value::Bool(true)) {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "the scripted model only streams: send \"stream\": true",
        );
    }
    let Some(step) = state.script.steps.get(index) else {
        return error(
            StatusCode::BAD_REQUEST,
            "script_exhausted",
            &format!(
                "the scripted model's script is exhausted: asked for step {}, it has {} steps",
                index + 1,
                state.script.steps.len()
            ),
        );
    };
    if let Some(status) = step.refuse {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::TOO_MANY_REQUESTS);
        let mut response = error(status, "rate_limit_exceeded", "the scripted model is busy");
        response.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("1"),
        );
        return response;
    }
    let last_error = last_tool_error(&body);
    let step = match (&step.on_tool_error, &last_error) {
        (Some(alternative), Some(_)) => alternative.as_ref(),
        _ => step,
    };
    let events = events(step, index, &model, last_error.as_deref(), &body);
    let (tx, rx) = mpsc::channel(16);
    let delay = Duration::from_millis(step.delay_ms);
    let hang = step.hang;
    tokio::spawn(async move {
        for event in events {
            if tx
                .send(Bytes::from(format!("data: {event}\n\n")))
                .await
                .is_err()
            {
                return;
            }
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
        }
        if hang {
            // Hold the stream open until the client closes it.
            let _ = tokio::time::timeout(HANG_LIMIT, tx.closed()).await;
        }
    });
    let mut response = Response::new(ChannelBody { rx });
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-cache"),
    );
    response
}

/// How many assistant messages follow the request's last user message: the step of this task.
fn answers_since_task(body: &Value) -> usize {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return 0;
    };
    messages
        .iter()
        .rev()
        .take_while(|m| m.get("role").and_then(Value::as_str) != Some("user"))
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .count()
}

/// The error of the request's last message, when it is a tool result with `"ok": false`.
fn last_tool_error(body: &Value) -> Option<String> {
    let last = body.get("messages")?.as_array()?.last()?;
    if last.get("role")?.as_str()? != "tool" {
        return None;
    }
    let content: Value = serde_json::from_str(last.get("content")?.as_str()?).ok()?;
    if content.get("ok")? != &Value::Bool(false) {
        return None;
    }
    let error = content.get("error")?;
    let code = error.get("code").and_then(Value::as_str).unwrap_or("error");
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    Some(format!("{code}: {message}"))
}

/// The `data:` payloads of one answer, `[DONE]` included.
fn events(
    step: &Step,
    index: usize,
    model: &str,
    last_error: Option<&str>,
    request: &Value,
) -> Vec<String> {
    let id = format!("chatcmpl-scripted-{}", index + 1);
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
        .to_string()
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let reasoning: Vec<char> = step
        .reasoning
        .as_deref()
        .unwrap_or_default()
        .chars()
        .collect();
    for piece in reasoning.chunks(TEXT_PIECE_CHARS) {
        out.push(chunk(
            json!({"content": null, "reasoning_content": piece.iter().collect::<String>()}),
            None,
        ));
    }
    let text = step
        .text
        .as_deref()
        .unwrap_or_default()
        .replace("{{last_tool_error}}", last_error.unwrap_or_default());
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(TEXT_PIECE_CHARS) {
        out.push(chunk(
            json!({"content": piece.iter().collect::<String>()}),
            None,
        ));
    }
    if step.hang {
        return out;
    }
    for (i, call) in step.tool_calls.iter().enumerate() {
        let call_id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{}_{}", index + 1, i + 1));
        let arguments = call.arguments.to_string();
        // Arguments arrive in two fragments, as real servers split them.
        let split = arguments
            .char_indices()
            .map(|(at, _)| at)
            .nth(arguments.chars().count() / 2)
            .unwrap_or(0);
        let (head, tail) = arguments.split_at(split);
        out.push(chunk(
            json!({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                "function": {"name": call.name, "arguments": head}}]}),
            None,
        ));
        out.push(chunk(
            json!({"tool_calls": [{"index": i, "function": {"arguments": tail}}]}),
            None,
        ));
    }
    let finish = if step.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out.push(chunk(json!({}), Some(finish)));
    // Token counts are estimates (bytes / 4): there is no tokenizer behind a script.
    let prompt_tokens = request.to_string().len() / 4;
    let completion_tokens = text.len() / 4
        + step
            .tool_calls
            .iter()
            .map(|c| (c.name.len() + c.arguments.to_string().len()) / 4)
            .sum::<usize>();
    out.push(
        json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens},
        })
        .to_string(),
    );
    out.push("[DONE]".to_owned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_parse_and_empty_ones_are_refused() {
        let script = Script::from_json(
            r#"{"steps": [{"text": "hi", "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]}]}"#,
        )
        .unwrap();
        assert_eq!(script.steps[0].tool_calls[0].name, "read_file");
        assert!(Script::from_json(r#"{"steps": []}"#).is_err());
        assert!(Script::from_json(r#"{"steps": [{"txt": "typo"}]}"#).is_err());
    }

    #[test]
    fn the_last_tool_error_is_read_from_the_request() {
        let body = json!({"messages": [
            {"role": "user", "content": "x"},
            {"role": "tool", "tool_call_id": "c", "content": "{\"ok\":false,\"error\":{\"code\":\"denied\",\"message\":\"no\",\"retryable\":false}}"}
        ]});
        assert_eq!(last_tool_error(&body).as_deref(), Some("denied: no"));
        let ok = json!({"messages": [{"role": "tool", "content": "{\"ok\":true,\"output\":1,\"truncated\":false}"}]});
        assert_eq!(last_tool_error(&ok), None);
    }

    #[test]
    fn each_task_starts_the_script_again_at_every_user_message() {
        let body = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "a"},
            {"role": "tool", "content": "{}"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "c"},
            {"role": "tool", "content": "{}"}
        ]});
        assert_eq!(answers_since_task(&body), 1);
        assert_eq!(
            answers_since_task(&json!({"messages": [{"role": "user", "content": "x"}]})),
            0
        );
    }
}
