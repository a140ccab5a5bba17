//! Writes Bosun's Chock `hello` fixture module (assembled from WebAssembly text) to the path
//! given as the first argument: `cargo run -p bosun-plugins --example chock_fixture -- out.wasm`.
//! Used by `benches/plugins.py`.

use bosun_plugins::chock::fixture::ChockFixture;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: chock_fixture OUT.wasm")?;
    let wasm = wat::parse_str(ChockFixture::hello(false).module_wat())?;
    std::fs::write(path, wasm)?;
    Ok(())
}
