//! What `fs-stats` declares: one read-only tool over the workspace. `fs.read` with
//! `path_from_input: "/path"` makes policy judge `fs.read:<path>` on each call (the workspace
//! root `.` when `path` is absent), and the sandbox preopens the workspace read-only at
//! `/workspace`.

use bosun_sdk::spec::{Capability, PluginSpec, Risk, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;

/// The `fs_stats` tool's name.
pub const FS_STATS: &str = "fs_stats";

/// Input of `fs_stats`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FsStatsInput {
    /// A directory relative to the workspace root, e.g. `src`; the whole workspace when absent.
    pub path: Option<String>,
}

/// The plugin as its metadata declares it.
pub fn plugin() -> PluginSpec {
    bosun_sdk::plugin_spec!().tool(
        ToolSpec::new::<FsStatsInput>(
            FS_STATS,
            "Counts files, directories and bytes under a workspace directory (the whole \
             workspace by default), with files and bytes per file extension. Symbolic links are \
             counted, never followed.",
        )
        .risk(Risk::Read)
        .capability(Capability::fs_read().path_from_input("/path")),
    )
}
