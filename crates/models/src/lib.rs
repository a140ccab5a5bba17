//! Bosun's model provider adapters: a provider-neutral conversation and tool list in, a stream
//! of model events out.
//!
//! Three wire formats, each in its own module: [`openai_chat`] (OpenAI-compatible Chat
//! Completions — OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter), [`openai_responses`]
//! (the OpenAI Responses API) and [`anthropic`] (the Messages API). All stream, assemble tool
//! calls from their fragments, retry rate limits and server failures until the first byte of the
//! answer, and stop promptly when cancelled.
//!
//! This crate knows nothing of policy, of how tools run or of sessions: the agent loop decides
//! what to do with a [`ToolCall`] and sends its [`ToolResult`] back in the next request.
//!
//! ```
//! use bosun_models::{CancellationToken, Message, ModelError, ModelEvent, ModelsConfig};
//! use futures_util::StreamExt;
//!
//! let config = ModelsConfig::from_toml(
//!     r#"
//!     default_model = "local"
//!     [models.local]
//!     provider = "openai-chat"
//!     base_url = "http://127.0.0.1:11434/v1"
//!     model = "qwen3:8b"
//!     "#,
//! )?;
//! let model = config.open_default(bosun_models::process_env)?;
//! let mut request = model.request();
//! request.messages.push(Message::user("Say hello."));
//!
//! // With a server listening, collect the answer's text:
//! async fn answer(model: &bosun_models::ConfiguredModel, request: &bosun_models::ModelRequest)
//!     -> Result<String, ModelError>
//! {
//!     let mut stream = model.provider.stream(request, CancellationToken::new()).await?;
//!     let mut text = String::new();
//!     while let Some(event) = stream.next().await {
//!         if let ModelEvent::TextDelta(delta) = event? {
//!             text.push_str(&delta);
//!         }
//!     }
//!     Ok(text)
//! }
//! # let _ = answer;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod anthropic;
pub mod capability;
pub mod config;
mod error;
mod event;
pub mod image;
mod message;
pub mod openai_chat;
pub mod openai_responses;
mod provider;
pub mod redirect;
mod retry;
pub mod sse;
mod stream;
mod transport;

pub use anthropic::Anthropic;
pub use bosun_core::{FinishReason, TokenUsage, ToolCall};
pub use config::{
    ConfigError, ConfiguredModel, KeyStatus, ModelConfig, ModelListing, ModelsConfig, ProviderKind,
    build_provider, process_env,
};
pub use error::{MAX_QUOTED_CHARS, ModelError};
pub use event::{Answer, ModelEvent};
pub use image::{Image, ImageError, ImageType, MAX_IMAGE_BYTES, MAX_IMAGES_PER_MESSAGE};
pub use message::{
    AssistantPart, Message, ModelRequest, ReasoningFormat, ReasoningItem, ToolDefinition,
    ToolResult,
};
pub use openai_chat::OpenAiChat;
pub use openai_responses::OpenAiResponses;
pub use provider::{ModelStream, Provider};
pub use redirect::{
    RedirectRefused, RefusedNote, same_origin_redirects, same_origin_redirects_noting,
};
pub use retry::{RetryNotice, RetryPolicy, notify_retries};
pub use tokio_util::sync::CancellationToken;
pub use transport::{ApiKey, Connection, Timeouts, tls_config};
