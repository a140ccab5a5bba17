//! One approved tool of an MCP server as the chokepoint sees it: its spec and risk from the
//! pin, the call itself (with the `input_required` rounds of the 2026-07-28 revision), and its
//! result as typed JSON. It approves nothing: what it offers was pinned by a person.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bosun_core::{
    Authority, Capability, CapabilityRequest, ErrorCode, Risk, Scope, ToolError, ToolName,
    ToolOutput, ToolSpec,
};
use bosun_host::data_folder;
use bosun_host::mcp_config::McpServerConfig;
use bosun_host::{Tool, ToolContext};
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value, json};

use super::{Server, action, model_name, server_error};

/// One approved tool of a server, as the chokepoint sees it.
pub struct McpTool {
    server: Arc<Server>,
    tool: String,
    spec: ToolSpec,
    action: String,
    pinned_hash: String,
    output_schema: Option<Value>,
    authority: Option<Authority>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("action", &self.action)
            .finish_non_exhaustive()
    }
}

/// The risk policy judges a tool of `server` by.
fn risk_of(config: &McpServerConfig, annotations: Option<&Value>) -> Risk {
    if !config.trusted {
        return Risk::Process;
    }
    let hint = |key: &str| annotations.and_then(|a| a[key].as_bool());
    if hint("readOnlyHint") == Some(true) {
        Risk::Read
    } else if hint("openWorldHint") == Some(false) {
        Risk::Write
    } else if config.url.is_some() {
        Risk::Network
    } else {
        Risk::Process
    }
}

impl McpTool {
    pub(super) fn new(
        server: &Arc<Server>,
        tool: &str,
        pinned: &crate::pins::PinnedTool,
    ) -> Result<Self, super::OfferError> {
        let name = ToolName::namespaced(model_name(&server.name, tool))?;
        let mut description: String = pinned
            .description
            .chars()
            .take(bosun_core::MAX_DESCRIPTION_CHARS - 40)
            .collect();
        if description.trim().is_empty() {
            description = format!("The `{tool}` tool of the MCP server `{}`.", server.name);
        }
        description.push_str(&format!(" (MCP server `{}`)", server.name));
        let risk = risk_of(&server.config, pinned.annotations.as_ref());
        let authority = server.config.url.as_deref().and_then(url_authority);
        let mut builder = ToolSpec::builder(name, description)
            .risk(risk)
            .input_schema(pinned.input_schema.clone());
        if authority.is_some() {
            builder = builder.capability(Capability::NetHttp);
        }
        let spec = builder.build()?;
        Ok(Self {
            server: server.clone(),
            tool: tool.to_owned(),
            spec,
            action: action(&server.name, tool),
            pinned_hash: pinned.hash.clone(),
            output_schema: pinned.output_schema.clone(),
            authority,
        })
    }
}

/// Raises the label of a running server to take in `from`.
fn raise(label: &super::ServerLabel, from: &bosun_host::SessionLabels) {
    label
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .raise(from);
}

/// Once a call to a running server is over, however it ended, records in its context that what
/// it got came from that server, labelled as the server is then: the chokepoint raises the
/// session to it.
struct Told<'a> {
    label: &'a super::ServerLabel,
    server: &'a str,
    ctx: &'a ToolContext,
}

impl Drop for Told<'_> {
    fn drop(&mut self) {
        let label = self
            .label
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        self.ctx.instance_label.record_from(
            bosun_host::tool::Producer::McpServer(self.server.to_owned()),
            &label,
        );
    }
}

fn url_authority(url: &str) -> Option<Authority> {
    let url = url::Url::parse(url).ok()?;
    Some(Authority::new(url.host_str()?, url.port()))
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn shutdown(&self) {
        self.server.shutdown().await;
    }

    fn sink_level(&self) -> Option<bosun_core::Classification> {
        Some(self.server.config.classification.unwrap_or_default())
    }

    fn untrusted_source(&self) -> Option<String> {
        (!self.server.config.trusted).then(|| format!("MCP server `{}`", self.server.name))
    }

    fn action(&self) -> &str {
        &self.action
    }

    fn capability_requests(
        &self,
        _input: &Value,
        _ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        // A URL server is reached over the network from Bosun itself: judged like any host.
        Ok(self
            .authority
            .iter()
            .map(|a| CapabilityRequest {
                capability: Capability::NetHttp,
                scope: Scope::authority(a.clone()),
            })
            .collect())
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(provided) = &self.server.config.provided else {
            return self.call_server(input, ctx).await;
        };
        // A plugin's server writes the plugin's data folder, which outlives this session and
        // the server: the folder's label takes in the session's before the server gets the
        // input, and what it answers — a result or an error — carries the label after.
        let from = bosun_host::SessionLabels::of(&ctx.session);
        data_folder::meet(&provided.label, &provided.plugin, Some(&from));
        let answered = self.call_server(input, ctx).await;
        let label = data_folder::meet(&provided.label, &provided.plugin, None);
        data_folder::told(&ctx.instance_label, &provided.plugin, &label);
        answered
    }
}

impl McpTool {
    /// The call itself, once the tool is known to be the one pinned.
    async fn call_server(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let server = &self.server.name;
        let (peer, current, label) = self.server.peer_for(&self.tool).await?;
        match current {
            None => {
                return Err(server_error(
                    server,
                    format!(
                        "it no longer offers `{}`; run `bosun mcp trust {server}` to review its tools",
                        self.tool
                    ),
                ));
            }
            Some(hash) if hash != self.pinned_hash => {
                return Err(server_error(
                    server,
                    format!(
                        "`{}` changed since you approved it (description, schema or annotations); it is withheld until you review it with `bosun mcp trust {server}`",
                        self.tool
                    ),
                ));
            }
            Some(_) => {}
        }
        // The running server may keep what this session sends it and tell any session it
        // serves: its label takes in this session's before it gets the input, and whatever it
        // answers (a result or an error) carries its label as it is after.
        raise(&label, &bosun_host::SessionLabels::of(&ctx.session));
        let _told = Told {
            label: &label,
            server,
            ctx,
        };
        let arguments = match input {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let mut params = CallToolRequestParams::new(self.tool.clone());
        params.arguments = Some(arguments);
        // SEP-414: the server's spans join the run's trace under this call's span.
        if let Some(traceparent) = bosun_host::telemetry::traceparent(ctx) {
            params
                .meta
                .get_or_insert_with(Default::default)
                .set_traceparent(traceparent);
        }
        let call = call_in_rounds(&peer, params);
        let result = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                return Err(ToolError::new(ErrorCode::Cancelled, format!("the call to MCP server `{server}` was cancelled")));
            }
            result = tokio::time::timeout(self.server.timeout, call) => result,
        };
        let result = match result {
            Err(_) => {
                return Err(server_error(
                    server,
                    format!(
                        "no answer within {} ms (timeout_ms in [mcp.{server}])",
                        self.server.timeout.as_millis()
                    ),
                )
                .retryable());
            }
            Ok(Err(Round::Unanswered(why))) => {
                return Err(server_error(server, format!("`{}` {why}", self.tool)));
            }
            Ok(Err(Round::Failed(rmcp::ServiceError::McpError(e)))) => {
                return Err(server_error(
                    server,
                    format!("it refused the call: {}", e.message),
                ));
            }
            Ok(Err(Round::Failed(e))) => {
                if let Some(message) =
                    crate::http_client::redirect_refused(server, &e, &self.server.redirects)
                {
                    return Err(server_error(server, message));
                }
                self.server.stopped().await;
                // A server that died has usually said why on stderr: give the reader a moment
                // to reach the end of it.
                let _ = tokio::time::timeout(
                    Duration::from_millis(500),
                    self.server.stderr_closed.notified(),
                )
                .await;
                return Err(server_error(
                    server,
                    format!("the connection failed ({e}){}", self.server.stderr_tail()),
                )
                .retryable());
            }
            Ok(Ok(result)) => result,
        };
        let content = serde_json::to_value(&result.content).unwrap_or(Value::Null);
        if result.is_error == Some(true) {
            let text: Vec<&str> = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                .collect();
            let message = if text.is_empty() {
                content.to_string()
            } else {
                text.join("\n")
            };
            return Err(ToolError::new(
                ErrorCode::PluginError,
                format!("MCP server `{server}`, tool `{}`: {message}", self.tool),
            ));
        }
        if let (Some(schema), Some(structured)) = (&self.output_schema, &result.structured_content)
        {
            let valid = jsonschema::validator_for(schema)
                .map(|v| v.is_valid(structured))
                .unwrap_or(false);
            if !valid {
                return Err(server_error(
                    server,
                    format!(
                        "`{}` returned structured content that does not match its output schema",
                        self.tool
                    ),
                ));
            }
        }
        let mut output = json!({ "content": content });
        if let Some(structured) = result.structured_content {
            output["structuredContent"] = structured;
        }
        Ok(ToolOutput::new(output))
    }
}

/// How many `input_required` rounds that carry only `requestState` one call may take.
const STATE_ROUNDS: u32 = 8;

/// Why a call ended without a result.
enum Round {
    /// The server is fine but the call cannot go on: it asked for what Bosun does not give.
    Unanswered(String),
    /// The request failed (the server refused it, or the connection broke).
    Failed(rmcp::ServiceError),
}

/// Calls a tool the way the 2026-07-28 revision allows a server to answer: `input_required`
/// with only `requestState` is a request to call again with it (retried, up to
/// [`STATE_ROUNDS`], with a short pause as rmcp's own helper does); `input_required` that asks
/// for input (an elicitation, sampling, roots) ends the call as a tool error naming what was
/// asked — Bosun's client declares none of those, so nobody would answer. Neither is a broken
/// connection.
async fn call_in_rounds(
    peer: &rmcp::service::Peer<RoleClient>,
    mut params: CallToolRequestParams,
) -> Result<rmcp::model::CallToolResult, Round> {
    use rmcp::model::CallToolResponse;
    for round in 0..STATE_ROUNDS {
        match peer
            .call_tool_once(params.clone())
            .await
            .map_err(Round::Failed)?
        {
            CallToolResponse::Complete(result) => return Ok(result),
            CallToolResponse::InputRequired(asked) => {
                let requests = asked.input_requests.unwrap_or_default();
                if !requests.is_empty() {
                    return Err(Round::Unanswered(format!(
                        "asks for input Bosun's MCP client does not give ({}); Bosun declares no elicitation, sampling or roots, so use a tool that works without them",
                        describe_input_requests(&requests)
                    )));
                }
                let Some(state) = asked.request_state else {
                    return Err(Round::Unanswered(
                        "answered `input_required` with neither input requests nor request state"
                            .to_owned(),
                    ));
                };
                params.request_state = Some(state);
                params.input_responses = None;
                tokio::time::sleep(Duration::from_millis(50 << round.min(2))).await;
            }
            // A task (SEP-2663), or a shape of a later revision: not asked for.
            _ => {
                return Err(Round::Unanswered(
                    "answered with a task, which Bosun's client does not declare support for"
                        .to_owned(),
                ));
            }
        }
    }
    Err(Round::Unanswered(format!(
        "asked to be called again more than {STATE_ROUNDS} times (`input_required`)"
    )))
}

/// What a server asked for, in words a person can read: each request's method and message,
/// shown escaped and bounded.
fn describe_input_requests(requests: &rmcp::model::InputRequests) -> String {
    requests
        .values()
        .map(|request| {
            let raw = serde_json::to_value(request).unwrap_or(Value::Null);
            let method = raw["method"].as_str().unwrap_or("an unknown request");
            let message: String = raw["params"]["message"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect();
            if message.is_empty() {
                format!("`{}`", bosun_core::escape_hidden(method))
            } else {
                format!(
                    "`{}`: \"{}\"",
                    bosun_core::escape_hidden(method),
                    bosun_core::escape_hidden(&message)
                )
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
