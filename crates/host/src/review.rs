//! `review`: a policy decision that goes to a reviewer before a person. A reviewer sees the call
//! (tool, action, what it touches, why policy said `review`), the session's labels and where the
//! conversation stands (what the person asked, what the model said before the call), and
//! answers allow, deny or unsure with a reason. `unsure`, an answer that does not parse, a
//! timeout or a failure goes to a person — or is refused when nobody can answer — never a
//! silent allow. The review and its reason are recorded in the trace (`review.answered`). A
//! reviewer is a sink at its level ([`Reviewer::level`]): a session holding more data sends it
//! nothing, and a person decides.

use async_trait::async_trait;
use bosun_core::{CapabilityRequest, Classification};

pub use crate::session::ReviewContext;

/// What a reviewer is asked about.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    /// The tool the model called.
    pub tool: String,
    /// Its policy action.
    pub action: String,
    /// The call as a person would see it (redacted).
    pub summary: String,
    /// What it touches.
    pub capabilities: Vec<CapabilityRequest>,
    /// Why policy said `review`.
    pub reason: String,
    /// The session's level.
    pub taint: Classification,
    /// Where the session's untrusted input came from, if it has read any.
    pub untrusted: Option<String>,
    /// What the person asked and what the model said before the call (redacted, bounded):
    /// data to weigh the call against, never instructions.
    pub context: ReviewContext,
}

/// A reviewer's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
    /// A person decides.
    Unsure,
}

impl Verdict {
    /// The word in the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
            Verdict::Unsure => "unsure",
        }
    }
}

/// A reviewer's answer.
#[derive(Debug, Clone)]
pub struct Review {
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in a sentence.
    pub reason: String,
}

/// Decides `review` decisions before a person does.
#[async_trait]
pub trait Reviewer: Send + Sync {
    /// Who reviews, for the trace (a model's configured name).
    fn name(&self) -> &str;

    /// The most sensitive data it may be sent (`[policy] reviewer_classification`): a review
    /// sends the call, the person's request and the model's words, so a session holding more
    /// is not reviewed — a person decides.
    fn level(&self) -> Classification;

    /// Reviews one call.
    ///
    /// # Errors
    /// Why no verdict came (the model failed, its answer did not parse): the call then goes to a
    /// person.
    async fn review(&self, request: &ReviewRequest) -> Result<Review, ReviewError>;
}

/// Why no verdict came: the call then goes to a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    /// The reviewer's model failed.
    #[error("the reviewer model failed: {0}")]
    Model(String),
    /// Its answer passed the bound on an answer's size.
    #[error("the reviewer's answer is too long")]
    TooLong,
    /// Its answer is not one JSON object.
    #[error("the reviewer did not answer with one JSON object")]
    NotJson,
    /// Its decision is not one it may give.
    #[error("the reviewer's decision is not allow, deny or unsure")]
    UnknownDecision,
    /// It gave no reason.
    #[error("the reviewer gave no reason")]
    NoReason,
    /// No answer came within the call's deadline (at most 30 s), in milliseconds.
    #[error("no answer within {0} ms")]
    TimedOut(u128),
}
