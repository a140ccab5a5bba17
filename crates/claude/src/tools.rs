//! Claude Code's tool names and Bosun's: how a hook's `matcher`, an agent's `tools` and a
//! command's `allowed-tools` name Bosun's tools, and how a Bosun call is shown to a hook.

use serde_json::Value;

/// A Bosun call's input as Claude Code's tools name their fields (`file_path` beside `path`).
pub fn to_claude_input(input: &Value) -> Value {
    let mut input = input.clone();
    // `run_command` takes a program and its arguments; Bash hooks read one `command` line.
    if let Value::Object(map) = &mut input
        && let Some(program) = map
            .get("program")
            .and_then(Value::as_str)
            .map(str::to_owned)
        && !map.contains_key("command")
    {
        let mut line = program;
        for arg in map
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            line.push(' ');
            line.push_str(arg.as_str().unwrap_or_default());
        }
        map.insert("command".to_owned(), Value::String(line));
    }
    if let Value::Object(map) = &mut input
        && let Some(path) = map.get("path").cloned()
        && !map.contains_key("file_path")
    {
        map.insert("file_path".to_owned(), path);
    }
    input
}

/// Claude Code's built-in tools and the Bosun tool each one is.
pub const TOOL_MAP: &[(&str, &str)] = &[
    ("Bash", "run_command"),
    ("Read", "read_file"),
    ("Write", "create_file"),
    ("Edit", "apply_patch"),
    ("MultiEdit", "apply_patch"),
    ("Glob", "list_files"),
    ("LS", "list_files"),
    ("Grep", "search"),
    ("WebFetch", "web_fetch"),
];

/// The Bosun tool a Claude Code tool name means: the map above, or an MCP tool's
/// `mcp__<server>__<tool>` (Bosun names MCP tools the same way), else `None`.
pub fn to_bosun(claude: &str) -> Option<String> {
    if let Some((_, bosun)) = TOOL_MAP.iter().find(|(c, _)| *c == claude) {
        return Some((*bosun).to_owned());
    }
    claude.starts_with("mcp__").then(|| claude.to_owned())
}

/// The name a hook sees for Bosun's tool `bosun` (the first Claude Code name that maps to it;
/// any other, MCP tools included, as itself).
pub fn to_claude(bosun: &str) -> String {
    if let Some((claude, _)) = TOOL_MAP.iter().find(|(_, b)| *b == bosun) {
        return (*claude).to_owned();
    }
    bosun.to_owned()
}

/// A tool list as Claude Code writes it (`"Read, Grep, Bash(git *)"` or YAML items): the Bosun
/// names, each once, in order; a permission pattern such as `Bash(git *)` counts as its tool.
/// Names with no Bosun tool are returned apart.
pub fn list_to_bosun(items: &[String]) -> (Vec<String>, Vec<String>) {
    let mut known = Vec::new();
    let mut unknown = Vec::new();
    for item in items.iter().flat_map(|i| i.split(',')) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let base = item.split('(').next().unwrap_or(item).trim();
        match to_bosun(base) {
            Some(name) if !known.contains(&name) => known.push(name),
            Some(_) => {}
            None => unknown.push(base.to_owned()),
        }
    }
    (known, unknown)
}

/// What a permission rule's pattern (`Bash(git *)`, `Edit(src/*)`) is matched against:
/// `run_command`'s command line (`program args…`), another tool's `path`.
pub fn rule_subject(tool: &str, input: &Value) -> Option<String> {
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

/// A permission rule's pattern as an anchored regex: `prefix:*` matches `prefix` and
/// `prefix …`; `*` matches anything.
pub fn rule_pattern(pattern: &str) -> Option<regex::Regex> {
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
    regex::Regex::new(&source).ok()
}

/// Whether a hook whose `if` is `condition` (a permission rule such as `Bash(git *)` or
/// `Edit(src/*)`, Claude Code's tool names or Bosun's) runs for a call of Bosun's `tool` with
/// `input`. No condition, or one Bosun cannot read (a tool it has no name for, a pattern it
/// cannot compile), runs it: a hook can only tighten, so running it when unsure never loosens
/// anything.
pub fn hook_condition_holds(condition: Option<&str>, tool: &str, input: &Value) -> bool {
    let Some(condition) = condition.map(str::trim).filter(|c| !c.is_empty()) else {
        return true;
    };
    let (base, pattern) = match condition.split_once('(') {
        Some((base, rest)) => (base.trim(), Some(rest.trim_end_matches(')').trim())),
        None => (condition, None),
    };
    let named = to_bosun(base).or_else(|| {
        (!base.is_empty()
            && base
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'))
        .then(|| base.to_owned())
    });
    let Some(named) = named else {
        return true;
    };
    if named != tool {
        return false;
    }
    match pattern {
        None | Some("" | "*") => true,
        Some(pattern) => match rule_pattern(pattern) {
            Some(regex) => rule_subject(tool, input).is_some_and(|s| regex.is_match(&s)),
            None => true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hooks_if_runs_it_only_for_the_calls_its_rule_names() {
        let git = serde_json::json!({"program": "git", "args": ["push"]});
        let rm = serde_json::json!({"program": "rm", "args": ["-rf", "x"]});
        let read = serde_json::json!({"path": "src/lib.rs"});
        assert!(hook_condition_holds(None, "run_command", &rm));
        assert!(hook_condition_holds(Some("  "), "run_command", &rm));
        assert!(hook_condition_holds(
            Some("Bash(git *)"),
            "run_command",
            &git
        ));
        assert!(!hook_condition_holds(
            Some("Bash(git *)"),
            "run_command",
            &rm
        ));
        assert!(!hook_condition_holds(
            Some("Bash(git *)"),
            "read_file",
            &read
        ));
        assert!(hook_condition_holds(
            Some("Read(src/*)"),
            "read_file",
            &read
        ));
        assert!(!hook_condition_holds(
            Some("Read(docs/*)"),
            "read_file",
            &read
        ));
        assert!(hook_condition_holds(Some("Bash"), "run_command", &rm));
        // A rule naming no tool Bosun has runs the hook: unsure is stricter.
        assert!(hook_condition_holds(
            Some("NotebookEdit(*)"),
            "run_command",
            &rm
        ));
    }

    #[test]
    fn names_map_both_ways_and_patterns_count_as_their_tool() {
        assert_eq!(to_bosun("Bash").as_deref(), Some("run_command"));
        assert_eq!(
            to_bosun("mcp__toolbox_echo__echo").as_deref(),
            Some("mcp__toolbox_echo__echo")
        );
        assert_eq!(to_bosun("NotebookEdit"), None);
        assert_eq!(to_claude("run_command"), "Bash");
        assert_eq!(to_claude("apply_patch"), "Edit");
        assert_eq!(to_claude("mcp__srv__tool"), "mcp__srv__tool");
        let (known, unknown) = list_to_bosun(&[
            "Read, Grep".to_owned(),
            "Bash(git *)".to_owned(),
            "Task".to_owned(),
            "Read".to_owned(),
        ]);
        assert_eq!(known, ["read_file", "search", "run_command"]);
        assert_eq!(unknown, ["Task"]);
    }
}
