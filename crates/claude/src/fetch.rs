//! Fetching with git, always through the OS sandbox launcher and never a shell: the child may
//! write only the folder it clones into, reach only the repository's port, and reads no
//! configuration of the user's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_launch::{Confinement, Launcher, Network};

use crate::ClaudeError;
use crate::capped::{collected, read_capped};

/// How long one git command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(300);
/// The most of a git command's standard output kept (it prints a commit or a short listing).
const MAX_GIT_STDOUT: usize = 1024 * 1024;
/// The most of its standard error kept (errors, and what the server says on its side band).
const MAX_GIT_STDERR: usize = 256 * 1024;

/// The schemes a repository URL may use.
const SCHEMES: &[(&str, u16)] = &[("https://", 443), ("http://", 80), ("git://", 9418)];

/// The TCP port of `url`, or why it is refused (other schemes, `ext::`, options).
pub fn port_of(url: &str) -> Result<u16, ClaudeError> {
    let refuse = || ClaudeError::Source {
        message: format!(
            "the repository `{}` is not an https://, http:// or git:// URL",
            bosun_core::escape_hidden(url)
        ),
    };
    let (scheme, default) = SCHEMES
        .iter()
        .find(|(s, _)| url.starts_with(s))
        .ok_or_else(refuse)?;
    let rest = &url[scheme.len()..];
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty()
        || authority.contains('@')
        || url.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(refuse());
    }
    match authority.rsplit_once(':') {
        Some((_, port)) if !authority.ends_with(']') => port.parse().map_err(|_| refuse()),
        _ => Ok(*default),
    }
}

/// Runs `git args…` confined to `work` with TCP to `port` only; returns its stdout.
async fn git(
    launcher: &Launcher,
    work: &Path,
    port: Option<u16>,
    args: &[&str],
) -> Result<String, ClaudeError> {
    let mut command = tokio::process::Command::new("git");
    command
        .args([
            "-c",
            "protocol.file.allow=never",
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "advice.detachedHead=false",
        ])
        .args(args)
        .current_dir(work)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .env("HOME", work)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ALLOW_PROTOCOL", "https:http:git")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let network = match port {
        Some(port) => Network::TcpPorts(vec![port]),
        None => Network::Off,
    };
    let confinement = Confinement::new(work.to_path_buf(), network);
    let what = args.first().copied().unwrap_or_default();
    let output = run_bounded(launcher, command, &confinement, what, GIT_TIMEOUT).await?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(ClaudeError::Source {
            message: format!(
                "git {} failed: {}",
                args.first().copied().unwrap_or_default(),
                bosun_core::escape_hidden(stderr.trim())
                    .chars()
                    .take(600)
                    .collect::<String>()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Starts `command` confined, reads its output while it runs — at most [`MAX_GIT_STDOUT`] and
/// [`MAX_GIT_STDERR`]: a hostile server's `remote:` lines reach git's stderr for as long as it
/// likes — and waits at most `timeout`; past either bound the child is stopped.
async fn run_bounded(
    launcher: &Launcher,
    command: tokio::process::Command,
    confinement: &Confinement,
    what: &str,
    timeout: Duration,
) -> Result<std::process::Output, ClaudeError> {
    let (mut child, jail) =
        launcher
            .spawn(command, confinement)
            .map_err(|e| ClaudeError::Source {
                message: format!("could not start git: {e}"),
            })?;
    let over = std::sync::Arc::new(tokio::sync::Notify::new());
    let stdout = read_capped(child.stdout.take(), MAX_GIT_STDOUT, over.clone());
    let stderr = read_capped(child.stderr.take(), MAX_GIT_STDERR, over.clone());
    let waited = tokio::time::timeout(timeout, async {
        tokio::select! {
            status = child.wait() => Some(status),
            () = over.notified() => None,
        }
    })
    .await;
    let _ = child.start_kill();
    drop(jail);
    let status = match waited {
        Ok(Some(status)) => status.map_err(|e| ClaudeError::io("running git", e))?,
        Ok(None) => {
            return Err(ClaudeError::Source {
                message: format!(
                    "git {what} printed more than {} KiB and was stopped: the repository's server may be hostile",
                    MAX_GIT_STDERR / 1024
                ),
            });
        }
        Err(_) => {
            return Err(ClaudeError::Source {
                message: format!("git {what} took longer than {} s", timeout.as_secs()),
            });
        }
    };
    Ok(std::process::Output {
        status,
        stdout: collected(stdout).await,
        stderr: collected(stderr).await,
    })
}

/// Clones `url` into `work/repo` at `sha` (checked: the commit checked out must be it) or, when
/// none is pinned, at `reference` or the default branch. Returns the folder and the commit.
pub async fn clone_at(
    launcher: &Launcher,
    work: &Path,
    url: &str,
    reference: Option<&str>,
    sha: Option<&str>,
) -> Result<(PathBuf, String), ClaudeError> {
    let port = port_of(url)?;
    if let Some(r) = reference
        && (r.starts_with('-')
            || r.contains("..")
            || r.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return Err(ClaudeError::Source {
            message: format!("the ref `{}` is not usable", bosun_core::escape_hidden(r)),
        });
    }
    std::fs::create_dir_all(work)
        .map_err(|e| ClaudeError::io(format!("creating {}", work.display()), e))?;
    let mut args = vec!["clone", "--quiet", "--no-checkout"];
    if let Some(r) = reference {
        args.extend(["--branch", r]);
    }
    args.extend(["--", url, "repo"]);
    git(launcher, work, Some(port), &args).await?;
    let repo = work.join("repo");
    let want = sha.unwrap_or("HEAD");
    if git(
        launcher,
        &repo,
        None,
        &["checkout", "--quiet", "--detach", want],
    )
    .await
    .is_err()
    {
        let Some(sha) = sha else {
            return Err(ClaudeError::Source {
                message: "the repository has no default branch to check out; give a ref".to_owned(),
            });
        };
        git(
            launcher,
            &repo,
            Some(port),
            &["fetch", "--quiet", "origin", sha],
        )
        .await?;
        git(
            launcher,
            &repo,
            None,
            &["checkout", "--quiet", "--detach", sha],
        )
        .await?;
    }
    let head = git(launcher, &repo, None, &["rev-parse", "HEAD"]).await?;
    if let Some(sha) = sha
        && !head.eq_ignore_ascii_case(sha)
    {
        return Err(ClaudeError::Source {
            message: format!("the repository checked out {head}, not the pinned {sha}"),
        });
    }
    let _ = std::fs::remove_dir_all(repo.join(".git"));
    Ok((repo, head))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that prints without end (git relaying a hostile server's side band) is stopped
    /// at the bound, long before its timeout, and what was kept stays bounded; one that prints
    /// a line is read whole.
    #[tokio::test]
    async fn output_past_the_bound_stops_the_child_instead_of_filling_memory() {
        let work = tempfile::tempdir().unwrap();
        let launcher = Launcher::new(bosun_launch::SandboxConfig::default());
        let confinement = Confinement::new(work.path().to_path_buf(), Network::Off);
        let command = |script: &str| {
            let mut command = tokio::process::Command::new("/bin/sh");
            command
                .args(["-c", script])
                .current_dir(work.path())
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .kill_on_drop(true);
            command
        };
        for script in [
            "while :; do echo 'remote: flooding the side band'; done >&2",
            "while :; do echo 0123456789abcdef0123456789abcdef; done",
        ] {
            let started = std::time::Instant::now();
            let error = run_bounded(
                &launcher,
                command(script),
                &confinement,
                "clone",
                Duration::from_secs(120),
            )
            .await
            .unwrap_err();
            assert!(error.to_string().contains("was stopped"), "{error}");
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{:?}",
                started.elapsed()
            );
        }
        let output = run_bounded(
            &launcher,
            command("echo 0123abcd"),
            &confinement,
            "rev-parse",
            Duration::from_secs(120),
        )
        .await
        .unwrap();
        assert_eq!(output.stdout, b"0123abcd\n");
    }

    #[test]
    fn only_network_schemes_without_credentials_pass() {
        assert_eq!(port_of("https://github.com/o/r.git").unwrap(), 443);
        assert_eq!(port_of("git://127.0.0.1:9999/r").unwrap(), 9999);
        assert_eq!(port_of("http://[::1]/r").unwrap(), 80);
        for bad in [
            "ext::sh -c evil",
            "file:///etc",
            "/local/dir",
            "https://u:p@host/r",
            "-uhttps://x",
            "ssh://git@h/r",
        ] {
            assert!(port_of(bad).is_err(), "{bad}");
        }
    }
}
