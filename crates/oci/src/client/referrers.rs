//! What refers to a manifest (distribution-spec v1.1.0 "Listing Referrers", image-spec v1.1.0
//! "Referrers Tag Schema"): the referrers API, the `sha256-<hex>` tag a registry without it
//! keeps instead, and the `sha256-<hex>.sig` tag signature tools push. What these return is a
//! list of candidates: each is then pulled by its digest and its signature verified by the
//! caller, so a registry that lies here can hide a signature but not forge one.

use reqwest::header::ACCEPT;
use reqwest::{Method, StatusCode};

use super::{Access, Call, Client, read_body, status_error};
use crate::digest::Digest;
use crate::error::OciError;
use crate::manifest::{Descriptor, INDEX_V1, Index};
use crate::reference::{Repository, Tag};

impl Client {
    /// The manifests whose `subject` is `subject`, of `artifact_type` when given: from the
    /// referrers API, or from the referrers tag where the registry answers `404` to it.
    pub async fn referrers(
        &self,
        repository: &Repository,
        subject: &Digest,
        artifact_type: Option<&str>,
    ) -> Result<Vec<Descriptor>, OciError> {
        let mut url = self.url(repository, &format!("referrers/{subject}"))?;
        if let Some(artifact_type) = artifact_type {
            url.query_pairs_mut()
                .append_pair("artifactType", artifact_type);
        }
        let call = Call::new(Method::GET, url.clone()).header(ACCEPT, INDEX_V1);
        let response = self.send(repository, Access::Pull, &call).await?;
        let index = match response.status() {
            s if s.is_success() => {
                let body = read_body(
                    &url,
                    response,
                    "referrers list",
                    self.limits.manifest_bytes,
                    None,
                    &self.limits,
                )
                .await?;
                Index::from_slice(&format!("referrers list of {subject}"), &body)?
            }
            StatusCode::NOT_FOUND => match self.referrers_tag(repository, subject).await? {
                Some(index) => index,
                None => return Ok(Vec::new()),
            },
            _ => return Err(status_error(&url, response, &self.limits).await),
        };
        // A registry may ignore the filter (it says so by omitting `OCI-Filters-Applied`);
        // filter here either way.
        Ok(index
            .manifests
            .into_iter()
            .filter(|d| artifact_type.is_none_or(|t| d.artifact_type.as_deref() == Some(t)))
            .collect())
    }

    /// The index under the referrers tag of `subject`, if there is one.
    async fn referrers_tag(
        &self,
        repository: &Repository,
        subject: &Digest,
    ) -> Result<Option<Index>, OciError> {
        match self
            .fetch_manifest(repository, &subject.referrers_tag(), None)
            .await
        {
            Ok((_, bytes, _)) => Ok(Some(Index::from_slice(
                &format!("referrers tag of {subject}"),
                &bytes,
            )?)),
            Err(OciError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Adds `referrer` to the referrers tag of `subject` (creating it), for registries without
    /// the referrers API. Two clients doing this at once can lose one entry, as the spec says;
    /// pushing again restores it.
    pub(crate) async fn add_to_referrers_tag(
        &self,
        repository: &Repository,
        subject: &Digest,
        referrer: Descriptor,
    ) -> Result<(), OciError> {
        let mut index = self
            .referrers_tag(repository, subject)
            .await?
            .unwrap_or_default();
        if index.manifests.iter().any(|d| d.digest == referrer.digest) {
            return Ok(());
        }
        index.manifests.push(referrer);
        let tag: Tag = subject.referrers_tag().parse()?;
        self.push_manifest(repository, Some(&tag), INDEX_V1, &index.to_vec())
            .await?;
        Ok(())
    }

    /// The manifest under `subject`'s `sha256-<hex>.sig` tag, if there is one.
    pub async fn signature_tag(
        &self,
        repository: &Repository,
        subject: &Digest,
    ) -> Result<Option<Descriptor>, OciError> {
        let tag: Tag = subject.signature_tag().parse()?;
        match self.resolve(repository, &tag).await {
            Ok(descriptor) => Ok(Some(descriptor)),
            Err(OciError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every candidate signature of `subject`: referrers of `artifact_type`, then the
    /// `.sig` tag's manifest when it is not among them.
    pub async fn signatures(
        &self,
        repository: &Repository,
        subject: &Digest,
        artifact_type: &str,
    ) -> Result<Vec<Descriptor>, OciError> {
        let mut found = self
            .referrers(repository, subject, Some(artifact_type))
            .await?;
        if let Some(tagged) = self.signature_tag(repository, subject).await?
            && !found.iter().any(|d| d.digest == tagged.digest)
        {
            found.push(tagged);
        }
        Ok(found)
    }
}
