//! Images in a person's message, as each provider's wire format carries them, and the refusal
//! of an image to an entry that takes none — checked against what the loopback server received.

use bosun_models::{Image, Message, ModelError, ModelsConfig, ProviderKind};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::server::{Reply, TestServer};
use crate::support::{self, request, sse};

/// The smallest valid PNG: one transparent pixel.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];
/// [`PNG`] in base64, as the providers must receive it.
const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAACklEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";

fn with_image() -> bosun_models::ModelRequest {
    let mut req = request("m");
    req.messages = vec![Message::user_with_images(
        "What does this show?",
        vec![Image::from_bytes("dot.png", PNG.to_vec()).unwrap()],
    )];
    req.tools.clear();
    req
}

/// The `messages` (or `input`) the server received for [`with_image`].
async fn sent(kind: ProviderKind) -> Value {
    let server = TestServer::start([Reply::sse(sse(kind, "text")).into()]).await;
    let provider = support::provider(kind, &server);
    support::events(&*provider, &with_image()).await;
    let body = server.bodies().remove(0);
    match kind {
        ProviderKind::OpenaiResponses => body["input"].clone(),
        _ => body["messages"].clone(),
    }
}

#[tokio::test]
async fn anthropic_sends_a_base64_image_block_before_the_text() {
    assert_eq!(
        sent(ProviderKind::Anthropic).await,
        json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}},
            {"type": "text", "text": "What does this show?"},
        ]}])
    );
}

#[tokio::test]
async fn openai_chat_sends_an_image_url_data_url() {
    assert_eq!(
        sent(ProviderKind::OpenaiChat).await,
        json!([
            {"role": "system", "content": "You are Bosun's test agent."},
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_BASE64}")}},
                {"type": "text", "text": "What does this show?"},
            ]},
        ])
    );
}

#[tokio::test]
async fn openai_responses_sends_an_input_image() {
    assert_eq!(
        sent(ProviderKind::OpenaiResponses).await,
        json!([{"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_BASE64}"), "detail": "auto"},
            {"type": "input_text", "text": "What does this show?"},
        ]}])
    );
}

#[tokio::test]
async fn a_message_without_images_keeps_its_plain_shape() {
    let server =
        TestServer::start([Reply::sse(sse(ProviderKind::OpenaiChat, "text")).into()]).await;
    let provider = support::provider(ProviderKind::OpenaiChat, &server);
    support::events(&*provider, &request("m")).await;
    assert_eq!(
        server.bodies()[0]["messages"][1],
        json!({"role": "user", "content": "What is in src/lib.rs?"})
    );
}

/// An image whose bytes are not held (a stored reference whose file is gone) is a text note,
/// never an empty image.
#[test]
fn an_image_without_bytes_is_a_note() {
    let image = Image::from_bytes("dot.png", PNG.to_vec()).unwrap();
    let reference: Image = serde_json::from_value(serde_json::to_value(&image).unwrap()).unwrap();
    let mut req = with_image();
    req.messages = vec![Message::user_with_images("see", vec![reference])];
    let body = bosun_models::Anthropic::request_body(&req);
    let note = &body["messages"][0]["content"][0];
    assert_eq!(note["type"], "text");
    assert!(
        note["text"].as_str().unwrap().contains("image/png"),
        "{note}"
    );
}

fn entries(url: &str) -> ModelsConfig {
    ModelsConfig::from_toml(&format!(
        r#"
[models.blind]
provider = "openai-chat"
base_url = "{url}"
model = "gpt-4o"
images = false

[models.local]
provider = "anthropic"
base_url = "{url}"
model = "some-local-model"

[models.seeing]
provider = "anthropic"
base_url = "{url}"
model = "some-local-model"
images = true
"#
    ))
    .unwrap()
}

#[tokio::test]
async fn an_image_to_a_text_only_model_is_refused_before_sending() {
    let server = TestServer::start([Reply::sse(sse(ProviderKind::Anthropic, "text")).into()]).await;
    let config = entries(&server.url);
    for name in ["blind", "local"] {
        let model = config.open(name, |_| None).unwrap();
        assert!(!model.images, "{name}");
        assert!(!model.provider.takes_images());
        let error = model
            .provider
            .stream(&with_image(), bosun_models::CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert_eq!(
            error,
            ModelError::ImagesNotTaken {
                model: name.to_owned()
            }
        );
        assert!(
            error
                .to_string()
                .contains(&format!("set `images = true` in [models.{name}]")),
            "{error}"
        );
    }
    assert!(server.requests().is_empty(), "nothing was sent");
    // Text still goes through, and an entry that says it reads images sends them.
    let seeing = config.open("seeing", |_| None).unwrap();
    assert!(seeing.images && seeing.provider.takes_images());
    support::events(&*seeing.provider, &with_image()).await;
    assert_eq!(
        server.bodies()[0]["messages"][0]["content"][0]["type"],
        "image"
    );
}
