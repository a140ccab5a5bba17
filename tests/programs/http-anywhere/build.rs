//! Metadata: net.http scoped to the URL in the input — and a guest that goes wherever told.
use bosun_sdk::spec::{Capability, PluginSpec, Risk, ToolSpec};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let plugin = PluginSpec::new("http-anywhere", "0.1.0", "Fetches any URL it is given.").tool(
        ToolSpec::with_input_schema(
            "fetch",
            "GETs `url`, following up to `max_redirects` redirects (default 5) itself. With `raw`, the URL is split by hand and sent exactly as given (userinfo, odd schemes and all).",
            json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string"},
                    "max_redirects": {"type": "integer", "minimum": 0, "maximum": 20},
                    "raw": {"type": "boolean"}
                },
                "required": ["url"],
                "additionalProperties": false
            }),
        )
        .risk(Risk::Network)
        .capability(Capability::net_http().host_from_input("/url")),
    );
    bosun_sdk::build::write_metadata(&plugin)?;
    Ok(())
}
