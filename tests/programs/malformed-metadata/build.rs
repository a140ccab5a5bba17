//! Metadata: a section that is not JSON at all (cut off mid-document).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    bosun_sdk::build::write_metadata_raw(
        r#"{"metadata_version": 1, "api_version": "1.0.0", "name": "malformed-metadata", "tools": [{"name": "noop""#,
    )?;
    Ok(())
}
