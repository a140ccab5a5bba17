//! W3C Trace Context (`traceparent`, version 00): the ids that let one trace cross a client,
//! Bosun and the MCP servers and processes it starts.

/// A trace's 16-byte id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span's 8-byte id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    /// A fresh random id (never all zeroes, which W3C reserves).
    pub fn random() -> Self {
        Self(fastrand::u128(1..).to_be_bytes())
    }

    /// Lower-case hex, as `traceparent` and OTLP/JSON write it.
    pub fn to_hex(self) -> String {
        hex::encode(self.0)
    }
}

impl SpanId {
    /// A fresh random id (never all zeroes).
    pub fn random() -> Self {
        Self(fastrand::u64(1..).to_be_bytes())
    }

    /// Lower-case hex.
    pub fn to_hex(self) -> String {
        hex::encode(self.0)
    }
}

/// A span as others refer to it: its trace, its id, whether it was sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    /// The trace.
    pub trace_id: TraceId,
    /// The span.
    pub span_id: SpanId,
    /// The `sampled` flag.
    pub sampled: bool,
}

impl SpanContext {
    /// `00-<trace>-<span>-<flags>`.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            self.trace_id.to_hex(),
            self.span_id.to_hex(),
            u8::from(self.sampled)
        )
    }

    /// Reads a `traceparent`; `None` for anything malformed, an all-zero id, or version `ff`
    /// (a bad header starts a new trace rather than failing a call). Later versions are read
    /// by their first four fields, as the spec asks.
    pub fn from_traceparent(header: &str) -> Option<Self> {
        let header = header.trim();
        let mut parts = header.split('-');
        let version = parts.next()?;
        let trace = parts.next()?;
        let span = parts.next()?;
        let flags = parts.next()?;
        let rest = parts.next();
        if version.len() != 2 || version.eq_ignore_ascii_case("ff") {
            return None;
        }
        if version == "00" && rest.is_some() {
            return None;
        }
        let lower = |s: &str| {
            s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if !(lower(version) && lower(trace) && lower(span) && lower(flags)) || flags.len() != 2 {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        hex::decode_to_slice(trace, &mut trace_id).ok()?;
        hex::decode_to_slice(span, &mut span_id).ok()?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        let flags = u8::from_str_radix(flags, 16).ok()?;
        Some(Self {
            trace_id: TraceId(trace_id),
            span_id: SpanId(span_id),
            sampled: flags & 1 == 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_round_trips_and_bad_ones_start_a_new_trace() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = SpanContext::from_traceparent(header);
        assert_eq!(context.map(|c| c.traceparent()), Some(header.to_owned()));
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(SpanContext::from_traceparent(bad), None, "{bad}");
        }
        let future = SpanContext::from_traceparent(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more",
        );
        assert_eq!(future.map(|c| c.sampled), Some(false));
    }
}
