//! Reading recorded runs back: finding one by id, prefix or `last`, its envelopes, and the
//! subagent runs it started. Nothing here writes a trace.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use bosun_core::{Envelope, Event};

use super::TraceError;

/// Whether the trace at `path` is a subagent's (its first envelope names a parent run).
fn started_by_another(path: &Path) -> bool {
    use std::io::{BufRead as _, Read as _};
    let Ok(file) = fs::File::open(path) else {
        return false;
    };
    let mut first = String::new();
    let mut reader = std::io::BufReader::new(file.take(64 * 1024));
    if reader.read_line(&mut first).is_err() {
        return false;
    }
    serde_json::from_str::<serde_json::Value>(&first)
        .is_ok_and(|v| v.get("parent_run_id").is_some_and(|p| !p.is_null()))
}

/// Finds a run's trace: `last` is the newest run a person started (not a subagent's);
/// otherwise an id or a unique prefix of one.
pub fn find_run(runs_dir: &Path, which: &str) -> Result<PathBuf, TraceError> {
    let entries = fs::read_dir(runs_dir).map_err(|_| {
        TraceError::NotFound(format!("no runs recorded yet in {}", runs_dir.display()))
    })?;
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .map(str::to_owned)
        })
        .collect();
    ids.sort();
    let chosen = if which == "last" {
        // The newest run that no other run started: a subagent's run starts after its
        // parent's, but `last` means the run the person started.
        ids.iter()
            .rev()
            .find(|id| !started_by_another(&runs_dir.join(format!("{id}.jsonl"))))
            .cloned()
    } else {
        let matches: Vec<&String> = ids.iter().filter(|id| id.starts_with(which)).collect();
        match matches.as_slice() {
            [one] => Some((*one).clone()),
            [] => None,
            _ => {
                return Err(TraceError::NotFound(format!(
                    "run id prefix `{which}` matches {} runs; give more characters",
                    matches.len()
                )));
            }
        }
    };
    chosen
        .map(|id| runs_dir.join(format!("{id}.jsonl")))
        .ok_or_else(|| {
            TraceError::NotFound(format!(
                "no run `{which}` in {}; `bosun inspect last` shows the newest",
                runs_dir.display()
            ))
        })
}

/// Reads every envelope of a trace file into memory. A reader that can take them one at a
/// time (rendering, filtering) uses [`envelopes`], which holds one line at a time.
pub fn read_run(path: &Path) -> Result<Vec<Envelope>, TraceError> {
    envelopes(path)?.collect()
}

/// The envelopes of a trace file, read one line at a time: memory stays that of the longest
/// line however many calls the run made.
pub fn envelopes(path: &Path) -> Result<Envelopes, TraceError> {
    let file = File::open(path).map_err(|source| TraceError::Read {
        path: path.into(),
        source,
    })?;
    Ok(Envelopes {
        path: path.into(),
        reader: BufReader::with_capacity(64 * 1024, file),
        line: String::new(),
        number: 0,
    })
}

/// The envelopes of one trace file, in order; see [`envelopes`].
pub struct Envelopes {
    path: PathBuf,
    reader: BufReader<File>,
    /// The line being read, reused for every line.
    line: String,
    /// The 1-based number of the line last read.
    number: usize,
}

impl Iterator for Envelopes {
    type Item = Result<Envelope, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.line.clear();
            self.number += 1;
            match self.reader.read_line(&mut self.line) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => {
                    return Some(Err(TraceError::Read {
                        path: self.path.clone(),
                        source,
                    }));
                }
            }
            if self.line.trim().is_empty() {
                continue;
            }
            return Some(
                serde_json::from_str(&self.line).map_err(|e| TraceError::Parse {
                    path: self.path.clone(),
                    line: self.number,
                    message: e.to_string(),
                }),
            );
        }
    }
}

/// The runs `run_id` started: its subagents' runs, each with the command that
/// started it, oldest first. Reads only the first line of each trace.
pub fn children_of(runs_dir: &Path, run_id: &str) -> Vec<(String, String)> {
    use std::io::Read as _;
    let Ok(entries) = fs::read_dir(runs_dir) else {
        return Vec::new();
    };
    let mut children = Vec::new();
    for entry in entries.filter_map(Result::ok).take(100_000) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Ok(file) = fs::File::open(&path) else {
            continue;
        };
        let mut line = String::new();
        if std::io::BufReader::new(file)
            .take(64 * 1024)
            .read_line(&mut line)
            .is_err()
        {
            continue;
        }
        let Ok(envelope) = serde_json::from_str::<Envelope>(&line) else {
            continue;
        };
        if envelope.parent_run_id.as_deref() != Some(run_id) {
            continue;
        }
        let command = match &envelope.event {
            Event::RunStarted { command, .. } => command.clone(),
            _ => String::new(),
        };
        children.push((envelope.timestamp, envelope.run_id, command));
    }
    children.sort();
    children
        .into_iter()
        .map(|(_, id, command)| (id, command))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn line(sequence: u64) -> String {
        let envelope = Envelope {
            schema_version: bosun_core::TRACE_SCHEMA_VERSION,
            run_id: "r1".into(),
            parent_run_id: None,
            sequence,
            timestamp: chrono::Utc::now(),
            event: Event::ToolStarted {
                call_id: format!("c{sequence}"),
                tool: "read_file".into(),
            },
        };
        serde_json::to_string(&envelope).unwrap()
    }

    /// The reader hands out each envelope as its line is read: the ones before a damaged line
    /// come out before the damage is found, and the error names the damaged line (blank lines
    /// counted, as an editor counts them). A reader that loaded the file first would fail
    /// before giving any.
    #[test]
    fn envelopes_are_read_one_line_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r1.jsonl");
        fs::write(
            &path,
            format!("{}\n\n{}\nnot json\n{}\n", line(0), line(1), line(2)),
        )
        .unwrap();
        let mut read = envelopes(&path).unwrap();
        assert_eq!(read.next().unwrap().unwrap().sequence, 0);
        assert_eq!(read.next().unwrap().unwrap().sequence, 1);
        match read.next().unwrap() {
            Err(TraceError::Parse { line, .. }) => assert_eq!(line, 4),
            other => panic!("expected the damaged line, got {other:?}"),
        }
        assert_eq!(read.next().unwrap().unwrap().sequence, 2);
        assert!(read.next().is_none());
        // `read_run` stops at the damage, as it always did.
        assert!(matches!(
            read_run(&path),
            Err(TraceError::Parse { line: 4, .. })
        ));
    }
}
