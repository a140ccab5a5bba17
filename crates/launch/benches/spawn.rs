//! What the sandbox adds to starting a process: `/bin/true` spawned and waited for, unconfined,
//! confined by the Landlock backend (Landlock ruleset, seccomp programs, user and mount
//! namespaces with one protected path, pids cgroup, private TMPDIR) and by the bubblewrap
//! backend (`bwrap` building the filesystem and namespaces, the same seccomp programs, port
//! rules, cgroup and TMPDIR), side by side in one run.
//!
//! `cargo bench -p bosun-launch --bench spawn`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use bosun_launch::{Backend, Confinement, Launcher, Network, SandboxConfig};
use criterion::{Criterion, criterion_group, criterion_main};

fn spawn(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(workspace.join(".git")).unwrap();
    let launcher = Launcher::new(SandboxConfig::default());
    eprintln!("{}", launcher.status().summary());
    let bubblewrap = Launcher::new(SandboxConfig {
        backend: Backend::Bubblewrap,
        ..SandboxConfig::default()
    });
    eprintln!("{}", bubblewrap.status().summary());
    let mut confinement = Confinement::new(workspace.clone(), Network::Off);
    confinement.protected = vec![workspace.join(".git")];

    let mut group = c.benchmark_group("spawn_true");
    group.sample_size(200);
    group.bench_function("unconfined", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut command = tokio::process::Command::new("/bin/true");
            command.current_dir(&workspace).env_clear();
            assert!(command.status().await.unwrap().success());
        });
    });
    group.bench_function("confined", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut command = tokio::process::Command::new("/bin/true");
            command.current_dir(&workspace).env_clear();
            let jail = launcher.confine(&mut command, &confinement).unwrap();
            assert!(command.status().await.unwrap().success());
            drop(jail);
        });
    });
    group.bench_function("confined_bubblewrap", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut command = tokio::process::Command::new("/bin/true");
            command.current_dir(&workspace).env_clear();
            let jail = bubblewrap.confine(&mut command, &confinement).unwrap();
            assert!(command.status().await.unwrap().success());
            drop(jail);
        });
    });
    group.finish();
}

criterion_group!(benches, spawn);
criterion_main!(benches);
