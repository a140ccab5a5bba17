//! Step 5 of the chokepoint, and what a running call asks for: deny stops, `review` goes to
//! the reviewer, `ask` to a person; "always" answers are written as policy rules. Nothing here
//! allows silently: an unsure, unanswered or failed review goes to a person.

use std::time::Duration;

use bosun_core::{
    ApprovalAnswer, CapabilityRequest, Decision, ErrorCode, Event, Explanation, Risk, ToolError,
};
use bosun_policy::Subject;

use super::{Chokepoint, ToolCall};
use crate::Tool;
use crate::approval::ApprovalRequest;
use crate::review::{ReviewContext, ReviewError, ReviewRequest, Verdict};
use crate::session::Session;
use crate::tool::MidCallAsk;
use crate::trace::Trace;

/// What a person is asked to approve.
struct Asking<'a> {
    call: &'a ToolCall,
    action: &'a str,
    /// The call (or what it asks for mid-call) as the person sees it, redacted.
    summary: String,
    /// What the call would change, redacted, when the tool can say.
    preview: Option<String>,
    capabilities: &'a [CapabilityRequest],
    explanation: &'a Explanation,
    /// The trust review of what the call would install, redacted.
    review: Option<String>,
    /// Whether "always" may be written as policy rules.
    rememberable: bool,
    /// Whether a session grant may answer it, or be given by its answer.
    grantable: bool,
}

impl<'a> Asking<'a> {
    /// A person asked about a whole call (rememberable), with the change it would make shown
    /// through the trace's redaction.
    fn call(
        call: &'a ToolCall,
        tool: &'a dyn Tool,
        summary: String,
        capabilities: &'a [CapabilityRequest],
        explanation: &'a Explanation,
        trace: &Trace,
    ) -> Asking<'a> {
        Asking {
            call,
            action: tool.action(),
            summary,
            preview: tool.preview(&call.input).map(|p| trace.redact_text(&p)),
            review: None,
            capabilities,
            explanation,
            rememberable: true,
            grantable: true,
        }
    }
}

/// When the check that decided `told` (an explanation as the model is told it) is a request for
/// a whole directory, the words saying so — `` (the call reaches `pub/` whole: every file in it
/// and below)`` — and, with `allow_how`, which rule would allow that; else nothing. The
/// directory is named as the call wrote it.
fn whole_directory_note(
    told: &Explanation,
    capabilities: &[CapabilityRequest],
    allow_how: bool,
) -> String {
    let Some(deciding) = told.deciding_rule() else {
        return String::new();
    };
    let Some(whole) = capabilities
        .iter()
        .filter(|c| c.scope.whole_directory)
        .map(|c| CapabilityRequest {
            capability: c.capability.clone(),
            scope: c.scope.as_written(),
        })
        .find(|c| c.to_string() == deciding.subject)
    else {
        return String::new();
    };
    let reach = match whole.scope.path.as_deref() {
        None | Some("." | "") => "the whole workspace: every file in it".to_owned(),
        Some(dir) => format!(
            "`{}/` whole: every file in it and below",
            dir.trim_end_matches('/')
        ),
    };
    if allow_how {
        format!(
            " (the call reaches {reach}; only a rule allowing `{}` covers that, not one for a file inside)",
            whole
        )
    } else {
        format!(" (the call reaches {reach})")
    }
}

impl Chokepoint {
    /// `explanation` as the model is told it: the paths as the call wrote them, and each
    /// rule's file named relative to the workspace or `~` (the person asked sees it whole).
    fn told(&self, explanation: &Explanation, capabilities: &[CapabilityRequest]) -> Explanation {
        explanation
            .as_written(capabilities)
            .with_sources(|source| self.workspace.told(source))
    }

    /// Step 5: lets an allowed call through; a denied one, or one the reviewer or a person
    /// refuses, is the error.
    pub(super) async fn gate(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        capabilities: &[CapabilityRequest],
        explanation: &Explanation,
        session: &Session,
        trace: &Trace,
    ) -> Result<(), ToolError> {
        match explanation.decision {
            Decision::Allow => Ok(()),
            Decision::Deny => {
                let told = self.told(explanation, capabilities);
                Err(ToolError::new(
                    ErrorCode::Denied,
                    format!(
                        "policy denies this call{}: {}",
                        whole_directory_note(&told, capabilities, true),
                        told.summary()
                    ),
                ))
            }
            // `review` goes to the reviewer; so does `ask` when nobody could answer it and the
            // user opted in.
            Decision::Review | Decision::Ask
                if self.reviewer.is_some()
                    && (explanation.decision == Decision::Review
                        || (self.review_asks && !self.broker.has_person())) =>
            {
                let summary = trace.redact_text(&tool.summarize(&call.input));
                let verdict = self
                    .review(
                        call,
                        tool.action(),
                        &summary,
                        capabilities,
                        explanation,
                        session,
                        trace,
                    )
                    .await;
                match verdict {
                    Some(Verdict::Allow) => Ok(()),
                    Some(Verdict::Deny) => Err(ToolError::new(
                        ErrorCode::Denied,
                        format!(
                            "the reviewer denied {}; do something else or ask the person how to proceed",
                            call.name
                        ),
                    )),
                    // Unsure, unanswered, unparsed or failed: a person decides, never a silent
                    // allow.
                    Some(Verdict::Unsure) | None => {
                        let asking =
                            Asking::call(call, tool, summary, capabilities, explanation, trace);
                        self.approve(asking, session, trace).await
                    }
                }
            }
            Decision::Ask | Decision::Review => {
                // The prompt shows the input through the same redaction as the trace.
                let summary = trace.redact_text(&tool.summarize(&call.input));
                let asking = Asking::call(call, tool, summary, capabilities, explanation, trace);
                self.approve(asking, session, trace).await
            }
        }
    }

    /// Asks the reviewer about a `review` decision, within the call's deadline (at most 30 s),
    /// recording its answer; `None` when no verdict came.
    #[allow(clippy::too_many_arguments)]
    async fn review(
        &self,
        call: &ToolCall,
        action: &str,
        summary: &str,
        capabilities: &[CapabilityRequest],
        explanation: &Explanation,
        session: &Session,
        trace: &Trace,
    ) -> Option<Verdict> {
        let reviewer = self.reviewer.as_ref()?;
        // What a review sends is the session's (the call, the request, the model's words): a
        // reviewer below the session's level is a write-down, and a person decides instead.
        let held = session.taint();
        if held > reviewer.level() {
            trace.record(Event::ReviewAnswered {
                call_id: call.id.clone(),
                reviewer: reviewer.name().to_owned(),
                verdict: "withheld".to_owned(),
                reason: format!(
                    "write-down: the session holds {held} data and the reviewer may be sent {} at \
                     most ([policy] reviewer_classification); a person decides",
                    reviewer.level()
                ),
            });
            return None;
        }
        let request = ReviewRequest {
            tool: call.name.clone(),
            action: action.to_owned(),
            summary: summary.to_owned(),
            capabilities: capabilities.to_vec(),
            // A model: the rules' files are named as it may be told them.
            reason: explanation
                .with_sources(|source| self.workspace.told(source))
                .summary(),
            taint: session.taint(),
            untrusted: session.untrusted_source(),
            context: {
                let context = session.review_context();
                ReviewContext {
                    asked: context.asked.map(|text| trace.redact_text(&text)),
                    said: context.said.map(|text| trace.redact_text(&text)),
                }
            },
        };
        let limit = Duration::from_millis(self.limits.tool_timeout_ms.min(30_000));
        let answer = match tokio::time::timeout(limit, reviewer.review(&request)).await {
            Ok(answer) => answer,
            Err(_) => Err(ReviewError::TimedOut(limit.as_millis())),
        };
        let (verdict, reason) = match &answer {
            Ok(review) => (review.verdict.as_str().to_owned(), review.reason.clone()),
            Err(why) => ("failed".to_owned(), why.to_string()),
        };
        trace.record(Event::ReviewAnswered {
            call_id: call.id.clone(),
            reviewer: reviewer.name().to_owned(),
            verdict,
            reason: trace.redact_text(&reason),
        });
        answer.ok().map(|review| review.verdict)
    }

    /// Judges what a running call asks for: a capability, by policy on the capability alone
    /// (the call itself was already allowed), or an action of its own with the review the
    /// person reads (`plugin.install`); a person when policy asks, the decision in the trace.
    pub(super) async fn judge_mid_call(
        &self,
        call: &ToolCall,
        action: &str,
        ask: MidCallAsk,
        summary: &str,
        session: &Session,
        trace: &Trace,
    ) -> Result<(), ToolError> {
        let (subject, capability, asked_action, review) = match ask {
            MidCallAsk::Capability(request) => {
                (Subject::capability(&request), Some(request), None, None)
            }
            MidCallAsk::Action(ask) => (
                Subject::tool(ask.action.clone(), Risk::Process).with_scope(ask.scope.clone()),
                None,
                Some((ask.action, ask.scope)),
                Some(ask.review),
            ),
        };
        let capabilities: Vec<CapabilityRequest> = capability.into_iter().collect();
        // An action of its own is more than reading: plan mode refuses it.
        let risk = asked_action.as_ref().map(|_| Risk::Process);
        let plan: Vec<_> = super::plan_verdict(session, risk, &capabilities)
            .into_iter()
            .collect();
        let mut explanation = session.with_promises(|promises| {
            self.policy
                .decide(std::slice::from_ref(&subject), promises, &plan)
        });
        let reach = crate::flow::Reach {
            capabilities: &capabilities,
            sink: None,
            // What an action installs runs later as code of its own: judged like a tool that
            // starts its own program (untrusted input in the session means a person decides).
            own_process: asked_action.is_some(),
            root: Some(self.workspace.root()),
        };
        for check in self.flow.judge(&reach, session) {
            crate::flow::tighten(&mut explanation, check);
        }
        // The call was decided once, at its start (`tool.decided`); what it asks for while it
        // runs is a decision of its own kind, so a call has one decision event.
        match (capabilities.first(), &asked_action) {
            (Some(request), _) => trace.record(Event::CapabilityDecided {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                capability: request.clone(),
                explanation: explanation.clone(),
            }),
            (None, Some((action, scope))) => trace.record(Event::ActionDecided {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                action: action.clone(),
                scope: scope.clone(),
                explanation: explanation.clone(),
            }),
            (None, None) => {}
        }
        let summary = trace.redact_text(summary);
        match explanation.decision {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(ToolError::new(
                ErrorCode::Denied,
                format!(
                    "policy denies {} for {}: {}",
                    summary,
                    call.name,
                    self.told(&explanation, &capabilities).summary()
                ),
            )),
            Decision::Ask | Decision::Review => {
                let asking = Asking {
                    call,
                    action: asked_action.as_ref().map_or(action, |(a, _)| a.as_str()),
                    summary,
                    preview: None,
                    review: review.map(|r| trace.redact_text(&r)),
                    capabilities: &capabilities,
                    explanation: &explanation,
                    rememberable: false,
                    // One install is one question: a session grant would let the next
                    // install through without its review.
                    grantable: asked_action.is_none(),
                };
                self.approve(asking, session, trace).await
            }
        }
    }

    /// Writes an "always in this workspace" answer as policy rules and records what happened;
    /// the call runs whether or not the write succeeds (the person allowed it).
    fn remember(
        &self,
        call: &ToolCall,
        action: &str,
        capabilities: &[CapabilityRequest],
        trace: &Trace,
    ) {
        let rules = crate::remembered::rules_for(action, capabilities, &call.name);
        let (file, rules, error) = match (&self.remember_in, rules) {
            (None, _) => (
                String::new(),
                Vec::new(),
                Some("this host has no $BOSUN_HOME to remember approvals in".to_owned()),
            ),
            (Some(home), Err(e)) => (
                crate::remembered::file_for(home, self.workspace.root())
                    .display()
                    .to_string(),
                Vec::new(),
                Some(e.to_string()),
            ),
            (Some(home), Ok(rules)) => {
                let described = crate::remembered::describe(&rules);
                match crate::remembered::remember(home, self.workspace.root(), &rules) {
                    Ok(path) => (path.display().to_string(), described, None),
                    Err(e) => (
                        crate::remembered::file_for(home, self.workspace.root())
                            .display()
                            .to_string(),
                        described,
                        Some(e.to_string()),
                    ),
                }
            }
        };
        trace.record(Event::ApprovalRemembered {
            call_id: call.id.clone(),
            file,
            rules,
            error,
        });
    }

    async fn approve(
        &self,
        asking: Asking<'_>,
        session: &Session,
        trace: &Trace,
    ) -> Result<(), ToolError> {
        let Asking {
            call,
            action,
            summary,
            preview,
            review,
            capabilities,
            explanation,
            rememberable,
            grantable,
        } = asking;
        // A session grant covers this action with exactly the capabilities it was given for.
        let grant_key = crate::approval::session_grant_key(action, capabilities);
        if grantable && session.is_granted(&grant_key) {
            trace.record(Event::ApprovalAnswered {
                call_id: call.id.clone(),
                answer: ApprovalAnswer::AllowSession,
            });
            return Ok(());
        }
        let reason = explanation.summary();
        trace.record(Event::ApprovalAsked {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            reason: reason.clone(),
        });
        let reach = match (grantable, rememberable) {
            (false, _) => crate::approval::AnswerReach::Once,
            (true, false) => crate::approval::AnswerReach::Session,
            (true, true) => crate::approval::AnswerReach::Workspace,
        };
        let request = ApprovalRequest {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            action: action.to_owned(),
            summary,
            preview,
            review,
            capabilities: capabilities.to_vec(),
            decision: explanation.decision,
            reason,
            reach,
        };
        let answer = self.broker.ask(&request).await;
        trace.record(Event::ApprovalAnswered {
            call_id: call.id.clone(),
            answer,
        });
        match answer {
            ApprovalAnswer::AllowOnce => Ok(()),
            ApprovalAnswer::AllowSession => {
                if grantable {
                    session.grant(&grant_key);
                }
                Ok(())
            }
            ApprovalAnswer::AllowAlways => {
                if grantable {
                    session.grant(&grant_key);
                }
                // A mid-call capability is remembered for the session only: a rule written
                // for it alone could say more than the person saw.
                if rememberable {
                    self.remember(call, action, capabilities, trace);
                }
                Ok(())
            }
            ApprovalAnswer::Deny => Err(ToolError::new(
                ErrorCode::Denied,
                match self.broker.take_feedback(&call.id) {
                    // The person's own words, for the model to act on.
                    Some(feedback) => format!(
                        "the person declined {} and said: {}",
                        call.name,
                        feedback.trim()
                    ),
                    None => format!(
                        "the person declined {}; do something else or ask them how to proceed",
                        call.name
                    ),
                },
            )),
            ApprovalAnswer::Unavailable => {
                // Told to the model: the paths as it wrote them.
                let told = self.told(explanation, capabilities);
                let subject = told
                    .deciding_rule()
                    .map_or(action, |rule| rule.subject.as_str());
                Err(ToolError::new(
                    ErrorCode::NeedsApproval,
                    // The decision comes last: it may end in a frame of a plugin's words,
                    // and nothing may follow a frame's closing fence on its line.
                    format!(
                        "policy asks before {} and nobody can answer here: {} add a policy rule that allows `{subject}`{}; policy said {}",
                        call.name,
                        self.broker.unanswered_hint(),
                        whole_directory_note(&told, capabilities, false),
                        told.summary()
                    ),
                ))
            }
        }
    }
}
