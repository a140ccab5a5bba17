//! Checks on text rather than syntax: hidden characters anywhere in a file (on purpose: they
//! hide in identifiers, strings and comments alike), and the phrases, encodings and shell
//! idioms looked for inside string literals, templates, comments and JSX text. Also the helpers
//! that print a snippet safely and decode the constants the resolver folds.

use std::sync::LazyLock;

use regex::Regex;

/// The name of a hidden character: the one table, in `bosun_core::hidden`.
pub(crate) fn hidden_name(c: char) -> Option<&'static str> {
    bosun_core::hidden::hidden_name(c).filter(|_| c != '\r')
}

/// A run of hidden characters in a file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct HiddenRun {
    /// Byte offset of the first.
    pub start: usize,
    /// Byte offset after the last.
    pub end: usize,
    /// Message for the finding.
    pub message: String,
}

/// Every run of hidden characters in `source`, except a byte-order mark at its very start and
/// a zero-width joiner between two emoji (as in 👩‍💻), which is how such emoji are written.
///
/// At most `limit` runs are returned; the second value counts the others.
pub(crate) fn hidden_runs(source: &str, limit: usize) -> (Vec<HiddenRun>, usize) {
    // Every hidden character is outside ASCII.
    if source.is_ascii() {
        return (Vec::new(), 0);
    }
    let chars: Vec<(usize, char)> = source.char_indices().collect();
    let mut runs = Vec::new();
    let mut more = 0;
    let mut i = 0;
    while i < chars.len() {
        let hidden = |i: usize| {
            let (at, c) = chars[i];
            if at == 0 && c == '\u{FEFF}' {
                return false;
            }
            if c == '\u{FE0F}'
                && i.checked_sub(1)
                    .is_some_and(|j| chars[j].1 != c && is_emoji(chars[j].1))
            {
                return false;
            }
            if c == '\u{200D}' {
                let before = i.checked_sub(1).map(|j| chars[j].1);
                let after = chars.get(i + 1).map(|&(_, c)| c);
                if before.is_some_and(is_emoji) && after.is_some_and(is_emoji) {
                    return false;
                }
            }
            hidden_name(c).is_some()
        };
        if !hidden(i) {
            i += 1;
            continue;
        }
        let first = i;
        while i < chars.len() && hidden(i) {
            i += 1;
        }
        if runs.len() >= limit {
            more += 1;
            continue;
        }
        let start = chars[first].0;
        let end = chars.get(i).map_or(source.len(), |&(at, _)| at);
        let c = chars[first].1;
        let name = hidden_name(c).unwrap_or("HIDDEN CHARACTER");
        let count = i - first;
        let mut message = if count == 1 {
            format!("hidden character U+{:04X} ({name})", c as u32)
        } else {
            format!(
                "{count} hidden characters, the first U+{:04X} ({name})",
                c as u32
            )
        };
        // Tag characters spell ASCII that a model reads and a person does not see.
        let smuggled: String = chars[first..i]
            .iter()
            .filter_map(|&(_, c)| {
                let code = c as u32;
                (0xE0020..=0xE007E)
                    .contains(&code)
                    .then(|| char::from_u32(code - 0xE0000).unwrap_or('?'))
            })
            .collect();
        if !smuggled.is_empty() {
            message.push_str(&format!(
                " spelling \"{}\"",
                escape(&truncate(&smuggled, 60))
            ));
        }
        runs.push(HiddenRun {
            start,
            end,
            message,
        });
    }
    (runs, more)
}

use bosun_core::hidden::is_emoji;

/// Text lowered, with hidden characters dropped and whitespace runs made one space, plus the
/// byte offset in the original of every byte of it, so that a match can be placed.
pub(crate) struct Normalized {
    pub text: String,
    pub offsets: Vec<usize>,
}

pub(crate) fn normalize(text: &str) -> Normalized {
    let mut out = String::with_capacity(text.len());
    let mut offsets = Vec::with_capacity(text.len());
    let mut space = false;
    for (at, c) in text.char_indices() {
        if hidden_name(c).is_some() {
            continue;
        }
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
            offsets.push(at);
        }
        space = false;
        let c = match c {
            '\u{2018}' | '\u{2019}' | '\u{02BC}' => '\'',
            c => c,
        };
        for lower in c.to_lowercase() {
            let before = out.len();
            out.push(lower);
            offsets.extend(std::iter::repeat_n(at, out.len() - before));
        }
    }
    Normalized { text: out, offsets }
}

fn compile(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

/// Phrases that address a model to override its instructions. Phrases, not words: "admin
/// mode", "ignore", "system prompt" or "you are now a subscriber" on their own are ordinary
/// text. Matched on [`normalize`]d text (lower case, single spaces).
static INJECTION: LazyLock<Vec<(Option<Regex>, &'static str)>> = LazyLock::new(|| {
    [
        (
            r"\b(?:ignore|disregard|forget|override|skip)(?: (?:all|any|each|every|of|the|your|my|these|those|everything|about))* (?:previous|prior|above|earlier|preceding|former|original|initial|system|developer|existing) (?:instructions?|prompts?|rules|directions|directives|guidelines|guidance|messages|context|constraints|commands|orders)\b",
            "tells the model to ignore its instructions",
        ),
        (
            r"\bdisregard(?: (?:all|any|the|everything))* (?:prior|previous|above|earlier|preceding)\b",
            "tells the model to disregard prior context",
        ),
        (
            r"\bforget(?: (?:all|about|everything|of))* (?:your|the|previous|prior|above|all) (?:rules|instructions|constraints|guidelines|training|programming)\b",
            "tells the model to forget its constraints",
        ),
        (
            r"\bsystem prompt (?:override|overwrite|replacement|injection|leak)\b|\b(?:override|overwrite|replace|ignore|reveal|print|repeat|output|leak|dump|disclose) (?:the |your |its |this )?(?:system|hidden|initial|original) (?:prompt|instructions|message)\b|\bnew system (?:prompt|instructions)\b",
            "targets the system prompt",
        ),
        (
            r"\byou are now (?:dan\b|jailbroken|unrestricted|unfiltered|uncensored|unbound|free from|no longer|acting as|operating as|in (?:developer|admin|god|sudo|debug|dan|jailbreak|unrestricted) mode|an? (?:different|new|unrestricted|unfiltered|uncensored|evil|malicious|rogue|jailbroken) )|\byou are no longer (?:bound|restricted|limited|an? (?:ai|assistant|language model))\b|\bfrom now on,? you (?:are|will|must|shall|have)\b|\b(?:pretend|act as if|imagine) (?:that )?you (?:are|have) (?:no|not bound|free of|without) ",
            "tries to redefine the model's identity",
        ),
        (
            r"\b(?:reveal|leak|exfiltrate|disclose|dump)(?: all(?: of)?)? (?:your|the user'?s|all|any) (?:secrets?|credentials|api keys?|passwords?|tokens|environment variables|private keys?)\b|\breveal (?:all )?(?:secrets|credentials|api keys|passwords|private keys)\b",
            "tries to extract secrets",
        ),
        (
            r"\bbypass (?:the |your |all |any )?(?:security|safety|policy|policies|classification|restrictions|guardrails|content filters?|filters)\b",
            "tries to bypass security controls",
        ),
        (
            r"\b(?:enable|enter|activate|engage|switch to|switch into|turn on) (?:the )?(?:god|dan|jailbreak|unrestricted|sudo) mode\b|\byou are (?:now )?in (?:developer|admin|god|sudo|debug|dan|jailbreak) mode\b",
            "tries to escalate the model's privileges",
        ),
        (
            r"\b(?:do not|don't|never) (?:tell|inform) (?:the )?user\b|\b(?:do not|don't|never) (?:mention|reveal|show|disclose) (?:this|it|that|these instructions|anything) to (?:the )?user\b|\bwithout (?:telling|informing) (?:the )?user\b",
            "tells the model to hide something from the user",
        ),
    ]
    .into_iter()
    .map(|(pattern, message)| (compile(pattern), message))
    .collect()
});

/// Triggerfish's #18, widened to `curl … | sh`.
static SHELL_DECODE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(
        r"\bbase64 (?:-d|--decode)\b|\becho \S+ ?\| ?(?:ba|z)?sh\b|\b(?:curl|wget)\b[^|]{0,200}\| ?(?:sudo )?(?:ba|z)?sh\b",
    )
});

/// Triggerfish's #19, as a word: "carrot 13" is not ROT13.
static ROT13: LazyLock<Option<Regex>> = LazyLock::new(|| compile(r"\brot ?[-_]? ?13\b"));

/// A phrase found in some text: where (a byte offset into the text) and what it does.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PhraseMatch {
    pub offset: usize,
    pub phrase: String,
    pub message: &'static str,
}

fn first_match(normalized: &Normalized, regex: &Regex) -> Option<(usize, String)> {
    let m = regex.find(&normalized.text)?;
    let offset = normalized.offsets.get(m.start()).copied().unwrap_or(0);
    Some((offset, m.as_str().to_owned()))
}

/// The first prompt-injection phrase in `text`.
pub(crate) fn injection(normalized: &Normalized) -> Option<PhraseMatch> {
    INJECTION
        .iter()
        .filter_map(|(regex, message)| {
            let (offset, phrase) = first_match(normalized, regex.as_ref()?)?;
            Some(PhraseMatch {
                offset,
                phrase,
                message,
            })
        })
        .min_by_key(|m| m.offset)
}

/// A shell decode-and-run idiom (`base64 -d`, `echo … | sh`, `curl … | sh`).
pub(crate) fn shell_decode(normalized: &Normalized) -> Option<PhraseMatch> {
    let (offset, phrase) = first_match(normalized, SHELL_DECODE.as_ref()?)?;
    Some(PhraseMatch {
        offset,
        phrase,
        message: "a shell decode-and-run idiom",
    })
}

/// A mention of ROT13.
pub(crate) fn rot13(normalized: &Normalized) -> Option<PhraseMatch> {
    let (offset, phrase) = first_match(normalized, ROT13.as_ref()?)?;
    Some(PhraseMatch {
        offset,
        phrase,
        message: "a ROT13 reference",
    })
}

/// An identifier split into words (`rot13Decode` → `rot13 decode`), for [`rot13`].
pub(crate) fn identifier_words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_uppercase() && !out.is_empty() {
            out.push(' ');
        }
        if c == '_' || c == '$' {
            out.push(' ');
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// Shortest base64 run Triggerfish flags (#20).
const BASE64_MIN: usize = 40;
/// Shortest hex run flagged: longer than a SHA-512 digest (128), so hashes and keys pass.
const HEX_MIN: usize = 160;

/// A long base64 or hex run in a string's value, described; `None` if there is none.
///
/// Base64 needs upper case, lower case and a digit (so words and hex digests are not it) and
/// few slashes (so URL paths are not it).
pub(crate) fn encoded_run(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let is_b64 = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
        if !is_b64(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_b64(bytes[i]) {
            i += 1;
        }
        let run = &bytes[start..i];
        let hex = run.iter().all(u8::is_ascii_hexdigit);
        if hex && run.len() >= HEX_MIN {
            return Some(format!("a {}-character hex string", run.len()));
        }
        let upper = run.iter().any(u8::is_ascii_uppercase);
        let lower = run.iter().any(u8::is_ascii_lowercase);
        let digit = run.iter().any(u8::is_ascii_digit);
        let slashes = run.iter().filter(|&&b| b == b'/').count();
        // An alphabet (every character once, as in "ABC…xyz0123456789+/") is not data.
        let mut seen = [false; 128];
        let alphabet = run
            .iter()
            .all(|&b| !std::mem::replace(&mut seen[usize::from(b & 0x7F)], true));
        if run.len() >= BASE64_MIN
            && upper
            && lower
            && digit
            && slashes * 20 <= run.len()
            && !alphabet
        {
            return Some(format!("a {}-character base64 string", run.len()));
        }
    }
    None
}

/// How many escapes in a literal's source text spell a letter or digit (`\x65`, `\u0076`,
/// `\u{61}`): characters with no reason to be escaped except to hide a word from a reader.
pub(crate) fn escaped_alphanumerics(raw: &str) -> usize {
    let bytes = raw.as_bytes();
    let mut count = 0;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let (code, len) = match bytes[i + 1] {
            b'x' => (hex_value(raw.get(i + 2..i + 4)), 4),
            b'u' if bytes.get(i + 2) == Some(&b'{') => {
                let close = raw[i..].find('}').map(|c| i + c);
                match close {
                    Some(close) => (hex_value(raw.get(i + 3..close)), close + 1 - i),
                    None => (None, 2),
                }
            }
            b'u' => (hex_value(raw.get(i + 2..i + 6)), 6),
            _ => (None, 2),
        };
        if code
            .and_then(char::from_u32)
            .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            count += 1;
        }
        i += len.max(2);
    }
    count
}

fn hex_value(digits: Option<&str>) -> Option<u32> {
    let digits = digits?;
    if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// A base64 constant (standard alphabet, padding optional, ASCII whitespace ignored, as `atob`
/// reads it) as the text it encodes: UTF-8, with any invalid sequence shown as U+FFFD, so
/// that what it hides reads as written. `None` if it is not valid base64.
pub(crate) fn decode_base64(text: &str) -> Option<String> {
    use base64::Engine as _;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const ATOB: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::RequireNone)
            .with_decode_allow_trailing_bits(true),
    );
    let body: String = text
        .trim_end_matches(|c: char| c == '=' || c.is_ascii_whitespace())
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let bytes = ATOB.decode(body).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// `text` cut to `max` characters, with `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// `text` with control and hidden characters written as `\u{…}` (and tab, newline and
/// carriage return as `\t`, `\n`, `\r`), so that a snippet prints as what it is.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || hidden_name(c).is_some() => {
                out.push_str(&format!("\\u{{{:04x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// Longest snippet, in characters.
const SNIPPET_CHARS: usize = 80;

/// The source from `start` to `end` (at most its first line and [`SNIPPET_CHARS`]), escaped.
pub(crate) fn snippet(source: &str, start: usize, end: usize) -> String {
    let start = floor_char_boundary(source, start.min(source.len()));
    let end = floor_char_boundary(source, end.clamp(start, source.len()));
    let text = &source[start..end];
    let first_line = text.split('\n').next().unwrap_or("");
    let cut = first_line.len() < text.len();
    let mut shown = truncate(first_line, SNIPPET_CHARS);
    if cut && !shown.ends_with('…') {
        shown.push('…');
    }
    escape(&shown)
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
pub(crate) fn all_patterns_compile() -> bool {
    INJECTION.iter().all(|(r, _)| r.is_some()) && SHELL_DECODE.is_some() && ROT13.is_some()
}
