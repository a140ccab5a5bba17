//! `web-tools`: fetch a web page as readable text, and search the web through an endpoint the
//! user configures. Every request goes through the sandbox's HTTP guard; this plugin only
//! bounds what it asks for (1 MiB, 20 s, 5 redirects, http and https) and what it returns.

pub mod html;
pub mod spec;

use std::time::Duration;

use bosun_sdk::http::{Request, Url, encode_query_component};
use bosun_sdk::{Plugin, ToolError, Tools, host};
use serde::Serialize;
use serde_json::Value;

use spec::{WebFetchInput, WebSearchInput};

/// The most bytes of a response body read.
pub const MAX_DOWNLOAD_BYTES: usize = 1024 * 1024;
/// The most redirects `web_fetch` follows.
pub const MAX_REDIRECTS: usize = 5;
/// The deadline of a whole fetch, redirects included.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(20);
const DEFAULT_CHARACTERS: usize = 20_000;
const MAX_CHARACTERS: usize = 100_000;
const DEFAULT_RESULTS: usize = 8;
const MAX_RESULTS: usize = 20;
const MAX_SNIPPET_CHARACTERS: usize = 500;

/// The plugin; it keeps no state.
#[derive(Default)]
pub struct WebTools;

impl Plugin for WebTools {
    fn tools() -> Tools<Self> {
        Tools::new()
            .tool(spec::WEB_FETCH, web_fetch)
            .tool(spec::WEB_SEARCH, web_search)
    }
}

bosun_sdk::export!(WebTools);

/// What `web_fetch` returns.
#[derive(Debug, PartialEq, Serialize)]
pub struct Page {
    /// The URL that answered, after redirects.
    pub url: String,
    /// The HTTP status.
    pub status: u16,
    /// The media type.
    pub content_type: Option<String>,
    /// The HTML title, if any.
    pub title: Option<String>,
    /// The readable text.
    pub text: String,
    /// Whether the download or the text was cut.
    pub truncated: bool,
    /// The URLs that redirected, in order.
    pub redirects: Vec<String>,
}

/// Fetches `input.url` and reduces it to text.
pub fn web_fetch(input: WebFetchInput) -> Result<Page, ToolError> {
    let url = Url::parse(&input.url)?;
    let max_characters = bounded(input.max_characters, DEFAULT_CHARACTERS, MAX_CHARACTERS);
    let response = Request::get(url)
        .header(
            "accept",
            "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
        )
        .header(
            "user-agent",
            concat!("bosun-web-tools/", env!("CARGO_PKG_VERSION")),
        )
        .timeout(FETCH_TIMEOUT)
        .max_body_bytes(MAX_DOWNLOAD_BYTES)
        .fetch(MAX_REDIRECTS)?;
    let content_type = response.content_type();
    let body = response.text();
    let (title, text) = match classify(content_type.as_deref(), &body) {
        Kind::Html => {
            let page = html::to_text(&body);
            (page.title, page.text)
        }
        Kind::Text => (None, body),
        Kind::Binary => {
            return Err(ToolError::invalid_input(format!(
                "{} is {}, not text: web_fetch reads HTML and text only",
                response.url,
                content_type.as_deref().unwrap_or("binary")
            )));
        }
    };
    let (text, cut) = truncate_chars(&text, max_characters);
    Ok(Page {
        url: response.url.to_string(),
        status: response.status,
        content_type,
        title,
        text,
        truncated: cut || response.truncated,
        redirects: response.redirects,
    })
}

/// One search result.
#[derive(Debug, PartialEq, Serialize)]
pub struct SearchResult {
    /// The page's title.
    pub title: String,
    /// Its URL.
    pub url: String,
    /// A snippet of its text.
    pub snippet: String,
}

/// What `web_search` returns.
#[derive(Debug, PartialEq, Serialize)]
pub struct SearchResults {
    /// The query as sent.
    pub query: String,
    /// The results, at most the number asked for.
    pub results: Vec<SearchResult>,
}

/// Asks the configured endpoint: `GET <search_endpoint>?q=<query>` (or `&q=` when the endpoint
/// already has a query), expecting JSON results (see [`parse_results`]). Redirects are not
/// followed: the user configures the endpoint's final URL.
pub fn web_search(input: WebSearchInput) -> Result<SearchResults, ToolError> {
    let query = input.query.trim().to_owned();
    if query.is_empty() {
        return Err(ToolError::invalid_input("`query` is empty"));
    }
    let endpoint: String = host::config_value(spec::SEARCH_ENDPOINT)?.ok_or_else(|| {
        ToolError::plugin_error(
            "no search endpoint is configured: set `search_endpoint` to the search service's \
             URL in this plugin's config table",
        )
    })?;
    let separator = if endpoint.contains('?') { '&' } else { '?' };
    let url = Url::parse(&format!(
        "{endpoint}{separator}q={}",
        encode_query_component(&query)
    ))
    .map_err(|e| ToolError::plugin_error(format!("the configured search_endpoint: {e}")))?;
    let response = Request::get(url)
        .header("accept", "application/json")
        .timeout(FETCH_TIMEOUT)
        .max_body_bytes(MAX_DOWNLOAD_BYTES)
        .send()?;
    if response.is_redirect() {
        return Err(ToolError::plugin_error(format!(
            "the search endpoint redirects to {}: configure that URL instead",
            response.header("location").unwrap_or_default()
        )));
    }
    if !(200..300).contains(&response.status) {
        return Err(ToolError::io_error(format!(
            "the search endpoint answered HTTP {}",
            response.status
        ))
        .retryable());
    }
    let json: Value = serde_json::from_slice(&response.body).map_err(|e| {
        ToolError::plugin_error(format!("the search endpoint did not answer JSON: {e}"))
    })?;
    let max = bounded(input.max_results, DEFAULT_RESULTS, MAX_RESULTS);
    Ok(SearchResults {
        query,
        results: parse_results(&json, max),
    })
}

/// Reads results from the common JSON shapes: `results[]` (SearXNG: `title`, `url`,
/// `content`), `items[]` (`title`, `link`, `snippet`) and `web.results[]` (`title`, `url`,
/// `description`). Entries without a URL are skipped.
pub fn parse_results(json: &Value, max: usize) -> Vec<SearchResult> {
    let list = ["/results", "/items", "/web/results"]
        .iter()
        .find_map(|pointer| json.pointer(pointer).and_then(Value::as_array));
    let text = |item: &Value, keys: &[&str]| {
        keys.iter()
            .find_map(|k| item.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned()
    };
    list.into_iter()
        .flatten()
        .filter_map(|item| {
            let url = text(item, &["url", "link"]);
            (!url.is_empty()).then(|| SearchResult {
                title: text(item, &["title", "name"]),
                url,
                snippet: truncate_chars(
                    &text(item, &["content", "snippet", "description"]),
                    MAX_SNIPPET_CHARACTERS,
                )
                .0,
            })
        })
        .take(max)
        .collect()
}

enum Kind {
    Html,
    Text,
    Binary,
}

fn classify(content_type: Option<&str>, body: &str) -> Kind {
    match content_type {
        Some("text/html" | "application/xhtml+xml") => Kind::Html,
        Some(t)
            if t.starts_with("text/")
                || t.ends_with("+json")
                || t.ends_with("+xml")
                || matches!(
                    t,
                    "application/json" | "application/xml" | "application/javascript"
                ) =>
        {
            Kind::Text
        }
        Some(_) => Kind::Binary,
        None => {
            let head: String = body
                .chars()
                .take(512)
                .collect::<String>()
                .to_ascii_lowercase();
            if head.contains("<html") || head.contains("<!doctype html") {
                Kind::Html
            } else if body.contains('\u{FFFD}') || body.contains('\0') {
                Kind::Binary
            } else {
                Kind::Text
            }
        }
    }
}

fn bounded(asked: Option<u32>, default: usize, max: usize) -> usize {
    asked.map_or(default, |n| (n as usize).clamp(1, max))
}

/// The first `max` characters of `text`, and whether it was cut.
fn truncate_chars(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (text[..end].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_sdk::testing;
    use serde_json::json;

    #[test]
    fn metadata_declares_the_two_tools_and_their_reach() {
        let doc = testing::check_metadata::<WebTools>(bosun_sdk::metadata!()).unwrap();
        assert_eq!(
            doc["tools"][0]["capabilities"],
            json!([{"capability": "net.http", "host_from_input": "/url"}])
        );
        assert_eq!(
            doc["tools"][1]["capabilities"],
            json!([{"capability": "net.http", "hosts_from_config": "search_endpoint"}])
        );
        assert_eq!(
            doc["tools"][0]["input_schema"]["required"],
            json!(["url"]),
            "maxCharacters is optional"
        );
    }

    #[test]
    fn only_http_and_https_are_fetched() {
        let err = testing::call::<WebTools>("web_fetch", json!({"url": "file:///etc/passwd"}))
            .unwrap_err();
        assert_eq!(err.code, "invalid_input");
    }

    #[test]
    fn search_without_an_endpoint_says_what_to_configure() {
        testing::clear_config();
        let err = testing::call::<WebTools>("web_search", json!({"query": "rust"})).unwrap_err();
        assert!(err.message.contains("search_endpoint"), "{err}");
    }

    #[test]
    fn results_are_read_from_the_common_shapes() {
        let searxng = json!({"results": [
            {"title": "A", "url": "https://a.example/", "content": "about a"},
            {"title": "no url"},
            {"title": "B", "url": "https://b.example/", "content": "about b"},
        ]});
        assert_eq!(
            parse_results(&searxng, 8),
            vec![
                SearchResult {
                    title: "A".into(),
                    url: "https://a.example/".into(),
                    snippet: "about a".into()
                },
                SearchResult {
                    title: "B".into(),
                    url: "https://b.example/".into(),
                    snippet: "about b".into()
                },
            ]
        );
        let items =
            json!({"items": [{"title": "C", "link": "https://c.example/", "snippet": "s"}]});
        assert_eq!(parse_results(&items, 8)[0].url, "https://c.example/");
        let brave = json!({"web": {"results": [{"title": "D", "url": "https://d.example/", "description": "d"}]}});
        assert_eq!(parse_results(&brave, 1)[0].snippet, "d");
        assert!(parse_results(&json!({"other": 1}), 8).is_empty());
    }

    #[test]
    fn text_is_cut_on_character_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), ("hé".to_owned(), true));
        assert_eq!(truncate_chars("hé", 2), ("hé".to_owned(), false));
    }
}
