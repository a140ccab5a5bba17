//! The OAuth sign-in's files: where tokens are kept, that they are bound to the server's URL,
//! and that forgetting them says whether there was anything to forget.

use bosun_mcp::oauth::{credentials_path, login, logout, signed_in};

use crate::Dirs;

/// The file rmcp's credential store reads back: the URL the tokens were given for and the
/// tokens themselves.
fn keep(dirs: &Dirs, name: &str, url: &str) {
    let path = credentials_path(&dirs.home, name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let kept = serde_json::json!({
        "url": url,
        "credentials": {
            "client_id": "bosun",
            "token_response": null,
            "granted_scopes": [],
            "token_received_at": null
        }
    });
    std::fs::write(&path, kept.to_string()).unwrap();
}

#[test]
fn credentials_are_kept_per_server_name() {
    let dirs = Dirs::new();
    let path = credentials_path(&dirs.home, "docs");
    assert_eq!(path, dirs.home.join("mcp-credentials").join("docs.json"));
}

#[test]
fn a_sign_in_counts_only_for_the_url_it_was_given_for() {
    let dirs = Dirs::new();
    assert!(!signed_in(&dirs.home, "docs", "https://docs.example/mcp"));
    keep(&dirs, "docs", "https://docs.example/mcp");
    assert!(signed_in(&dirs.home, "docs", "https://docs.example/mcp"));
    assert!(!signed_in(&dirs.home, "docs", "https://other.example/mcp"));
    assert!(!signed_in(&dirs.home, "other", "https://docs.example/mcp"));
}

#[test]
fn logout_forgets_the_tokens_and_says_whether_there_were_any() {
    let dirs = Dirs::new();
    keep(&dirs, "docs", "https://docs.example/mcp");
    assert!(matches!(logout(&dirs.home, "docs"), Ok(true)));
    assert!(!credentials_path(&dirs.home, "docs").exists());
    assert!(!signed_in(&dirs.home, "docs", "https://docs.example/mcp"));
    assert!(matches!(logout(&dirs.home, "docs"), Ok(false)));
}

/// A server that publishes no OAuth metadata: the sign-in fails in words naming the server,
/// shows no address to open, and keeps nothing.
#[tokio::test]
async fn a_server_without_oauth_metadata_is_a_sign_in_error_that_keeps_nothing() {
    let dirs = Dirs::new();
    // A loopback port nobody listens on.
    let url = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", listener.local_addr().unwrap())
    };
    let mut shown = None;
    let error = login(&dirs.home, "docs", &url, |address| {
        shown = Some(address.to_owned());
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains(&url), "{error}");
    assert_eq!(shown, None);
    assert!(!credentials_path(&dirs.home, "docs").exists());
}
