//! Approval brokers: who answers when policy says `ask` or `review`. A broker either returns a
//! person's answer or [`ApprovalAnswer::Unavailable`]; the chokepoint treats anything but an
//! allow as a refusal, so there is no path to a silent allow.
//!
//! `review` is answered by a person too until a reviewer model exists: asking a person is never
//! less safe than asking a reviewer.
//!
//! [`ChannelBroker`] is for faces that own the terminal on another thread (the interactive UI):
//! it hands each request over as a [`PendingApproval`] and waits for the answer without holding
//! an async worker, so the tool's run loop and the UI both stay live.

use std::io::{BufRead, Write};
use std::sync::Mutex;

use async_trait::async_trait;
use bosun_core::{ApprovalAnswer, CapabilityRequest, Decision};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// What a person is asked to approve.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The call.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The tool's policy action.
    pub action: String,
    /// A readable summary of the input (already redacted).
    pub summary: String,
    /// What the call would change, as diff lines (`-` removed, `+` added), when the tool can
    /// say before it runs (already redacted).
    pub preview: Option<String>,
    /// What the call would install, as the trust review a person reads before deciding
    /// (source, signer, digest, tools, capabilities, endpoints, classification; already
    /// redacted): asked only once the call has fetched, verified and staged it.
    pub review: Option<String>,
    /// The capabilities the call uses.
    pub capabilities: Vec<CapabilityRequest>,
    /// `ask` or `review`.
    pub decision: Decision,
    /// Why policy asks: the deciding rule.
    pub reason: String,
    /// How far an allow can reach beyond this call: which answers a face offers.
    pub reach: AnswerReach,
}

/// How far a person's allow can reach beyond the call asked about. A face offers only the
/// answers that mean something for the question, so no key promises more than it grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AnswerReach {
    /// Once, for this session (the action with exactly these capabilities), or always in this
    /// workspace (policy rules written to the approvals file): a whole tool call.
    #[default]
    Workspace,
    /// Once or for this session: a capability a running call asks for. A rule written for it
    /// alone could say more than the person saw, so nothing is written.
    Session,
    /// This call only: an action asked with its own review (installing a plugin). A wider
    /// grant would let the next install through without its review being read.
    Once,
}

impl AnswerReach {
    /// Whether "for this session" means more than "once" here.
    pub fn offers_session(self) -> bool {
        matches!(self, Self::Workspace | Self::Session)
    }

    /// Whether "always in this workspace" writes rules here.
    pub fn offers_always(self) -> bool {
        self == Self::Workspace
    }

    /// `answer` if it is one offered here; an answer not offered denies, like any other
    /// unrecognised answer.
    pub fn admit(self, answer: ApprovalAnswer) -> ApprovalAnswer {
        match answer {
            ApprovalAnswer::AllowSession if !self.offers_session() => ApprovalAnswer::Deny,
            ApprovalAnswer::AllowAlways if !self.offers_always() => ApprovalAnswer::Deny,
            other => other,
        }
    }

    /// Why the wider answers are not offered, for the person reading the question.
    pub fn why_narrower(self) -> Option<&'static str> {
        match self {
            Self::Workspace => None,
            Self::Session => Some(
                "a capability asked mid-call is allowed once or for this session; no rule is written for it alone",
            ),
            Self::Once => {
                Some("one install at a time: the next one asks again, with its own review")
            }
        }
    }
}

impl ApprovalRequest {
    /// The capabilities the call uses, safe for a terminal and joined for one line; `None`
    /// when it uses none. A whole directory says so in words: the call will reach every file
    /// in it, not only the one it names.
    pub fn uses(&self) -> Option<String> {
        if self.capabilities.is_empty() {
            return None;
        }
        let caps: Vec<String> = self
            .capabilities
            .iter()
            .map(|c| {
                let shown = sanitize_for_terminal(&c.to_string());
                if c.scope.whole_directory {
                    format!("{shown} ({})", whole_directory_words(c))
                } else {
                    shown
                }
            })
            .collect();
        Some(caps.join(", "))
    }
}

/// What a request for a whole directory reaches, in words: `every file in pub/ and below`, or
/// `every file in the workspace` for its root; safe for a terminal.
pub fn whole_directory_words(request: &CapabilityRequest) -> String {
    match request.scope.path.as_deref() {
        None | Some("." | "") => "the whole workspace: every file in it".to_owned(),
        Some(path) => format!(
            "the whole directory: every file in {}/ and below",
            sanitize_for_terminal(path.trim_end_matches('/'))
        ),
    }
}

/// Answers approval requests.
#[async_trait]
pub trait ApprovalBroker: Send + Sync {
    /// Asks about one call.
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer;

    /// How a person could approve such a call through this face, for the error when nobody
    /// answered; it is followed by "add a policy rule that allows …".
    fn unanswered_hint(&self) -> &str {
        "run in a terminal, pass --yes, or"
    }

    /// Whether anyone can answer through this broker. `false` (a script, CI, a client that
    /// cannot be asked) lets `[policy] review_asks` hand an `ask` to the reviewer first.
    fn has_person(&self) -> bool {
        true
    }

    /// What the person said with a denial of call `call_id`, for the model (taken once).
    fn take_feedback(&self, _call_id: &str) -> Option<String> {
        None
    }
}

/// Nobody to ask (no terminal, a script, CI): every request is refused with `needs_approval`.
#[derive(Debug, Default, Clone, Copy)]
pub struct NonInteractive;

#[async_trait]
impl ApprovalBroker for NonInteractive {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Unavailable
    }

    fn has_person(&self) -> bool {
        false
    }
}

/// The person approved in advance (`--yes`): every `ask` is allowed once. `deny` is never asked
/// about, so it stays a denial.
#[derive(Debug, Default, Clone, Copy)]
pub struct AutoApprove;

#[async_trait]
impl ApprovalBroker for AutoApprove {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::AllowOnce
    }
}

/// A request on its way to a person on another thread, with the way back. Dropping it
/// unanswered counts as [`ApprovalAnswer::Unavailable`].
#[derive(Debug)]
pub struct PendingApproval {
    /// What is asked.
    pub request: ApprovalRequest,
    reply: oneshot::Sender<(ApprovalAnswer, Option<String>)>,
}

impl PendingApproval {
    /// Gives the person's answer. The asker may have stopped waiting (the run was cancelled);
    /// then the answer goes nowhere.
    pub fn answer(self, answer: ApprovalAnswer) {
        let _ = self.reply.send((answer, None));
    }

    /// Denies the call with a sentence for the model: why, or what to do instead.
    pub fn deny_with(self, feedback: String) {
        let _ = self.reply.send((ApprovalAnswer::Deny, Some(feedback)));
    }

    /// True once the asker stopped waiting: nobody reads an answer any more.
    pub fn is_abandoned(&self) -> bool {
        self.reply.is_closed()
    }
}

/// Hands each request to `deliver` (which passes it to the thread that owns the terminal) and
/// waits for the answer there. Cancelling the run's token ends the wait with
/// [`ApprovalAnswer::Deny`]: the person stopped the run rather than allow the call. A request
/// dropped unanswered (the other side went away) is [`ApprovalAnswer::Unavailable`].
pub struct ChannelBroker {
    deliver: Box<dyn Fn(PendingApproval) + Send + Sync>,
    cancel: CancellationToken,
    /// What the person said with each denial, by call, until the chokepoint takes it.
    feedback: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl std::fmt::Debug for ChannelBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelBroker").finish_non_exhaustive()
    }
}

impl ChannelBroker {
    /// A broker for the run that `cancel` stops; `deliver` must not block.
    pub fn new(
        cancel: CancellationToken,
        deliver: impl Fn(PendingApproval) + Send + Sync + 'static,
    ) -> Self {
        Self {
            deliver: Box::new(deliver),
            cancel,
            feedback: std::sync::Mutex::default(),
        }
    }
}

#[async_trait]
impl ApprovalBroker for ChannelBroker {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        if self.cancel.is_cancelled() {
            return ApprovalAnswer::Deny;
        }
        let (reply, answer) = oneshot::channel();
        (self.deliver)(PendingApproval {
            request: request.clone(),
            reply,
        });
        let (answer, feedback) = tokio::select! {
            biased;
            () = self.cancel.cancelled() => (ApprovalAnswer::Deny, None),
            answer = answer => answer.unwrap_or((ApprovalAnswer::Unavailable, None)),
        };
        if let (Some(feedback), Ok(mut kept)) = (feedback, self.feedback.lock()) {
            kept.insert(request.call_id.clone(), feedback);
        }
        answer
    }

    fn take_feedback(&self, call_id: &str) -> Option<String> {
        self.feedback.lock().ok()?.remove(call_id)
    }
}

/// Makes text safe to print on a terminal: control characters (escape sequences included) and
/// bidi or zero-width characters are shown as `\u{…}` instead of acting on the screen.
pub fn sanitize_for_terminal(text: &str) -> String {
    bosun_core::escape_hidden(text)
}

/// The text of an approval prompt.
pub fn render_prompt(request: &ApprovalRequest) -> String {
    let mut text = String::new();
    text.push_str(&format!(
        "Bosun wants to run {} ({})\n",
        sanitize_for_terminal(&request.tool),
        request.action
    ));
    text.push_str(&format!(
        "  input:        {}\n",
        sanitize_for_terminal(&request.summary)
    ));
    if let Some(preview) = &request.preview {
        text.push_str("  change:\n");
        for line in preview.lines() {
            text.push_str(&format!("    {}\n", sanitize_for_terminal(line)));
        }
    }
    if let Some(review) = &request.review {
        text.push_str("  review:\n");
        for line in review.lines() {
            text.push_str(&format!("    {}\n", sanitize_for_terminal(line)));
        }
    }
    if let Some(uses) = request.uses() {
        text.push_str(&format!("  capabilities: {uses}\n"));
    }
    // A reason of several lines (a plugin's framed words) stays indented under `why:`, so no
    // line of it starts where the prompt's own lines do.
    let why = format!(
        "policy says {}: {}",
        request.decision,
        sanitize_for_terminal(&request.reason)
    );
    for (i, line) in why.lines().enumerate() {
        let lead = if i == 0 {
            "  why:          "
        } else {
            "                "
        };
        text.push_str(&format!("{lead}{line}\n"));
    }
    if let Some(why) = request.reach.why_narrower() {
        text.push_str(&format!("  {why}\n"));
    } else if request.capabilities.is_empty() {
        text.push_str("  [s] allows this tool for the rest of the session\n");
    } else {
        text.push_str(
            "  [s] allows this tool for the rest of the session with exactly these capabilities (another program, path or host asks again)\n",
        );
    }
    if request.reach.offers_always() {
        text.push_str(
            "  [w] always in this workspace: shows the policy rules it would write, then asks\n",
        );
    }
    // The same keys as the terminal UI's approval box.
    text.push_str(match request.reach {
        AnswerReach::Workspace => {
            "Allow? [o] once  [s] this session  [w] always here  [d] deny (default; `d <reason>` tells the model why): "
        }
        AnswerReach::Session => {
            "Allow? [o] once  [s] this session  [d] deny (default; `d <reason>` tells the model why): "
        }
        AnswerReach::Once => {
            "Allow? [y] yes  [n] no (default; `n <reason>` tells the model why): "
        }
    });
    text
}

/// The confirmation an "always here" answer asks for: the rules, one per line.
pub fn render_remember(rules: &[String]) -> String {
    let mut text = String::from(
        "Always allow in this workspace: these rules go to your approvals file ($BOSUN_HOME/approvals/)\n",
    );
    for rule in rules {
        text.push_str(&format!("  {}\n", sanitize_for_terminal(rule)));
    }
    text.push_str("Write them and allow? [y] yes  [N] back: ");
    text
}

/// What an "allow for this session" answer covers: the tool's action with exactly the
/// capability requests the person was shown (program, path, host), so allowing `git` does not
/// allow `curl`, and allowing `src/a.rs` does not allow `.git/config`.
pub fn session_grant_key(action: &str, capabilities: &[CapabilityRequest]) -> String {
    let mut subjects: Vec<String> = capabilities
        .iter()
        // Keyed on what policy judged: `notes` and the file it links to are one grant.
        .map(|c| CapabilityRequest {
            capability: c.capability.clone(),
            scope: c.scope.as_judged(),
        })
        .map(|c| serde_json::to_string(&c).unwrap_or_else(|_| c.to_string()))
        .collect();
    subjects.sort();
    subjects.dedup();
    format!("{action}\n{}", subjects.join("\n"))
}

/// Parses an answer typed at the prompt. Anything but `y`/`yes`, `a`/`s`/`session` or
/// `w`/`always` denies; `always` still needs the confirmation [`render_remember`] asks for.
pub fn parse_answer(line: &str) -> ApprovalAnswer {
    match line.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => ApprovalAnswer::AllowOnce,
        "a" | "s" | "session" => ApprovalAnswer::AllowSession,
        "w" | "always" => ApprovalAnswer::AllowAlways,
        _ => ApprovalAnswer::Deny,
    }
}

type Io = (Box<dyn BufRead + Send>, Box<dyn Write + Send>);

/// Throws away input that waits unread in the terminal `tty`: what was typed — or pushed by a
/// program — before a question was shown is never an answer to it. Does nothing when `tty` is
/// not a terminal. The line prompt and the terminal UI both call it when they ask.
pub fn discard_pending_input(tty: impl std::os::fd::AsFd) {
    // ENOTTY (not a terminal) and the like leave nothing to throw away.
    let _ = rustix::termios::tcflush(tty, rustix::termios::QueueSelector::IFlush);
}

/// Asks a person at a terminal. Reads answers from `/dev/tty` (so piped stdin cannot answer for
/// the person) and writes the prompt to stderr.
pub struct TerminalBroker {
    io: Mutex<Option<Io>>,
    /// The terminal answers are read from, when it is one: what waits in its input when a
    /// prompt is shown was not typed in answer to it, and is thrown away.
    tty: Option<std::fs::File>,
    /// What the person said with each denial (`d <reason>`), by call.
    feedback: Mutex<std::collections::HashMap<String, String>>,
}

impl std::fmt::Debug for TerminalBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalBroker").finish_non_exhaustive()
    }
}

impl TerminalBroker {
    /// A broker on the controlling terminal, or `None` when there is none.
    pub fn open() -> Option<Self> {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let tty = std::fs::File::open("/dev/tty").ok()?;
        let flush = tty.try_clone().ok()?;
        let mut broker = Self::with_io(
            Box::new(std::io::BufReader::new(tty)),
            Box::new(std::io::stderr()),
        );
        broker.tty = Some(flush);
        Some(broker)
    }

    /// A broker on the given reader and writer (tests, embedding).
    pub fn with_io(input: Box<dyn BufRead + Send>, output: Box<dyn Write + Send>) -> Self {
        Self {
            io: Mutex::new(Some((input, output))),
            tty: None,
            feedback: Mutex::default(),
        }
    }

    fn ask_blocking(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let Ok(mut guard) = self.io.lock() else {
            return ApprovalAnswer::Unavailable;
        };
        let Some((input, output)) = guard.as_mut() else {
            return ApprovalAnswer::Unavailable;
        };
        let mut ask = |text: &str| -> Option<String> {
            output
                .write_all(text.as_bytes())
                .and_then(|()| output.flush())
                .ok()?;
            if let Some(tty) = &self.tty {
                discard_pending_input(tty);
            }
            let mut line = String::new();
            match input.read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line),
            }
        };
        let prompt = render_prompt(request);
        // "Always" asks again with the rules it would write; "back" returns to the question.
        for _ in 0..3 {
            let Some(line) = ask(&prompt) else {
                return ApprovalAnswer::Unavailable;
            };
            let answer = request.reach.admit(parse_answer(&line));
            if answer == ApprovalAnswer::Deny
                && let Some(reason) = deny_reason(&line)
                && let Ok(mut kept) = self.feedback.lock()
            {
                kept.insert(request.call_id.clone(), reason);
            }
            if answer != ApprovalAnswer::AllowAlways {
                return answer;
            }
            let rules = match crate::remembered::rules_for(
                &request.action,
                &request.capabilities,
                &request.tool,
            ) {
                Ok(rules) => crate::remembered::describe(&rules),
                Err(why) => {
                    if ask(&format!(
                        "Cannot remember this call: {}\n(press Enter)",
                        sanitize_for_terminal(&why.to_string())
                    ))
                    .is_none()
                    {
                        return ApprovalAnswer::Unavailable;
                    }
                    continue;
                }
            };
            match ask(&render_remember(&rules)) {
                None => return ApprovalAnswer::Unavailable,
                Some(line) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
                    return ApprovalAnswer::AllowAlways;
                }
                Some(_) => {}
            }
        }
        ApprovalAnswer::Deny
    }
}

#[async_trait]
impl ApprovalBroker for TerminalBroker {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        // Reading the terminal blocks: on a multi-threaded runtime the worker's other tasks move
        // elsewhere meanwhile. A single-threaded runtime (one `bosun tools call`) has nowhere
        // to move them, and the call waits on the person anyway, so it reads in place.
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| self.ask_blocking(request))
            }
            _ => self.ask_blocking(request),
        }
    }

    fn take_feedback(&self, call_id: &str) -> Option<String> {
        self.feedback.lock().ok()?.remove(call_id)
    }
}

/// The reason of a denial typed as `d <reason>` (or `n …`, `deny …`), bounded.
fn deny_reason(line: &str) -> Option<String> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace)?;
    if !matches!(
        word.to_ascii_lowercase().as_str(),
        "d" | "n" | "no" | "deny"
    ) {
        return None;
    }
    let reason: String = rest.trim().chars().take(500).collect();
    (!reason.is_empty()).then_some(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            tool: "run_command".into(),
            action: "builtin.tool.run_command".into(),
            summary: "$ rm '-rf' '\u{1b}[2Jgone'".into(),
            preview: None,
            review: None,
            capabilities: vec![CapabilityRequest::parse("process.spawn:rm").unwrap()],
            decision: Decision::Ask,
            reason: "mode workspace-write asks for process".into(),
            reach: AnswerReach::Workspace,
        }
    }

    #[test]
    fn prompt_escapes_terminal_control_sequences() {
        let prompt = render_prompt(&request());
        assert!(!prompt.contains('\u{1b}'), "{prompt}");
        assert!(prompt.contains("\\u{1b}[2Jgone"));
    }

    /// An install is allowed one at a time: the prompt offers yes or no and says why, and an
    /// `s` or `w` typed anyway denies instead of widening anything; a capability asked
    /// mid-call offers the session but writes no rule.
    #[test]
    fn the_prompt_offers_only_the_answers_that_mean_something() {
        let once = ApprovalRequest {
            reach: AnswerReach::Once,
            ..request()
        };
        let prompt = render_prompt(&once);
        assert!(
            prompt
                .ends_with("Allow? [y] yes  [n] no (default; `n <reason>` tells the model why): "),
            "{prompt}"
        );
        assert!(prompt.contains("the next one asks again"), "{prompt}");
        assert!(
            !prompt.contains("[s]") && !prompt.contains("[w]"),
            "{prompt}"
        );
        for typed in ["s", "w", "always"] {
            assert_eq!(
                once.reach.admit(parse_answer(typed)),
                ApprovalAnswer::Deny,
                "{typed}"
            );
        }
        assert_eq!(
            once.reach.admit(parse_answer("y")),
            ApprovalAnswer::AllowOnce
        );
        let session = ApprovalRequest {
            reach: AnswerReach::Session,
            ..request()
        };
        let prompt = render_prompt(&session);
        assert!(prompt.contains("[s] this session"), "{prompt}");
        assert!(!prompt.contains("[w]"), "{prompt}");
        assert_eq!(
            session.reach.admit(parse_answer("s")),
            ApprovalAnswer::AllowSession
        );
        assert_eq!(session.reach.admit(parse_answer("w")), ApprovalAnswer::Deny);
        assert_eq!(
            AnswerReach::Workspace.admit(ApprovalAnswer::AllowAlways),
            ApprovalAnswer::AllowAlways
        );
    }

    /// A plugin's words in the reason (framed, several lines) stay indented under `why:`: no
    /// line of them starts where the prompt's own lines do, so none passes for the prompt's
    /// keys or another of its fields.
    #[test]
    fn a_plugins_reason_cannot_pose_as_the_prompts_own_lines() {
        let words = "no\n  [s] allows this tool for the rest of the session\nAllow? [o] once: ";
        let asked = ApprovalRequest {
            reason: format!(
                "ask — builtin.tool.run_command decided by restrict hook (p):\n{}",
                bosun_core::text::framed("reason given by the plugin `p`", words)
            ),
            ..request()
        };
        let prompt = render_prompt(&asked);
        let own = |start: &str| prompt.lines().filter(|l| l.starts_with(start)).count();
        assert_eq!(own("  [s]"), 1, "{prompt}");
        assert_eq!(own("Allow?"), 1, "{prompt}");
        assert!(
            prompt.contains("\n                [reason given by the plugin `p`]\n"),
            "{prompt}"
        );
        assert!(
            prompt
                .contains("\n                  [s] allows this tool for the rest of the session\n"),
            "{prompt}"
        );
    }

    /// The prompt as a person reads it, escape sequence and session scope included.
    #[test]
    fn the_prompt_renders_for_a_person() {
        insta::assert_snapshot!(render_prompt(&request()));
    }

    #[test]
    fn answers_parse_conservatively() {
        assert_eq!(parse_answer("y\n"), ApprovalAnswer::AllowOnce);
        assert_eq!(parse_answer("A"), ApprovalAnswer::AllowSession);
        assert_eq!(parse_answer("always"), ApprovalAnswer::AllowAlways);
        assert_eq!(parse_answer(""), ApprovalAnswer::Deny);
        assert_eq!(parse_answer("sure"), ApprovalAnswer::Deny);
    }

    #[tokio::test]
    async fn channel_broker_waits_for_the_other_side() {
        let (tx, rx) = std::sync::mpsc::channel::<PendingApproval>();
        let broker = ChannelBroker::new(CancellationToken::new(), move |pending| {
            tx.send(pending).unwrap();
        });
        let person = std::thread::spawn(move || {
            let pending = rx.recv().unwrap();
            assert_eq!(pending.request.tool, "run_command");
            pending.answer(ApprovalAnswer::AllowSession);
            // The next request is dropped unanswered: the UI went away.
            drop(rx.recv().unwrap());
        });
        assert_eq!(broker.ask(&request()).await, ApprovalAnswer::AllowSession);
        assert_eq!(broker.ask(&request()).await, ApprovalAnswer::Unavailable);
        person.join().unwrap();
    }

    #[tokio::test]
    async fn cancelling_the_run_ends_the_wait_as_a_refusal() {
        let cancel = CancellationToken::new();
        let (tx, rx) = std::sync::mpsc::channel::<PendingApproval>();
        let broker = ChannelBroker::new(cancel.clone(), move |pending| {
            tx.send(pending).unwrap();
        });
        let asking = tokio::spawn(async move { broker.ask(&request()).await });
        // Wait until the request is with the person, then cancel instead of answering.
        let pending = tokio::task::spawn_blocking(move || rx.recv().unwrap())
            .await
            .unwrap();
        assert!(!pending.is_abandoned());
        cancel.cancel();
        assert_eq!(asking.await.unwrap(), ApprovalAnswer::Deny);
        assert!(pending.is_abandoned());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn terminal_broker_reads_an_answer_and_eof_is_unavailable() {
        let broker = TerminalBroker::with_io(
            Box::new(std::io::Cursor::new(b"a\n".to_vec())),
            Box::new(Vec::new()),
        );
        assert_eq!(broker.ask(&request()).await, ApprovalAnswer::AllowSession);
        assert_eq!(broker.ask(&request()).await, ApprovalAnswer::Unavailable);
    }

    /// `bosun tools call` runs its one call on a single-threaded runtime, where a person
    /// answering at the terminal must work as on a multi-threaded one.
    #[tokio::test(flavor = "current_thread")]
    async fn terminal_broker_asks_on_a_single_threaded_runtime() {
        let broker = TerminalBroker::with_io(
            Box::new(std::io::Cursor::new(b"y\n".to_vec())),
            Box::new(Vec::new()),
        );
        assert_eq!(broker.ask(&request()).await, ApprovalAnswer::AllowOnce);
        assert_eq!(broker.ask(&request()).await, ApprovalAnswer::Unavailable);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_denial_typed_with_a_reason_keeps_it_for_the_model() {
        let broker = TerminalBroker::with_io(
            Box::new(std::io::Cursor::new(
                b"d use cargo clean instead\nd\n".to_vec(),
            )),
            Box::new(Vec::new()),
        );
        let asked = request();
        assert_eq!(broker.ask(&asked).await, ApprovalAnswer::Deny);
        assert_eq!(
            broker.take_feedback(&asked.call_id).as_deref(),
            Some("use cargo clean instead")
        );
        assert_eq!(broker.take_feedback(&asked.call_id), None, "taken once");
        // A bare `d` denies and says nothing.
        assert_eq!(broker.ask(&asked).await, ApprovalAnswer::Deny);
        assert_eq!(broker.take_feedback(&asked.call_id), None);
    }

    /// "Always" shows the rules and needs a yes; "back" returns to the question.
    #[tokio::test(flavor = "multi_thread")]
    async fn always_asks_for_confirmation_with_the_rules() {
        let out = std::sync::Arc::new(Mutex::new(Vec::new()));
        struct Shared(std::sync::Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let broker = TerminalBroker::with_io(
            Box::new(std::io::Cursor::new(b"w\nn\nw\ny\nw\n".to_vec())),
            Box::new(Shared(out.clone())),
        );
        assert_eq!(broker.ask(&request()).await, ApprovalAnswer::AllowAlways);
        let shown = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        assert!(shown.contains("allow process.spawn program=rm"), "{shown}");
        assert_eq!(shown.matches("Write them and allow?").count(), 2);
        // Input ends while confirming: nobody answered.
        assert_eq!(broker.ask(&request()).await, ApprovalAnswer::Unavailable);
    }
}
