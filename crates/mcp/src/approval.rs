//! Approvals for `bosun serve`: a call policy would `ask` about is put to the client's user as
//! an MCP form elicitation ("Allow <tool>?", with one checkbox to allow it for the rest of the
//! session). Accepting allows the call; declining, cancelling, a timeout, a client that cannot
//! elicit, or a protocol revision that forbids server-to-client requests (2026-07-28) all refuse
//! it — the chokepoint then answers `needs_approval` with how to pre-approve the call.

use std::time::Duration;

use async_trait::async_trait;
use bosun_core::ApprovalAnswer;
use bosun_host::approval::{ApprovalBroker, ApprovalRequest};
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use serde_json::Value;

/// How long the client's user has to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// The checkbox that widens an approval to the session.
const FOR_SESSION: &str = "allow_for_this_session";

/// Asks the client's user through elicitation.
pub struct ElicitingBroker {
    peer: Peer<RoleServer>,
}

impl ElicitingBroker {
    /// A broker asking through `peer`.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }
}

/// The question as the client's user sees it. The summary is already redacted.
pub(crate) fn question(request: &ApprovalRequest) -> String {
    let mut text = format!(
        "Bosun's policy asks before this call.\n\nTool: {}\nAction: {}\nInput: {}\nWhy: {}",
        request.tool, request.action, request.summary, request.reason
    );
    if !request.capabilities.is_empty() {
        let caps: Vec<String> = request
            .capabilities
            .iter()
            .map(ToString::to_string)
            .collect();
        text.push_str(&format!("\nUses: {}", caps.join(", ")));
    }
    text.push_str("\n\nAccept to allow it; decline to refuse it.");
    text
}

#[async_trait]
impl ApprovalBroker for ElicitingBroker {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let Ok(schema) = ElicitationSchema::builder()
            .optional_bool(FOR_SESSION, false)
            .description("Allow this tool call?")
            .build()
        else {
            return ApprovalAnswer::Unavailable;
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question(request),
            requested_schema: schema,
        };
        match self
            .peer
            .create_elicitation_with_timeout(params, Some(ANSWER_TIMEOUT))
            .await
        {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept => {
                    let session = answer
                        .content
                        .as_ref()
                        .and_then(|c| c.get(FOR_SESSION))
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    if session {
                        ApprovalAnswer::AllowSession
                    } else {
                        ApprovalAnswer::AllowOnce
                    }
                }
                // Decline, cancel, and any answer a later revision adds: not an allow.
                _ => ApprovalAnswer::Deny,
            },
            // No elicitation (the client cannot, the revision forbids it, no answer in time).
            Err(_) => ApprovalAnswer::Unavailable,
        }
    }

    fn unanswered_hint(&self) -> &str {
        "answer when your MCP client asks (it needs elicitation support and MCP 2025-11-25 or older), or"
    }
}

/// The broker of 2026-07-28 requests: that revision allows no request back to the client
/// during a call, so nobody can be asked.
pub struct Unaskable;

#[async_trait]
impl ApprovalBroker for Unaskable {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Unavailable
    }

    fn unanswered_hint(&self) -> &str {
        "MCP 2026-07-28 cannot ask your user during a call (connect with 2025-11-25 and elicitation to be asked), or"
    }

    fn has_person(&self) -> bool {
        false
    }
}
