//! The `[policy]` table of a config file and where it came from. This module parses and locates
//! (byte spans to lines); it never reads a file itself — callers pass the text they read.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::{Example, PolicyError, Rule};

/// The `[policy]` table: rules and the examples that check them.
///
/// It deserialises as a field of a bigger config struct (`#[serde(default)] policy: PolicyFile`)
/// parsed with `toml::from_str`, keeping each entry's span so errors can name a line.
///
/// ```toml
/// [policy]
/// examples = [{ action = "fs.write", path = "secrets/key", expect = "deny" }]
///
/// [[policy.rules]]
/// action = "fs.write"
/// path = "secrets/**"
/// decision = "deny"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// `[[policy.rules]]`.
    #[serde(default)]
    pub rules: Vec<Spanned<Rule>>,
    /// `policy.examples = [{ action = "...", expect = "..." }]`.
    #[serde(default)]
    pub examples: Vec<Spanned<Example>>,
    /// The configured model (`[models.<name>]`) that decides `review` decisions before a
    /// person. User config only: a project cannot choose who reviews.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    /// When nobody can be asked (a headless run), an `ask` goes to the reviewer first as a
    /// `review` does. User config only; needs `reviewer`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub review_asks: bool,
    /// The most sensitive data the reviewer may be sent: a review of a call in a session
    /// holding more goes to a person instead. Absent: what your default model is sent (every
    /// level) when the reviewer talks to the same API root, else `PUBLIC`. User config only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_classification: Option<bosun_core::Classification>,
}

/// A standalone document: only a `[policy]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(default)]
    policy: PolicyFile,
}

impl PolicyFile {
    /// Parses a document whose top level holds only a `[policy]` table. Config files with other
    /// tables are parsed by their owner, with `PolicyFile` as a field.
    pub fn parse(text: &str) -> Result<PolicyFile, PolicyError> {
        toml::from_str::<Document>(text)
            .map(|document| document.policy)
            .map_err(|error| {
                let position = error.span().map(|span| line_col(text, span.start));
                PolicyError::Parse {
                    line: position.map(|(line, _)| line),
                    column: position.map(|(_, column)| column),
                    message: error.message().trim_end().to_owned(),
                }
            })
    }

    /// A file built in code rather than parsed: entries carry empty spans, so pair it with a
    /// [`Source`] without text.
    pub fn from_rules(rules: impl IntoIterator<Item = Rule>) -> PolicyFile {
        PolicyFile {
            rules: rules
                .into_iter()
                .map(|rule| Spanned::new(0..0, rule))
                .collect(),
            examples: Vec::new(),
            reviewer: None,
            review_asks: false,
            reviewer_classification: None,
        }
    }
}

/// Where a policy file came from, to name it in explanations and errors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// How to name it: usually its path.
    pub name: String,
    /// The text its spans index into; without it, locations name the file but no line.
    pub text: Option<String>,
}

impl Source {
    /// A source known by name only.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            text: None,
        }
    }

    /// A source with the text that was parsed.
    pub fn with_text(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            text: Some(text.into()),
        }
    }

    /// The location of byte `offset` of the text.
    pub(crate) fn locate(&self, offset: usize) -> Location {
        Location {
            file: self.name.clone(),
            line: self.text.as_deref().map(|text| line_col(text, offset).0),
        }
    }
}

/// Locates increasing offsets of one source, counting only the newlines since the offset
/// before: a table of n rules is located in one pass over its text instead of one pass per
/// rule, which made loading 10,000 rules take seconds. An offset before the last one starts
/// again from the top, so any order gives [`Source::locate`]'s answer.
pub(crate) struct Locator<'a> {
    source: &'a Source,
    /// The offset last located, and its 1-based line.
    offset: usize,
    line: usize,
}

impl<'a> Locator<'a> {
    pub(crate) fn new(source: &'a Source) -> Self {
        Self {
            source,
            offset: 0,
            line: 1,
        }
    }

    /// The location of byte `offset` of the text.
    pub(crate) fn locate(&mut self, offset: usize) -> Location {
        let Some(text) = self.source.text.as_deref() else {
            return self.source.locate(offset);
        };
        let offset = offset.min(text.len());
        if offset < self.offset {
            (self.offset, self.line) = (0, 1);
        }
        let between = &text.as_bytes()[self.offset..offset];
        self.line += between.iter().filter(|&&b| b == b'\n').count();
        self.offset = offset;
        Location {
            file: self.source.name.clone(),
            line: Some(self.line),
        }
    }
}

/// A file and, when known, a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    pub(crate) file: String,
    pub(crate) line: Option<usize>,
}

impl Location {
    /// `file:line`, or `file`.
    pub(crate) fn render(&self) -> String {
        crate::error::at(&self.file, self.line)
    }
}

pub(crate) use bosun_core::text::line_col;

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_locator_gives_each_offset_the_line_a_fresh_count_gives() {
        let text = "[[policy.rules]]\naction = \"a\"\n\né = 1\nx";
        let source = Source::with_text("config.toml", text);
        let mut locator = Locator::new(&source);
        // Increasing, repeated, decreasing and past the end.
        for offset in [0, 1, 17, 17, 18, 30, 31, 32, 33, 5, 0, 40, 999, 3] {
            assert_eq!(
                locator.locate(offset),
                source.locate(offset),
                "offset {offset}"
            );
        }
        let named = Source::named("config.toml");
        assert_eq!(Locator::new(&named).locate(7), named.locate(7));
    }

    #[test]
    fn line_col_counts_lines_and_characters() {
        let text = "ab\ncé\nx";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        assert_eq!(line_col(text, 6), (2, 3));
        assert_eq!(line_col(text, 7), (3, 1));
        assert_eq!(line_col(text, 5), (2, 3), "inside a character");
        assert_eq!(line_col(text, 999), (3, 2), "past the end");
    }
}
