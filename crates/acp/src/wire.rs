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

    let answers = outgoing.clone();
    let closed = outgoing.closed.clone();
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
            match judge(&line) {
                Line::Forward => {
                    let sent = async {
                        to_crate.write_all(line.as_bytes()).await?;
                        to_crate.write_all(b"\n").await
                    };
                    if sent.await.is_err() {
                        break;
                    }
                }
                Line::Answer(answer) => {
                    if !answers.send(answer) {
                        break;
                    }
                }
                Line::Drop => {}
            }
        }
        // The editor closed its side (or its stream failed): the crate sees the end.
        let _ = to_crate.shutdown().await;
    });
    let lines = outgoing.clone();
    tokio::spawn(async move {
        // Read at once, always: past the bound the lines are dropped, never left to pile up in
        // the crate's queue.
        let mut reader = BufReader::new(from_crate).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            lines.send(line);
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
            r#"{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"session/list"}"#,
        ] {
            assert_eq!(judge(line), Line::Forward, "{line}");
        }
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
}
