//! The plugin scanner: a review aid for JavaScript and TypeScript plugins that reads their
//! **syntax**, not their text. Every `.js`, `.mjs`, `.cjs`, `.jsx`, `.ts`, `.mts`, `.cts` and
//! `.tsx` file under a plugin directory is parsed with oxc, and references are resolved through
//! aliases, computed keys, escapes and imports before they are judged, so that
//! `globalThis["ev" + "al"]`, `(0, eval)`, `\u0065val`, `const d = Deno; d.env` and
//! `import x from "https://…"` are found where Triggerfish's regexes do not find them — and
//! "admin mode" in a description is not.
//!
//! The scanner never runs what it reads, and it is **not the security boundary**: the sandbox
//! is. It reports findings with a weight and a place, and refuses a plugin with a critical
//! finding (weight 3) or a total of 4 or more, as Triggerfish does; a file it cannot read or
//! parse is itself a critical finding, because what cannot be reviewed is not passed.
//!
//! [`scan_files`] scans an in-memory snapshot — the exact bytes a loader will run ("what is
//! scanned is what runs"); [`scan_dir`] reads a directory into such a snapshot first. Rules,
//! weights and the deviations from Triggerfish are in [`rules`] and `docs/plugins.md`.
//!
//! ```
//! let report = bosun_plugins::scan::scan_files(&[
//!     ("mod.ts".to_owned(), b"export const run = (code: string) => (0, eval)(code);".to_vec()),
//! ]);
//! assert!(report.refused);
//! assert_eq!(report.findings[0].rule, "eval");
//! assert_eq!((report.findings[0].line, report.findings[0].column), (1, 38));
//! ```

pub mod rules;

mod resolve;
mod syntax;
mod text;
mod walk;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use oxc::allocator::Allocator;
use oxc::parser::{ParseOptions, Parser};
use oxc::semantic::SemanticBuilder;
use oxc::span::SourceType;
use serde::Serialize;

use crate::source::SourceSnapshot;
use crate::typescript::{ParseGuard, diagnostic_message, diagnostic_offset, on_parser_stack};
pub use rules::{Category, Rule};

/// Most JavaScript/TypeScript files scanned; a plugin with more is refused.
pub const MAX_FILES: usize = 1_000;
/// Largest file scanned (the bound [`crate::typescript::strip_types`] has too).
pub const MAX_FILE_BYTES: usize = crate::typescript::MAX_SOURCE_BYTES;
/// Most findings of one rule listed for one file; the rest are counted in
/// [`ScanReport::findings_omitted`] (the verdict does not change: a rule counts once per file).
pub const MAX_LISTED_PER_RULE: usize = 50;

/// One thing the scanner found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What kind of behaviour.
    pub category: Category,
    /// The rule's stable id (see [`rules::ALL`]).
    pub rule: &'static str,
    /// The rule's weight: 3 refuses on its own.
    pub weight: u8,
    /// The file, relative to the scanned directory, with `/` separators.
    pub file: String,
    /// 1-based line; 0 when the finding is about the whole file (a link, a file too large).
    pub line: usize,
    /// 1-based column in characters; 0 with line 0.
    pub column: usize,
    /// What was found, for a person.
    pub message: String,
    /// The start of the source there (one line, at most 80 characters, control and hidden
    /// characters escaped as `\u{…}`); empty for whole-file findings.
    pub snippet: String,
}

/// The result of a scan: the `--json` output of `bosun plugins scan`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScanReport {
    /// JavaScript/TypeScript files found (each scanned, or reported as a finding).
    pub files_scanned: usize,
    /// Every finding, by file then position.
    pub findings: Vec<Finding>,
    /// Findings not listed because one rule matched more than [`MAX_LISTED_PER_RULE`] times in
    /// one file.
    pub findings_omitted: usize,
    /// The score: each rule's weight, once per file it matches in.
    pub total: u32,
    /// Whether the plugin is refused: a finding of weight 3, or a total of 4 or more.
    pub refused: bool,
    /// The SHA-256 of the snapshot scanned (a directory): the hash trust pins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Why a scan could not start.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The path does not exist.
    #[error("{path} does not exist: give the plugin's directory")]
    NotFound {
        /// The path given.
        path: PathBuf,
    },
    /// The path is a symbolic link.
    #[error(
        "{path} is a symbolic link, which Bosun does not follow for plugins: give the real directory"
    )]
    Symlink {
        /// The path given.
        path: PathBuf,
    },
    /// The path is neither a directory nor a JavaScript/TypeScript file.
    #[error(
        "{path} is not a directory or a JavaScript/TypeScript file (.js .mjs .cjs .jsx .ts .mts .cts .tsx): give the plugin's directory"
    )]
    NotSource {
        /// The path given.
        path: PathBuf,
    },
    /// The path cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A rule matched at a byte range of a file, before it is placed and printed.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    pub rule: Rule,
    pub start: usize,
    pub end: usize,
    pub message: String,
}

/// Whether the scanner reads a file with this name (by extension, in any case).
pub fn is_source_file(name: &str) -> bool {
    source_kind(name).is_some()
}

/// `Some(is_typescript)` for the extensions the scanner reads.
fn source_kind(name: &str) -> Option<bool> {
    let (_, extension) = name.rsplit_once('.')?;
    match extension.to_ascii_lowercase().as_str() {
        "js" | "mjs" | "cjs" | "jsx" => Some(false),
        "ts" | "mts" | "cts" | "tsx" => Some(true),
        _ => None,
    }
}

/// Scan a plugin directory, or one source file.
///
/// A directory is read exactly as the loader reads it, into a [`SourceSnapshot`] (no link
/// followed anywhere, special files refused, the snapshot's bounds), and that snapshot is
/// scanned: what is reviewed is what is hashed, trusted and run, and the report carries the
/// snapshot's SHA-256. A directory the loader would refuse is refused here with the loader's
/// reason, as a finding. The path itself being missing, a link, or neither a directory nor a
/// source file is an error.
pub fn scan_dir(dir: &Path) -> Result<ScanReport, ScanError> {
    let meta = match dir.symlink_metadata() {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ScanError::NotFound {
                path: dir.to_owned(),
            });
        }
        Err(source) => {
            return Err(ScanError::Read {
                path: dir.to_owned(),
                source,
            });
        }
    };
    if meta.is_symlink() {
        return Err(ScanError::Symlink {
            path: dir.to_owned(),
        });
    }
    if meta.is_dir() {
        return Ok(match SourceSnapshot::read(dir) {
            Ok(snapshot) => scan_snapshot(&snapshot),
            Err(e) => report(
                &[],
                vec![file_finding(
                    ".",
                    format!(
                        "cannot be loaded as a plugin, so it is refused: {}",
                        bosun_core::escape_hidden(&e.to_string())
                    ),
                )],
                0,
            ),
        });
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !meta.is_file() || !is_source_file(&name) {
        return Err(ScanError::NotSource {
            path: dir.to_owned(),
        });
    }
    let bytes = walk::read_source(dir).map_err(|source| ScanError::Read {
        path: dir.to_owned(),
        source,
    })?;
    Ok(scan_files(&[(name, bytes)]))
}

/// Scan a plugin's source snapshot, the one the loader hashes and runs; the report names the
/// snapshot's SHA-256.
pub fn scan_snapshot(snapshot: &SourceSnapshot) -> ScanReport {
    let files: Vec<(String, Vec<u8>)> = snapshot
        .files()
        .iter()
        .map(|f| (f.path.clone(), f.bytes.to_vec()))
        .collect();
    let mut report = scan_files(&files);
    report.sha256 = Some(snapshot.sha256().to_owned());
    report
}

/// Scan an in-memory snapshot of a plugin: `(relative path with / separators, bytes)` pairs.
/// Only files with a JavaScript/TypeScript extension are scanned (as TypeScript for `.ts`,
/// `.mts`, `.cts`, `.tsx`); the others are ignored. Scan exactly the bytes that will be loaded.
pub fn scan_files(files: &[(String, Vec<u8>)]) -> ScanReport {
    report(files, Vec::new(), 0)
}

/// Scan one file's source. `rel_path` names it in findings and decides its module kind (`.cjs`
/// and `.cts` are CommonJS, `.jsx`/`.tsx` and JavaScript allow JSX); `is_ts` parses it as
/// TypeScript. Findings are in source order, at most [`MAX_LISTED_PER_RULE`] per rule.
pub fn scan_source(rel_path: &str, source: &str, is_ts: bool) -> Vec<Finding> {
    scan_source_listed(rel_path, source, is_ts).0
}

/// [`scan_source`], and how many findings were not listed.
fn scan_source_listed(rel_path: &str, source: &str, is_ts: bool) -> (Vec<Finding>, usize) {
    if source.len() > MAX_FILE_BYTES {
        let message = format!(
            "is {} bytes, over the {MAX_FILE_BYTES}-byte bound for a scanned file: split it",
            source.len()
        );
        return (vec![file_finding(rel_path, message)], 0);
    }
    let (runs, mut omitted) = text::hidden_runs(source, MAX_LISTED_PER_RULE);
    let mut hits: Vec<Hit> = runs
        .into_iter()
        .map(|run| Hit {
            rule: rules::HIDDEN_CHARACTER,
            start: run.start,
            end: run.end,
            message: run.message,
        })
        .collect();
    match on_parser_stack(source, || analyse(rel_path, source, is_ts)) {
        Ok(Ok((more, not_kept))) => {
            hits.extend(more);
            omitted += not_kept;
        }
        Ok(Err(unparsed)) => hits.push(unparsed),
        Err(ParseGuard::TooDense(problem) | ParseGuard::Thread(problem)) => hits.push(Hit {
            rule: rules::UNREADABLE,
            start: 0,
            end: 0,
            message: format!("cannot be reviewed: {problem}"),
        }),
    }
    let (findings, not_listed) = place(rel_path, source, hits);
    (findings, omitted + not_listed)
}

/// Parse and walk one file: its hits and how many more were only counted; `Err` is the finding
/// that it does not parse.
fn analyse(rel_path: &str, source: &str, is_ts: bool) -> Result<(Vec<Hit>, usize), Hit> {
    let allocator = Allocator::default();
    let extension = rel_path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let base = if is_ts {
        SourceType::ts()
    } else {
        SourceType::unambiguous()
    };
    let commonjs = matches!(extension.as_str(), "cjs" | "cts");
    let source_type = match extension.as_str() {
        "mjs" | "mts" => base.with_module(true),
        "cjs" | "cts" => base.with_commonjs(true),
        _ => base.with_unambiguous(true),
    }
    .with_jsx(!is_ts || extension == "tsx");
    let options = ParseOptions {
        allow_return_outside_function: commonjs,
        ..ParseOptions::default()
    };
    let unparsed = |diagnostics: &[oxc::diagnostics::OxcDiagnostic]| {
        let (message, start) = match diagnostics.first() {
            Some(first) => (
                format!(
                    "does not parse ({}), so it cannot be reviewed",
                    diagnostic_message(first)
                ),
                diagnostic_offset(first),
            ),
            None => ("does not parse, so it cannot be reviewed".to_owned(), 0),
        };
        Hit {
            rule: rules::UNREADABLE,
            start,
            end: start,
            message,
        }
    };
    let parsed = Parser::new(&allocator, source, source_type)
        .with_options(options)
        .parse();
    if parsed.panicked || parsed.diagnostics.has_errors() {
        let errors: Vec<_> = parsed.diagnostics.errors().cloned().collect();
        return Err(unparsed(&errors));
    }
    let program = parsed.program;
    let built = SemanticBuilder::new()
        .with_build_nodes(true)
        .with_check_syntax_error(true)
        .build(&program);
    if built.diagnostics.has_errors() {
        let errors: Vec<_> = built.diagnostics.errors().cloned().collect();
        return Err(unparsed(&errors));
    }
    let mut pass = syntax::Pass::new(&built.semantic, source, rel_path);
    pass.run(&program);
    Ok((pass.hits, pass.omitted))
}

/// Turn hits into findings in source order, with line, column and snippet, listing at most
/// [`MAX_LISTED_PER_RULE`] per rule.
fn place(rel_path: &str, source: &str, mut hits: Vec<Hit>) -> (Vec<Finding>, usize) {
    hits.sort_by(|a, b| (a.start, a.rule.id, a.end).cmp(&(b.start, b.rule.id, b.end)));
    hits.dedup_by(|a, b| a.start == b.start && a.rule.id == b.rule.id && a.message == b.message);
    let mut per_rule: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut omitted = 0;
    let mut cursor = Cursor::default();
    let mut findings = Vec::new();
    for hit in hits {
        let listed = per_rule.entry(hit.rule.id).or_default();
        if *listed >= MAX_LISTED_PER_RULE {
            omitted += 1;
            continue;
        }
        *listed += 1;
        let (line, column) = cursor.advance(source, hit.start);
        findings.push(Finding {
            category: hit.rule.category,
            rule: hit.rule.id,
            weight: hit.rule.weight,
            file: rel_path.to_owned(),
            line,
            column,
            message: hit.message,
            snippet: text::snippet(source, hit.start, hit.end.max(hit.start + 1)),
        });
    }
    (findings, omitted)
}

/// Line and column of increasing offsets in one pass over the text; the same numbers as
/// [`bosun_core::text::line_col`] (characters, counted by their first bytes).
#[derive(Default)]
struct Cursor {
    offset: usize,
    line: usize,
    column: usize,
}

impl Cursor {
    fn advance(&mut self, text: &str, to: usize) -> (usize, usize) {
        if self.line == 0 {
            (self.line, self.column) = (1, 1);
        }
        let bytes = text.as_bytes();
        let to = to.min(bytes.len());
        for &b in bytes.get(self.offset..to).unwrap_or_default() {
            if b == b'\n' {
                self.line += 1;
                self.column = 1;
            } else if b & 0xC0 != 0x80 {
                self.column += 1;
            }
        }
        self.offset = self.offset.max(to);
        (self.line, self.column)
    }
}

/// A finding about a whole file.
fn file_finding(file: &str, message: String) -> Finding {
    Finding {
        category: rules::UNREADABLE.category,
        rule: rules::UNREADABLE.id,
        weight: rules::UNREADABLE.weight,
        file: file.to_owned(),
        line: 0,
        column: 0,
        message,
        snippet: String::new(),
    }
}

/// Scan `files` (sorted by path), add the findings of reading them, and give the verdict.
fn report(files: &[(String, Vec<u8>)], mut findings: Vec<Finding>, rejected: usize) -> ScanReport {
    let mut sorted: Vec<&(String, Vec<u8>)> = files
        .iter()
        .filter(|(path, _)| is_source_file(path))
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut files_scanned = rejected;
    let mut omitted = 0;
    for (path, bytes) in sorted {
        if files_scanned >= MAX_FILES {
            findings.push(file_finding(
                path,
                format!("the plugin has more than {MAX_FILES} JavaScript/TypeScript files; this one and the rest were not scanned"),
            ));
            break;
        }
        files_scanned += 1;
        if bytes.len() > MAX_FILE_BYTES {
            findings.push(file_finding(
                path,
                format!(
                    "is {} bytes, over the {MAX_FILE_BYTES}-byte bound for a scanned file: split it",
                    bytes.len()
                ),
            ));
            continue;
        }
        let source = match std::str::from_utf8(bytes) {
            Ok(source) => source,
            Err(e) => {
                let valid = String::from_utf8_lossy(&bytes[..e.valid_up_to()]);
                let (line, column) = crate::line_col(&valid, valid.len());
                let mut finding = file_finding(
                    path,
                    "is not UTF-8, so it cannot be reviewed: save it as UTF-8".to_owned(),
                );
                (finding.line, finding.column) = (line, column);
                findings.push(finding);
                continue;
            }
        };
        let is_ts = source_kind(path).unwrap_or(false);
        let (listed, more) = scan_source_listed(path, source, is_ts);
        findings.extend(listed);
        omitted += more;
    }
    findings.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    verdict(files_scanned, findings, omitted)
}

/// The score and the verdict: each rule's weight once per file; refused on a weight of 3 or a
/// total of 4.
fn verdict(files_scanned: usize, findings: Vec<Finding>, findings_omitted: usize) -> ScanReport {
    let counted: BTreeSet<(&str, &str)> =
        findings.iter().map(|f| (f.file.as_str(), f.rule)).collect();
    let total: u32 = counted
        .iter()
        .filter_map(|(_, rule)| rules::ALL.iter().find(|r| r.id == *rule))
        .map(|r| u32::from(r.weight))
        .sum();
    let critical = findings.iter().any(|f| f.weight >= rules::CRITICAL_WEIGHT);
    ScanReport {
        files_scanned,
        refused: critical || total >= rules::REFUSE_TOTAL,
        total,
        findings,
        findings_omitted,
        sha256: None,
    }
}
