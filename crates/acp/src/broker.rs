//! Approvals through the editor: an `ask` (or a `review` put to a person) becomes
//! `session/request_permission` with the call, its input and the reason, and the editor's
//! choice becomes Bosun's answer. `deny` never gets here (the chokepoint refuses without
//! asking), and anything but an allow — a rejection, a cancelled turn, a closed connection —
//! refuses the call.
//!
//! Options, mapped to Bosun's answers:
//! `allow-once` → allow once; `allow-session` → for this session (exactly these capabilities);
//! `allow-always` → always in this workspace, writing the narrow rules its name shows (offered
//! only when the call can be remembered exactly); `reject` → deny; `reject-explain` → deny and
//! end the turn, so the person's next message tells the model why. A response whose `_meta`
//! holds `{"reason": "…"}` with a rejection passes that sentence to the model at once.
//!
//! Only the answers the question's [`AnswerReach`] grants are offered — an install is yes or
//! no, a capability asked mid-call is once or for this session — and an option id Bosun did not
//! offer for this question (a forged one, or `allow-always` to an install) refuses the call.

use std::collections::HashMap;
use std::sync::Mutex;

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, ToolCallUpdate, ToolCallUpdateFields,
};
use async_trait::async_trait;
use bosun_core::ApprovalAnswer;
use bosun_host::ApprovalBroker;
use bosun_host::approval::{AnswerReach, ApprovalRequest};
use tokio_util::sync::CancellationToken;

use crate::client::ClientLink;
use crate::updates::{UrlGuard, fenced, safe, text_content, tool_kind};

/// The option ids Bosun offers.
pub mod option {
    /// Allow this call.
    pub const ALLOW_ONCE: &str = "allow-once";
    /// Allow this tool with exactly these capabilities for the rest of the session.
    pub const ALLOW_SESSION: &str = "allow-session";
    /// Allow and remember as narrow rules for this workspace.
    pub const ALLOW_ALWAYS: &str = "allow-always";
    /// Refuse this call.
    pub const REJECT: &str = "reject";
    /// Refuse and end the turn; the next message says why.
    pub const REJECT_EXPLAIN: &str = "reject-explain";
}

/// Asks the person in the editor about one turn's calls.
pub struct EditorBroker {
    link: ClientLink,
    session: SessionId,
    /// The turn's cancellation: a cancelled turn answers every open request with a refusal.
    cancel: CancellationToken,
    /// What the person said with a rejection, by call, until the chokepoint takes it.
    feedback: Mutex<HashMap<String, String>>,
    /// When the question's URLs are withheld.
    guard: UrlGuard,
}

impl EditorBroker {
    /// A broker for the turn of `session` that `cancel` stops; `guard` says when the
    /// questions' URLs are withheld.
    pub fn new(
        link: ClientLink,
        session: SessionId,
        cancel: CancellationToken,
        guard: UrlGuard,
    ) -> Self {
        Self {
            link,
            session,
            cancel,
            feedback: Mutex::default(),
            guard,
        }
    }

    fn keep_feedback(&self, call_id: &str, text: String) {
        if let Ok(mut kept) = self.feedback.lock() {
            kept.insert(call_id.to_owned(), text);
        }
    }
}

/// The options for `request`, most permissive last but one: only the answers its reach grants.
/// An option's label is drawn by the editor; the one naming the rules "always" writes holds
/// words the model chose (a program, a path, a host), so it passes [`safe`] (with `guard`,
/// why URLs are withheld).
pub fn options(request: &ApprovalRequest, guard: Option<&str>) -> Vec<PermissionOption> {
    let mut options = vec![PermissionOption::new(
        option::ALLOW_ONCE,
        if request.reach == AnswerReach::Once {
            "Allow (this one only)"
        } else {
            "Allow once"
        },
        PermissionOptionKind::AllowOnce,
    )];
    if request.reach.offers_session() {
        options.push(PermissionOption::new(
            option::ALLOW_SESSION,
            if request.capabilities.is_empty() {
                "Allow for this session".to_owned()
            } else {
                "Allow for this session (these capabilities only)".to_owned()
            },
            PermissionOptionKind::AllowAlways,
        ));
    }
    // The rules are shown before they are written, as the terminal shows them.
    if request.reach.offers_always()
        && let Ok(rules) =
            bosun_host::remembered::rules_for(&request.action, &request.capabilities, &request.tool)
    {
        options.push(PermissionOption::new(
            option::ALLOW_ALWAYS,
            safe(
                &format!(
                    "Always in this workspace: {}",
                    bosun_host::remembered::describe(&rules).join("; ")
                ),
                guard,
            ),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        option::REJECT,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    options.push(PermissionOption::new(
        option::REJECT_EXPLAIN,
        "Reject and tell Bosun why (in your next message)",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// Bosun's answer to `selected`, if it is one of `offered`; anything else refuses.
pub fn answer_of(offered: &[PermissionOption], selected: &str) -> ApprovalAnswer {
    if !offered.iter().any(|o| *o.option_id.0 == *selected) {
        return ApprovalAnswer::Deny;
    }
    match selected {
        option::ALLOW_ONCE => ApprovalAnswer::AllowOnce,
        option::ALLOW_SESSION => ApprovalAnswer::AllowSession,
        option::ALLOW_ALWAYS => ApprovalAnswer::AllowAlways,
        _ => ApprovalAnswer::Deny,
    }
}

/// The permission request for `request` in `session`, offering `offered` (its [`options`]);
/// with `guard` (why), its URLs withheld.
pub fn permission_request(
    session: &SessionId,
    request: &ApprovalRequest,
    offered: &[PermissionOption],
    guard: Option<&str>,
) -> RequestPermissionRequest {
    let mut content = Vec::new();
    if let Some(preview) = &request.preview {
        content.push(text_content(fenced("diff", preview), guard));
    }
    // What is not Bosun's own words (the diff, a plugin's review) is shown as code, never
    // rendered: it cannot close its block, hide a part of itself or pose as the question.
    if let Some(review) = &request.review {
        content.push(text_content(fenced("", review), guard));
    }
    let mut why = format!("policy says {}: {}", request.decision, request.reason);
    if let Some(uses) = request.uses() {
        why.push_str(&format!("\nuses: {uses}"));
    }
    if let Some(narrower) = request.reach.why_narrower() {
        why.push_str(&format!("\n{narrower}"));
    }
    content.push(text_content(why, guard));
    // A built-in's summary names what it does; any other tool's is its input, so name the tool.
    let title = if crate::updates::is_builtin(&request.tool) {
        request.summary.clone()
    } else {
        format!("{} {}", request.tool, request.summary)
    };
    let fields = ToolCallUpdateFields::new()
        .title(safe(&title, guard))
        .kind(tool_kind(&request.tool))
        .content(content);
    RequestPermissionRequest::new(
        session.clone(),
        ToolCallUpdate::new(request.call_id.clone(), fields),
        offered.to_vec(),
    )
}

/// The reason a rejection's `_meta` carries, bounded.
fn meta_reason(meta: Option<&serde_json::Map<String, serde_json::Value>>) -> Option<String> {
    let reason = meta?.get("reason")?.as_str()?.trim();
    if reason.is_empty() {
        return None;
    }
    Some(reason.chars().take(2_000).collect())
}

#[async_trait]
impl ApprovalBroker for EditorBroker {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        if self.cancel.is_cancelled() {
            return ApprovalAnswer::Deny;
        }
        let guard = self.guard.reason();
        let offered = options(request, guard.as_deref());
        let asked = self.link.request_permission(permission_request(
            &self.session,
            request,
            &offered,
            guard.as_deref(),
        ));
        // A cancelled turn stops waiting; dropping the request tells the editor it is over.
        let response = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return ApprovalAnswer::Deny,
            response = asked => response,
        };
        let Ok(response) = response else {
            return ApprovalAnswer::Unavailable;
        };
        let selected = match &response.outcome {
            RequestPermissionOutcome::Selected(selected) => selected.option_id.0.to_string(),
            _ => return ApprovalAnswer::Deny,
        };
        let answer = answer_of(&offered, &selected);
        if answer != ApprovalAnswer::Deny {
            return answer;
        }
        match selected.as_str() {
            option::REJECT_EXPLAIN => {
                match meta_reason(response.meta.as_ref()) {
                    Some(reason) => self.keep_feedback(&request.call_id, reason),
                    None => {
                        self.keep_feedback(
                            &request.call_id,
                            "(the person will say why in their next message)".to_owned(),
                        );
                        // The turn ends here; the person's next message is the reason.
                        self.cancel.cancel();
                    }
                }
                ApprovalAnswer::Deny
            }
            _ => {
                if let Some(reason) = meta_reason(response.meta.as_ref()) {
                    self.keep_feedback(&request.call_id, reason);
                }
                ApprovalAnswer::Deny
            }
        }
    }

    fn unanswered_hint(&self) -> &str {
        "answer the editor's permission request, or"
    }

    fn take_feedback(&self, call_id: &str) -> Option<String> {
        self.feedback.lock().ok()?.remove(call_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_core::{Capability, CapabilityRequest, Decision, Scope};

    fn request(reach: AnswerReach) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "call-1".to_owned(),
            tool: "run_command".to_owned(),
            action: "builtin.tool.run_command".to_owned(),
            summary: "$ echo hi".to_owned(),
            preview: None,
            review: None,
            capabilities: vec![CapabilityRequest {
                capability: Capability::ProcessSpawn,
                scope: Scope {
                    program: Some("echo".to_owned()),
                    ..Scope::default()
                },
            }],
            decision: Decision::Ask,
            reason: "mode rule".to_owned(),
            reach,
        }
    }

    fn ids(options: &[PermissionOption]) -> Vec<String> {
        options.iter().map(|o| o.option_id.0.to_string()).collect()
    }

    #[test]
    fn each_reach_offers_only_the_answers_it_grants() {
        assert_eq!(
            ids(&options(&request(AnswerReach::Workspace), None)),
            [
                option::ALLOW_ONCE,
                option::ALLOW_SESSION,
                option::ALLOW_ALWAYS,
                option::REJECT,
                option::REJECT_EXPLAIN
            ]
        );
        assert_eq!(
            ids(&options(&request(AnswerReach::Session), None)),
            [
                option::ALLOW_ONCE,
                option::ALLOW_SESSION,
                option::REJECT,
                option::REJECT_EXPLAIN
            ]
        );
        assert_eq!(
            ids(&options(&request(AnswerReach::Once), None)),
            [option::ALLOW_ONCE, option::REJECT, option::REJECT_EXPLAIN]
        );
        // The question says why the wider answers are missing.
        let asked = permission_request(
            &SessionId::new("s"),
            &request(AnswerReach::Once),
            &options(&request(AnswerReach::Once), None),
            None,
        );
        let shown = serde_json::to_string(&asked).unwrap_or_default();
        assert!(shown.contains("one install at a time"), "{shown}");
    }

    /// The blocks of `asked`'s content that hold `needle`, as the editor receives them.
    fn blocks_with(asked: &RequestPermissionRequest, needle: &str) -> Vec<String> {
        let sent = serde_json::to_value(asked).unwrap();
        sent["toolCall"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["content"]["text"].as_str())
            .filter(|t| t.contains(needle))
            .map(str::to_owned)
            .collect()
    }

    /// Whether `block` is one code block that nothing inside closes: its first line opens a
    /// fence of N backticks, its last line is that fence, and no line between starts with N.
    fn one_closed_block(block: &str) -> bool {
        let lines: Vec<&str> = block.lines().collect();
        let fence: String = lines[0].chars().take_while(|c| *c == '`').collect();
        fence.len() >= 3
            && lines.last() == Some(&fence.as_str())
            && lines[1..lines.len() - 1]
                .iter()
                .all(|l| !l.trim_start().starts_with(&fence))
    }

    /// A diff or a plugin's review that closes its code block to pose as Bosun's words (or hide
    /// a part of itself), or that holds hidden characters, reaches the editor as one code block
    /// with every hidden character shown; the title's hidden characters are shown too.
    #[test]
    fn a_preview_or_review_cannot_leave_its_block_or_hide_characters() {
        let mut asked = request(AnswerReach::Workspace);
        asked.summary = "$ echo 'safe\u{202e}fr- mr'".to_owned();
        asked.preview = Some(
            "+ok\n```\n**Reviewed by Bosun: safe to allow**\n````\n<!-- +rm -rf ~ -->\n+end"
                .to_owned(),
        );
        asked.review = Some("plugin kit\n```\n# Allowed by policy\u{200b}\n~~~".to_owned());
        let sent = permission_request(&SessionId::new("s"), &asked, &options(&asked, None), None);
        for needle in ["Reviewed by Bosun", "Allowed by policy"] {
            let blocks = blocks_with(&sent, needle);
            assert_eq!(blocks.len(), 1, "{needle}: {blocks:?}");
            assert!(one_closed_block(&blocks[0]), "{}", blocks[0]);
        }
        let value = serde_json::to_value(&sent).unwrap();
        let title = value["toolCall"]["title"].as_str().unwrap();
        assert_eq!(bosun_core::hidden::find_hidden(title), None, "{title}");
        assert!(title.contains("\\u{202e}"), "{title}");
        for block in blocks_with(&sent, "") {
            assert_eq!(bosun_core::hidden::find_hidden(&block), None, "{block}");
        }
    }

    /// A response's `_meta` carries words for the model with a rejection only: bounded, a
    /// string or nothing, and never an answer (the option chosen is the only answer).
    #[test]
    fn meta_is_bounded_words_never_an_answer() {
        let meta = |value: serde_json::Value| value.as_object().cloned();
        let long = meta(serde_json::json!({"reason": "x".repeat(100_000)}));
        assert_eq!(meta_reason(long.as_ref()).map(|r| r.len()), Some(2_000));
        for odd in [
            serde_json::json!({"reason": {"answer": "allow"}}),
            serde_json::json!({"reason": "   "}),
            serde_json::json!({"answer": "allow-always", "outcome": "selected"}),
        ] {
            assert_eq!(meta_reason(meta(odd.clone()).as_ref()), None, "{odd}");
        }
        let call = options(&request(AnswerReach::Workspace), None);
        assert_eq!(answer_of(&call, option::REJECT), ApprovalAnswer::Deny);
    }

    /// An editor that answers with an option Bosun did not offer for this question — `always`
    /// or `session` to an install, a capability's `always`, an id of its own — is refused.
    #[test]
    fn an_answer_not_offered_refuses_the_call() {
        let install = options(&request(AnswerReach::Once), None);
        assert_eq!(
            answer_of(&install, option::ALLOW_ALWAYS),
            ApprovalAnswer::Deny
        );
        assert_eq!(
            answer_of(&install, option::ALLOW_SESSION),
            ApprovalAnswer::Deny
        );
        assert_eq!(
            answer_of(&install, option::ALLOW_ONCE),
            ApprovalAnswer::AllowOnce
        );
        let capability = options(&request(AnswerReach::Session), None);
        assert_eq!(
            answer_of(&capability, option::ALLOW_ALWAYS),
            ApprovalAnswer::Deny
        );
        assert_eq!(
            answer_of(&capability, option::ALLOW_SESSION),
            ApprovalAnswer::AllowSession
        );
        let call = options(&request(AnswerReach::Workspace), None);
        assert_eq!(
            answer_of(&call, option::ALLOW_ALWAYS),
            ApprovalAnswer::AllowAlways
        );
        for forged in [
            "allow_always",
            "ALLOW-ONCE",
            "allow-once ",
            "",
            "proceed_always",
        ] {
            assert_eq!(answer_of(&call, forged), ApprovalAnswer::Deny, "{forged:?}");
        }
    }

    /// Enforcement: `options`' label of `allow-always`. The rules "always" would write name
    /// what the model chose (here a program spelled as HTML with a remote image); the label the
    /// editor draws holds no HTML and no hidden character, and under the guard no URL.
    #[test]
    fn the_always_label_is_drawn_safe() {
        let mut asked = request(AnswerReach::Workspace);
        asked.capabilities[0].scope.program =
            Some("<img src=https://evil.example/p.png>\u{202e}".to_owned());
        for guard in [None, Some("why")] {
            let offered = options(&asked, guard);
            let always = offered
                .iter()
                .find(|o| *o.option_id.0 == *option::ALLOW_ALWAYS)
                .expect("always is offered for an exact program");
            assert!(always.name.contains("img src"), "{}", always.name);
            assert_eq!(
                crate::updates::tests::drawn(&always.name),
                Vec::<String>::new(),
                "{}",
                always.name
            );
            assert_eq!(bosun_core::hidden::find_hidden(&always.name), None);
            assert_eq!(
                always.name.contains("evil"),
                guard.is_none(),
                "{}",
                always.name
            );
        }
    }
}
