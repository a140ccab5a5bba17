//! A tool's result as a person reads it in the transcript: one summary line (`exit 0`, `read
//! src/lib.rs (3 lines)`, `12 matches`) and the lines that matter under it — a command's
//! output, a patch's diff, a search's matches — instead of the result's JSON. Every line is
//! sanitised; a result of a tool Bosun does not know is shown as compact JSON.

use bosun_host::approval::sanitize_for_terminal;
use serde_json::Value;

/// How a detail line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Output as it came.
    Plain,
    /// A command's stderr.
    Stderr,
    /// A diff's added line.
    Added,
    /// A diff's removed line.
    Removed,
    /// A diff's hunk header or file line.
    Hunk,
}

/// One line under a result's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Detail {
    pub text: String,
    pub kind: Kind,
}

/// Most detail lines kept per result (the rest is counted).
const MAX_DETAIL: usize = 400;

fn lines(text: &str, kind: Kind, out: &mut Vec<Detail>) {
    for line in text.lines() {
        if out.len() >= MAX_DETAIL {
            return;
        }
        out.push(Detail {
            text: sanitize_for_terminal(line),
            kind,
        });
    }
}

/// How a line of a diff is drawn: a file or hunk header, an added or a removed line.
pub(crate) fn diff_kind(line: &str) -> Kind {
    if line.starts_with("+++") || line.starts_with("---") || line.starts_with("@@") {
        Kind::Hunk
    } else if line.starts_with('+') {
        Kind::Added
    } else if line.starts_with('-') {
        Kind::Removed
    } else {
        Kind::Plain
    }
}

/// A running call's output as it comes (`tool.output`), added under its entry within the same
/// bound as a finished result's lines.
pub(crate) fn push_output(detail: &mut Vec<Detail>, text: &str, stderr: bool) {
    let kind = if stderr { Kind::Stderr } else { Kind::Plain };
    lines(text, kind, detail);
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The summary and the detail lines of `output`, the result of `tool`.
pub(crate) fn summarize(tool: &str, output: &Value) -> (String, Vec<Detail>) {
    let mut detail = Vec::new();
    let truncated = if output.get("truncated").and_then(Value::as_bool) == Some(true) {
        " (truncated)"
    } else {
        ""
    };
    let summary = match tool {
        "run_command" => {
            lines(str_of(output, "stdout"), Kind::Plain, &mut detail);
            lines(str_of(output, "stderr"), Kind::Stderr, &mut detail);
            match (
                output.get("exitCode").and_then(Value::as_i64),
                output.get("signal").and_then(Value::as_str),
            ) {
                (_, Some(signal)) => {
                    format!("killed by {}{truncated}", sanitize_for_terminal(signal))
                }
                (Some(code), None) => format!("exit {code}{truncated}"),
                (None, None) => format!("ended{truncated}"),
            }
        }
        "apply_patch" => {
            for line in str_of(output, "diff").lines() {
                if detail.len() >= MAX_DETAIL {
                    break;
                }
                detail.push(Detail {
                    text: sanitize_for_terminal(line),
                    kind: diff_kind(line),
                });
            }
            let added = detail.iter().filter(|d| d.kind == Kind::Added).count();
            let removed = detail.iter().filter(|d| d.kind == Kind::Removed).count();
            format!(
                "patched {} (+{added} −{removed})",
                sanitize_for_terminal(str_of(output, "path"))
            )
        }
        "create_file" => format!(
            "created {} ({} bytes)",
            sanitize_for_terminal(str_of(output, "path")),
            output.get("bytes").and_then(Value::as_u64).unwrap_or(0)
        ),
        "read_file" => {
            let content = str_of(output, "content");
            format!(
                "read {} ({} lines){truncated}",
                sanitize_for_terminal(str_of(output, "path")),
                content.lines().count()
            )
        }
        "list_files" => {
            let entries = output
                .get("entries")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for entry in entries.iter().take(MAX_DETAIL) {
                let slash = if str_of(entry, "type") == "directory" {
                    "/"
                } else {
                    ""
                };
                detail.push(Detail {
                    text: format!("{}{slash}", sanitize_for_terminal(str_of(entry, "path"))),
                    kind: Kind::Plain,
                });
            }
            format!("{} entries{truncated}", entries.len())
        }
        "search" => {
            let matches = output
                .get("matches")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for m in matches.iter().take(MAX_DETAIL) {
                detail.push(Detail {
                    text: format!(
                        "{}:{}: {}",
                        sanitize_for_terminal(str_of(m, "path")),
                        m.get("line").and_then(Value::as_u64).unwrap_or(0),
                        sanitize_for_terminal(str_of(m, "text").trim())
                    ),
                    kind: Kind::Plain,
                });
            }
            format!("{} matches{truncated}", matches.len())
        }
        "update_plan" => {
            let Some(plan) = bosun_host::builtin::Plan::from_result(tool, output) else {
                return unknown(output);
            };
            if let Some(explanation) = &plan.explanation {
                lines(explanation, Kind::Plain, &mut detail);
            }
            for step in &plan.plan {
                detail.push(Detail {
                    text: sanitize_for_terminal(&format!("{} {}", step.status.mark(), step.step)),
                    kind: match step.status {
                        bosun_host::builtin::StepStatus::Completed => Kind::Added,
                        bosun_host::builtin::StepStatus::InProgress => Kind::Hunk,
                        bosun_host::builtin::StepStatus::Pending => Kind::Plain,
                    },
                });
            }
            plan.progress()
        }
        _ => return unknown(output),
    };
    (summary, detail)
}

/// A result of unknown shape: the JSON, compact on the summary line, pretty when expanded.
fn unknown(output: &Value) -> (String, Vec<Detail>) {
    let mut detail = Vec::new();
    if let Ok(pretty) = serde_json::to_string_pretty(output) {
        lines(&pretty, Kind::Plain, &mut detail);
    }
    let text = output.to_string();
    let mut cut: String = text.chars().take(120).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    (sanitize_for_terminal(&cut), detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_command_shows_its_exit_and_output() {
        let (summary, detail) = summarize(
            "run_command",
            &json!({"exitCode": 1, "stdout": "one\ntwo\n", "stderr": "bad\u{1b}[2J\n", "truncated": false}),
        );
        assert_eq!(summary, "exit 1");
        assert_eq!(detail.len(), 3);
        assert_eq!(detail[2].kind, Kind::Stderr);
        assert!(!detail[2].text.contains('\u{1b}'));
    }

    #[test]
    fn a_patch_shows_its_diff_coloured_by_line() {
        let diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n";
        let (summary, detail) = summarize(
            "apply_patch",
            &json!({"path": "x", "edits": 1, "diff": diff}),
        );
        assert_eq!(summary, "patched x (+1 −1)");
        let kinds: Vec<Kind> = detail.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::Hunk,
                Kind::Hunk,
                Kind::Hunk,
                Kind::Removed,
                Kind::Added
            ]
        );
    }

    #[test]
    fn other_results_are_summarised_not_dumped() {
        assert_eq!(
            summarize(
                "read_file",
                &json!({"path": "a.rs", "content": "1\n2\n3\n"})
            )
            .0,
            "read a.rs (3 lines)"
        );
        assert_eq!(
            summarize(
                "search",
                &json!({"matches": [{"path": "a", "line": 3, "text": " x "}]})
            )
            .1[0]
                .text,
            "a:3: x"
        );
        let (summary, detail) = summarize(
            "update_plan",
            &json!({"explanation": "Found it.", "plan": [
                {"step": "Read the code", "status": "completed"},
                {"step": "Fix \u{1b}[2Jit", "status": "in_progress"},
                {"step": "Test", "status": "pending"}
            ]}),
        );
        assert_eq!(summary, "1 of 3 steps done");
        let texts: Vec<&str> = detail.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(texts[0], "Found it.");
        assert_eq!(texts[1], "✓ Read the code");
        assert!(texts[2].starts_with("→ Fix") && !texts[2].contains('\u{1b}'));
        assert_eq!(texts[3], "○ Test");
        let (summary, detail) = summarize("plugin.weather.forecast", &json!({"t": 21}));
        assert_eq!(summary, "{\"t\":21}");
        assert!(detail.len() >= 3);
    }
}
