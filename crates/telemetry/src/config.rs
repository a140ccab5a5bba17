//! `[telemetry]` in the user's `config.toml`: which signals go where, what content goes with
//! them, and the standard `OTEL_*` variables that fill in what the file leaves out. Reading it
//! never starts anything; [`TelemetryConfig::resolve`] turns it into [`Settings`] the exporter
//! uses. A project's config may not carry this section at all (the host refuses it).

use std::collections::BTreeMap;
use std::time::Duration;

use bosun_core::Classification;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// `[telemetry]`: off unless a signal names an exporter.
///
/// ```toml
/// [telemetry]
/// traces = { otlp-http = { endpoint = "https://otel.example/v1/traces", protocol = "binary",
///            headers = { authorization = { env = "OTEL_TOKEN" } } } }
/// metrics = "none"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TelemetryConfig {
    /// Where spans go: `"none"` (default) or `{ otlp-http = {...} }`.
    #[serde(default)]
    pub traces: ExporterConfig,
    /// Where metrics go.
    #[serde(default)]
    pub metrics: ExporterConfig,
    /// Where log records (one per trace event) go.
    #[serde(default)]
    pub logs: ExporterConfig,
    /// Which content goes with them; none by default.
    #[serde(default)]
    pub content: ContentConfig,
    /// The collector's level: the most sensitive data it may be sent (`PUBLIC` by default,
    /// like every sink nobody labelled). Content of a session holding more is sent as a
    /// marker naming the session's level, never the data.
    #[serde(default)]
    pub classification: Option<Classification>,
    /// `service.name`; `OTEL_SERVICE_NAME`, else `bosun`.
    #[serde(default)]
    pub service_name: Option<String>,
    /// `deployment.environment.name`, when set.
    #[serde(default)]
    pub environment: Option<String>,
    /// `service.instance.id`; `$BOSUN_INSTANCE_ID`, else a fresh id per process, so each
    /// instance of `bosun serve` behind a load balancer is told apart.
    #[serde(default)]
    pub instance_id: Option<String>,
    /// The signals a managed policy forces on (never read from a file): the environment's
    /// off switches (`OTEL_SDK_DISABLED`, `OTEL_<SIGNAL>_EXPORTER=none`) do not apply to them.
    #[serde(skip)]
    pub forced: Forced,
}

/// Which signals a managed policy forces on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Forced {
    /// Spans.
    pub traces: bool,
    /// Metrics.
    pub metrics: bool,
    /// Log records.
    pub logs: bool,
}

impl Forced {
    /// Whether `signal` is forced on.
    pub fn get(self, signal: Signal) -> bool {
        match signal {
            Signal::Traces => self.traces,
            Signal::Metrics => self.metrics,
            Signal::Logs => self.logs,
        }
    }

    /// Forces `signal` on.
    pub fn set(&mut self, signal: Signal) {
        match signal {
            Signal::Traces => self.traces = true,
            Signal::Metrics => self.metrics = true,
            Signal::Logs => self.logs = true,
        }
    }
}

/// One signal's exporter: `"none"` or `{ otlp-http = { endpoint, protocol, headers } }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ExporterConfig {
    /// Not exported.
    #[default]
    None,
    /// OTLP over HTTP.
    OtlpHttp(OtlpHttpConfig),
}

/// `{ otlp-http = {...} }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct OtlpHttpConfig {
    /// The signal's full URL (`.../v1/traces`); else `OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`,
    /// else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/<signal>`, else `http://localhost:4318/v1/<signal>`.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// `binary` (protobuf) or `json`; else `OTEL_EXPORTER_OTLP_PROTOCOL`, else `binary`.
    #[serde(default)]
    pub protocol: Option<Protocol>,
    /// Request headers; a value may name an environment variable (`{ env = "NAME" }`) so a
    /// secret stays out of the file. Added to `OTEL_EXPORTER_OTLP_HEADERS`.
    #[serde(default)]
    pub headers: BTreeMap<String, HeaderValue>,
    /// How long one export may take; else `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// How OTLP/HTTP bodies are encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// `application/x-protobuf` (`http/protobuf`).
    #[default]
    Binary,
    /// `application/json` (`http/json`).
    Json,
}

/// A header's value: written out, or read from an environment variable when exporting starts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum HeaderValue {
    /// The value itself.
    Literal(String),
    /// `{ env = "NAME" }`: the variable's value.
    Env {
        /// The variable.
        env: String,
    },
}

/// `[telemetry.content]`: content that may go with the spans, each kind on its own switch, all
/// off by default and always redacted as the run trace is. Prompts are not in the run trace,
/// so they are never exported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ContentConfig {
    /// A call's input (`gen_ai.tool.call.arguments`).
    #[serde(default)]
    pub tool_inputs: bool,
    /// A call's output and error message (`gen_ai.tool.call.result`).
    #[serde(default)]
    pub tool_outputs: bool,
    /// The model's text and reasoning summaries (`gen_ai.output.messages`).
    #[serde(default)]
    pub model_output: bool,
}

impl<'de> Deserialize<'de> for ExporterConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ExporterVisitor;
        const EXPECTED: &str = "\"none\" or { otlp-http = { endpoint = \"...\", protocol = \"binary\" | \"json\", headers = {...} } }";
        impl<'de> Visitor<'de> for ExporterVisitor {
            type Value = ExporterConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<ExporterConfig, E> {
                match value {
                    "none" => Ok(ExporterConfig::None),
                    other => Err(E::custom(format!(
                        "unknown exporter `{other}`: use {EXPECTED}"
                    ))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExporterConfig, A::Error> {
                let Some(key) = map.next_key::<String>()? else {
                    return Err(de::Error::custom(format!(
                        "an empty exporter: use {EXPECTED}"
                    )));
                };
                let exporter = match key.as_str() {
                    "otlp-http" => ExporterConfig::OtlpHttp(map.next_value()?),
                    "otlp-grpc" => {
                        return Err(de::Error::custom(
                            "Bosun exports OTLP over HTTP only: use { otlp-http = {...} } (collectors \
                             listen for it on port 4318)",
                        ));
                    }
                    other => {
                        return Err(de::Error::custom(format!(
                            "unknown exporter `{other}`: use {EXPECTED}"
                        )));
                    }
                };
                if let Some(extra) = map.next_key::<String>()? {
                    return Err(de::Error::custom(format!(
                        "one exporter per signal: remove `{extra}`"
                    )));
                }
                Ok(exporter)
            }
        }
        deserializer.deserialize_any(ExporterVisitor)
    }
}

/// The signals OTLP carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    /// Spans.
    Traces,
    /// Metrics.
    Metrics,
    /// Log records.
    Logs,
}

impl Signal {
    /// `traces`, `metrics` or `logs`: the path's last part and the variables' infix.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Traces => "traces",
            Self::Metrics => "metrics",
            Self::Logs => "logs",
        }
    }
}

/// A `[telemetry]` the exporter cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// An endpoint that is not an `http(s)` URL.
    #[error("telemetry.{signal}: endpoint `{endpoint}` is not an http:// or https:// URL")]
    Endpoint {
        /// The signal.
        signal: &'static str,
        /// What was given.
        endpoint: String,
    },
    /// A header's name or value cannot be sent.
    #[error("telemetry.{signal}: header `{name}`: {message}")]
    Header {
        /// The signal.
        signal: &'static str,
        /// The header.
        name: String,
        /// What to do.
        message: String,
    },
    /// An `OTEL_*` variable Bosun cannot follow.
    #[error("{variable}: {message}")]
    Variable {
        /// The variable.
        variable: &'static str,
        /// What to do.
        message: String,
    },
}

/// Where one signal goes, resolved: the URL, the encoding, and the headers with their secrets
/// read (never written into a span, a log or an error).
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The full URL, e.g. `http://127.0.0.1:4318/v1/traces`.
    pub url: String,
    /// The body's encoding.
    pub protocol: Protocol,
    /// Headers to send.
    pub headers: Vec<(String, String)>,
    /// How long one export may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values are often credentials.
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("protocol", &self.protocol)
            .field("headers", &names)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// `[telemetry]` with the environment applied: what the exporter does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Where spans go, if anywhere.
    pub traces: Option<Endpoint>,
    /// Where metrics go.
    pub metrics: Option<Endpoint>,
    /// Where log records go.
    pub logs: Option<Endpoint>,
    /// Which content goes with them.
    pub content: ContentConfig,
    /// The collector's level: content of a session holding more is withheld.
    pub classification: Classification,
    /// The resource attributes of every export (`service.name`, `service.instance.id`, ...).
    pub resource: Vec<(String, String)>,
}

impl Settings {
    /// Whether anything is exported.
    pub fn enabled(&self) -> bool {
        self.traces.is_some() || self.metrics.is_some() || self.logs.is_some()
    }

    /// The endpoint of `signal`.
    pub fn endpoint(&self, signal: Signal) -> Option<&Endpoint> {
        match signal {
            Signal::Traces => self.traces.as_ref(),
            Signal::Metrics => self.metrics.as_ref(),
            Signal::Logs => self.logs.as_ref(),
        }
    }
}

const DEFAULT_BASE: &str = "http://localhost:4318";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl TelemetryConfig {
    /// Whether any signal names an exporter.
    pub fn enabled(&self) -> bool {
        [&self.traces, &self.metrics, &self.logs]
            .iter()
            .any(|e| matches!(e, ExporterConfig::OtlpHttp(_)))
    }

    /// The exporter of `signal`.
    pub fn exporter(&self, signal: Signal) -> &ExporterConfig {
        match signal {
            Signal::Traces => &self.traces,
            Signal::Metrics => &self.metrics,
            Signal::Logs => &self.logs,
        }
    }

    /// The exporter of `signal`, to change.
    pub fn exporter_mut(&mut self, signal: Signal) -> &mut ExporterConfig {
        match signal {
            Signal::Traces => &mut self.traces,
            Signal::Metrics => &mut self.metrics,
            Signal::Logs => &mut self.logs,
        }
    }

    /// Checks what can be checked without the environment (at config load): endpoints are
    /// `http(s)` URLs, header names and literal values can be sent.
    ///
    /// # Errors
    /// The first problem, naming the key.
    pub fn check(&self) -> Result<(), ConfigError> {
        for signal in [Signal::Traces, Signal::Metrics, Signal::Logs] {
            let ExporterConfig::OtlpHttp(otlp) = self.exporter(signal) else {
                continue;
            };
            if let Some(endpoint) = &otlp.endpoint {
                check_url(signal.as_str(), endpoint)?;
            }
            for (name, value) in &otlp.headers {
                check_header(signal.as_str(), name, None)?;
                match value {
                    HeaderValue::Literal(v) => check_header(signal.as_str(), name, Some(v))?,
                    HeaderValue::Env { env } if env.is_empty() => {
                        return Err(ConfigError::Header {
                            signal: signal.as_str(),
                            name: name.clone(),
                            message: "`env` names no variable".to_owned(),
                        });
                    }
                    HeaderValue::Env { .. } => {}
                }
            }
        }
        Ok(())
    }

    /// Applies the environment (`var` reads a variable): the standard `OTEL_EXPORTER_OTLP_*`
    /// variables fill in what the file leaves out, `OTEL_SDK_DISABLED=true` and
    /// `OTEL_<SIGNAL>_EXPORTER=none` turn a signal off. The environment never turns a signal on:
    /// only this section does.
    ///
    /// # Errors
    /// A header naming an unset variable, an endpoint that is not a URL, an `OTEL_*` value
    /// Bosun cannot follow (gRPC).
    pub fn resolve(&self, var: &dyn Fn(&str) -> Option<String>) -> Result<Settings, ConfigError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let disabled =
            var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let mut endpoints = [None, None, None];
        for (slot, signal) in
            endpoints
                .iter_mut()
                .zip([Signal::Traces, Signal::Metrics, Signal::Logs])
        {
            let ExporterConfig::OtlpHttp(otlp) = self.exporter(signal) else {
                continue;
            };
            let upper = signal.as_str().to_ascii_uppercase();
            // A signal the managed policy forces on is not the environment's to turn off.
            if !self.forced.get(signal)
                && (disabled
                    || var(&format!("OTEL_{upper}_EXPORTER"))
                        .is_some_and(|v| v.trim().eq_ignore_ascii_case("none")))
            {
                continue;
            }
            *slot = Some(resolve_endpoint(signal, otlp, &var)?);
        }
        let [traces, metrics, logs] = endpoints;
        let mut resource = vec![(
            "service.name".to_owned(),
            self.service_name
                .clone()
                .or_else(|| var("OTEL_SERVICE_NAME"))
                .unwrap_or_else(|| "bosun".to_owned()),
        )];
        resource.push((
            "service.instance.id".to_owned(),
            self.instance_id
                .clone()
                .or_else(|| var("BOSUN_INSTANCE_ID"))
                .unwrap_or_else(|| format!("{:032x}", fastrand::u128(..))),
        ));
        resource.push((
            "service.version".to_owned(),
            env!("CARGO_PKG_VERSION").to_owned(),
        ));
        if let Some(environment) = &self.environment {
            resource.push((
                "deployment.environment.name".to_owned(),
                environment.clone(),
            ));
        }
        // OTEL_RESOURCE_ATTRIBUTES adds to, never replaces, what Bosun sets.
        if let Some(extra) = var("OTEL_RESOURCE_ATTRIBUTES") {
            for (key, value) in parse_pairs(&extra) {
                if !resource.iter().any(|(k, _)| *k == key) {
                    resource.push((key, value));
                }
            }
        }
        Ok(Settings {
            traces,
            metrics,
            logs,
            content: self.content,
            classification: self.classification.unwrap_or_default(),
            resource,
        })
    }
}

fn resolve_endpoint(
    signal: Signal,
    otlp: &OtlpHttpConfig,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Endpoint, ConfigError> {
    let upper = signal.as_str().to_ascii_uppercase();
    let url = match &otlp.endpoint {
        Some(endpoint) => endpoint.clone(),
        None => match var(&format!("OTEL_EXPORTER_OTLP_{upper}_ENDPOINT")) {
            Some(full) => full.trim().to_owned(),
            None => format!(
                "{}/v1/{}",
                var("OTEL_EXPORTER_OTLP_ENDPOINT")
                    .as_deref()
                    .unwrap_or(DEFAULT_BASE)
                    .trim()
                    .trim_end_matches('/'),
                signal.as_str()
            ),
        },
    };
    check_url(signal.as_str(), &url)?;
    let protocol = match otlp.protocol {
        Some(protocol) => protocol,
        None => {
            let specific = format!("OTEL_EXPORTER_OTLP_{upper}_PROTOCOL");
            match var(&specific).or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL")) {
                None => Protocol::Binary,
                Some(v) => match v.trim() {
                    "http/protobuf" => Protocol::Binary,
                    "http/json" => Protocol::Json,
                    other => {
                        return Err(ConfigError::Variable {
                            variable: "OTEL_EXPORTER_OTLP_PROTOCOL",
                            message: format!(
                                "`{other}` is not supported: Bosun exports OTLP over HTTP, use \
                                 http/protobuf or http/json"
                            ),
                        });
                    }
                },
            }
        }
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    for variable in [
        "OTEL_EXPORTER_OTLP_HEADERS".to_owned(),
        format!("OTEL_EXPORTER_OTLP_{upper}_HEADERS"),
    ] {
        if let Some(text) = var(&variable) {
            for (name, value) in parse_pairs(&text) {
                set_header(&mut headers, name, value);
            }
        }
    }
    for (name, value) in &otlp.headers {
        let value = match value {
            HeaderValue::Literal(v) => v.clone(),
            HeaderValue::Env { env } => var(env).ok_or_else(|| ConfigError::Header {
                signal: signal.as_str(),
                name: name.clone(),
                message: format!("the variable {env} is not set: set it, or remove the header"),
            })?,
        };
        check_header(signal.as_str(), name, Some(&value))?;
        set_header(&mut headers, name.clone(), value);
    }
    let timeout = match otlp.timeout_ms {
        Some(ms) => Duration::from_millis(ms.max(1)),
        None => var(&format!("OTEL_EXPORTER_OTLP_{upper}_TIMEOUT"))
            .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|ms| Duration::from_millis(ms.max(1)))
            .unwrap_or(DEFAULT_TIMEOUT),
    };
    Ok(Endpoint {
        url,
        protocol,
        headers,
        timeout,
    })
}

fn set_header(headers: &mut Vec<(String, String)>, name: String, value: String) {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
    headers.push((name, value));
}

/// `k1=v1,k2=v2` with percent-encoded values (the W3C baggage form `OTEL_*` variables use).
fn parse_pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let key = key.trim();
            if key.is_empty() {
                return None;
            }
            let value = url::form_urlencoded::parse(
                format!("v={}", value.trim().replace('+', "%2B")).as_bytes(),
            )
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
            Some((key.to_owned(), value))
        })
        .collect()
}

fn check_url(signal: &'static str, endpoint: &str) -> Result<(), ConfigError> {
    match url::Url::parse(endpoint) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(()),
        _ => Err(ConfigError::Endpoint {
            signal,
            endpoint: endpoint.to_owned(),
        }),
    }
}

fn check_header(signal: &'static str, name: &str, value: Option<&str>) -> Result<(), ConfigError> {
    let invalid = |message: &str| ConfigError::Header {
        signal,
        name: name.to_owned(),
        message: message.to_owned(),
    };
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        return Err(invalid("not a valid HTTP header name"));
    }
    if let Some(value) = value
        && value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
    {
        return Err(invalid("the value holds a line break or NUL"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(text: &str) -> Result<TelemetryConfig, String> {
        #[derive(Deserialize)]
        struct File {
            telemetry: TelemetryConfig,
        }
        toml_like(text).map(|f: File| f.telemetry)
    }

    // The crate does not depend on `toml`; JSON has the same shapes for these tests.
    fn toml_like<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn off_by_default_and_env_never_turns_it_on() {
        let config = TelemetryConfig::default();
        assert!(!config.enabled());
        let settings = config
            .resolve(&env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
                ("OTEL_TRACES_EXPORTER", "otlp"),
            ]))
            .map_err(|e| e.to_string());
        assert_eq!(settings.map(|s| s.enabled()), Ok(false));
    }

    #[test]
    fn the_environment_cannot_turn_off_or_redirect_a_forced_signal() {
        let otlp = |endpoint: &str| {
            ExporterConfig::OtlpHttp(OtlpHttpConfig {
                endpoint: Some(endpoint.to_owned()),
                ..OtlpHttpConfig::default()
            })
        };
        let mut config = TelemetryConfig {
            traces: otlp("https://managed.example/v1/traces"),
            metrics: otlp("https://managed.example/v1/metrics"),
            ..TelemetryConfig::default()
        };
        config.forced.set(Signal::Traces);
        let hostile = env(&[
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://attacker.example:4318",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://attacker.example/v1/traces",
            ),
        ]);
        let settings = config.resolve(&hostile).unwrap();
        // The forced signal still goes where the managed file says; the one not forced obeys
        // the off switch.
        assert_eq!(
            settings.traces.map(|e| e.url),
            Some("https://managed.example/v1/traces".to_owned())
        );
        assert_eq!(settings.metrics, None);
        // Without the force, the same environment turns traces off.
        config.forced = Forced::default();
        assert_eq!(config.resolve(&hostile).unwrap().traces, None);
    }

    #[test]
    fn exporters_parse_and_unknown_ones_are_refused_with_the_fix() {
        let config = parse(
            r#"{"telemetry": {"traces": {"otlp-http": {"endpoint": "http://127.0.0.1:4318/v1/traces", "protocol": "json", "headers": {"x-key": {"env": "K"}, "x-team": "a"}}}, "metrics": "none"}}"#,
        );
        let Ok(config) = config else {
            panic!("{config:?}");
        };
        assert!(config.enabled());
        assert_eq!(config.metrics, ExporterConfig::None);
        let grpc = parse(r#"{"telemetry": {"traces": {"otlp-grpc": {}}}}"#);
        assert!(grpc.is_err_and(|e| e.contains("use { otlp-http")));
        let unknown = parse(r#"{"telemetry": {"logs": "console"}}"#);
        assert!(unknown.is_err_and(|e| e.contains("unknown exporter `console`")));
    }

    #[test]
    fn environment_fills_in_what_the_file_leaves_out() {
        let config = TelemetryConfig {
            traces: ExporterConfig::OtlpHttp(OtlpHttpConfig {
                headers: [(
                    "authorization".to_owned(),
                    HeaderValue::Env {
                        env: "MY_OTEL_TOKEN".to_owned(),
                    },
                )]
                .into(),
                ..OtlpHttpConfig::default()
            }),
            metrics: ExporterConfig::OtlpHttp(OtlpHttpConfig {
                endpoint: Some("https://m.example/v1/metrics".to_owned()),
                ..OtlpHttpConfig::default()
            }),
            logs: ExporterConfig::OtlpHttp(OtlpHttpConfig::default()),
            ..TelemetryConfig::default()
        };
        let settings = config.resolve(&env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-tenant=a%20b,authorization=old",
            ),
            ("MY_OTEL_TOKEN", "Bearer s3cret"),
            ("OTEL_SERVICE_NAME", "ci-agents"),
            ("OTEL_LOGS_EXPORTER", "none"),
        ]));
        let Ok(settings) = settings else {
            panic!("{settings:?}");
        };
        let Some(traces) = &settings.traces else {
            panic!("traces are on");
        };
        assert_eq!(traces.url, "http://collector:4318/v1/traces");
        assert_eq!(traces.protocol, Protocol::Json);
        assert_eq!(
            traces.headers,
            vec![
                ("x-tenant".to_owned(), "a b".to_owned()),
                ("authorization".to_owned(), "Bearer s3cret".to_owned())
            ]
        );
        assert!(!format!("{traces:?}").contains("s3cret"));
        assert_eq!(
            settings.metrics.as_ref().map(|m| m.url.as_str()),
            Some("https://m.example/v1/metrics")
        );
        assert_eq!(settings.logs, None);
        assert_eq!(
            settings.resource[0],
            ("service.name".to_owned(), "ci-agents".to_owned())
        );
    }

    #[test]
    fn a_header_naming_an_unset_variable_says_so() {
        let config = TelemetryConfig {
            traces: ExporterConfig::OtlpHttp(OtlpHttpConfig {
                headers: [(
                    "authorization".to_owned(),
                    HeaderValue::Env {
                        env: "NOT_SET".to_owned(),
                    },
                )]
                .into(),
                ..OtlpHttpConfig::default()
            }),
            ..TelemetryConfig::default()
        };
        let error = config.resolve(&env(&[])).map_err(|e| e.to_string());
        assert_eq!(
            error,
            Err("telemetry.traces: header `authorization`: the variable NOT_SET is not set: set it, or remove the header".to_owned())
        );
        let grpc = TelemetryConfig {
            traces: ExporterConfig::OtlpHttp(OtlpHttpConfig::default()),
            ..TelemetryConfig::default()
        }
        .resolve(&env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]));
        assert!(grpc.is_err());
        let bad = TelemetryConfig {
            traces: ExporterConfig::OtlpHttp(OtlpHttpConfig {
                endpoint: Some("file:///tmp/x".to_owned()),
                ..OtlpHttpConfig::default()
            }),
            ..TelemetryConfig::default()
        };
        assert!(bad.check().is_err());
    }
}
