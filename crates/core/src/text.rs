//! Small text helpers shared across the crates: positions for a person, hex for digests.

/// 1-based line and column (in characters) of byte `offset` in `text`. Works on bytes so that
/// an offset past the end or inside a character (a span from a different text) cannot panic.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let before = &bytes[..offset.min(bytes.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    // Count characters by their first bytes: every byte that is not a UTF-8 continuation.
    let column = 1 + before[line_start..]
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count();
    (line, column)
}

/// Lowercase hex of `bytes`: Bosun's one spelling of hashes and digests.
///
/// ```
/// assert_eq!(bosun_core::text::hex(&[0x00, 0xab, 0x7f]), "00ab7f");
/// ```
pub fn hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// A Markdown code fence for `text`: backticks, one more than the longest run of them inside
/// (at least three), so no line of `text` can close it. What Bosun frames this way — a command's
/// output, a plugin's words — cannot end its block and pass for what follows it.
///
/// ```
/// assert_eq!(bosun_core::text::fence_for("a ```` b"), "`````");
/// assert_eq!(bosun_core::text::fence_for("plain"), "```");
/// ```
pub fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_and_characters_and_never_panics() {
        assert_eq!(line_col("ab\ncdé\nx", 0), (1, 1));
        assert_eq!(line_col("ab\ncdé\nx", 3), (2, 1));
        assert_eq!(line_col("ab\ncdé\nx", 7), (2, 4));
        assert_eq!(line_col("é", 1), (1, 2));
        assert_eq!(line_col("ab", 99), (1, 3));
    }
}
