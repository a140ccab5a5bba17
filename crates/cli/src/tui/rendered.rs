//! The conversation's lines as last laid out, kept per entry so a frame lays out only the
//! entries that changed: a key typed at the prompt under a 10,000-line transcript costs the
//! frame of what is visible, not a new layout of everything above it. It lays nothing out
//! itself (the view passes the layout) and never decides what is shown.
//!
//! An entry's lines are reused while the entry is equal to the copy kept with them and the
//! width, Ctrl-O's expansion and the URL guard are those they were laid out for; any change
//! to any of them — a streamed word, a call's result, a rewind that replaced the entries — lays
//! that entry out again. Comparing is a `memcmp` of the entry's text, far cheaper than wrapping
//! and parsing Markdown, and needs no bookkeeping where entries change.

use std::cell::RefCell;

use ratatui::text::Line;

use super::transcript::Entry;

/// What every entry's lines depend on besides the entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Layout {
    pub width: usize,
    pub expanded: bool,
    pub guard: Option<String>,
}

/// One entry's lines and the entry they were laid out from.
struct Kept {
    entry: Entry,
    /// A blank line before the entry (a new task or command after anything).
    gap: bool,
    lines: Vec<Line<'static>>,
}

/// The lines of each entry, as last laid out.
#[derive(Default)]
pub(crate) struct Rendered {
    kept: RefCell<(Layout, Vec<Kept>)>,
}

impl Rendered {
    /// Brings the kept lines up to `entries` under `layout`, laying out with `lay_out` only the
    /// entries that changed, then hands the whole conversation's lines to `read` as the
    /// entries' line slices in order (a gap is an empty line of its own).
    pub(crate) fn with_lines<R>(
        &self,
        entries: &[Entry],
        layout: &Layout,
        lay_out: impl Fn(&Entry) -> Vec<Line<'static>>,
        read: impl FnOnce(&Lines<'_>) -> R,
    ) -> R {
        let mut kept = self.kept.borrow_mut();
        let (laid_for, items) = &mut *kept;
        if laid_for != layout {
            *laid_for = layout.clone();
            items.clear();
        }
        items.truncate(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let gap = i > 0 && matches!(entry, Entry::User(_) | Entry::Command(_));
            match items.get_mut(i) {
                Some(item) if item.entry == *entry => item.gap = gap,
                Some(item) => {
                    item.entry.clone_from(entry);
                    item.gap = gap;
                    item.lines = lay_out(entry);
                }
                None => items.push(Kept {
                    entry: entry.clone(),
                    gap,
                    lines: lay_out(entry),
                }),
            }
        }
        read(&Lines { items })
    }
}

/// The conversation's lines, read without copying them.
pub(crate) struct Lines<'a> {
    items: &'a [Kept],
}

impl Lines<'_> {
    /// How many lines the conversation has.
    pub(crate) fn len(&self) -> usize {
        self.items
            .iter()
            .map(|item| item.lines.len() + usize::from(item.gap))
            .sum()
    }

    /// The lines `start..end`, copied (what a frame shows).
    pub(crate) fn range(&self, start: usize, end: usize) -> Vec<Line<'static>> {
        let mut out = Vec::with_capacity(end.saturating_sub(start));
        let mut at = 0;
        for item in self.items {
            if at >= end {
                break;
            }
            let size = item.lines.len() + usize::from(item.gap);
            if at + size <= start {
                at += size;
                continue;
            }
            if item.gap {
                if at >= start && at < end {
                    out.push(Line::raw(""));
                }
                at += 1;
            }
            let from = start.saturating_sub(at).min(item.lines.len());
            let to = end.saturating_sub(at).min(item.lines.len());
            out.extend(item.lines[from..to].iter().cloned());
            at += item.lines.len();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use ratatui::text::Line;

    use super::{Layout, Rendered};
    use crate::tui::transcript::Entry;

    fn lay_out(count: &Cell<usize>) -> impl Fn(&Entry) -> Vec<Line<'static>> + '_ {
        move |entry| {
            count.set(count.get() + 1);
            match entry {
                Entry::Notice(text) | Entry::User(text) => {
                    text.split('\n').map(|l| Line::raw(l.to_owned())).collect()
                }
                _ => Vec::new(),
            }
        }
    }

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn only_changed_entries_are_laid_out_again_and_ranges_cross_entries() {
        let rendered = Rendered::default();
        let count = Cell::new(0);
        let layout = Layout {
            width: 80,
            ..Layout::default()
        };
        let mut entries = vec![
            Entry::Notice("a\nb".into()),
            Entry::User("c".into()),
            Entry::Notice("d\ne\nf".into()),
        ];
        let all = rendered.with_lines(&entries, &layout, lay_out(&count), |lines| {
            assert_eq!(lines.len(), 7);
            text(&lines.range(0, 7))
        });
        assert_eq!(all, ["a", "b", "", "c", "d", "e", "f"]);
        assert_eq!(count.get(), 3);
        // Nothing changed: nothing is laid out again; a range inside one entry and across two.
        rendered.with_lines(&entries, &layout, lay_out(&count), |lines| {
            assert_eq!(text(&lines.range(5, 7)), ["e", "f"]);
            assert_eq!(text(&lines.range(1, 4)), ["b", "", "c"]);
            assert_eq!(text(&lines.range(2, 3)), [""]);
        });
        assert_eq!(count.get(), 3);
        // The last entry grows (streamed text): only it is laid out again.
        entries[2] = Entry::Notice("d\ne\nf\ng".into());
        rendered.with_lines(&entries, &layout, lay_out(&count), |lines| {
            assert_eq!(lines.len(), 8);
        });
        assert_eq!(count.get(), 4);
        // An entry in the middle changes: it alone.
        entries[0] = Entry::Notice("x".into());
        let all = rendered.with_lines(&entries, &layout, lay_out(&count), |lines| {
            text(&lines.range(0, lines.len()))
        });
        assert_eq!(all, ["x", "", "c", "d", "e", "f", "g"]);
        assert_eq!(count.get(), 5);
        // Entries replaced by fewer (a rewind): what is gone is dropped.
        entries.truncate(1);
        let all = rendered.with_lines(&entries, &layout, lay_out(&count), |lines| {
            text(&lines.range(0, lines.len()))
        });
        assert_eq!(all, ["x"]);
        assert_eq!(count.get(), 5);
        // Another width (a resize) or Ctrl-O lays out everything again.
        let wider = Layout {
            width: 100,
            ..layout.clone()
        };
        rendered.with_lines(&entries, &wider, lay_out(&count), |_| {});
        assert_eq!(count.get(), 6);
        let expanded = Layout {
            expanded: true,
            ..wider
        };
        rendered.with_lines(&entries, &expanded, lay_out(&count), |_| {});
        assert_eq!(count.get(), 7);
    }
}
