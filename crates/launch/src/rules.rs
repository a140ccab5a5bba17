//! The Landlock ruleset and the seccomp programs for one child, built in the parent.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules,
};
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use crate::held::Held;
use crate::{LaunchError, Network};

/// The newest ABI whose rights are asked for; older kernels get what they have (best effort,
/// and the status names what is missing).
const ABI_WANTED: ABI = ABI::V6;

/// Directories every program needs to read (and run from).
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
    "/sys", "/run",
];
/// Device files a program may read and write. Never `/dev/tty`, `/dev/pts` or `/dev/ptmx` (a
/// terminal is the person's: a child that could open one could write past Bosun's escaping or
/// push keystrokes into it) and never `/dev/shm` (a directory every process shares: a way to
/// pass data between calls or keep it after one).
const DEVICES_WRITE: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Credential files and directories under the user's home, each with what keeps it. No grant
/// of Bosun's ever names one; where a `[sandbox]` grant or the workspace would take one in, it is
/// masked in the child's mount namespace (an empty read-only file or directory takes its place).
/// A directory ends in `/`.
pub const CREDENTIALS: &[(&str, &str)] = &[
    (".git-credentials", "git's credential store"),
    (".config/git/credentials", "git's credential store (XDG)"),
    (".netrc", "logins for curl, git over HTTP, ftp"),
    (
        "_netrc",
        "logins for curl, git over HTTP (another spelling)",
    ),
    (".docker/config.json", "Docker registry logins"),
    (".npmrc", "npm registry tokens"),
    (".yarnrc.yml", "Yarn registry tokens"),
    (".pypirc", "PyPI upload tokens"),
    (".cargo/credentials.toml", "cargo registry tokens"),
    (".cargo/credentials", "cargo registry tokens (old name)"),
    (".gem/credentials", "RubyGems API keys"),
    (".m2/settings.xml", "Maven repository passwords"),
    (".aws/", "AWS CLI credentials and SSO tokens"),
    (".config/gcloud/", "Google Cloud CLI credentials"),
    (".azure/", "Azure CLI tokens"),
    (".kube/", "Kubernetes cluster credentials"),
    (".config/gh/", "GitHub CLI tokens"),
    (".terraform.d/", "Terraform Cloud tokens"),
    (".ssh/", "SSH keys"),
    (".gnupg/", "GnuPG keys"),
    (".password-store/", "pass's passwords"),
    (".local/share/keyrings/", "the desktop keyring"),
];

/// What the child may read and what it may write, each held open ([`crate::held`]): a rule
/// is made on the descriptor, never on the name again.
#[derive(Debug, Default)]
pub(crate) struct Paths {
    pub(crate) read: Vec<Held>,
    pub(crate) write: Vec<Held>,
}

/// Read-only parts of the user's home every toolchain needs (never credentials): rustup's
/// toolchains, cargo's binaries, registry and config, and git's config files — named one by
/// one, so that `~/.config/git/credentials` beside them is not taken in.
pub(crate) fn toolchain_reads(home: Option<&Path>) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let env_dir = |name: &str| std::env::var_os(name).map(PathBuf::from);
    let cargo = env_dir("CARGO_HOME").or_else(|| home.map(|h| h.join(".cargo")));
    let rustup = env_dir("RUSTUP_HOME").or_else(|| home.map(|h| h.join(".rustup")));
    if let Some(cargo) = cargo {
        for part in ["bin", "registry", "git", "config.toml", "config"] {
            paths.push(cargo.join(part));
        }
    }
    paths.extend(rustup);
    if let Some(home) = home {
        paths.push(home.join(".gitconfig"));
        for file in ["config", "ignore", "attributes"] {
            paths.push(home.join(".config/git").join(file));
        }
    }
    paths
}

/// The Landlock ruleset as an open file descriptor the child restricts itself with.
pub(crate) fn landlock(paths: &Paths, network: &Network) -> Result<OwnedFd, LaunchError> {
    landlock_with(Some(paths), network)
}

/// A ruleset of Landlock's network rules and scoping only, for a child that `bwrap` then
/// starts: a ruleset handling no filesystem access leaves `bwrap` free to mount.
pub(crate) fn landlock_network(network: &Network) -> Result<OwnedFd, LaunchError> {
    landlock_with(None, network)
}

fn landlock_with(paths: Option<&Paths>, network: &Network) -> Result<OwnedFd, LaunchError> {
    let fail = |e: landlock::RulesetError| LaunchError::Setup(format!("Landlock: {e}"));
    let all = AccessFs::from_all(ABI_WANTED);
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    if paths.is_some() {
        ruleset = ruleset.handle_access(all).map_err(fail)?;
    }
    let mut ruleset = ruleset
        .handle_access(AccessNet::from_all(ABI_WANTED))
        .map_err(fail)?
        .scope(Scope::from_all(ABI_WANTED))
        .map_err(fail)?
        .create()
        .map_err(fail)?;
    if let Some(paths) = paths {
        ruleset = filesystem_rules(ruleset, paths)?;
    }
    if let Network::TcpPorts(ports) = network {
        for port in ports {
            ruleset = ruleset
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(fail)?;
        }
    }
    Option::<OwnedFd>::from(ruleset)
        .ok_or_else(|| LaunchError::Setup("Landlock made no ruleset".to_owned()))
}

/// The directories every child reads, for the bubblewrap backend's mounts.
pub(crate) fn system_reads() -> impl Iterator<Item = PathBuf> {
    SYSTEM_READ.iter().map(PathBuf::from)
}

fn filesystem_rules(
    ruleset: landlock::RulesetCreated,
    paths: &Paths,
) -> Result<landlock::RulesetCreated, LaunchError> {
    let fail = |e: landlock::RulesetError| LaunchError::Setup(format!("Landlock: {e}"));
    let read = AccessFs::from_read(ABI_WANTED);
    let all = AccessFs::from_all(ABI_WANTED);
    // The system's own directories and devices are root's: no child can swap them, so they
    // are opened by name.
    ruleset
        .add_rules(path_beneath_rules(SYSTEM_READ, read))
        .map_err(fail)?
        .add_rules(paths.read.iter().map(|h| rule(h, read)))
        .map_err(fail)?
        .add_rules(path_beneath_rules(DEVICES_WRITE, all))
        .map_err(fail)?
        .add_rules(paths.write.iter().map(|h| rule(h, all)))
        .map_err(fail)?
        // Listing /dev, never reading a disk through it.
        .add_rules(path_beneath_rules(["/dev"], AccessFs::ReadDir))
        .map_err(fail)
}

/// A rule on a held place's descriptor; one on a file carries only a file's rights.
fn rule(
    held: &Held,
    access: BitFlags<AccessFs>,
) -> Result<PathBeneath<BorrowedFd<'_>>, landlock::RulesetError> {
    let access = if held.is_dir() {
        access
    } else {
        access & AccessFs::from_file(ABI_WANTED)
    };
    Ok(PathBeneath::new(held.fd.as_fd(), access))
}

/// The seccomp programs: refused system calls (EPERM), then `clone3` answered with ENOSYS so
/// that libc falls back to `clone`, whose flags the first program can read.
pub(crate) fn seccomp(network: &Network) -> Result<Vec<Vec<libc::sock_filter>>, LaunchError> {
    let fail = |e: seccompiler::BackendError| LaunchError::Setup(format!("seccomp: {e}"));
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| LaunchError::Setup(format!("seccomp: {e}")))?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_mount_setattr,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_setsid,
        libc::SYS_setpgid,
        libc::SYS_userfaultfd,
    ] {
        refused.insert(nr, Vec::new());
    }
    // New namespaces through clone's flags.
    let namespaces = [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWCGROUP,
    ];
    let mut clone_rules = Vec::new();
    for flag in namespaces {
        let flag = u64::from(flag.cast_unsigned());
        clone_rules.push(
            SeccompRule::new(vec![
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(flag),
                    flag,
                )
                .map_err(fail)?,
            ])
            .map_err(fail)?,
        );
    }
    refused.insert(libc::SYS_clone, clone_rules);
    refused.insert(libc::SYS_ioctl, terminal_injection_rules()?);
    // Socket families: Unix always; the internet (and netlink, which resolvers use) only with
    // a grant.
    let allowed: &[libc::c_int] = match network {
        Network::Off => &[libc::AF_UNIX],
        Network::TcpPorts(_) => &[
            libc::AF_UNIX,
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
        ],
    };
    let mut conditions = Vec::new();
    for family in allowed {
        conditions.push(
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                u64::from(family.cast_unsigned()),
            )
            .map_err(fail)?,
        );
    }
    let family_rule = SeccompRule::new(conditions).map_err(fail)?;
    refused.insert(libc::SYS_socket, vec![family_rule.clone()]);
    refused.insert(libc::SYS_socketpair, vec![family_rule]);

    let errno = |e: libc::c_int| SeccompAction::Errno(e.cast_unsigned());
    let main = SeccompFilter::new(refused, SeccompAction::Allow, errno(libc::EPERM), arch)
        .map_err(fail)?;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        errno(libc::ENOSYS),
        arch,
    )
    .map_err(fail)?;
    let mut programs = Vec::new();
    // x32 system calls carry the same architecture as x86_64 with bit 30 set in the number,
    // so the rules above would not match them: refuse every one.
    #[cfg(target_arch = "x86_64")]
    programs.push(refuse_x32());
    for filter in [main, clone3] {
        programs.push(compile(filter)?);
    }
    Ok(programs)
}

/// The `ioctl` requests that inject input into a terminal: `TIOCSTI` pushes keystrokes into its
/// input (an answer to Bosun's next approval prompt), `TIOCLINUX` can paste the console's
/// selection. The kernel reads the request as 32 bits, so only those are compared.
fn terminal_injection_rules() -> Result<Vec<SeccompRule>, LaunchError> {
    let fail = |e: seccompiler::BackendError| LaunchError::Setup(format!("seccomp: {e}"));
    let mut rules = Vec::new();
    for request in [libc::TIOCSTI, libc::TIOCLINUX] {
        rules.push(
            SeccompRule::new(vec![
                SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
                    .map_err(fail)?,
            ])
            .map_err(fail)?,
        );
    }
    Ok(rules)
}

/// A program that refuses only terminal input injection, for every child — the unconfined
/// ones too (`[sandbox] enabled = false`): a process that may use `TIOCSTI` on a terminal that
/// is not its own (one with `CAP_SYS_ADMIN`) could otherwise still answer Bosun's prompts.
pub(crate) fn terminal_filter() -> Result<Vec<libc::sock_filter>, LaunchError> {
    let fail = |e: seccompiler::BackendError| LaunchError::Setup(format!("seccomp: {e}"));
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| LaunchError::Setup(format!("seccomp: {e}")))?;
    let filter = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_ioctl, terminal_injection_rules()?)]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.cast_unsigned()),
        arch,
    )
    .map_err(fail)?;
    compile(filter)
}

/// A filter as the kernel's `struct sock_filter` array.
fn compile(filter: SeccompFilter) -> Result<Vec<libc::sock_filter>, LaunchError> {
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| LaunchError::Setup(format!("seccomp: {e}")))?;
    Ok(program
        .into_iter()
        .map(|f| libc::sock_filter {
            code: f.code,
            jt: f.jt,
            jf: f.jf,
            k: f.k,
        })
        .collect())
}

/// A program refusing (EPERM) every system call whose number has the x32 bit (`0x40000000`).
#[cfg(target_arch = "x86_64")]
fn refuse_x32() -> Vec<libc::sock_filter> {
    const LOAD_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS, offset 0: seccomp_data.nr
    const JUMP_GE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    const X32_BIT: u32 = 0x4000_0000;
    let statement = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    vec![
        statement(LOAD_NR, 0, 0, 0),
        statement(JUMP_GE, 0, 1, X32_BIT),
        statement(
            RETURN,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::EPERM.cast_unsigned(),
        ),
        statement(RETURN, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}
