//! The HTTP+SSE transport of MCP 2024-11-05 (the one Streamable HTTP replaced), client side:
//! a `[mcp.<name>]` entry with `transport = "sse"`, or an SSE server an editor passes over ACP.
//! rmcp 3 no longer has this transport, so it is written here, on the same HTTP client as the
//! Streamable HTTP transport (`crate::http_client`: Bosun's TLS, same-origin redirects only, the
//! entry's headers and bearer token).
//!
//! The exchange: a GET of the server's URL opens an event stream whose first `endpoint` event
//! names where messages go; each message is POSTed there as JSON, and the server's answers,
//! requests and notifications arrive on the stream as `message` events. The endpoint must be on
//! the stream's own origin — an endpoint elsewhere would receive the headers and tokens Bosun
//! sends, at an address nobody configured and policy never judged — and an event larger than
//! the transport's bound ends the stream instead of growing without limit.

use std::str::FromStr;

use bosun_host::mcp_config::McpServerConfig;
use http::{HeaderMap, HeaderValue};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{mpsc, oneshot};

use crate::http_client::HttpClientError;

/// Messages from the server held while the client is busy.
const BUFFERED: usize = 64;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// The HTTP client could not be built (TLS, a header's value).
    #[error(transparent)]
    Client(#[from] HttpClientError),
    /// The URL is not one.
    #[error("`{url}` is not a URL: {message}")]
    Url {
        /// The URL as configured.
        url: String,
        /// Why.
        message: String,
    },
    /// The GET of the event stream failed.
    #[error("opening the event stream at {url} failed: {source}")]
    Open {
        /// The stream's URL.
        url: String,
        /// reqwest's reason.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered the GET with something other than an event stream.
    #[error(
        "{url} answered {status} ({content_type}) instead of an event stream: is it an SSE server? (a Streamable HTTP server needs no `transport = \"sse\"`)"
    )]
    NotAStream {
        /// The stream's URL.
        url: String,
        /// The status.
        status: u16,
        /// Its content type.
        content_type: String,
    },
    /// The stream ended before naming where to post.
    #[error("{url} closed its event stream before sending the `endpoint` event")]
    NoEndpoint {
        /// The stream's URL.
        url: String,
    },
    /// The `endpoint` event named an address on another origin, or none.
    #[error(
        "{url} named `{endpoint}` as where to post, which is not on its own origin: nothing was sent there"
    )]
    EndpointElsewhere {
        /// The stream's URL.
        url: String,
        /// What it named (escaped).
        endpoint: String,
    },
    /// An event was larger than the bound.
    #[error("an event of the stream exceeded {limit} bytes")]
    EventTooLarge {
        /// The bound.
        limit: usize,
    },
    /// Posting a message failed.
    #[error("posting to {endpoint} failed: {source}")]
    Post {
        /// Where.
        endpoint: String,
        /// reqwest's reason.
        #[source]
        source: reqwest::Error,
    },
    /// The server refused a posted message.
    #[error("{endpoint} answered {status} to a posted message")]
    PostStatus {
        /// Where.
        endpoint: String,
        /// The status.
        status: u16,
    },
    /// A message could not be serialised.
    #[error("a message could not be serialised: {0}")]
    Encode(#[source] serde_json::Error),
}

/// One event of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// Its type (`message` when the server named none).
    pub kind: String,
    /// Its data, lines joined by `\n`.
    pub data: String,
}

/// A bounded parser of `text/event-stream` (the WHATWG rules: `event:` and `data:` fields,
/// comments, a blank line dispatching; other fields ignored).
#[derive(Debug)]
pub(crate) struct EventParser {
    line: Vec<u8>,
    kind: Option<String>,
    data: Option<String>,
    /// Bytes of the event being read.
    size: usize,
    limit: usize,
    /// A `\r` ended the last chunk: a `\n` opening the next belongs to it.
    after_cr: bool,
}

impl EventParser {
    /// A parser refusing events larger than `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            line: Vec::new(),
            kind: None,
            data: None,
            size: 0,
            limit,
            after_cr: false,
        }
    }

    /// The events `chunk` completes.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, SseError> {
        let mut events = Vec::new();
        for &byte in chunk {
            let after_cr = std::mem::replace(&mut self.after_cr, false);
            match byte {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_ended(&line) {
                        events.push(event);
                    }
                }
                _ => {
                    self.size += 1;
                    if self.size > self.limit {
                        return Err(SseError::EventTooLarge { limit: self.limit });
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(events)
    }

    fn line_ended(&mut self, line: &[u8]) -> Option<Event> {
        if line.is_empty() {
            self.size = 0;
            let kind = self.kind.take();
            return self.data.take().map(|data| Event {
                kind: kind.unwrap_or_else(|| "message".to_owned()),
                data,
            });
        }
        if line.starts_with(b":") {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = text.split_once(':').unwrap_or((&text, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.kind = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }
}

/// The client side of one SSE session.
pub struct SseClientTransport {
    client: reqwest::Client,
    headers: HeaderMap,
    endpoint: reqwest::Url,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseClientTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Whether `a` and `b` share scheme, host and port.
fn same_origin(a: &reqwest::Url, b: &reqwest::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

impl SseClientTransport {
    /// Opens the event stream of `url` as `config` describes the server (headers, bearer
    /// token) and waits for its `endpoint` event.
    ///
    /// # Errors
    /// The client could not be built, the stream not opened, or the endpoint is not on the
    /// stream's origin.
    pub(crate) async fn connect(
        url: &str,
        config: &McpServerConfig,
        refused: &bosun_models::RefusedNote,
    ) -> Result<Self, SseError> {
        let (client, settings) = crate::http_client::parts(url, config, refused)?;
        let mut headers = HeaderMap::new();
        for (name, value) in &settings.custom_headers {
            headers.insert(name.clone(), value.clone());
        }
        if let Some(token) = &settings.auth_header {
            let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                HttpClientError::HeaderValue {
                    var: config.bearer_token_env.clone().unwrap_or_default(),
                }
            })?;
            headers.insert(http::header::AUTHORIZATION, value);
        }
        Self::open(client, headers, url, settings.max_sse_event_size).await
    }

    async fn open(
        client: reqwest::Client,
        headers: HeaderMap,
        url: &str,
        limit: usize,
    ) -> Result<Self, SseError> {
        let base = reqwest::Url::from_str(url).map_err(|e| SseError::Url {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        let response = client
            .get(base.clone())
            .headers(headers.clone())
            .header(http::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|source| SseError::Open {
                url: url.to_owned(),
                source,
            })?;
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if !response.status().is_success() || !content_type.starts_with("text/event-stream") {
            return Err(SseError::NotAStream {
                url: url.to_owned(),
                status: response.status().as_u16(),
                content_type: bosun_core::escape_hidden(&content_type),
            });
        }
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let (incoming_tx, incoming) = mpsc::channel(BUFFERED);
        let reader = tokio::spawn(read_stream(
            response,
            EventParser::new(limit),
            endpoint_tx,
            incoming_tx,
        ));
        let named = match endpoint_rx.await {
            Ok(Ok(named)) => named,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(SseError::NoEndpoint {
                    url: url.to_owned(),
                });
            }
        };
        let endpoint = base
            .join(named.trim())
            .ok()
            .filter(|endpoint| same_origin(&base, endpoint))
            .ok_or_else(|| SseError::EndpointElsewhere {
                url: url.to_owned(),
                endpoint: bosun_core::escape_hidden(&named),
            })?;
        Ok(Self {
            client,
            headers,
            endpoint,
            incoming,
            reader,
        })
    }
}

/// Reads the stream: the first `endpoint` event goes to `endpoint`, then every `message` event
/// that is a JSON-RPC message to `incoming` (one that is not is skipped, as the stdio transport
/// skips a line that is not). Ends with the stream, or when an event is too large.
async fn read_stream(
    mut response: reqwest::Response,
    mut parser: EventParser,
    endpoint: oneshot::Sender<Result<String, SseError>>,
    incoming: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
) {
    let mut endpoint = Some(endpoint);
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) | Err(_) => return,
        };
        let events = match parser.feed(&chunk) {
            Ok(events) => events,
            Err(e) => {
                if let Some(endpoint) = endpoint.take() {
                    let _ = endpoint.send(Err(e));
                }
                return;
            }
        };
        for event in events {
            match event.kind.as_str() {
                "endpoint" => {
                    if let Some(endpoint) = endpoint.take() {
                        let _ = endpoint.send(Ok(event.data));
                    }
                }
                "message" if endpoint.is_none() => {
                    if let Ok(message) = serde_json::from_str(&event.data)
                        && incoming.send(message).await.is_err()
                    {
                        return;
                    }
                }
                _ => {}
            }
        }
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let headers = self.headers.clone();
        let endpoint = self.endpoint.clone();
        async move {
            let body = serde_json::to_vec(&item).map_err(SseError::Encode)?;
            let response = client
                .post(endpoint.clone())
                .headers(headers)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .map_err(|source| SseError::Post {
                    endpoint: endpoint.to_string(),
                    source,
                })?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError::PostStatus {
                    endpoint: endpoint.to_string(),
                    status: response.status().as_u16(),
                })
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(parser: &mut EventParser, chunks: &[&str]) -> Vec<Event> {
        chunks
            .iter()
            .flat_map(|c| parser.feed(c.as_bytes()).unwrap())
            .collect()
    }

    #[test]
    fn events_are_read_across_chunks_and_line_endings() {
        let mut parser = EventParser::new(1024);
        let read = events(
            &mut parser,
            &[
                ": a comment\r\nevent: endpoint\r",
                "\ndata: /messages/?session_id=1\r\n\r\n",
                "data: {\"a\":\ndata:1}\n\nid: 7\nretry: 10\n\n",
                "event: message\ndata:x\n\n",
            ],
        );
        assert_eq!(
            read,
            [
                Event {
                    kind: "endpoint".into(),
                    data: "/messages/?session_id=1".into()
                },
                Event {
                    kind: "message".into(),
                    data: "{\"a\":\n1}".into()
                },
                Event {
                    kind: "message".into(),
                    data: "x".into()
                },
            ]
        );
    }

    /// Enforcement: the bound in `EventParser::feed`. A server streaming one endless event is
    /// cut off at the bound instead of filling memory; a blank line starts the count again.
    #[test]
    fn an_event_larger_than_the_bound_ends_the_stream() {
        let mut parser = EventParser::new(16);
        assert_eq!(
            parser.feed(b"data: 0123456789\n\n").unwrap().len(),
            1,
            "an event within the bound"
        );
        assert!(matches!(
            parser.feed(b"data: 0123456789abcdef"),
            Err(SseError::EventTooLarge { limit: 16 })
        ));
    }

    /// Enforcement: `same_origin` on the `endpoint` event. A stream naming another host, port
    /// or scheme as where to post is refused before anything (headers, tokens) is sent there.
    #[test]
    fn an_endpoint_on_another_origin_is_refused() {
        let base = reqwest::Url::from_str("http://127.0.0.1:8000/sse").unwrap();
        for (named, same) in [
            ("/messages/?session_id=1", true),
            ("messages", true),
            ("http://127.0.0.1:8000/m", true),
            ("http://127.0.0.1:8001/m", false),
            ("https://127.0.0.1:8000/m", false),
            ("//attacker.example/m", false),
            ("http://attacker.example/m", false),
        ] {
            let joined = base.join(named).unwrap();
            assert_eq!(same_origin(&base, &joined), same, "{named}");
        }
    }

    /// Enforcement: the origin check in `SseClientTransport::open`, end to end. A server whose
    /// `endpoint` event points at another origin gets the GET, and nothing is ever posted: the
    /// entry's header never leaves for the address the stream named.
    #[tokio::test]
    async fn a_stream_naming_another_origin_receives_no_message_and_no_header() {
        use crate::loopback::{Answer, Loopback};
        let elsewhere = Loopback::start(|_, _| Answer::new(202)).await;
        let target = format!("{}/messages", elsewhere.base());
        let server = Loopback::start(move |_, _| {
            Answer::new(200)
                .header("content-type", "text/event-stream")
                .body(format!("event: endpoint\ndata: {target}\n\n"))
        })
        .await;
        let url = format!("{}/sse", server.base());
        let mut config: McpServerConfig =
            toml::from_str(&format!("url = {url:?}\ntransport = \"sse\"\n")).unwrap();
        config
            .given_headers
            .insert("X-Api-Key".into(), "the-editors-key".into());
        let refused = bosun_models::RefusedNote::default();
        let error = SseClientTransport::connect(&url, &config, &refused)
            .await
            .err()
            .expect("an endpoint elsewhere is refused");
        assert!(
            matches!(error, SseError::EndpointElsewhere { .. }),
            "{error}"
        );
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].method, "GET");
        assert_eq!(seen[0].headers["x-api-key"], "the-editors-key");
        assert!(elsewhere.seen().is_empty(), "{:?}", elsewhere.seen());
    }

    /// A server that is not an SSE server (a Streamable HTTP one answering JSON, or an error)
    /// is told apart with what to check.
    #[tokio::test]
    async fn a_server_that_answers_no_event_stream_is_named() {
        use crate::loopback::{Answer, Loopback};
        let server = Loopback::start(|_, _| Answer::new(405)).await;
        let url = format!("{}/mcp", server.base());
        let config: McpServerConfig =
            toml::from_str(&format!("url = {url:?}\ntransport = \"sse\"\n")).unwrap();
        let refused = bosun_models::RefusedNote::default();
        let error = SseClientTransport::connect(&url, &config, &refused)
            .await
            .err()
            .expect("no stream");
        assert!(error.to_string().contains("405"), "{error}");
        assert!(error.to_string().contains("is it an SSE server"), "{error}");
    }
}
