//! Names on a registry (distribution-spec v1.1.0, "Pulling manifests": the `<name>` and
//! `<reference>` grammars): a registry address, a repository, a tag, and a full reference
//! `registry/repository[:tag][@digest]`. Each is checked where it is parsed, before anything
//! becomes a URL.

use std::fmt;
use std::str::FromStr;

use crate::digest::Digest;
use crate::error::OciError;

/// The longest repository name accepted (the spec's recommended limit for host + name is 255).
const MAX_REPOSITORY: usize = 255;

/// A registry's address: scheme, host and port, nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    url: url::Url,
}

impl Registry {
    /// The base URL, `scheme://host[:port]` without a path.
    pub fn url(&self) -> &url::Url {
        &self.url
    }

    /// `host[:port]` as a reference writes it.
    pub fn host_port(&self) -> String {
        let host = self.url.host_str().unwrap_or_default();
        match self.url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }
    }

    /// Whether the host is this machine (`localhost`, `127.0.0.0/8`, `::1`), where plain HTTP
    /// crosses no network.
    pub fn is_loopback(&self) -> bool {
        match self.url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        }
    }

    /// Whether the scheme is plain `http`.
    pub fn is_plain_http(&self) -> bool {
        self.url.scheme() == "http"
    }
}

impl FromStr for Registry {
    type Err = OciError;

    /// `host[:port]` (HTTPS, or plain HTTP for a loopback host), or an explicit
    /// `https://host[:port]` / `http://host[:port]`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| OciError::InvalidReference {
            reference: s.chars().take(300).collect(),
            reason: reason.to_owned(),
        };
        let text = s.trim_end_matches('/');
        let with_scheme = if text.contains("://") {
            text.to_owned()
        } else {
            format!("https://{text}")
        };
        let mut url = url::Url::parse(&with_scheme)
            .map_err(|e| invalid(&format!("not a host[:port] or URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid("a registry is reached over https:// or http://"));
        }
        if url.host().is_none()
            || !url.username().is_empty()
            || url.password().is_some()
            || url.path() != "/"
            || url.query().is_some()
            || url.fragment().is_some()
        {
            return Err(invalid(
                "a registry is only scheme, host and port — no user, path or query",
            ));
        }
        let mut registry = Self { url: url.clone() };
        if !text.contains("://") && registry.is_loopback() {
            // A bare loopback address is a local test or mirror registry, which speaks HTTP.
            url.set_scheme("http")
                .map_err(|()| invalid("could not use http:// for a loopback registry"))?;
            registry = Self { url };
        }
        Ok(registry)
    }
}

impl fmt::Display for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.url.as_str().trim_end_matches('/'))
    }
}

/// A repository name: lowercase path components separated by `/`, each
/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Repository(String);

impl Repository {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Repository {
    type Err = OciError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| OciError::InvalidReference {
            reference: s.chars().take(300).collect(),
            reason: reason.to_owned(),
        };
        if s.is_empty() || s.len() > MAX_REPOSITORY {
            return Err(invalid("a repository name has 1 to 255 characters"));
        }
        for component in s.split('/') {
            if !valid_component(component) {
                return Err(invalid(
                    "each `/`-separated part of a repository is lowercase letters and digits, joined by `.`, `_`, `__` or dashes",
                ));
            }
        }
        Ok(Self(s.to_owned()))
    }
}

fn valid_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    if !alnum(first) || !alnum(last) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        // A separator: `.`, `_`, `__` or one or more `-`.
        let start = i;
        let sep = bytes[i];
        while i < bytes.len() && bytes[i] == sep {
            i += 1;
        }
        let run = i - start;
        let ok = match sep {
            b'.' => run == 1,
            b'_' => run <= 2,
            b'-' => true,
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

impl fmt::Display for Repository {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tag: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(String);

impl Tag {
    /// The tag.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Tag {
    type Err = OciError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bytes = s.as_bytes();
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let ok = !bytes.is_empty()
            && bytes.len() <= 128
            && word(bytes[0])
            && bytes[1..]
                .iter()
                .all(|&b| word(b) || b == b'.' || b == b'-');
        if !ok {
            return Err(OciError::InvalidReference {
                reference: s.chars().take(300).collect(),
                reason: "a tag is 1 to 128 of letters, digits, `_`, `.` and `-`, not starting with `.` or `-`".to_owned(),
            });
        }
        Ok(Self(s.to_owned()))
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `registry/repository[:tag][@digest]`. The registry part is required: Bosun never guesses a
/// default registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// Where the repository lives.
    pub registry: Registry,
    /// The repository.
    pub repository: Repository,
    /// The tag, when named.
    pub tag: Option<Tag>,
    /// The digest, when named; it wins over the tag.
    pub digest: Option<Digest>,
}

impl FromStr for Reference {
    type Err = OciError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| OciError::InvalidReference {
            reference: s.chars().take(300).collect(),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = match s.split_once("://") {
            Some((scheme, rest)) => (Some(scheme), rest),
            None => (None, s),
        };
        let (name, digest) = match rest.split_once('@') {
            Some((name, digest)) => (name, Some(digest.parse::<Digest>()?)),
            None => (rest, None),
        };
        let Some((host, path)) = name.split_once('/') else {
            return Err(invalid(
                "name the registry too: `registry.example/namespace/name:tag`",
            ));
        };
        if !(host.contains('.') || host.contains(':') || host == "localhost") {
            return Err(invalid(
                "the first part must be a registry host (with a `.` or a port, or `localhost`)",
            ));
        }
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) => (repository, Some(tag.parse::<Tag>()?)),
            None => (path, None),
        };
        let registry = match scheme {
            Some(scheme) => format!("{scheme}://{host}").parse()?,
            None => host.parse()?,
        };
        Ok(Self {
            registry,
            repository: repository.parse()?,
            tag,
            digest,
        })
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry.host_port(), self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_reference_parses_into_its_parts() {
        let digest = Digest::of(b"x");
        let r: Reference = format!("127.0.0.1:5000/bosun/hello-world:1.0.0@{digest}")
            .parse()
            .unwrap();
        assert_eq!(r.registry.url().as_str(), "http://127.0.0.1:5000/");
        assert_eq!(r.repository.as_str(), "bosun/hello-world");
        assert_eq!(r.tag.as_ref().map(Tag::as_str), Some("1.0.0"));
        assert_eq!(r.digest, Some(digest.clone()));
        assert_eq!(
            r.to_string(),
            format!("127.0.0.1:5000/bosun/hello-world:1.0.0@{digest}")
        );
        let remote: Reference = "ghcr.io/acme/tool".parse().unwrap();
        assert_eq!(remote.registry.url().as_str(), "https://ghcr.io/");
        assert_eq!(remote.tag, None);
    }

    #[test]
    fn names_that_could_leave_the_repository_url_are_refused() {
        for bad in [
            "ghcr.io/../admin",
            "ghcr.io/acme//tool",
            "ghcr.io/Acme/tool",
            "ghcr.io/acme/tool:..",
            "ghcr.io/acme/tool:-x",
            "ghcr.io/acme/tool?x=1",
            "ghcr.io/acme/to%2fol",
            "acme/tool:1",
            "ghcr.io/acme/tool:1@sha256:00",
            "ghcr.io/a..b",
        ] {
            assert!(bad.parse::<Reference>().is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn repository_separators_follow_the_spec() {
        for good in ["a", "a.b", "a_b", "a__b", "a---b", "a/b/c"] {
            assert!(good.parse::<Repository>().is_ok(), "{good} refused");
        }
        for bad in ["a___b", "a..b", "_a", "a-", "a/", ""] {
            assert!(bad.parse::<Repository>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn registry_addresses_carry_no_path_or_user() {
        assert!("https://user:pw@ghcr.io".parse::<Registry>().is_err());
        assert!("https://ghcr.io/v2".parse::<Registry>().is_err());
        assert!("ftp://ghcr.io".parse::<Registry>().is_err());
        let local: Registry = "localhost:5000".parse().unwrap();
        assert!(local.is_plain_http() && local.is_loopback());
        let remote: Registry = "registry.example:443".parse().unwrap();
        assert!(!remote.is_plain_http());
    }
}
