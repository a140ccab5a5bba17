//! Writes the plugin's metadata, declared in src/spec.rs, for `bosun_sdk::export!` to embed.

#[path = "src/spec.rs"]
#[allow(dead_code)]
mod spec;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    bosun_sdk::build::write_metadata(&spec::plugin())?;
    Ok(())
}
