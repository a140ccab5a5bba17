//! The one table of characters that hide text from a person: what renders as nothing, reorders
//! what is shown, or controls a terminal. Every string a plugin, a server or a file shows a model
//! or a person — descriptions, schema strings, prompts, names — is checked against it, and every
//! such string shown on a terminal is escaped by it.
//!
//! Two exceptions keep real text working: a zero-width joiner between two emoji (👩‍💻 is
//! written that way) and U+FE0F, the emoji presentation selector, right after an emoji.

/// The name of `c` when it is a hidden character, else `None`. Context-free: the emoji
/// exceptions are [`find_hidden`]'s.
pub fn hidden_name(c: char) -> Option<&'static str> {
    Some(match c {
        '\t' | '\n' => return None,
        '\u{0}'..='\u{1F}' | '\u{7F}' => "CONTROL CHARACTER",
        '\u{80}'..='\u{9F}' => "C1 CONTROL CHARACTER",
        '\u{00AD}' => "SOFT HYPHEN",
        '\u{034F}' => "COMBINING GRAPHEME JOINER",
        '\u{061C}' => "ARABIC LETTER MARK",
        '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' => "HANGUL FILLER",
        '\u{17B4}' | '\u{17B5}' => "KHMER INHERENT VOWEL",
        '\u{180B}'..='\u{180F}' => "MONGOLIAN VARIATION SELECTOR OR SEPARATOR",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{2028}' => "LINE SEPARATOR",
        '\u{2029}' => "PARAGRAPH SEPARATOR",
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2060}' => "WORD JOINER",
        '\u{2061}'..='\u{2064}' => "INVISIBLE OPERATOR",
        '\u{2065}' => "UNASSIGNED FORMAT CHARACTER",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{206A}'..='\u{206F}' => "DEPRECATED FORMAT CHARACTER",
        '\u{FE00}'..='\u{FE0F}' => "VARIATION SELECTOR",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE",
        '\u{FFF9}'..='\u{FFFB}' => "INTERLINEAR ANNOTATION",
        '\u{1D173}'..='\u{1D17A}' => "MUSICAL FORMAT CHARACTER",
        '\u{E0000}'..='\u{E007F}' => "TAG CHARACTER",
        '\u{E0100}'..='\u{E01EF}' => "VARIATION SELECTOR",
        _ => return None,
    })
}

/// Whether `c` is in the table (context-free: a ZWJ or U+FE0F counts).
pub fn is_hidden_char(c: char) -> bool {
    hidden_name(c).is_some()
}

/// Whether `c` is drawn as an emoji (or is the emoji presentation selector), for the two
/// exceptions.
pub fn is_emoji(c: char) -> bool {
    matches!(c as u32, 0x1F000..=0x1FFFF | 0x2600..=0x27BF | 0x2300..=0x23FF | 0x2B00..=0x2BFF | 0x2190..=0x21FF | 0x00A9 | 0x00AE | 0x203C | 0x2049 | 0x2122 | 0x2139 | 0x3030 | 0x303D | 0xFE0F)
}

/// A hidden character found in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hidden {
    /// The character.
    pub c: char,
    /// Its position, in characters from the start.
    pub at: usize,
    /// Its name in the table.
    pub name: &'static str,
}

impl std::fmt::Display for Hidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "U+{:04X} ({}) at character {}",
            self.c as u32, self.name, self.at
        )
    }
}

/// Every hidden character of `text` with its position, honouring the emoji exceptions.
pub fn hidden_chars(text: &str) -> impl Iterator<Item = Hidden> + '_ {
    let mut previous: Option<char> = None;
    let mut chars = text.chars().enumerate().peekable();
    std::iter::from_fn(move || {
        while let Some((at, c)) = chars.next() {
            let before = previous.replace(c);
            let Some(name) = hidden_name(c) else {
                continue;
            };
            let after = chars.peek().map(|&(_, c)| c);
            let emoji_joiner =
                c == '\u{200D}' && before.is_some_and(is_emoji) && after.is_some_and(is_emoji);
            let emoji_selector = c == '\u{FE0F}' && before.is_some_and(|b| b != c && is_emoji(b));
            if emoji_joiner || emoji_selector {
                continue;
            }
            return Some(Hidden { c, at, name });
        }
        None
    })
}

/// The first hidden character of `text`, if any.
pub fn find_hidden(text: &str) -> Option<Hidden> {
    if text.is_ascii()
        && !text
            .bytes()
            .any(|b| b.is_ascii_control() && b != b'\n' && b != b'\t')
    {
        return None;
    }
    hidden_chars(text).next()
}

/// Text made safe to show a person on one line of a review: every hidden character (and tab)
/// becomes a visible `\u{…}` escape instead of acting on the screen; newlines are kept; emoji
/// sequences are left whole. ESC, CSI (U+009B), OSC and every other control cannot reach the
/// terminal.
pub fn escape_hidden(text: &str) -> String {
    escape(text, true)
}

/// [`escape_hidden`] for text laid out with tabs (tables, command output): tabs are kept.
pub fn escape_for_terminal(text: &str) -> String {
    escape(text, false)
}

fn escape(text: &str, tabs: bool) -> String {
    if text.is_ascii()
        && !text
            .bytes()
            .any(|b| b.is_ascii_control() && b != b'\n' && (tabs || b != b'\t'))
    {
        return text.to_owned();
    }
    let flagged: std::collections::BTreeSet<usize> = hidden_chars(text).map(|h| h.at).collect();
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.chars().enumerate() {
        if (tabs && c == '\t') || flagged.contains(&i) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_the_attacks_used_is_hidden() {
        for c in [
            '\u{1B}',
            '\u{7}',
            '\u{9B}',
            '\u{9D}',
            '\u{85}',
            '\u{61C}',
            '\u{115F}',
            '\u{1160}',
            '\u{3164}',
            '\u{FFA0}',
            '\u{FE00}',
            '\u{FE0E}',
            '\u{E0001}',
            '\u{E0041}',
            '\u{E007F}',
            '\u{E0100}',
            '\u{E01EF}',
            '\u{202E}',
            '\u{2066}',
            '\u{200B}',
            '\u{FEFF}',
            '\u{2028}',
        ] {
            assert!(
                find_hidden(&format!("a{c}b")).is_some(),
                "U+{:04X}",
                c as u32
            );
            assert!(
                !escape_hidden(&format!("a{c}b")).contains(c),
                "U+{:04X}",
                c as u32
            );
        }
    }

    #[test]
    fn emoji_sequences_and_plain_text_pass() {
        for text in [
            "👩\u{200D}💻 pair programming",
            "❤\u{FE0F} love",
            "tab\tand\nnewline",
            "héllo wörld 中文 العربية",
        ] {
            assert_eq!(find_hidden(text), None, "{text:?}");
        }
        assert_eq!(escape_hidden("👩\u{200D}💻"), "👩\u{200D}💻");
        // A joiner or selector not between emoji hides.
        assert!(find_hidden("a\u{200D}b").is_some());
        assert!(find_hidden("a\u{FE0F}").is_some());
        assert!(find_hidden("❤\u{FE0F}\u{FE0F}").is_some());
    }

    #[test]
    fn positions_are_in_characters() {
        let found = find_hidden("éé\u{E0041}").unwrap();
        assert_eq!((found.at, found.name), (2, "TAG CHARACTER"));
        assert_eq!(escape_hidden("a\u{1B}[31m"), "a\\u{1b}[31m");
        assert_eq!(escape_hidden("\t"), "\\u{9}");
    }
}
