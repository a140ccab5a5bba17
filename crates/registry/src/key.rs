//! Ed25519 keys as the signed catalog names them. A public key is the TUF key object
//! `{"keytype":"ed25519","scheme":"ed25519","keyval":{"public":"<hex>"}}`; its id — the
//! fingerprint a person confirms — is the SHA-256 of that object's canonical JSON. Signatures are
//! checked with `verify_strict`, which refuses the malleable and small-order encodings plain
//! Ed25519 verification lets through.

use std::path::Path;

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::canonical::to_canonical;
use crate::error::RegistryError;

/// A public key a role trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
}

impl PublicKey {
    /// The TUF key object.
    pub fn to_json(&self) -> Value {
        json!({
            "keytype": "ed25519",
            "scheme": "ed25519",
            "keyval": { "public": hex::encode(self.key.to_bytes()) },
        })
    }

    /// Reads a TUF key object; only Ed25519 is accepted.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let object = value.as_object().ok_or("a key is not an object")?;
        if object.len() != 3 {
            return Err("a key has fields other than keytype, scheme and keyval".to_owned());
        }
        if value["keytype"] != "ed25519" || value["scheme"] != "ed25519" {
            return Err("only ed25519 keys are accepted".to_owned());
        }
        let keyval = value["keyval"]
            .as_object()
            .ok_or("keyval is not an object")?;
        if keyval.len() != 1 {
            return Err("keyval has fields other than public".to_owned());
        }
        let public = keyval
            .get("public")
            .and_then(Value::as_str)
            .ok_or("keyval.public is missing")?;
        let bytes: [u8; 32] = hex::decode(public)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or("keyval.public is not 32 bytes of hex")?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|e| format!("keyval.public: {e}"))?;
        if key.is_weak() {
            return Err("keyval.public is a small-order point".to_owned());
        }
        Ok(Self { key })
    }

    /// The key id: lowercase hex SHA-256 of the key object's canonical JSON.
    pub fn keyid(&self) -> String {
        let canonical = to_canonical(&self.to_json()).unwrap_or_default();
        hex::encode(Sha256::digest(canonical))
    }

    /// Whether `signature` (64 bytes of hex) is this key's strict signature over `message`.
    pub fn verifies(&self, message: &[u8], signature: &str) -> bool {
        let Some(bytes) = hex::decode(signature)
            .ok()
            .and_then(|b| <[u8; 64]>::try_from(b).ok())
        else {
            return false;
        };
        let signature = ed25519_dalek::Signature::from_bytes(&bytes);
        self.key.verify_strict(message, &signature).is_ok()
    }
}

/// A private key that signs catalog metadata. Kept by the publisher, never by a client.
#[derive(Clone)]
pub struct PrivateKey {
    key: SigningKey,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateKey")
            .field("keyid", &self.public().keyid())
            .finish_non_exhaustive()
    }
}

impl PrivateKey {
    /// A new key from the operating system's random source.
    pub fn generate() -> Result<Self, RegistryError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| RegistryError::Io {
            doing: "reading the system's random source for a new key".to_owned(),
            source: std::io::Error::other(e.to_string()),
        })?;
        Ok(Self::from_seed(seed))
    }

    /// The key made from a 32-byte seed (tests make keys this way, deterministically).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self {
            key: SigningKey::from_bytes(&seed),
        }
    }

    /// Its public half.
    pub fn public(&self) -> PublicKey {
        PublicKey {
            key: self.key.verifying_key(),
        }
    }

    /// Its signature over `message`, as hex.
    pub fn sign(&self, message: &[u8]) -> String {
        hex::encode(self.key.sign(message).to_bytes())
    }

    /// Writes the key file (`{"keytype":"ed25519","private":"<hex>","keyid":"<hex>"}`, mode
    /// 0600); refuses to overwrite one.
    pub fn save(&self, path: &Path) -> Result<(), RegistryError> {
        if path.symlink_metadata().is_ok() {
            return Err(RegistryError::Key {
                path: path.to_owned(),
                message: "exists: a key is never overwritten; choose another file".to_owned(),
            });
        }
        let text = serde_json::to_string_pretty(&json!({
            "keytype": "ed25519",
            "private": hex::encode(self.key.to_bytes()),
            "keyid": self.public().keyid(),
        }))
        .unwrap_or_default();
        bosun_plugins::atomic::write_atomic(path, format!("{text}\n").as_bytes())
            .map_err(RegistryError::io(format!("writing {}", path.display())))
    }

    /// Reads a key file written by [`PrivateKey::save`].
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        let bad = |message: &str| RegistryError::Key {
            path: path.to_owned(),
            message: message.to_owned(),
        };
        let text = std::fs::read_to_string(path).map_err(RegistryError::io(format!(
            "reading the key {}",
            path.display()
        )))?;
        let value: Value =
            serde_json::from_str(&text).map_err(|_| bad("is not a Bosun key file (JSON)"))?;
        if value["keytype"] != "ed25519" {
            return Err(bad("is not an ed25519 key file"));
        }
        let seed: [u8; 32] = value["private"]
            .as_str()
            .and_then(|h| hex::decode(h).ok())
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad("has no 32-byte private key"))?;
        Ok(Self::from_seed(seed))
    }
}

/// A fingerprint as a person reads it: the key id in groups of four.
pub fn display_fingerprint(keyid: &str) -> String {
    keyid
        .as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
