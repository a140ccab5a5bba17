//! Images a person attaches to a request: the bytes, their media type (read from the bytes'
//! magic numbers, never from a file name) and their SHA-256.
//!
//! An [`Image`] serialises as its reference only — media type, digest and size — so a stored
//! session or a trace that writes a message never holds the bytes: the session store keeps them
//! once, by digest, beside the session, and puts them back on load ([`Image::with_bytes`]).
//! Adapters send the bytes base64-encoded in their own wire format; an image whose bytes are not
//! held is sent as a short text note instead, never as an empty image.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Largest image accepted, in bytes: its base64 form is then at most 5 MiB, the most the
/// providers take for one image.
pub const MAX_IMAGE_BYTES: usize = 3 * 1024 * 1024 + 768 * 1024;

/// Most images in one request of a person.
pub const MAX_IMAGES_PER_MESSAGE: usize = 20;

/// The image formats every supported provider takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ImageType {
    /// PNG.
    #[serde(rename = "image/png")]
    Png,
    /// JPEG.
    #[serde(rename = "image/jpeg")]
    Jpeg,
    /// GIF (87a or 89a).
    #[serde(rename = "image/gif")]
    Gif,
    /// WebP.
    #[serde(rename = "image/webp")]
    Webp,
}

impl ImageType {
    /// The format `bytes` are in, by their magic numbers; `None` for anything else.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Self::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Self::Gif)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    /// The media type, e.g. `image/png`.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// Whether a file name's extension is one of an image this type could be (`.png`, `.jpg`,
    /// …): used only to decide that a path was meant as an image, never to trust its content.
    pub fn looks_like_image_name(name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        [".png", ".jpg", ".jpeg", ".gif", ".webp"]
            .iter()
            .any(|ext| lower.ends_with(ext))
    }
}

impl fmt::Display for ImageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.media_type())
    }
}

/// Why bytes are not an image Bosun sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// Over [`MAX_IMAGE_BYTES`].
    #[error(
        "{what} is {bytes} bytes, over the {} KiB an image may be; scale it down or crop it",
        MAX_IMAGE_BYTES / 1024
    )]
    TooLarge {
        /// What was attached (a path, "the pasted image").
        what: String,
        /// Its size.
        bytes: u64,
    },
    /// Not PNG, JPEG, GIF or WebP by its first bytes, whatever its name says.
    #[error(
        "{what} is not a PNG, JPEG, GIF or WebP image (its first bytes say otherwise, whatever its name); convert it to one of those"
    )]
    NotAnImage {
        /// What was attached.
        what: String,
    },
    /// Empty.
    #[error("{what} is empty")]
    Empty {
        /// What was attached.
        what: String,
    },
    /// More than [`MAX_IMAGES_PER_MESSAGE`] in one request.
    #[error(
        "{count} images in one request; at most {MAX_IMAGES_PER_MESSAGE} are sent, attach fewer"
    )]
    TooMany {
        /// How many were attached.
        count: usize,
    },
    /// Stored bytes that do not hash to the digest that names them.
    #[error("the stored image {sha256} does not match its digest; it was changed on disk")]
    DigestMismatch {
        /// The digest the message names.
        sha256: String,
    },
}

/// An image in a person's message: its reference (media type, SHA-256, size) and, while in
/// memory, its bytes. Equality compares the reference.
#[derive(Clone, Serialize, Deserialize)]
pub struct Image {
    /// What the bytes are, read from the bytes.
    pub media_type: ImageType,
    /// Lowercase hex SHA-256 of the bytes.
    pub sha256: String,
    /// Size of the bytes.
    pub size: u64,
    /// The bytes; never serialised.
    #[serde(skip)]
    bytes: Option<Arc<[u8]>>,
}

impl Image {
    /// Checks `bytes` as an image: not empty, at most [`MAX_IMAGE_BYTES`], and PNG, JPEG, GIF
    /// or WebP by their magic numbers. `what` names it in errors.
    pub fn from_bytes(what: &str, bytes: Vec<u8>) -> Result<Self, ImageError> {
        if bytes.is_empty() {
            return Err(ImageError::Empty { what: what.into() });
        }
        if bytes.len() > MAX_IMAGE_BYTES {
            return Err(ImageError::TooLarge {
                what: what.into(),
                bytes: bytes.len() as u64,
            });
        }
        let media_type =
            ImageType::sniff(&bytes).ok_or_else(|| ImageError::NotAnImage { what: what.into() })?;
        Ok(Self {
            media_type,
            sha256: sha256_hex(&bytes),
            size: bytes.len() as u64,
            bytes: Some(Arc::from(bytes)),
        })
    }

    /// Decodes base64 (as an editor sends an image) and checks it as [`Image::from_bytes`].
    pub fn from_base64(what: &str, data: &str) -> Result<Self, ImageError> {
        // Four base64 characters per three bytes: refuse what cannot fit before decoding.
        if data.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
            return Err(ImageError::TooLarge {
                what: what.into(),
                bytes: (data.len() / 4 * 3) as u64,
            });
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|_| ImageError::NotAnImage { what: what.into() })?;
        Self::from_bytes(what, bytes)
    }

    /// This reference with its bytes put back, if they hash to its digest and are still an
    /// image of its type.
    pub fn with_bytes(mut self, bytes: Vec<u8>) -> Result<Self, ImageError> {
        if sha256_hex(&bytes) != self.sha256
            || bytes.len() as u64 != self.size
            || ImageType::sniff(&bytes) != Some(self.media_type)
        {
            return Err(ImageError::DigestMismatch {
                sha256: self.sha256,
            });
        }
        self.bytes = Some(Arc::from(bytes));
        Ok(self)
    }

    /// The bytes, when held.
    pub fn bytes(&self) -> Option<&[u8]> {
        self.bytes.as_deref()
    }

    /// The bytes base64-encoded (standard alphabet, padded), when held.
    pub fn base64(&self) -> Option<String> {
        self.bytes()
            .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
    }

    /// A `data:` URL of the bytes, when held.
    pub fn data_url(&self) -> Option<String> {
        self.base64()
            .map(|data| format!("data:{};base64,{data}", self.media_type))
    }

    /// How a person is shown the image: `[image: image/png, 12 KiB]`.
    pub fn label(&self) -> String {
        let size = if self.size >= 1024 {
            format!("{} KiB", self.size.div_ceil(1024))
        } else {
            format!("{} bytes", self.size)
        };
        format!("[image: {}, {size}]", self.media_type)
    }

    /// What stands for the image where it cannot be sent: a text the model reads.
    pub fn placeholder(&self, why: &str) -> String {
        format!(
            "[an image was attached here ({}, {} bytes, sha256 {}) but is not sent: {why}]",
            self.media_type,
            self.size,
            short(&self.sha256)
        )
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        use fmt::Write as _;
        let _ = write!(out, "{byte:02x}");
    }
    out
}

impl PartialEq for Image {
    fn eq(&self, other: &Self) -> bool {
        self.media_type == other.media_type
            && self.sha256 == other.sha256
            && self.size == other.size
    }
}

impl fmt::Debug for Image {
    // Never the bytes: a debug print of a request must not dump megabytes of an image.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Image")
            .field("media_type", &self.media_type)
            .field("sha256", &self.sha256)
            .field("size", &self.size)
            .field("held", &self.bytes.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest valid PNG: one transparent pixel.
    pub(crate) const PNG: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn the_type_comes_from_the_bytes() {
        assert_eq!(ImageType::sniff(PNG), Some(ImageType::Png));
        assert_eq!(
            ImageType::sniff(b"\xFF\xD8\xFF\xE0rest"),
            Some(ImageType::Jpeg)
        );
        assert_eq!(ImageType::sniff(b"GIF89a...."), Some(ImageType::Gif));
        assert_eq!(
            ImageType::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(ImageType::Webp)
        );
        assert_eq!(ImageType::sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(ImageType::sniff(b"<svg xmlns="), None);
    }

    #[test]
    fn a_file_that_claims_png_but_is_not_is_refused() {
        let err = Image::from_bytes("shot.png", b"#!/bin/sh\necho hi\n".to_vec()).unwrap_err();
        assert_eq!(
            err,
            ImageError::NotAnImage {
                what: "shot.png".into()
            }
        );
        assert!(err.to_string().contains("whatever its name"), "{err}");
    }

    #[test]
    fn an_oversized_image_is_refused() {
        let mut bytes = PNG.to_vec();
        bytes.resize(MAX_IMAGE_BYTES + 1, 0);
        let err = Image::from_bytes("big.png", bytes).unwrap_err();
        assert!(
            matches!(err, ImageError::TooLarge { bytes, .. } if bytes == MAX_IMAGE_BYTES as u64 + 1)
        );
        let mut exact = PNG.to_vec();
        exact.resize(MAX_IMAGE_BYTES, 0);
        assert!(Image::from_bytes("ok.png", exact).is_ok());
    }

    #[test]
    fn serialises_as_a_reference_without_bytes() {
        let image = Image::from_bytes("dot.png", PNG.to_vec()).unwrap();
        let json = serde_json::to_string(&image).unwrap();
        let b64 = image.base64().unwrap();
        assert!(!json.contains(&b64[..16]), "{json}");
        assert_eq!(
            json,
            format!(
                r#"{{"media_type":"image/png","sha256":"{}","size":{}}}"#,
                image.sha256,
                PNG.len()
            )
        );
        let back: Image = serde_json::from_str(&json).unwrap();
        assert_eq!(back, image);
        assert!(back.bytes().is_none());
        assert!(!format!("{image:?}").contains(&b64[..16]));
        let back = back.with_bytes(PNG.to_vec()).unwrap();
        assert_eq!(back.bytes(), Some(PNG));
        let mut other = PNG.to_vec();
        other[20] ^= 1;
        let reference: Image = serde_json::from_str(&json).unwrap();
        assert!(matches!(
            reference.with_bytes(other),
            Err(ImageError::DigestMismatch { .. })
        ));
    }

    #[test]
    fn base64_round_trips_and_refuses_garbage() {
        let image = Image::from_bytes("dot.png", PNG.to_vec()).unwrap();
        let again = Image::from_base64("pasted", &image.base64().unwrap()).unwrap();
        assert_eq!(again, image);
        assert!(
            image
                .data_url()
                .unwrap()
                .starts_with("data:image/png;base64,iVBORw0KGgo")
        );
        assert!(matches!(
            Image::from_base64("pasted", "not base64 at all!"),
            Err(ImageError::NotAnImage { .. })
        ));
        let huge = "A".repeat((MAX_IMAGE_BYTES / 3 + 10) * 4);
        assert!(matches!(
            Image::from_base64("pasted", &huge),
            Err(ImageError::TooLarge { .. })
        ));
    }
}
