//! The stdio wire in front of the protocol crate: every line the editor sends is looked at once
//! before the crate reads it, so that a line the crate would drop without a word — not JSON, or a
//! request whose `params` is neither an object nor an array — is answered with JSON-RPC's own
//! error (`-32700` parse error, `-32602` invalid params, `-32600` invalid request) instead of
//! leaving the editor waiting for an answer that never comes. A line is held in memory only up
//! to [`MAX_LINE_BYTES`]: a longer one is read through to its end, dropped and answered, so an
//! editor sending without a newline cannot make Bosun hold gigabytes. Lines going out, from the
//! crate and from here, are written whole, one at a time, so the two never interleave.
//!
//! Going out is bounded too: the crate's own queue has no bound, so the lines it writes are
//! always read here at once and queued with their size counted. An editor that stops reading
//! leaves them waiting; past [`MAX_WAITING_BYTES`] the connection is closed (the editor's side
//! reads as ended, so every running turn is cancelled and saved) and stderr, the editor's agent
//! log, says why. Memory never grows with what the editor does not read.
//!
//! Answers are paired with what Bosun asked ([`Pairing`]). Bosun's requests to the editor
//! (`fs/read_text_file`, `fs/write_text_file`, `session/request_permission`) carry ids the
//! protocol crate draws at random and never reuses, and their responses carry nothing else to
//! check (a file's text, an empty object, an outcome). So every request going out is noted by
//! its id, and an answer is handed on only while its request is open: an answer
//! to a request never sent, a second answer, or one that comes after Bosun stopped waiting (the
//! call timed out or its turn was cancelled: the crate then sends `$/cancel_request`) is dropped
//! and said on stderr, and can never be read as the answer to a later request. When Bosun stops
//! waiting the crate is answered at once, so its own table of waiting requests empties; at most
//! [`MAX_OPEN_REQUESTS`] wait for the editor, and a request past them is refused without being
//! sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;

/// Room in each in-memory pipe between the editor's streams and the protocol crate.
const PIPE_BYTES: usize = 256 * 1024;

/// The most bytes of lines waiting for an editor that does not read them (the line being
/// written not counted): far above what a reading editor ever leaves waiting.
pub(crate) const MAX_WAITING_BYTES: usize = 16 * 1024 * 1024;

/// The most of Bosun's requests that may wait for the editor's answer at once (a turn waits on
/// one at a time, a few when the model calls tools side by side).
pub(crate) const MAX_OPEN_REQUESTS: usize = 256;

/// The most answers to no open request said on stderr per connection, one line each (a flood
/// of them is said once more, not line by line).
const MAX_STRAY_LOGGED: usize = 16;

/// The longest message an editor may send: a prompt with the most images a message holds, each
/// at the size cap, in base64 (about 100 MiB), with room for its text.
pub(crate) const MAX_LINE_BYTES: usize = 128 * 1024 * 1024;

const _: () = assert!(
    bosun_models::MAX_IMAGES_PER_MESSAGE * bosun_models::MAX_IMAGE_BYTES / 3 * 4
        < MAX_LINE_BYTES - 16 * 1024 * 1024
);

/// One line read from the editor.
#[derive(Debug, PartialEq)]
enum Read {
    /// A line within the bound (without its line ending).
    Line(Vec<u8>),
    /// A line past the bound: read to its end and dropped.
    TooLong,
    /// The editor closed its side.
    End,
}

/// Reads the next line, keeping at most `limit` bytes of it.
async fn next_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    limit: usize,
) -> std::io::Result<Read> {
    let mut line = Vec::new();
    let mut over = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (over, line.is_empty()) {
                (true, _) => Read::TooLong,
                (false, true) => Read::End,
                (false, false) => Read::Line(line),
            });
        }
        let newline = buffer.iter().position(|b| *b == b'\n');
        let part = &buffer[..newline.unwrap_or(buffer.len())];
        if !over && line.len() + part.len() > limit {
            over = true;
            line = Vec::new();
        }
        if !over {
            line.extend_from_slice(part);
        }
        let used = part.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            if over {
                return Ok(Read::TooLong);
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Read::Line(line));
        }
    }
}

/// What to do with one line from the editor.
#[derive(Debug, PartialEq)]
pub(crate) enum Line {
    /// Pass it to the protocol crate.
    Forward,
    /// An answer to a request of Bosun's with this id (as JSON text): passed on only while that
    /// request is open ([`Pairing::answered`]).
    Response(String),
    /// Answer it with this error line; the crate never sees it.
    Answer(String),
    /// Drop it (blank lines, and malformed notifications, which take no answer).
    Drop,
}

/// Judges one line the editor sent.
pub(crate) fn judge(line: &str) -> Line {
    if line.trim().is_empty() {
        return Line::Drop;
    }
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        return Line::Answer(error(
            &Value::Null,
            -32700,
            "parse error: each line must be one JSON-RPC 2.0 message",
        ));
    };
    let Value::Object(object) = &message else {
        return Line::Answer(error(
            &Value::Null,
            -32600,
            "invalid request: a message must be a JSON object",
        ));
    };
    let id = object.get("id").cloned();
    let is_response = object.contains_key("result") || object.contains_key("error");
    if !object.contains_key("method") && !is_response {
        return match id {
            Some(id) => Line::Answer(error(
                &id,
                -32600,
                "invalid request: a request needs a `method`",
            )),
            None => Line::Answer(error(
                &Value::Null,
                -32600,
                "invalid request: a message needs a `method`, or a `result` or `error` with an `id`",
            )),
        };
    }
    if !object.contains_key("method") {
        return Line::Response(id.unwrap_or(Value::Null).to_string());
    }
    match object.get("params") {
        Some(Value::Object(_) | Value::Array(_) | Value::Null) | None => Line::Forward,
        Some(_) => match id {
            Some(id) => Line::Answer(error(
                &id,
                -32602,
                "invalid params: `params` must be an object",
            )),
            None => Line::Drop,
        },
    }
}

fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// Puts the filter between the editor's `input`/`output` and the protocol crate: returns the
/// streams the crate reads from and writes to. The tasks end when the editor closes `input` and
/// the crate has finished writing.
///
/// The third value ends once every line, from the crate and from here, is written: await it
/// (bounded) before the process exits so no answer is lost.
pub(crate) fn filtered(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> (DuplexStream, DuplexStream, tokio::task::JoinHandle<()>) {
    filtered_within(input, output, MAX_LINE_BYTES)
}

/// [`filtered`], holding at most `limit` bytes of a line.
fn filtered_within(
    input: impl AsyncRead + Unpin + Send + 'static,
    mut output: impl AsyncWrite + Unpin + Send + 'static,
    limit: usize,
) -> (DuplexStream, DuplexStream, tokio::task::JoinHandle<()>) {
    let (crate_out, from_crate) = tokio::io::duplex(PIPE_BYTES);
    let (mut to_crate, crate_in) = tokio::io::duplex(PIPE_BYTES);
    let outgoing = Outgoing::new(MAX_WAITING_BYTES);
    let mut written_lines = outgoing.subscribe();
    let pairing = Pairing::new(MAX_OPEN_REQUESTS);
    // Lines for the crate: the editor's (one at a time, so a crate that does not read holds the
    // editor back) and Bosun's own answers to the crate's requests that went unsent or that it
    // stopped waiting for (a few: one per request at most).
    let (editor_lines, mut editor_lines_in) = mpsc::channel::<String>(1);
    let (own_answers, mut own_answers_in) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        loop {
            let line = tokio::select! {
                biased;
                Some(line) = own_answers_in.recv() => line,
                line = editor_lines_in.recv() => match line {
                    Some(line) => line,
                    None => break,
                },
            };
            let sent = async {
                to_crate.write_all(line.as_bytes()).await?;
                to_crate.write_all(b"\n").await
            };
            if sent.await.is_err() {
                break;
            }
        }
        // The editor closed its side (or its stream failed): the crate sees the end.
        let _ = to_crate.shutdown().await;
    });

    let answers = outgoing.clone();
    let closed = outgoing.closed.clone();
    let answered = pairing.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(input);
        loop {
            let next = tokio::select! {
                // The editor stopped reading: its side reads as ended from here on.
                () = closed.cancelled() => break,
                next = next_line(&mut reader, limit) => next,
            };
            let line = match next {
                Ok(Read::Line(bytes)) => match String::from_utf8(bytes) {
                    Ok(line) => line,
                    Err(_) => {
                        let answer = error(
                            &Value::Null,
                            -32700,
                            "parse error: a message must be UTF-8 text",
                        );
                        if !answers.send(answer) {
                            break;
                        }
                        continue;
                    }
                },
                Ok(Read::TooLong) => {
                    let answer = error(
                        &Value::Null,
                        -32600,
                        &format!(
                            "invalid request: a message may be at most {} MiB; it was dropped unread",
                            limit >> 20
                        ),
                    );
                    if !answers.send(answer) {
                        break;
                    }
                    continue;
                }
                Ok(Read::End) | Err(_) => break,
            };
            let forward = match judge(&line) {
                Line::Forward => true,
                Line::Response(id) => answered.answered(&id),
                Line::Answer(answer) => {
                    if !answers.send(answer) {
                        break;
                    }
                    false
                }
                Line::Drop => false,
            };
            if forward && editor_lines.send(line).await.is_err() {
                break;
            }
        }
    });
    let lines = outgoing.clone();
    tokio::spawn(async move {
        // Read at once, always: past the bound the lines are dropped, never left to pile up in
        // the crate's queue.
        let mut reader = BufReader::new(from_crate).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            match pairing.going_out(&line) {
                Going::Send => {
                    lines.send(line);
                }
                Going::SendAndAnswer(answer) => {
                    lines.send(line);
                    let _ = own_answers.send(answer);
                }
                Going::Refuse(answer) => {
                    let _ = own_answers.send(answer);
                }
            }
        }
        lines.end();
    });
    let written = tokio::spawn(async move {
        while let Some(line) = written_lines.recv().await {
            let written = async {
                output.write_all(line.as_bytes()).await?;
                output.write_all(b"\n").await?;
                output.flush().await
            };
            if written.await.is_err() {
                break;
            }
        }
    });
    (crate_out, crate_in, written)
}

/// What to do with a line the protocol crate writes.
#[derive(Debug, PartialEq)]
enum Going {
    /// Send it to the editor.
    Send,
    /// Send it, and hand the crate this answer (Bosun stopped waiting for a request).
    SendAndAnswer(String),
    /// Do not send it; hand the crate this answer (too many requests wait already).
    Refuse(String),
}

/// The fields of a message that say what it is (the rest is skipped unread).
#[derive(Deserialize)]
struct Head {
    id: Option<Value>,
    method: Option<String>,
    params: Option<Params>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Params {
    request_id: Option<Value>,
    #[serde(flatten)]
    _rest: HashMap<String, IgnoredAny>,
}

/// Bosun's requests that wait for the editor's answer — their methods by id (as JSON text; an
/// id is drawn for one request of one session and never reused, so it binds the answer to
/// both) — and how many answers came to none of them.
#[derive(Clone)]
pub(crate) struct Pairing {
    inner: Arc<Mutex<PairingInner>>,
}

struct PairingInner {
    open: HashMap<String, String>,
    bound: usize,
    strays: usize,
}

impl Pairing {
    fn new(bound: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(PairingInner {
                open: HashMap::new(),
                bound,
                strays: 0,
            })),
        }
    }

    /// Notes a line the crate writes: a request opens (refused past the bound), a
    /// `$/cancel_request` closes one (and the crate is answered, so it stops waiting too).
    fn going_out(&self, line: &str) -> Going {
        let Ok(head) = serde_json::from_str::<Head>(line) else {
            return Going::Send;
        };
        let Some(method) = head.method else {
            return Going::Send;
        };
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if method == "$/cancel_request" {
            let Some(id) = head.params.and_then(|p| p.request_id) else {
                return Going::Send;
            };
            return match inner.open.remove(&id.to_string()) {
                Some(method) => Going::SendAndAnswer(error(
                    &id,
                    -32800,
                    &format!("{method} cancelled: Bosun stopped waiting for the editor's answer"),
                )),
                None => Going::Send,
            };
        }
        let Some(id) = head.id else {
            return Going::Send;
        };
        if inner.open.len() >= inner.bound {
            return Going::Refuse(error(
                &id,
                -32603,
                &format!(
                    "not sent to the editor: {} of Bosun's requests already wait for its answer",
                    inner.bound
                ),
            ));
        }
        inner.open.insert(id.to_string(), method);
        Going::Send
    }

    /// Whether an answer with `id` answers an open request (which it then closes); an answer
    /// to none is said on stderr, the first few one by one.
    fn answered(&self, id: &str) -> bool {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.open.remove(id).is_some() {
            return true;
        }
        inner.strays += 1;
        let shown: String = bosun_core::escape_hidden(id).chars().take(80).collect();
        // stderr is the editor's agent log; stdout is the connection.
        if inner.strays <= MAX_STRAY_LOGGED {
            eprintln!(
                "bosun acp: an answer with id {shown} was dropped: no request of Bosun's with that \
                 id waits for an answer (never sent, answered already, or no longer waited for)"
            );
        } else if inner.strays == MAX_STRAY_LOGGED + 1 {
            eprintln!("bosun acp: more answers to no open request are dropped without a line each");
        }
        false
    }

    /// How many requests wait for the editor.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .open
            .len()
    }
}

/// The lines waiting for the editor, counted in bytes.
#[derive(Clone)]
struct Outgoing {
    queue: mpsc::UnboundedSender<String>,
    receiver: std::sync::Arc<std::sync::Mutex<Option<mpsc::UnboundedReceiver<String>>>>,
    /// Bytes queued and not yet taken by the writer.
    waiting: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    bound: usize,
    /// Cancelled when the bound was passed: the connection is over.
    closed: tokio_util::sync::CancellationToken,
}

/// The writer's side of [`Outgoing`].
struct Written {
    lines: mpsc::UnboundedReceiver<String>,
    waiting: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Written {
    async fn recv(&mut self) -> Option<String> {
        let line = self.lines.recv().await?;
        self.waiting
            .fetch_sub(line.len(), std::sync::atomic::Ordering::SeqCst);
        Some(line)
    }
}

impl Outgoing {
    fn new(bound: usize) -> Self {
        let (queue, receiver) = mpsc::unbounded_channel();
        Self {
            queue,
            receiver: std::sync::Arc::new(std::sync::Mutex::new(Some(receiver))),
            waiting: std::sync::Arc::default(),
            bound,
            closed: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// The writer's end (taken once).
    fn subscribe(&self) -> Written {
        let lines = self
            .receiver
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| mpsc::unbounded_channel().1);
        Written {
            lines,
            waiting: self.waiting.clone(),
        }
    }

    /// Queues `line` for the editor; `false` once the connection is over (the line dropped).
    fn send(&self, line: String) -> bool {
        if self.closed.is_cancelled() {
            return false;
        }
        let waiting = self
            .waiting
            .fetch_add(line.len(), std::sync::atomic::Ordering::SeqCst)
            + line.len();
        if waiting > self.bound {
            self.waiting
                .fetch_sub(line.len(), std::sync::atomic::Ordering::SeqCst);
            // stderr is the editor's agent log; stdout is the connection.
            eprintln!(
                "bosun acp: the editor stopped reading: {} MiB of messages were waiting for it \
                 (at most {} MiB may), so the connection is closed; every running turn is \
                 cancelled and saved: open the session again (session/load) to continue",
                waiting >> 20,
                self.bound >> 20
            );
            self.closed.cancel();
            return false;
        }
        self.queue.send(line).is_ok()
    }

    /// No more lines will come from the crate.
    fn end(&self) {
        self.closed.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(line: &str) -> Value {
        match judge(line) {
            Line::Answer(answer) => serde_json::from_str(&answer).unwrap(),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn lines_the_protocol_crate_would_drop_are_answered_with_json_rpc_errors() {
        assert_eq!(answered("this is not JSON")["error"]["code"], -32700);
        assert_eq!(answered("this is not JSON")["id"], Value::Null);
        assert_eq!(answered("[1, 2]")["error"]["code"], -32600);
        assert_eq!(answered("7")["error"]["code"], -32600);
        let params = answered(r#"{"jsonrpc":"2.0","id":99,"method":"session/prompt","params":7}"#);
        assert_eq!(params["id"], 99);
        assert_eq!(params["error"]["code"], -32602);
        let no_method = answered(r#"{"jsonrpc":"2.0","id":"a"}"#);
        assert_eq!(
            (
                no_method["id"].as_str(),
                no_method["error"]["code"].as_i64()
            ),
            (Some("a"), Some(-32600))
        );
    }

    #[test]
    fn well_formed_messages_pass_and_bad_notifications_are_dropped() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"session/list"}"#,
        ] {
            assert_eq!(judge(line), Line::Forward, "{line}");
        }
        assert_eq!(
            judge(r#"{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"}}}"#),
            Line::Response("3".to_owned())
        );
        assert_eq!(
            judge(r#"{"jsonrpc":"2.0","id":"a-4","error":{"code":-32000,"message":"no"}}"#),
            Line::Response("\"a-4\"".to_owned())
        );
        assert_eq!(judge(""), Line::Drop);
        assert_eq!(
            judge(r#"{"jsonrpc":"2.0","method":"session/cancel","params":"x"}"#),
            Line::Drop
        );
    }

    /// A line past the bound (an editor sending without a newline) is read through, dropped
    /// and answered, never handed on or kept whole; a line that is not UTF-8 is answered too;
    /// the connection lives on and the next line passes.
    #[tokio::test]
    async fn a_line_past_the_bound_is_answered_and_dropped_and_the_next_passes() {
        let (editor_in, mut editor_writes) = tokio::io::duplex(4096);
        let (mut editor_reads, editor_out) = tokio::io::duplex(4096);
        let (crate_out, mut crate_in, _written) = filtered_within(editor_in, editor_out, 1024);
        let huge = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/prompt\",\"params\":{{\"text\":\"{}\"}}}}\n",
            "x".repeat(64 * 1024)
        );
        let writer = tokio::spawn(async move {
            editor_writes.write_all(huge.as_bytes()).await.unwrap();
            editor_writes.write_all(b"\xff\xfe\n").await.unwrap();
            editor_writes
                .write_all(
                    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\r\n",
                )
                .await
                .unwrap();
        });
        let mut forwarded = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut crate_in, &mut forwarded)
            .await
            .unwrap();
        writer.await.unwrap();
        assert_eq!(
            forwarded,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n"
        );
        drop(crate_out);
        let mut seen = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut editor_reads, &mut seen)
            .await
            .unwrap();
        let answers: Vec<Value> = seen
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers.len(), 2, "{seen}");
        assert_eq!(answers[0]["error"]["code"], -32600);
        assert!(
            answers[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("at most"),
            "{seen}"
        );
        assert_eq!(answers[1]["error"]["code"], -32700);
    }

    #[tokio::test]
    async fn answers_and_the_crates_lines_go_out_whole_and_the_end_reaches_the_crate() {
        let (editor_in, mut editor_writes) = tokio::io::duplex(4096);
        let (mut editor_reads, editor_out) = tokio::io::duplex(4096);
        let (mut crate_out, mut crate_in, _written) = filtered(editor_in, editor_out);
        editor_writes
            .write_all(b"garbage\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n")
            .await
            .unwrap();
        drop(editor_writes);
        let mut forwarded = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut crate_in, &mut forwarded)
            .await
            .unwrap();
        assert_eq!(
            forwarded,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n"
        );
        crate_out
            .write_all(b"{\"id\":1,\"result\":{}}\n")
            .await
            .unwrap();
        drop(crate_out);
        let mut seen = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut editor_reads, &mut seen)
            .await
            .unwrap();
        let lines: Vec<Value> = seen
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{seen}");
        assert_eq!(lines[0]["error"]["code"], -32700);
        assert_eq!(lines[1]["result"], json!({}));
    }

    /// Reads the next line from `reader`, failing the test when none comes.
    async fn next(reader: &mut tokio::io::Lines<BufReader<DuplexStream>>) -> Value {
        let line = tokio::time::timeout(std::time::Duration::from_secs(30), reader.next_line())
            .await
            .expect("a line arrives")
            .unwrap()
            .expect("the stream is open");
        serde_json::from_str(&line).unwrap()
    }

    /// Enforcement: `Pairing` (`going_out`, `answered`). The editor's answers reach the protocol
    /// crate only for a request of Bosun's still open: an answer to an id never sent, a second
    /// answer to one request, and an answer after Bosun stopped waiting (`$/cancel_request`,
    /// which the crate is answered for at once) are dropped — so the late answer is never read
    /// as the answer to the next request.
    #[tokio::test]
    async fn an_answer_is_taken_only_for_a_request_still_open() {
        let (editor_in, mut editor_writes) = tokio::io::duplex(1 << 16);
        let (editor_reads, editor_out) = tokio::io::duplex(1 << 16);
        let (mut crate_out, crate_in, _written) = filtered(editor_in, editor_out);
        let mut editor = BufReader::new(editor_reads).lines();
        let mut crate_reads = BufReader::new(crate_in).lines();
        let request = |id: &str, method: &str| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"{method}\",\"params\":{{\"sessionId\":\"s1\",\"path\":\"/w/a.txt\"}}}}\n"
            )
        };
        let answer = |id: &str, content: &str| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"result\":{{\"content\":\"{content}\"}}}}\n"
            )
        };
        // The crate asks; the editor sees the request, answers a request never sent, then
        // this one twice.
        crate_out
            .write_all(request("r1", "fs/read_text_file").as_bytes())
            .await
            .unwrap();
        assert_eq!(next(&mut editor).await["id"], "r1");
        for line in [
            answer("never-sent", "forged"),
            answer("r1", "first"),
            answer("r1", "second"),
        ] {
            editor_writes.write_all(line.as_bytes()).await.unwrap();
        }
        // The crate asks again and stops waiting (a cancelled turn): it hears so at once.
        crate_out
            .write_all(request("r2", "fs/write_text_file").as_bytes())
            .await
            .unwrap();
        assert_eq!(next(&mut editor).await["id"], "r2");
        crate_out
            .write_all(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":\"r2\"}}\n",
            )
            .await
            .unwrap();
        assert_eq!(next(&mut editor).await["method"], "$/cancel_request");
        // The editor answers late, and then a newer request.
        editor_writes
            .write_all(answer("r2", "late").as_bytes())
            .await
            .unwrap();
        crate_out
            .write_all(request("r3", "fs/read_text_file").as_bytes())
            .await
            .unwrap();
        assert_eq!(next(&mut editor).await["id"], "r3");
        editor_writes
            .write_all(answer("r3", "third").as_bytes())
            .await
            .unwrap();
        let mut seen = Vec::new();
        for _ in 0..3 {
            let line = next(&mut crate_reads).await;
            seen.push((
                line["id"].clone(),
                line["result"]["content"].clone(),
                line["error"]["code"].clone(),
            ));
        }
        assert_eq!(
            seen,
            [
                (json!("r1"), json!("first"), Value::Null),
                (json!("r2"), Value::Null, json!(-32800)),
                (json!("r3"), json!("third"), Value::Null),
            ]
        );
        // Nothing else reached the crate: not the forged answer, not the second, not the late.
        drop(editor_writes);
        assert_eq!(crate_reads.next_line().await.unwrap(), None);
    }

    /// Enforcement: `Pairing::going_out`'s bound. Past `MAX_OPEN_REQUESTS` requests waiting for
    /// the editor, the next is not sent and the crate is answered with an error naming why; an
    /// answer frees a place.
    #[test]
    fn requests_waiting_for_the_editor_are_bounded() {
        let pairing = Pairing::new(2);
        let request = |id: u32| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"fs/read_text_file","params":{{"sessionId":"s","path":"/a"}}}}"#
            )
        };
        assert_eq!(pairing.going_out(&request(1)), Going::Send);
        assert_eq!(pairing.going_out(&request(2)), Going::Send);
        let Going::Refuse(refusal) = pairing.going_out(&request(3)) else {
            panic!("a third request is refused");
        };
        let refusal: Value = serde_json::from_str(&refusal).unwrap();
        assert_eq!(refusal["id"], 3);
        assert!(
            refusal["error"]["message"]
                .as_str()
                .unwrap()
                .contains("already wait"),
            "{refusal}"
        );
        assert_eq!(pairing.waiting(), 2);
        // Notifications and Bosun's answers to the editor's requests are not requests.
        for line in [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
        ] {
            assert_eq!(pairing.going_out(line), Going::Send, "{line}");
        }
        assert!(pairing.answered("1"));
        assert!(!pairing.answered("1"));
        assert_eq!(pairing.going_out(&request(4)), Going::Send);
    }
}
