//! A tool call as a person reads it: `Read src/main.rs`, `Edit src/main.rs (+2 −1)`,
//! `Run cargo test`, `Search 'foo' (12 matches)`, `List src/`. A tool Bosun does not know (a
//! plugin's, an MCP server's, a subagent) shows its name and a short summary of its arguments.
//! The JSON stays one key away (Ctrl-O). Every text is sanitised here; nothing is judged here.

use bosun_host::approval::sanitize_for_terminal;
use serde_json::Value;

/// Characters of an argument summary.
const ARG_CHARS: usize = 80;

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn cut(text: &str, most: usize) -> String {
    let mut shown: String = text.chars().take(most).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    shown
}

/// A word of a command line, quoted when a shell would need it.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./=:@+,%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What a call of `tool` with `input` does, in a few words.
pub(crate) fn headline(tool: &str, input: &Value) -> String {
    let path = || str_of(input, "path").unwrap_or_default();
    let line = match tool {
        "read_file" => {
            let range = match (
                input.get("offset").and_then(Value::as_u64),
                input.get("limit").and_then(Value::as_u64),
            ) {
                (Some(from), Some(n)) => format!(" (lines {}–{})", from + 1, from + n),
                (Some(from), None) => format!(" (from line {})", from + 1),
                (None, Some(n)) => format!(" (first {n} lines)"),
                (None, None) => String::new(),
            };
            format!("Read {}{range}", path())
        }
        "apply_patch" => format!("Edit {}", path()),
        "create_file" => format!("Write {}", path()),
        "list_files" => {
            let dir = str_of(input, "path").unwrap_or(".");
            let slash = if dir.ends_with('/') { "" } else { "/" };
            format!("List {dir}{slash}")
        }
        "search" => {
            let query = str_of(input, "query").unwrap_or_default();
            let within = match str_of(input, "path") {
                Some(p) if !p.is_empty() && p != "." => format!(" in {p}"),
                _ => String::new(),
            };
            format!("Search '{}'{within}", cut(query, ARG_CHARS))
        }
        "run_command" => {
            let mut words = vec![shell_word(str_of(input, "program").unwrap_or_default())];
            if let Some(args) = input.get("args").and_then(Value::as_array) {
                words.extend(args.iter().map(|a| match a.as_str() {
                    Some(s) => shell_word(s),
                    None => a.to_string(),
                }));
            }
            let within = match str_of(input, "cwd") {
                Some(dir) if !dir.is_empty() && dir != "." => format!(" (in {dir})"),
                _ => String::new(),
            };
            format!("Run {}{within}", cut(&words.join(" "), 2 * ARG_CHARS))
        }
        "update_plan" => "Update the plan".to_owned(),
        "restrict_self" => format!(
            "Promise {} {}",
            str_of(input, "decision").unwrap_or_default(),
            str_of(input, "action").unwrap_or_default()
        ),
        _ => {
            let args = arguments(input);
            if args.is_empty() {
                tool.to_owned()
            } else {
                format!("{tool} {args}")
            }
        }
    };
    sanitize_for_terminal(&line)
}

/// `key=value` for the first few scalar arguments of an unknown tool's input.
fn arguments(input: &Value) -> String {
    let Some(object) = input.as_object() else {
        return cut(&input.to_string(), ARG_CHARS);
    };
    let mut parts = Vec::new();
    for (key, value) in object {
        let shown = match value {
            Value::String(s) => cut(s, 40),
            Value::Number(_) | Value::Bool(_) => value.to_string(),
            Value::Array(items) => format!("[{} items]", items.len()),
            Value::Object(_) => "{…}".to_owned(),
            Value::Null => continue,
        };
        parts.push(format!("{key}={shown}"));
    }
    cut(&parts.join(" "), ARG_CHARS)
}

/// What the call's result adds to its headline: `(+2 −1)` for an edit, `(12 matches)` for a
/// search, `(3 lines)` for a read. `None` when the summary line says it better.
pub(crate) fn outcome(tool: &str, output: &Value) -> Option<String> {
    let count = |key: &str| {
        output
            .get(key)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    let truncated = output.get("truncated").and_then(Value::as_bool) == Some(true);
    let more = if truncated { "+" } else { "" };
    match tool {
        "apply_patch" => {
            let diff = str_of(output, "diff").unwrap_or_default();
            let added = diff
                .lines()
                .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
                .count();
            let removed = diff
                .lines()
                .filter(|l| l.starts_with('-') && !l.starts_with("---"))
                .count();
            Some(format!("(+{added} −{removed})"))
        }
        "search" => Some(match count("matches") {
            1 => "(1 match)".to_owned(),
            n => format!("({n}{more} matches)"),
        }),
        "list_files" => Some(format!("({}{more} entries)", count("entries"))),
        "read_file" => {
            let n = str_of(output, "content")
                .unwrap_or_default()
                .lines()
                .count();
            Some(match n {
                1 => "(1 line)".to_owned(),
                n => format!("({n}{more} lines)"),
            })
        }
        "create_file" => Some(format!(
            "({} bytes)",
            output.get("bytes").and_then(Value::as_u64).unwrap_or(0)
        )),
        "update_plan" => bosun_host::builtin::Plan::from_result(tool, output)
            .map(|plan| format!("({})", plan.progress())),
        _ => None,
    }
}

/// The call's input as indented JSON, one sanitised line per row, for Ctrl-O.
pub(crate) fn input_json(input: &Value) -> Vec<String> {
    serde_json::to_string_pretty(input)
        .unwrap_or_else(|_| input.to_string())
        .lines()
        .take(200)
        .map(sanitize_for_terminal)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_calls_read_as_sentences() {
        let cases = [
            (
                "read_file",
                json!({"path": "src/main.rs"}),
                "Read src/main.rs",
            ),
            (
                "read_file",
                json!({"path": "a.rs", "offset": 10, "limit": 5}),
                "Read a.rs (lines 11–15)",
            ),
            (
                "apply_patch",
                json!({"path": "src/main.rs", "edits": []}),
                "Edit src/main.rs",
            ),
            (
                "create_file",
                json!({"path": "x.txt", "content": "x"}),
                "Write x.txt",
            ),
            ("list_files", json!({"path": "src"}), "List src/"),
            ("list_files", json!({}), "List ./"),
            ("search", json!({"query": "foo"}), "Search 'foo'"),
            (
                "search",
                json!({"query": "foo", "path": "src"}),
                "Search 'foo' in src",
            ),
            (
                "run_command",
                json!({"program": "cargo", "args": ["test", "-p", "x"]}),
                "Run cargo test -p x",
            ),
            (
                "run_command",
                json!({"program": "sh", "args": ["-c", "echo it's"]}),
                r"Run sh -c 'echo it'\''s'",
            ),
            (
                "plugin.weather.forecast",
                json!({"city": "Paris", "days": 3, "opts": {"a": 1}}),
                "plugin.weather.forecast city=Paris days=3 opts={…}",
            ),
            ("mcp.fs.ping", json!({}), "mcp.fs.ping"),
        ];
        for (tool, input, want) in cases {
            assert_eq!(headline(tool, &input), want, "{tool} {input}");
        }
    }

    #[test]
    fn results_add_their_count_to_the_headline() {
        let diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n-old\n+new\n+more\n";
        assert_eq!(
            outcome("apply_patch", &json!({"diff": diff})).as_deref(),
            Some("(+2 −1)")
        );
        let twelve: Vec<Value> = (0..12).map(|i| json!({"path": "a", "line": i})).collect();
        assert_eq!(
            outcome("search", &json!({"matches": twelve})).as_deref(),
            Some("(12 matches)")
        );
        assert_eq!(outcome("run_command", &json!({"exitCode": 0})), None);
    }

    #[test]
    fn a_headline_cannot_drive_the_terminal() {
        let shown = headline("read_file", &json!({"path": "a\u{1b}[2Jb"}));
        assert!(!shown.contains('\u{1b}'));
        let shown = headline("plugin.x", &json!({"k": "\u{1b}]0;title\u{7}"}));
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{7}'));
    }
}
