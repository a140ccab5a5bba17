//! Registries that lie, hang or redirect, played by scripted loopback servers: each test names
//! the behaviour it stops and would fail if the check were removed.

use std::time::{Duration, Instant};

use base64::Engine as _;
use bosun_oci::manifest::INDEX_V1;
use bosun_oci::{
    Annotations, Artifact, Client, Credentials, Descriptor, Digest, Index, Limits, OciError,
    Registry, Repository,
};
use pretty_assertions::assert_eq;

use super::fake::{Fake, Reply, Seen};

fn repo() -> Repository {
    "bosun/hostile".parse().unwrap()
}

fn client(fake: &Fake, limits: Limits) -> Client {
    Client::builder(fake.address().parse().unwrap())
        .limits(limits)
        .build()
        .unwrap()
}

fn quick() -> Limits {
    Limits {
        idle_timeout: Duration::from_millis(400),
        ..Limits::default()
    }
}

fn artifact(text: &str) -> Artifact {
    Artifact::builder("application/vnd.example")
        .layer(
            "application/octet-stream",
            text.as_bytes().to_vec(),
            Annotations::new(),
        )
        .build()
}

#[tokio::test]
async fn pull_refuses_a_manifest_whose_digest_does_not_match() {
    let asked = artifact("asked for");
    let served = artifact("served instead").manifest.bytes;
    let fake = Fake::start(move |_| Reply::ok(served.clone())).await;
    let error = client(&fake, quick())
        .pull_manifest(&repo(), asked.digest())
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::DigestMismatch { .. }), "{error}");
}

#[tokio::test]
async fn pull_refuses_a_blob_whose_digest_does_not_match() {
    let descriptor = Descriptor::of("application/octet-stream", b"the real bytes");
    let fake = Fake::start(|_| Reply::ok(&b"the fake bytes"[..])).await;
    let error = client(&fake, quick())
        .pull_blob(&repo(), &descriptor)
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::DigestMismatch { .. }), "{error}");
}

#[tokio::test]
async fn pull_refuses_more_bytes_than_declared() {
    let descriptor = Descriptor::of("application/octet-stream", b"twelve bytes");
    // A Content-Length larger than the descriptor: refused before the body is read.
    let longer = Fake::start(|_| Reply::ok(&b"twelve bytes and then some"[..])).await;
    let error = client(&longer, quick())
        .pull_blob(&repo(), &descriptor)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            OciError::LengthMismatch {
                declared: 12,
                received: 26,
                ..
            }
        ),
        "{error}"
    );
    // No length at all, and a body that keeps going: cut at the first byte past the size.
    let endless = Fake::start(|_| {
        let mut raw =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
        for _ in 0..64 {
            raw.extend_from_slice(b"400\r\n");
            raw.extend_from_slice(&[b'x'; 0x400]);
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"0\r\n\r\n");
        Reply::Raw(raw)
    })
    .await;
    let error = client(&endless, quick())
        .pull_blob(&repo(), &descriptor)
        .await
        .unwrap_err();
    assert!(
        matches!(error, OciError::LengthMismatch { declared: 12, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn pull_refuses_a_blob_over_the_cap_before_asking_for_it() {
    let fake = Fake::start(|_| Reply::ok(&b""[..])).await;
    let mut descriptor = Descriptor::of("application/octet-stream", b"");
    descriptor.size = 2 * 1024 * 1024 * 1024;
    let limits = Limits {
        blob_bytes: 1024 * 1024,
        ..quick()
    };
    let error = client(&fake, limits)
        .pull_blob(&repo(), &descriptor)
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::TooLarge { .. }), "{error}");
    assert_eq!(error.code(), "limit_reached");
    assert_eq!(
        fake.seen().len(),
        0,
        "a request was made for a blob over the cap"
    );
}

#[tokio::test]
async fn pull_refuses_a_manifest_over_the_cap() {
    let limits = Limits {
        manifest_bytes: 1024,
        ..quick()
    };
    let declared = Fake::start(|_| Reply::ok(vec![b' '; 4096])).await;
    let error = client(&declared, limits.clone())
        .pull_manifest(&repo(), &Digest::of(b"x"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, OciError::TooLarge { size: 4096, .. }),
        "{error}"
    );
    let undeclared = Fake::start(|_| {
        let mut raw =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
        for _ in 0..8 {
            raw.extend_from_slice(b"200\r\n");
            raw.extend_from_slice(&[b' '; 0x200]);
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"0\r\n\r\n");
        Reply::Raw(raw)
    })
    .await;
    let error = client(&undeclared, limits)
        .pull_manifest(&repo(), &Digest::of(b"x"))
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::TooLarge { .. }), "{error}");
}

#[tokio::test]
async fn a_registry_that_hangs_times_out() {
    let descriptor = Descriptor::of("application/octet-stream", b"0123456789");
    // Accepts the connection and never answers.
    let silent = Fake::start(|_| Reply::Hang(Vec::new())).await;
    let started = Instant::now();
    let error = client(&silent, quick())
        .pull_blob(&repo(), &descriptor)
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::TimedOut { .. }), "{error}");
    assert_eq!(error.code(), "timed_out");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Answers, sends half the body, then stalls.
    let stalling = Fake::start(|_| {
        Reply::Hang(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234".to_vec())
    })
    .await;
    let error = client(&stalling, quick())
        .pull_blob(&repo(), &descriptor)
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::TimedOut { .. }), "{error}");
}

#[tokio::test]
async fn a_registry_trickling_inside_the_idle_timeout_is_cut_at_the_body_timeout() {
    // A byte every 50 ms: never idle for long, the whole of it only after 20 s or more.
    let blob = vec![b'x'; 400];
    let descriptor = Descriptor::of("application/octet-stream", &blob);
    let manifest = artifact("trickled").manifest;
    let digest = manifest.digest.clone();
    let trickled = Fake::start(move |seen| {
        let body = if seen.target.contains("/manifests/") {
            manifest.bytes.clone()
        } else {
            blob.clone()
        };
        Reply::Trickle(body, Duration::from_millis(50))
    })
    .await;
    let limits = Limits {
        idle_timeout: Duration::from_secs(30),
        body_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let client = client(&trickled, limits);
    let error = client.pull_blob(&repo(), &descriptor).await.unwrap_err();
    assert!(matches!(error, OciError::TooSlow { .. }), "{error}");
    assert_eq!(error.code(), "timed_out");
    assert!(error.to_string().contains("timeout_secs"), "{error}");
    let error = client.pull_manifest(&repo(), &digest).await.unwrap_err();
    assert!(matches!(error, OciError::TooSlow { .. }), "{error}");
}

fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// A registry that wants a bearer token from its own `/token` (given Basic credentials) and
/// then redirects blob downloads to `storage`.
fn token_registry(storage: String) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |seen: &Seen| {
        let host = seen.header("host").unwrap_or_default().to_owned();
        if seen.target.starts_with("/token") {
            return if seen.header("authorization") == Some(basic("me", "s3cret").as_str()) {
                Reply::ok(&br#"{"token":"t0k"}"#[..])
            } else {
                Reply::status(401)
            };
        }
        if seen.header("authorization") != Some("Bearer t0k") {
            let challenge = format!(
                r#"Bearer realm="http://{host}/token",service="fake",scope="repository:bosun/hostile:pull""#
            );
            return Reply::with(401, &[("WWW-Authenticate", &challenge)], &b""[..]);
        }
        Reply::with(
            307,
            &[("Location", &format!("{storage}/storage/blob"))],
            &b""[..],
        )
    }
}

#[tokio::test]
async fn credentials_do_not_follow_a_redirect_to_another_origin() {
    let blob = b"blob bytes from storage".to_vec();
    let descriptor = Descriptor::of("application/octet-stream", &blob);
    let storage = Fake::start(move |_| Reply::ok(blob.clone())).await;
    let registry = Fake::start(token_registry(storage.url())).await;
    let client = Client::builder(registry.address().parse().unwrap())
        .credentials(Credentials::Basic {
            username: "me".into(),
            password: "s3cret".into(),
        })
        .limits(quick())
        .build()
        .unwrap();
    let pulled = client.pull_blob(&repo(), &descriptor).await.unwrap();
    assert_eq!(pulled, b"blob bytes from storage");

    let at_registry = registry.seen();
    let token_request = at_registry
        .iter()
        .find(|s| s.target.starts_with("/token"))
        .expect("the token endpoint was asked");
    assert!(
        token_request
            .target
            .contains("scope=repository%3Abosun%2Fhostile%3Apull")
    );
    assert!(
        at_registry
            .iter()
            .any(|s| s.header("authorization") == Some("Bearer t0k"))
    );
    let at_storage = storage.seen();
    assert_eq!(at_storage.len(), 1);
    assert_eq!(
        at_storage[0].header("authorization"),
        None,
        "the token followed the redirect"
    );

    // The cached token is used for the next pull without a new challenge.
    let before = registry.seen().len();
    client.pull_blob(&repo(), &descriptor).await.unwrap();
    assert_eq!(registry.seen().len(), before + 1);
}

#[tokio::test]
async fn a_docker_config_login_goes_to_its_registry_token_endpoint_and_never_to_the_blob_store() {
    let blob = b"blob bytes from storage".to_vec();
    let descriptor = Descriptor::of("application/octet-stream", &blob);
    let storage = Fake::start(move |_| Reply::ok(blob.clone())).await;
    let registry = Fake::start(token_registry(storage.url())).await;
    // `docker login` stored a login for this registry and another for the storage's host:
    // only the registry's is used, and only on the registry's origin.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    let encode = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    std::fs::write(
        &config,
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{}"}},"http://{}":{{"auth":"{}"}}}}}}"#,
            registry.address(),
            encode("me:s3cret"),
            storage.address(),
            encode("storage:other"),
        ),
    )
    .unwrap();
    let login = bosun_oci::docker_config::credentials_for(
        &config,
        &registry.address(),
        bosun_oci::docker_config::Helpers::Never,
    )
    .unwrap();
    let client = Client::builder(registry.address().parse().unwrap())
        .credentials(login)
        .limits(quick())
        .build()
        .unwrap();
    let pulled = client.pull_blob(&repo(), &descriptor).await.unwrap();
    assert_eq!(pulled, b"blob bytes from storage");
    assert!(
        registry
            .seen()
            .iter()
            .any(|s| s.target.starts_with("/token")
                && s.header("authorization") == Some(basic("me", "s3cret").as_str())),
        "the token endpoint was not asked with the stored login"
    );
    let at_storage = storage.seen();
    assert_eq!(at_storage.len(), 1);
    assert_eq!(
        at_storage[0].header("authorization"),
        None,
        "a credential followed the redirect to the blob store"
    );
}

#[tokio::test]
async fn basic_credentials_are_withheld_from_a_plain_http_realm_on_another_origin() {
    let thief = Fake::start(|_| Reply::ok(&br#"{"token":"stolen"}"#[..])).await;
    let realm = format!("{}/token", thief.url());
    let registry = Fake::start(move |_| {
        let challenge = format!(r#"Bearer realm="{realm}",service="fake""#);
        Reply::with(401, &[("WWW-Authenticate", &challenge)], &b""[..])
    })
    .await;
    let client = Client::builder(registry.address().parse().unwrap())
        .credentials(Credentials::Basic {
            username: "me".into(),
            password: "s3cret".into(),
        })
        .limits(quick())
        .build()
        .unwrap();
    let error = client
        .pull_blob(&repo(), &Descriptor::of("x", b"x"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, OciError::CredentialsWithheld { .. }),
        "{error}"
    );
    assert_eq!(
        thief.seen().len(),
        0,
        "the password went to the other origin"
    );
}

/// A registry whose token service (on its own origin, at `/token`) takes only the OAuth2
/// refresh-token `POST` with the form the distribution spec describes, and whose API wants the
/// access token it hands out. A wrong form is answered 400 with the form echoed back.
fn oauth_registry(blob: Vec<u8>) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |seen: &Seen| {
        let host = seen.header("host").unwrap_or_default().to_owned();
        if seen.target.starts_with("/token") {
            let form: std::collections::BTreeMap<String, String> =
                url::form_urlencoded::parse(&seen.body)
                    .into_owned()
                    .collect();
            let good = seen.method == "POST"
                && seen.header("content-type") == Some("application/x-www-form-urlencoded")
                && seen.header("authorization").is_none()
                && form.get("grant_type").map(String::as_str) == Some("refresh_token")
                && form.get("refresh_token").map(String::as_str) == Some("r3fresh")
                && form.get("service").map(String::as_str) == Some("fake")
                && form.get("client_id").is_some_and(|c| !c.is_empty())
                && form
                    .get("scope")
                    .is_some_and(|s| s.split(' ').any(|s| s == "repository:bosun/hostile:pull"));
            return if good {
                Reply::ok(&br#"{"access_token":"acc3ss","expires_in":300,"scope":"repository:bosun/hostile:pull"}"#[..])
            } else {
                let echoed = String::from_utf8_lossy(&seen.body).into_owned();
                Reply::with(
                    400,
                    &[("Content-Type", "application/json")],
                    serde_json::json!({"errors":[{"code":"DENIED","message": format!("bad form {echoed}")}]})
                        .to_string(),
                )
            };
        }
        if seen.header("authorization") != Some("Bearer acc3ss") {
            let challenge = format!(
                r#"Bearer realm="http://{host}/token",service="fake",scope="repository:bosun/hostile:pull""#
            );
            return Reply::with(401, &[("WWW-Authenticate", &challenge)], &b""[..]);
        }
        Reply::ok(blob.clone())
    }
}

#[tokio::test]
async fn an_identity_token_is_exchanged_by_the_oauth2_post_and_never_sent_to_the_registry() {
    let blob = b"blob behind an identity token".to_vec();
    let descriptor = Descriptor::of("application/octet-stream", &blob);
    let registry = Fake::start(oauth_registry(blob)).await;
    // What `docker login` writes for a registry that signs in through a browser.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"auths":{{"{}":{{"auth":"PHRva2VuPjo=","identitytoken":"r3fresh"}}}}}}"#,
            registry.address()
        ),
    )
    .unwrap();
    let login = bosun_oci::docker_config::credentials_for(
        &config,
        &registry.address(),
        bosun_oci::docker_config::Helpers::Never,
    )
    .unwrap();
    assert!(matches!(login, Credentials::IdentityToken(_)));
    let client = Client::builder(registry.address().parse().unwrap())
        .credentials(login)
        .limits(quick())
        .build()
        .unwrap();
    let pulled = client.pull_blob(&repo(), &descriptor).await.unwrap();
    assert_eq!(pulled, b"blob behind an identity token");

    let seen = registry.seen();
    let exchanges: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.target.starts_with("/token"))
        .collect();
    assert_eq!(exchanges.len(), 1, "one exchange: {seen:#?}");
    assert_eq!(
        exchanges[0].method, "POST",
        "the exchange is the OAuth2 POST, not the GET"
    );
    for request in seen.iter().filter(|s| !s.target.starts_with("/token")) {
        let everything = format!("{} {:?}", request.target, request.headers);
        assert!(
            !everything.contains("r3fresh"),
            "the identity token went to the registry's API: {everything}"
        );
    }
    assert!(
        seen.iter()
            .any(|s| s.header("authorization") == Some("Bearer acc3ss")),
        "the access token was not used"
    );
    // The access token is cached for the scope: the next pull needs no new exchange.
    client.pull_blob(&repo(), &descriptor).await.unwrap();
    assert_eq!(
        registry
            .seen()
            .iter()
            .filter(|s| s.target.starts_with("/token"))
            .count(),
        1
    );
}

#[tokio::test]
async fn a_refused_identity_token_is_never_quoted_even_when_the_token_service_echoes_it() {
    let registry = Fake::start(oauth_registry(Vec::new())).await;
    let client = Client::builder(registry.address().parse().unwrap())
        .credentials(Credentials::IdentityToken("wr0ng-refresh".into()))
        .limits(quick())
        .build()
        .unwrap();
    let error = client
        .pull_blob(&repo(), &Descriptor::of("x", b"x"))
        .await
        .unwrap_err();
    let text = format!("{error} {error:?}");
    assert!(
        text.contains("bad form"),
        "the service's words are kept: {text}"
    );
    assert!(
        !text.contains("wr0ng-refresh"),
        "the token was quoted: {text}"
    );
}

#[tokio::test]
async fn an_identity_token_is_withheld_from_a_plain_http_realm_on_another_origin() {
    let thief = Fake::start(|_| Reply::ok(&br#"{"access_token":"stolen"}"#[..])).await;
    let realm = format!("{}/token", thief.url());
    let registry = Fake::start(move |_| {
        let challenge = format!(r#"Bearer realm="{realm}",service="fake""#);
        Reply::with(401, &[("WWW-Authenticate", &challenge)], &b""[..])
    })
    .await;
    let client = Client::builder(registry.address().parse().unwrap())
        .credentials(Credentials::IdentityToken("r3fresh".into()))
        .limits(quick())
        .build()
        .unwrap();
    let error = client
        .pull_blob(&repo(), &Descriptor::of("x", b"x"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, OciError::CredentialsWithheld { .. }),
        "{error}"
    );
    assert_eq!(
        thief.seen().len(),
        0,
        "the identity token went to the other origin"
    );
}

#[tokio::test]
async fn an_upload_is_never_redirected() {
    let elsewhere = Fake::start(|_| Reply::status(201)).await;
    let target = elsewhere.url();
    let registry = Fake::start(move |_| {
        Reply::with(307, &[("Location", &format!("{target}/v2/x"))], &b""[..])
    })
    .await;
    let manifest = artifact("m").manifest;
    let error = client(&registry, quick())
        .push_manifest(
            &repo(),
            None,
            bosun_oci::manifest::MANIFEST_V1,
            &manifest.bytes,
        )
        .await
        .unwrap_err();
    assert!(matches!(error, OciError::RedirectRefused { .. }), "{error}");
    assert_eq!(registry.seen()[0].body, manifest.bytes);
    assert_eq!(elsewhere.seen().len(), 0);
}

#[tokio::test]
async fn the_referrers_api_is_used_where_the_registry_has_it() {
    let subject = artifact("subject");
    let mut signature = Descriptor::of("application/vnd.oci.image.manifest.v1+json", b"sig");
    signature.artifact_type = Some("application/vnd.bosun.signature.v1".into());
    let mut sbom = Descriptor::of("application/vnd.oci.image.manifest.v1+json", b"sbom");
    sbom.artifact_type = Some("application/vnd.example.sbom".into());
    let index = Index {
        manifests: vec![signature.clone(), sbom],
        ..Index::default()
    }
    .to_vec();
    let path = format!("/v2/bosun/hostile/referrers/{}", subject.digest());
    let fake = Fake::start(move |seen| {
        if seen.target.starts_with(&path) {
            Reply::with(200, &[("Content-Type", INDEX_V1)], index.clone())
        } else {
            Reply::status(404)
        }
    })
    .await;
    // The registry ignores the filter; the client applies it.
    let found = client(&fake, quick())
        .referrers(
            &repo(),
            subject.digest(),
            Some("application/vnd.bosun.signature.v1"),
        )
        .await
        .unwrap();
    assert_eq!(found, vec![signature]);
    assert!(
        fake.seen()
            .iter()
            .all(|s| !s.target.contains("/manifests/")),
        "fell back needlessly"
    );
}

#[test]
fn plain_http_to_a_registry_elsewhere_is_refused() {
    let registry: Registry = "http://registry.example".parse().unwrap();
    let error = Client::builder(registry.clone()).build().unwrap_err();
    assert!(matches!(error, OciError::PlainHttp { .. }), "{error}");
    assert!(
        Client::builder(registry)
            .allow_plain_http(true)
            .build()
            .is_ok()
    );
}
