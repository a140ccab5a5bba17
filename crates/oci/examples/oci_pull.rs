//! Pushes a Wasm component to a registry, or pulls one by digest the way an install does (the
//! manifest, config and layer, each verified; the layout checked; the binary written to a file).
//! The crate's side of `benches/oci_pull.py`; prints one JSON line.
//!
//! Usage: oci_pull push REGISTRY REPOSITORY:TAG FILE
//!        oci_pull pull REGISTRY REPOSITORY DIGEST OUTFILE

use std::time::Instant;

use bosun_oci::{Client, Digest, Repository, Tag, read_wasm_artifact, wasm_artifact};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: oci_pull push REGISTRY REPOSITORY:TAG FILE | pull REGISTRY REPOSITORY DIGEST OUTFILE";
    match args.as_slice() {
        [command, registry, target, file] if command == "push" => {
            let client = Client::builder(registry.parse()?).build()?;
            let (repository, tag) = target.rsplit_once(':').ok_or(usage)?;
            let repository: Repository = repository.parse()?;
            let tag: Tag = tag.parse()?;
            let wasm = std::fs::read(file)?;
            let title = std::path::Path::new(file)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("component.wasm");
            let artifact = wasm_artifact(wasm, title, Default::default())?;
            let started = Instant::now();
            let digest = client
                .push_artifact(&repository, &artifact, Some(&tag))
                .await?;
            println!(
                "{{\"digest\":\"{digest}\",\"seconds\":{}}}",
                started.elapsed().as_secs_f64()
            );
        }
        [command, registry, repository, digest, out] if command == "pull" => {
            let started = Instant::now();
            let client = Client::builder(registry.parse()?).build()?;
            let repository: Repository = repository.parse()?;
            let digest: Digest = digest.parse()?;
            let artifact = client.pull_artifact(&repository, &digest).await?;
            let package = read_wasm_artifact(&artifact)?;
            tokio::fs::write(out, &package.wasm).await?;
            println!(
                "{{\"bytes\":{},\"seconds\":{}}}",
                package.wasm.len(),
                started.elapsed().as_secs_f64()
            );
        }
        _ => return Err(usage.into()),
    }
    Ok(())
}
