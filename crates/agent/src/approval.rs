//! Approval brokers: who answers when policy says `ask` or `review`. A broker either returns a
//! person's answer or [`ApprovalAnswer::Unavailable`]; the chokepoint treats anything but an
//! allow as a refusal, so there is no path to a silent allow.
//!
//! `review` is answered by a person too until a reviewer model exists: asking a person is never
//! less safe than asking a reviewer.

use std::io::{BufRead, Write};
use std::sync::Mutex;

use async_trait::async_trait;
use bosun_core::{ApprovalAnswer, CapabilityRequest, Decision};

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
    /// The capabilities the call uses.
    pub capabilities: Vec<CapabilityRequest>,
    /// `ask` or `review`.
    pub decision: Decision,
    /// Why policy asks: the deciding rule.
    pub reason: String,
}

/// Answers approval requests.
#[async_trait]
pub trait ApprovalBroker: Send + Sync {
    /// Asks about one call.
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer;
}

/// Nobody to ask (no terminal, a script, CI): every request is refused with `needs_approval`.
#[derive(Debug, Default, Clone, Copy)]
pub struct NonInteractive;

#[async_trait]
impl ApprovalBroker for NonInteractive {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Unavailable
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
    if !request.capabilities.is_empty() {
        let caps: Vec<String> = request
            .capabilities
            .iter()
            .map(|c| sanitize_for_terminal(&c.to_string()))
            .collect();
        text.push_str(&format!("  capabilities: {}\n", caps.join(", ")));
    }
    text.push_str(&format!(
        "  why:          policy says {}: {}\n",
        request.decision,
        sanitize_for_terminal(&request.reason)
    ));
    text.push_str("Allow? [y] once  [a] for this session  [N] deny: ");
    text
}

/// Parses an answer typed at the prompt. Anything but `y`/`yes`/`a`/`always` denies.
pub fn parse_answer(line: &str) -> ApprovalAnswer {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalAnswer::AllowOnce,
        "a" | "always" | "s" | "session" => ApprovalAnswer::AllowSession,
        _ => ApprovalAnswer::Deny,
    }
}

type Io = (Box<dyn BufRead + Send>, Box<dyn Write + Send>);

/// Asks a person at a terminal. Reads answers from `/dev/tty` (so piped stdin cannot answer for
/// the person) and writes the prompt to stderr.
pub struct TerminalBroker {
    io: Mutex<Option<Io>>,
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
        Some(Self::with_io(
            Box::new(std::io::BufReader::new(tty)),
            Box::new(std::io::stderr()),
        ))
    }

    /// A broker on the given reader and writer (tests, embedding).
    pub fn with_io(input: Box<dyn BufRead + Send>, output: Box<dyn Write + Send>) -> Self {
        Self {
            io: Mutex::new(Some((input, output))),
        }
    }

    fn ask_blocking(&self, prompt: &str) -> ApprovalAnswer {
        let Ok(mut guard) = self.io.lock() else {
            return ApprovalAnswer::Unavailable;
        };
        let Some((input, output)) = guard.as_mut() else {
            return ApprovalAnswer::Unavailable;
        };
        if output
            .write_all(prompt.as_bytes())
            .and_then(|()| output.flush())
            .is_err()
        {
            return ApprovalAnswer::Unavailable;
        }
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => ApprovalAnswer::Unavailable,
            Ok(_) => parse_answer(&line),
        }
    }
}

#[async_trait]
impl ApprovalBroker for TerminalBroker {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let prompt = render_prompt(request);
        // Reading the terminal blocks; keep it off the async workers.
        tokio::task::block_in_place(|| self.ask_blocking(&prompt))
    }
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
            capabilities: vec![CapabilityRequest::parse("process.spawn:rm").unwrap()],
            decision: Decision::Ask,
            reason: "mode workspace-write asks for process".into(),
        }
    }

    #[test]
    fn prompt_escapes_terminal_control_sequences() {
        let prompt = render_prompt(&request());
        assert!(!prompt.contains('\u{1b}'), "{prompt}");
        assert!(prompt.contains("\\u{1b}[2Jgone"));
    }

    #[test]
    fn answers_parse_conservatively() {
        assert_eq!(parse_answer("y\n"), ApprovalAnswer::AllowOnce);
        assert_eq!(parse_answer("A"), ApprovalAnswer::AllowSession);
        assert_eq!(parse_answer(""), ApprovalAnswer::Deny);
        assert_eq!(parse_answer("sure"), ApprovalAnswer::Deny);
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
}
