//! The editor's buffers as the file access of a session's built-in file tools
//! (`fs/read_text_file`, `fs/write_text_file`): an edit lands in the buffer the person sees and
//! a read sees unsaved changes. The tools still resolve, confine, judge and trace every path
//! before they get here; this only carries text.

use std::io;
use std::path::Path;

use agent_client_protocol::v1::schema::SessionId;
use async_trait::async_trait;
use bosun_host::file_access::FileAccess;

use crate::client::ClientLink;

/// Reads and writes through the editor of one session.
#[derive(Debug)]
pub struct EditorFiles {
    link: ClientLink,
    session: SessionId,
}

impl EditorFiles {
    /// The editor's files for `session`.
    pub fn new(link: ClientLink, session: SessionId) -> Self {
        Self { link, session }
    }
}

fn editor_error(error: &agent_client_protocol::Error) -> io::Error {
    // A missing file is the common answer; the editor says so with "resource not found".
    let kind = if error.code == agent_client_protocol::v1::schema::ErrorCode::ResourceNotFound {
        io::ErrorKind::NotFound
    } else {
        io::ErrorKind::Other
    };
    io::Error::new(kind, format!("the editor answered: {}", error.message))
}

#[async_trait]
impl FileAccess for EditorFiles {
    async fn read_text(&self, path: &Path) -> io::Result<String> {
        self.link
            .read_text(&self.session, path)
            .await
            .map_err(|e| editor_error(&e))
    }

    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()> {
        self.link
            .write_text(&self.session, path, text)
            .await
            .map_err(|e| editor_error(&e))
    }
}
