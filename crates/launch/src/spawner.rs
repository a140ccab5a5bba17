//! The one thread that starts every child [`crate::Launcher::spawn`] starts.
//!
//! The kernel's parent-death signal (`PR_SET_PDEATHSIG`) is sent when the *thread* that forked
//! ends, not the process: a child started from a runtime's short-lived blocking thread would be
//! killed when that thread retires. Forking from one thread that lives as long as the process
//! makes the signal mean what it should — Bosun is gone — so the child is asked for it only
//! when it was forked here ([`crate::sys::ON_SPAWNER`]).

use std::io;
use std::sync::OnceLock;
use std::sync::mpsc::{Sender, sync_channel};

type Job = Box<dyn FnOnce() + Send>;

/// Starts `command` on the spawner thread, inside the caller's Tokio runtime.
pub(crate) fn spawn(mut command: tokio::process::Command) -> io::Result<tokio::process::Child> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|e| io::Error::other(format!("a child must be started within a runtime: {e}")))?;
    let (answer, answered) = sync_channel(1);
    let job: Job = Box::new(move || {
        let _entered = runtime.enter();
        let _ = answer.send(command.spawn());
    });
    queue()?
        .send(job)
        .map_err(|_| io::Error::other("the thread that starts children has ended"))?;
    answered
        .recv()
        .map_err(|_| io::Error::other("the thread that starts children dropped the request"))?
}

fn queue() -> io::Result<&'static Sender<Job>> {
    static QUEUE: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (sender, jobs) = std::sync::mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("bosun-spawn".to_owned())
                .spawn(move || {
                    crate::sys::ON_SPAWNER.with(|on| on.set(true));
                    for job in jobs {
                        job();
                    }
                })
                .ok()
                .map(|_| sender)
        })
        .as_ref()
        .ok_or_else(|| io::Error::other("the thread that starts children could not be made"))
}
