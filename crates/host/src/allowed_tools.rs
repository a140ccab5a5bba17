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
                Some(pattern) => match bosun_claude::tools::rule_pattern(pattern) {
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
        let subject = bosun_claude::tools::rule_subject(call.name.as_str(), &call.input);
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
        _said_by: &crate::tool::InstanceLabel,
        _cancel: &CancellationToken,
    ) -> Result<Option<HookVerdict>, HookFailure> {
        Ok(self.refuses(call).map(|reason| HookVerdict {
            plugin: self.source.clone(),
            decision: Decision::Deny,
            reason,
        }))
    }
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
    use serde_json::{Value, json};

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
