//! What a plugin call leaves besides its result — its log lines, the lines it lost past the
//! bound, the requests the HTTP guard refused — handed to the call's trace by one path, the same
//! for every format, whether the call succeeded or failed.
//!
//! The lines become `tool.log` events when the chokepoint drains the call's context, so every
//! format's lines are redacted and bounded there alike; this module never writes the trace.

use bosun_sandbox::CallReport;

use crate::tool::{MAX_LOG_LINES, ToolContext};

/// Appended to a line the sandbox cut at its length bound.
pub(crate) const CUT_MARK: &str = " … [cut at the line bound]";

/// Hands `report` to the trace of the call `ctx` belongs to: each line with its level's word
/// (`trace`, `debug`, `info`, `warn`, `error`), a cut line marked, then a `warn` line counting
/// the lines dropped past the per-call bound, and one per refused request (these notes always
/// find room: the plugin's own lines give way to them).
pub(crate) fn keep(ctx: &ToolContext, report: &CallReport) {
    ctx.log_lines(lines(report));
}

/// The `(level, message)` lines [`keep`] hands on, at most [`MAX_LOG_LINES`].
fn lines(report: &CallReport) -> Vec<(String, String)> {
    let refused: Vec<(String, String)> = report
        .refused_requests
        .iter()
        .take(MAX_LOG_LINES / 2)
        .map(|refused| {
            (
                "warn".to_owned(),
                format!("refused request to {}: {}", refused.target, refused.reason),
            )
        })
        .collect();
    let room = MAX_LOG_LINES - refused.len();
    let kept = if report.logs.len() + usize::from(report.dropped_logs > 0) <= room {
        report.logs.len()
    } else {
        room - 1
    };
    let dropped = report.dropped_logs + (report.logs.len() - kept);
    let lines = report.logs[..kept].iter().map(|line| {
        let message = if line.truncated {
            format!("{}{CUT_MARK}", line.message)
        } else {
            line.message.clone()
        };
        (line.level.to_string(), message)
    });
    let dropped = (dropped > 0).then(|| {
        (
            "warn".to_owned(),
            format!("{dropped} more log lines were dropped: a call keeps the first {kept}"),
        )
    });
    lines.chain(dropped).chain(refused).collect()
}

#[cfg(test)]
mod tests {
    use bosun_sandbox::{LogLevel, LogLine};

    use super::*;

    fn line(level: LogLevel, message: &str, truncated: bool) -> LogLine {
        LogLine {
            level,
            message: message.to_owned(),
            truncated,
        }
    }

    fn kept(report: &CallReport) -> Vec<(String, String)> {
        lines(report)
    }

    #[test]
    fn lines_keep_their_level_and_a_cut_line_is_marked() {
        let report = CallReport {
            logs: vec![
                line(LogLevel::Debug, "one", false),
                line(LogLevel::Error, "two", true),
            ],
            ..CallReport::default()
        };
        assert_eq!(
            kept(&report),
            [
                ("debug".to_owned(), "one".to_owned()),
                ("error".to_owned(), format!("two{CUT_MARK}")),
            ]
        );
    }

    #[test]
    fn dropped_lines_and_refused_requests_are_said_even_at_the_bound() {
        let report = CallReport {
            logs: (0..MAX_LOG_LINES)
                .map(|i| line(LogLevel::Info, &format!("l{i}"), false))
                .collect(),
            dropped_logs: 5,
            refused_requests: vec![bosun_sandbox::RefusedRequest {
                target: "https://elsewhere.example".to_owned(),
                reason: bosun_sandbox::Refusal::NoHttpGrant,
            }],
            ..CallReport::default()
        };
        let lines = kept(&report);
        assert_eq!(lines.len(), MAX_LOG_LINES);
        assert_eq!(
            lines[MAX_LOG_LINES - 2],
            (
                "warn".to_owned(),
                format!(
                    "7 more log lines were dropped: a call keeps the first {}",
                    MAX_LOG_LINES - 2
                )
            )
        );
        assert_eq!(
            lines[MAX_LOG_LINES - 1],
            (
                "warn".to_owned(),
                "refused request to https://elsewhere.example: the plugin has no net.http grant"
                    .to_owned()
            )
        );
    }
}
