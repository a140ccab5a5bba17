//! `/plugins search` and `/plugins install`: the registries from the terminal UI. A search is
//! the one `bosun plugins search` makes (`crate::registry::find`), each result labelled with
//! its source's trust (signed, or unsigned with the checksum from the same origin); it runs on
//! a worker (a cold catalog over HTTPS may take up to its timeout) and its lines arrive as an
//! [`AppEvent::SearchEnded`], so keys, runs and approvals go on meanwhile. An install
//! is one `plugin_install` call naming the registry, made through the chokepoint like the
//! person's `!cmd`: the plugin is fetched, verified, read and compared before the approval box
//! asks, with the trust review in it; a no leaves nothing.

use anyhow::{Result, bail};
use bosun_host::approval::sanitize_for_terminal;
use bosun_registry::{ArtifactKind, Requested};

use super::app::App;
use super::events::{AppEvent, PersonCommand, SearchEnd};
use super::transcript::Entry;
use crate::env::Env;

/// Splits `--from SOURCE` off `args`: the other words and the source; `None` when `--from` has
/// no source after it or comes twice.
pub(super) fn with_from<'a>(args: &[&'a str]) -> Option<(Vec<&'a str>, Option<String>)> {
    let mut words = Vec::new();
    let mut from = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if *arg == "--from" {
            let source = args.next()?;
            if from.replace((*source).to_owned()).is_some() {
                return None;
            }
        } else {
            words.push(*arg);
        }
    }
    Some((words, from))
}

/// `/plugins search QUERY [--from SOURCE]`.
pub(super) fn search(env: &Env, query: &str, from: Option<&str>) -> Result<String> {
    let (found, warnings) = crate::registry::find(env, ArtifactKind::Plugin, query, from)?;
    let mut lines: Vec<String> = found
        .iter()
        .map(|f| sanitize_for_terminal(&crate::registry::found_line(f)))
        .collect();
    if lines.is_empty() {
        lines.push(format!(
            "nothing matches `{}`",
            sanitize_for_terminal(query)
        ));
    } else {
        lines.push(
            "/plugins install NAME[@VERSION] --from SOURCE installs one after its review"
                .to_owned(),
        );
    }
    lines.extend(
        warnings
            .iter()
            .map(|w| format!("warning: {}", sanitize_for_terminal(w))),
    );
    Ok(lines.join("\n"))
}

impl App {
    /// `/plugins search QUERY [--from SOURCE]`: started on a worker; what to show meanwhile.
    pub(super) fn search_plugins(&mut self, query: String, from: Option<String>) -> String {
        let env = self.env.clone();
        let shown = format!(
            "/plugins search: looking for `{}` in the registries…",
            sanitize_for_terminal(&query)
        );
        self.searching += 1;
        self.engine.off_ui_thread(move || {
            let result = search(&env, &query, from.as_deref()).map_err(|e| format!("{e:#}"));
            AppEvent::SearchEnded(Box::new(SearchEnd { query, result }))
        });
        shown
    }

    /// A search's lines arrived.
    pub(super) fn search_ended(&mut self, end: SearchEnd) {
        self.searching = self.searching.saturating_sub(1);
        self.entries.push(match end.result {
            Ok(lines) => Entry::Notice(lines),
            Err(e) => Entry::Error(format!(
                "/plugins search `{}`: {}",
                sanitize_for_terminal(&end.query),
                sanitize_for_terminal(&e)
            )),
        });
    }

    /// `/plugins install NAME[@VERSION] [--from SOURCE]`: the source named, or the only one in
    /// effect; then one `plugin_install` call through the chokepoint.
    pub(super) fn install_plugin(&mut self, spec: &str, from: Option<&str>) -> Result<String> {
        let requested = Requested::parse(spec)?;
        let registries =
            bosun_host::plugin_runtime::install::registry::registries(&self.env.config)?;
        let names = registries.names();
        let registry = match from {
            Some(name) => name.to_owned(),
            None if names.len() == 1 => names.into_iter().next().unwrap_or_default(),
            None if names.is_empty() => bail!(
                "no registry is configured: add one to your config ([registries.<name>]; see docs/publishing.md)"
            ),
            None => bail!(
                "name the registry: /plugins install {spec} --from SOURCE (yours: {})",
                names.into_iter().collect::<Vec<_>>().join(", ")
            ),
        };
        let name = requested.name.clone();
        self.person_command(PersonCommand::Install {
            name: name.clone(),
            version: requested.version.as_ref().map(ToString::to_string),
            registry: registry.clone(),
        })?;
        Ok(format!(
            "/plugins install: fetching and verifying {name} from `{}`; you are asked with its review before anything is installed",
            sanitize_for_terminal(&registry)
        ))
    }
}
