//! What the person runs themselves: `!cmd` (a shell line through the chokepoint and the
//! sandbox, its output shown and kept for the model's next request) and `/review` (the working
//! tree's diff against `HEAD`, read the same way, then a plan-mode turn that comments on it and
//! changes nothing). The engine makes the call; this module starts it and reads its end.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Result;
use bosun_core::ToolResult;
use bosun_host::approval::sanitize_for_terminal;
use bosun_host::permission::PermissionMode;
use serde_json::Value;

use super::app::{App, Running};
use super::events::{CommandEnd, PersonCommand};
use super::transcript::Entry;

/// What `/review` asks of the model, before the diff.
const REVIEW_TASK: &str = "Review the uncommitted changes of this working tree: the output of \
`git diff HEAD` is below. Read the files around the changes where you need context. Report, \
most important first: bugs and regressions, security problems, missing or wrong tests, and \
anything that does not match the code around it; each with file:line and why it matters. Say \
plainly when you find nothing of weight. Do not change any file: this is a review, and plan \
mode denies every write.";

impl App {
    /// `!cmd`: runs `line` as the person, through the chokepoint.
    pub(super) fn shell(&mut self, line: &str) -> Result<()> {
        let line = line.trim();
        if line.is_empty() {
            anyhow::bail!(
                "!cmd runs a shell command, e.g. !git status (its output goes to the model with your next message)"
            );
        }
        self.person_command(PersonCommand::Shell(line.to_owned()))
    }

    /// `/review [FOCUS]`: reads the diff, then the review turn starts when it comes back.
    pub(super) fn review(&mut self, focus: Option<String>) -> Result<String> {
        self.person_command(PersonCommand::Review(focus))?;
        Ok("/review: reading `git diff HEAD` through the chokepoint; the model then reviews it in plan mode (it can read, not change)".to_owned())
    }

    pub(super) fn person_command(&mut self, command: PersonCommand) -> Result<()> {
        self.idle(&command.label())?;
        let Some(open) = self.session.take() else {
            return Ok(());
        };
        let doing = match &command {
            PersonCommand::Shell(_) => "running your command",
            PersonCommand::Review(_) => "reading the diff",
            PersonCommand::Install { .. } => "fetching and verifying the plugin",
        };
        let cancel = self.engine.person_command(self.env.clone(), open, command);
        self.running = Some(Running {
            cancel,
            cancelling: false,
            text_entry: None,
            doing: (doing.to_owned(), Instant::now()),
            retry: None,
        });
        Ok(())
    }

    /// A person's command is over: the session back; `!cmd`'s output kept for the model,
    /// `/review`'s diff handed to the review turn.
    pub(super) fn command_ended(&mut self, end: CommandEnd) {
        let CommandEnd {
            mut open,
            command,
            result,
        } = end;
        self.running = None;
        self.deny_all();
        let output = match result {
            Ok(ToolResult::Ok {
                output, truncated, ..
            }) => Some((output, truncated)),
            Ok(ToolResult::Err { error, .. }) => {
                self.entries.push(Entry::Error(format!(
                    "{}: {}: {}",
                    sanitize_for_terminal(&command.label()),
                    error.code,
                    sanitize_for_terminal(&error.message)
                )));
                None
            }
            Err(e) => {
                self.entries.push(Entry::Error(format!(
                    "{} could not run: {}",
                    sanitize_for_terminal(&command.label()),
                    sanitize_for_terminal(&e)
                )));
                None
            }
        };
        let mut review = None;
        if let Some((output, truncated)) = output {
            match &command {
                PersonCommand::Shell(line) => {
                    let note = shell_note(line, &output, truncated);
                    match open.note(note) {
                        Ok(()) => self.entries.push(Entry::Notice(
                            "the command's output goes to the model with your next message"
                                .to_owned(),
                        )),
                        Err(e) => self.entries.push(Entry::Warning(format!(
                            "the command's output goes to the model with your next message, but the session could not be stored: {}",
                            sanitize_for_terminal(&e.to_string())
                        ))),
                    }
                }
                PersonCommand::Review(focus) => match review_task(&output, truncated, focus) {
                    Ok(task) => review = Some(task),
                    Err(why) => self.entries.push(Entry::Notice(why)),
                },
                PersonCommand::Install { .. } => {
                    self.entries.push(Entry::Notice(sanitize_for_terminal(
                        output
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("installed"),
                    )))
                }
            }
        }
        self.session = Some(open);
        if let Some(task) = review {
            self.start_turn_in(task, "", PermissionMode::Plan);
        } else if self.quit_after_run {
            self.exit = true;
        } else if let Some(next) = self.queued.pop_front() {
            self.submit(next);
        }
    }
}

/// What the model is told of a command the person ran.
fn shell_note(line: &str, output: &Value, truncated: bool) -> String {
    let field = |name: &str| output.get(name).and_then(Value::as_str).unwrap_or_default();
    let mut note = format!(
        "The person ran this command themselves (not you), in the workspace: `{line}`\nexit code: {}",
        match output.get("exitCode").and_then(Value::as_i64) {
            Some(code) => code.to_string(),
            None => output
                .get("signal")
                .and_then(Value::as_str)
                .map_or_else(|| "none".to_owned(), |s| format!("none (killed by {s})")),
        }
    );
    for (name, text) in [("stdout", field("stdout")), ("stderr", field("stderr"))] {
        if !text.is_empty() {
            let _ = write!(note, "\n{name}:\n{}", text.trim_end());
        }
    }
    if truncated || output.get("truncated").and_then(Value::as_bool) == Some(true) {
        note.push_str("\n(the output was cut to the configured limit)");
    }
    note
}

/// The review turn's request for the diff `git diff HEAD` printed, or why there is nothing to
/// review.
fn review_task(output: &Value, truncated: bool, focus: &Option<String>) -> Result<String, String> {
    let field = |name: &str| output.get(name).and_then(Value::as_str).unwrap_or_default();
    if output.get("exitCode").and_then(Value::as_i64) != Some(0) {
        let stderr = field("stderr").trim();
        return Err(format!(
            "/review needs `git diff HEAD`, which failed{}: {}",
            if stderr.contains("HEAD") {
                " (a repository with no commit yet has no HEAD to compare with)"
            } else {
                ""
            },
            sanitize_for_terminal(if stderr.is_empty() {
                "no message"
            } else {
                stderr
            })
        ));
    }
    let diff = field("stdout");
    if diff.trim().is_empty() {
        return Err(
            "nothing to review: the working tree has no change against HEAD (new files count once `git add -N` names them)"
                .to_owned(),
        );
    }
    let mut task = REVIEW_TASK.to_owned();
    if let Some(focus) = focus {
        let _ = write!(
            task,
            "\nThe person asks you to look at this in particular: {focus}"
        );
    }
    if truncated || output.get("truncated").and_then(Value::as_bool) == Some(true) {
        task.push_str(
            "\nThe diff was cut to the configured output limit: read the changed files for the rest.",
        );
    }
    let _ = write!(task, "\n\n```diff\n{}\n```", diff.trim_end());
    Ok(task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_shell_note_says_who_ran_it_and_carries_both_streams() {
        let note = shell_note(
            "ls | wc -l",
            &json!({"exitCode": 2, "stdout": "3\n", "stderr": "oops\n", "truncated": false}),
            false,
        );
        assert_eq!(
            note,
            "The person ran this command themselves (not you), in the workspace: `ls | wc -l`\nexit code: 2\nstdout:\n3\nstderr:\noops"
        );
    }

    #[test]
    fn review_refuses_an_empty_diff_and_a_failed_git() {
        let empty = review_task(&json!({"exitCode": 0, "stdout": ""}), false, &None);
        assert!(empty.unwrap_err().starts_with("nothing to review"));
        let failed = review_task(
            &json!({"exitCode": 128, "stdout": "", "stderr": "fatal: bad revision 'HEAD'"}),
            false,
            &None,
        );
        assert!(failed.unwrap_err().contains("no commit yet"));
        let task = review_task(
            &json!({"exitCode": 0, "stdout": "+new\n"}),
            false,
            &Some("the parser".to_owned()),
        )
        .unwrap();
        assert!(task.contains("look at this in particular: the parser"));
        assert!(task.ends_with("```diff\n+new\n```"));
    }
}
