//! Approvals for `bosun serve`: a call policy would `ask` about is put to the client's user as
//! an MCP form elicitation ("Allow <tool>?", with one checkbox to allow it for the rest of the
//! session). Accepting allows the call; declining refuses it (`denied`, the person said no);
//! a question dismissed without an answer (`cancel`: what a client running without a person, like
//! `claude -p`, answers), a timeout or a client that cannot elicit leave it unanswered — the
//! chokepoint then answers `needs_approval` with how to pre-approve the call. Only a client that declared form elicitation is ever sent one: any other is refused at
//! once rather than left to ignore a request it never said it could answer.
//!
//! The form's `requestedSchema` carries only the keys the specification's schema names
//! (`type`, `properties`, `required`; 2025-11-25): a client may cancel a form with any other
//! (`spec/elicit-requested-schema.2025-11-25.json`, checked by a test).
//!
//! The 2026-07-28 revision forbids requests back to the client during a call. There the question
//! ends the call with an `input_required` result carrying the elicitation, and the client's retry
//! of the same call carries the answer ([`RoundTrip`], multi-round-trip requests): the call runs
//! again from the start with that question answered. Answers from earlier rounds travel in the
//! request state, sealed ([`crate::state`]): bound to the caller and to the call (tool and
//! arguments) they were given for, valid until it expires, and opened once per instance, so a
//! retry may reach any instance holding the key while a forged, altered, expired or replayed
//! state is refused.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bosun_core::ApprovalAnswer;
use bosun_host::approval::{ApprovalBroker, ApprovalRequest};
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputResponses,
};
use rmcp::service::Peer;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::state::{StateRefused, StateSeal};

/// How long the client's user has to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// The checkbox that widens an approval to the session.
const FOR_SESSION: &str = "allow_for_this_session";

/// Whether a client with `capabilities` can answer a form elicitation: it declared
/// `elicitation` with `form`, or with neither mode (the form of revisions before modes).
pub(crate) fn can_elicit_form(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Asks the client's user through elicitation, when the client declared it can be asked.
pub struct ElicitingBroker {
    peer: Peer<RoleServer>,
    /// What the client declared in its handshake: nothing else is ever sent a form.
    can_elicit: bool,
}

impl ElicitingBroker {
    /// A broker asking through `peer`, as far as the capabilities of its handshake allow.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        let info = peer.peer_info();
        let can_elicit = can_elicit_form(info.as_ref().map(|info| &info.capabilities));
        Self { peer, can_elicit }
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
    if let Some(review) = &request.review {
        text.push_str(&format!("\n\nReview:\n{review}"));
    }
    if let Some(why) = request.reach.why_narrower() {
        text.push_str(&format!("\n\n{why}"));
    }
    text.push_str("\n\nAccept to allow it; decline to refuse it.");
    text
}

/// Bosun's answer to a form the client's user accepted with `content`: once, or for this
/// session when the checkbox was ticked — only where the question's reach offered it. A
/// ticked checkbox Bosun did not offer (an install is one question at a time) is an answer
/// not offered, and refuses the call.
fn accepted(request: &ApprovalRequest, content: Option<&Value>) -> ApprovalAnswer {
    let session = content
        .and_then(|c| c.get(FOR_SESSION))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let answer = if session {
        ApprovalAnswer::AllowSession
    } else {
        ApprovalAnswer::AllowOnce
    };
    request.reach.admit(answer)
}

/// The form asking `request`: its question and, when the answer can last for a session, the
/// checkbox that widens it. The question is the message; the schema says nothing of its own
/// at its top level, where the specification allows no `title` or `description`.
fn form(request: &ApprovalRequest, session_box: bool) -> Option<ElicitRequestParams> {
    let builder = ElicitationSchema::builder();
    let builder = if session_box {
        builder.optional_bool_with(FOR_SESSION, |b| {
            b.with_default(false)
                .title("Allow for this session")
                .description("Allow this tool with these capabilities until the session ends")
        })
    } else {
        builder
    };
    let schema = builder.build().ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question(request),
        requested_schema: schema,
    })
}

#[async_trait]
impl ApprovalBroker for ElicitingBroker {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        if !self.can_elicit {
            return ApprovalAnswer::Unavailable;
        }
        let Some(params) = form(request, request.reach.offers_session()) else {
            return ApprovalAnswer::Unavailable;
        };
        match self
            .peer
            .create_elicitation_with_timeout(params, Some(ANSWER_TIMEOUT))
            .await
        {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept => accepted(request, answer.content.as_ref()),
                ElicitationAction::Decline => ApprovalAnswer::Deny,
                // Dismissed without a choice (the specification's `cancel`), and any answer a
                // later revision adds: not an allow, and not the person's no either.
                _ => ApprovalAnswer::Unavailable,
            },
            // No elicitation (the client cannot, the revision forbids it, no answer in time).
            Err(_) => ApprovalAnswer::Unavailable,
        }
    }

    fn unanswered_hint(&self) -> &str {
        if self.can_elicit {
            UNANSWERED
        } else {
            "your MCP client did not declare form elicitation, so Bosun cannot ask its user: use a client that declares `elicitation` in its capabilities, or"
        }
    }

    fn has_person(&self) -> bool {
        self.can_elicit
    }
}

/// What a client that can be asked is told when its user gave no answer.
const UNANSWERED: &str = "your MCP client was asked and gave no answer (it dismissed the question, as a client running without a person does — `claude -p`, `codex exec` — or did not answer in time): answer when it asks, or";

/// The broker of 2026-07-28 requests. That revision allows no request back to the client during
/// a call: a question the call in progress ([`ROUND`]) has no answer for is noted and refused
/// for now, and the server ends the call with `input_required` so that the client's user can
/// answer it in a retry. Outside a round, or for a client that cannot elicit, nobody can be
/// asked.
pub struct RoundTrip;

tokio::task_local! {
    /// The round of the 2026-07-28 call being made.
    pub(crate) static ROUND: Arc<Round>;
}

/// One attempt of a 2026-07-28 call: the answers it carries and the questions it raised.
#[derive(Debug, Default)]
pub(crate) struct Round {
    /// Whether the client can answer a form elicitation.
    can_elicit: bool,
    /// What binds answers to this call: the tool and its arguments.
    call: String,
    /// What the state is sealed to: the caller and the call.
    binding: Vec<u8>,
    /// Seals the state a retry echoes.
    seal: Option<Arc<StateSeal>>,
    /// Answers given in earlier rounds, by question.
    answers: BTreeMap<String, Answer>,
    /// Questions this attempt raised without an answer: key and form.
    asked: Mutex<Vec<(String, ElicitRequestParams)>>,
}

/// The request state a retry echoes: the call it is bound to, the answers so far and the
/// questions of the last round. Sealed to the caller and the call: an accepted answer in it is
/// an approval, so it must come from this server, for this call, once.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct State {
    call: String,
    answers: BTreeMap<String, Answer>,
    asked: Vec<String>,
}

/// What the client's user did with a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Answer {
    /// Allowed it.
    Accept,
    /// Refused it.
    Decline,
    /// Dismissed it without a choice (`cancel`, or an action this revision does not name).
    Dismiss,
}

impl Answer {
    fn of(action: &str) -> Self {
        match action {
            "accept" => Self::Accept,
            "decline" => Self::Decline,
            _ => Self::Dismiss,
        }
    }
}

/// The digest naming one call: its tool and arguments.
pub(crate) fn call_digest(tool: &str, arguments: &serde_json::Value) -> String {
    let digest = Sha256::digest(format!("{tool}\n{arguments}").as_bytes());
    bosun_core::text::hex(&digest)
}

/// A key naming one question: the same question (tool, action, input, reason, capabilities)
/// always has the same key, another question never.
fn question_key(request: &ApprovalRequest) -> String {
    let digest = Sha256::digest(question(request).as_bytes());
    bosun_core::text::hex(&digest[..16])
}

impl Round {
    /// The round of `caller`'s call of `tool` with `arguments`, from what the client sent:
    /// its capability to elicit, and the state and answers of a retry (answers count only with
    /// the state they answer).
    ///
    /// # Errors
    /// A state that `seal` does not open for this caller and call: forged, altered, another
    /// caller's or call's, expired, or already used here.
    pub(crate) fn new(
        can_elicit: bool,
        seal: &Arc<StateSeal>,
        caller: &str,
        tool: &str,
        arguments: &serde_json::Value,
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<Round, StateRefused> {
        let call = call_digest(tool, arguments);
        let binding = format!("{caller}\n{call}").into_bytes();
        let mut answers = BTreeMap::new();
        if let Some(state) = state {
            let state: State = seal.open(state, &binding)?;
            if state.call != call {
                return Err(StateRefused::Forged);
            }
            answers = state.answers;
            for key in state.asked {
                let answer = responses
                    .and_then(|r| r.get(&key))
                    .and_then(|answer| answer.get("action"))
                    .and_then(Value::as_str)
                    .map(Answer::of);
                // A question left unanswered stays open; a dismissed one is not asked again.
                if let Some(answer) = answer {
                    answers.insert(key, answer);
                }
            }
        }
        Ok(Round {
            can_elicit,
            call,
            binding,
            seal: Some(seal.clone()),
            answers,
            asked: Mutex::new(Vec::new()),
        })
    }

    /// The `input_required` answer when this attempt raised questions: the forms to show and
    /// the state to echo.
    pub(crate) fn input_required(&self) -> Option<(InputRequests, String)> {
        let asked = self.asked.lock().map(|a| a.clone()).unwrap_or_default();
        if asked.is_empty() {
            return None;
        }
        let state = State {
            call: self.call.clone(),
            answers: self.answers.clone(),
            asked: asked.iter().map(|(key, _)| key.clone()).collect(),
        };
        let requests = asked
            .into_iter()
            .map(|(key, form)| (key, InputRequest::Elicitation(ElicitRequest::new(form))))
            .collect();
        let sealed = self.seal.as_ref()?.seal(&state, &self.binding)?;
        Some((requests, sealed))
    }
}

#[async_trait]
impl ApprovalBroker for RoundTrip {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let key = question_key(request);
        ROUND
            .try_with(|round| {
                if !round.can_elicit {
                    return ApprovalAnswer::Unavailable;
                }
                match round.answers.get(&key) {
                    // Once only: 2026-07-28 has no sessions, so an answer cannot outlive the call.
                    Some(Answer::Accept) => ApprovalAnswer::AllowOnce,
                    Some(Answer::Decline) => ApprovalAnswer::Deny,
                    // Dismissed: unanswered, and not put again (a client without a person would
                    // dismiss it again, round after round).
                    Some(Answer::Dismiss) => ApprovalAnswer::Unavailable,
                    None => {
                        if let (Some(form), Ok(mut asked)) =
                            (form(request, false), round.asked.lock())
                            && !asked.iter().any(|(k, _)| *k == key)
                        {
                            asked.push((key, form));
                        }
                        ApprovalAnswer::Unavailable
                    }
                }
            })
            .unwrap_or(ApprovalAnswer::Unavailable)
    }

    fn unanswered_hint(&self) -> &str {
        if self.has_person() {
            UNANSWERED
        } else {
            "your MCP client did not declare form elicitation, so Bosun cannot ask its user: use a client that declares `elicitation` in its capabilities, or"
        }
    }

    fn has_person(&self) -> bool {
        ROUND.try_with(|round| round.can_elicit).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_core::Decision;
    use serde_json::json;

    fn request(program: &str) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "mcp-1".to_owned(),
            tool: "run_command".to_owned(),
            action: "builtin.tool.run_command".to_owned(),
            summary: format!("run {program}"),
            preview: None,
            review: None,
            capabilities: Vec::new(),
            decision: Decision::Ask,
            reason: "mode rule".to_owned(),
            reach: bosun_host::approval::AnswerReach::Workspace,
        }
    }

    fn ask(round: Round, program: &str) -> (ApprovalAnswer, Arc<Round>) {
        let round = Arc::new(round);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let answer = runtime.block_on(ROUND.scope(round.clone(), async {
            RoundTrip.ask(&request(program)).await
        }));
        (answer, round)
    }

    /// The state and an accepting answer a client would send back after `first`.
    fn answered(first: &Round) -> (String, InputResponses) {
        let (requests, state) = first.input_required().unwrap();
        let responses = requests
            .keys()
            .map(|key| (key.clone(), json!({"action": "accept", "content": {}})))
            .collect();
        (state, responses)
    }

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    /// The round of alice's call as an instance holding [`KEY`] opens it: each call of this is
    /// another instance behind the same load balancer, so a state it opened elsewhere opens
    /// here too.
    fn round(
        can_elicit: bool,
        tool: &str,
        args: &Value,
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Round {
        let seal = Arc::new(StateSeal::new(KEY, crate::state::DEFAULT_STATE_TTL).unwrap());
        Round::new(can_elicit, &seal, "alice", tool, args, state, responses)
            .unwrap_or_else(|e| panic!("the state opens: {e}"))
    }

    #[test]
    fn an_answer_allows_only_the_call_and_the_question_it_was_given_for() {
        let args = json!({"program": "touch"});
        let (answer, first) = ask(round(true, "run_command", &args, None, None), "touch");
        assert_eq!(answer, ApprovalAnswer::Unavailable);
        let (state, responses) = answered(&first);

        // The retry of the same call with the answer: allowed, once.
        let retry = round(true, "run_command", &args, Some(&state), Some(&responses));
        assert_eq!(ask(retry, "touch").0, ApprovalAnswer::AllowOnce);

        // The same state and answers sent with other arguments: nothing carries over (the
        // state is refused outright).
        let other = json!({"program": "rm"});
        let seal = Arc::new(StateSeal::new(KEY, crate::state::DEFAULT_STATE_TTL).unwrap());
        let replayed = Round::new(
            true,
            &seal,
            "alice",
            "run_command",
            &other,
            Some(&state),
            Some(&responses),
        );
        assert_eq!(replayed.err(), Some(StateRefused::Forged));

        // Within the same call, an answer settles only its own question.
        let retry = round(true, "run_command", &args, Some(&state), Some(&responses));
        assert_eq!(ask(retry, "something else").0, ApprovalAnswer::Unavailable);

        // Answers without the state are not taken; a declined question is a refusal.
        let bare = round(true, "run_command", &args, None, Some(&responses));
        assert_eq!(ask(bare, "touch").0, ApprovalAnswer::Unavailable);
        let declined: InputResponses = responses
            .keys()
            .map(|key| (key.clone(), json!({"action": "decline"})))
            .collect();
        let retry = round(true, "run_command", &args, Some(&state), Some(&declined));
        assert_eq!(ask(retry, "touch").0, ApprovalAnswer::Deny);
    }

    #[test]
    fn an_answered_state_is_refused_to_another_caller_and_the_second_time_here() {
        let args = json!({"program": "touch"});
        let seal = Arc::new(StateSeal::new(KEY, crate::state::DEFAULT_STATE_TTL).unwrap());
        let first = Round::new(true, &seal, "alice", "run_command", &args, None, None).unwrap();
        let (_, first) = ask(first, "touch");
        let (state, responses) = answered(&first);
        let open = |caller: &str| {
            Round::new(
                true,
                &seal,
                caller,
                "run_command",
                &args,
                Some(&state),
                Some(&responses),
            )
            .err()
        };
        assert_eq!(open("mallory"), Some(StateRefused::Forged));
        assert_eq!(open("alice"), None);
        assert_eq!(open("alice"), Some(StateRefused::Replayed));
        // A state written by hand, as the unsealed one used to be, approves nothing.
        let forged = serde_json::to_string(&State {
            call: call_digest("run_command", &args),
            answers: BTreeMap::new(),
            asked: responses.keys().cloned().collect(),
        })
        .unwrap();
        let refused = Round::new(
            true,
            &seal,
            "alice",
            "run_command",
            &args,
            Some(&forged),
            Some(&responses),
        );
        assert_eq!(refused.err(), Some(StateRefused::Forged));
    }

    #[test]
    fn a_dismissed_question_is_unanswered_not_refused_and_not_asked_again() {
        let args = json!({"program": "touch"});
        let (_, first) = ask(round(true, "run_command", &args, None, None), "touch");
        let (requests, state) = first.input_required().unwrap();
        // What `claude -p` answers: the question dismissed, nobody having seen it.
        let cancelled: InputResponses = requests
            .keys()
            .map(|key| (key.clone(), json!({"action": "cancel"})))
            .collect();
        let retry = round(true, "run_command", &args, Some(&state), Some(&cancelled));
        let (answer, retry) = ask(retry, "touch");
        assert_eq!(answer, ApprovalAnswer::Unavailable);
        // Not put again: the call ends with needs_approval instead of another round.
        assert!(retry.input_required().is_none());
        let hint = ROUND.sync_scope(retry, || RoundTrip.unanswered_hint().to_owned());
        assert!(hint.contains("gave no answer"), "{hint}");
    }

    /// The specification's schema for a form's `requestedSchema` (a committed fragment of the
    /// spec's `schema.json`), closed: every object it describes takes only the keys it names.
    fn spec_requested_schema() -> jsonschema::Validator {
        fn close(schema: &mut Value) {
            match schema {
                Value::Object(map) => {
                    if map.get("type") == Some(&json!("object"))
                        && map.contains_key("properties")
                        && !map.contains_key("additionalProperties")
                    {
                        map.insert("additionalProperties".to_owned(), json!(false));
                    }
                    map.values_mut().for_each(close);
                }
                Value::Array(items) => items.iter_mut().for_each(close),
                _ => {}
            }
        }
        let mut schema: Value = serde_json::from_str(include_str!(
            "../spec/elicit-requested-schema.2025-11-25.json"
        ))
        .unwrap_or_else(|e| panic!("the spec fixture is JSON: {e}"));
        close(&mut schema);
        jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("the spec fixture: {e}"))
    }

    fn requested_schema(params: &ElicitRequestParams) -> Value {
        let wire = serde_json::to_value(params).unwrap_or_else(|e| panic!("{e}"));
        wire["requestedSchema"].clone()
    }

    #[test]
    fn every_approval_form_carries_only_what_the_spec_schema_allows() {
        let spec = spec_requested_schema();
        // Both forms: with the session checkbox (handshake revisions) and without (2026-07-28).
        for session_box in [true, false] {
            let params =
                form(&request("touch"), session_box).unwrap_or_else(|| panic!("the form builds"));
            let schema = requested_schema(&params);
            let errors: Vec<String> = spec.iter_errors(&schema).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{schema}: {errors:?}");
        }
        // The check is not vacuous: each key a client may refuse fails it, at the top level
        // and in the checkbox.
        let good = requested_schema(
            &form(&request("touch"), true).unwrap_or_else(|| panic!("the form builds")),
        );
        for (pointer, key) in [
            ("", "description"),
            ("", "title"),
            ("", "additionalProperties"),
            ("/properties/allow_for_this_session", "enumNames"),
            ("/properties/allow_for_this_session", "const"),
        ] {
            let mut bad = good.clone();
            if let Some(Value::Object(map)) = bad.pointer_mut(pointer) {
                map.insert(key.to_owned(), json!("x"));
            }
            assert!(!spec.is_valid(&bad), "{pointer}/{key} must fail: {bad}");
        }
        let mut nested = good.clone();
        nested["properties"]["allow_for_this_session"] =
            json!({"type": "object", "properties": {}});
        assert!(!spec.is_valid(&nested), "a nested object must fail");
    }

    /// An install is one question with its own review: its form has no session checkbox and
    /// says why, and a client that ticks the checkbox anyway (an answer Bosun did not offer)
    /// gets a refusal, not a grant that would let the next install through unasked.
    #[test]
    fn an_install_form_offers_no_session_and_a_forged_tick_refuses() {
        use bosun_host::approval::AnswerReach;
        let install = ApprovalRequest {
            reach: AnswerReach::Once,
            ..request("touch")
        };
        let shown = serde_json::to_string(&form(&install, install.reach.offers_session()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!shown.contains(FOR_SESSION), "{shown}");
        assert!(shown.contains("one install at a time"), "{shown}");
        let ticked = json!({ FOR_SESSION: true });
        assert_eq!(accepted(&install, Some(&ticked)), ApprovalAnswer::Deny);
        assert_eq!(accepted(&install, None), ApprovalAnswer::AllowOnce);
        // A whole call offers the checkbox, and a tick grants the session.
        let call = request("touch");
        let shown = serde_json::to_string(&form(&call, call.reach.offers_session()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(shown.contains(FOR_SESSION), "{shown}");
        assert_eq!(accepted(&call, Some(&ticked)), ApprovalAnswer::AllowSession);
        assert_eq!(
            accepted(&call, Some(&json!({ FOR_SESSION: false }))),
            ApprovalAnswer::AllowOnce
        );
    }

    #[test]
    fn a_client_that_cannot_elicit_is_never_asked() {
        let args = json!({});
        let (answer, round) = ask(round(false, "run_command", &args, None, None), "touch");
        assert_eq!(answer, ApprovalAnswer::Unavailable);
        assert!(round.input_required().is_none());
        // Outside a round (no call being made) nobody is asked either.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(
            runtime.block_on(RoundTrip.ask(&request("touch"))),
            ApprovalAnswer::Unavailable
        );
    }
}
