//! Stamps the binary with the commit and date it was built from, for `bosun --version`: read from
//! git when the source is a checkout, `BOSUN_BUILD_COMMIT` / `BOSUN_BUILD_DATE` when a packager
//! sets them, else `unknown` (a source tarball builds the same).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=BOSUN_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=BOSUN_BUILD_DATE");
    // A new commit or checkout changes HEAD (or the branch it names) in the git directory.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/logs/HEAD");
    }
    let commit = std::env::var("BOSUN_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    let date = std::env::var("BOSUN_BUILD_DATE")
        .ok()
        .filter(|d| !d.is_empty())
        .or_else(|| git(&["log", "-1", "--format=%cs"]))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=BOSUN_COMMIT={commit}");
    println!("cargo:rustc-env=BOSUN_COMMIT_DATE={date}");
}
