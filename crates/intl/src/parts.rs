//! Formatted text with the spans ICU4X marks, turned into `formatToParts` entries.

use std::fmt;

use serde_json::{Value, json};
use writeable::{Part, PartsWrite, Writeable};

/// Text and the parts written into it, innermost first.
#[derive(Default)]
pub(crate) struct Parts {
    pub(crate) text: String,
    spans: Vec<(usize, usize, Part)>,
}

impl fmt::Write for Parts {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

impl PartsWrite for Parts {
    type SubPartsWrite = Self;

    fn with_part(
        &mut self,
        part: Part,
        mut f: impl FnMut(&mut Self::SubPartsWrite) -> fmt::Result,
    ) -> fmt::Result {
        let start = self.text.len();
        f(self)?;
        self.spans.push((start, self.text.len(), part));
        Ok(())
    }
}

impl Parts {
    /// Writes `value` with its parts.
    pub(crate) fn of(value: &impl Writeable) -> Self {
        let mut parts = Self::default();
        // Writing to a String cannot fail.
        let _ = value.write_to_parts(&mut parts);
        parts
    }

    /// The entries: the outermost spans that `name` gives a type, and the text between them
    /// typed by `gap` (normally `literal`).
    pub(crate) fn entries(
        &self,
        name: impl Fn(&Part) -> Option<&'static str>,
        gap: impl Fn(&str) -> Vec<(&'static str, String)>,
    ) -> Vec<(&'static str, String)> {
        let mut typed: Vec<(usize, usize, &'static str)> = self
            .spans
            .iter()
            .filter_map(|(s, e, p)| name(p).map(|n| (*s, *e, n)))
            .filter(|(s, e, _)| e > s)
            .collect();
        typed.sort_by_key(|(s, e, _)| (*s, std::cmp::Reverse(*e)));
        let mut out = Vec::new();
        let mut at = 0;
        for (start, end, kind) in typed {
            if start < at {
                continue; // inside a span already taken
            }
            if start > at {
                out.extend(gap(&self.text[at..start]));
            }
            out.push((kind, self.text[start..end].to_owned()));
            at = end;
        }
        if at < self.text.len() {
            out.extend(gap(&self.text[at..]));
        }
        out
    }
}

/// `[{type, value}]`.
pub(crate) fn to_json(entries: Vec<(&'static str, String)>) -> Value {
    Value::Array(
        entries
            .into_iter()
            .map(|(kind, value)| json!({ "type": kind, "value": value }))
            .collect(),
    )
}

/// A gap as one literal.
pub(crate) fn literal(text: &str) -> Vec<(&'static str, String)> {
    vec![("literal", text.to_owned())]
}
