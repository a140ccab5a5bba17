//! The outgoing-HTTP guard: the `wasi:http` send hook every plugin request goes through.
//!
//! For each request (and so for each redirect hop, which the guest follows itself) the guard:
//! 1. accepts only `http` and `https`;
//! 2. takes the authority from the request URI — never the `Host` header, which guests cannot
//!    set — and requires it in the call's [`NetGrant::hosts`] (exact host, case-insensitive,
//!    default ports normalised);
//! 3. normalises IP literals the way a resolver would (`2130706433`, `0x7f000001`, `0177.1`,
//!    `127.1`, `[::ffff:127.0.0.1]`) and resolves names on the host side through a [`Resolver`];
//! 4. refuses if any address is loopback, private, link-local, unique-local, CGNAT, unspecified,
//!    multicast, broadcast, reserved, documentation, cloud metadata, or an IPv6 form embedding
//!    one of those — unless the call's [`NetGrant::private_allowed`] names that address;
//! 5. connects to the checked address (never resolving again), keeping the original `Host`
//!    and TLS server name, and bounds connect, first-byte and between-bytes time and the
//!    response body size.
//!
//! It knows nothing of policy: the caller hands it the grant for the call.

use std::collections::HashMap;
use std::future::{Future, poll_fn};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::{Pin, pin};
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::uri::{Authority, Scheme};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// A future resolving a host name to addresses.
pub type ResolveFuture<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// Turns a host name into addresses, on the host side. The default is [`SystemResolver`];
/// tests inject a [`StaticResolver`].
pub trait Resolver: Send + Sync + std::fmt::Debug {
    /// Every address `host` resolves to. `host` is already lower-cased and is never an IP
    /// literal.
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a>;
}

/// Resolves with the operating system's resolver (tokio's `lookup_host`).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, port)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// Resolves from a fixed table; every other name fails. For tests and offline use.
#[derive(Debug, Default, Clone)]
pub struct StaticResolver {
    names: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name` (case-insensitive) resolving to `addrs`.
    pub fn with(mut self, name: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        self.names
            .insert(name.to_ascii_lowercase(), addrs.into_iter().collect());
        self
    }
}

impl Resolver for StaticResolver {
    fn resolve<'a>(&'a self, host: &'a str, _port: u16) -> ResolveFuture<'a> {
        let found = self.names.get(host).cloned();
        Box::pin(async move {
            found.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "name not known"))
        })
    }
}

/// What one call may reach over HTTP.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetGrant {
    /// Authorities allowed for this call (exact host, case-insensitive). One without a port
    /// allows the scheme's default port only.
    pub hosts: Vec<bosun_core::Authority>,
    /// Addresses a policy rule named explicitly; only these non-public addresses may be
    /// reached.
    pub private_allowed: Vec<IpAddr>,
}

impl NetGrant {
    /// Whether some granted authority has `host` (lower-case, no port) as its host.
    pub fn names_host(&self, host: &str) -> bool {
        self.hosts.iter().any(|authority| authority.host == host)
    }
}

/// Bounds on every outgoing request. Part of [`SandboxConfig`](crate::SandboxConfig).
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Largest response body accepted, in bytes (default 8 MiB); the body fails past it.
    pub max_response_bytes: u64,
    /// Time to resolve a name (default 5 s).
    pub dns_timeout: Duration,
    /// Time to connect, and to finish the TLS and HTTP handshakes (default 10 s).
    pub connect_timeout: Duration,
    /// Time from sending to the response head (default 30 s).
    pub first_byte_timeout: Duration,
    /// Longest pause between response body frames (default 30 s).
    pub between_bytes_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_response_bytes: 8 << 20,
            dns_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(30),
            between_bytes_timeout: Duration::from_secs(30),
        }
    }
}

/// A request the guard refused, for the call's trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedRequest {
    /// The scheme and authority asked for (`https://example.com:8443`); never the path.
    pub target: String,
    /// Why it was refused.
    pub reason: Refusal,
}

/// Why the guard refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The instance was not granted `net.http` at all.
    #[error("the plugin has no net.http grant")]
    NoHttpGrant,
    /// The scheme is not `http` or `https`.
    #[error("scheme `{0}` is not allowed; only http and https")]
    Scheme(String),
    /// The authority is missing, malformed, carries user info, or is an invalid IP literal.
    #[error("`{0}` is not a usable host")]
    InvalidHost(String),
    /// The authority is not among the call's granted hosts.
    #[error("`{0}` is not granted for this call")]
    HostNotGranted(String),
    /// The name could not be resolved.
    #[error("`{host}` could not be resolved: {reason}")]
    Dns {
        /// The name.
        host: String,
        /// The resolver's explanation.
        reason: String,
    },
    /// The name or literal leads to a non-public address no policy rule named.
    #[error(
        "`{host}` leads to {addr}, a {range} address; only a policy rule naming it allows that"
    )]
    NonPublicAddress {
        /// The host asked for.
        host: String,
        /// The offending address.
        addr: IpAddr,
        /// Which range it is in.
        range: &'static str,
    },
}

impl Refusal {
    fn to_http_error(&self) -> HttpError {
        match self {
            Self::NoHttpGrant | Self::Scheme(_) | Self::HostNotGranted(_) => {
                HttpError::HttpRequestDenied
            }
            Self::InvalidHost(_) => HttpError::HttpRequestUriInvalid,
            Self::Dns { reason, .. } => HttpError::DnsError {
                rcode: Some(reason.clone()),
                info_code: None,
            },
            Self::NonPublicAddress { .. } => HttpError::DestinationIpProhibited,
        }
    }
}

/// A host as the guard compares and connects to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// An IP literal, in whatever form the URL wrote it.
    Ip(IpAddr),
    /// A DNS name, lower-cased, without a trailing dot.
    Name(String),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Self::Ip(ip) => write!(f, "{ip}"),
            Self::Name(name) => f.write_str(name),
        }
    }
}

/// Parses the host part of an authority as a resolver would read it.
pub(crate) fn parse_host(raw: &str) -> Result<Host, Refusal> {
    let invalid = || Refusal::InvalidHost(raw.to_owned());
    if let Some(inner) = raw.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or_else(invalid)?;
        return Ipv6Addr::from_str(inner)
            .map(|ip| Host::Ip(IpAddr::V6(ip)))
            .map_err(|_| invalid());
    }
    let lower = raw.to_ascii_lowercase();
    let host = lower.strip_suffix('.').unwrap_or(&lower);
    if host.is_empty() || host.len() > 253 {
        return Err(invalid());
    }
    if let Some(ip) = parse_ipv4_literal(host) {
        return ip
            .map(|ip| Host::Ip(IpAddr::V4(ip)))
            .map_err(|()| invalid());
    }
    if bosun_core::is_host_name(host) {
        Ok(Host::Name(host.to_owned()))
    } else {
        Err(invalid())
    }
}

/// Reads `host` as an IPv4 literal the way `inet_aton` and URL parsers do: one to four parts
/// separated by dots, each decimal, octal (leading `0`) or hex (`0x`), the last part filling
/// the remaining bytes. Returns `None` when the host does not end in a number (so it is a
/// name), `Some(Err)` when it does but is not a valid address (refused: a resolver might read
/// it some other way).
pub(crate) fn parse_ipv4_literal(host: &str) -> Option<Result<Ipv4Addr, ()>> {
    let parts: Vec<&str> = host.split('.').collect();
    let last = parts.last()?;
    let numeric = |p: &str| match p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
        Some(hex) => hex.bytes().all(|b| b.is_ascii_hexdigit()),
        None => !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()),
    };
    if !numeric(last) {
        return None;
    }
    if parts.len() > 4 {
        return Some(Err(()));
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        match parse_ipv4_number(part) {
            Some(n) => numbers.push(n),
            None => return Some(Err(())),
        }
    }
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|&n| n > 255) {
        return Some(Err(()));
    }
    let last_bits = 8 * (5 - numbers.len()) as u32;
    if *last >= 1u64 << last_bits {
        return Some(Err(()));
    }
    let mut addr: u64 = *last;
    for (i, &n) in init.iter().enumerate() {
        addr |= n << (8 * (3 - i));
    }
    let addr = u32::try_from(addr).ok()?;
    Some(Ok(Ipv4Addr::from(addr)))
}

fn parse_ipv4_number(part: &str) -> Option<u64> {
    if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
        if hex.is_empty() {
            return Some(0);
        }
        return u64::from_str_radix(hex, 16).ok();
    }
    if part.len() > 1 && part.starts_with('0') {
        return u64::from_str_radix(&part[1..], 8).ok();
    }
    part.parse().ok()
}

/// The range `ip` belongs to when it is not a public unicast address, checking the IPv4
/// address embedded in IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 forms.
pub fn non_public_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let range = match (a, b, c) {
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) => "cloud metadata",
        _ if ip.is_broadcast() => "broadcast",
        (0, _, _) => "unspecified",
        (127, _, _) => "loopback",
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => "private",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared (CGNAT)",
        (192, 0, 0) => "IETF protocol assignment",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved",
        _ => return None,
    };
    Some(range)
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        return Some("cloud metadata");
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    let range = match s {
        // IPv4-compatible (deprecated) and NAT64 well-known prefix: judge the IPv4 inside.
        [0, 0, 0, 0, 0, 0, hi, lo] | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => {
            return non_public_v4(embedded(hi, lo));
        }
        // 6to4 carries the IPv4 in the second and third segments.
        [0x2002, hi, lo, ..] => return non_public_v4(embedded(hi, lo)),
        [0x64, 0xff9b, 1, ..] => "NAT64 local-use",
        [0x100, 0, 0, 0, ..] => "discard",
        [0x2001, 0, ..] => "Teredo",
        [0x2001, 0xdb8, ..] => "documentation",
        [x, ..] if x & 0xfe00 == 0xfc00 => "unique-local",
        [x, ..] if x & 0xffc0 == 0xfe80 => "link-local",
        [x, ..] if x & 0xffc0 == 0xfec0 => "site-local",
        [x, ..] if x & 0xff00 == 0xff00 => "multicast",
        _ => return None,
    };
    Some(range)
}

/// The state the send hook needs; one per instance, with the grant replaced for each call.
#[derive(Debug)]
pub(crate) struct HttpGuard {
    pub(crate) enabled: bool,
    pub(crate) net: Arc<NetGrant>,
    pub(crate) resolver: Arc<dyn Resolver>,
    pub(crate) limits: HttpLimits,
    pub(crate) refusals: Arc<Mutex<Vec<RefusedRequest>>>,
}

/// Refusals kept per call; more are counted only by the guest's errors.
const MAX_RECORDED_REFUSALS: usize = 100;

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;

impl WasiHttpHooks for HttpGuard {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), HttpError>> + Send>
    {
        let check = Check {
            enabled: self.enabled,
            net: Arc::clone(&self.net),
            resolver: Arc::clone(&self.resolver),
            limits: self.limits.clone(),
        };
        let refusals = Arc::clone(&self.refusals);
        Box::new(async move {
            let admitted = match check.admit(request.uri()).await {
                Ok(admitted) => admitted,
                Err((target, reason)) => {
                    tracing::info!(%target, %reason, "plugin HTTP request refused");
                    let error = reason.to_http_error();
                    let mut list = refusals.lock().unwrap_or_else(PoisonError::into_inner);
                    if list.len() < MAX_RECORDED_REFUSALS {
                        list.push(RefusedRequest { target, reason });
                    }
                    return Err(error);
                }
            };
            send(admitted, request, options, &check.limits).await
        })
    }
}

/// Everything needed to judge one request.
struct Check {
    enabled: bool,
    net: Arc<NetGrant>,
    resolver: Arc<dyn Resolver>,
    limits: HttpLimits,
}

/// A request the guard let through: where to connect and how to name the server.
#[derive(Debug)]
pub(crate) struct Admitted {
    host: Host,
    port: u16,
    tls: bool,
    addrs: Vec<IpAddr>,
}

impl Check {
    /// Judges the request URI. On refusal returns the `scheme://authority` for the record.
    async fn admit(&self, uri: &http::Uri) -> Result<Admitted, (String, Refusal)> {
        let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
        let authority = uri.authority().map(Authority::as_str).unwrap_or("");
        let target = format!("{scheme}://{authority}");
        let refuse = |reason| (target.clone(), reason);
        if !self.enabled {
            return Err(refuse(Refusal::NoHttpGrant));
        }
        let tls = match uri.scheme() {
            Some(s) if *s == Scheme::HTTPS => true,
            Some(s) if *s == Scheme::HTTP => false,
            _ => return Err(refuse(Refusal::Scheme(scheme.clone()))),
        };
        let (host, port) = uri
            .authority()
            .ok_or_else(|| Refusal::InvalidHost(String::new()))
            .and_then(|a| parse_authority(a, default_port(tls)))
            .map_err(refuse)?;
        if !granted(&self.net.hosts, &host, port, default_port(tls)) {
            return Err(refuse(Refusal::HostNotGranted(host_port(&host, port))));
        }
        let addrs = match &host {
            Host::Ip(ip) => vec![*ip],
            Host::Name(name) => {
                let resolved = tokio::time::timeout(
                    self.limits.dns_timeout,
                    self.resolver.resolve(name, port),
                )
                .await;
                let dns = |reason: String| Refusal::Dns {
                    host: name.clone(),
                    reason,
                };
                match resolved {
                    Err(_) => return Err(refuse(dns("timed out".to_owned()))),
                    Ok(Err(e)) => return Err(refuse(dns(e.to_string()))),
                    Ok(Ok(addrs)) if addrs.is_empty() => {
                        return Err(refuse(dns("no addresses".to_owned())));
                    }
                    Ok(Ok(addrs)) => addrs,
                }
            }
        };
        for addr in &addrs {
            if let Some(range) = non_public_range(*addr)
                && !allowed_private(&self.net.private_allowed, *addr)
            {
                return Err(refuse(Refusal::NonPublicAddress {
                    host: host.to_string(),
                    addr: *addr,
                    range,
                }));
            }
        }
        Ok(Admitted {
            host,
            port,
            tls,
            addrs,
        })
    }
}

fn default_port(tls: bool) -> u16 {
    if tls { 443 } else { 80 }
}

fn host_port(host: &Host, port: u16) -> String {
    format!("{host}:{port}")
}

/// Splits an authority into host and port, refusing user info and port 0.
fn parse_authority(authority: &Authority, default_port: u16) -> Result<(Host, u16), Refusal> {
    let invalid = || Refusal::InvalidHost(authority.as_str().to_owned());
    if authority.as_str().contains('@') {
        return Err(invalid());
    }
    let port = match (authority.port(), authority.port_u16()) {
        (None, _) => default_port,
        (Some(_), Some(port)) if port != 0 => port,
        (Some(_), _) => return Err(invalid()),
    };
    Ok((parse_host(authority.host())?, port))
}

/// Whether `host:port` is among the granted authorities. A grant without a port allows the
/// scheme's default port.
fn granted(grants: &[bosun_core::Authority], host: &Host, port: u16, default_port: u16) -> bool {
    grants.iter().any(|grant| {
        let grant_host = match grant.host.parse::<IpAddr>() {
            Ok(ip) => Host::Ip(ip),
            Err(_) => match parse_host(&grant.host) {
                Ok(host) => host,
                Err(_) => return false,
            },
        };
        same_host(&grant_host, host) && grant.port.unwrap_or(default_port) == port
    })
}

fn same_host(a: &Host, b: &Host) -> bool {
    match (a, b) {
        (Host::Ip(a), Host::Ip(b)) => a.to_canonical() == b.to_canonical(),
        (Host::Name(a), Host::Name(b)) => a == b,
        _ => false,
    }
}

fn allowed_private(allowed: &[IpAddr], addr: IpAddr) -> bool {
    allowed
        .iter()
        .any(|a| a.to_canonical() == addr.to_canonical())
}

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// TLS client settings: webpki roots, ring, TLS 1.2 and 1.3; built once per process.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, HttpError> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| HttpError::InternalError(Some(format!("TLS setup failed: {e}"))))
}

/// The shorter of the guest's timeout (if any) and the host's bound.
fn bounded(guest: Option<Duration>, host: Duration) -> Duration {
    guest.map_or(host, |g| g.min(host))
}

/// Connects to the admitted addresses in order and sends the request, as wasmtime's default
/// sender does, but to the checked address and with bounded time and size.
async fn send(
    admitted: Admitted,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    limits: &HttpLimits,
) -> Result<(http::Response<WasiBody>, IoFuture), HttpError> {
    let connect_timeout = bounded(
        options.and_then(|o| o.connect_timeout),
        limits.connect_timeout,
    );
    let first_byte_timeout = bounded(
        options.and_then(|o| o.first_byte_timeout),
        limits.first_byte_timeout,
    );
    let between_bytes_timeout = bounded(
        options.and_then(|o| o.between_bytes_timeout),
        limits.between_bytes_timeout,
    )
    .max(Duration::from_millis(1));

    let mut last_error = HttpError::ConnectionRefused;
    let mut tcp = None;
    for ip in &admitted.addrs {
        let addr = SocketAddr::new(*ip, admitted.port);
        match tokio::time::timeout(connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                tcp = Some(stream);
                break;
            }
            Ok(Err(e)) => last_error = HttpError::Connect(e),
            Err(_) => last_error = HttpError::ConnectionTimeout,
        }
    }
    let tcp = tcp.ok_or(last_error)?;

    let stream: Box<dyn Stream> = if admitted.tls {
        let server_name = match &admitted.host {
            Host::Ip(ip) => rustls::pki_types::ServerName::IpAddress((*ip).into()),
            Host::Name(name) => rustls::pki_types::ServerName::try_from(name.clone())
                .map_err(HttpError::InvalidDnsNameError)?,
        };
        let connector = tokio_rustls::TlsConnector::from(tls_config()?);
        let tls = tokio::time::timeout(connect_timeout, connector.connect(server_name, tcp))
            .await
            .map_err(|_| HttpError::ConnectionTimeout)?
            .map_err(HttpError::Tls)?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };

    let (mut sender, conn) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| HttpError::ConnectionTimeout)??;

    // The request line carries only the path; the authority stays in the `Host` header
    // wasmtime set from the URI.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| HttpError::HttpRequestUriInvalid)?;

    let max_bytes = limits.max_response_bytes;
    let send = async move {
        let response = tokio::time::timeout(first_byte_timeout, sender.send_request(request))
            .await
            .map_err(|_| HttpError::ConnectionReadTimeout)??;
        let declared = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > max_bytes) {
            return Err(HttpError::HttpResponseBodySize(declared));
        }
        let mut between = tokio::time::interval(between_bytes_timeout);
        between.reset();
        Ok(response.map(|incoming| {
            BoundedBody {
                incoming,
                remaining: max_bytes,
                max_bytes,
                between,
            }
            .boxed_unsync()
        }))
    };
    let mut send = pin!(send);
    let mut conn = Some(conn);
    // Drive the connection while waiting for the response head.
    let response = poll_fn(|cx| match send.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(result),
        Poll::Pending => {
            let Some(fut) = conn.as_mut() else {
                return Poll::Pending;
            };
            let result = ready!(Pin::new(fut).poll(cx));
            conn = None;
            match result {
                Ok(()) => send.as_mut().poll(cx),
                Err(e) => Poll::Ready(Err(HttpError::from(e))),
            }
        }
    })
    .await?;
    let io: IoFuture = Box::new(async move {
        match conn {
            Some(conn) => conn.await.map_err(HttpError::from),
            None => Ok(()),
        }
    });
    Ok((response, io))
}

/// A response body that fails past `max_bytes` or after a pause longer than `between`.
struct BoundedBody {
    incoming: hyper::body::Incoming,
    remaining: u64,
    max_bytes: u64,
    between: tokio::time::Interval,
}

impl http_body::Body for BoundedBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, HttpError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(if e.is_timeout() {
                HttpError::HttpResponseTimeout
            } else {
                HttpError::from(e)
            }))),
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let len = data.len() as u64;
                    if len > this.remaining {
                        this.remaining = 0;
                        return Poll::Ready(Some(Err(HttpError::HttpResponseBodySize(Some(
                            this.max_bytes,
                        )))));
                    }
                    this.remaining -= len;
                }
                this.between.reset();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                ready!(this.between.poll_tick(cx));
                Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn v4(s: &str) -> IpAddr {
        IpAddr::V4(s.parse().unwrap())
    }

    fn host(s: &str) -> Host {
        parse_host(s).unwrap()
    }

    #[test]
    fn ipv4_literals_are_read_like_a_resolver() {
        for literal in [
            "127.0.0.1",
            "2130706433",
            "0x7f000001",
            "0X7F000001",
            "017700000001",
            "0177.0.0.1",
            "0x7f.0.0.1",
            "127.1",
            "127.0.1",
            "0x7f.1",
            "127.0.0.1.",
        ] {
            assert_eq!(host(literal), Host::Ip(v4("127.0.0.1")), "{literal}");
        }
        assert_eq!(host("0"), Host::Ip(v4("0.0.0.0")));
        assert_eq!(host("0x"), Host::Ip(v4("0.0.0.0")));
        assert_eq!(host("3232235777"), Host::Ip(v4("192.168.1.1")));
        assert_eq!(host("169.254.43518"), Host::Ip(v4("169.254.169.254")));
    }

    #[test]
    fn invalid_numeric_hosts_are_refused() {
        for literal in [
            "256.0.0.1",
            "1.2.3.4.5",
            "4294967296",
            "0x100000000",
            "08.0.0.1",
            "1.2.3.256",
            "1.2.65536",
            "1..2",
        ] {
            assert!(parse_host(literal).is_err(), "{literal}");
        }
    }

    #[test]
    fn names_are_lowercased_and_validated() {
        assert_eq!(host("Example.COM."), Host::Name("example.com".to_owned()));
        assert_eq!(
            host("1.2.3.4.nip.io"),
            Host::Name("1.2.3.4.nip.io".to_owned())
        );
        assert_eq!(host("0xfoo"), Host::Name("0xfoo".to_owned()));
        for bad in [
            "",
            ".",
            "a..b",
            "ex ample.com",
            "exa%6dple.com",
            "[::1",
            "[fe80::1%25eth0]",
        ] {
            assert!(parse_host(bad).is_err(), "{bad:?}");
        }
        assert_eq!(host("[::1]"), Host::Ip("::1".parse().unwrap()));
    }

    #[test]
    fn non_public_addresses_are_named() {
        let cases = [
            ("127.0.0.1", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.16.0.1", Some("private")),
            ("172.31.255.255", Some("private")),
            ("192.168.0.1", Some("private")),
            ("169.254.169.254", Some("cloud metadata")),
            ("169.254.1.1", Some("link-local")),
            ("100.64.0.1", Some("shared (CGNAT)")),
            ("0.0.0.0", Some("unspecified")),
            ("255.255.255.255", Some("broadcast")),
            ("224.0.0.1", Some("multicast")),
            ("240.0.0.1", Some("reserved")),
            ("::", Some("unspecified")),
            ("::1", Some("loopback")),
            ("fe80::1", Some("link-local")),
            ("fc00::1", Some("unique-local")),
            ("fd12:3456::1", Some("unique-local")),
            ("fd00:ec2::254", Some("cloud metadata")),
            ("ff02::1", Some("multicast")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:169.254.169.254", Some("cloud metadata")),
            ("::ffff:10.0.0.1", Some("private")),
            ("::127.0.0.1", Some("loopback")),
            ("64:ff9b::a00:1", Some("private")),
            ("2002:7f00:1::", Some("loopback")),
            ("93.184.216.34", None),
            ("172.32.0.1", None),
            ("100.128.0.1", None),
            ("2606:2800:220:1:248:1893:25c8:1946", None),
            ("::ffff:93.184.216.34", None),
        ];
        for (addr, expected) in cases {
            let ip: IpAddr = addr.parse().unwrap();
            assert_eq!(non_public_range(ip), expected, "{addr}");
        }
    }

    #[test]
    fn grants_match_exact_hosts_with_default_ports() {
        let grants: Vec<bosun_core::Authority> = ["Example.com", "api.test:8443", "127.0.0.1:4000"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let name = |s: &str| Host::Name(s.to_owned());
        assert!(granted(&grants, &name("example.com"), 443, 443));
        assert!(granted(&grants, &name("example.com"), 80, 80));
        assert!(!granted(&grants, &name("example.com"), 8080, 80));
        assert!(!granted(&grants, &name("www.example.com"), 443, 443));
        assert!(!granted(&grants, &name("example.com.evil"), 443, 443));
        assert!(granted(&grants, &name("api.test"), 8443, 443));
        assert!(!granted(&grants, &name("api.test"), 443, 443));
        assert!(granted(&grants, &host("2130706433"), 4000, 80));
        assert!(granted(&grants, &host("[::ffff:127.0.0.1]"), 4000, 80));
        assert!(!granted(&grants, &host("127.0.0.2"), 4000, 80));
    }

    fn check(hosts: &[&str], private: &[IpAddr], resolver: StaticResolver) -> Check {
        Check {
            enabled: true,
            net: Arc::new(NetGrant {
                hosts: hosts.iter().map(|h| h.parse().unwrap()).collect(),
                private_allowed: private.to_vec(),
            }),
            resolver: Arc::new(resolver),
            limits: HttpLimits::default(),
        }
    }

    async fn refusal(check: &Check, url: &str) -> Refusal {
        let uri: http::Uri = url.parse().unwrap();
        match check.admit(&uri).await {
            Ok(admitted) => panic!("{url} was admitted: {admitted:?}"),
            Err((_, reason)) => reason,
        }
    }

    #[tokio::test]
    async fn admission_checks_every_resolved_address() {
        let resolver = StaticResolver::new()
            .with("public.test", [v4("93.184.216.34")])
            .with("sneaky.test", [v4("93.184.216.34"), v4("127.0.0.1")])
            .with("local.test", [v4("127.0.0.1")]);
        let c = check(
            &["public.test", "sneaky.test", "local.test"],
            &[],
            resolver.clone(),
        );
        let ok = c
            .admit(&"https://PUBLIC.test/x".parse().unwrap())
            .await
            .unwrap();
        assert_eq!(ok.addrs, vec![v4("93.184.216.34")]);
        assert_eq!(ok.port, 443);
        assert!(matches!(
            refusal(&c, "http://sneaky.test/").await,
            Refusal::NonPublicAddress {
                range: "loopback",
                ..
            }
        ));
        assert!(matches!(
            refusal(&c, "http://local.test/").await,
            Refusal::NonPublicAddress { .. }
        ));
        assert_eq!(
            refusal(&c, "http://other.test/").await,
            Refusal::HostNotGranted("other.test:80".to_owned())
        );
        assert_eq!(
            refusal(&c, "ftp://public.test/").await,
            Refusal::Scheme("ftp".to_owned())
        );
        assert!(matches!(
            refusal(&c, "http://user@public.test/").await,
            Refusal::InvalidHost(_)
        ));

        // Naming the address in a policy rule lets it through.
        let c = check(&["local.test"], &[v4("127.0.0.1")], resolver);
        assert!(
            c.admit(&"http://local.test/".parse().unwrap())
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn literal_addresses_are_checked_even_when_granted() {
        let c = check(
            &[
                "127.0.0.1",
                "[::1]",
                "169.254.169.254",
                "2130706433",
                "0x7f000001",
            ],
            &[],
            StaticResolver::new(),
        );
        for url in [
            "http://127.0.0.1/",
            "http://[::1]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://127.1/",
        ] {
            assert!(
                matches!(refusal(&c, url).await, Refusal::NonPublicAddress { .. }),
                "{url}"
            );
        }
    }

    /// Counts the names it is asked; every name leads to a public address.
    #[derive(Debug, Default)]
    struct Counting(std::sync::atomic::AtomicUsize);

    impl Resolver for Counting {
        fn resolve<'a>(&'a self, _host: &'a str, _port: u16) -> ResolveFuture<'a> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async { Ok(vec![v4("93.184.216.34")]) })
        }
    }

    /// A request to a host or port the call was not granted is refused before any name is
    /// resolved, in words that only repeat what the request said: whether the name exists,
    /// where it leads or whether anything listens there is never looked up, so never told.
    #[tokio::test]
    async fn a_request_outside_the_grant_is_refused_before_anything_is_resolved() {
        let resolver = Arc::new(Counting::default());
        let mut c = check(&["public.test"], &[], StaticResolver::new());
        c.resolver = resolver.clone();
        for (url, refusal_said) in [
            ("http://other.test/", "other.test:80"),
            (
                "http://internal.corp.example:22/",
                "internal.corp.example:22",
            ),
            ("https://public.test:8443/", "public.test:8443"),
            ("http://public.test:443/", "public.test:443"),
        ] {
            assert_eq!(
                refusal(&c, url).await,
                Refusal::HostNotGranted(refusal_said.to_owned()),
                "{url}"
            );
        }
        c.enabled = false;
        assert_eq!(
            refusal(&c, "https://public.test/").await,
            Refusal::NoHttpGrant
        );
        assert_eq!(
            resolver.0.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "a refused request was resolved"
        );
    }

    #[tokio::test]
    async fn no_grant_refuses_everything() {
        let mut c = check(&["public.test"], &[], StaticResolver::new());
        c.enabled = false;
        assert_eq!(
            refusal(&c, "https://public.test/").await,
            Refusal::NoHttpGrant
        );
    }
}
