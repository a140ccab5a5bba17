//! The guest workspace (SDK, examples, hostile programs) is formatted, clippy-clean, and its own
//! tests pass on the host target — the SDK's dispatch, URL and metadata code, and each example's
//! tools. The host workspace's `cargo fmt` and `cargo clippy` do not reach these crates.

use super::{cargo, root, run};

#[test]
fn guest_workspace_is_formatted_clippy_clean_and_passes_its_tests() {
    let manifest = root().join("guests/Cargo.toml");
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check", "--manifest-path"])
        .arg(&manifest);
    run(fmt);
    let mut clippy = cargo();
    clippy
        .args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--manifest-path",
        ])
        .arg(&manifest)
        .args(["--", "-D", "warnings"]);
    run(clippy);
    let mut test = cargo();
    test.args(["test", "--workspace", "--locked", "--manifest-path"])
        .arg(&manifest);
    run(test);
}
