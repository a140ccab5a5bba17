//! Text laid out for the screen: word wrapping by display width.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Greedy word wrap to `width` display columns: `first` starts the first line, `rest` the
/// others; a word longer than a line is cut.
pub(super) fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_owned();
    let mut used = first.width();
    let mut fresh = true;
    for word in text.split(' ') {
        let word_width = word.width();
        let space = usize::from(!fresh);
        if !fresh && used + space + word_width > width {
            lines.push(std::mem::replace(&mut line, rest.to_owned()));
            used = rest.width();
            fresh = true;
        }
        if !fresh {
            line.push(' ');
            used += 1;
        }
        for c in word.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width && used > rest.width() {
                lines.push(std::mem::replace(&mut line, rest.to_owned()));
                used = rest.width();
            }
            line.push(c);
            used += w;
        }
        fresh = false;
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_long_words() {
        assert_eq!(
            wrap("one two three", 9, "› ", "  "),
            vec!["› one two", "  three"]
        );
        assert_eq!(wrap("abcdefgh", 5, "", "  "), vec!["abcde", "  fgh"]);
        assert_eq!(wrap("", 5, "› ", "  "), vec!["› "]);
    }
}
