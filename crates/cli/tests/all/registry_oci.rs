//! `kind = "oci"` through the binary, against Debian's `docker-registry` on loopback (installed
//! by `scripts/oci-peers`): `bosun plugins publish --to` pushes the standard artifact and its
//! signature, Python's `oras` pulls what Bosun pushed, and an install takes only the digest a
//! signature by a pinned key names.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::oci_peers::{LocalRegistry, oras_python};
use super::{Env, code, json, stderr};

const WEATHER: &str = r#"export const manifest = {
  name: "weather",
  version: "1.0.0",
  description: "Weather by city",
  classification: "PUBLIC",
  trust: "sandboxed",
  declaredEndpoints: ["https://api.weather.example"],
};
export async function activate(ctx) {}
"#;

fn ok(out: &std::process::Output) {
    assert_eq!(
        code(out),
        0,
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(out)
    );
}

fn plugin_dirs(env: &Env) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(env.home().join("plugins"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A signing key made by `bosun registry keygen`, and its id.
fn keygen(env: &Env, file: &str) -> (PathBuf, String) {
    let key = env.dir.path().join(file);
    let out = env.bosun(&["registry", "keygen", key.to_str().unwrap()]);
    ok(&out);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("key id: "))
        .unwrap()
        .trim()
        .to_owned();
    (key, id)
}

fn weather_dir(env: &Env, text: &str) -> PathBuf {
    let dir = env.dir.path().join("src/weather");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), text).unwrap();
    dir
}

/// `[registries.hub]` of kind oci on `registry`'s `acme` namespace, pinning `keyid`.
fn configure(env: &Env, registry: &LocalRegistry, keyid: &str) {
    env.user_config(&format!(
        "[registries.hub]\nkind = \"oci\"\nurl = \"{}/acme\"\nkeys = [\"{keyid}\"]\ntimeout_secs = 20\n",
        registry.address
    ));
}

/// Runs the OCI crate's ORAS driver in `dir`; fails the test when it fails.
fn oras(dir: &Path, args: &[&str]) -> std::process::Output {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../oci/tests/peers/oras_peer.py");
    let output = Command::new(oras_python())
        .arg(&script)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "oras_peer.py {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn a_plugin_published_to_oci_installs_by_its_signed_digest() {
    let registry = LocalRegistry::start();
    let env = Env::new();
    let (key, id) = keygen(&env, "key.json");
    configure(&env, &registry, &id);
    let src = weather_dir(&env, WEATHER);
    // Half a login is refused before anything is pushed.
    let half = env.bosun_with_env(
        &[
            "plugins",
            "publish",
            src.to_str().unwrap(),
            "--to",
            "hub",
            "--key",
            key.to_str().unwrap(),
        ],
        &[("BOSUN_OCI_USERNAME", "ci")],
    );
    assert_ne!(code(&half), 0);
    assert!(
        stderr(&half).contains("BOSUN_OCI_PASSWORD"),
        "{}",
        stderr(&half)
    );
    let published = env.bosun(&[
        "plugins",
        "publish",
        src.to_str().unwrap(),
        "--to",
        "hub",
        "--key",
        key.to_str().unwrap(),
        "--json",
    ]);
    ok(&published);
    let published = json(&published);
    let manifest = published["manifest"].as_str().unwrap().to_owned();
    assert!(manifest.starts_with("sha256:"), "{published}");
    assert!(
        published["reference"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/acme/weather:1.0.0@{manifest}")),
        "{published}"
    );

    // A published version is never replaced.
    let again = env.bosun(&[
        "plugins",
        "publish",
        src.to_str().unwrap(),
        "--to",
        "hub",
        "--key",
        key.to_str().unwrap(),
    ]);
    assert_ne!(code(&again), 0);
    assert!(
        stderr(&again).contains("never replaced"),
        "{}",
        stderr(&again)
    );

    let installed = env.bosun(&[
        "plugins", "install", "weather", "--from", "hub", "--yes", "--json",
    ]);
    ok(&installed);
    let record = &json(&installed)["installed"];
    assert_eq!(record["version"], "1.0.0");
    assert_eq!(record["source"], "hub");
    assert_eq!(
        std::fs::read_to_string(env.home().join("plugins/weather/mod.ts")).unwrap(),
        WEATHER
    );
    let verified = env.bosun(&["plugins", "verify", "weather", "--json"]);
    ok(&verified);
    assert_eq!(json(&verified)["plugins"][0]["intact"], true);
}

#[test]
fn an_oci_plugin_without_a_pinned_signature_for_its_digest_is_refused() {
    let registry = LocalRegistry::start();
    let env = Env::new();
    let (key, id) = keygen(&env, "key.json");
    let (_, other_id) = keygen(&env, "other.json");
    let src = weather_dir(&env, WEATHER);
    ok(&env.bosun(&[
        "plugins",
        "publish",
        src.to_str().unwrap(),
        "--to",
        &format!("oci://{}/acme", registry.address),
        "--key",
        key.to_str().unwrap(),
    ]));

    // Signed, but by a key nobody pinned for this source.
    configure(&env, &registry, &other_id);
    let foreign = env.bosun(&["plugins", "install", "weather", "--from", "hub", "--yes"]);
    assert_ne!(code(&foreign), 0);
    assert_eq!(plugin_dirs(&env), Vec::<String>::new());

    // Pushed with a standard tool and never signed.
    configure(&env, &registry, &id);
    let push = env.dir.path().join("push");
    std::fs::create_dir_all(&push).unwrap();
    std::fs::write(push.join("config.json"), "{}").unwrap();
    std::fs::write(
        push.join("mod.ts"),
        "export const manifest = {name: \"tides\", version: \"1.0.0\"};\n",
    )
    .unwrap();
    oras(
        &push,
        &[
            "push",
            &registry.address,
            "acme/tides:1.0.0",
            "config.json",
            "application/vnd.oci.empty.v1+json",
            "--",
            "mod.ts:application/typescript",
        ],
    );
    let unsigned = env.bosun(&["plugins", "install", "tides", "--from", "hub", "--yes"]);
    assert_ne!(code(&unsigned), 0);
    assert_eq!(plugin_dirs(&env), Vec::<String>::new());

    // The signed tag moved to other content by someone with push rights but not the key: the
    // signature names the old digest, so nothing resolves.
    std::fs::write(
        push.join("mod.ts"),
        WEATHER.replace("activate(ctx) {}", "activate(ctx) { globalThis.x = 1; }"),
    )
    .unwrap();
    oras(
        &push,
        &[
            "push",
            &registry.address,
            "acme/weather:1.0.0",
            "config.json",
            "application/vnd.oci.empty.v1+json",
            "--",
            "mod.ts:application/typescript",
        ],
    );
    let moved = env.bosun(&["plugins", "install", "weather", "--from", "hub", "--yes"]);
    assert_ne!(code(&moved), 0, "{}", stderr(&moved));
    assert_eq!(plugin_dirs(&env), Vec::<String>::new());
}

#[test]
fn a_component_published_to_oci_is_the_standard_wasm_artifact_oras_pulls() {
    let registry = LocalRegistry::start();
    let env = Env::new();
    let (key, id) = keygen(&env, "key.json");
    configure(&env, &registry, &id);
    let src = env.dir.path().join("src/hello");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(bosun_test_programs::HELLO, src.join("plugin.wasm")).unwrap();
    let published = env.bosun(&[
        "plugins",
        "publish",
        src.to_str().unwrap(),
        "--to",
        "hub",
        "--key",
        key.to_str().unwrap(),
        "--json",
    ]);
    ok(&published);
    let version = json(&published)["claims"]["version"]
        .as_str()
        .unwrap()
        .to_owned();
    let manifest = oras(
        env.dir.path(),
        &[
            "manifest",
            &registry.address,
            &format!("acme/hello:{version}"),
        ],
    );
    let manifest: serde_json::Value = serde_json::from_slice(&manifest.stdout).unwrap();
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.version"],
        version.as_str()
    );
    let out = env.dir.path().join("pulled");
    oras(
        env.dir.path(),
        &[
            "pull",
            &registry.address,
            &format!("acme/hello:{version}"),
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(
        std::fs::read(out.join("plugin.wasm")).unwrap(),
        std::fs::read(bosun_test_programs::HELLO).unwrap()
    );

    ok(&env.bosun(&["plugins", "install", "hello", "--from", "hub", "--yes"]));
    assert_eq!(plugin_dirs(&env), ["hello"]);
    // Precompiled at install, before the review: its artefact is in the cache its first call
    // loads from.
    let artefacts: Vec<String> = std::fs::read_dir(env.home().join("cache"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".cwasm"))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(artefacts.len(), 1, "{artefacts:?}");
}

/// `plugin.wasm` of `hello` with `padding` more bytes in a custom section (a component may
/// carry custom sections anywhere; nothing reads this one).
fn padded_hello(padding: usize) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                return;
            }
        }
    }
    let mut payload = Vec::new();
    leb(7, &mut payload);
    payload.extend_from_slice(b"padding");
    payload.extend((0..padding).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    let mut wasm = std::fs::read(bosun_test_programs::HELLO).unwrap();
    wasm.push(0);
    leb(payload.len(), &mut wasm);
    wasm.extend(payload);
    wasm
}

/// How indicatif writes a length in MiB (`HumanBytes`).
fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A download's progress bar (bytes, total, rate) is drawn on a terminal
/// (`tests/peers/pty_install.py`) and nowhere on a pipe, for a multi-megabyte component from
/// the loopback registry.
#[test]
fn a_download_shows_a_progress_bar_on_a_terminal_and_nothing_on_a_pipe() {
    let registry = LocalRegistry::start();
    let env = Env::new();
    let (key, id) = keygen(&env, "key.json");
    configure(&env, &registry, &id);
    let src = env.dir.path().join("src/hello");
    std::fs::create_dir_all(&src).unwrap();
    let wasm = padded_hello(6 * 1024 * 1024);
    std::fs::write(src.join("plugin.wasm"), &wasm).unwrap();
    ok(&env.bosun(&[
        "plugins",
        "publish",
        src.to_str().unwrap(),
        "--to",
        "hub",
        "--key",
        key.to_str().unwrap(),
    ]));
    let total = mib(wasm.len() as u64);

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/pty_install.py");
    let out = Command::new("timeout")
        .arg("150")
        .arg("/usr/bin/python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_bosun"))
        .arg(env.ws())
        .args(["plugins", "install", "hello", "--from", "hub", "--yes"])
        .env("BOSUN_HOME", env.home())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}\n{shown}", stderr(&out));
    assert_eq!(plugin_dirs(&env), ["hello"]);
    // The bar: the file, bytes so far over the total, and a rate.
    assert!(shown.contains("plugin.wasm"), "{shown}");
    assert!(
        shown.contains(&format!("MiB/{total}")) || shown.contains(&format!("KiB/{total}")),
        "no bytes-over-total of {total} on the terminal:\n{shown}"
    );
    assert!(shown.contains("/s"), "no rate on the terminal:\n{shown}");

    // The same install on a pipe: no bar, on stdout or stderr.
    let piped = Env::new();
    configure(&piped, &registry, &id);
    let out = piped.bosun(&["plugins", "install", "hello", "--from", "hub", "--yes"]);
    ok(&out);
    assert_eq!(plugin_dirs(&piped), ["hello"]);
    for (name, stream) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(stream);
        assert!(!text.contains(&total), "{name} shows the total: {text}");
        assert!(!text.contains("MiB/"), "{name} shows progress: {text}");
        assert!(
            !text.contains('\u{1b}'),
            "{name} has terminal escapes: {text}"
        );
    }
}
