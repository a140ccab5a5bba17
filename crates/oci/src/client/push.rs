//! Pushing (distribution-spec v1.1.0 "Push"): blobs in one `PUT` or in `PATCH` chunks, then the
//! manifest, and for a manifest with a `subject` on a registry without the referrers API, the
//! referrers tag. A blob the repository already has is not sent again.

use bytes::Bytes;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RANGE};
use reqwest::{Method, StatusCode};

use super::{Access, Call, Client, status_error};
use crate::artifact::Artifact;
use crate::digest::Digest;
use crate::error::OciError;
use crate::reference::{Repository, Tag};

/// What the registry said to a manifest push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedManifest {
    /// The manifest's digest.
    pub digest: Digest,
    /// Whether the registry indexed the manifest's `subject` itself (it answered with
    /// `OCI-Subject`); when not, the client keeps the referrers tag.
    pub subject_indexed: bool,
}

impl Client {
    /// Pushes `bytes` as one blob in a single `PUT`, unless the repository has it already.
    pub async fn push_blob(
        &self,
        repository: &Repository,
        bytes: &[u8],
    ) -> Result<Digest, OciError> {
        let digest = Digest::of(bytes);
        if self.blob_exists(repository, &digest).await? {
            return Ok(digest);
        }
        let location = self.start_upload(repository).await?;
        self.finish_upload(repository, location, &digest, Bytes::copy_from_slice(bytes))
            .await?;
        Ok(digest)
    }

    /// Pushes `bytes` as one blob in `PATCH` chunks of `chunk_bytes`, then a closing `PUT`,
    /// unless the repository has it already.
    pub async fn push_blob_chunked(
        &self,
        repository: &Repository,
        bytes: &[u8],
        chunk_bytes: u64,
    ) -> Result<Digest, OciError> {
        let digest = Digest::of(bytes);
        if self.blob_exists(repository, &digest).await? {
            return Ok(digest);
        }
        let chunk = usize::try_from(chunk_bytes.max(1)).unwrap_or(usize::MAX);
        let mut location = self.start_upload(repository).await?;
        let mut offset = 0usize;
        for piece in bytes.chunks(chunk) {
            let end = offset + piece.len() - 1;
            let call = Call::new(Method::PATCH, location.clone())
                .header(CONTENT_TYPE, "application/octet-stream")
                .header(CONTENT_LENGTH, &piece.len().to_string())
                .header(
                    reqwest::header::HeaderName::from_static("content-range"),
                    &format!("{offset}-{end}"),
                )
                .body(Bytes::copy_from_slice(piece));
            let response = self.send(repository, Access::Push, &call).await?;
            if response.status() != StatusCode::ACCEPTED {
                return Err(status_error(&location, response, &self.limits).await);
            }
            // The registry says how much it holds: `0-<last byte>`.
            let range = response
                .headers()
                .get(RANGE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            if range != format!("0-{end}") {
                return Err(OciError::Upload {
                    url: location.to_string(),
                    reason: format!(
                        "after bytes {offset}-{end} the registry holds `{range}`, not `0-{end}`"
                    ),
                });
            }
            location = next_location(&location, &response)?;
            offset += piece.len();
        }
        self.finish_upload(repository, location, &digest, Bytes::new())
            .await?;
        Ok(digest)
    }

    /// Opens an upload session: its URL.
    async fn start_upload(&self, repository: &Repository) -> Result<url::Url, OciError> {
        let url = self.url(repository, "blobs/uploads/")?;
        let call = Call::new(Method::POST, url.clone()).header(CONTENT_LENGTH, "0");
        let response = self.send(repository, Access::Push, &call).await?;
        if response.status() != StatusCode::ACCEPTED {
            return Err(status_error(&url, response, &self.limits).await);
        }
        next_location(&url, &response)
    }

    /// Closes an upload with `PUT <location>?digest=`, sending `rest` (the whole blob for a
    /// monolithic upload, nothing after chunks).
    async fn finish_upload(
        &self,
        repository: &Repository,
        mut location: url::Url,
        digest: &Digest,
        rest: Bytes,
    ) -> Result<(), OciError> {
        location
            .query_pairs_mut()
            .append_pair("digest", &digest.to_string());
        let call = Call::new(Method::PUT, location.clone())
            .header(CONTENT_TYPE, "application/octet-stream")
            .header(CONTENT_LENGTH, &rest.len().to_string())
            .body(rest);
        let response = self.send(repository, Access::Push, &call).await?;
        if response.status() != StatusCode::CREATED {
            return Err(status_error(&location, response, &self.limits).await);
        }
        check_claimed_digest(&response, digest, "blob")
    }

    /// Pushes a manifest's bytes under `reference` (a tag, or its digest).
    pub async fn push_manifest(
        &self,
        repository: &Repository,
        reference: Option<&Tag>,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<PushedManifest, OciError> {
        let digest = Digest::of(bytes);
        let reference = reference.map_or_else(|| digest.to_string(), ToString::to_string);
        let url = self.url(repository, &format!("manifests/{reference}"))?;
        let call = Call::new(Method::PUT, url.clone())
            .header(CONTENT_TYPE, media_type)
            .body(Bytes::copy_from_slice(bytes));
        let response = self.send(repository, Access::Push, &call).await?;
        if response.status() != StatusCode::CREATED {
            return Err(status_error(&url, response, &self.limits).await);
        }
        check_claimed_digest(&response, &digest, "manifest")?;
        Ok(PushedManifest {
            digest,
            subject_indexed: response.headers().contains_key("oci-subject"),
        })
    }

    /// Pushes an artifact: each blob (in chunks above [`Limits::chunk_bytes`](super::Limits)),
    /// then the manifest under `tag` or, without one, under its digest. A manifest with a
    /// `subject` is also added to the subject's referrers tag when the registry does not index
    /// it itself. Returns the manifest's digest.
    pub async fn push_artifact(
        &self,
        repository: &Repository,
        artifact: &Artifact,
        tag: Option<&Tag>,
    ) -> Result<Digest, OciError> {
        artifact.check()?;
        for blob in &artifact.blobs {
            if blob.descriptor.size > self.limits.chunk_bytes {
                self.push_blob_chunked(repository, &blob.bytes, self.limits.chunk_bytes)
                    .await?;
            } else {
                self.push_blob(repository, &blob.bytes).await?;
            }
        }
        let media_type = artifact
            .manifest
            .manifest
            .media_type
            .clone()
            .unwrap_or_else(|| crate::manifest::MANIFEST_V1.to_owned());
        let pushed = self
            .push_manifest(repository, tag, &media_type, &artifact.manifest.bytes)
            .await?;
        if let Some(subject) = &artifact.manifest.manifest.subject
            && !pushed.subject_indexed
        {
            self.add_to_referrers_tag(repository, &subject.digest, artifact.manifest.descriptor())
                .await?;
        }
        Ok(pushed.digest)
    }
}

/// The `Location` of an upload answer, resolved against the request's URL.
fn next_location(url: &url::Url, response: &reqwest::Response) -> Result<url::Url, OciError> {
    let location = response
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| OciError::Upload {
            url: url.to_string(),
            reason: "the registry answered without a Location for the upload".to_owned(),
        })?;
    url.join(location).map_err(|e| OciError::Upload {
        url: url.to_string(),
        reason: format!("the upload Location `{location}` is not a URL: {e}"),
    })
}

/// Fails when the registry says it stored content with another digest than the one sent.
fn check_claimed_digest(
    response: &reqwest::Response,
    digest: &Digest,
    what: &str,
) -> Result<(), OciError> {
    let Some(claimed) = response
        .headers()
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(());
    };
    let claimed: Digest = claimed.parse()?;
    if &claimed != digest {
        return Err(OciError::DigestMismatch {
            what: format!("{what} as stored by the registry"),
            expected: digest.clone(),
            actual: claimed,
        });
    }
    Ok(())
}
