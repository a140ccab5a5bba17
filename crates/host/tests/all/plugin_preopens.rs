//! A native plugin's preopen is the directory its call was judged for, opened beneath the
//! workspace root through no symbolic link: a directory swapped for a link to the outside
//! between the check and the preopen is refused, never followed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bosun_core::{Capability, CapabilityRequest, Scope};
use serde_json::json;

use crate::instance_slots::{named, native_tools, policy, sandbox};

/// `d` is exchanged atomically with a link to a folder outside the workspace, in a loop, while
/// the plugin's `read` tool is called for `d/secret.txt` with `fs.read` judged at `d` (the
/// preopen is made afresh at each call: the grant alternates with one of the root). The
/// secret outside is never read. Before, the preopen was made by name after the check, and
/// followed the link whenever it was there at that moment.
#[tokio::test(flavor = "multi_thread")]
async fn a_directory_swapped_for_a_link_never_becomes_a_plugins_preopen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("d/f.txt"), "inside").unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret").unwrap();
    let root = root.canonicalize().unwrap();
    let sandbox = sandbox(4);
    let policy = policy();
    let tools = native_tools(
        &root,
        bosun_test_programs::FS_ESCAPE,
        "escape",
        &sandbox,
        &policy,
    );
    let read = named(&tools, "read");

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let (d, link) = (root.join("d"), root.join("d-link"));
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &d,
                    rustix::fs::CWD,
                    &link,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    for i in 0..400 {
        let mut ctx = crate::builtin_context(&root);
        ctx.granted = vec![CapabilityRequest {
            capability: Capability::FsRead,
            scope: Scope {
                path: Some(if i % 2 == 0 { "d" } else { "." }.to_owned()),
                ..Scope::default()
            },
        }];
        match read.call(json!({"path": "d/secret.txt"}), &ctx).await {
            Ok(out) => {
                assert!(
                    !out.value.to_string().contains("top secret"),
                    "call {i} read outside the workspace: {}",
                    out.value
                );
            }
            // Refused: the link was there at the check or at the open.
            Err(_) => {}
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(swaps.load(Ordering::Relaxed) > 0, "the swapper never ran");
}
