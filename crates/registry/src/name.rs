//! Names and versions as a registry may use them, checked before any URL or path is built from
//! them. The rules are Reef's skill rules, applied to plugins too (Reef checks plugin names not
//! at all): `^[a-z0-9][a-z0-9-]*$` and `^\d+\.\d+\.\d+(-[a-zA-Z0-9.]+)?$`, with lengths capped.

use std::fmt;

use crate::error::RegistryError;

/// Longest name accepted.
pub const MAX_NAME_LEN: usize = 64;
/// Longest version accepted.
pub const MAX_VERSION_LEN: usize = 64;

/// Checks `name`: 1-64 characters of `a-z`, `0-9` and `-`, the first not `-`.
pub fn check_name(name: &str) -> Result<(), RegistryError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(RegistryError::InvalidName { name: escape(name) })
    }
}

/// Checks `version` and returns it parsed: `MAJOR.MINOR.PATCH` (decimal, no leading `+`),
/// optionally `-PRERELEASE` of `a-z`, `A-Z`, `0-9` and `.`; no build metadata.
pub fn parse_version(version: &str) -> Result<semver::Version, RegistryError> {
    let bad = || RegistryError::InvalidVersion {
        version: escape(version),
    };
    if version.is_empty() || version.len() > MAX_VERSION_LEN {
        return Err(bad());
    }
    let (core, pre) = match version.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (version, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() != 3 || !parts.iter().all(numeric) {
        return Err(bad());
    }
    if let Some(pre) = pre
        && (pre.is_empty() || !pre.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.'))
    {
        return Err(bad());
    }
    semver::Version::parse(version).map_err(|_| bad())
}

/// What a person or the model names: `NAME` or `NAME@VERSION`, both checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    /// The plugin or skill.
    pub name: String,
    /// The exact version asked for; `None` for the newest.
    pub version: Option<semver::Version>,
}

impl Requested {
    /// Parses and checks `NAME[@VERSION]`.
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        let (name, version) = match text.split_once('@') {
            Some((name, version)) => (name, Some(parse_version(version)?)),
            None => (text, None),
        };
        check_name(name)?;
        Ok(Self {
            name: name.to_owned(),
            version,
        })
    }
}

impl fmt::Display for Requested {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}@{v}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// `text` with control and non-ASCII characters escaped and cut to 80 characters, so an error
/// can quote a hostile name safely.
pub(crate) fn escape(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(80)
        .flat_map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                vec![c]
            } else {
                c.escape_unicode().collect()
            }
        })
        .collect();
    if text.chars().count() > 80 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_and_versions_are_refused_before_any_path_is_built() {
        for name in [
            "",
            "../etc",
            "a/b",
            "a\\b",
            ".hidden",
            "-x",
            "A",
            "a b",
            "a\0b",
            "a\u{202e}b",
            "%2e%2e",
            "a.b",
            "é",
        ] {
            assert!(check_name(name).is_err(), "{name:?}");
        }
        assert!(check_name(&"a".repeat(65)).is_err());
        for name in ["a", "web-fetch", "0x", &"a".repeat(64)] {
            check_name(name).unwrap();
        }
        for version in [
            "",
            "1",
            "1.2",
            "1.2.3.4",
            "../1.0.0",
            "1.0.0/..",
            "v1.0.0",
            "1.0.0+build",
            "1.0.0-",
            "1.0.0-a/b",
            "01.0.0x",
            " 1.0.0",
            "1.0.0-é",
            "+1.0.0",
        ] {
            assert!(parse_version(version).is_err(), "{version:?}");
        }
        for version in ["1.2.3", "0.0.1-rc.1", "10.20.30-alpha"] {
            parse_version(version).unwrap();
        }
        assert!(Requested::parse("web@../../x").is_err());
        assert!(Requested::parse("../web@1.0.0").is_err());
        assert_eq!(
            Requested::parse("web@1.2.3").unwrap().to_string(),
            "web@1.2.3"
        );
    }
}
