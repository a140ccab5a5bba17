//! Server-sent events decoding (WHATWG HTML Living Standard, "Server-sent events", §9.2.6
//! "Interpreting an event stream"): bytes in, `{event, data}` records out.
//!
//! It knows nothing of any provider's JSON; it only splits lines (LF, CRLF or CR), joins `data:`
//! lines and dispatches on a blank line. Bytes may arrive split anywhere, even inside a UTF-8
//! character or between CR and LF.

/// Largest event (all its `data:` lines together) accepted; anything larger is a broken or
/// hostile server, not a model answer.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, empty when absent (the spec's default type is `message`).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Why the byte stream could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// A line was not UTF-8; carries the line, lossily decoded.
    NotUtf8(String),
    /// An event grew past [`MAX_EVENT_BYTES`].
    TooLarge,
}

/// Incremental decoder.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The last byte fed was a CR, so a following LF belongs to the same line break.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut out = Vec::new();
        let mut rest = bytes;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..pos]);
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut out)?;
            let was_cr = rest[pos] == b'\r';
            rest = &rest[pos + 1..];
            if was_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.line.extend_from_slice(rest);
        if self.line.len() + self.data.len() > MAX_EVENT_BYTES {
            return Err(SseError::TooLarge);
        }
        Ok(out)
    }

    /// Ends the stream: a last event not followed by a blank line is dispatched anyway, which is
    /// kinder than the spec to servers that close right after their final `data:` line.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut out)?;
        }
        self.process_line(b"", &mut out)?;
        Ok(out.pop())
    }

    /// Whether bytes of an unfinished line or event are buffered.
    pub fn is_mid_event(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
                self.has_data = false;
            } else {
                self.event.clear();
            }
            return Ok(());
        }
        let line = std::str::from_utf8(line)
            .map_err(|_| SseError::NotUtf8(String::from_utf8_lossy(line).into_owned()))?;
        if line.starts_with(':') {
            return Ok(()); // a comment, used as keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > MAX_EVENT_BYTES {
                    return Err(SseError::TooLarge);
                }
            }
            "event" => value.clone_into(&mut self.event),
            // `id` and `retry` matter for reconnection, which model streams never do.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn decodes_events_split_at_every_byte() {
        let text = "event: a\r\ndata: {\"x\":\r\ndata: \"é\"}\r\n\r\n: ping\n\ndata:[DONE]\r\r";
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for byte in text.as_bytes() {
            events.extend(decoder.feed(std::slice::from_ref(byte)).unwrap());
        }
        assert_eq!(decoder.finish().unwrap(), None);
        assert_eq!(events, vec![ev("a", "{\"x\":\n\"é\"}"), ev("", "[DONE]")]);
    }

    #[test]
    fn finish_dispatches_an_unterminated_last_event() {
        let mut decoder = SseDecoder::new();
        assert_eq!(decoder.feed(b"data: last").unwrap(), vec![]);
        assert!(decoder.is_mid_event());
        assert_eq!(decoder.finish().unwrap(), Some(ev("", "last")));
    }

    #[test]
    fn refuses_invalid_utf8_and_huge_events() {
        let mut decoder = SseDecoder::new();
        assert_eq!(
            decoder.feed(b"data: \xff\n"),
            Err(SseError::NotUtf8("data: \u{fffd}".into()))
        );
        let mut decoder = SseDecoder::new();
        let chunk = vec![b'x'; 1024 * 1024];
        let mut result = decoder.feed(b"data: ");
        for _ in 0..17 {
            result = decoder.feed(&chunk);
        }
        assert_eq!(result, Err(SseError::TooLarge));
    }
}
