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

use bosun_core::{
    Capability, CapabilityRequest, Classification, Decision, Explanation, Layer, MatchedRule,
};
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::session::Session;

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
    pub fn check(&self) -> Result<(), String> {
        match self.write_down.as_deref() {
            None | Some("ask" | "deny") => {}
            Some(other) => {
                return Err(format!("write_down = \"{other}\": use \"ask\" or \"deny\""));
            }
        }
        for label in &self.paths {
            Glob::new(&label.glob)
                .map_err(|e| format!("paths: `{}` is not a glob: {e}", label.glob))?;
            if label.level.is_none() && !label.untrusted {
                return Err(format!(
                    "paths: `{}` says nothing: give it a level, untrusted = true, or both",
                    label.glob
                ));
            }
        }
        for host in self
            .hosts
            .iter()
            .map(|h| &h.host)
            .chain(&self.trusted_hosts)
        {
            if host.trim().is_empty() || host.contains(['/', ' ']) {
                return Err(format!("`{host}` is not a host name"));
            }
        }
        Ok(())
    }
}

fn compile_paths(labels: &[PathLabel]) -> Vec<(GlobSet, Option<Classification>, bool)> {
    labels
        .iter()
        .filter_map(|label| {
            let mut set = GlobSetBuilder::new();
            set.add(Glob::new(&label.glob).ok()?);
            Some((set.build().ok()?, label.level, label.untrusted))
        })
        .collect()
}

fn label_of(
    paths: &[(GlobSet, Option<Classification>, bool)],
    path: &str,
) -> (Option<Classification>, bool) {
    let mut level = None;
    let mut untrusted = false;
    for (set, label, marks) in paths {
        if set.is_match(path) {
            level = level.max(*label);
            untrusted |= *marks;
        }
    }
    (level, untrusted)
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub struct Flow {
    write_down: Decision,
    paths: Vec<(GlobSet, Option<Classification>, bool)>,
    /// A project's labels: they raise what is read and mark it untrusted, and are never sinks
    /// (a project raising a path's sink level would let more data be written there).
    source_paths: Vec<(GlobSet, Option<Classification>, bool)>,
    hosts: Vec<(String, Classification)>,
    trusted_hosts: Vec<String>,
}

impl Default for Flow {
    fn default() -> Flow {
        Flow {
            write_down: Decision::Ask,
            paths: Vec::new(),
            source_paths: Vec::new(),
            hosts: Vec::new(),
            trusted_hosts: Vec::new(),
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

    /// The flow checks of a call about to run: one entry per capability that breaks a rule.
    /// `sink` is the level of where the tool itself sends its input (an MCP server), if it
    /// does.
    pub fn checks(
        &self,
        capabilities: &[CapabilityRequest],
        sink: Option<Classification>,
        session: &Session,
    ) -> Vec<MatchedRule> {
        let level = session.taint();
        let secret = level > Classification::Public;
        // The common case costs two uncontended locks and nothing else: a session that has
        // seen neither data above PUBLIC nor untrusted input breaks no flow rule.
        if !secret && !session.is_untrusted() {
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
        if let Some(to) = sink
            && to < level
        {
            checks.push(write_down("the tool's server".to_owned(), to));
        }
        for request in capabilities {
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
                    if let (Some(to), _) = self.path_label(path)
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
                    if let Some(source) = &untrusted {
                        checks.push(untrusted_rule(subject.clone(), source));
                    }
                }
                _ => {}
            }
        }
        checks
    }

    /// What a finished call brought into the session: the level of the data it read (the
    /// highest path label of its `fs.read` capabilities) and whether that was untrusted.
    pub fn read_levels(
        &self,
        capabilities: &[CapabilityRequest],
    ) -> (Option<Classification>, Option<String>) {
        let mut level = None;
        let mut untrusted = None;
        for request in capabilities
            .iter()
            .filter(|r| r.capability == Capability::FsRead)
        {
            let path = request.scope.path.as_deref().unwrap_or(".");
            let (label, marks) = self.source_label(path);
            level = level.max(label);
            if marks && untrusted.is_none() {
                untrusted = Some(format!("the file {path}"));
            }
        }
        (level, untrusted)
    }
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
