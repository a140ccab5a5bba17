//! Records the length and BLAKE3 digest of `data/icu4x.postcard`, the ICU4X data this crate
//! reads at its first `Intl` operation, so that a file other than the one it was built with
//! (another ICU4X version's, a damaged copy) is refused with a clear error instead of answering
//! wrongly.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let data = manifest.join("data").join("icu4x.postcard");
    println!("cargo:rerun-if-changed={}", data.display());
    let bytes = match std::fs::read(&data) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!(
                "error: reading {}: {e}\nThe file is part of Bosun's source; restore it with `git checkout -- crates/intl/data` or write it with `cargo run --release -p bosun-intl-datagen -- crates/intl/data/icu4x.postcard`",
                data.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        eprintln!("error: OUT_DIR is not set (run by cargo)");
        return ExitCode::FAILURE;
    };
    let digest = blake3::hash(&bytes);
    let written = std::fs::write(
        out.join("icu4x_data.rs"),
        format!(
            "/// Length of the data file this build was made with.\npub(crate) const DATA_LEN: u64 = {};\n/// Its BLAKE3 digest.\npub(crate) const DATA_BLAKE3: [u8; 32] = {:?};\n",
            bytes.len(),
            digest.as_bytes()
        ),
    );
    if let Err(e) = written {
        eprintln!("error: writing to {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
