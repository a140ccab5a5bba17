//! The air-gapped bundle through the binary: `bosun plugins publish --to oci-layout:DIR` makes
//! an OCI image layout, a `kind = "dir"` source over it lists it as unsigned until its signer
//! is pinned with `bosun registry trust`, then installs it by digest; an update signed by a key
//! nobody pinned leaves the installed version serving.

use std::path::{Path, PathBuf};

use super::{Env, code, json, stderr};

fn weather(version: &str) -> String {
    format!(
        "export const manifest = {{\n  name: \"weather\",\n  version: \"{version}\",\n  description: \"Weather by city\",\n  classification: \"PUBLIC\",\n  trust: \"sandboxed\",\n  declaredEndpoints: [\"https://api.weather.example\"],\n}};\nexport async function activate(ctx) {{}}\n"
    )
}

fn ok(out: &std::process::Output) {
    assert_eq!(
        code(out),
        0,
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(out)
    );
}

fn keygen(env: &Env, file: &str) -> PathBuf {
    let key = env.dir.path().join(file);
    ok(&env.bosun(&["registry", "keygen", key.to_str().unwrap()]));
    key
}

fn publish(env: &Env, version: &str, to: &str, key: &Path) -> std::process::Output {
    let src = env.dir.path().join(format!("src-{version}/weather"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("mod.ts"), weather(version)).unwrap();
    env.bosun(&[
        "plugins",
        "publish",
        src.to_str().unwrap(),
        "--to",
        to,
        "--key",
        key.to_str().unwrap(),
        "--json",
    ])
}

#[test]
fn a_plugin_travels_through_an_oci_layout_bundle_and_installs_once_its_signer_is_pinned() {
    let env = Env::new();
    let key = keygen(&env, "key.json");
    let bundle = env.dir.path().join("bundle");
    let made = publish(
        &env,
        "1.0.0",
        &format!("oci-layout:{}", bundle.display()),
        &key,
    );
    ok(&made);
    assert_eq!(json(&made)["reference"], "weather:1.0.0");
    assert!(bundle.join("oci-layout").is_file() && bundle.join("index.json").is_file());

    env.user_config(&format!(
        "[registries.offline]\nkind = \"dir\"\npath = \"{}\"\n",
        bundle.display()
    ));
    // Without a pinned key the bundle is shown as what it is.
    let found = env.bosun(&["plugins", "search", "weather", "--json"]);
    ok(&found);
    let result = &json(&found)["results"][0];
    assert_eq!(result["version"], "1.0.0");
    assert!(
        result["trust"]
            .as_str()
            .unwrap()
            .starts_with("unsigned: checksum from the same origin"),
        "{result}"
    );

    // `bosun registry trust` shows the layout's signer and pins it once confirmed.
    let trusted = env.bosun(&["registry", "trust", "offline", "--yes"]);
    ok(&trusted);
    let found = json(&env.bosun(&["plugins", "search", "weather", "--json"]));
    assert!(
        found["results"][0]["trust"]
            .as_str()
            .unwrap()
            .starts_with("signed"),
        "{found}"
    );
    let installed = env.bosun(&[
        "plugins", "install", "weather", "--from", "offline", "--yes", "--json",
    ]);
    ok(&installed);
    assert_eq!(json(&installed)["installed"]["version"], "1.0.0");
    let verified = env.bosun(&["plugins", "verify", "weather", "--json"]);
    ok(&verified);
    assert_eq!(json(&verified)["plugins"][0]["intact"], true);

    // Publishing into the configured source writes into the same layout; a newer version
    // signed by a key nobody pinned does not replace what serves.
    let stranger = keygen(&env, "stranger.json");
    ok(&publish(&env, "1.1.0", "offline", &stranger));
    let update = env.bosun(&["plugins", "update", "weather", "--yes"]);
    assert_ne!(code(&update), 0, "{}", stderr(&update));
    let verified = env.bosun(&["plugins", "verify", "weather", "--json"]);
    ok(&verified);
    assert_eq!(json(&verified)["plugins"][0]["record"]["version"], "1.0.0");
    assert_eq!(json(&verified)["plugins"][0]["intact"], true);

    // The same version is never published twice.
    let again = publish(&env, "1.0.0", "offline", &key);
    assert_ne!(code(&again), 0);
    assert!(
        stderr(&again).contains("never replaced"),
        "{}",
        stderr(&again)
    );

    // Removed, it is gone with its integrity record: nothing is left to update or verify.
    let removed = env.bosun(&["plugins", "remove", "weather", "--yes", "--json"]);
    ok(&removed);
    assert_eq!(json(&removed)["removed"], "weather");
    assert!(!env.home().join("plugins/weather").exists());
    let update = env.bosun(&["plugins", "update", "--check", "--json"]);
    ok(&update);
    assert_eq!(json(&update)["plugins"], serde_json::json!([]));
    assert_ne!(code(&env.bosun(&["plugins", "verify", "weather"])), 0);
}
