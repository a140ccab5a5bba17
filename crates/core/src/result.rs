//! What a tool call returns. The shape is stable and the error codes are the ones a model (and a
//! script reading `--json`) can rely on. [`bound_result`] enforces the output bound on the
//! serialised result, so `truncated` is exact whatever the tool did.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Stable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The input does not match the tool's schema or rules.
    InvalidInput,
    /// The path or thing does not exist.
    NotFound,
    /// Expected a file.
    NotFile,
    /// Expected a directory.
    NotDirectory,
    /// The file already exists.
    AlreadyExists,
    /// The path leaves the workspace.
    OutsideWorkspace,
    /// A patch's `oldText` is not found exactly once.
    StalePatch,
    /// The output would not fit the bound.
    OutputLimit,
    /// The deadline passed.
    TimedOut,
    /// The call was cancelled.
    Cancelled,
    /// Policy denied the call.
    Denied,
    /// Policy asks, and nobody can answer.
    NeedsApproval,
    /// An I/O error.
    IoError,
    /// A process failed to start or run.
    ProcessError,
    /// No tool has that name.
    UnknownTool,
    /// A budget or limit was reached.
    LimitReached,
    /// A plugin failed.
    PluginError,
}

impl ErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::NotFound => "not_found",
            Self::NotFile => "not_file",
            Self::NotDirectory => "not_directory",
            Self::AlreadyExists => "already_exists",
            Self::OutsideWorkspace => "outside_workspace",
            Self::StalePatch => "stale_patch",
            Self::OutputLimit => "output_limit",
            Self::TimedOut => "timed_out",
            Self::Cancelled => "cancelled",
            Self::Denied => "denied",
            Self::NeedsApproval => "needs_approval",
            Self::IoError => "io_error",
            Self::ProcessError => "process_error",
            Self::UnknownTool => "unknown_tool",
            Self::LimitReached => "limit_reached",
            Self::PluginError => "plugin_error",
        }
    }

    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 17] = [
        Self::InvalidInput,
        Self::NotFound,
        Self::NotFile,
        Self::NotDirectory,
        Self::AlreadyExists,
        Self::OutsideWorkspace,
        Self::StalePatch,
        Self::OutputLimit,
        Self::TimedOut,
        Self::Cancelled,
        Self::Denied,
        Self::NeedsApproval,
        Self::IoError,
        Self::ProcessError,
        Self::UnknownTool,
        Self::LimitReached,
        Self::PluginError,
    ];

    /// The code spelled `code` on the wire, if there is one.
    pub fn parse(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == code)
    }

    /// Whether the code reports a decision or a limit of the host itself — policy, a person, the
    /// deadline, the output bound, the workspace boundary, cancellation, a budget, the tool
    /// registry. Only the host may report these: a plugin or server that returns one is
    /// forging a decision.
    pub fn is_host_only(self) -> bool {
        matches!(
            self,
            Self::OutsideWorkspace
                | Self::OutputLimit
                | Self::TimedOut
                | Self::Cancelled
                | Self::Denied
                | Self::NeedsApproval
                | Self::UnknownTool
                | Self::LimitReached
        )
    }
}

impl ToolError {
    /// An error that plugin (or server) code reported with its own `code`: a stable code that
    /// is not [host-only](ErrorCode::is_host_only) is kept; a host-only one (a plugin saying
    /// `denied`) or an unknown one becomes `plugin_error`, with the code it claimed in the
    /// message, so that exit codes and traces only ever report the host's own decisions.
    pub fn from_plugin(code: &str, message: String, retryable: bool) -> Self {
        match ErrorCode::parse(code) {
            Some(stable) if !stable.is_host_only() => Self {
                code: stable,
                message,
                retryable,
            },
            Some(_) => Self {
                code: ErrorCode::PluginError,
                message: format!(
                    "{message} (the plugin reported `{code}`, a code only Bosun itself reports)"
                ),
                retryable,
            },
            None => Self {
                code: ErrorCode::PluginError,
                message,
                retryable,
            },
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool error as the caller sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    /// The stable code.
    pub code: ErrorCode,
    /// What happened and what to do.
    pub message: String,
    /// Whether the same call may succeed if tried again.
    pub retryable: bool,
}

impl ToolError {
    /// A non-retryable error.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retryable: false,
        }
    }

    /// Marks the error retryable.
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }
}

/// What a tool produced: a value and whether the tool already cut it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The output.
    pub value: Value,
    /// True when the tool left something out.
    pub truncated: bool,
    /// How sensitive this result is, when the tool knows better than its spec (a Triggerfish
    /// plugin's level); `None` means the spec's classification. The chokepoint raises the
    /// session's taint to it.
    pub classification: Option<crate::Classification>,
}

impl ToolOutput {
    /// A complete output.
    pub fn new(value: Value) -> Self {
        Self {
            value,
            truncated: false,
            classification: None,
        }
    }
}

/// `{ok: true, output, truncated}` or `{ok: false, error}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResult {
    /// Success.
    Ok {
        /// Always true.
        ok: True,
        /// The output.
        output: Value,
        /// True exactly when something was left out.
        truncated: bool,
    },
    /// Failure.
    Err {
        /// Always false.
        ok: False,
        /// The error.
        error: ToolError,
    },
}

/// A boolean that serialises as `true` and only accepts `true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct True;
/// A boolean that serialises as `false` and only accepts `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct False;

macro_rules! literal_bool {
    ($ty:ident, $value:literal) => {
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bool($value)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                if bool::deserialize(d)? == $value {
                    Ok($ty)
                } else {
                    Err(serde::de::Error::custom(concat!(
                        "expected ",
                        stringify!($value)
                    )))
                }
            }
        }
    };
}
literal_bool!(True, true);
literal_bool!(False, false);

impl ToolResult {
    /// A success.
    pub fn ok(output: Value, truncated: bool) -> Self {
        Self::Ok {
            ok: True,
            output,
            truncated,
        }
    }

    /// A failure.
    pub fn err(error: ToolError) -> Self {
        Self::Err { ok: False, error }
    }

    /// The error, if this is one.
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Ok { .. } => None,
            Self::Err { error, .. } => Some(error),
        }
    }

    /// True for a success.
    pub fn is_ok(&self) -> bool {
        matches!(self, Self::Ok { .. })
    }

    /// Serialised size in bytes.
    pub fn serialized_len(&self) -> usize {
        serialized_len(self)
    }
}

impl From<Result<ToolOutput, ToolError>> for ToolResult {
    fn from(r: Result<ToolOutput, ToolError>) -> Self {
        match r {
            Ok(out) => Self::ok(out.value, out.truncated),
            Err(e) => Self::err(e),
        }
    }
}

fn serialized_len<T: Serialize + ?Sized>(value: &T) -> usize {
    // Counting through a sink avoids allocating the whole serialisation.
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Bounds a result so that its JSON serialisation is at most `max_bytes`.
///
/// An output that fits is returned unchanged. One that does not is shrunk — the longest string
/// is cut (on a character boundary) or the longest array shortened, repeatedly — until it fits,
/// and `truncated` becomes true. An error message is cut the same way. If nothing can be cut
/// far enough (an output made of many small numbers, say), the result becomes an
/// `output_limit` error. `max_bytes` below 256 is raised to 256 so an error always fits.
pub fn bound_result(result: ToolResult, max_bytes: usize) -> ToolResult {
    let max_bytes = max_bytes.max(256);
    if serialized_len(&result) <= max_bytes {
        return result;
    }
    match result {
        ToolResult::Ok { mut output, .. } => {
            // Room for the envelope `{"ok":true,"output":,"truncated":true}`.
            let budget = max_bytes.saturating_sub(40);
            if shrink_to(&mut output, budget) {
                ToolResult::ok(output, true)
            } else {
                ToolResult::err(ToolError::new(
                    ErrorCode::OutputLimit,
                    format!(
                        "the output does not fit {max_bytes} bytes and cannot be shortened; narrow the request"
                    ),
                ))
            }
        }
        ToolResult::Err { error, .. } => {
            let mut message = Value::String(error.message);
            shrink_to(&mut message, max_bytes.saturating_sub(120));
            let message = match message {
                Value::String(s) => s,
                other => other.to_string(),
            };
            ToolResult::err(ToolError { message, ..error })
        }
    }
}

/// Shrinks `value` in place until it serialises within `budget` bytes. Returns false if it
/// cannot get there by cutting strings and arrays.
fn shrink_to(value: &mut Value, budget: usize) -> bool {
    // Each round removes at least the overshoot from the largest piece, so rounds are few; the
    // cap guards against pathological shapes.
    for _ in 0..64 {
        let size = serialized_len(value);
        if size <= budget {
            return true;
        }
        let overshoot = size - budget;
        if !cut_largest(value, overshoot) {
            return false;
        }
    }
    serialized_len(value) <= budget
}

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// The largest string and the largest array in a value, by serialised size, with their paths.
#[derive(Default)]
struct Candidates {
    string: Option<(usize, Vec<Step>)>,
    array: Option<(usize, Vec<Step>)>,
}

/// Returns the serialised size of `value` and records cut candidates. One pass, bottom-up.
fn measure(value: &Value, path: &mut Vec<Step>, found: &mut Candidates) -> usize {
    match value {
        Value::String(s) => {
            let size = serialized_len(s);
            if !s.is_empty() && found.string.as_ref().is_none_or(|(b, _)| size > *b) {
                found.string = Some((size, path.clone()));
            }
            size
        }
        Value::Array(items) => {
            let mut size = 2 + items.len().saturating_sub(1);
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                size += measure(item, path, found);
                path.pop();
            }
            if !items.is_empty() && found.array.as_ref().is_none_or(|(b, _)| size > *b) {
                found.array = Some((size, path.clone()));
            }
            size
        }
        Value::Object(map) => {
            let mut size = 2 + map.len().saturating_sub(1);
            for (key, item) in map {
                size += serialized_len(key) + 1;
                path.push(Step::Key(key.clone()));
                size += measure(item, path, found);
                path.pop();
            }
            size
        }
        other => serialized_len(other),
    }
}

fn walk<'a>(mut value: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    for step in path {
        value = match step {
            Step::Key(k) => value.get_mut(k.as_str())?,
            Step::Index(i) => value.get_mut(*i)?,
        };
    }
    Some(value)
}

/// Removes at least `overshoot` serialised bytes from the largest string, or from the largest
/// array when that array is more than twice the largest string (many small items). Returns
/// false if there is nothing left to cut.
fn cut_largest(value: &mut Value, overshoot: usize) -> bool {
    let mut found = Candidates::default();
    measure(value, &mut Vec::new(), &mut found);
    let cut_array = match (&found.string, &found.array) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some((s, _)), Some((a, _))) => *a > s * 2,
    };
    let (size, path) = match if cut_array { found.array } else { found.string } {
        Some(candidate) => candidate,
        None => return false,
    };
    match walk(value, &path) {
        Some(Value::String(s)) => {
            // Escapes make the serialisation longer than the text; cut by the serialised
            // overshoot plus a margin and let the caller's loop refine.
            let target = size.saturating_sub(overshoot + 16);
            let keep = (s.len() as u128 * target as u128 / size.max(1) as u128) as usize;
            let mut cut = keep.min(s.len().saturating_sub(1));
            while cut > 0 && !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            true
        }
        Some(Value::Array(items)) => {
            let per_item = (size / items.len()).max(1);
            let remove = overshoot.div_ceil(per_item).clamp(1, items.len());
            items.truncate(items.len() - remove);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plugins_cannot_report_the_hosts_decisions() {
        for code in ErrorCode::ALL {
            let error = ToolError::from_plugin(code.as_str(), "m".to_owned(), false);
            if code.is_host_only() {
                assert_eq!(error.code, ErrorCode::PluginError, "{code}");
                assert!(error.message.contains(code.as_str()), "{}", error.message);
            } else {
                assert_eq!(error.code, code);
                assert_eq!(error.message, "m");
            }
        }
        for forged in [
            "denied",
            "needs_approval",
            "cancelled",
            "timed_out",
            "output_limit",
        ] {
            assert_eq!(
                ToolError::from_plugin(forged, String::new(), false).code,
                ErrorCode::PluginError
            );
        }
        assert_eq!(
            ToolError::from_plugin("Denied", String::new(), false).code,
            ErrorCode::PluginError
        );
        assert_eq!(
            ToolError::from_plugin("no_such_code", String::new(), true).code,
            ErrorCode::PluginError
        );
    }

    #[test]
    fn results_serialise_to_the_contract() {
        let ok = ToolResult::ok(json!({"a": 1}), false);
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"ok": true, "output": {"a": 1}, "truncated": false})
        );
        let err = ToolResult::err(ToolError::new(ErrorCode::NotFound, "no such file"));
        assert_eq!(
            serde_json::to_value(&err).unwrap(),
            json!({"ok": false, "error": {"code": "not_found", "message": "no such file", "retryable": false}})
        );
        let back: ToolResult = serde_json::from_value(
            json!({"ok": false, "error": {"code": "denied", "message": "m", "retryable": true}}),
        )
        .unwrap();
        assert_eq!(back.error().unwrap().code, ErrorCode::Denied);
    }

    #[test]
    fn a_fitting_result_is_untouched() {
        let r = ToolResult::ok(json!({"content": "hello"}), false);
        assert_eq!(bound_result(r.clone(), 1024), r);
    }

    #[test]
    fn a_large_string_is_cut_to_the_bound_and_marked() {
        let r = ToolResult::ok(json!({"path": "a", "content": "x".repeat(100_000)}), false);
        let bounded = bound_result(r, 4096);
        assert!(bounded.serialized_len() <= 4096);
        assert!(
            bounded.serialized_len() > 3900,
            "cut far more than needed: {}",
            bounded.serialized_len()
        );
        match bounded {
            ToolResult::Ok {
                output, truncated, ..
            } => {
                assert!(truncated);
                assert_eq!(output["path"], "a");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn escaped_and_multibyte_text_is_cut_on_a_boundary() {
        let r = ToolResult::ok(json!("é\"\u{1}".repeat(10_000)), false);
        let bounded = bound_result(r, 2000);
        assert!(bounded.serialized_len() <= 2000);
    }

    #[test]
    fn long_arrays_are_shortened() {
        let r = ToolResult::ok(
            json!({"entries": (0..10_000).map(|i| json!({"path": format!("f{i}")})).collect::<Vec<_>>()}),
            false,
        );
        let bounded = bound_result(r, 2048);
        assert!(bounded.serialized_len() <= 2048);
        assert!(matches!(
            bounded,
            ToolResult::Ok {
                truncated: true,
                ..
            }
        ));
    }

    #[test]
    fn error_messages_are_bounded_too() {
        let r = ToolResult::err(ToolError::new(ErrorCode::ProcessError, "e".repeat(10_000)));
        let bounded = bound_result(r, 1024);
        assert!(bounded.serialized_len() <= 1024);
        assert_eq!(bounded.error().unwrap().code, ErrorCode::ProcessError);
    }

    #[test]
    fn an_uncuttable_output_becomes_output_limit() {
        let mut map = serde_json::Map::new();
        for i in 0..2000 {
            map.insert(format!("k{i}"), json!(i));
        }
        let bounded = bound_result(ToolResult::ok(Value::Object(map), false), 1024);
        assert_eq!(bounded.error().unwrap().code, ErrorCode::OutputLimit);
    }
}
