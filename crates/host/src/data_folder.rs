//! A Claude Code plugin's data folder as the sessions see it. Its hooks and MCP servers all
//! write the folder, and it outlives sessions and processes, so it carries a label
//! ([`bosun_claude::data_label`]): before one of the plugin's processes is handed a session's
//! data the label rises to the session's labels, and whatever a process says that a session
//! reads carries the label as it is then. It never lowers a label; a label that cannot be read
//! or written counts as the most sensitive data and untrusted input (fail closed).

use std::path::Path;

use bosun_claude::data_label::{self, DataLabel};
use bosun_core::Classification;

use crate::labels::{InstanceLabel, Producer, SessionLabels};

/// The label of the data folder of the plugin `plugin`, kept at `path`, after it took in
/// `from` — the labels of the session whose data one of its processes is about to get (`None`
/// when it gets none): what the process's words carry.
pub fn meet(path: &Path, plugin: &str, from: Option<&SessionLabels>) -> SessionLabels {
    let kept = match from.filter(|from| from.is_marked()) {
        Some(from) => data_label::raise(
            path,
            &DataLabel {
                level: from.level,
                untrusted: from.untrusted.clone(),
            },
        ),
        None => data_label::read(path),
    };
    match kept {
        Ok(label) => SessionLabels {
            level: label.level,
            untrusted: label.untrusted,
        },
        Err(e) => SessionLabels {
            level: Classification::Restricted,
            untrusted: Some(format!(
                "the data folder of the Claude Code plugin `{plugin}`, whose label could not be \
                 kept ({e})"
            )),
        },
    }
}

/// Records in `carried` that words a session reads came from the data folder of `plugin`
/// labelled `label`.
pub fn told(carried: &InstanceLabel, plugin: &str, label: &SessionLabels) {
    carried.record_from(Producer::DataFolder(plugin.to_owned()), label);
}
