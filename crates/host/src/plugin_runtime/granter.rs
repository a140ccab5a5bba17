//! The capability granter: what a plugin call may reach, computed from what the chokepoint just
//! judged for it (`ToolContext::granted`) and nothing else, for every plugin format alike —
//! preopened directories, the HTTP grant, a spawned process's confinement — and the one rule by
//! which a plugin tool is withheld from a session before any call.
//!
//! It never judges: policy did, in the chokepoint. It only turns judged requests into grants, so
//! a format cannot reach more than another with the same judgement.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_core::{Capability, CapabilityRequest, Decision, Risk};
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

/// The directories a call may reach: one preopen per judged `fs.read` / `fs.write` scope,
/// at the judged path's directory (the path itself when it is a directory, else its nearest
/// existing ancestor), read-only unless the request is `fs.write`, seen by the plugin at the
/// same place under `/workspace`.
pub(crate) fn preopens(root: &Path, granted: &[CapabilityRequest]) -> Vec<FsGrant> {
    let mut grants: Vec<FsGrant> = Vec::new();
    for request in granted {
        let writable = match request.capability {
            Capability::FsRead => false,
            Capability::FsWrite => true,
            _ => continue,
        };
        let relative = request.scope.path.as_deref().unwrap_or(".");
        let dir = grant_dir(root, relative);
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
    use bosun_core::{Authority, Capability, CapabilityRequest, Scope};
    use bosun_policy::{Mode, Policy, PolicyFile, Source};

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
