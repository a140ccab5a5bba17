//! Metadata: an input schema of about 30 KiB, over the 8 KiB bound.
use bosun_sdk::spec::{PluginSpec, ToolSpec};
use serde_json::{Map, json};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut properties = Map::new();
    for i in 0..400 {
        properties.insert(
            format!("field_{i}"),
            json!({"type": "string", "description": "A field that only makes the schema larger."}),
        );
    }
    let schema = json!({"type": "object", "properties": properties});
    let plugin = PluginSpec::new("oversize-schema", "0.1.0", "Has a schema over the bound.").tool(
        ToolSpec::with_input_schema("big_input", "Takes a very large input schema.", schema),
    );
    bosun_sdk::build::write_metadata_unchecked(&plugin)?;
    Ok(())
}
