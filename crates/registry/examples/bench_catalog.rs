//! Lays out a signed catalog of N plugins for `benches/registry.py`: a key from a fixed seed,
//! `init`, then every entry added and signed once (`publish::add_all`). Prints the root key id.
//!
//! Usage: `cargo run --release -p bosun-registry --example bench_catalog -- DIR N`

use std::path::PathBuf;

use bosun_registry::key::PrivateKey;
use bosun_registry::publish::{Expiry, Signing, add_all, init};
use bosun_registry::{ArtifactKind, Claims};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(count)) = (args.next(), args.next()) else {
        return Err("usage: bench_catalog DIR N".into());
    };
    let dir = PathBuf::from(dir);
    let count: usize = count.parse()?;
    let key = PrivateKey::from_seed([42; 32]);
    let signing = Signing {
        key: &key,
        now: chrono::Utc::now(),
        expiry: Expiry::default(),
    };
    init(&dir, &signing)?;
    let files: Vec<(Claims, String)> = (0..count)
        .map(|i| {
            let name = format!("p{i}");
            let version = format!("1.{}.0", i % 7);
            let text = format!(
                "export const manifest = {{ name: \"{name}\", version: \"{version}\", description: \"Plugin number {i} for benchmarks\", classification: \"PUBLIC\", trust: \"sandboxed\", declaredEndpoints: [] }};\nexport async function activate(ctx) {{}}\n"
            );
            let claims = Claims {
                name,
                version,
                description: format!("Plugin number {i} for benchmarks"),
                tags: vec!["bench".to_owned()],
                format: Some("triggerfish".to_owned()),
                classification: Some("PUBLIC".to_owned()),
                trust: Some("sandboxed".to_owned()),
                ..Claims::default()
            };
            (claims, text)
        })
        .collect();
    let items = files
        .iter()
        .map(|(claims, text)| (claims.clone(), "mod.ts", text.as_bytes()))
        .collect();
    add_all(&dir, ArtifactKind::Plugin, items, &signing)?;
    println!("{}", key.public().keyid());
    Ok(())
}
