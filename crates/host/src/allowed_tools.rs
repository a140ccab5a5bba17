//! `allowed-tools` of a plugin's slash command: the tools (and, for some, the inputs) one prompt
//! may use. It only narrows: the turn offers no other tool, and a call outside it is denied as a
//! policy hook's verdict, which can tighten a decision and never loosen one — so a tool your
//! policy denies stays denied whatever the command lists. In Claude Code `allowed-tools` also
//! spares the person the questions; in Bosun policy alone decides that.
//!
//! Entries are Claude Code's (`Read`, `Grep`, `Bash(git status:*)`, `Bash(npm run *)`,
//! `mcp__server__tool`) or Bosun's own tool names. A pattern on `Bash` is matched against the
//! command line (`program args…`); on another tool against its `path` input. `:*` at the end is
//! a prefix match on whole words, `*` anywhere matches anything.

use async_trait::async_trait;
use bosun_core::{Decision, ToolCall};
use bosun_policy::HookVerdict;
use regex::Regex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::hooks::{HookFailure, PolicyHook, SessionLabels};
use crate::tool::Tool;

/// One entry: a Bosun tool, and the inputs it may take (`None`: any).
#[derive(Debug, Clone)]
struct Entry {
    tool: String,
    pattern: Option<Regex>,
}

/// What one prompt may use.
#[derive(Debug, Clone)]
pub struct AllowedTools {
    /// Who narrowed it (`/plugin:command`), as verdicts name it.
    source: String,
    /// As written, for messages.
    shown: String,
    entries: Vec<Entry>,
}

impl AllowedTools {
    /// Reads `items` (each possibly several comma-separated entries) for `source`. Returns the
    /// narrowing and a note for each entry that names no tool Bosun has (left out: it allows
    /// nothing).
    pub fn parse(source: &str, items: &[String]) -> (AllowedTools, Vec<String>) {
        let mut entries = Vec::new();
        let mut notes = Vec::new();
        let mut shown = Vec::new();
        for item in items.iter().flat_map(|i| split_top_level(i)) {
            shown.push(item.clone());
            let (base, pattern) = match item.split_once('(') {
                Some((base, rest)) => (base.trim(), Some(rest.trim_end_matches(')').trim())),
                None => (item.as_str(), None),
            };
            let tool = bosun_claude::tools::to_bosun(base).or_else(|| {
                base.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                    .then(|| base.to_owned())
                    .filter(|b| !b.is_empty())
            });
            let Some(tool) = tool else {
                notes.push(format!(
                    "{source}: allowed-tools names `{base}`, which Bosun has no tool for: it allows nothing"
                ));
                continue;
            };
            let pattern = match pattern {
                None | Some("" | "*") => None,
                Some(pattern) => match matcher(pattern) {
                    Some(regex) => Some(regex),
                    None => {
                        notes.push(format!(
                            "{source}: allowed-tools pattern `{pattern}` cannot be read: `{base}` is not allowed"
                        ));
                        continue;
                    }
                },
            };
            entries.push(Entry { tool, pattern });
        }
        (
            AllowedTools {
                source: source.to_owned(),
                shown: shown.join(", "),
                entries,
            },
            notes,
        )
    }

    /// Whether `tool` is offered at all (some input of it may be allowed).
    pub fn offers(&self, tool: &str) -> bool {
        self.entries.iter().any(|e| e.tool == tool)
    }

    /// Why `call` is outside what the prompt may use, or `None` when it is inside.
    pub fn refuses(&self, call: &ToolCall) -> Option<String> {
        let entries: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| e.tool == call.name.as_str())
            .collect();
        if entries.is_empty() {
            return Some(format!(
                "{} allows only {}; `{}` is not among them",
                self.source, self.shown, call.name
            ));
        }
        if entries.iter().any(|e| e.pattern.is_none()) {
            return None;
        }
        let subject = subject(call.name.as_str(), &call.input);
        let allowed = subject.as_deref().is_some_and(|s| {
            entries
                .iter()
                .flat_map(|e| &e.pattern)
                .any(|p| p.is_match(s))
        });
        (!allowed).then(|| {
            format!(
                "{} allows `{}` only as {}; `{}` is not",
                self.source,
                call.name,
                self.shown,
                subject.unwrap_or_default()
            )
        })
    }
}

#[async_trait]
impl PolicyHook for AllowedTools {
    async fn verdict(
        &self,
        call: &ToolCall,
        _tool: &dyn Tool,
        _labels: &SessionLabels,
        _cancel: &CancellationToken,
    ) -> Result<Option<HookVerdict>, HookFailure> {
        Ok(self.refuses(call).map(|reason| HookVerdict {
            plugin: self.source.clone(),
            decision: Decision::Deny,
            reason,
        }))
    }
}

/// Whether a Claude Code hook whose `if` is `condition` (a permission rule such as
/// `Bash(git *)` or `Edit(*.ts)`, matched as `allowed-tools` entries are) runs for `call`. No
/// condition, or one Bosun cannot read, runs it: a hook can only tighten, so running it when
/// unsure never loosens anything.
pub fn hook_condition_holds(condition: Option<&str>, call: &ToolCall) -> bool {
    let Some(condition) = condition.map(str::trim).filter(|c| !c.is_empty()) else {
        return true;
    };
    let (rule, notes) = AllowedTools::parse("a hook's `if`", &[condition.to_owned()]);
    !notes.is_empty() || rule.refuses(call).is_none()
}

/// What a pattern is matched against: `run_command`'s command line, another tool's `path`.
fn subject(tool: &str, input: &Value) -> Option<String> {
    if tool == "run_command" {
        let mut line = input.get("program")?.as_str()?.to_owned();
        for arg in input
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            line.push(' ');
            line.push_str(arg.as_str()?);
        }
        return Some(line);
    }
    input.get("path")?.as_str().map(str::to_owned)
}

/// A pattern as an anchored regex: `prefix:*` matches `prefix` and `prefix …`; `*` matches
/// anything.
fn matcher(pattern: &str) -> Option<Regex> {
    let glob = |text: &str| {
        text.split('*')
            .map(regex::escape)
            .collect::<Vec<_>>()
            .join(".*")
    };
    let source = match pattern.strip_suffix(":*") {
        Some(prefix) => format!("^{}(?:\\s.*)?$", glob(prefix)),
        None => format!("^{}$", glob(pattern)),
    };
    Regex::new(&source).ok()
}

/// `a, Bash(x, y), b` as its entries: commas inside parentheses do not split.
fn split_top_level(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, input: Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.to_owned(),
            input,
        }
    }

    #[test]
    fn entries_narrow_by_tool_and_by_pattern() {
        let (allowed, notes) = AllowedTools::parse(
            "/p:c",
            &[
                "Read, Bash(git status:*), Bash(npm run *)".to_owned(),
                "Task".to_owned(),
            ],
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(allowed.offers("read_file") && allowed.offers("run_command"));
        assert!(!allowed.offers("create_file"));
        assert!(
            allowed
                .refuses(&call("read_file", json!({"path": "x"})))
                .is_none()
        );
        assert!(
            allowed
                .refuses(&call("create_file", json!({"path": "x"})))
                .is_some()
        );
        let git = |args: &[&str]| call("run_command", json!({"program": "git", "args": args}));
        assert!(allowed.refuses(&git(&["status"])).is_none());
        assert!(allowed.refuses(&git(&["status", "--short"])).is_none());
        assert!(allowed.refuses(&git(&["statusx"])).is_some());
        assert!(allowed.refuses(&git(&["push"])).is_some());
        let rm = call(
            "run_command",
            json!({"program": "rm", "args": ["-rf", "."]}),
        );
        assert!(allowed.refuses(&rm).unwrap().contains("rm -rf ."));
        let npm = call(
            "run_command",
            json!({"program": "npm", "args": ["run", "test"]}),
        );
        assert!(allowed.refuses(&npm).is_none());
    }

    #[test]
    fn a_hooks_if_runs_it_only_for_the_calls_its_rule_names() {
        let git = call("run_command", json!({"program": "git", "args": ["push"]}));
        let rm = call(
            "run_command",
            json!({"program": "rm", "args": ["-rf", "x"]}),
        );
        let read = call("read_file", json!({"path": "src/lib.rs"}));
        assert!(hook_condition_holds(None, &rm));
        assert!(hook_condition_holds(Some("  "), &rm));
        assert!(hook_condition_holds(Some("Bash(git *)"), &git));
        assert!(!hook_condition_holds(Some("Bash(git *)"), &rm));
        assert!(!hook_condition_holds(Some("Bash(git *)"), &read));
        assert!(hook_condition_holds(Some("Read(src/*)"), &read));
        // A rule naming no tool Bosun has runs the hook: unsure is stricter.
        assert!(hook_condition_holds(Some("NotebookEdit(*)"), &rm));
    }

    #[test]
    fn a_star_pattern_is_the_whole_tool() {
        let (allowed, _) = AllowedTools::parse("/p:c", &["Bash(*)".to_owned()]);
        let any = call("run_command", json!({"program": "rm", "args": ["x"]}));
        assert!(allowed.refuses(&any).is_none());
        assert!(
            allowed
                .refuses(&call("read_file", json!({"path": "x"})))
                .is_some()
        );
    }
}
