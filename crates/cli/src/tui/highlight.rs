//! Syntax colours for the code blocks of the model's answers: keywords, strings, comments,
//! numbers, literals and type names, per language family (Rust; Python; JavaScript, TypeScript
//! and JSON; Go and the C family, Java, Kotlin, Swift, C#; shell; TOML, INI and YAML; SQL; Ruby
//! and Lua; diffs).
//!
//! A lexer, not a grammar engine: one pass over the text, each character looked at a bounded
//! number of times, with block comments and multi-line strings carried from line to line. What
//! the model writes — hostile or not — cannot make it slow or make it hang, which a
//! backtracking grammar engine on the drawing thread could. A block whose language it does not
//! know is drawn as before, in one colour.

use ratatui::style::{Color, Modifier, Style};

/// The colour of code in a block whose language is unknown.
pub(super) const PLAIN_CODE: Style = Style::new().fg(Color::Yellow);

const KEYWORD: Style = Style::new().fg(Color::Magenta);
const STRING: Style = Style::new().fg(Color::Green);
const COMMENT: Style = Style::new()
    .fg(Color::DarkGray)
    .add_modifier(Modifier::ITALIC);
const NUMBER: Style = Style::new().fg(Color::Cyan);
const TYPE: Style = Style::new().fg(Color::Yellow);
const KEY: Style = Style::new().fg(Color::Blue);
const TEXT: Style = Style::new();

/// How one family of languages is coloured.
struct Lang {
    keywords: &'static [&'static str],
    /// `true`, `None`, `nil`…: coloured as numbers.
    literals: &'static [&'static str],
    line_comments: &'static [&'static str],
    block_comment: Option<(&'static str, &'static str)>,
    /// Quotes that open a string ending on the same line (a backslash escapes).
    quotes: &'static [char],
    /// Delimiters of strings that may span lines (`"""`, a backtick).
    long_strings: &'static [&'static str],
    /// Keywords compared without case (SQL).
    any_case: bool,
    /// Capitalised names are types.
    types: bool,
    /// `key =` / `key:` at the start of a line is a key (TOML, INI, YAML).
    keys: bool,
    /// `$NAME` and `${…}` are variables (shell).
    variables: bool,
    /// `'a` is a lifetime unless it closes as a character (`'a'`).
    lifetimes: bool,
}

/// What every family starts from: nothing coloured but words, numbers and plain text.
const PLAIN: Lang = Lang {
    keywords: &[],
    literals: &[],
    line_comments: &[],
    block_comment: None,
    quotes: &[],
    long_strings: &[],
    any_case: false,
    types: false,
    keys: false,
    variables: false,
    lifetimes: false,
};

#[rustfmt::skip]
const RUST: Lang = Lang {
    keywords: &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
        "pub", "ref", "return", "static", "struct", "super", "trait", "type", "unsafe", "use",
        "where", "while", "yield",
    ],
    literals: &["true", "false", "self", "Self", "None", "Some", "Ok", "Err"],
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"'],
    types: true,
    lifetimes: true,
    ..PLAIN
};

#[rustfmt::skip]
const PYTHON: Lang = Lang {
    keywords: &[
        "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
        "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
        "is", "lambda", "match", "case", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ],
    literals: &["True", "False", "None", "self"],
    line_comments: &["#"],
    quotes: &['"', '\''],
    long_strings: &["\"\"\"", "'''"],
    types: true,
    ..PLAIN
};

#[rustfmt::skip]
const JAVASCRIPT: Lang = Lang {
    keywords: &[
        "abstract", "as", "async", "await", "break", "case", "catch", "class", "const",
        "continue", "debugger", "declare", "default", "delete", "do", "else", "enum", "export",
        "extends", "finally", "for", "from", "function", "get", "if", "implements", "import",
        "in", "instanceof", "interface", "keyof", "let", "namespace", "new", "of", "private",
        "protected", "public", "readonly", "return", "satisfies", "set", "static", "super",
        "switch", "throw", "try", "type", "typeof", "var", "void", "while", "with", "yield",
    ],
    literals: &["true", "false", "null", "undefined", "this", "NaN", "Infinity"],
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '\''],
    long_strings: &["`"],
    types: true,
    ..PLAIN
};

#[rustfmt::skip]
const C_LIKE: Lang = Lang {
    keywords: &[
        "abstract", "as", "async", "auto", "await", "break", "case", "catch", "chan", "class",
        "const", "continue", "data", "def", "default", "defer", "delete", "do", "else", "enum",
        "export", "extends", "extern", "fallthrough", "final", "finally", "for", "func", "fun",
        "go", "goto", "guard", "if", "implements", "import", "in", "inline", "interface",
        "internal", "is", "let", "map", "namespace", "new", "object", "open", "operator",
        "override", "package", "private", "protected", "public", "range", "readonly", "register",
        "return", "select", "sealed", "signed", "sizeof", "static", "struct", "super", "switch",
        "synchronized", "template", "this", "throw", "throws", "try", "typedef", "typename",
        "union", "unsigned", "using", "val", "var", "virtual", "void", "volatile", "when", "where",
        "while", "yield",
    ],
    literals: &["true", "false", "null", "nil", "NULL", "nullptr", "self", "iota"],
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '\''],
    long_strings: &["`"],
    types: true,
    ..PLAIN
};

#[rustfmt::skip]
const SHELL: Lang = Lang {
    keywords: &[
        "if", "then", "else", "elif", "fi", "for", "in", "do", "done", "while", "until", "case",
        "esac", "function", "return", "local", "export", "set", "unset", "readonly", "shift",
        "exit", "source", "echo", "cd",
    ],
    literals: &["true", "false"],
    line_comments: &["#"],
    quotes: &['"', '\''],
    variables: true,
    ..PLAIN
};

#[rustfmt::skip]
const CONFIG: Lang = Lang {
    literals: &["true", "false", "null", "yes", "no", "on", "off", "~"],
    line_comments: &["#", ";"],
    quotes: &['"', '\''],
    long_strings: &["\"\"\"", "'''"],
    keys: true,
    ..PLAIN
};

#[rustfmt::skip]
const SQL: Lang = Lang {
    keywords: &[
        "add", "all", "alter", "and", "as", "asc", "begin", "between", "by", "case", "commit",
        "create", "delete", "desc", "distinct", "drop", "else", "end", "exists", "from", "group",
        "having", "in", "index", "inner", "insert", "into", "is", "join", "key", "left", "like",
        "limit", "not", "on", "or", "order", "outer", "primary", "references", "returning",
        "right", "rollback", "select", "set", "table", "then", "union", "update", "values",
        "view", "when", "where", "with",
    ],
    literals: &["null", "true", "false"],
    line_comments: &["--"],
    block_comment: Some(("/*", "*/")),
    quotes: &['\'', '"'],
    any_case: true,
    ..PLAIN
};

#[rustfmt::skip]
const SCRIPT: Lang = Lang {
    keywords: &[
        "and", "begin", "break", "case", "class", "def", "do", "else", "elseif", "elsif", "end",
        "ensure", "for", "function", "if", "in", "local", "module", "next", "not", "or",
        "repeat", "require", "rescue", "return", "then", "unless", "until", "when", "while",
        "yield",
    ],
    literals: &["true", "false", "nil", "self"],
    line_comments: &["#", "--"],
    quotes: &['"', '\''],
    types: true,
    ..PLAIN
};

/// The family of a fence's language (`rust`, `ts`, `sh`…), or `None` when it is unknown.
fn lang(info: &str) -> Option<&'static Lang> {
    let name = info
        .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    Some(match name.as_str() {
        "rust" | "rs" => &RUST,
        "python" | "py" | "python3" | "pyi" => &PYTHON,
        "javascript" | "js" | "jsx" | "mjs" | "cjs" | "typescript" | "ts" | "tsx" | "mts"
        | "json" | "jsonc" | "json5" => &JAVASCRIPT,
        "go" | "golang" | "c" | "h" | "cpp" | "c++" | "cc" | "hpp" | "cxx" | "java" | "kotlin"
        | "kt" | "kts" | "swift" | "csharp" | "cs" | "c#" | "scala" | "dart" | "php" | "zig" => {
            &C_LIKE
        }
        "sh" | "bash" | "zsh" | "shell" | "console" | "fish" | "ksh" | "dockerfile" | "docker"
        | "makefile" | "make" => &SHELL,
        "toml" | "ini" | "cfg" | "conf" | "yaml" | "yml" | "properties" | "env" | "dotenv" => {
            &CONFIG
        }
        "sql" | "postgres" | "postgresql" | "mysql" | "sqlite" => &SQL,
        "ruby" | "rb" | "lua" | "elixir" | "ex" | "exs" => &SCRIPT,
        _ => return None,
    })
}

/// A construct open at the end of a line.
#[derive(Clone, Copy)]
enum Open {
    Nothing,
    /// A block comment, until this.
    Comment(&'static str),
    /// A multi-line string, until this.
    String(&'static str),
}

/// The lines of `code` (already safe for the terminal) as coloured pieces, one list per line;
/// `None` when the fence names no language this knows.
pub(super) fn highlight(info: &str, lines: &[String]) -> Option<Vec<Vec<(String, Style)>>> {
    let name = info.split_whitespace().next().unwrap_or_default();
    if matches!(
        name.to_ascii_lowercase().as_str(),
        "diff" | "patch" | "udiff"
    ) {
        return Some(lines.iter().map(|line| vec![diff_line(line)]).collect());
    }
    let lang = lang(info)?;
    let mut open = Open::Nothing;
    Some(
        lines
            .iter()
            .map(|line| {
                let mut pieces = Pieces::default();
                open = line_pieces(lang, line, open, &mut pieces);
                pieces.0
            })
            .collect(),
    )
}

fn diff_line(line: &str) -> (String, Style) {
    let style = if line.starts_with("+++") || line.starts_with("---") {
        Style::new().add_modifier(Modifier::BOLD)
    } else if line.starts_with('+') {
        Style::new().fg(Color::Green)
    } else if line.starts_with('-') {
        Style::new().fg(Color::Red)
    } else if line.starts_with("@@") {
        Style::new().fg(Color::Cyan)
    } else {
        TEXT
    };
    (line.to_owned(), style)
}

/// A line's pieces, neighbours of one style merged.
#[derive(Default)]
struct Pieces(Vec<(String, Style)>);

impl Pieces {
    fn push(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some((last, last_style)) if *last_style == style => last.push_str(text),
            _ => self.0.push((text.to_owned(), style)),
        }
    }
}

/// Colours one line, starting inside `open`; what is open at its end.
fn line_pieces(lang: &Lang, line: &str, mut open: Open, out: &mut Pieces) -> Open {
    let mut rest = line;
    // What the last line left open, closed on this one or not.
    match open {
        Open::Nothing => {}
        Open::Comment(end) | Open::String(end) => {
            let style = if matches!(open, Open::Comment(_)) {
                COMMENT
            } else {
                STRING
            };
            match find_close(rest, end, matches!(open, Open::String(_))) {
                Some(at) => {
                    out.push(&rest[..at + end.len()], style);
                    rest = &rest[at + end.len()..];
                    open = Open::Nothing;
                }
                None => {
                    out.push(rest, style);
                    return open;
                }
            }
        }
    }
    if lang.keys
        && let Some(key_end) = config_key(rest)
    {
        out.push(&rest[..key_end], KEY);
        rest = &rest[key_end..];
    }
    let mut at_word_start = true;
    while let Some(c) = rest.chars().next() {
        // Comments.
        if let Some(start) = lang
            .line_comments
            .iter()
            .find(|start| rest.starts_with(**start))
            && (!matches!(*start, "#" | ";") || at_word_start)
        {
            out.push(rest, COMMENT);
            return Open::Nothing;
        }
        if let Some((start, end)) = lang.block_comment
            && rest.starts_with(start)
        {
            match find_close(&rest[start.len()..], end, false) {
                Some(at) => {
                    let len = start.len() + at + end.len();
                    out.push(&rest[..len], COMMENT);
                    rest = &rest[len..];
                    continue;
                }
                None => {
                    out.push(rest, COMMENT);
                    return Open::Comment(end);
                }
            }
        }
        // Strings.
        if let Some(delim) = lang.long_strings.iter().find(|d| rest.starts_with(**d)) {
            match find_close(&rest[delim.len()..], delim, true) {
                Some(at) => {
                    let len = delim.len() + at + delim.len();
                    out.push(&rest[..len], STRING);
                    rest = &rest[len..];
                    at_word_start = false;
                    continue;
                }
                None => {
                    out.push(rest, STRING);
                    return Open::String(delim);
                }
            }
        }
        if lang.lifetimes && c == '\'' {
            let len = char_literal(rest).unwrap_or_else(|| word_len(&rest[1..]) + 1);
            let style = if char_literal(rest).is_some() {
                STRING
            } else {
                TYPE
            };
            out.push(&rest[..len], style);
            rest = &rest[len..];
            at_word_start = false;
            continue;
        }
        if lang.quotes.contains(&c) {
            let mut delim = [0u8; 4];
            let delim = c.encode_utf8(&mut delim);
            let len = match find_close(&rest[1..], delim, true) {
                Some(at) => 1 + at + 1,
                None => rest.len(),
            };
            out.push(&rest[..len], STRING);
            rest = &rest[len..];
            at_word_start = false;
            continue;
        }
        if lang.variables && c == '$' {
            let len = variable_len(rest);
            out.push(&rest[..len], KEY);
            rest = &rest[len..];
            at_word_start = false;
            continue;
        }
        // Numbers and words.
        if c.is_ascii_digit() {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(rest.len());
            out.push(&rest[..len], NUMBER);
            rest = &rest[len..];
            at_word_start = false;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let len = word_len(rest);
            let word = &rest[..len];
            out.push(word, word_style(lang, word));
            rest = &rest[len..];
            at_word_start = false;
            continue;
        }
        let len = c.len_utf8();
        out.push(&rest[..len], TEXT);
        rest = &rest[len..];
        at_word_start = c.is_whitespace();
    }
    open
}

fn word_style(lang: &Lang, word: &str) -> Style {
    let keyword = if lang.any_case {
        lang.keywords.iter().any(|k| k.eq_ignore_ascii_case(word))
    } else {
        lang.keywords.contains(&word)
    };
    if keyword {
        KEYWORD
    } else if lang.literals.contains(&word) {
        NUMBER
    } else if lang.types && word.starts_with(|c: char| c.is_uppercase()) {
        TYPE
    } else {
        TEXT
    }
}

/// Bytes of the name at the start of `text`.
fn word_len(text: &str) -> usize {
    text.find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len())
}

/// Where `end` first occurs in `text`; with `escapes`, not right after an unescaped
/// backslash.
fn find_close(text: &str, end: &str, escapes: bool) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if escapes && bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i..].starts_with(end.as_bytes()) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The length of a character literal at the start of `text` (`'a'`, `'\n'`, `'\u{1F600}'`).
fn char_literal(text: &str) -> Option<usize> {
    let inner = text.strip_prefix('\'')?;
    let body = if let Some(escaped) = inner.strip_prefix('\\') {
        let close = escaped.find('\'')?;
        // `'\u{…}'` at most; anything longer is not one character.
        (close <= 10).then_some(1 + close)?
    } else {
        inner.chars().next()?.len_utf8()
    };
    inner[body..].starts_with('\'').then_some(1 + body + 1)
}

/// The length of a shell variable at the start of `text` (`$HOME`, `${x:-y}`, `$1`, `$?`).
fn variable_len(text: &str) -> usize {
    let after = &text[1..];
    if after.starts_with('{') {
        return after.find('}').map_or(text.len(), |close| close + 2);
    }
    match after.chars().next() {
        Some(c) if c.is_alphabetic() || c == '_' => 1 + word_len(after),
        Some(c) if c.is_ascii_digit() || "?#@*!$-".contains(c) => 2,
        _ => 1,
    }
}

/// The end of a `key =` / `key:` / `[table]` at the start of a config line.
fn config_key(line: &str) -> Option<usize> {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    if trimmed.starts_with('[') {
        return trimmed.find(']').map(|close| indent + close + 1);
    }
    let trimmed_item = trimmed.strip_prefix("- ").unwrap_or(trimmed);
    let indent = line.len() - trimmed_item.len();
    let end = trimmed_item.find(['=', ':'])?;
    let key = &trimmed_item[..end];
    let is_key = !key.trim().is_empty()
        && key
            .trim()
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.\"' ".contains(c));
    is_key.then_some(indent + end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn styled(info: &str, code: &str) -> Vec<Vec<(String, Style)>> {
        let lines: Vec<String> = code.lines().map(str::to_owned).collect();
        highlight(info, &lines).unwrap()
    }

    fn style_of(lines: &[Vec<(String, Style)>], text: &str) -> Style {
        lines
            .iter()
            .flatten()
            .find(|(piece, _)| piece == text)
            .unwrap_or_else(|| panic!("no piece {text:?} in {lines:?}"))
            .1
    }

    #[test]
    fn keywords_strings_comments_numbers_and_types_are_coloured() {
        let lines = styled(
            "rust",
            "// counts\nfn count(text: &str) -> usize {\n    let n = 42; /* inline */ \"fn\"\n    Vec::<u8>::new(); 'a'; x.len()\n}",
        );
        assert_eq!(style_of(&lines, "// counts"), COMMENT);
        assert_eq!(style_of(&lines, "fn"), KEYWORD);
        assert_eq!(style_of(&lines, "42"), NUMBER);
        assert_eq!(style_of(&lines, "/* inline */"), COMMENT);
        // A keyword inside a string is the string's.
        assert_eq!(style_of(&lines, "\"fn\""), STRING);
        assert_eq!(style_of(&lines, "Vec"), TYPE);
        assert_eq!(style_of(&lines, "'a'"), STRING);
        // Every character is kept, in order.
        let text: Vec<String> = lines
            .iter()
            .map(|l| l.iter().map(|(t, _)| t.as_str()).collect())
            .collect();
        assert_eq!(text[2], "    let n = 42; /* inline */ \"fn\"");
    }

    #[test]
    fn block_comments_and_long_strings_carry_across_lines() {
        let lines = styled(
            "ts",
            "const a = `one\ntwo ${x}\nthree`; /* open\nstill */ let b",
        );
        assert_eq!(style_of(&lines, "`one"), STRING);
        assert_eq!(style_of(&lines, "two ${x}"), STRING);
        assert_eq!(style_of(&lines, "three`"), STRING);
        assert_eq!(style_of(&lines, "/* open"), COMMENT);
        assert_eq!(style_of(&lines, "still */"), COMMENT);
        assert_eq!(style_of(&lines, "let"), KEYWORD);
        let python = styled("py", "s = \"\"\"doc\nmore\"\"\"  # note\nif x: pass");
        assert_eq!(style_of(&python, "more\"\"\""), STRING);
        assert_eq!(style_of(&python, "# note"), COMMENT);
        assert_eq!(style_of(&python, "pass"), KEYWORD);
    }

    #[test]
    fn shell_config_sql_and_diff_have_their_own_rules() {
        let sh = styled("bash", "echo \"$HOME\" ${X:-1} # done\ncurl a#b");
        assert_eq!(style_of(&sh, "# done"), COMMENT);
        assert_eq!(style_of(&sh, "${X:-1}"), KEY);
        // `#` inside a word is no comment.
        assert!(sh[1].iter().all(|(_, s)| *s != COMMENT), "{sh:?}");
        let toml = styled(
            "toml",
            "[package]\nname = \"bosun\" # the name\nedition = 2024",
        );
        assert_eq!(style_of(&toml, "[package]"), KEY);
        assert_eq!(style_of(&toml, "name "), KEY);
        assert_eq!(style_of(&toml, "\"bosun\""), STRING);
        assert_eq!(style_of(&toml, "2024"), NUMBER);
        let sql = styled("sql", "SELECT id FROM t -- all");
        assert_eq!(style_of(&sql, "SELECT"), KEYWORD);
        assert_eq!(style_of(&sql, "-- all"), COMMENT);
        let diff = styled("diff", "@@ -1 +1 @@\n-old\n+new");
        assert_eq!(diff[1][0].1, Style::new().fg(Color::Red));
        assert_eq!(diff[2][0].1, Style::new().fg(Color::Green));
        assert!(highlight("brainfuck", &["+".to_owned()]).is_none());
    }

    #[test]
    fn hostile_text_is_coloured_in_one_pass_and_nothing_is_lost() {
        // Unclosed everything, long lines, escapes at the very end, multi-byte text.
        for info in ["rust", "ts", "py", "sh", "toml", "sql", "rb", "go"] {
            let code = format!(
                "{}\\\n\"\\\n'\\\n/*\n`\n\"\"\"\n{}\n'é'\n'\\u{{1F600}}'\n$\n${{\n[\n",
                "\"a\\\"".repeat(20_000),
                "/*".repeat(20_000)
            );
            let lines: Vec<String> = code.lines().map(str::to_owned).collect();
            let out = highlight(info, &lines).unwrap();
            for (line, pieces) in lines.iter().zip(&out) {
                let joined: String = pieces.iter().map(|(t, _)| t.as_str()).collect();
                assert_eq!(&joined, line, "{info}");
            }
        }
    }
}
