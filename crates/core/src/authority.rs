//! A network authority — a host and an optional port — parsed once from the forms plugins and
//! policy write (`example.com`, `example.com:8443`, `10.0.0.1`, `[::1]:80`, `::1`) and passed
//! on typed, so no later step splits a string again.

use std::net::Ipv6Addr;

use serde::{Deserialize, Serialize};

/// Bosun's one rule for a host name, wherever one is checked (a plugin's declared hosts, the
/// sandbox's outgoing requests): 1–253 bytes of dot-separated labels, each 1–63 bytes of
/// lowercase ASCII letters, digits, `-` and `_`, not starting or ending with `-`. An IPv4
/// address passes as labels of digits. Case is the caller's choice: lowercase a name from a URL
/// first (DNS ignores case), or refuse one a person wrote in capitals so what policy judges is
/// what is reached.
pub fn is_host_name(host: &str) -> bool {
    (1..=253).contains(&host.len())
        && host.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        })
}

/// A host and, when one was written, a port. The host is lower-case, without brackets and
/// without a trailing dot; an IPv6 address is written bare (`::1`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Authority {
    /// The host name or IP address.
    pub host: String,
    /// The port, when one was written; otherwise the scheme's default applies.
    pub port: Option<u16>,
}

/// Why a text is not an authority.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a host or host:port ({reason}); write it like `api.example.com`, `api.example.com:8443` or `[::1]:8080`"
)]
pub struct AuthorityError {
    /// The text as given.
    pub text: String,
    /// What is wrong.
    pub reason: &'static str,
}

impl Authority {
    /// An authority from a host and port already apart (a parsed URL's).
    pub fn new(host: &str, port: Option<u16>) -> Self {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = host.strip_suffix('.').unwrap_or(host);
        Self {
            host: host.to_ascii_lowercase(),
            port,
        }
    }

    /// Parses `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address. No scheme, path,
    /// user information or whitespace.
    pub fn parse(text: &str) -> Result<Self, AuthorityError> {
        let fail = |reason| AuthorityError {
            text: text.to_owned(),
            reason,
        };
        if text.is_empty() {
            return Err(fail("it is empty"));
        }
        if text
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control() || b"/@?#\\".contains(&b))
        {
            return Err(fail("only a host and a port may be written"));
        }
        let port = |digits: &str| -> Result<u16, AuthorityError> {
            match digits.parse::<u16>() {
                Ok(port) if port != 0 && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(port),
                _ => Err(fail("the port is not a number from 1 to 65535")),
            }
        };
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (inner, tail) = rest
                .split_once(']')
                .ok_or_else(|| fail("an opening `[` has no `]`"))?;
            if inner.parse::<Ipv6Addr>().is_err() {
                return Err(fail("brackets hold an IPv6 address only"));
            }
            let port = match tail {
                "" => None,
                _ => Some(port(
                    tail.strip_prefix(':')
                        .ok_or_else(|| fail("only `:port` may follow `]`"))?,
                )?),
            };
            (inner, port)
        } else if text.parse::<Ipv6Addr>().is_ok() {
            (text, None)
        } else {
            match text.rsplit_once(':') {
                Some((host, digits)) => (host, Some(port(digits)?)),
                None => (text, None),
            }
        };
        if host.is_empty() || host == "." {
            return Err(fail("the host is empty"));
        }
        if host.contains(['[', ']']) || (host.contains(':') && host.parse::<Ipv6Addr>().is_err()) {
            return Err(fail("the host is not a name or an address"));
        }
        Ok(Self::new(host, port))
    }

    /// Whether the host is an IPv6 address (written in brackets with a port).
    pub fn is_ipv6(&self) -> bool {
        self.host.parse::<Ipv6Addr>().is_ok()
    }
}

impl std::fmt::Display for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.is_ipv6(), self.port) {
            (true, Some(port)) => write!(f, "[{}]:{port}", self.host),
            (true, None) => write!(f, "[{}]", self.host),
            (false, Some(port)) => write!(f, "{}:{port}", self.host),
            (false, None) => f.write_str(&self.host),
        }
    }
}

impl std::str::FromStr for Authority {
    type Err = AuthorityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl Serialize for Authority {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Authority {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_host_name_rule() {
        for good in [
            "example.com",
            "a-b.example",
            "_dmarc.example.com",
            "10.0.0.1",
            "x",
        ] {
            assert!(super::is_host_name(good), "{good}");
        }
        let long = format!("{}.com", "a".repeat(64));
        for bad in [
            "",
            "A.com",
            "a..com",
            "a.com.",
            "-a.com",
            "a-.com",
            "a.com:80",
            "a.com/x",
            "https://a.com",
            "a b",
            long.as_str(),
        ] {
            assert!(!super::is_host_name(bad), "{bad}");
        }
    }

    use super::*;

    fn parsed(text: &str) -> (String, Option<u16>) {
        let a = Authority::parse(text).unwrap();
        (a.host, a.port)
    }

    #[test]
    fn every_written_form_parses_to_host_and_port() {
        assert_eq!(parsed("Api.Example.com"), ("api.example.com".into(), None));
        assert_eq!(parsed("example.com."), ("example.com".into(), None));
        assert_eq!(
            parsed("example.com:8443"),
            ("example.com".into(), Some(8443))
        );
        assert_eq!(parsed("10.0.0.1:80"), ("10.0.0.1".into(), Some(80)));
        assert_eq!(parsed("[::1]:80"), ("::1".into(), Some(80)));
        assert_eq!(parsed("[::1]"), ("::1".into(), None));
        assert_eq!(parsed("::1"), ("::1".into(), None));
        assert_eq!(parsed("[FE80::1]"), ("fe80::1".into(), None));
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "example.com",
            "example.com:8443",
            "[::1]:80",
            "[::1]",
            "10.0.0.1",
        ] {
            assert_eq!(Authority::parse(text).unwrap().to_string(), text);
        }
        let json = serde_json::to_string(&Authority::parse("[::1]:80").unwrap()).unwrap();
        assert_eq!(json, "\"[::1]:80\"");
        let back: Authority = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Authority::new("::1", Some(80)));
    }

    #[test]
    fn malformed_authorities_are_refused_with_the_reason() {
        for text in [
            "",
            "example.com:",
            "example.com:0",
            "example.com:65536",
            "example.com:+80",
            "example.com:http",
            "user@example.com",
            "example.com/path",
            "http://example.com",
            "exa mple.com",
            "[::1",
            "[example.com]",
            "[::1]x",
            "a:b:c",
            ":80",
            "example.com\n",
        ] {
            let error = Authority::parse(text).unwrap_err();
            assert!(
                error.to_string().contains("api.example.com:8443"),
                "{error}"
            );
        }
    }
}
