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
    /// 0600); refuses to overwrite one. The refusal is the create itself
    /// ([`bosun_plugins::atomic::write_new`]), not a look before it: a key another process saved
    /// at the same name a moment before, or a link planted there, is never replaced.
    pub fn save(&self, path: &Path) -> Result<(), RegistryError> {
        let text = serde_json::to_string_pretty(&json!({
            "keytype": "ed25519",
            "private": hex::encode(self.key.to_bytes()),
            "keyid": self.public().keyid(),
        }))
        .unwrap_or_default();
        bosun_plugins::atomic::write_new(path, format!("{text}\n").as_bytes()).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                RegistryError::Key {
                    path: path.to_owned(),
                    message: "exists: a key is never overwritten; choose another file".to_owned(),
                }
            } else {
                RegistryError::io(format!("writing {}", path.display()))(e)
            }
        })
    }

    /// Reads a key file written by [`PrivateKey::save`].
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        let bad = |message: &str| RegistryError::Key {
            path: path.to_owned(),
            message: message.to_owned(),
        };
        // Not through a link planted at the name, never waiting on a FIFO: a key is a small
        // regular file `save` wrote.
        let text = bosun_fsio::read_text(path, MAX_KEY_FILE_BYTES)
            .map_err(|e| e.into_io())
            .map_err(RegistryError::io(format!(
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

/// The largest key file read: one written by [`PrivateKey::save`] is a few hundred bytes.
const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;

/// A fingerprint as a person reads it: the key id in groups of four.
pub fn display_fingerprint(keyid: &str) -> String {
    keyid
        .as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::*;

    /// Publishers racing to save their new key at the same name: exactly one key is saved, the
    /// others are told the file exists, and the saved key is the one that reported success. A
    /// look before the write let several through, each replacing the key before it.
    #[test]
    fn a_key_saved_meanwhile_at_the_same_name_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = Arc::new(dir.path().join("root.key"));
        let writers: u8 = 8;
        let start = Arc::new(Barrier::new(usize::from(writers)));
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let path = Arc::clone(&path);
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    let key = PrivateKey::from_seed([i; 32]);
                    start.wait();
                    key.save(&path).map(|()| key.public().keyid())
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let saved: Vec<&String> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(saved.len(), 1, "{results:?}");
        for result in &results {
            if let Err(e) = result {
                assert!(e.to_string().contains("never overwritten"), "{e}");
            }
        }
        assert_eq!(&PrivateKey::load(&path).unwrap().public().keyid(), saved[0]);
    }

    #[cfg(unix)]
    #[test]
    fn a_key_is_not_saved_through_a_link_and_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("theirs");
        let linked = dir.path().join("linked.key");
        std::os::unix::fs::symlink(&outside, &linked).unwrap();
        let key = PrivateKey::from_seed([7; 32]);
        let error = key.save(&linked).unwrap_err();
        assert!(error.to_string().contains("never overwritten"), "{error}");
        assert!(!outside.exists(), "written through the link");

        let path = dir.path().join("keys/root.key");
        key.save(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(dir.path().join("keys"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
    }

    /// A key is read only from the regular file at its name: a link planted there (to another
    /// key, which would then sign in this key's place) and a FIFO (which would hang the load)
    /// are refused, the FIFO without waiting for a writer.
    #[test]
    fn a_key_is_not_loaded_through_a_link_or_from_a_fifo() {
        use bosun_fsio::testing::{plant_fifo, plant_link, returns_within_guard};
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("theirs.key");
        PrivateKey::from_seed([9; 32]).save(&theirs).unwrap();
        let linked = dir.path().join("linked.key");
        plant_link(&linked, &theirs);
        let error = PrivateKey::load(&linked).err().unwrap().to_string();
        assert!(error.contains("symbolic link"), "{error}");
        let fifo = dir.path().join("fifo.key");
        plant_fifo(&fifo);
        let error = returns_within_guard(&fifo.clone(), move || {
            PrivateKey::load(&fifo).err().unwrap().to_string()
        });
        assert!(error.contains("FIFO"), "{error}");
        assert!(PrivateKey::load(&theirs).is_ok());
    }
}
