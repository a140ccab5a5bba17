//! The one way text reaches the terminal: everything this binary prints — a plugin's error, a
//! warning naming a directory, a manifest's path, a provider's error body — passes through
//! [`escape`], so no escape sequence, bidi control or invisible character from a model, plugin,
//! server, file or path acts on the screen. JSON output escapes the same characters as `\uXXXX`,
//! which leaves the value unchanged for a reader. Only the model's own final text, written to a
//! stdout that is not a terminal, is passed raw (see `run`).

use std::fmt::Write as _;

/// `text` with every hidden character shown as a `\u{…}` escape; newlines and tabs kept.
pub fn escape(text: &str) -> String {
    bosun_core::hidden::escape_for_terminal(text)
}

/// Serialised JSON with every hidden character (terminal controls included) written as a
/// `\uXXXX` escape. Such characters can only occur inside JSON strings, where the escape
/// means the same character, so the document is unchanged for any JSON reader.
pub fn json_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c != '\n' && c != '\t' && bosun_core::is_hidden_char(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes `text` to stdout. When the reader has gone (`bosun … | head -1`) the process ends
/// quietly with success: what it printed was all anyone wanted. Other write errors are
/// ignored, as `println!` would panic on them.
pub fn write_stdout(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// `println!` through [`escape`]; a closed reader ends the process quietly.
macro_rules! outln {
    () => { $crate::term::write_stdout("\n") };
    ($($arg:tt)*) => {
        $crate::term::write_stdout(&format!("{}\n", $crate::term::escape(&format!($($arg)*))))
    };
}

/// `print!` through [`escape`]; a closed reader ends the process quietly.
macro_rules! out {
    ($($arg:tt)*) => { $crate::term::write_stdout(&$crate::term::escape(&format!($($arg)*))) };
}

/// `eprintln!` through [`escape`].
macro_rules! errln {
    () => { eprintln!() };
    ($($arg:tt)*) => { eprintln!("{}", $crate::term::escape(&format!($($arg)*))) };
}

/// `eprint!` through [`escape`].
macro_rules! err {
    ($($arg:tt)*) => { eprint!("{}", $crate::term::escape(&format!($($arg)*))) };
}

pub(crate) use {err, errln, out, outln};

/// A colour for a word a person scans for (`ok`, `warn`, `BROKEN`).
#[derive(Debug, Clone, Copy)]
pub enum Paint {
    Green,
    Yellow,
    Red,
    Cyan,
    Dim,
}

/// Whether stdout gets colour: it is a terminal and `NO_COLOR` is unset or empty
/// (<https://no-color.org>).
pub fn colour_on_stdout() -> bool {
    use std::io::IsTerminal;
    colour_allowed(std::env::var_os("NO_COLOR").as_deref()) && std::io::stdout().is_terminal()
}

/// Whether stderr gets colour and a spinner: it is a terminal and `NO_COLOR` is unset or empty.
pub fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    colour_allowed(std::env::var_os("NO_COLOR").as_deref()) && std::io::stderr().is_terminal()
}

fn colour_allowed(no_color: Option<&std::ffi::OsStr>) -> bool {
    no_color.is_none_or(|v| v.is_empty())
}

/// `text` escaped as [`escape`] does, in `paint` when `colour` is on. The escape sequences are
/// Bosun's own, around text that can no longer carry any.
pub fn paint(text: &str, paint: Paint, colour: bool) -> String {
    let text = escape(text);
    if !colour {
        return text;
    }
    let code = match paint {
        Paint::Green => "32",
        Paint::Yellow => "33",
        Paint::Red => "1;31",
        Paint::Cyan => "36",
        Paint::Dim => "2",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_stays_the_same_value_without_controls() {
        let value = serde_json::json!({"a": "x\u{1b}[2J\u{9b}31m\u{202e}\u{e0041}\ty"});
        let text = json_safe(&serde_json::to_string_pretty(&value).unwrap());
        assert!(
            !text
                .chars()
                .any(|c| c == '\u{9b}' || c == '\u{202e}' || c == '\u{e0041}')
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }

    #[test]
    fn colour_only_when_allowed_and_never_from_the_text() {
        assert!(colour_allowed(None));
        assert!(colour_allowed(Some(std::ffi::OsStr::new(""))));
        assert!(!colour_allowed(Some(std::ffi::OsStr::new("1"))));
        assert_eq!(paint("ok", Paint::Green, false), "ok");
        assert_eq!(paint("ok", Paint::Green, true), "\u{1b}[32mok\u{1b}[0m");
        assert_eq!(
            paint("\u{1b}[2J", Paint::Red, true),
            "\u{1b}[1;31m\\u{1b}[2J\u{1b}[0m"
        );
    }

    #[test]
    fn escape_keeps_layout_and_defuses_sequences() {
        assert_eq!(escape("a\tb\nc"), "a\tb\nc");
        assert_eq!(escape("\u{1b}]8;;x\u{7}"), "\\u{1b}]8;;x\\u{7}");
        assert_eq!(escape("\u{9b}2J"), "\\u{9b}2J");
    }
}
