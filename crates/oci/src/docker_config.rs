//! The logins other OCI tools keep: Docker's `config.json` (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`) as `docker login`, `oras login` and `helm registry login` write it —
//! `auths.<registry>.auth` (base64 `user:password`) or `username`/`password`, an
//! `identitytoken` (an OAuth2 refresh token, exchanged by the client at the registry's token
//! service, [`Credentials::IdentityToken`]), and the credential helpers `credHelpers.<registry>` and `credsStore` (the program
//! `docker-credential-<name>`, asked with `get` and the registry on stdin; docker/
//! docker-credential-helpers' protocol).
//!
//! A login is looked up for one registry by its `host[:port]` only, so it is only ever handed
//! to the client of that registry, which keeps it on that origin. Nothing read here is put in
//! an error: a helper's output and a config's values never reach a message or a trace.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::auth::Credentials;
use crate::error::OciError;

/// The most of a config file or a helper's answer read.
const MAX_BYTES: u64 = 1024 * 1024;

/// How long a credential helper may take.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(20);

/// Whether credential helpers (programs) may be run, or only logins written in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helpers {
    /// Only `auths` entries stored in the file.
    Never,
    /// `credHelpers` and `credsStore` too.
    Run,
}

// No `Debug`: it holds secrets.
#[derive(Default, serde::Deserialize)]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

#[derive(Default, serde::Deserialize)]
struct AuthEntry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    #[serde(rename = "identitytoken")]
    identity_token: Option<String>,
    #[serde(rename = "registrytoken")]
    registry_token: Option<String>,
}

/// Where the Docker config is: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
pub fn default_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".docker").join("config.json"))
}

/// The key a config uses for `registry` (`host[:port]`), normalised: scheme and path dropped,
/// Docker Hub's several names folded into `docker.io`.
fn normalise(key: &str) -> String {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key.split('/').next().unwrap_or(key).to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            "docker.io".to_owned()
        }
        _ => host,
    }
}

/// The login for `registry` (`host[:port]`) in the Docker config at `path`: anonymous when the
/// file or an entry for the registry is absent.
///
/// # Errors
/// A file that cannot be read or parsed, an entry that is not a login Bosun can use, or a
/// helper that fails, each naming the fix (never the secret).
pub fn credentials_for(
    path: &Path,
    registry: &str,
    helpers: Helpers,
) -> Result<Credentials, OciError> {
    let login = |reason: String| OciError::Login {
        registry: registry.to_owned(),
        reason,
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Credentials::Anonymous),
        Err(e) => return Err(OciError::io(path, e)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| OciError::io(path, e))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(login(format!("{} is larger than 1 MiB", path.display())));
    }
    let config: ConfigFile = serde_json::from_slice(&bytes).map_err(|e| {
        // serde_json's message names a position, never the value.
        login(format!("{} is not a Docker config: {e}", path.display()))
    })?;
    let wanted = normalise(registry);
    if helpers == Helpers::Run {
        let helper = config
            .cred_helpers
            .iter()
            .find(|(key, _)| normalise(key) == wanted)
            .map(|(_, helper)| helper.clone());
        if let Some(helper) = helper {
            return run_helper(&helper, registry, HELPER_TIMEOUT);
        }
    }
    if let Some(entry) = config
        .auths
        .iter()
        .find(|(key, _)| normalise(key) == wanted)
        .map(|(_, entry)| entry)
    {
        if let Some(token) = entry.registry_token.as_ref().filter(|t| !t.is_empty()) {
            return Ok(Credentials::Bearer(token.clone()));
        }
        if let Some(token) = entry.identity_token.as_ref().filter(|t| !t.is_empty()) {
            // Exchanged at the registry's token service for an access token, never sent to
            // the registry itself (`Credentials::IdentityToken`).
            return Ok(Credentials::IdentityToken(token.clone()));
        }
        match (&entry.auth, &entry.username, &entry.password) {
            (Some(auth), _, _) if !auth.is_empty() => {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(auth.trim())
                    .ok()
                    .and_then(|d| String::from_utf8(d).ok())
                    .ok_or_else(|| {
                        login(format!(
                            "its `auth` in {} is not base64 of user:password",
                            path.display()
                        ))
                    })?;
                let (username, password) = decoded.split_once(':').ok_or_else(|| {
                    login(format!(
                        "its `auth` in {} is not user:password",
                        path.display()
                    ))
                })?;
                return Ok(Credentials::Basic {
                    username: username.to_owned(),
                    password: password.to_owned(),
                });
            }
            (_, Some(username), Some(password)) => {
                return Ok(Credentials::Basic {
                    username: username.clone(),
                    password: password.clone(),
                });
            }
            _ => {}
        }
    }
    match (&config.creds_store, helpers) {
        (Some(store), Helpers::Run) if !store.is_empty() => {
            run_helper(store, registry, HELPER_TIMEOUT)
        }
        _ => Ok(Credentials::Anonymous),
    }
}

#[derive(serde::Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username")]
    username: String,
    #[serde(rename = "Secret")]
    secret: String,
}

/// Asks `docker-credential-<helper> get` for `registry`'s login, waiting at most `timeout`.
/// A helper that knows no login for it answers "credentials not found": anonymous.
///
/// # Errors
/// A helper name that is not a plain name, a helper that cannot start, times out or answers
/// something else (its output is never quoted).
pub fn run_helper(
    helper: &str,
    registry: &str,
    timeout: Duration,
) -> Result<Credentials, OciError> {
    let login = |reason: String| OciError::Login {
        registry: registry.to_owned(),
        reason,
    };
    // A name, never a path: the program is found on PATH as every Docker client finds it.
    if helper.is_empty()
        || !helper
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(login(format!(
            "the credential helper `{}` is not a plain name",
            helper.escape_debug()
        )));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let program = found_helper(helper, &path).map_err(login)?;
    ask_program(program.as_os_str(), registry, timeout)
}

/// Where `docker-credential-<helper>` is, found only through `path`'s absolute entries: the
/// helper runs outside every sandbox with the person's keychain, so a `.` or `bin` entry must
/// never let a file in the workspace stand in for it.
fn found_helper(helper: &str, path: &std::ffi::OsStr) -> Result<std::path::PathBuf, String> {
    let name = format!("docker-credential-{helper}");
    bosun_launch::search_path::find_program_in(std::ffi::OsStr::new(&name), path).ok_or_else(|| {
        let relative = if bosun_launch::search_path::has_relative_entry(path) {
            " (relative PATH entries such as `.` are not searched)"
        } else {
            ""
        };
        format!("{name} is not on PATH{relative}; install it or remove it from the Docker config")
    })
}

/// Runs the credential helper `program` (a name found on PATH, or a path) as [`run_helper`]
/// describes.
fn ask_program(
    program_path: &std::ffi::OsStr,
    registry: &str,
    timeout: Duration,
) -> Result<Credentials, OciError> {
    let login = |reason: String| OciError::Login {
        registry: registry.to_owned(),
        reason,
    };
    let program = Path::new(program_path)
        .file_name()
        .unwrap_or(program_path)
        .to_string_lossy()
        .into_owned();
    let mut child = std::process::Command::new(program_path)
        .arg("get")
        // Its own lookups (a helper is often a script) see only absolute PATH entries, from a
        // folder that is not the workspace.
        .env(
            "PATH",
            bosun_launch::search_path::absolute_entries(
                &std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            ),
        )
        .current_dir("/")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| login(format!("{program} could not be started ({e}); install it or remove it from the Docker config")))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(registry.as_bytes());
    }
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(stdout) = stdout.as_mut() {
            let _ = stdout.take(MAX_BYTES).read_to_end(&mut out);
        }
        out
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(login(format!(
                    "{program} did not answer within {timeout:?}"
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(login(format!("{program} could not be waited for: {e}"))),
        }
    };
    let out = reader.join().unwrap_or_default();
    if !status.success() {
        if String::from_utf8_lossy(&out).contains("credentials not found") {
            return Ok(Credentials::Anonymous);
        }
        return Err(login(format!(
            "{program} failed ({status}); run `{program} get` by hand to see why"
        )));
    }
    let answer: HelperAnswer = serde_json::from_slice(&out)
        .map_err(|_| login(format!("{program} answered something other than a login")))?;
    if answer.username == "<token>" {
        // The helper's way of answering with an identity token (docker-credential-helpers).
        return Ok(Credentials::IdentityToken(answer.secret));
    }
    Ok(Credentials::Basic {
        username: answer.username,
        password: answer.secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn a_login_is_read_for_its_registry_only() {
        let auth = base64::engine::general_purpose::STANDARD.encode("me:s3cret");
        let (_dir, path) = config(&format!(
            r#"{{"auths":{{"https://registry.example:5000/v1/":{{"auth":"{auth}"}},"other.example":{{"username":"u","password":"p"}},"tok.example":{{"registrytoken":"rt"}}}}}}"#
        ));
        let basic = credentials_for(&path, "registry.example:5000", Helpers::Never).unwrap();
        assert!(
            matches!(basic, Credentials::Basic { ref username, ref password } if username == "me" && password == "s3cret")
        );
        assert!(matches!(
            credentials_for(&path, "registry.example", Helpers::Never).unwrap(),
            Credentials::Anonymous
        ));
        assert!(matches!(
            credentials_for(&path, "OTHER.example", Helpers::Never).unwrap(),
            Credentials::Basic { .. }
        ));
        assert!(matches!(
            credentials_for(&path, "tok.example", Helpers::Never).unwrap(),
            Credentials::Bearer(ref t) if t == "rt"
        ));
        assert!(matches!(
            credentials_for(&path.with_file_name("absent.json"), "x", Helpers::Never).unwrap(),
            Credentials::Anonymous
        ));
    }

    #[test]
    fn a_broken_login_is_refused_without_quoting_the_secret() {
        let (_dir, path) = config(r#"{"auths":{"r.example":{"auth":"not base64 hunter2!"}}}"#);
        let error = credentials_for(&path, "r.example", Helpers::Never).unwrap_err();
        assert!(matches!(error, OciError::Login { .. }), "{error}");
        assert!(!error.to_string().contains("hunter2"), "{error}");
        // An identity token is a login (exchanged at the token service), never printed.
        let (_dir, path) =
            config(r#"{"auths":{"r.example":{"auth":"dXNlcjo=","identitytoken":"hunter2"}}}"#);
        let got = credentials_for(&path, "r.example", Helpers::Never).unwrap();
        assert!(matches!(&got, Credentials::IdentityToken(t) if t == "hunter2"));
        assert!(!format!("{got:?}").contains("hunter2"), "{got:?}");
    }

    #[test]
    fn helpers_run_only_when_allowed_and_only_by_plain_name() {
        let (_dir, path) =
            config(r#"{"credHelpers":{"r.example":"../../bin/sh"},"credsStore":"desktop"}"#);
        // Without leave to run programs, a helper is not asked: anonymous.
        assert!(matches!(
            credentials_for(&path, "r.example", Helpers::Never).unwrap(),
            Credentials::Anonymous
        ));
        let error = credentials_for(&path, "r.example", Helpers::Run).unwrap_err();
        assert!(error.to_string().contains("not a plain name"), "{error}");
    }

    /// A helper named in the Docker config is looked for only in absolute PATH entries: a
    /// `docker-credential-…` planted in the folder Bosun runs in (the workspace) is not run
    /// through a `.`, empty or relative entry, while the same folder named absolutely is
    /// searched.
    #[cfg(unix)]
    #[test]
    fn a_helper_is_never_found_through_a_relative_path_entry() {
        use std::os::unix::fs::PermissionsExt as _;
        let cwd = std::env::current_dir().unwrap();
        let planted = tempfile::tempdir_in(&cwd).unwrap();
        let helper = planted.path().join("docker-credential-bosunplanted");
        std::fs::write(&helper, "#!/bin/sh\necho planted\n").unwrap();
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let relative = planted.path().strip_prefix(&cwd).unwrap();
        for path in [
            format!("{}:/usr/bin:/bin", relative.display()),
            format!("./{}:/usr/bin", relative.display()),
        ] {
            let error = found_helper("bosunplanted", std::ffi::OsStr::new(&path)).unwrap_err();
            assert!(error.contains("relative PATH entries"), "{error}");
        }
        let absolute = format!("/usr/bin:{}", planted.path().display());
        assert_eq!(
            found_helper("bosunplanted", std::ffi::OsStr::new(&absolute)).unwrap(),
            helper
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_credential_helper_is_asked_with_the_registry_on_stdin() {
        use std::os::unix::fs::PermissionsExt as _;
        let bin = tempfile::tempdir().unwrap();
        let helper = bin.path().join("docker-credential-bosuntest");
        std::fs::write(
            &helper,
            "#!/bin/sh\nread host\nif [ \"$1\" = get ] && [ \"$host\" = r.example:5000 ]; then\n  printf '{\"ServerURL\":\"%s\",\"Username\":\"robot\",\"Secret\":\"hunter2\"}' \"$host\"\nelse\n  echo 'credentials not found in native keychain'; exit 1\nfi\n",
        )
        .unwrap();
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let got = ask_program(helper.as_os_str(), "r.example:5000", HELPER_TIMEOUT).unwrap();
        assert!(
            matches!(got, Credentials::Basic { ref username, ref password } if username == "robot" && password == "hunter2")
        );
        assert!(!format!("{got:?}").contains("hunter2"));
        assert!(matches!(
            ask_program(helper.as_os_str(), "elsewhere.example", HELPER_TIMEOUT).unwrap(),
            Credentials::Anonymous
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_helper_answering_with_an_identity_token_gives_one() {
        use std::os::unix::fs::PermissionsExt as _;
        let bin = tempfile::tempdir().unwrap();
        let helper = bin.path().join("docker-credential-bosuntoken");
        std::fs::write(
            &helper,
            "#!/bin/sh\nread host\nprintf '{\"ServerURL\":\"%s\",\"Username\":\"<token>\",\"Secret\":\"r3fresh\"}' \"$host\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let got = ask_program(helper.as_os_str(), "r.example", HELPER_TIMEOUT).unwrap();
        assert!(matches!(&got, Credentials::IdentityToken(t) if t == "r3fresh"));
        assert!(!format!("{got:?}").contains("r3fresh"));
    }
}
