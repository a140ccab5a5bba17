//! What `web-tools` declares. Shared by build.rs (metadata) and the library (inputs, names).
//!
//! `web_fetch` reaches the host of the URL in its input (`host_from_input: "/url"`): policy
//! judges `net.http:<that host>` on each call, and the sandbox refuses any other authority — so
//! a redirect to another host fails with `denied`, and the model can fetch the new URL in a call
//! of its own, which policy then judges. `web_search` reaches only the endpoint the user put in
//! the plugin's config (`hosts_from_config: "search_endpoint"`), never one from the model.

use bosun_sdk::spec::{Capability, PluginSpec, Risk, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;

/// The `web_fetch` tool's name.
pub const WEB_FETCH: &str = "web_fetch";
/// The `web_search` tool's name.
pub const WEB_SEARCH: &str = "web_search";
/// The config key holding the search endpoint's URL.
pub const SEARCH_ENDPOINT: &str = "search_endpoint";

/// Input of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebFetchInput {
    /// The http or https URL to fetch.
    pub url: String,
    /// The most characters of text to return (default 20000, at most 100000).
    #[schemars(range(min = 1, max = 100_000))]
    pub max_characters: Option<u32>,
}

/// Input of `web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebSearchInput {
    /// What to search for.
    pub query: String,
    /// The most results to return (default 8, at most 20).
    #[schemars(range(min = 1, max = 20))]
    pub max_results: Option<u32>,
}

/// The plugin as its metadata declares it.
pub fn plugin() -> PluginSpec {
    bosun_sdk::plugin_spec!()
        .tool(
            ToolSpec::new::<WebFetchInput>(
                WEB_FETCH,
                "Fetches a web page over http or https and returns its readable text (HTML reduced \
             to text), its title and its final URL. Follows up to 5 redirects; each call may \
             reach only the host of its URL, so a redirect to another host fails as `denied` \
             naming the new URL, which you can fetch in a call of its own. Reads at most 1 MiB.",
            )
            .risk(Risk::Network)
            .capability(Capability::net_http().host_from_input("/url")),
        )
        .tool(
            ToolSpec::new::<WebSearchInput>(
                WEB_SEARCH,
                "Searches the web with the search service configured for this plugin and returns \
             results as title, URL and snippet.",
            )
            .risk(Risk::Network)
            .capability(Capability::net_http().hosts_from_config(SEARCH_ENDPOINT)),
        )
}
