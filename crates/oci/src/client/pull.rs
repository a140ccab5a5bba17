//! Pulling (distribution-spec v1.1.0 "Pull"): resolving a tag, manifests and blobs by digest,
//! whole artifacts, tag lists. Every download is capped by its descriptor's size and the
//! client's limits and verified against its digest before it is handed over; a file is written
//! beside its destination and renamed into place only once verified.

use std::path::Path;

use reqwest::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, LINK};
use reqwest::{Method, StatusCode};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::{Access, BodyClock, Call, Client, read_body, status_error};
use crate::artifact::{Artifact, Blob};
use crate::digest::{Digest, Verifier};
use crate::error::OciError;
use crate::manifest::{
    DOCKER_MANIFEST_V2, Descriptor, INDEX_V1, MANIFEST_ACCEPT, MANIFEST_V1, Manifest, ManifestBytes,
};
use crate::reference::{Repository, Tag};

/// A blob download in progress, for callers that show progress: the bytes so far and the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobStream {
    /// Bytes received and verified-so-far.
    pub received: u64,
    /// The descriptor's size.
    pub total: u64,
}

/// The header carrying a manifest's digest (distribution-spec "Pulling manifests").
const CONTENT_DIGEST: &str = "docker-content-digest";

impl Client {
    /// The descriptor a tag points at now. A tag is mutable and the registry is trusted for
    /// this answer: pin what you then pull with a digest from signed metadata.
    pub async fn resolve(
        &self,
        repository: &Repository,
        tag: &Tag,
    ) -> Result<Descriptor, OciError> {
        let url = self.url(repository, &format!("manifests/{tag}"))?;
        let call = Call::new(Method::HEAD, url.clone()).header(ACCEPT, MANIFEST_ACCEPT);
        let response = self.send(repository, Access::Pull, &call).await?;
        if !response.status().is_success() {
            return Err(status_error(&url, response, &self.limits).await);
        }
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let media_type = header(CONTENT_TYPE.as_str()).unwrap_or_else(|| MANIFEST_V1.to_owned());
        let size = header(CONTENT_LENGTH.as_str()).and_then(|v| v.parse::<u64>().ok());
        match (header(CONTENT_DIGEST), size) {
            (Some(digest), Some(size)) => {
                if size > self.limits.manifest_bytes {
                    return Err(OciError::TooLarge {
                        what: format!("manifest {repository}:{tag}"),
                        limit: self.limits.manifest_bytes,
                        size,
                    });
                }
                let mut descriptor = Descriptor::of(&media_type, b"");
                descriptor.digest = digest.parse()?;
                descriptor.size = size;
                Ok(descriptor)
            }
            // A registry that does not say the digest on HEAD: fetch and hash the manifest.
            _ => {
                let (media_type, bytes, _) =
                    self.fetch_manifest(repository, tag.as_str(), None).await?;
                Ok(Descriptor::of(&media_type, &bytes))
            }
        }
    }

    /// The image manifest with `digest`, verified.
    pub async fn pull_manifest(
        &self,
        repository: &Repository,
        digest: &Digest,
    ) -> Result<ManifestBytes, OciError> {
        let (media_type, bytes, digest) = self
            .fetch_manifest(repository, &digest.to_string(), Some(digest))
            .await?;
        if media_type == INDEX_V1 {
            return Err(OciError::Malformed {
                what: format!("manifest {repository}@{digest}"),
                reason: "it is an image index, not an image manifest".to_owned(),
            });
        }
        let manifest = Manifest::from_slice(&bytes)?;
        Ok(ManifestBytes {
            manifest,
            bytes,
            digest,
        })
    }

    /// Fetches a manifest by tag or digest: its media type, bytes and digest. With `expected`,
    /// the bytes must hash to it; without, a `Docker-Content-Digest` the registry sends must
    /// match what arrived.
    pub(crate) async fn fetch_manifest(
        &self,
        repository: &Repository,
        reference: &str,
        expected: Option<&Digest>,
    ) -> Result<(String, Vec<u8>, Digest), OciError> {
        let url = self.url(repository, &format!("manifests/{reference}"))?;
        let call = Call::new(Method::GET, url.clone()).header(ACCEPT, MANIFEST_ACCEPT);
        let response = self.send(repository, Access::Pull, &call).await?;
        if !response.status().is_success() {
            return Err(status_error(&url, response, &self.limits).await);
        }
        let media_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or(v).trim().to_owned());
        let claimed = response
            .headers()
            .get(CONTENT_DIGEST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let what = format!("manifest {repository}@{reference}");
        let bytes = read_body(
            &url,
            response,
            &what,
            self.limits.manifest_bytes,
            None,
            &self.limits,
        )
        .await?;
        let actual = Digest::of(&bytes);
        let expected = match (expected, claimed) {
            (Some(expected), _) => Some(expected.clone()),
            (None, Some(claimed)) => Some(claimed.parse()?),
            (None, None) => None,
        };
        if let Some(expected) = expected
            && expected != actual
        {
            return Err(OciError::DigestMismatch {
                what,
                expected,
                actual,
            });
        }
        // The body's own mediaType wins over a missing or generic Content-Type.
        let declared = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("mediaType")?.as_str().map(str::to_owned));
        let media_type = declared
            .or(media_type)
            .filter(|m| [MANIFEST_V1, INDEX_V1, DOCKER_MANIFEST_V2].contains(&m.as_str()))
            .unwrap_or_else(|| MANIFEST_V1.to_owned());
        Ok((media_type, bytes, actual))
    }

    /// Whether the repository has the blob.
    pub async fn blob_exists(
        &self,
        repository: &Repository,
        digest: &Digest,
    ) -> Result<bool, OciError> {
        let url = self.url(repository, &format!("blobs/{digest}"))?;
        let response = self
            .send(
                repository,
                Access::Pull,
                &Call::new(Method::HEAD, url.clone()),
            )
            .await?;
        match response.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(status_error(&url, response, &self.limits).await),
        }
    }

    /// The blob `descriptor` names, in memory, verified.
    pub async fn pull_blob(
        &self,
        repository: &Repository,
        descriptor: &Descriptor,
    ) -> Result<Vec<u8>, OciError> {
        // Sized once: the size is already checked against the cap in `pull_blob_to`, and a
        // body past it is refused there.
        let capacity = usize::try_from(descriptor.size.min(self.limits.blob_bytes)).unwrap_or(0);
        let mut out = Vec::with_capacity(capacity);
        self.pull_blob_to(repository, descriptor, &mut out, |_| {})
            .await?;
        Ok(out)
    }

    /// Streams the blob `descriptor` names into `out`, calling `progress` after each piece.
    /// `out` sees bytes before the digest is checked at the end: on an error, discard what it
    /// holds ([`Client::pull_blob_to_file`] does that for files).
    pub async fn pull_blob_to<W: AsyncWrite + Unpin>(
        &self,
        repository: &Repository,
        descriptor: &Descriptor,
        out: &mut W,
        mut progress: impl FnMut(BlobStream),
    ) -> Result<(), OciError> {
        let what = format!("blob {repository}@{}", descriptor.digest);
        if descriptor.size > self.limits.blob_bytes {
            return Err(OciError::TooLarge {
                what,
                limit: self.limits.blob_bytes,
                size: descriptor.size,
            });
        }
        let url = self.url(repository, &format!("blobs/{}", descriptor.digest))?;
        let mut response = self
            .send(
                repository,
                Access::Pull,
                &Call::new(Method::GET, url.clone()),
            )
            .await?;
        if !response.status().is_success() {
            return Err(status_error(&url, response, &self.limits).await);
        }
        if let Some(length) = response.content_length()
            && length != descriptor.size
        {
            return Err(OciError::LengthMismatch {
                what,
                declared: descriptor.size,
                received: length,
            });
        }
        let mut verifier = Verifier::new();
        let clock = BodyClock::start(&url, &self.limits);
        while let Some(chunk) = clock.next(&mut response).await? {
            if verifier.length() + chunk.len() as u64 > descriptor.size {
                return Err(OciError::LengthMismatch {
                    what,
                    declared: descriptor.size,
                    received: verifier.length() + chunk.len() as u64,
                });
            }
            verifier.update(&chunk);
            out.write_all(&chunk)
                .await
                .map_err(|e| OciError::io("the download's destination", e))?;
            progress(BlobStream {
                received: verifier.length(),
                total: descriptor.size,
            });
        }
        out.flush()
            .await
            .map_err(|e| OciError::io("the download's destination", e))?;
        verifier
            .check(&descriptor.digest, descriptor.size)
            .map_err(|m| OciError::mismatch(&what, m))
    }

    /// Downloads the blob into `path`: written to a temporary file beside it
    /// ([`bosun_fsio::temporary_beside`]), synced, and renamed over `path` only when the digest
    /// matched; removed on any failure.
    pub async fn pull_blob_to_file(
        &self,
        repository: &Repository,
        descriptor: &Descriptor,
        path: &Path,
        progress: impl FnMut(BlobStream),
    ) -> Result<(), OciError> {
        // The partial download is a temporary created exclusively under an unpredictable
        // name beside `path`: a link planted at a name known in advance is never written
        // through. Dropped on any failure, it is removed.
        let partial =
            bosun_fsio::temporary_beside(path, 0o644).map_err(|e| OciError::io(path, e))?;
        let result = async {
            let handle = partial
                .as_file()
                .try_clone()
                .map_err(|e| OciError::io(partial.path(), e))?;
            let mut file = tokio::fs::File::from_std(handle);
            self.pull_blob_to(repository, descriptor, &mut file, progress)
                .await?;
            file.sync_all()
                .await
                .map_err(|e| OciError::io(partial.path(), e))?;
            Ok(())
        }
        .await;
        result.and_then(|()| {
            partial
                .persist(path)
                .map(drop)
                .map_err(|e| OciError::io(path, e.error))
        })
    }

    /// The artifact whose manifest has `digest`: the manifest, its config and every layer,
    /// each verified. The config is capped like a manifest, the layers together like a blob.
    pub async fn pull_artifact(
        &self,
        repository: &Repository,
        digest: &Digest,
    ) -> Result<Artifact, OciError> {
        let manifest = self.pull_manifest(repository, digest).await?;
        let config = &manifest.manifest.config;
        if config.size > self.limits.manifest_bytes {
            return Err(OciError::TooLarge {
                what: format!("config of {repository}@{digest}"),
                limit: self.limits.manifest_bytes,
                size: config.size,
            });
        }
        let total: u64 = manifest
            .manifest
            .layers
            .iter()
            .fold(0u64, |sum, l| sum.saturating_add(l.size));
        if total > self.limits.blob_bytes {
            return Err(OciError::TooLarge {
                what: format!("the layers of {repository}@{digest}"),
                limit: self.limits.blob_bytes,
                size: total,
            });
        }
        let mut blobs = Vec::with_capacity(1 + manifest.manifest.layers.len());
        for descriptor in std::iter::once(config).chain(&manifest.manifest.layers) {
            let bytes = match descriptor.data.as_deref().and_then(embedded) {
                Some(bytes) => {
                    let mut verifier = Verifier::new();
                    verifier.update(&bytes);
                    verifier
                        .check(&descriptor.digest, descriptor.size)
                        .map_err(|m| OciError::mismatch("embedded data", m))?;
                    bytes
                }
                None => self.pull_blob(repository, descriptor).await?,
            };
            blobs.push(Blob {
                descriptor: descriptor.clone(),
                bytes: bytes.into(),
            });
        }
        Ok(Artifact { manifest, blobs })
    }

    /// The repository's tags, following `Link` pages on the registry's origin, at most
    /// [`Limits::max_tags`](super::Limits::max_tags).
    pub async fn list_tags(&self, repository: &Repository) -> Result<Vec<Tag>, OciError> {
        #[derive(serde::Deserialize)]
        struct TagList {
            tags: Option<Vec<String>>,
        }
        let mut url = self.url(repository, "tags/list?n=1000")?;
        let mut tags = Vec::new();
        loop {
            let response = self
                .send(
                    repository,
                    Access::Pull,
                    &Call::new(Method::GET, url.clone()),
                )
                .await?;
            if !response.status().is_success() {
                return Err(status_error(&url, response, &self.limits).await);
            }
            let next = response
                .headers()
                .get(LINK)
                .and_then(|v| v.to_str().ok())
                .and_then(next_link)
                .and_then(|link| url.join(&link).ok());
            let body = read_body(
                &url,
                response,
                "tag list",
                self.limits.manifest_bytes,
                None,
                &self.limits,
            )
            .await?;
            let page: TagList = serde_json::from_slice(&body).map_err(|e| OciError::Malformed {
                what: format!("tag list of {repository}"),
                reason: e.to_string(),
            })?;
            for tag in page.tags.unwrap_or_default() {
                if tags.len() >= self.limits.max_tags {
                    return Err(OciError::TooLarge {
                        what: format!("tag list of {repository}"),
                        limit: self.limits.max_tags as u64,
                        size: tags.len() as u64 + 1,
                    });
                }
                tags.push(tag.parse()?);
            }
            match next {
                Some(next) if self.same_origin(&next) && next != url => url = next,
                _ => return Ok(tags),
            }
        }
    }
}

/// Decodes a descriptor's embedded `data` (base64).
fn embedded(data: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

/// The target of `rel="next"` in a `Link` header.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        params.contains("rel=\"next\"").then(|| {
            target
                .trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_owned()
        })
    })
}
