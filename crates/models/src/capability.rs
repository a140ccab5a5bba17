//! What a model entry can take besides text: whether it reads images. Known for the official
//! providers' model ids (a table by prefix), set with `images = true|false` in
//! `[models.<name>]` for any other, and enforced here, below every caller: the adapter of an
//! entry that takes no images refuses a request carrying one before anything is sent.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::{ModelError, ModelRequest, ModelStream, Provider};

/// Official model ids that read images, by prefix (longest match wins; `false` entries carve
/// text-only members out of a family). Local servers' models are not listed: their entries say
/// `images = true` when the model is a vision model.
const KNOWN_IMAGES: &[(&str, bool)] = &[
    ("claude-3", true),
    ("claude-opus-4", true),
    ("claude-sonnet-4", true),
    ("claude-haiku-4", true),
    ("claude-2", false),
    ("claude-instant", false),
    ("gpt-5", true),
    ("gpt-4.1", true),
    ("gpt-4o", true),
    ("gpt-4o-audio", false),
    ("gpt-4-turbo", true),
    ("o1", true),
    ("o1-mini", false),
    ("o3", true),
    ("o3-mini", false),
    ("o4-mini", true),
    ("codex-", true),
    ("gpt-3.5", false),
];

/// Whether the official model id `model` is known to read images (`None`: not known).
pub fn known_images(model: &str) -> Option<bool> {
    KNOWN_IMAGES
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, takes)| *takes)
}

/// An adapter of an entry that takes no images: requests carrying one are refused before they
/// are sent, with an error naming the entry and the `images` key.
#[derive(Debug)]
pub(crate) struct TextOnly {
    pub(crate) inner: Arc<dyn Provider>,
    /// The `[models.<name>]` entry.
    pub(crate) entry: String,
}

#[async_trait::async_trait]
impl Provider for TextOnly {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn takes_images(&self) -> bool {
        false
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        if request.has_images() {
            return Err(ModelError::ImagesNotTaken {
                model: self.entry.clone(),
            });
        }
        self.inner.stream(request, cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_by_family() {
        assert_eq!(known_images("claude-sonnet-4-5-20250929"), Some(true));
        assert_eq!(known_images("claude-3-5-haiku-latest"), Some(true));
        assert_eq!(known_images("claude-2.1"), Some(false));
        assert_eq!(known_images("gpt-4o-mini"), Some(true));
        assert_eq!(known_images("o3-mini"), Some(false));
        assert_eq!(known_images("o3"), Some(true));
        assert_eq!(known_images("qwen3:8b"), None);
    }
}
