//! Hostile: its `bosun-plugin-metadata` section is truncated JSON. Listing must report the
//! plugin as broken, with where the JSON breaks, and never run it.

use bosun_sdk::{NoInput, Plugin, ToolError, Tools};

#[derive(Default)]
struct MalformedMetadata;

impl Plugin for MalformedMetadata {
    fn tools() -> Tools<Self> {
        Tools::new().tool("noop", noop)
    }
}

bosun_sdk::export!(MalformedMetadata);

fn noop(_: NoInput) -> Result<(), ToolError> {
    Ok(())
}
