//! The front matter of a Markdown file — a `SKILL.md`, an agent file — and the body after it.
//! One parser for skills and subagents, reading the subset of YAML those files use: `key: value`
//! lines (everything after the first colon is the value, colons included), quoted values,
//! `[a, b]` and `- item` lists, `|` and `>` block scalars, plain values continued on indented
//! lines, comments. A nested map (`metadata:` with indented `key: value` lines) is read past, so
//! its keys never pass for top-level ones. It only reads text: what a field means, and whether
//! one is missing, is its caller's business.

use std::collections::BTreeMap;

/// The largest front-matter block, in bytes.
pub const MAX_FRONT_MATTER_BYTES: usize = 8 * 1024;

/// Why a file's front matter cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontMatterError {
    /// The file does not open with a `---` line.
    #[error("it must start with a `---` front-matter line")]
    NoOpening,
    /// No `---` line closes the front matter.
    #[error("its front matter has no closing `---`")]
    NoClosing,
    /// The front matter is larger than [`MAX_FRONT_MATTER_BYTES`].
    #[error("the front matter is {bytes} bytes; keep it within {MAX_FRONT_MATTER_BYTES}")]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// A top-level line that is neither `key: value`, a comment nor part of the field above.
    #[error("front matter line `{0}` is not `key: value`")]
    NotKeyValue(String),
}

/// One field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Field {
    /// A scalar, unquoted.
    Text(String),
    /// A list (`[a, b]` or `- item` lines), each item unquoted.
    List(Vec<String>),
    /// A nested map: read past.
    Map,
}

/// The fields of a front matter, by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    fields: BTreeMap<String, Field>,
}

impl FrontMatter {
    /// The scalar value of `key`; `None` when it is absent or not a scalar.
    pub fn text(&self, key: &str) -> Option<&str> {
        match self.fields.get(key)? {
            Field::Text(text) => Some(text),
            Field::List(_) | Field::Map => None,
        }
    }

    /// Whether `key` is present, whatever its value (a nested map included).
    pub fn has(&self, key: &str) -> bool {
        self.fields.contains_key(key)
    }

    /// The items of `key`: a list's, or a scalar's comma-separated parts (`read_file, search`),
    /// each trimmed and unquoted, empty ones left out. `None` when it is absent or a map.
    pub fn list(&self, key: &str) -> Option<Vec<String>> {
        let items = match self.fields.get(key)? {
            Field::List(items) => items.clone(),
            Field::Text(text) => text
                .split(',')
                .map(|item| unquote(item).to_owned())
                .collect(),
            Field::Map => return None,
        };
        Some(items.into_iter().filter(|i| !i.is_empty()).collect())
    }

    /// The first scalar or list item holding a hidden character: its key, and the character.
    pub fn hidden(&self) -> Option<(&str, String)> {
        self.fields.iter().find_map(|(key, field)| {
            let found = match field {
                Field::Text(text) => bosun_core::hidden::find_hidden(text),
                Field::List(items) => items
                    .iter()
                    .find_map(|item| bosun_core::hidden::find_hidden(item)),
                Field::Map => None,
            };
            found.map(|found| (key.as_str(), found.to_string()))
        })
    }
}

/// How the lines below a key are read.
enum Below {
    /// Nothing more belongs to the last key.
    Nothing,
    /// Indented lines continue a plain scalar, joined with spaces.
    Continues(String),
    /// A `|` (lines kept) or `>` (lines folded) block scalar.
    Block { key: String, literal: bool },
    /// A key with no value: `- item` lines make a list, `key: value` lines a nested map.
    Open(String),
}

/// The front matter of `text` and the body after it (leading blank lines left out). A byte
/// order mark and CRLF line ends are read like their absence.
///
/// # Errors
/// A [`FrontMatterError`] saying what is wrong with the front matter.
pub fn parse(text: &str) -> Result<(FrontMatter, &str), FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(FrontMatterError::NoOpening)?;
    let (front, body) = split_at_closing(rest)?;
    if front.len() > MAX_FRONT_MATTER_BYTES {
        return Err(FrontMatterError::TooLarge { bytes: front.len() });
    }
    let mut fields: BTreeMap<String, Field> = BTreeMap::new();
    let mut block: Vec<&str> = Vec::new();
    let mut below = Below::Nothing;
    for line in front.lines() {
        let line = line.trim_end();
        let indented = line.starts_with([' ', '\t']);
        let trimmed = line.trim_start();
        if indented || (trimmed.is_empty() && matches!(below, Below::Block { .. })) {
            match &below {
                Below::Block { .. } => block.push(trimmed),
                Below::Continues(key) if !trimmed.is_empty() => {
                    if let Some(Field::Text(value)) = fields.get_mut(key) {
                        value.push(' ');
                        value.push_str(trimmed);
                    }
                }
                Below::Open(key) if !trimmed.is_empty() && !trimmed.starts_with('#') => {
                    let field = fields.entry(key.clone()).or_insert(Field::Map);
                    match (trimmed.strip_prefix('-'), &mut *field) {
                        (Some(item), Field::List(items)) => items.push(unquote(item).to_owned()),
                        (Some(item), Field::Map) => {
                            *field = Field::List(vec![unquote(item).to_owned()]);
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
            continue;
        }
        end_block(&mut fields, &mut below, &mut block);
        if trimmed.is_empty() || trimmed.starts_with('#') {
            below = Below::Nothing;
            continue;
        }
        let (key, value) = trimmed
            .split_once(':')
            .ok_or_else(|| FrontMatterError::NotKeyValue(trimmed.to_owned()))?;
        let (key, value) = (key.trim().to_owned(), value.trim());
        below = match value {
            "" => Below::Open(key.clone()),
            "|" | "|-" | "|+" | ">" | ">-" | ">+" => Below::Block {
                key: key.clone(),
                literal: value.starts_with('|'),
            },
            _ if value.starts_with('[') && value.ends_with(']') => Below::Nothing,
            _ => Below::Continues(key.clone()),
        };
        let field = match &below {
            Below::Open(_) => Field::Map,
            Below::Block { .. } => Field::Text(String::new()),
            Below::Nothing => Field::List(
                value[1..value.len() - 1]
                    .split(',')
                    .map(|item| unquote(item).to_owned())
                    .filter(|item| !item.is_empty())
                    .collect(),
            ),
            Below::Continues(_) => Field::Text(unquote(value).to_owned()),
        };
        fields.insert(key, field);
    }
    end_block(&mut fields, &mut below, &mut block);
    Ok((
        FrontMatter { fields },
        body.trim_start_matches(['\r', '\n']),
    ))
}

/// The front matter before the first line that is `---`, and the text after that line.
fn split_at_closing(rest: &str) -> Result<(&str, &str), FrontMatterError> {
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err(FrontMatterError::NoClosing)
}

/// Ends a block scalar in progress: its lines become its key's value.
fn end_block(fields: &mut BTreeMap<String, Field>, below: &mut Below, block: &mut Vec<&str>) {
    if let Below::Block { key, literal } = below {
        while block.last().is_some_and(|line| line.is_empty()) {
            block.pop();
        }
        let joined = block.join(if *literal { "\n" } else { " " });
        fields.insert(key.clone(), Field::Text(joined));
        block.clear();
        *below = Below::Nothing;
    }
}

/// `text` trimmed and without one pair of surrounding quotes.
fn unquote(text: &str) -> &str {
    let text = text.trim();
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .or_else(|| text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')))
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn front(text: &str) -> FrontMatter {
        parse(text).unwrap().0
    }

    /// Skills read a byte order mark and CRLF line ends as their absence; agent files were
    /// refused for either.
    #[test]
    fn a_byte_order_mark_and_crlf_line_ends_are_read() {
        let (front, body) =
            parse("\u{feff}---\r\nname: reader\r\ndescription: Reads.\r\n---\r\nRead.\r\n")
                .unwrap();
        assert_eq!(front.text("name"), Some("reader"));
        assert_eq!(front.text("description"), Some("Reads."));
        assert_eq!(body, "Read.\r\n");
    }

    /// Agent files took every indented `key: value` for a top-level field, so a nested map
    /// could set one; skills read past them. They are read past.
    #[test]
    fn keys_of_a_nested_map_are_not_top_level_fields() {
        let front = front(
            "---\nname: reader\nmetadata:\n  model: other\n  name: evil\ndescription: Reads.\n---\n",
        );
        assert_eq!(front.text("name"), Some("reader"));
        assert_eq!(front.text("model"), None);
        assert_eq!(front.text("metadata"), None);
        assert_eq!(front.list("metadata"), None);
        assert_eq!(front.text("description"), Some("Reads."));
    }

    /// Skills read past `- item` lines and kept the brackets of `[a, b]`; both are lists.
    #[test]
    fn block_and_flow_lists_are_lists() {
        let front = front(
            "---\ntools:\n  - read_file\n  - \"search\"\nmore: [a, 'b', ]\nline: x, y\n---\n",
        );
        assert_eq!(
            front.list("tools"),
            Some(vec!["read_file".to_owned(), "search".to_owned()])
        );
        assert_eq!(
            front.list("more"),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(
            front.list("line"),
            Some(vec!["x".to_owned(), "y".to_owned()])
        );
        assert_eq!(front.text("tools"), None);
    }

    /// Agent files stripped brackets from every value; a scalar keeps them.
    #[test]
    fn brackets_inside_a_scalar_are_kept() {
        let front = front("---\ndescription: [Beta] reads files\nmodel: fast]\n---\n");
        assert_eq!(front.text("description"), Some("[Beta] reads files"));
        assert_eq!(front.text("model"), Some("fast]"));
    }

    /// Skills skipped a top-level line that is not `key: value`; the file is not valid YAML,
    /// so it is refused (the Agent Skills guide: skip a skill whose YAML does not parse).
    #[test]
    fn a_top_level_line_without_a_colon_is_refused() {
        assert_eq!(
            parse("---\nname: reader\njust words\n---\n").unwrap_err(),
            FrontMatterError::NotKeyValue("just words".to_owned())
        );
    }

    /// Skills dropped the dashes a body began with; the body is kept as written.
    #[test]
    fn a_body_that_starts_with_a_list_keeps_its_dashes() {
        let (_, body) = parse("---\nname: x\n---\n\n- first\n- second\n").unwrap();
        assert_eq!(body, "- first\n- second\n");
    }

    /// Both took `\n---` anywhere for the end (`---x`, `----`); only a `---` line closes.
    #[test]
    fn only_a_line_of_three_dashes_closes_the_front_matter() {
        let (front, body) = parse("---\nname: x\n----not-the-end: y\n---  \nbody\n").unwrap();
        assert_eq!(front.text("----not-the-end"), Some("y"));
        assert_eq!(body, "body\n");
        assert_eq!(
            parse("---\nname: x\n").unwrap_err(),
            FrontMatterError::NoClosing
        );
        assert_eq!(
            parse("name: x\n---\n").unwrap_err(),
            FrontMatterError::NoOpening
        );
    }

    /// A value continued on indented lines, and `|` and `>` block scalars, are whole values;
    /// both parsers kept only the first line (`>` itself, for a block).
    #[test]
    fn multi_line_values_are_read_whole() {
        let front = front(
            "---\nname: x\ndescription: Reads files\n  and lists them.\nliteral: |\n  one\n  two\nfolded: >-\n  one\n  two\n\n# comment\n---\n",
        );
        assert_eq!(
            front.text("description"),
            Some("Reads files and lists them.")
        );
        assert_eq!(front.text("literal"), Some("one\ntwo"));
        assert_eq!(front.text("folded"), Some("one two"));
    }

    #[test]
    fn colons_quotes_comments_and_hidden_characters() {
        let front = front(
            "---\n# a comment\ndescription: Use it: when asked.\nname: 'quoted'\nodd: \"x\u{200b}\"\n---\n",
        );
        assert_eq!(front.text("description"), Some("Use it: when asked."));
        assert_eq!(front.text("name"), Some("quoted"));
        let (key, _) = front.hidden().unwrap();
        assert_eq!(key, "odd");
    }

    #[test]
    fn an_oversized_front_matter_is_refused() {
        let text = format!(
            "---\ndescription: {}\n---\n",
            "x".repeat(MAX_FRONT_MATTER_BYTES)
        );
        assert!(matches!(
            parse(&text).unwrap_err(),
            FrontMatterError::TooLarge { .. }
        ));
    }
}
