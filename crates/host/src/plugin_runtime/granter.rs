//! The capability granter: what a plugin call may reach, computed from what the chokepoint just
//! judged for it (`ToolContext::granted`) and nothing else, for every plugin format alike —
//! preopened directories, the HTTP grant, a spawned process's confinement — and the one rule by
//! which a plugin tool is withheld from a session before any call. What a call will reach is
//! what it is judged for: a preopen is a whole directory, so the directory is judged as a whole
//! ([`judged_reach`]) and only such a judged directory is preopened ([`preopens`]).
//!
//! It never judges: policy did, in the chokepoint. It only turns judged requests into grants, so
//! a format cannot reach more than another with the same judgement.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_core::{Capability, CapabilityRequest, Decision, Risk, Scope};
use bosun_launch::Confinement;
use bosun_policy::{Policy, Subject};
use bosun_sandbox::{FsGrant, NetGrant};

/// Default per-call deadline of a plugin.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default memory cap of a plugin instance.
pub const DEFAULT_MEMORY_MIB: u64 = 256;

/// Whether a plugin tool is withheld from the session: policy denies, before any call, its
/// action or one of the capabilities it declares (unscoped). The same rule for every format,
/// applied when its tools are offered; a withheld tool's capabilities are never linked.
pub(crate) fn withheld<'a>(
    policy: &Policy,
    action: &str,
    risk: Risk,
    capabilities: impl IntoIterator<Item = &'a Capability>,
) -> bool {
    let mut subjects = vec![Subject::tool(action, risk)];
    subjects.extend(
        capabilities
            .into_iter()
            .map(|c| Subject::capability(&CapabilityRequest::bare(c.clone()))),
    );
    policy.decide(&subjects, &[], &[]).decision == Decision::Deny
}

/// The HTTP grant for one call: exactly the `net.http` authorities policy has just judged
/// (`granted`, from the chokepoint), and a literal private address only when a rule names it.
pub(crate) fn network(granted: &[CapabilityRequest], policy: &Policy) -> NetGrant {
    let mut net = NetGrant::default();
    for authority in granted
        .iter()
        .filter(|r| r.capability == Capability::NetHttp)
        .filter_map(|r| r.scope.as_authority())
    {
        if let Ok(ip) = authority.host.parse::<IpAddr>()
            && policy.names_host(&authority.host)
        {
            // Inside addresses only when a rule names them literally.
            net.private_allowed.push(ip);
        }
        net.hosts.push(authority);
    }
    net
}

/// The directories a call may reach: one preopen per judged `fs.read` / `fs.write` request for
/// a whole directory ([`Scope::whole_directory`](bosun_core::Scope), made by [`judged_reach`]),
/// at exactly that directory, read-only unless the request is `fs.write`, seen by the plugin at
/// the same place under `/workspace`. A request for a single path — a file, or what a rule
/// restricts inside the directory (`**/.env`) — grants nothing by itself: its directory was
/// judged as a whole beside it, or nothing is opened.
pub(crate) fn preopens(root: &Path, granted: &[CapabilityRequest]) -> Vec<FsGrant> {
    let mut grants: Vec<FsGrant> = Vec::new();
    for request in granted.iter().filter(|r| r.scope.whole_directory) {
        let writable = match request.capability {
            Capability::FsRead => false,
            Capability::FsWrite => true,
            _ => continue,
        };
        let Some(dir) = request.scope.path.as_deref().and_then(plain_dir) else {
            continue;
        };
        let guest_path = if dir.as_os_str().is_empty() {
            bosun_sandbox::WORKSPACE_GUEST_PATH.to_owned()
        } else {
            format!("{}/{}", bosun_sandbox::WORKSPACE_GUEST_PATH, dir.display())
        };
        // Opened beneath `root` through no link when the instance is made: a directory of
        // `dir` swapped for a link after this call was judged is refused, never followed.
        let grant = FsGrant {
            root: root.to_owned(),
            dir,
            guest_path,
            writable,
        };
        // A writable grant of a place covers a read-only one of the same place.
        if let Some(same) = grants.iter_mut().find(|g| g.guest_path == grant.guest_path) {
            same.writable |= grant.writable;
        } else {
            grants.push(grant);
        }
    }
    grants.sort();
    grants
}

/// A judged directory's path as plain names (empty for the root `.`); `None` for anything else
/// (`..`, an absolute path): such a request was never made by [`judged_reach`], and opens
/// nothing.
fn plain_dir(path: &str) -> Option<PathBuf> {
    let mut dir = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            std::path::Component::Normal(name) => dir.push(name),
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    Some(dir)
}

/// The requests for what a preopen of `dir` (from [`grant_dir`] of the judged `scope`'s path)
/// lets a call of `capability` reach, for policy to judge: `scope` itself, and — when `dir` is
/// wider than that path (the path is a file, or does not exist yet) — `dir` as a whole, so that
/// a person approving one file, or a rule allowing only that file, is not taken as consent for
/// the files beside it. When the path is the directory, its one request is for it as a whole.
/// The directory's path as the call wrote it (for what the model is told) is the written path
/// less the names popped, or that path followed by `..` for each.
pub(crate) fn judged_reach(
    capability: &Capability,
    scope: Scope,
    dir: &Path,
) -> Vec<CapabilityRequest> {
    let request = |scope: Scope| CapabilityRequest {
        capability: capability.clone(),
        scope,
    };
    let path = scope.path.as_deref().unwrap_or(".");
    let dir_text = if dir.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        dir.to_string_lossy().replace('\\', "/")
    };
    if dir_text == path {
        return vec![request(Scope {
            whole_directory: true,
            ..scope
        })];
    }
    let popped = Path::new(path)
        .components()
        .count()
        .saturating_sub(dir.components().count());
    let written = scope.written.as_deref().map(|w| written_dir(w, popped));
    let whole = Scope {
        path: Some(dir_text),
        written,
        whole_directory: true,
        ..Scope::default()
    };
    vec![request(scope), request(whole)]
}

/// The directory `popped` names up from `written` (a path as a call wrote it): its last names
/// removed when they are plain names, else `written/..` once for each.
fn written_dir(written: &str, popped: usize) -> String {
    let components: Vec<_> = Path::new(written).components().collect();
    let kept = components.len().saturating_sub(popped);
    let tail_plain = components[kept..]
        .iter()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if tail_plain && kept > 0 {
        components[..kept]
            .iter()
            .collect::<PathBuf>()
            .to_string_lossy()
            .into_owned()
    } else if tail_plain {
        ".".to_owned()
    } else {
        let mut text = written.trim_end_matches('/').to_owned();
        for _ in 0..popped {
            text.push_str("/..");
        }
        text
    }
}

/// The OS sandbox of a process a plugin call starts: the workspace, its protected paths and the
/// ports of exactly the `net.http` authorities judged for the call, under the command deadline.
pub(crate) fn spawn_confinement(
    root: &Path,
    granted: &[CapabilityRequest],
    timeout_ms: u64,
) -> Confinement {
    crate::process::confinement(root, granted, timeout_ms.div_ceil(1000) + 1)
}

/// The directory a grant for `relative` preopens: the path itself when it is a directory, else
/// its nearest existing ancestor; relative to `root`, with no `.` or `..` components.
pub(crate) fn grant_dir(root: &Path, relative: &str) -> PathBuf {
    let mut dir = PathBuf::from(relative);
    while !(dir.as_os_str().is_empty() || root.join(&dir).is_dir()) {
        if !dir.pop() {
            break;
        }
    }
    dir.components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect()
}

/// A plugin instance's memory cap: its config's `memory_mib`, or [`DEFAULT_MEMORY_MIB`].
pub(crate) fn memory_bytes(config: Option<&bosun_plugins::PluginConfig>) -> usize {
    usize::try_from(
        config
            .and_then(|c| c.memory_mib)
            .unwrap_or(DEFAULT_MEMORY_MIB)
            << 20,
    )
    .unwrap_or(usize::MAX)
}

/// A plugin call's deadline: its config's `timeout_ms`, or [`DEFAULT_TIMEOUT`].
pub(crate) fn timeout(config: Option<&bosun_plugins::PluginConfig>) -> Duration {
    config
        .and_then(|c| c.timeout_ms)
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::network as net_grant;
    use super::{grant_dir, judged_reach, preopens};
    use bosun_core::{Authority, Capability, CapabilityRequest, Scope};
    use bosun_policy::{Mode, Policy, PolicyFile, Source};

    fn scope(path: &str, written: Option<&str>) -> Scope {
        Scope {
            path: Some(path.to_owned()),
            written: written.map(str::to_owned),
            ..Scope::default()
        }
    }

    /// A file's call is judged for the file and for its directory as a whole (named as the call
    /// wrote it, for the model); a directory's, for itself as a whole; and only a directory
    /// judged as a whole is preopened — never a path a rule restricts (`**/.env`), never a
    /// file, never a climbing path.
    #[test]
    fn a_preopen_is_exactly_a_directory_judged_as_a_whole() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        std::fs::create_dir_all(root.join("pub/sub")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("pub/a.txt"), "a").unwrap_or_else(|e| panic!("{e}"));
        let reach = |path: &str, written: Option<&str>| {
            let dir = grant_dir(root, path);
            judged_reach(&Capability::FsRead, scope(path, written), &dir)
                .into_iter()
                .map(|r| (r.to_string(), r.scope.written, r.scope.whole_directory))
                .collect::<Vec<_>>()
        };
        let own = |text: &str| text.to_owned();
        assert_eq!(
            reach("pub/a.txt", None),
            [
                (own("fs.read:pub/a.txt"), None, false),
                (own("fs.read:pub/**"), None, true)
            ]
        );
        assert_eq!(
            reach("pub/new/deeper.txt", Some("./pub/new/deeper.txt")),
            [
                (
                    own("fs.read:pub/new/deeper.txt"),
                    Some(own("./pub/new/deeper.txt")),
                    false
                ),
                (own("fs.read:pub/**"), Some(own("./pub")), true)
            ]
        );
        assert_eq!(
            reach("pub/a.txt", Some("link/../a.txt")),
            [
                (own("fs.read:pub/a.txt"), Some(own("link/../a.txt")), false),
                (own("fs.read:pub/**"), Some(own("link/..")), true)
            ]
        );
        assert_eq!(
            reach("pub/a.txt", Some("pub/sub/..")),
            [
                (own("fs.read:pub/a.txt"), Some(own("pub/sub/..")), false),
                (own("fs.read:pub/**"), Some(own("pub/sub/../..")), true)
            ]
        );
        assert_eq!(
            reach("top.txt", None),
            [
                (own("fs.read:top.txt"), None, false),
                (own("fs.read:**"), None, true)
            ]
        );
        assert_eq!(
            reach("pub/sub", Some("pub/sub/")),
            [(own("fs.read:pub/sub/**"), Some(own("pub/sub/")), true)]
        );
        assert_eq!(reach(".", None), [(own("fs.read:**"), None, true)]);

        let whole = |path: &str| CapabilityRequest {
            capability: Capability::FsWrite,
            scope: Scope {
                whole_directory: true,
                ..scope(path, None)
            },
        };
        let granted = vec![
            // Judged, but not as a whole directory: no preopen of their own.
            CapabilityRequest {
                capability: Capability::FsRead,
                scope: scope("**/.env", None),
            },
            CapabilityRequest {
                capability: Capability::FsRead,
                scope: scope("pub/a.txt", None),
            },
            CapabilityRequest {
                capability: Capability::FsRead,
                scope: scope(".", None),
            },
            whole("../outside"),
            whole("/etc"),
            whole("pub"),
        ];
        let opened: Vec<_> = preopens(root, &granted)
            .into_iter()
            .map(|g| (g.guest_path, g.writable))
            .collect();
        assert_eq!(opened, [("/workspace/pub".to_owned(), true)]);
        let opened: Vec<_> = preopens(root, &[whole(".")])
            .into_iter()
            .map(|g| g.guest_path)
            .collect();
        assert_eq!(opened, ["/workspace"]);
    }

    #[test]
    fn the_http_grant_is_exactly_the_judged_authorities() {
        let text =
            "[[policy.rules]]\naction = \"net.http\"\nhost = \"127.0.0.1\"\ndecision = \"allow\"\n";
        let policy = Policy::builder(Mode::WorkspaceWrite)
            .user(
                PolicyFile::parse(text).unwrap(),
                Source::with_text("u.toml", text),
            )
            .unwrap()
            .build();
        let judged = |a: &str| CapabilityRequest {
            capability: Capability::NetHttp,
            scope: Scope::authority(a.parse().unwrap()),
        };
        let granted = vec![
            judged("api.example.com:8443"),
            judged("127.0.0.1:4000"),
            judged("10.0.0.7"),
            // Not network requests: never a host grant.
            CapabilityRequest::bare(Capability::FsRead),
            CapabilityRequest::bare(Capability::NetHttp),
        ];
        let net = net_grant(&granted, &policy);
        assert_eq!(
            net.hosts,
            vec![
                Authority::new("api.example.com", Some(8443)),
                Authority::new("127.0.0.1", Some(4000)),
                Authority::new("10.0.0.7", None),
            ]
        );
        // An inside address is reachable only when a rule names it literally.
        assert_eq!(
            net.private_allowed,
            vec!["127.0.0.1".parse::<std::net::IpAddr>().unwrap()]
        );
        assert!(net_grant(&[], &policy).hosts.is_empty());
    }
}
