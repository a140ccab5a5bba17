//! The input line: its text, a cursor, the editing keys of a shell's line editor and a history
//! of submitted lines. It never decides what a line means; the app does when Enter is pressed.

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

    /// Display columns before the cursor.
    pub(crate) fn cursor_column(&self) -> usize {
        self.text[..self.cursor]
            .iter()
            .map(|c| c.width().unwrap_or(0))
            .sum()
    }

    /// Applies one key.
    pub(crate) fn key(&mut self, key: KeyEvent) -> Edit {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
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
            KeyCode::Up => self.browse_back(),
            KeyCode::Down => self.browse_forward(),
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
