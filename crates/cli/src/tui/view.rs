//! Drawing: the conversation, the input line, the status line and, over them, the approval or
//! confirmation modal. It reads the [`App`] and never changes it. Every text that came from a
//! model, a tool, a plugin or a file is sanitised before it reaches a cell, so nothing can act
//! on the terminal.

use bosun_core::ApprovalAnswer;
use bosun_host::approval::{AnswerReach, sanitize_for_terminal};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::app::App;
use super::transcript::{Entry, ToolEntry, ToolState};

/// Widest a modal gets.
const MODAL_WIDTH: u16 = 76;
/// Characters of the session id on the status line (a UUIDv7's first 48 bits: unique enough to
/// resume with, as a prefix).
const SESSION_PREFIX: usize = 13;

/// Draws the whole screen.
pub(crate) fn draw(app: &App, frame: &mut Frame) {
    // The input grows with its lines, up to a third of the screen.
    let (lines, _, _) = app.input.lines();
    let most = (frame.area().height / 3).max(1);
    let rows = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .clamp(1, most);
    let [body, input, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(rows + 1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    conversation(app, frame, body);
    input_line(app, frame, input);
    status_line(app, frame, status);
    if app.approvals.is_empty()
        && app.confirm.is_none()
        && let Some(popup) = &app.mentions.popup
    {
        mention_popup(popup, frame, body);
    }
    if let Some(asked) = app.approvals.front() {
        let lines = approval_lines(app, asked, body);
        modal(frame, body, " Approval ", lines);
    } else if let Some(confirm) = &app.confirm {
        let width = modal_width(body) as usize;
        let rows: Vec<String> = confirm
            .question
            .lines()
            .flat_map(|line| wrap(line, width, "", "  "))
            .collect();
        // A question taller than the box (a long review) scrolls inside it, and says where it
        // is; until its last row has been on screen, `y` is not offered.
        let inner = usize::from(body.height.saturating_sub(2));
        let keys = 2;
        let mut lines: Vec<Line> = Vec::new();
        if rows.len() + keys <= inner {
            confirm.max_scroll.set(0);
            confirm.end_unseen.set(false);
            lines.extend(rows.into_iter().map(Line::raw));
        } else {
            let shown = inner.saturating_sub(keys + 1).max(1);
            let most = rows.len().saturating_sub(shown);
            let at = confirm.scroll.min(most);
            confirm.max_scroll.set(most);
            confirm.end_unseen.set(at < most);
            let total = rows.len();
            lines.extend(rows.into_iter().skip(at).take(shown).map(Line::raw));
            lines.push(Line::raw(format!(
                "↑↓ PgUp PgDn Home End: rows {}–{} of {total}",
                at + 1,
                (at + shown).min(total)
            )));
        }
        lines.push(Line::raw(""));
        if confirm.end_unseen.get() {
            lines.push(Line::from(vec![
                Span::raw("scroll to the end to answer ("),
                key_span("↓"),
                Span::raw(" "),
                key_span("PgDn"),
                Span::raw(" "),
                key_span("End"),
                Span::raw(")   "),
                key_span("n"),
                Span::raw(" no (Esc)"),
            ]));
        } else {
            lines.push(Line::from(vec![
                key_span("y"),
                Span::raw(" yes   "),
                key_span("n"),
                Span::raw(" no (Esc)"),
            ]));
        }
        modal(frame, body, " Confirm ", lines);
    }
}

/// Rows of the `@path` list.
const MENTION_ROWS: usize = 8;

/// The `@path` list, at the bottom of `area` just over the input: the window of matches around
/// the chosen one, which is highlighted.
fn mention_popup(popup: &super::mention::Popup, frame: &mut Frame, area: Rect) {
    let rows = popup.matches.len().min(MENTION_ROWS);
    let first = (popup.selected + 1).saturating_sub(rows);
    let width = usize::from(area.width.saturating_sub(4));
    let lines: Vec<Line> = popup
        .matches
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .map(|(i, path)| {
            let mut shown = sanitize_for_terminal(path);
            cut_to(&mut shown, width);
            if i == popup.selected {
                Line::styled(shown, Style::new().fg(Color::Black).bg(Color::Cyan))
            } else {
                Line::raw(shown)
            }
        })
        .collect();
    let height = u16::try_from(rows + 2).unwrap_or(u16::MAX).min(area.height);
    let rect = Rect {
        x: area.x,
        y: area.y + area.height.saturating_sub(height),
        width: area.width,
        height,
    };
    frame.render_widget(Clear, rect);
    let title = format!(
        " @{} · {} match{} · ↑↓ Enter Esc ",
        sanitize_for_terminal(&popup.query),
        popup.matches.len(),
        if popup.matches.len() == 1 { "" } else { "es" }
    );
    let block = Block::bordered()
        .title(title)
        .border_style(Style::new().fg(Color::DarkGray));
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

/// The approval modal's lines, fitted to `area`: the keys, the reason and what the call uses
/// always stay; a long input gets the rows left and scrolls (Up/Down) inside the box. On a small
/// screen the box tightens first (shorter fields, no blank lines, no hints).
fn approval_lines(app: &App, asked: &super::app::Asked, area: Rect) -> Vec<Line<'static>> {
    let inner = usize::from(area.height.saturating_sub(2));
    let roomy = approval_layout(app, asked, area, false);
    if roomy.fixed + 2 <= inner {
        return roomy.fit(asked.scroll, inner);
    }
    approval_layout(app, asked, area, true).fit(asked.scroll, inner)
}

/// The parts of the approval box before the input is fitted in.
struct ApprovalLayout {
    head: Vec<Line<'static>>,
    tool: Vec<String>,
    /// The input's rows and the change's, each with its colour (a diff's added lines green,
    /// removed red).
    input: Vec<(String, Style)>,
    rest: Vec<String>,
    tail: Vec<Line<'static>>,
    /// Rows taken by everything but the input.
    fixed: usize,
}

impl ApprovalLayout {
    fn fit(self, scroll: usize, inner: usize) -> Vec<Line<'static>> {
        let room = inner.saturating_sub(self.fixed).max(1);
        let input: Vec<(String, Style)> = if self.input.len() <= room {
            self.input
        } else {
            // One row says where in the input the box is, when there is a row for it.
            let shown = if room > 1 { room - 1 } else { 1 };
            let at = scroll.min(self.input.len() - shown);
            let mut rows: Vec<(String, Style)> = self.input[at..at + shown].to_vec();
            if room > 1 {
                rows.push((
                    format!(
                        "       ↑↓ rows {}–{} of {}",
                        at + 1,
                        at + shown,
                        self.input.len()
                    ),
                    Style::new(),
                ));
            }
            rows
        };
        let mut lines = self.head;
        lines.extend(self.tool.into_iter().map(Line::raw));
        lines.extend(
            input
                .into_iter()
                .map(|(row, style)| Line::styled(row, style)),
        );
        lines.extend(self.rest.into_iter().map(Line::raw));
        lines.extend(self.tail);
        // On a screen too small for even this, the keys are what must stay: drop from the top.
        if lines.len() > inner && inner > 0 {
            let drop = lines.len() - inner;
            lines.drain(..drop);
        }
        lines
    }
}

fn approval_layout(
    app: &App,
    asked: &super::app::Asked,
    area: Rect,
    tight: bool,
) -> ApprovalLayout {
    let request = &asked.pending.request;
    let width = modal_width(area) as usize;
    let field = |label: &str, value: &str, most: usize| -> Vec<String> {
        // Each line of the value wrapped on its own: a reason's frame keeps its lines.
        let mut rows: Vec<String> = value
            .split('\n')
            .enumerate()
            .flat_map(|(i, line)| {
                let lead = if i == 0 {
                    format!("{label:<7}")
                } else {
                    "       ".to_owned()
                };
                wrap(line, width, &lead, "       ")
            })
            .collect();
        if rows.len() > most {
            rows.truncate(most);
            if let Some(last) = rows.last_mut() {
                cut_to(last, width.saturating_sub(1));
                last.push('…');
            }
        }
        rows
    };
    let tool = field(
        "tool",
        &format!(
            "{} ({})",
            sanitize_for_terminal(&request.tool),
            sanitize_for_terminal(&request.action)
        ),
        if tight { 1 } else { 2 },
    );
    let mut rest = Vec::new();
    if let Some(uses) = request.uses() {
        rest.extend(field("uses", &uses, if tight { 1 } else { 3 }));
    }
    // A reason with a plugin's framed words gets the rows to show them.
    let framed = request.reason.contains('\n');
    rest.extend(field(
        "why",
        &format!(
            "policy says {}: {}",
            request.decision,
            sanitize_for_terminal(&request.reason)
        ),
        match (tight, framed) {
            (true, false) => 2,
            (false, false) => 3,
            (true, true) => 5,
            (false, true) => 8,
        },
    ));
    let mut input: Vec<(String, Style)> = wrap(
        &sanitize_for_terminal(&request.summary),
        width,
        "input  ",
        "       ",
    )
    .into_iter()
    .map(|row| (row, Style::new()))
    .collect();
    // The change the call would make, before it is made, coloured as a diff: it scrolls with
    // the input.
    if let Some(preview) = &request.preview {
        for (i, line) in preview.lines().enumerate() {
            let lead = if i == 0 { "change " } else { "       " };
            let style = detail_style(super::results::diff_kind(line));
            input.extend(
                wrap(&sanitize_for_terminal(line), width, lead, "        ")
                    .into_iter()
                    .map(|row| (row, style)),
            );
        }
    }
    // What the call would install, as the trust review: read before deciding.
    if let Some(review) = &request.review {
        for (i, line) in review.lines().enumerate() {
            let lead = if i == 0 { "review " } else { "       " };
            input.extend(
                wrap(&sanitize_for_terminal(line), width, lead, "        ")
                    .into_iter()
                    .map(|row| (row, Style::new())),
            );
        }
    }
    let mut tail: Vec<Line<'static>> = Vec::new();
    if !tight {
        tail.push(Line::raw(""));
    }
    if let Some(rules) = &asked.remember {
        tail.push(Line::raw(
            "Always allow in this workspace: these rules go to your approvals file",
        ));
        for rule in rules {
            for line in wrap(rule, width, "  ", "    ") {
                tail.push(Line::raw(line));
            }
        }
        tail.push(Line::from(vec![
            key_span("y"),
            Span::raw(" write them and allow   "),
            key_span("n"),
            Span::raw(" back (Esc)"),
        ]));
    } else if let Some(reason) = &asked.feedback {
        tail.push(Line::raw(
            "Why deny? The model is told (Enter denies with it, Esc goes back):",
        ));
        for line in wrap(
            &format!("{}▏", sanitize_for_terminal(reason)),
            width,
            "> ",
            "  ",
        ) {
            tail.push(Line::raw(line));
        }
    } else {
        let reach = request.reach;
        if let Some(why) = reach.why_narrower() {
            // Fewer keys than usual: say why, so the person does not look for the others.
            for line in wrap(why, width, "", "") {
                tail.push(Line::raw(line));
            }
        } else if !tight && !request.capabilities.is_empty() {
            // What "for this session" will cover, said before the key is pressed.
            for line in wrap(
                "[s] covers exactly these capabilities; any other asks again",
                width,
                "",
                "",
            ) {
                tail.push(Line::raw(line));
            }
        }
        let wide = width >= 58;
        let keys: Vec<(&str, &str)> = match reach {
            AnswerReach::Once => vec![("y", " yes  "), ("n", " no (Esc)")],
            AnswerReach::Session if wide => vec![
                ("o", " once  "),
                ("s", " this session  "),
                ("d", " deny (Esc)"),
            ],
            AnswerReach::Session => vec![("o", " once "), ("s", " session "), ("d", " deny")],
            AnswerReach::Workspace if wide => vec![
                ("o", " once  "),
                ("s", " this session  "),
                ("w", " always here  "),
                ("d", " deny (Esc)"),
            ],
            AnswerReach::Workspace => vec![
                ("o", " once "),
                ("s", " session "),
                ("w", " always "),
                ("d", " deny"),
            ],
        };
        let spans: Vec<Span<'static>> = keys
            .iter()
            .flat_map(|(k, what)| [key_span(k), Span::raw(*what)])
            .collect();
        if width >= 40 {
            tail.push(Line::from(spans));
            if !tight {
                tail.push(Line::from(vec![
                    key_span("f"),
                    Span::raw(" deny and tell the model why"),
                ]));
            }
        } else {
            // Narrower still: two keys per line.
            for pair in spans.chunks(4) {
                tail.push(Line::from(pair.to_vec()));
            }
        }
    }
    if app.approvals.len() > 1 {
        tail.push(Line::raw(format!(
            "{} more waiting",
            app.approvals.len() - 1
        )));
    }
    let mut head = vec![Line::styled(
        format!(
            "Bosun wants to run {}",
            sanitize_for_terminal(&request.tool)
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    if !tight {
        head.push(Line::raw(""));
    }
    let fixed = head.len() + tool.len() + rest.len() + tail.len();
    ApprovalLayout {
        head,
        tool,
        input,
        rest,
        tail,
        fixed,
    }
}

/// Cuts `text` to at most `width` display columns.
fn cut_to(text: &mut String, width: usize) {
    let mut used = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        used += w;
        end = i + c.len_utf8();
    }
    text.truncate(end);
}

fn key_span(key: &str) -> Span<'static> {
    Span::styled(
        format!("[{key}]"),
        Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
    )
}

fn modal_width(area: Rect) -> u16 {
    // Inside the borders and a column of padding on each side.
    area.width
        .saturating_sub(4)
        .min(MODAL_WIDTH)
        .saturating_sub(4)
}

/// A bordered box in the middle of `area`, over what is there.
fn modal(frame: &mut Frame, area: Rect, title: &str, lines: Vec<Line>) {
    let width = area.width.saturating_sub(4).min(MODAL_WIDTH);
    let wanted = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let height = wanted.min(area.height);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .title(title)
        .border_style(Style::new().fg(Color::Yellow))
        .padding(ratatui::widgets::Padding::horizontal(1));
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

/// The conversation's lines at `width`, laid out again only where an entry changed
/// ([`super::rendered`]), handed to `read`.
fn with_conversation<R>(
    app: &App,
    width: usize,
    read: impl FnOnce(&super::rendered::Lines<'_>) -> R,
) -> R {
    let layout = super::rendered::Layout {
        width,
        expanded: app.expanded,
        guard: app.url_guard(),
    };
    let lay_out = |entry: &Entry| {
        let mut lines = Vec::new();
        entry_lines(
            entry,
            width,
            layout.guard.as_deref(),
            layout.expanded,
            &mut lines,
        );
        lines
    };
    app.rendered
        .with_lines(&app.entries, &layout, lay_out, read)
}

/// The conversation as plain text, for the terminal's own scrollback after leaving.
pub(crate) fn transcript_text(app: &App, width: usize) -> Vec<String> {
    with_conversation(app, width.max(10), |lines| lines.range(0, lines.len()))
        .iter()
        .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

/// The conversation's rows that fit `area`, from the bottom up `app.scroll` lines: only those
/// are copied and drawn, however long the conversation.
fn conversation(app: &App, frame: &mut Frame, area: Rect) {
    let width = usize::from(area.width.max(10));
    let height = usize::from(area.height);
    let (mut shown, scroll) = with_conversation(app, width, |lines| {
        let total = lines.len();
        let most = total.saturating_sub(height);
        app.max_scroll.set(most);
        let scroll = app.scroll.min(most);
        let end = total - scroll;
        let start = end.saturating_sub(height);
        (lines.range(start, end), scroll)
    });
    if scroll > 0
        && let Some(last) = shown.last_mut()
    {
        // Scrolled up: say how much is below and how to get back.
        *last = Line::styled(
            format!("── ↓ {scroll} more lines below · End returns ──"),
            Style::new().fg(Color::DarkGray),
        );
    }
    frame.render_widget(Paragraph::new(shown), area);
}

fn entry_lines(
    entry: &Entry,
    width: usize,
    guard: Option<&str>,
    expanded: bool,
    out: &mut Vec<Line<'static>>,
) {
    let styled = |out: &mut Vec<Line<'static>>, text: &str, first: &str, rest: &str, style| {
        for line in text.split('\n') {
            for wrapped in wrap(&sanitize_for_terminal(line), width, first, rest) {
                out.push(Line::styled(wrapped, style));
            }
        }
    };
    match entry {
        Entry::User(text) => styled(
            out,
            text,
            "› ",
            "  ",
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Entry::Command(text) => styled(out, text, "› ", "  ", Style::new().fg(Color::Magenta)),
        Entry::Assistant(text) => out.extend(super::markdown::render(text, width, guard)),
        Entry::Reasoning(text) => reasoning_lines(text, width, guard, expanded, out),
        Entry::Tool(tool) => tool_lines(tool, width, expanded, out),
        Entry::Notice(text) => styled(out, text, "", "", Style::new().fg(Color::Cyan)),
        Entry::Warning(text) => styled(
            out,
            &format!("warning: {text}"),
            "",
            "  ",
            Style::new().fg(Color::Yellow),
        ),
        Entry::Error(text) => styled(out, text, "✗ ", "  ", Style::new().fg(Color::Red)),
    }
}

/// Detail lines shown under a result until Ctrl-O expands them.
const COLLAPSED_DETAIL: usize = 6;

/// Lines of reasoning shown until Ctrl-O expands them.
const COLLAPSED_REASONING: usize = 2;

/// The model's reasoning, dim and italic under `✻ `, its first lines until expanded.
fn reasoning_lines(
    text: &str,
    width: usize,
    guard: Option<&str>,
    expanded: bool,
    out: &mut Vec<Line<'static>>,
) {
    let style = Style::new()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC);
    let text = super::markdown::guarded(text, guard);
    let mut lines = Vec::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let first = if i == 0 { "✻ " } else { "  " };
        lines.extend(wrap(&sanitize_for_terminal(line), width, first, "  "));
    }
    let shown = if expanded {
        lines.len()
    } else {
        lines.len().min(COLLAPSED_REASONING)
    };
    let hidden = lines.len() - shown;
    out.extend(
        lines
            .into_iter()
            .take(shown)
            .map(|line| Line::styled(line, style)),
    );
    if hidden > 0 {
        out.push(Line::styled(
            format!("  … {hidden} more lines of reasoning (Ctrl-O shows all)"),
            Style::new().fg(Color::DarkGray),
        ));
    }
}

fn tool_lines(tool: &ToolEntry, width: usize, expanded: bool, out: &mut Vec<Line<'static>>) {
    let mut push = |text: String, style: Style| {
        for line in wrap(&text, width, "  ", "      ") {
            out.push(Line::styled(line, style));
        }
    };
    let dim = Style::new().fg(Color::DarkGray);
    // The call as a sentence, marked with where it is; what the result adds goes after it.
    let (mark, style) = match &tool.state {
        ToolState::Done(_) => ("✓", Style::new().fg(Color::Green)),
        ToolState::Failed { .. } => ("✗", Style::new().fg(Color::Red)),
        _ => ("→", Style::new().fg(Color::Yellow)),
    };
    let outcome = tool
        .outcome
        .as_deref()
        .map(|o| format!(" {o}"))
        .unwrap_or_default();
    push(format!("{mark} {}{outcome}", tool.input), style);
    if expanded {
        for row in &tool.json {
            push(format!("  {row}"), dim);
        }
    }
    if let Some(decision) = &tool.decision {
        push(format!("  policy: {decision}"), dim);
    }
    if let Some(answer) = tool.answer {
        push(
            format!(
                "  you: {}",
                match answer {
                    ApprovalAnswer::AllowOnce => "allowed once",
                    ApprovalAnswer::AllowSession => "allowed for this session",
                    ApprovalAnswer::AllowAlways => "allowed always in this workspace",
                    ApprovalAnswer::Deny => "denied",
                    ApprovalAnswer::Unavailable => "nobody could answer",
                }
            ),
            dim,
        );
    }
    match &tool.state {
        ToolState::Proposed | ToolState::Earlier => {}
        ToolState::Asking => push("  waiting for your answer".to_owned(), dim),
        ToolState::Running => {
            push("  running…".to_owned(), dim);
            detail_lines(&tool.detail, width, expanded, true, out);
        }
        ToolState::Done(output) => {
            // The summary says what the headline does not (a command's exit, a plugin's
            // result); a read's or an edit's count is on the headline already.
            if tool.outcome.is_none() {
                push(format!("  ✓ {output}"), Style::new().fg(Color::Green));
            }
            // A plan is read whole: it is short (at most 50 steps) and the point of the call.
            let whole = expanded || tool.tool == bosun_host::builtin::update_plan::NAME;
            detail_lines(&tool.detail, width, whole, false, out);
        }
        ToolState::Failed { code, message } => {
            push(
                format!("  ✗ {code}: {message}"),
                Style::new().fg(Color::Red),
            );
            detail_lines(&tool.detail, width, expanded, false, out);
        }
    }
}

/// A result's lines (output, a diff, matches), the first few until Ctrl-O expands them; of a
/// running command's output, the newest few (`latest`).
fn detail_lines(
    detail: &[super::results::Detail],
    width: usize,
    expanded: bool,
    latest: bool,
    out: &mut Vec<Line<'static>>,
) {
    let shown = if expanded {
        detail.len()
    } else {
        detail.len().min(COLLAPSED_DETAIL)
    };
    let hidden = detail.len() - shown;
    let rows = if latest {
        &detail[hidden..]
    } else {
        &detail[..shown]
    };
    let more = |out: &mut Vec<Line<'static>>, place: &str| {
        out.push(Line::styled(
            format!("      … {hidden} {place} lines (Ctrl-O shows all)"),
            Style::new().fg(Color::DarkGray),
        ));
    };
    if latest && hidden > 0 {
        more(out, "earlier");
    }
    for line in rows {
        for wrapped in wrap(&line.text, width, "      ", "      ") {
            out.push(Line::styled(wrapped, detail_style(line.kind)));
        }
    }
    if !latest && hidden > 0 {
        more(out, "more");
    }
}

fn detail_style(kind: super::results::Kind) -> Style {
    use super::results::Kind;
    match kind {
        Kind::Plain => Style::new(),
        Kind::Stderr => Style::new().fg(Color::Yellow),
        Kind::Added => Style::new().fg(Color::Green),
        Kind::Removed => Style::new().fg(Color::Red),
        Kind::Hunk => Style::new().fg(Color::Cyan),
    }
}

fn input_line(app: &App, frame: &mut Frame, area: Rect) {
    let state = match &app.running {
        None if app.leave_armed.is_some() => " press Ctrl-C again to leave ".to_owned(),
        None => " ready ".to_owned(),
        Some(run) if run.cancelling => " cancelling: Ctrl-C again leaves now ".to_owned(),
        Some(_) if !app.approvals.is_empty() => " waiting for your answer ".to_owned(),
        Some(_) => " running: Ctrl-C cancels ".to_owned(),
    };
    let block = Block::new()
        .borders(Borders::TOP)
        .title(state)
        .border_style(Style::new().fg(Color::DarkGray));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let prompt = "› ";
    let room = usize::from(inner.width).saturating_sub(prompt.width() + 1);
    let (lines, row, _) = app.input.lines();
    let column = app.input.cursor_column();
    // The rows shown: the last ones up to the cursor's line, as many as fit.
    let height = usize::from(inner.height).max(1);
    let first = (row + 1).saturating_sub(height);
    let mut shown_lines = Vec::new();
    let mut cursor = None;
    for (i, line) in lines.iter().enumerate().skip(first).take(height) {
        let text = sanitize_for_terminal(line);
        // Keep the cursor on screen: on its line, drop whole characters from the left until it
        // fits; other lines show their start.
        let mut skipped = 0;
        let mut visible = text.as_str();
        if i == row {
            while column - skipped > room {
                let Some(c) = visible.chars().next() else {
                    break;
                };
                skipped += c.width().unwrap_or(0);
                visible = &visible[c.len_utf8()..];
            }
            cursor = Some((i - first, column - skipped));
        }
        let lead = if i == 0 { prompt } else { "  " };
        shown_lines.push(Line::from(vec![
            Span::styled(lead, Style::new().fg(Color::Cyan)),
            Span::raw(visible.to_owned()),
        ]));
    }
    frame.render_widget(Paragraph::new(shown_lines), inner);
    if app.approvals.is_empty()
        && app.confirm.is_none()
        && let Some((y, x)) = cursor
    {
        let x = inner.x + u16::try_from(prompt.width() + x).unwrap_or(0);
        let y = inner.y + u16::try_from(y).unwrap_or(0);
        frame.set_cursor_position(Position::new(x.min(inner.right()), y));
    }
}

/// `12.3k` for 12 345.
fn thousands(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        format!("{:.1}k", n as f64 / 1000.0)
    }
}

fn status_line(app: &App, frame: &mut Frame, area: Rect) {
    // Segments by importance: what fits is shown, in this order, the least important dropped
    // first on a narrow screen.
    let mut segments: Vec<(u8, String)> = Vec::new();
    if let Some(run) = &app.running {
        // A spinner that turns with time, what the run waits on, and for how long.
        const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
        let (what, since) = &run.doing;
        let elapsed = since.elapsed();
        let frame_at = (elapsed.as_millis() / 100) as usize % FRAMES.len();
        let now = std::time::Instant::now();
        match &run.retry {
            // The provider refused or failed: say so, and when the next attempt goes out.
            Some((reason, at)) if *at > now => segments.push((
                0,
                format!(
                    "{} retrying in {} s ({reason})",
                    FRAMES[frame_at],
                    at.saturating_duration_since(now).as_secs() + 1
                ),
            )),
            _ => segments.push((
                0,
                format!("{} {what} {}s", FRAMES[frame_at], elapsed.as_secs()),
            )),
        }
    }
    segments.push((1, sanitize_for_terminal(&app.model)));
    segments.push((5, app.workspace.clone()));
    // A mode picked with Shift-Tab matters as much as the model; the configured one less.
    let picked = app.permission != app.env.config.user.mode.into();
    let mode = if app.permission.is_plan() {
        "plan mode (reads only)".to_owned()
    } else {
        app.permission.to_string()
    };
    segments.push((if picked { 1 } else { 6 }, mode));
    segments.push((
        2,
        format!(
            "steps {}/{} · tools {}/{}",
            app.steps, app.budgets.max_steps, app.tool_calls, app.budgets.max_tool_calls
        ),
    ));
    if let Some(left) = app
        .context_used
        .and_then(|used| app.context.percent_left(used))
    {
        segments.push((2, format!("context {left}% left")));
    }
    if app.tokens != (0, 0) {
        segments.push((
            4,
            format!(
                "tokens {} in {} out",
                thousands(app.tokens.0),
                thousands(app.tokens.1)
            ),
        ));
    }
    if !app.children.is_empty() {
        segments.push((3, super::app::children_summary(&app.children)));
    }
    let width = usize::from(area.width);
    let join = |segments: &[(u8, String)]| -> String {
        let texts: Vec<&str> = segments.iter().map(|(_, t)| t.as_str()).collect();
        format!(" {}", texts.join(" · "))
    };
    while segments.len() > 1 && join(&segments).width() + 1 > width {
        let Some(least) = segments
            .iter()
            .enumerate()
            .max_by_key(|(_, (rank, _))| *rank)
            .map(|(i, _)| i)
        else {
            break;
        };
        segments.remove(least);
    }
    let left = join(&segments);
    let id: String = app.session_id.chars().take(SESSION_PREFIX).collect();
    let width = usize::from(area.width);
    let right = [format!("session {id}"), id]
        .into_iter()
        .find(|right| left.width() + 1 + right.width() <= width)
        .unwrap_or_default();
    let gap = width.saturating_sub(left.width() + right.width());
    let style = Style::new().add_modifier(Modifier::REVERSED);
    frame.render_widget(
        Paragraph::new(Line::styled(
            format!("{left}{}{right}", " ".repeat(gap)),
            style,
        )),
        area,
    );
}

pub(super) use super::text::wrap;
