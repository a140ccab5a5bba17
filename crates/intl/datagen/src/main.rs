//! `bosun-intl-datagen PATH`: writes the ICU4X data file of `bosun-intl` to PATH.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: bosun-intl-datagen PATH   (Bosun reads crates/intl/data/icu4x.postcard)");
        return ExitCode::from(2);
    };
    let bytes = match bosun_intl_datagen::generate() {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("error: exporting the ICU4X data failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tmp = std::path::PathBuf::from(&path).with_extension("postcard.tmp");
    if let Err(e) = std::fs::write(&tmp, &bytes).and_then(|()| std::fs::rename(&tmp, &path)) {
        eprintln!("error: writing {}: {e}", tmp.display());
        return ExitCode::FAILURE;
    }
    println!(
        "wrote {} bytes to {}",
        bytes.len(),
        std::path::Path::new(&path).display()
    );
    ExitCode::SUCCESS
}
