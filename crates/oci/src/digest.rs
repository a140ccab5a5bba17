//! Content digests (OCI image-spec v1.1.0, `descriptor.md` "Digests"): `sha256:<64 lowercase
//! hex>`, the only algorithm Bosun accepts, and the running hash that verifies a download while it
//! streams. A digest is parsed once where it enters (a manifest, a header, a catalog) so nothing
//! downstream builds a URL or a path from an unchecked string.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// A verified-shape `sha256` content digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    hex: String,
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self {
            hex: hex::encode(Sha256::digest(bytes)),
        }
    }

    /// The 64 hex characters after `sha256:`.
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// The tag that holds this digest's referrers on a registry without the referrers API
    /// (image-spec v1.1.0 "Referrers Tag Schema"): `sha256-<hex>`.
    pub fn referrers_tag(&self) -> String {
        format!("sha256-{}", self.hex)
    }

    /// The tag cosign and its peers put a signature of this digest under: `sha256-<hex>.sig`.
    pub fn signature_tag(&self) -> String {
        format!("sha256-{}.sig", self.hex)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex)
    }
}

/// Text that is not `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{digest}` is not a usable digest: {reason}")]
pub struct InvalidDigest {
    /// The text, cut at 100 characters.
    pub digest: String,
    /// Why it was refused.
    pub reason: String,
}

/// How content differed from what its descriptor declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// Another length (stops counting just past the declared one).
    Length {
        /// The declared length.
        declared: u64,
        /// What arrived.
        received: u64,
    },
    /// The right length but other bytes.
    Content {
        /// The declared digest.
        expected: Digest,
        /// The digest of what arrived.
        actual: Digest,
    },
}

impl FromStr for Digest {
    type Err = InvalidDigest;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| InvalidDigest {
            digest: s.chars().take(100).collect(),
            reason: reason.to_owned(),
        };
        let Some((algorithm, hex)) = s.split_once(':') else {
            return Err(invalid("a digest is `sha256:` followed by 64 hex digits"));
        };
        if algorithm != "sha256" {
            return Err(invalid(
                "only sha256 digests are accepted; push the artifact with a sha256 digest",
            ));
        }
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(invalid(
                "a sha256 digest has exactly 64 lowercase hex digits",
            ));
        }
        Ok(Self {
            hex: hex.to_owned(),
        })
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The hash and length of bytes as they arrive, checked against what a descriptor declared.
#[derive(Debug, Default)]
pub struct Verifier {
    hasher: Sha256,
    length: u64,
}

impl Verifier {
    /// A verifier that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.length += bytes.len() as u64;
    }

    /// How many bytes it has seen.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The digest of everything seen.
    pub fn finish(self) -> Digest {
        Digest {
            hex: hex::encode(self.hasher.finalize()),
        }
    }

    /// Fails unless everything seen is exactly `size` bytes with digest `expected`.
    pub fn check(self, expected: &Digest, size: u64) -> Result<(), Mismatch> {
        if self.length != size {
            return Err(Mismatch::Length {
                declared: size,
                received: self.length,
            });
        }
        let actual = self.finish();
        if &actual != expected {
            return Err(Mismatch::Content {
                expected: expected.clone(),
                actual,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_empty_input_is_the_known_sha256() {
        assert_eq!(
            Digest::of(b"").to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn digests_that_could_escape_a_path_or_url_are_refused() {
        for bad in [
            "sha256:../../etc/passwd",
            "sha512:00",
            "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
            "sha256:e3b0",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85/",
        ] {
            assert!(bad.parse::<Digest>().is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn verifier_refuses_wrong_length_and_wrong_content() {
        let expected = Digest::of(b"hello");
        let mut short = Verifier::new();
        short.update(b"hell");
        assert!(matches!(
            short.check(&expected, 5),
            Err(Mismatch::Length { .. })
        ));
        let mut other = Verifier::new();
        other.update(b"jello");
        assert!(matches!(
            other.check(&expected, 5),
            Err(Mismatch::Content { .. })
        ));
        let mut right = Verifier::new();
        right.update(b"hel");
        right.update(b"lo");
        assert!(right.check(&expected, 5).is_ok());
    }
}
