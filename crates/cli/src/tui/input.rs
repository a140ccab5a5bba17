//! The input: its text (one or more lines), a cursor, the editing keys of a shell's line editor
//! and a history of submitted inputs. Enter sends; Ctrl-J, Alt-Enter or Shift-Enter start a new
//! line; a paste is inserted whole, newlines included, and sends nothing. It never decides what
//! an input means; the app does when Enter is pressed.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use unicode_width::UnicodeWidthChar;

/// Most lines kept in the history.
const MAX_HISTORY: usize = 200;

/// An editable line.
#[derive(Debug, Default)]
pub(crate) struct LineEditor {
    text: Vec<char>,
    /// Position in `text`, in chars.
    cursor: usize,
    history: Vec<String>,
    /// Which history line is shown while browsing with Up and Down.
    browsing: Option<usize>,
}

/// What a key did to the line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Edit {
    /// The line changed, or the cursor moved.
    Edited,
    /// Enter: the line, taken out of the editor.
    Submit(String),
    /// Not an editing key.
    Ignored,
}

impl LineEditor {
    /// The text.
    pub(crate) fn text(&self) -> String {
        self.text.iter().collect()
    }

    /// Empties the line (Ctrl-C on a line being typed).
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    /// True when the line is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Display columns before the cursor on its line.
    pub(crate) fn cursor_column(&self) -> usize {
        let start = self.text[..self.cursor]
            .iter()
            .rposition(|c| *c == '\n')
            .map_or(0, |i| i + 1);
        self.text[start..self.cursor]
            .iter()
            .map(|c| c.width().unwrap_or(0))
            .sum()
    }

    /// Inserts `text` at the cursor as it is — a paste: line breaks become newlines of the input,
    /// tabs four spaces, other control characters are dropped.
    pub(crate) fn insert_str(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in text.chars() {
            match c {
                '\n' => self.insert('\n'),
                '\t' => (0..4).for_each(|_| self.insert(' ')),
                c if c.is_control() => {}
                c => self.insert(c),
            }
        }
        self.browsing = None;
    }

    fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += 1;
    }

    /// The lines of the input and, for the cursor, its line and the chars before it on that line.
    pub(crate) fn lines(&self) -> (Vec<String>, usize, usize) {
        let mut lines = vec![String::new()];
        let (mut row, mut col) = (0, 0);
        for (i, c) in self.text.iter().enumerate() {
            if i == self.cursor {
                row = lines.len() - 1;
                col = lines[row].chars().count();
            }
            if *c == '\n' {
                lines.push(String::new());
            } else if let Some(line) = lines.last_mut() {
                line.push(*c);
            }
        }
        if self.cursor >= self.text.len() {
            row = lines.len() - 1;
            col = lines[row].chars().count();
        }
        (lines, row, col)
    }

    /// The word before the cursor, if it starts with `@` (a path being typed).
    pub(crate) fn mention(&self) -> Option<String> {
        let start = self.text[..self.cursor]
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let word: String = self.text[start..self.cursor].iter().collect();
        word.strip_prefix('@').map(str::to_owned)
    }

    /// Replaces the `@…` word before the cursor with `@` and `path`.
    pub(crate) fn complete_mention(&mut self, path: &str) {
        let start = self.text[..self.cursor]
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let replacement: Vec<char> = format!("@{path}").chars().collect();
        let len = replacement.len();
        self.text.splice(start..self.cursor, replacement);
        self.cursor = start + len;
    }

    /// Replaces the history (read from disk at start).
    pub(crate) fn set_history(&mut self, history: Vec<String>) {
        let skip = history.len().saturating_sub(MAX_HISTORY);
        self.history = history.into_iter().skip(skip).collect();
        self.browsing = None;
    }

    /// Moves the cursor one line up (`-1`) or down (`1`) inside a multi-line input; false at
    /// the first or last line.
    fn move_line(&mut self, delta: isize) -> bool {
        let (lines, row, col) = self.lines();
        let Some(target) = row.checked_add_signed(delta).filter(|r| *r < lines.len()) else {
            return false;
        };
        let start: usize = lines[..target].iter().map(|l| l.chars().count() + 1).sum();
        self.cursor = start + col.min(lines[target].chars().count());
        true
    }

    /// Applies one key.
    pub(crate) fn key(&mut self, key: KeyEvent) -> Edit {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let newline = (key.code == KeyCode::Enter
            && key
                .modifiers
                .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT))
            || (ctrl && key.code == KeyCode::Char('j'));
        if newline {
            self.insert('\n');
            return Edit::Edited;
        }
        match key.code {
            KeyCode::Enter => {
                let line = self.text();
                self.text.clear();
                self.cursor = 0;
                self.browsing = None;
                if !line.trim().is_empty() && self.history.last() != Some(&line) {
                    self.history.push(line.clone());
                    if self.history.len() > MAX_HISTORY {
                        self.history.remove(0);
                    }
                }
                return Edit::Submit(line);
            }
            KeyCode::Char('a') if ctrl => self.cursor = 0,
            KeyCode::Char('e') if ctrl => self.cursor = self.text.len(),
            KeyCode::Char('u') if ctrl => {
                self.text.drain(..self.cursor);
                self.cursor = 0;
            }
            KeyCode::Char('k') if ctrl => self.text.truncate(self.cursor),
            KeyCode::Char('w') if ctrl => {
                let mut start = self.cursor;
                while start > 0 && self.text[start - 1] == ' ' {
                    start -= 1;
                }
                while start > 0 && self.text[start - 1] != ' ' {
                    start -= 1;
                }
                self.text.drain(start..self.cursor);
                self.cursor = start;
            }
            KeyCode::Char(_) if ctrl => return Edit::Ignored,
            KeyCode::Char(c) => {
                self.text.insert(self.cursor, c);
                self.cursor += 1;
            }
            KeyCode::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                self.text.remove(self.cursor);
            }
            KeyCode::Delete if self.cursor < self.text.len() => {
                self.text.remove(self.cursor);
            }
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(self.text.len()),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.text.len(),
            KeyCode::Up => {
                if !self.move_line(-1) {
                    self.browse_back();
                }
            }
            KeyCode::Down => {
                if !self.move_line(1) {
                    self.browse_forward();
                }
            }
            KeyCode::Backspace | KeyCode::Delete => {}
            _ => return Edit::Ignored,
        }
        Edit::Edited
    }

    fn browse_back(&mut self) {
        let at = match self.browsing {
            Some(0) => 0,
            Some(at) => at - 1,
            None if self.history.is_empty() => return,
            None => self.history.len() - 1,
        };
        self.show_history(Some(at));
    }

    fn browse_forward(&mut self) {
        match self.browsing {
            Some(at) if at + 1 < self.history.len() => self.show_history(Some(at + 1)),
            Some(_) => self.show_history(None),
            None => {}
        }
    }

    fn show_history(&mut self, at: Option<usize>) {
        self.browsing = at;
        self.text = at
            .and_then(|at| self.history.get(at))
            .map(|line| line.chars().collect())
            .unwrap_or_default();
        self.cursor = self.text.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(editor: &mut LineEditor, text: &str) {
        for c in text.chars() {
            editor.key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn editing_keys_move_and_cut() {
        let mut editor = LineEditor::default();
        typed(&mut editor, "read the file");
        editor.key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(editor.text(), "read the ");
        editor.key(key(KeyCode::Home));
        editor.key(key(KeyCode::Delete));
        typed(&mut editor, "R");
        assert_eq!(editor.text(), "Read the ");
        assert_eq!(editor.cursor_column(), 1);
        editor.key(key(KeyCode::End));
        editor.key(key(KeyCode::Backspace));
        assert_eq!(
            editor.key(key(KeyCode::Enter)),
            Edit::Submit("Read the".into())
        );
        assert!(editor.is_empty());
    }

    #[test]
    fn a_paste_keeps_its_lines_and_newline_keys_add_one() {
        let mut editor = LineEditor::default();
        editor.insert_str("first line\r\nsecond\tline\nthird\u{1b}[31m");
        assert_eq!(editor.text(), "first line\nsecond    line\nthird[31m");
        editor.key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL));
        editor.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut editor, "end");
        let (lines, row, col) = editor.lines();
        assert_eq!(lines.len(), 5);
        assert_eq!((row, col), (4, 3));
        // Up moves within the input before it reaches the history.
        editor.key(key(KeyCode::Up));
        editor.key(key(KeyCode::Up));
        assert_eq!(editor.lines().1, 2);
        assert_eq!(
            editor.key(key(KeyCode::Enter)),
            Edit::Submit("first line\nsecond    line\nthird[31m\n\nend".into())
        );
    }

    #[test]
    fn a_mention_is_the_at_word_before_the_cursor() {
        let mut editor = LineEditor::default();
        typed(&mut editor, "look at @src/li");
        assert_eq!(editor.mention().as_deref(), Some("src/li"));
        editor.complete_mention("src/lib.rs");
        assert_eq!(editor.text(), "look at @src/lib.rs");
        typed(&mut editor, " now");
        assert_eq!(editor.mention(), None);
    }

    #[test]
    fn history_comes_back_with_up_and_down() {
        let mut editor = LineEditor::default();
        typed(&mut editor, "first");
        editor.key(key(KeyCode::Enter));
        typed(&mut editor, "second");
        editor.key(key(KeyCode::Enter));
        editor.key(key(KeyCode::Up));
        assert_eq!(editor.text(), "second");
        editor.key(key(KeyCode::Up));
        editor.key(key(KeyCode::Up));
        assert_eq!(editor.text(), "first");
        editor.key(key(KeyCode::Down));
        assert_eq!(editor.text(), "second");
        editor.key(key(KeyCode::Down));
        assert_eq!(editor.text(), "");
    }
}
