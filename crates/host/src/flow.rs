//! Information flow, checked in the chokepoint after policy: confidentiality (a session that
//! has seen data at some level cannot send it to a sink below that level — Triggerfish's
//! write-down protection, enforced) and integrity (once a session has read untrusted input,
//! what acts in the world needs a person, and a session holding both secrets and untrusted
//! input needs one for every way out — the "lethal trifecta" guard).
//!
//! `[classification]` in the user's config labels paths (sources when read, sinks when
//! written) and hosts (sinks; every host is `PUBLIC` unless named), decides what a write-down
//! does (`ask`, the default, or `deny`), and names the hosts trusted enough that untrusted input
//! alone does not make a call to them ask. Labels are parsed strictly: an unknown one is an
//! error, never a lower level.
//!
//! A path's label covers everything beneath it, and follows the bytes: a file that shares its
//! inode with a labelled file (a hard link, made by Bosun or not) carries that file's label as
//! a source and as a sink. A program is judged by what it can do rather than by what it names:
//! it reads the whole workspace, so its output carries the highest label of the workspace's
//! labelled files, and it writes wherever the sandbox lets it (the workspace's unlabelled paths
//! are `PUBLIC`), so starting one while it could hold data above `PUBLIC` is a write-down.
//! This module only reads the file system (metadata and listings, never a file's content).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use bosun_core::{
    Capability, CapabilityRequest, Classification, Decision, Explanation, Layer, MatchedRule,
};
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::session::{ModelSink, Session};

/// `[classification]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClassificationConfig {
    /// What a write-down does: `ask` (default) or `deny`.
    #[serde(default)]
    pub write_down: Option<String>,
    /// Labelled paths of the workspace.
    #[serde(default)]
    pub paths: Vec<PathLabel>,
    /// Labelled hosts (every other host is `PUBLIC`).
    #[serde(default)]
    pub hosts: Vec<HostLabel>,
    /// Hosts a session with untrusted input may still reach without asking (unless it also
    /// holds data above `PUBLIC`).
    #[serde(default)]
    pub trusted_hosts: Vec<String>,
}

/// `[[classification.paths]]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PathLabel {
    /// A glob over workspace-relative paths, e.g. `secrets/**`.
    pub glob: String,
    /// Its level.
    #[serde(default)]
    pub level: Option<Classification>,
    /// Whether what is read from it is untrusted input (say, files downloaded from elsewhere).
    #[serde(default)]
    pub untrusted: bool,
}

/// `[[classification.hosts]]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HostLabel {
    /// The host, exactly (case-insensitive).
    pub host: String,
    /// Its level as a sink.
    pub level: Classification,
}

impl ClassificationConfig {
    /// Checks the table; the error names the field and the fix.
    ///
    /// # Errors
    /// A bad glob, an unknown `write_down`, an empty host.
    pub fn check(&self) -> Result<(), ClassificationError> {
        match self.write_down.as_deref() {
            None | Some("ask" | "deny") => {}
            Some(other) => return Err(ClassificationError::WriteDown(other.to_owned())),
        }
        for label in &self.paths {
            Glob::new(&label.glob).map_err(|e| ClassificationError::Glob {
                glob: label.glob.clone(),
                message: e.to_string(),
            })?;
            if label.level.is_none() && !label.untrusted {
                return Err(ClassificationError::SaysNothing(label.glob.clone()));
            }
        }
        for host in self
            .hosts
            .iter()
            .map(|h| &h.host)
            .chain(&self.trusted_hosts)
        {
            if host.trim().is_empty() || host.contains(['/', ' ']) {
                return Err(ClassificationError::Host(host.clone()));
            }
        }
        Ok(())
    }
}

/// Why a `[classification]` table cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassificationError {
    /// `write_down` is neither `ask` nor `deny`.
    #[error("write_down = \"{0}\": use \"ask\" or \"deny\"")]
    WriteDown(String),
    /// A path glob that does not compile.
    #[error("paths: `{glob}` is not a glob: {message}")]
    Glob {
        /// The glob.
        glob: String,
        /// Why it does not compile.
        message: String,
    },
    /// A path label with neither a level nor `untrusted`.
    #[error("paths: `{0}` says nothing: give it a level, untrusted = true, or both")]
    SaysNothing(String),
    /// A host entry that is not a host name.
    #[error("`{0}` is not a host name")]
    Host(String),
}

/// Most entries one survey of the workspace's labelled paths looks at. A survey cut short
/// answers with the highest configured level (fail closed), never with "nothing found".
pub const MAX_SURVEY_ENTRIES: usize = 50_000;

/// One compiled `[[classification.paths]]` entry.
#[derive(Debug, Clone)]
struct Label {
    set: GlobSet,
    level: Option<Classification>,
    untrusted: bool,
    /// The leading components of the glob that hold no glob syntax: every path it matches
    /// lies at or beneath this one (`secrets/**` → `secrets`; `**/*.pem` → the root, ``).
    prefix: String,
}

fn compile_paths(labels: &[PathLabel]) -> Vec<Label> {
    labels
        .iter()
        .filter_map(|label| {
            let mut set = GlobSetBuilder::new();
            set.add(Glob::new(&label.glob).ok()?);
            Some(Label {
                set: set.build().ok()?,
                level: label.level,
                untrusted: label.untrusted,
                prefix: literal_prefix(&label.glob),
            })
        })
        .collect()
}

/// The directory every match of `glob` lies at or beneath (see [`Label::prefix`]).
fn literal_prefix(glob: &str) -> String {
    // A label covers what lies beneath what it matches, so a literal last component (`secrets`,
    // `config/key.pem`) is a prefix too.
    glob.split('/')
        .take_while(|c| {
            !c.is_empty() && *c != "." && *c != ".." && !c.contains(['*', '?', '[', '{', '\\'])
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The label of `path` under `labels`: the highest level of the globs that match it or any
/// directory above it (a label on `secrets` covers `secrets/key.pem`), and whether any of
/// them marks it untrusted.
fn label_of(labels: &[Label], path: &str) -> (Option<Classification>, bool) {
    let mut level = None;
    let mut untrusted = false;
    let mut at = path;
    loop {
        for label in labels {
            if label.set.is_match(at) {
                level = level.max(label.level);
                untrusted |= label.untrusted;
            }
        }
        match at.rsplit_once('/') {
            Some((parent, _)) if !parent.is_empty() => at = parent,
            _ => break,
        }
    }
    (level, untrusted)
}

/// A labelled file as its inode carries it to every other name it has.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inode {
    /// The highest source label among its labelled names.
    source: Option<Classification>,
    /// Whether one of them is labelled untrusted.
    untrusted: bool,
    /// The lowest sink label (the user's labels) among its labelled names.
    sink: Option<Classification>,
    /// One labelled name, for the explanation.
    path: String,
}

/// What one walk of the workspace's labelled paths found.
#[derive(Debug, Default)]
struct Survey {
    /// The highest source level of a labelled regular file that exists, with its path.
    present: Option<(Classification, String)>,
    /// Every labelled regular file, by `(device, inode)`.
    inodes: HashMap<(u64, u64), Inode>,
    /// False when the walk stopped at [`MAX_SURVEY_ENTRIES`] or met a directory it could not
    /// list: what it did not see may be labelled.
    complete: bool,
}

/// What the flow checks of one call look at.
#[derive(Debug, Clone, Copy)]
pub struct Reach<'a> {
    /// The call's capabilities, scoped.
    pub capabilities: &'a [CapabilityRequest],
    /// The level of where the tool itself sends its input (an MCP server, a Triggerfish
    /// plugin), if it does.
    pub sink: Option<Classification>,
    /// The tool runs a program of its own that no `process.spawn` of the call stands for (a
    /// stdio MCP server's tool, any tool of risk `process`): judged as starting one.
    pub own_process: bool,
    /// The workspace root, to look at labelled files (their inodes, whether any exists);
    /// `None` judges by paths alone.
    pub root: Option<&'a Path>,
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub struct Flow {
    write_down: Decision,
    paths: Vec<Label>,
    /// A project's labels: they raise what is read and mark it untrusted, and are never sinks
    /// (a project raising a path's sink level would let more data be written there).
    source_paths: Vec<Label>,
    hosts: Vec<(String, Classification)>,
    trusted_hosts: Vec<String>,
    /// Most entries a survey looks at ([`MAX_SURVEY_ENTRIES`]; smaller in tests).
    survey_limit: usize,
}

impl Default for Flow {
    fn default() -> Flow {
        Flow {
            write_down: Decision::Ask,
            paths: Vec::new(),
            source_paths: Vec::new(),
            hosts: Vec::new(),
            trusted_hosts: Vec::new(),
            survey_limit: MAX_SURVEY_ENTRIES,
        }
    }
}

impl Flow {
    /// Compiles a checked table (a glob that does not compile is left out).
    pub fn new(config: &ClassificationConfig) -> Flow {
        let paths = compile_paths(&config.paths);
        Flow {
            source_paths: Vec::new(),
            write_down: if config.write_down.as_deref() == Some("deny") {
                Decision::Deny
            } else {
                Decision::Ask
            },
            paths,
            hosts: config
                .hosts
                .iter()
                .map(|h| (h.host.to_ascii_lowercase(), h.level))
                .collect(),
            trusted_hosts: config
                .trusted_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            survey_limit: MAX_SURVEY_ENTRIES,
        }
    }

    /// Adds a project's path labels as sources only: reading a labelled path raises the
    /// session's level or marks untrusted input; writing to it is judged by the user's labels.
    #[must_use]
    pub fn with_project_sources(mut self, labels: &[PathLabel]) -> Flow {
        self.source_paths = compile_paths(labels);
        self
    }

    /// A path's label as a sink: the user's labels only.
    fn path_label(&self, path: &str) -> (Option<Classification>, bool) {
        label_of(&self.paths, path)
    }

    /// A path's label as a source: the user's and the project's.
    fn source_label(&self, path: &str) -> (Option<Classification>, bool) {
        let (level, untrusted) = label_of(&self.paths, path);
        let (project, marks) = label_of(&self.source_paths, path);
        (level.max(project), untrusted || marks)
    }

    fn host_level(&self, host: &str) -> Classification {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.hosts
            .iter()
            .filter(|(h, _)| *h == host)
            .map(|(_, level)| *level)
            .max()
            .unwrap_or(Classification::Public)
    }

    fn trusted_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.trusted_hosts.contains(&host)
    }

    /// The highest level any source label (the user's or the project's) gives.
    fn highest_configured(&self) -> Option<Classification> {
        self.paths
            .iter()
            .chain(&self.source_paths)
            .filter_map(|label| label.level)
            .max()
    }

    /// Walks every labelled path of the workspace at `root` (each label's literal prefix, once),
    /// never following a symbolic link (its target is surveyed under its own name, or lies
    /// outside the workspace and is labelled nowhere). With `stop_at`, stops at the first
    /// labelled file of at least that level.
    fn survey(&self, root: &Path, stop_at: Option<Classification>) -> Survey {
        let mut starts: Vec<&str> = self
            .paths
            .iter()
            .chain(&self.source_paths)
            .map(|label| label.prefix.as_str())
            .collect();
        starts.sort_unstable();
        starts.dedup();
        let mut stack: Vec<String> = starts
            .iter()
            .filter(|start| {
                !starts.iter().any(|other| {
                    other != *start && (other.is_empty() || start.starts_with(&format!("{other}/")))
                })
            })
            .map(|start| (*start).to_owned())
            .collect();
        let mut survey = Survey {
            complete: true,
            ..Survey::default()
        };
        let mut seen = 0usize;
        while let Some(rel) = stack.pop() {
            if seen == self.survey_limit {
                survey.complete = false;
                break;
            }
            seen += 1;
            let abs = if rel.is_empty() {
                root.to_path_buf()
            } else {
                root.join(&rel)
            };
            let Ok(meta) = std::fs::symlink_metadata(&abs) else {
                continue;
            };
            if meta.is_dir() {
                match std::fs::read_dir(&abs) {
                    Ok(entries) => stack.extend(entries.flatten().map(|entry| {
                        let name = entry.file_name();
                        let name = name.to_string_lossy();
                        if rel.is_empty() {
                            name.into_owned()
                        } else {
                            format!("{rel}/{name}")
                        }
                    })),
                    Err(_) => survey.complete = false,
                }
                continue;
            }
            if !meta.is_file() {
                continue;
            }
            let (source, untrusted) = self.source_label(&rel);
            let (sink, _) = self.path_label(&rel);
            if source.is_none() && !untrusted && sink.is_none() {
                continue;
            }
            if let Some(level) = source
                && survey.present.as_ref().is_none_or(|(at, _)| level > *at)
            {
                survey.present = Some((level, rel.clone()));
            }
            let inode = survey
                .inodes
                .entry((meta.dev(), meta.ino()))
                .or_insert_with(|| Inode {
                    source: None,
                    untrusted: false,
                    sink,
                    path: rel.clone(),
                });
            inode.source = inode.source.max(source);
            inode.untrusted |= untrusted;
            inode.sink = match (inode.sink, sink) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if stop_at.is_some_and(|stop| source >= Some(stop)) {
                break;
            }
        }
        survey
    }

    /// The highest level a program started in the workspace at `root` could read there, when
    /// it is above `above`: that of the labelled files that exist, with one of them named, or
    /// — when the workspace is too large to survey or a directory cannot be listed — the
    /// highest level configured.
    pub fn workspace_level(
        &self,
        root: &Path,
        above: Classification,
    ) -> Option<(Classification, String)> {
        let highest = self.highest_configured().filter(|level| *level > above)?;
        let survey = self.survey(root, Some(highest));
        match survey.present {
            Some((level, path)) if level > above => Some((level, path)),
            _ if !survey.complete => Some((
                highest,
                format!(
                    "a workspace Bosun could not survey whole (over {MAX_SURVEY_ENTRIES} entries under labelled paths, or a directory it cannot list)"
                ),
            )),
            _ => None,
        }
    }

    /// The labels the file at `path` (workspace-relative) gets from the other names of its
    /// inode, when it has more than one: a hard link carries the labelled file's label. A file
    /// with several names none of which a complete survey found labelled gets nothing; when the
    /// survey was cut short it gets the highest configured level (fail closed). `survey` keeps
    /// the walk for the next file of the same call: one walk however many files it read.
    fn shared_inode(&self, root: &Path, path: &str, survey: &mut Option<Survey>) -> Option<Inode> {
        let meta = std::fs::symlink_metadata(root.join(path)).ok()?;
        if !meta.is_file() || meta.nlink() < 2 {
            return None;
        }
        let survey = survey.get_or_insert_with(|| self.survey(root, None));
        match survey.inodes.get(&(meta.dev(), meta.ino())) {
            Some(inode) => Some(inode.clone()),
            None if !survey.complete => Some(Inode {
                source: self.highest_configured(),
                untrusted: false,
                sink: None,
                path: "a labelled file Bosun could not survey".to_owned(),
            }),
            None => None,
        }
    }

    /// The sink label of `path` for a write: its own (the user's labels), lowered by that of
    /// every labelled name it shares its inode with (writing one name writes them all).
    fn sink_label(&self, root: Option<&Path>, path: &str) -> Option<Classification> {
        let (own, _) = self.path_label(path);
        let shared = root
            .and_then(|root| self.shared_inode(root, path, &mut None))
            .and_then(|inode| inode.sink);
        match (own, shared) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The flow checks of a call about to run, judged by paths alone (see [`Flow::judge`]).
    pub fn checks(
        &self,
        capabilities: &[CapabilityRequest],
        sink: Option<Classification>,
        session: &Session,
    ) -> Vec<MatchedRule> {
        self.judge(
            &Reach {
                capabilities,
                sink,
                own_process: false,
                root: None,
            },
            session,
        )
    }

    /// The flow checks of a call about to run: one entry per capability that breaks a rule.
    pub fn judge(&self, reach: &Reach<'_>, session: &Session) -> Vec<MatchedRule> {
        let level = session.taint();
        let secret = level > Classification::Public;
        let starts_process = reach.own_process
            || reach
                .capabilities
                .iter()
                .any(|r| r.capability == Capability::ProcessSpawn);
        // What a program could read in the workspace beyond what the session holds.
        let readable = match reach.root {
            Some(root) if starts_process => self.workspace_level(root, level),
            _ => None,
        };
        // A session that has seen neither data above PUBLIC nor untrusted input, and starts no
        // program that could read more, breaks no flow rule. Without labelled paths that costs
        // two uncontended locks; with them, a call that starts a program surveys them first.
        if !secret && !session.is_untrusted() && readable.is_none() {
            return Vec::new();
        }
        let untrusted = session.untrusted_source();
        let mut checks = Vec::new();
        let origin = session
            .taint_source()
            .map(|s| format!(" (from {s})"))
            .unwrap_or_default();
        let write_down = |subject: String, to: Classification| MatchedRule {
            subject,
            layer: Layer::Flow,
            rule: format!(
                "write-down: the session holds {level} data{origin} and this sink is {to}"
            ),
            source: Some("[classification]".to_owned()),
            decision: self.write_down,
        };
        // A program reads the workspace and writes wherever the sandbox lets it: the
        // workspace's unlabelled paths (PUBLIC), its private TMPDIR, `[sandbox] write`, the
        // hosts granted. What it could hold is the session's data and the workspace's.
        let process_down = |subject: String| {
            let holds = match &readable {
                Some((at, path)) if *at > level => format!(
                    "a program started here can read {at} data ({path}{})",
                    if secret {
                        format!("; the session holds {level} data{origin}")
                    } else {
                        String::new()
                    }
                ),
                _ => format!("the session holds {level} data{origin}"),
            };
            MatchedRule {
                subject,
                layer: Layer::Flow,
                rule: format!(
                    "write-down: {holds}, and a program can write it anywhere the sandbox lets it — the workspace's unlabelled paths are PUBLIC, and Bosun cannot see what it writes"
                ),
                source: Some("[classification]".to_owned()),
                decision: self.write_down,
            }
        };
        if let Some(to) = reach.sink
            && to < level
        {
            checks.push(write_down("the tool's server".to_owned(), to));
        }
        if reach.own_process {
            let subject = "the tool's own program".to_owned();
            // A tool that sends to a labelled sink (an MCP server) is judged at that sink's
            // level: the user labelled where its program may put data.
            if reach.sink.is_none() && (secret || readable.is_some()) {
                checks.push(process_down(subject.clone()));
            }
            if let Some(source) = &untrusted {
                checks.push(untrusted_rule(subject, source));
            }
        }
        for request in reach.capabilities {
            let subject = subject_of(request);
            match request.capability {
                Capability::NetHttp => {
                    let host = request
                        .scope
                        .as_authority()
                        .map(|a| a.host)
                        .unwrap_or_default();
                    let to = self.host_level(&host);
                    if to < level {
                        checks.push(write_down(subject.clone(), to));
                    } else if let Some(source) = &untrusted {
                        if secret {
                            checks.push(MatchedRule {
                                subject: subject.clone(),
                                layer: Layer::Flow,
                                rule: format!(
                                    "the session holds {level} data{origin} and untrusted input (from {source}): every way out needs a person"
                                ),
                                source: Some("[classification]".to_owned()),
                                decision: Decision::Ask,
                            });
                        } else if !self.trusted_host(&host) {
                            checks.push(untrusted_rule(subject.clone(), source));
                        }
                    }
                }
                Capability::FsWrite => {
                    let path = request.scope.path.as_deref().unwrap_or(".");
                    if secret
                        && let Some(to) = self.sink_label(reach.root, path)
                        && to < level
                    {
                        checks.push(write_down(subject.clone(), to));
                    }
                    if let Some(source) = &untrusted
                        && bosun_policy::is_protected(path)
                    {
                        checks.push(untrusted_rule(subject.clone(), source));
                    }
                }
                Capability::ProcessSpawn => {
                    if secret || readable.is_some() {
                        checks.push(process_down(subject.clone()));
                    }
                    if let Some(source) = &untrusted {
                        checks.push(untrusted_rule(subject.clone(), source));
                    }
                }
                _ => {}
            }
        }
        checks
    }

    /// Write-down to the session's model: each path the call names to read whose label —
    /// known before it runs — is above what `model` may be sent. Its result would go to the
    /// model, so the call asks like any sink below the data (or is denied with
    /// `write_down = "deny"`). Returns each check with the level it reads.
    pub fn model_write_down(
        &self,
        root: Option<&Path>,
        capabilities: &[CapabilityRequest],
        model: &ModelSink,
    ) -> Vec<(MatchedRule, Classification)> {
        capabilities
            .iter()
            .filter(|r| r.capability == Capability::FsRead)
            .filter_map(|request| {
                let level = self
                    .read_levels(root, std::slice::from_ref(request), &[])
                    .level?;
                (level > model.allowed).then(|| {
                    let rule = MatchedRule {
                        subject: subject_of(request),
                        layer: Layer::Flow,
                        rule: format!(
                            "write-down: this reads {level} data, and its result goes to the model {}, which may be sent {} at most",
                            model.name, model.allowed
                        ),
                        source: Some(format!("[models.{}] classification", model.name)),
                        decision: self.write_down,
                    };
                    (rule, level)
                })
            })
            .collect()
    }

    /// What a finished call brought into the session: the level of the data it read (the
    /// highest label of its `fs.read` paths and of the `files` whose content it returned
    /// beyond them, and of every labelled name each shares its inode with when `root` is
    /// given) and whether that was untrusted.
    pub fn read_levels(
        &self,
        root: Option<&Path>,
        capabilities: &[CapabilityRequest],
        files: &[String],
    ) -> Read {
        let mut read = Read::default();
        let mut survey = None;
        let named = capabilities
            .iter()
            .filter(|r| r.capability == Capability::FsRead)
            .map(|r| (r.scope.path.as_deref().unwrap_or("."), false));
        let returned = files.iter().map(|path| (path.as_str(), true));
        for (path, returned) in named.chain(returned) {
            let (mut level, marks) = self.source_label(path);
            let mut raised_by = path.to_owned();
            let mut untrusted = marks.then(|| format!("the file {path}"));
            if let Some(inode) = root.and_then(|root| self.shared_inode(root, path, &mut survey)) {
                if inode.source > level {
                    level = inode.source;
                    raised_by = format!("{path}, a hard link of {}", inode.path);
                }
                if inode.untrusted && untrusted.is_none() {
                    untrusted = Some(format!("the file {path}, a hard link of {}", inode.path));
                }
            }
            if level > read.level {
                read.level = level;
                read.file = returned.then_some(raised_by);
            }
            if read.untrusted.is_none() {
                read.untrusted = untrusted;
            }
        }
        read
    }
}

/// What a finished call brought into the session ([`Flow::read_levels`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Read {
    /// The highest label of what it read.
    pub level: Option<Classification>,
    /// Where the untrusted input it read came from, if it read any.
    pub untrusted: Option<String>,
    /// The file the tool returned content of that gave `level`, when no path the call named
    /// gave as much: what the trace names as having raised the session.
    pub file: Option<String>,
}

fn untrusted_rule(subject: String, source: &str) -> MatchedRule {
    MatchedRule {
        subject,
        layer: Layer::Flow,
        rule: format!(
            "the session has read untrusted input (from {source}): this acts in the world, so a person decides"
        ),
        source: Some("integrity".to_owned()),
        decision: Decision::Ask,
    }
}

fn subject_of(request: &CapabilityRequest) -> String {
    let action = request.capability.as_action();
    match (
        &request.scope.path,
        &request.scope.program,
        request.scope.as_authority(),
    ) {
        (Some(path), _, _) => format!("{action}:{path}"),
        (_, Some(program), _) => format!("{action}:{program}"),
        (_, _, Some(authority)) => format!("{action}:{}", authority.host),
        _ => action,
    }
}

/// Adds `check` to `explanation`; when it is stricter than the decision so far, it decides.
pub fn tighten(explanation: &mut Explanation, check: MatchedRule) {
    let decision = check.decision;
    explanation.checks.push(check);
    if decision > explanation.decision {
        explanation.decision = decision;
        explanation.deciding = explanation.checks.len() - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_labels_prefix_is_its_leading_literal_components() {
        for (glob, prefix) in [
            ("secrets/**", "secrets"),
            ("secrets", "secrets"),
            ("config/prod/key.pem", "config/prod/key.pem"),
            ("a/b*/c", "a"),
            ("**/*.pem", ""),
            ("*.pem", ""),
            ("{a,b}/x", ""),
            ("./secrets/**", ""),
            ("../x/**", ""),
            ("/abs/**", ""),
            ("a/[bc]/x", "a"),
        ] {
            assert_eq!(literal_prefix(glob), prefix, "{glob}");
        }
    }

    fn flow(labels: &str) -> Flow {
        let config: ClassificationConfig = toml::from_str(labels).unwrap();
        config.check().unwrap();
        Flow::new(&config)
    }

    #[test]
    fn a_survey_cut_short_answers_with_the_highest_configured_level() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        // Labels that can match anywhere: the whole workspace is walked.
        let mut flow = flow("[[paths]]\nglob = \"**/*.pem\"\nlevel = \"CONFIDENTIAL\"\n");
        for i in 0..40 {
            std::fs::write(root.join(format!("junk{i}.txt")), "x").unwrap();
        }
        assert_eq!(flow.workspace_level(root, Classification::Public), None);
        flow.survey_limit = 10;
        let (level, why) = flow.workspace_level(root, Classification::Public).unwrap();
        assert_eq!(level, Classification::Confidential);
        assert!(why.contains("could not survey"), "{why}");
        // A hard link whose labelled name the survey could not reach: fail closed as well.
        std::fs::write(root.join("a.txt"), "x").unwrap();
        std::fs::hard_link(root.join("a.txt"), root.join("b.txt")).unwrap();
        let read_a = [CapabilityRequest {
            capability: Capability::FsRead,
            scope: bosun_core::Scope {
                path: Some("a.txt".into()),
                ..bosun_core::Scope::default()
            },
        }];
        let read = flow.read_levels(Some(root), &read_a, &[]);
        assert_eq!(read.level, Some(Classification::Confidential));
        flow.survey_limit = MAX_SURVEY_ENTRIES;
        let read = flow.read_levels(Some(root), &read_a, &[]);
        assert_eq!(read.level, None);
    }

    #[test]
    fn a_survey_does_not_follow_links_and_finds_labelled_files_at_depth() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let flow = flow("[[paths]]\nglob = \"vault\"\nlevel = \"RESTRICTED\"\n");
        // A link named like the label, pointing at nothing labelled, is not data.
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        std::fs::write(root.join("elsewhere/x"), "x").unwrap();
        std::os::unix::fs::symlink("elsewhere", root.join("vault")).unwrap();
        assert_eq!(flow.workspace_level(root, Classification::Public), None);
        std::fs::remove_file(root.join("vault")).unwrap();
        std::fs::create_dir_all(root.join("vault/a/b/c/d")).unwrap();
        assert_eq!(flow.workspace_level(root, Classification::Public), None);
        std::fs::write(root.join("vault/a/b/c/d/key"), "k").unwrap();
        let (level, path) = flow.workspace_level(root, Classification::Public).unwrap();
        assert_eq!(level, Classification::Restricted);
        assert_eq!(path, "vault/a/b/c/d/key");
        // Nothing above what the session already holds.
        assert_eq!(flow.workspace_level(root, Classification::Restricted), None);
    }
}
