//! What finding the workspace's protected paths costs before every process Bosun starts: the
//! whole walk (`bosun_host::protected_paths`, no depth bound, no skipped directory) over
//! synthetic workspaces of 1,000, 10,000 and 100,000 entries shaped like a project with a
//! dependency tree (directories of 20 files, nested three deep, a `.git` in every 50th).
//!
//! `cargo bench -p bosun-host --bench protected_walk`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

/// `entries` files and directories under `root`.
fn make(root: &Path, entries: usize) {
    let mut made = 0;
    let mut package = 0;
    while made < entries {
        let dir = root.join(format!(
            "node_modules/p{}/lib/d{}",
            package / 100,
            package % 100
        ));
        std::fs::create_dir_all(&dir).unwrap();
        made += 3;
        if package % 50 == 0 {
            std::fs::create_dir_all(dir.join(".git")).unwrap();
            made += 1;
        }
        for file in 0..20 {
            std::fs::write(dir.join(format!("f{file}.js")), "").unwrap();
        }
        made += 20;
        package += 1;
    }
}

fn walk(c: &mut Criterion) {
    let mut group = c.benchmark_group("protected_paths");
    group.sample_size(20);
    for entries in [1_000usize, 10_000, 100_000] {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), entries);
        let found = bosun_host::protected_paths(dir.path()).len();
        eprintln!("{entries} entries: {found} protected paths");
        group.bench_with_input(BenchmarkId::from_parameter(entries), &entries, |b, _| {
            b.iter(|| bosun_host::protected_paths(dir.path()));
        });
    }
    group.finish();
}

criterion_group!(benches, walk);
criterion_main!(benches);
