//! Reading a child's pipes with a bound: a hook or a `git` talking to a hostile server may print
//! without end, and what Bosun keeps of it must not grow with it.

use std::sync::Arc;

use tokio::sync::Notify;

/// Reads `pipe` to its end, keeping at most one byte past `limit`; going past it wakes `over`
/// (the child is then stopped by whoever waits on it).
pub(crate) fn read_capped<R>(
    pipe: Option<R>,
    limit: usize,
    over: Arc<Notify>,
) -> tokio::task::JoinHandle<Vec<u8>>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    use tokio::io::AsyncReadExt;
    tokio::spawn(async move {
        let mut bytes = Vec::new();
        if let Some(pipe) = pipe {
            let _ = pipe.take(limit as u64 + 1).read_to_end(&mut bytes).await;
        }
        if bytes.len() > limit {
            over.notify_one();
        }
        bytes
    })
}

/// What a reader of a child's pipe kept, once the child ended (a pipe a process it left behind
/// still holds is not waited for past a second).
pub(crate) async fn collected(reader: tokio::task::JoinHandle<Vec<u8>>) -> Vec<u8> {
    let abort = reader.abort_handle();
    match tokio::time::timeout(std::time::Duration::from_secs(1), reader).await {
        Ok(Ok(bytes)) => bytes,
        _ => {
            abort.abort();
            Vec::new()
        }
    }
}
