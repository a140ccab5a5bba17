//! Registry authentication (distribution's token authentication spec, the `WWW-Authenticate`
//! challenge of RFC 7235 §4.1 with RFC 6750's Bearer parameters): which credentials a client
//! holds, how a challenge is read, and the token endpoint's answer. The client module decides
//! where credentials may go; this module only parses and formats.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;

use crate::error::OciError;

/// What a client presents to a registry.
#[derive(Clone, Default)]
pub enum Credentials {
    /// Nothing; anonymous tokens are still fetched when the registry asks for them.
    #[default]
    Anonymous,
    /// A username and password (or personal access token): sent as HTTP Basic to the registry
    /// when it asks for Basic, or to its token endpoint to obtain a bearer token.
    Basic {
        /// The user name.
        username: String,
        /// The password or access token.
        password: String,
    },
    /// A bearer token sent as-is to the registry.
    Bearer(String),
    /// An identity token (an OAuth2 refresh token: what `docker login` stores as
    /// `identitytoken`, or a credential helper answers with the user name `<token>`). It never
    /// goes to the registry itself: it is exchanged at the challenge's token service with the
    /// OAuth2 `POST` (`grant_type=refresh_token`) for a short-lived access token, which is.
    IdentityToken(String),
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anonymous => f.write_str("Anonymous"),
            Self::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Self::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            Self::IdentityToken(_) => f.write_str("IdentityToken(<redacted>)"),
        }
    }
}

impl Credentials {
    /// The `Authorization` value for HTTP Basic, when these are Basic credentials.
    pub(crate) fn basic_header(&self) -> Option<String> {
        match self {
            Self::Basic { username, password } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
            )),
            _ => None,
        }
    }

    /// The secret these credentials hold, if any (to scrub it from what a server echoes).
    pub(crate) fn secret(&self) -> Option<&str> {
        match self {
            Self::Anonymous => None,
            Self::Basic { password, .. } => Some(password),
            Self::Bearer(token) | Self::IdentityToken(token) => Some(token),
        }
    }
}

/// The `client_id` sent to a token service (distribution's OAuth2 token spec requires one; it
/// need not be registered and serves the service's audit).
pub const OAUTH_CLIENT_ID: &str = "bosun";

/// The form of the OAuth2 refresh-token exchange (distribution `docs/spec/auth/oauth.md`):
/// `grant_type=refresh_token`, the service, `client_id`, the scopes as one space-separated
/// list, and the refresh token.
pub(crate) fn refresh_form(refresh_token: &str, service: Option<&str>, scopes: &[&str]) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", "refresh_token");
    if let Some(service) = service {
        form.append_pair("service", service);
    }
    form.append_pair("client_id", OAUTH_CLIENT_ID);
    if !scopes.is_empty() {
        form.append_pair("scope", &scopes.join(" "));
    }
    form.append_pair("refresh_token", refresh_token);
    form.finish()
}

/// `text` with every occurrence of `secret` replaced, so an error never quotes it.
pub(crate) fn scrub(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => text.replace(secret, "<redacted>"),
        _ => text.to_owned(),
    }
}

/// A parsed `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The scheme, lowercased (`bearer`, `basic`).
    pub scheme: String,
    /// The auth parameters, names lowercased.
    pub params: BTreeMap<String, String>,
}

impl Challenge {
    /// Parses the first challenge of a `WWW-Authenticate` value: a scheme, then
    /// `name=token` or `name="quoted string"` parameters separated by commas.
    pub fn parse(header: &str) -> Option<Self> {
        let header = header.trim();
        let (scheme, rest) = match header.find(char::is_whitespace) {
            Some(at) => (&header[..at], header[at..].trim_start()),
            None => (header, ""),
        };
        if scheme.is_empty() {
            return None;
        }
        let mut params = BTreeMap::new();
        let mut chars = rest.chars().peekable();
        loop {
            while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
                chars.next();
            }
            let mut name = String::new();
            while let Some(&c) = chars.peek() {
                if c == '=' || c == ',' || c.is_whitespace() {
                    break;
                }
                name.push(c);
                chars.next();
            }
            if name.is_empty() {
                break;
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            if chars.peek() != Some(&'=') {
                // A token68 or a second challenge's scheme: Bosun reads the first challenge's
                // parameters only.
                break;
            }
            chars.next();
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            let mut value = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                value.push(escaped);
                            }
                        }
                        '"' => break,
                        c => value.push(c),
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == ',' || c.is_whitespace() {
                        break;
                    }
                    value.push(c);
                    chars.next();
                }
            }
            params.insert(name.to_ascii_lowercase(), value);
        }
        Some(Self {
            scheme: scheme.to_ascii_lowercase(),
            params,
        })
    }

    /// One parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }
}

/// The token endpoint's answer: `token` or `access_token` (both allowed by the spec).
#[derive(Debug, serde::Deserialize)]
struct TokenAnswer {
    token: Option<String>,
    access_token: Option<String>,
}

/// The bearer token in a token endpoint's JSON answer.
pub(crate) fn token_from_answer(url: &str, body: &[u8]) -> Result<String, OciError> {
    let answer: TokenAnswer = serde_json::from_slice(body).map_err(|e| OciError::Malformed {
        what: format!("token answer from {url}"),
        reason: e.to_string(),
    })?;
    let token = answer
        .token
        .or(answer.access_token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OciError::Malformed {
            what: format!("token answer from {url}"),
            reason: "it has neither `token` nor `access_token`".to_owned(),
        })?;
    if token.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(OciError::Malformed {
            what: format!("token answer from {url}"),
            reason: "the token has spaces or control characters".to_owned(),
        });
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_with_commas_inside_quotes_parses() {
        let c = Challenge::parse(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        )
        .unwrap();
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.param("realm"), Some("https://auth.example/token"));
        assert_eq!(c.param("service"), Some("registry.example"));
        assert_eq!(c.param("scope"), Some("repository:a/b:pull,push"));
    }

    #[test]
    fn a_basic_challenge_parses() {
        let c = Challenge::parse(r#"Basic realm="basic-realm""#).unwrap();
        assert_eq!(c.scheme, "basic");
        assert_eq!(c.param("realm"), Some("basic-realm"));
    }

    #[test]
    fn credentials_never_print_their_secret() {
        let basic = Credentials::Basic {
            username: "me".into(),
            password: "hunter2".into(),
        };
        let bearer = Credentials::Bearer("tok3n".into());
        let identity = Credentials::IdentityToken("r3fresh".into());
        assert!(!format!("{basic:?}{bearer:?}").contains("hunter2"));
        assert!(!format!("{bearer:?}").contains("tok3n"));
        assert!(!format!("{identity:?}").contains("r3fresh"));
        assert_eq!(
            identity.basic_header(),
            None,
            "an identity token is never sent as Basic"
        );
    }

    #[test]
    fn the_refresh_form_carries_what_the_oauth2_spec_requires() {
        let form = refresh_form(
            "r3f+resh/=",
            Some("registry.example"),
            &["repository:a/b:pull", "repository:c:pull"],
        );
        let pairs: BTreeMap<String, String> = url::form_urlencoded::parse(form.as_bytes())
            .into_owned()
            .collect();
        assert_eq!(pairs["grant_type"], "refresh_token");
        assert_eq!(pairs["refresh_token"], "r3f+resh/=");
        assert_eq!(pairs["service"], "registry.example");
        assert_eq!(pairs["client_id"], OAUTH_CLIENT_ID);
        assert_eq!(pairs["scope"], "repository:a/b:pull repository:c:pull");
        assert_eq!(
            scrub("echo r3f+resh/= back", Some("r3f+resh/=")),
            "echo <redacted> back"
        );
    }

    #[test]
    fn a_token_answer_without_a_token_is_malformed() {
        assert!(token_from_answer("u", br#"{"expires_in":60}"#).is_err());
        assert!(token_from_answer("u", br#"{"token":"a\nb"}"#).is_err());
        assert_eq!(
            token_from_answer("u", br#"{"access_token":"abc"}"#).unwrap(),
            "abc"
        );
    }
}
