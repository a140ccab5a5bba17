//! Configuration to a working provider: keys read through an environment lookup (the process
//! environment is never changed), missing keys reported, cancellation during a retry wait.

use std::time::{Duration, Instant};

use bosun_models::{
    CancellationToken, ConfigError, KeyStatus, ModelError, ModelsConfig, ProviderKind,
};
use pretty_assertions::assert_eq;

use crate::server::{Reply, TestServer};
use crate::support::{self, request, sse};

fn config(url: &str) -> ModelsConfig {
    ModelsConfig::from_toml(&format!(
        r#"
default_model = "local"

[models.local]
provider = "openai-chat"
base_url = "{url}"
model = "qwen3:8b"
api_key_env = "BOSUN_TEST_KEY"
context_window = 32768
max_output_tokens = 4096

[models.claude]
provider = "anthropic"
base_url = "{url}"
model = "claude-sonnet-4-5"
api_key_env = "BOSUN_TEST_ANTHROPIC_KEY"
"#
    ))
    .unwrap()
}

fn env(name: &str) -> Option<String> {
    (name == "BOSUN_TEST_KEY").then(|| "local-secret".to_owned())
}

#[tokio::test]
async fn missing_api_key_says_which_variable_to_set() {
    let config = config("http://127.0.0.1:9");
    let error = config.open("claude", env).unwrap_err();
    assert_eq!(
        error,
        ConfigError::MissingKey {
            model: "claude".into(),
            env: "BOSUN_TEST_ANTHROPIC_KEY".into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "the API key for [models.claude] is missing: set BOSUN_TEST_ANTHROPIC_KEY or change api_key_env in [models.claude]"
    );
    // An empty variable is as good as none.
    let error = config.open("claude", |_| Some(String::new())).unwrap_err();
    assert!(matches!(error, ConfigError::MissingKey { .. }));
}

#[tokio::test]
async fn listing_reports_keys_without_showing_them() {
    let config = config("http://127.0.0.1:9");
    let listing = config.list(env);
    let keys: Vec<_> = listing
        .iter()
        .map(|m| (m.name.as_str(), m.provider, m.key, m.is_default))
        .collect();
    assert_eq!(
        keys,
        vec![
            ("claude", ProviderKind::Anthropic, KeyStatus::Missing, false),
            ("local", ProviderKind::OpenaiChat, KeyStatus::Present, true),
        ]
    );
    let json = serde_json::to_string(&listing).unwrap();
    assert!(!json.contains("local-secret"), "{json}");
}

#[tokio::test]
async fn configured_model_streams_with_the_key_from_the_environment() {
    let server =
        TestServer::start([Reply::sse(sse(ProviderKind::OpenaiChat, "text")).into()]).await;
    let config = config(&server.url);
    let model = config.open_default(env).unwrap();
    assert_eq!(model.provider.name(), "openai-chat");
    assert_eq!(model.context_window, Some(32768));
    let mut req = model.request();
    req.messages = request("ignored").messages;
    let answer = support::answer(&*model.provider, &req).await;
    assert_eq!(answer.text(), "Hello, world.");
    let sent = &server.requests()[0];
    assert_eq!(sent.headers["authorization"], "Bearer local-secret");
    assert_eq!(sent.body["model"], "qwen3:8b");
    assert_eq!(sent.body["max_tokens"], 4096);
    assert!(!format!("{model:?}").contains("local-secret"));
}

#[tokio::test]
async fn cancellation_during_a_retry_wait_returns_promptly() {
    let server = TestServer::start([Reply::status(503, "{}").header("retry-after", "30")]).await;
    let provider = support::provider(ProviderKind::OpenaiResponses, &server);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let result = provider.stream(&request("m"), cancel).await;
    assert_eq!(result.err(), Some(ModelError::Cancelled));
    // Well short of the 30 s the server asked for, with room for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn unreachable_server_is_a_connect_error_after_retries() {
    // Bind a port, then close it, so nothing listens there.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let provider = support::provider_with(
        ProviderKind::Anthropic,
        bosun_models::Connection::new(&url).retry(support::fast_retry()),
    );
    let error = support::open_error(&*provider, &request("m")).await;
    assert!(
        matches!(&error, ModelError::Connect { url: u, .. } if *u == format!("{url}/v1/messages")),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("check base_url and that the server is running")
    );
}

#[tokio::test]
async fn an_html_error_page_is_summarised_and_a_404_names_the_url() {
    let page = "<!DOCTYPE html>\n<html><head><title>502 Bad\n Gateway</title></head>\
                <body><h1>Bad Gateway</h1><p>nginx</p><script>lots of markup</script></body></html>";
    let server = TestServer::start([
        Reply::status(400, page).header("content-type", "text/html"),
        Reply::status(404, "<html><body><h1>Not Found</h1></body></html>"),
    ])
    .await;
    let provider = support::provider_with(
        ProviderKind::OpenaiChat,
        bosun_models::Connection::new(&server.url).retry(support::fast_retry()),
    );
    let error = support::open_error(&*provider, &request("m"))
        .await
        .to_string();
    assert!(
        error.contains("an HTML page titled \"502 Bad Gateway\""),
        "{error}"
    );
    assert!(
        !error.contains("<script>") && !error.contains("DOCTYPE"),
        "{error}"
    );
    let error = support::open_error(&*provider, &request("m"))
        .await
        .to_string();
    assert!(
        error.contains(&format!("{}/chat/completions was not found", server.url)),
        "{error}"
    );
    assert!(error.contains("\"Not Found\""), "{error}");
}

#[test]
fn the_read_timeout_is_a_config_key_with_a_range() {
    let text = |secs: u64| {
        format!(
            "[models.slow]\nprovider = \"openai-chat\"\nmodel = \"m\"\nread_timeout_secs = {secs}\n"
        )
    };
    let ok = ModelsConfig::from_toml(&text(900)).unwrap();
    assert!(ok.validate().is_ok());
    let error = ModelsConfig::from_toml(&text(0)).unwrap_err().to_string();
    assert!(
        error.contains("read_timeout_secs") && error.contains("1 to 3600"),
        "{error}"
    );
}

#[tokio::test]
async fn a_local_server_gets_no_key_from_the_standard_variables() {
    let server =
        TestServer::start([Reply::sse(sse(ProviderKind::OpenaiChat, "text")).into()]).await;
    let config = ModelsConfig::from_toml(&format!(
        "[models.local]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"m\"\n",
        server.url
    ))
    .unwrap();
    let standard = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-openai-secret".to_owned());
    let model = config.open("local", standard).unwrap();
    let mut req = model.request();
    req.messages = request("ignored").messages;
    support::answer(&*model.provider, &req).await;
    let sent = &server.requests()[0];
    assert!(
        !sent.headers.contains_key("authorization"),
        "{:?}",
        sent.headers
    );
    assert_eq!(config.list(standard)[0].key, KeyStatus::NotNeeded);
}

/// A server that accepts connections and reads the request, then never answers.
async fn silent_server() -> String {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    url
}

#[tokio::test]
async fn a_hung_server_fails_with_no_answer_and_retries_say_so() {
    let url = silent_server().await;
    let provider = support::provider_with(
        ProviderKind::OpenaiChat,
        bosun_models::Connection::new(&url)
            .retry(support::fast_retry())
            .timeouts(bosun_models::Timeouts {
                connect: Duration::from_secs(5),
                idle: Duration::from_millis(300),
            }),
    );
    let notices = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = notices.clone();
    let on_retry: std::sync::Arc<dyn Fn(bosun_models::RetryNotice) + Send + Sync> =
        std::sync::Arc::new(move |notice| seen.lock().unwrap().push(notice.reason));
    let error =
        bosun_models::notify_retries(on_retry, support::open_error(&*provider, &request("m")))
            .await;
    assert!(
        matches!(&error, ModelError::NoAnswer { headers: false, .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("sent no answer within 0.3 s"),
        "{error}"
    );
    assert_eq!(
        *notices.lock().unwrap(),
        vec!["no answer within 0.3 s".to_owned(); 3]
    );
}

#[tokio::test]
async fn a_stream_that_stops_midway_fails_after_the_idle_timeout() {
    let server = TestServer::start([Reply::sse(sse(ProviderKind::OpenaiChat, "cut"))
        .then_hang()
        .into()])
    .await;
    let config = ModelsConfig::from_toml(&format!(
        "[models.slow]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"m\"\nread_timeout_secs = 1\n",
        server.url
    ))
    .unwrap();
    let model = config.open("slow", |_| None).unwrap();
    let items = support::run(&*model.provider, &request("m")).await;
    let error = items.last().unwrap().clone().unwrap_err();
    assert!(
        matches!(&error, ModelError::Idle { idle, .. } if *idle == Duration::from_secs(1)),
        "{error:?}"
    );
    assert_eq!(error.short_reason(), "nothing sent for 1 s");
}

#[test]
fn the_idle_timeout_is_thirty_seconds_by_default() {
    assert_eq!(
        bosun_models::Timeouts::default().idle,
        Duration::from_secs(30)
    );
}
