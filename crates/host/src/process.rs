//! How the host starts a process for a call: the OS sandbox's confinement (`bosun-launch`)
//! from what the chokepoint granted. `run_command` and JavaScript plugins' processes share it.

use std::path::Path;

use bosun_core::{Capability, CapabilityRequest};
use bosun_launch::{Confinement, Network};

/// The sandbox for one command: the workspace, its protected paths, and exactly the `net.http`
/// authorities policy granted for this call (their ports; 80 and 443 for a host without one).
pub(crate) fn confinement(
    root: &Path,
    granted: &[CapabilityRequest],
    cpu_seconds: u64,
) -> Confinement {
    let mut ports: Vec<u16> = granted
        .iter()
        .filter(|r| r.capability == Capability::NetHttp)
        .filter_map(|r| r.scope.as_authority())
        .flat_map(|a| match a.port {
            Some(port) => vec![port],
            None => vec![80, 443],
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    let network = if granted.iter().any(|r| r.capability == Capability::NetHttp) {
        Network::TcpPorts(ports)
    } else {
        Network::Off
    };
    let mut confinement = Confinement::new(root.to_path_buf(), network);
    confinement.protected = crate::workspace::protected_paths(root);
    confinement.cpu_seconds = Some(cpu_seconds);
    confinement
}
