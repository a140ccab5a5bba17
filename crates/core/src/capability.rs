//! Capabilities: the resources a tool reaches beyond its own input. Each one a tool declares is
//! judged by policy on every call, with the concrete scope of that call (host, path, program).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A kind of resource a tool may use.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// Read files.
    FsRead,
    /// Create or change files.
    FsWrite,
    /// Make outgoing HTTP requests.
    NetHttp,
    /// Start a process.
    ProcessSpawn,
    /// Call a model.
    ModelCall,
    /// Read the named secret.
    Secret(String),
}

/// A capability name that Bosun does not know.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CapabilityError {
    /// Not one of the known names.
    #[error(
        "unknown capability `{0}`: use fs.read, fs.write, net.http, process.spawn, model.call or secret.<name>"
    )]
    Unknown(String),
    /// `secret.` followed by an invalid name.
    #[error("invalid secret name in `{0}`: use secret.<name> with letters, digits and _ (1-64)")]
    BadSecretName(String),
}

impl Capability {
    /// The capability's name as policy rules spell it, e.g. `net.http`.
    pub fn as_action(&self) -> String {
        self.to_string()
    }
}

impl FromStr for Capability {
    type Err = CapabilityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fs.read" => Ok(Self::FsRead),
            "fs.write" => Ok(Self::FsWrite),
            "net.http" => Ok(Self::NetHttp),
            "process.spawn" => Ok(Self::ProcessSpawn),
            "model.call" => Ok(Self::ModelCall),
            other => match other.strip_prefix("secret.") {
                Some(name)
                    if !name.is_empty()
                        && name.len() <= 64
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    Ok(Self::Secret(name.to_owned()))
                }
                Some(_) => Err(CapabilityError::BadSecretName(other.to_owned())),
                None => Err(CapabilityError::Unknown(other.to_owned())),
            },
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FsRead => f.write_str("fs.read"),
            Self::FsWrite => f.write_str("fs.write"),
            Self::NetHttp => f.write_str("net.http"),
            Self::ProcessSpawn => f.write_str("process.spawn"),
            Self::ModelCall => f.write_str("model.call"),
            Self::Secret(name) => write!(f, "secret.{name}"),
        }
    }
}

impl Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The concrete reach of one use of a capability; rules may narrow on any of these.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// Network host, for `net.http`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The port the call names with `host`, when it names one (otherwise the scheme's default).
    /// Rules match on the host; the port is what the sandbox then grants, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Path relative to the workspace root, `/`-separated, for `fs.*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Program name, for `process.spawn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The path as the call wrote it, when that is not `path` (a link followed, a `..` or a
    /// `./` spelled). Policy never matches on it: it is what the model is told, so that a
    /// refusal names no place the model did not name itself — not where a link leads. The
    /// person asked and the trace see both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
    /// For `fs.*`: the use reaches the directory at `path` as a whole — every file in it and
    /// below, as a plugin's preopen does — not only `path` itself. Policy matches `path` as
    /// ever (a rule for `dir` or `dir/**` covers it, one for a file inside does not); the
    /// person asked, the trace and a remembered rule say `dir/**`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_directory: bool,
}

impl Scope {
    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        self.host.is_none()
            && self.port.is_none()
            && self.path.is_none()
            && self.program.is_none()
            && self.written.is_none()
            && !self.whole_directory
    }

    /// The scope as a subject names it: the host, else the program, else the path — a whole
    /// directory's as `dir/**` (`**` for the workspace root), what reaches it in a rule.
    pub fn shown(&self) -> Option<std::borrow::Cow<'_, str>> {
        use std::borrow::Cow;
        if let Some(value) = self.host.as_ref().or(self.program.as_ref()) {
            return Some(Cow::Borrowed(value));
        }
        let path = self.path.as_deref()?;
        Some(if !self.whole_directory {
            Cow::Borrowed(path)
        } else if path == "." || path.is_empty() {
            Cow::Borrowed("**")
        } else {
            Cow::Owned(format!("{}/**", path.trim_end_matches('/')))
        })
    }

    /// The same scope with the path the model wrote in place of the judged one: what a
    /// refusal told to the model names.
    #[must_use]
    pub fn as_written(&self) -> Scope {
        let mut scope = self.clone();
        if let Some(written) = scope.written.take() {
            scope.path = Some(written);
        }
        scope
    }

    /// The same scope without the path as written: what policy judged, and what a grant or a
    /// remembered rule is keyed on.
    #[must_use]
    pub fn as_judged(&self) -> Scope {
        Scope {
            written: None,
            ..self.clone()
        }
    }

    /// The scope of a `net.http` use of `authority`.
    pub fn authority(authority: crate::Authority) -> Self {
        Self {
            host: Some(authority.host),
            port: authority.port,
            ..Self::default()
        }
    }

    /// The authority of a `net.http` scope, when it names a host.
    pub fn as_authority(&self) -> Option<crate::Authority> {
        self.host
            .as_deref()
            .map(|host| crate::Authority::new(host, self.port))
    }
}

/// One capability a call is about to use, with its scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityRequest {
    /// Which capability.
    pub capability: Capability,
    /// Where it reaches.
    #[serde(default, skip_serializing_if = "Scope::is_empty")]
    pub scope: Scope,
}

impl CapabilityRequest {
    /// A request with no scope.
    pub fn bare(capability: Capability) -> Self {
        Self {
            capability,
            scope: Scope::default(),
        }
    }

    /// Parses `CAP` or `CAP:SCOPE`, where the scope is a host for `net.http`, a program for
    /// `process.spawn` and a workspace-relative path otherwise.
    pub fn parse(s: &str) -> Result<Self, CapabilityError> {
        let (name, scope) = match s.split_once(':') {
            Some((name, scope)) => (name, Some(scope)),
            None => (s, None),
        };
        let capability: Capability = name.parse()?;
        let mut request = Self::bare(capability);
        if let Some(value) = scope.map(str::to_owned) {
            match request.capability {
                Capability::NetHttp => request.scope.host = Some(value),
                Capability::ProcessSpawn => request.scope.program = Some(value),
                _ => request.scope.path = Some(value),
            }
        }
        Ok(request)
    }
}

impl fmt::Display for CapabilityRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.capability)?;
        if let Some(v) = self.scope.shown() {
            write!(f, ":{v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "fs.read",
            "fs.write",
            "net.http",
            "process.spawn",
            "model.call",
            "secret.GH_TOKEN",
        ] {
            let cap: Capability = name.parse().unwrap();
            assert_eq!(cap.to_string(), name);
        }
        assert!("fs.exec".parse::<Capability>().is_err());
        assert!("secret.".parse::<Capability>().is_err());
        assert!("secret.a-b".parse::<Capability>().is_err());
    }

    #[test]
    fn scoped_requests_parse() {
        let r = CapabilityRequest::parse("net.http:api.example.com").unwrap();
        assert_eq!(r.scope.host.as_deref(), Some("api.example.com"));
        let r = CapabilityRequest::parse("fs.write:src/main.rs").unwrap();
        assert_eq!(r.scope.path.as_deref(), Some("src/main.rs"));
        assert_eq!(r.to_string(), "fs.write:src/main.rs");
    }
}
