//! The one interface the agent loop sees: a conversation in, a stream of events out.

use std::pin::Pin;

use futures_util::Stream;
use tokio_util::sync::CancellationToken;

use crate::{ModelError, ModelEvent, ModelRequest};

/// A model's answer as it arrives. It owns the HTTP connection: dropping it closes the
/// connection. See [`ModelEvent`] for the order of events; after an `Err` it ends.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// A model provider adapter.
///
/// `stream` sends the request — retrying rate limits, server failures and connection failures
/// until the first byte of the answer arrives — and returns the stream of events. Errors before
/// that point come back as `Err`; after it, as the stream's last item. When `cancel` fires,
/// retries stop and the stream yields [`ModelError::Cancelled`] and drops the connection.
#[async_trait::async_trait]
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The wire format's name: `openai-chat`, `openai-responses` or `anthropic`.
    fn name(&self) -> &'static str;

    /// Whether requests may carry images. The adapters themselves send any image; an entry
    /// that takes none is wrapped so that it refuses them ([`crate::config`]'s `images` key).
    fn takes_images(&self) -> bool {
        true
    }

    /// Starts one model request.
    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError>;
}
