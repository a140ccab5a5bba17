//! The little of RFC 3986 an HTTP client needs: split an absolute http(s) URL into scheme,
//! authority and path-with-query, and resolve a redirect's `Location` against it.
//!
//! It deliberately does not normalise the authority (no IDNA, no IPv4 number forms, no case
//! folding): the guest hands the host exactly the authority it was given, and the host, which
//! enforces the capability, parses it with its own rules. Credentials in URLs are refused.

use std::fmt;

use super::HttpError;

/// A URL scheme as `wasi:http` carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    /// `http`.
    Http,
    /// `https`.
    Https,
    /// Any other, sent as is (only test programs build these, through
    /// [`Url::from_raw_parts`]).
    Other(String),
}

impl Scheme {
    /// The scheme's name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
            Self::Other(other) => other,
        }
    }
}

/// An absolute URL, split the way an outgoing `wasi:http` request takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    scheme: Scheme,
    authority: String,
    path_and_query: String,
}

impl Url {
    /// Parses an absolute `http://` or `https://` URL. The fragment is dropped; an empty path
    /// becomes `/`.
    pub fn parse(text: &str) -> Result<Self, HttpError> {
        let text = text.trim();
        if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(HttpError::InvalidUrl(format!(
                "{text:?} holds whitespace or control characters"
            )));
        }
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| HttpError::InvalidUrl(format!("{text:?} is not an absolute URL")))?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => return Err(HttpError::UnsupportedScheme(other.to_owned())),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, rest) = rest.split_at(end);
        if authority.is_empty() {
            return Err(HttpError::InvalidUrl(format!("{text:?} has no host")));
        }
        if authority.contains(['@', '\\']) {
            return Err(HttpError::InvalidUrl(format!(
                "{text:?}: credentials in URLs are not supported"
            )));
        }
        let rest = rest.split('#').next().unwrap_or_default();
        let path_and_query = match rest.chars().next() {
            None => "/".to_owned(),
            Some('?') => format!("/{rest}"),
            Some(_) => rest.to_owned(),
        };
        Ok(Self {
            scheme,
            authority: authority.to_owned(),
            path_and_query,
        })
    }

    /// A URL from parts taken as they are, unchecked: for test programs that must send what a
    /// well-behaved plugin never would.
    pub fn from_raw_parts(
        scheme: Scheme,
        authority: impl Into<String>,
        path_and_query: impl Into<String>,
    ) -> Self {
        Self {
            scheme,
            authority: authority.into(),
            path_and_query: path_and_query.into(),
        }
    }

    /// The scheme.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// The authority: host and optional port, exactly as given.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// The host without the port (IPv6 literals keep their brackets).
    pub fn host(&self) -> &str {
        let authority = self.authority.as_str();
        if authority.starts_with('[') {
            return match authority.find(']') {
                Some(end) => &authority[..=end],
                None => authority,
            };
        }
        match authority.rsplit_once(':') {
            Some((host, _port)) => host,
            None => authority,
        }
    }

    /// The path with the query, starting with `/`.
    pub fn path_and_query(&self) -> &str {
        &self.path_and_query
    }

    /// Resolves a reference (a redirect's `Location`) against this URL (RFC 3986 §5.2).
    pub fn join(&self, reference: &str) -> Result<Self, HttpError> {
        let reference = reference.trim();
        if has_scheme(reference) {
            return Self::parse(reference);
        }
        if let Some(rest) = reference.strip_prefix("//") {
            return Self::parse(&format!("{}://{rest}", self.scheme.as_str()));
        }
        let reference = reference.split('#').next().unwrap_or_default();
        let (ref_path, ref_query) = split_query(reference);
        let (base_path, base_query) = split_query(&self.path_and_query);
        let path = if ref_path.is_empty() {
            base_path.to_owned()
        } else if ref_path.starts_with('/') {
            remove_dot_segments(ref_path)
        } else {
            let dir = base_path.rfind('/').map_or("/", |i| &base_path[..=i]);
            remove_dot_segments(&format!("{dir}{ref_path}"))
        };
        let query = if ref_path.is_empty() && ref_query.is_none() {
            base_query
        } else {
            ref_query
        };
        let path_and_query = match query {
            Some(query) => format!("{path}?{query}"),
            None => path,
        };
        Ok(Self {
            scheme: self.scheme.clone(),
            authority: self.authority.clone(),
            path_and_query,
        })
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}{}",
            self.scheme.as_str(),
            self.authority,
            self.path_and_query
        )
    }
}

/// `scheme:` at the start: a letter, then letters, digits, `+`, `-` or `.`, then `:`.
fn has_scheme(reference: &str) -> bool {
    let Some((scheme, _)) = reference.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn split_query(text: &str) -> (&str, Option<&str>) {
    match text.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (text, None),
    }
}

fn remove_dot_segments(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let mut out: Vec<&str> = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "." => {}
            ".." => {
                out.pop();
            }
            other => out.push(other),
        }
        if last && matches!(*segment, "." | "..") {
            out.push("");
        }
    }
    format!("/{}", out.join("/"))
}

/// Percent-encodes a query component: everything but `A-Z a-z 0-9 - . _ ~`.
pub fn encode_query_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn parses_into_wasi_parts() {
        let u = url("HTTPS://Example.com:8443?q=1#frag");
        assert_eq!(u.scheme(), &Scheme::Https);
        assert_eq!(u.authority(), "Example.com:8443");
        assert_eq!(u.host(), "Example.com");
        assert_eq!(u.path_and_query(), "/?q=1");
        assert_eq!(url("http://[::1]:80/x").host(), "[::1]");
        assert_eq!(url("http://2130706433/").host(), "2130706433");
        assert_eq!(url("http://a").path_and_query(), "/");
    }

    #[test]
    fn refuses_what_it_cannot_send_faithfully() {
        assert!(matches!(
            Url::parse("file:///etc/passwd"),
            Err(HttpError::UnsupportedScheme(s)) if s == "file"
        ));
        assert!(matches!(
            Url::parse("http://user@evil.example/"),
            Err(HttpError::InvalidUrl(_))
        ));
        assert!(Url::parse("http:///x").is_err());
        assert!(Url::parse("example.com/x").is_err());
        assert!(Url::parse("http://a b/").is_err());
    }

    #[test]
    fn resolves_redirect_locations() {
        let base = url("https://a.example/dir/page?x=1");
        let cases = [
            ("http://b.example/y", "http://b.example/y"),
            ("//c.example/z", "https://c.example/z"),
            ("/root", "https://a.example/root"),
            ("other", "https://a.example/dir/other"),
            ("../up?q", "https://a.example/up?q"),
            ("./", "https://a.example/dir/"),
            ("?y=2", "https://a.example/dir/page?y=2"),
            ("", "https://a.example/dir/page?x=1"),
            ("/a/b/../../..", "https://a.example/"),
        ];
        for (reference, expected) in cases {
            assert_eq!(
                base.join(reference).unwrap().to_string(),
                expected,
                "{reference}"
            );
        }
        assert!(base.join("ftp://x/").is_err());
    }

    #[test]
    fn encodes_query_components() {
        assert_eq!(
            encode_query_component("a b&c=d/é"),
            "a%20b%26c%3Dd%2F%C3%A9"
        );
    }
}
