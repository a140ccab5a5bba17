//! A person attaching an image by its path (`bosun run --image FILE`, `@shot.png` or a pasted
//! path in the terminal UI): the file is read beneath the workspace root exactly as the file
//! tools read — resolved, links followed only while they stay inside, opened from the root's
//! handle without following a final link out — bounded before it is read, and taken as an
//! image only if its first bytes say it is one. A path outside the workspace is refused.

use std::io::Read;

use bosun_host::Workspace;
use bosun_models::{Image, ImageError, ImageType, MAX_IMAGE_BYTES};

/// Why a path cannot be attached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachError {
    /// The path is outside the workspace, missing, or not a regular file.
    #[error("cannot attach `{path}`: {message}")]
    Path {
        /// The path as given.
        path: String,
        /// Why, and what to do.
        message: String,
    },
    /// The file is not an image Bosun sends.
    #[error(transparent)]
    Image(#[from] ImageError),
}

/// Reads the image at `path` (relative to the workspace's working directory, or absolute inside
/// the root).
///
/// # Errors
/// [`AttachError::Path`] for a path outside the workspace (`outside_workspace`), a missing file
/// or a directory; [`AttachError::Image`] for a file over [`MAX_IMAGE_BYTES`] or one that is
/// not a PNG, JPEG, GIF or WebP by its bytes.
pub fn attach_image(workspace: &Workspace, path: &str) -> Result<Image, AttachError> {
    let refused = |message: String| AttachError::Path {
        path: path.to_owned(),
        message,
    };
    let absolute = workspace.resolve(path).map_err(|e| refused(e.message))?;
    let relative = workspace
        .beneath(&absolute)
        .map_err(|e| refused(e.message))?;
    let root = workspace
        .handle()
        .map_err(|e| refused(format!("the workspace root cannot be opened: {e}")))?;
    let file = root
        .open_read(relative)
        .map_err(|e| refused(bosun_host::workspace::io_error(&e, path).message))?;
    let meta = file
        .metadata()
        .map_err(|e| refused(format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(refused("it is not a regular file".to_owned()));
    }
    if meta.len() > MAX_IMAGE_BYTES as u64 {
        return Err(ImageError::TooLarge {
            what: path.to_owned(),
            bytes: meta.len(),
        }
        .into());
    }
    let mut bytes = Vec::new();
    file.take(MAX_IMAGE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refused(format!("cannot read it: {e}")))?;
    Ok(Image::from_bytes(path, bytes)?)
}

/// Whether `word` names an image by its extension (`shot.png`, `a/b.JPEG`): what decides that a
/// mention or a pasted path is attached as an image rather than named in the text. The content
/// is still checked by its bytes when it is read.
pub fn is_image_path(word: &str) -> bool {
    ImageType::looks_like_image_name(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("ws");
        std::fs::create_dir_all(root.join("shots")).unwrap();
        std::fs::write(root.join("shots/dot.png"), PNG).unwrap();
        std::fs::write(base.join("secret.png"), PNG).unwrap();
        let workspace = Workspace::new(&root, &root).unwrap();
        (dir, workspace)
    }

    #[test]
    fn an_image_in_the_workspace_is_attached() {
        let (_dir, ws) = workspace();
        let image = attach_image(&ws, "shots/dot.png").unwrap();
        assert_eq!(image.bytes(), Some(PNG));
        assert_eq!(image.media_type, ImageType::Png);
    }

    #[test]
    fn an_image_path_outside_the_workspace_is_refused() {
        let (_dir, ws) = workspace();
        let outside = ws.root().parent().unwrap().join("secret.png");
        for path in ["../secret.png".to_owned(), outside.display().to_string()] {
            let err = attach_image(&ws, &path).unwrap_err();
            assert!(
                matches!(&err, AttachError::Path { message, .. } if message.contains("outside")),
                "{path}: {err}"
            );
        }
        // Nor through a link that leads out.
        std::os::unix::fs::symlink(&outside, ws.root().join("link.png")).unwrap();
        let err = attach_image(&ws, "link.png").unwrap_err();
        assert!(matches!(err, AttachError::Path { .. }), "{err}");
    }

    #[test]
    fn a_file_that_claims_png_but_is_not_is_refused() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("fake.png"), "#!/bin/sh\nrm -rf ~\n").unwrap();
        let err = attach_image(&ws, "fake.png").unwrap_err();
        assert!(
            matches!(err, AttachError::Image(ImageError::NotAnImage { .. })),
            "{err}"
        );
    }

    #[test]
    fn an_oversized_image_is_refused_before_it_is_read() {
        let (_dir, ws) = workspace();
        let file = std::fs::File::create(ws.root().join("huge.png")).unwrap();
        file.set_len(MAX_IMAGE_BYTES as u64 + 1).unwrap();
        let err = attach_image(&ws, "huge.png").unwrap_err();
        assert!(
            matches!(err, AttachError::Image(ImageError::TooLarge { .. })),
            "{err}"
        );
        assert!(is_image_path("a/B.JPEG") && !is_image_path("notes.txt"));
    }
}
