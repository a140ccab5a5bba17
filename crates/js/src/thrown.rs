//! Where a plugin's error was thrown, read once where the engine's message enters the host.
//!
//! The engine ends the description of a thrown error with ` (at <file>:<line>[:<column>])`,
//! naming the innermost frame in the plugin's own code (`prelude/inspect.js`, `whereThrown`).
//! [`ThrownAt::find`] reads that suffix into a typed value with its place in the message, so the
//! host maps it to the TypeScript its author wrote without parsing the text again.

use std::ops::Range;

/// The plugin file, line and column a plugin's error was thrown at, and where the engine wrote
/// them in the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrownAt {
    /// The file, relative to the plugin's directory (`index.mjs`, `src/tool.ts`).
    pub file: String,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1, when the engine knew it.
    pub column: Option<u32>,
    /// The bytes of the message that hold `(at file:line:column)`, parentheses included.
    pub span: Range<usize>,
}

impl ThrownAt {
    /// The last `(at file:line[:column])` in `message`, or `None` when it names no position.
    pub fn find(message: &str) -> Option<Self> {
        let open = message.rfind("(at ")?;
        let inner_start = open + 4;
        let close = inner_start + message[inner_start..].find(')')?;
        let inner = &message[inner_start..close];
        let mut parts = inner.rsplitn(3, ':');
        let (last, middle) = (parts.next()?, parts.next()?);
        // `file:line:column`, or `file:line` when the engine knew no column.
        let (file, line, column) = match parts.next() {
            Some(file) => (file, middle, Some(last)),
            None => (middle, last, None),
        };
        if file.is_empty() {
            return None;
        }
        let line = digits(line)?;
        let column = match column {
            Some(column) => Some(digits(column)?),
            None => None,
        };
        Some(Self {
            file: file.to_owned(),
            line,
            column,
            span: open..close + 1,
        })
    }

    /// `message` with this position replaced by `file:line:column`; `message` unchanged when the
    /// span is not in it.
    pub fn replace_in(&self, message: &str, line: u32, column: u32) -> String {
        match (message.get(..self.span.start), message.get(self.span.end..)) {
            (Some(before), Some(after)) => {
                format!("{before}(at {}:{line}:{column}){after}", self.file)
            }
            _ => message.to_owned(),
        }
    }
}

fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_position_is_read_with_its_span() {
        let message = "The tool failed unexpectedly. TypeError: x (at src/a.ts:12:5) … [truncated]";
        let at = ThrownAt::find(message).unwrap();
        assert_eq!(
            at,
            ThrownAt {
                file: "src/a.ts".to_owned(),
                line: 12,
                column: Some(5),
                span: 43..61,
            }
        );
        assert_eq!(&message[at.span.clone()], "(at src/a.ts:12:5)");
        assert_eq!(
            at.replace_in(message, 3, 1),
            "The tool failed unexpectedly. TypeError: x (at src/a.ts:3:1) … [truncated]"
        );
    }

    #[test]
    fn a_position_without_a_column_is_read() {
        let at = ThrownAt::find("Error: e (at mod.ts:7)").unwrap();
        assert_eq!((at.file.as_str(), at.line, at.column), ("mod.ts", 7, None));
    }

    #[test]
    fn text_that_names_no_position_is_none() {
        for message in [
            "Error: plain",
            "Error: (at nowhere)",
            "Error: (at a.ts:x:1)",
            "Error: (at a.ts:1:-1)",
            "Error: (at :1:2)",
            "Error: (at a.ts:1:2",
        ] {
            assert_eq!(ThrownAt::find(message), None, "{message}");
        }
    }
}
