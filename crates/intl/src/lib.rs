//! ECMAScript `Intl` for Bosun's JavaScript engine, computed by the host: locale data from
//! ICU4X (CLDR, read from `data/icu4x.postcard` at a process's first `Intl` call and checked
//! against the digest recorded at build time: [`data`]), time zones from the IANA database
//! bundled with `jiff`.
//!
//! The engine's JavaScript layer (`crates/js/engine/js/prelude/intl.js`) keeps the objects and
//! coerces options as ECMA-402 says; everything that needs locale or time-zone data comes here
//! through one host call, [`call`], as JSON: `*.resolve` validates options and answers the
//! resolved options (what `resolvedOptions()` returns), `*.format` and friends compute with
//! them. Wrong input is a [`IntlError`] whose kind is the error a browser throws
//! (`RangeError: Invalid time zone specified: Mars/Base`).
//!
//! | op | request | answer |
//! | --- | --- | --- |
//! | `locale.canonicalize` | `{locales}` | `{locales}` |
//! | `datetime.resolve` | `{locales, options, defaults}` | resolved options |
//! | `datetime.format` | `{resolved, epochMs}` | `{parts: [{type, value}]}` |
//! | `number.resolve` / `number.format` | `{locales, options}` / `{resolved, value}` | resolved / `{parts}` |
//! | `plural.resolve` / `plural.select` | `{locales, options}` / `{resolved, value}` | resolved / `{category}` |
//! | `collator.resolve` / `collator.compare` | `{locales, options}` / `{resolved, a, b}` | resolved / `{result}` |
//! | `relative.resolve` / `relative.format` | `{locales, options}` / `{resolved, value, unit}` | resolved / `{parts}` |
//!
//! The host's own time zone is the default `timeZone` ([`host_time_zone`]); the default locale
//! is `en-US`, whatever the host's, so a plugin learns nothing of the user's language settings.

mod collator;
pub mod data;
mod datetime;
mod locale;
mod number;
mod parts;
mod plural;
mod relative;

use std::fmt;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Longest request accepted (1 MiB): a collator compares two strings of at most this together.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;

/// Which JavaScript error an [`IntlError`] becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `RangeError`: a value outside what the option allows.
    Range,
    /// `TypeError`: a value of the wrong kind or a combination the spec forbids.
    Type,
}

/// An error as JavaScript throws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntlError {
    /// Which error.
    pub kind: ErrorKind,
    /// Its message.
    pub message: String,
}

impl IntlError {
    pub(crate) fn range(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Range,
            message: message.into(),
        }
    }

    pub(crate) fn type_error(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Type,
            message: message.into(),
        }
    }
}

impl fmt::Display for IntlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ErrorKind::Range => "RangeError",
            ErrorKind::Type => "TypeError",
        };
        write!(f, "{kind}: {}", self.message)
    }
}

impl std::error::Error for IntlError {}

/// Runs one `Intl` operation (see the table above).
///
/// # Errors
/// The error JavaScript should throw; an unknown op or a malformed request is a `TypeError`.
pub fn call(op: &str, request: &str) -> Result<String, IntlError> {
    if request.len() > MAX_REQUEST_BYTES {
        return Err(IntlError::range(format!(
            "the request is larger than {MAX_REQUEST_BYTES} bytes"
        )));
    }
    let answer: Value = match op {
        "locale.canonicalize" => locale::canonicalize(parse(request)?)?,
        "datetime.resolve" => datetime::resolve(parse(request)?)?,
        "datetime.format" => datetime::format(parse(request)?)?,
        "number.resolve" => number::resolve(parse(request)?)?,
        "number.format" => number::format(parse(request)?)?,
        "plural.resolve" => plural::resolve(parse(request)?)?,
        "plural.select" => plural::select(parse(request)?)?,
        "collator.resolve" => collator::resolve(parse(request)?)?,
        "collator.compare" => collator::compare(parse(request)?)?,
        "relative.resolve" => relative::resolve(parse(request)?)?,
        "relative.format" => relative::format(parse(request)?)?,
        other => {
            return Err(IntlError::type_error(format!(
                "unknown Intl operation `{other}`"
            )));
        }
    };
    Ok(answer.to_string())
}

fn parse<T: DeserializeOwned>(request: &str) -> Result<T, IntlError> {
    serde_json::from_str(request)
        .map_err(|e| IntlError::type_error(format!("malformed Intl request: {e}")))
}

/// The host's IANA time zone (from `TZ` or `/etc/localtime`) as `resolvedOptions()` names it
/// (`Etc/UTC` is `UTC`, as in browsers), `UTC` when it has none.
pub fn host_time_zone() -> String {
    static ZONE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ZONE.get_or_init(|| {
        jiff::tz::TimeZone::try_system()
            .ok()
            .and_then(|tz| tz.iana_name().map(str::to_owned))
            .and_then(|name| datetime::canonical_zone(&name).ok())
            .unwrap_or_else(|| "UTC".to_owned())
    })
    .clone()
}

/// `{locales, options}`: what a constructor's `*.resolve` takes.
#[derive(Deserialize)]
pub(crate) struct ResolveRequest {
    #[serde(default)]
    pub(crate) locales: Vec<String>,
    #[serde(default)]
    pub(crate) options: Map<String, Value>,
}

impl ResolveRequest {
    /// The locale the constructor `ctor` uses, after checking its `localeMatcher` option.
    pub(crate) fn locale(&self, ctor: &str) -> Result<icu::locale::Locale, IntlError> {
        let chosen = locale::choose(&self.locales)?;
        choice(
            &self.options,
            "localeMatcher",
            &["lookup", "best fit"],
            ctor,
        )?;
        Ok(chosen)
    }
}

/// One string option: absent, or one of `allowed` (else the RangeError browsers give).
pub(crate) fn choice(
    options: &serde_json::Map<String, Value>,
    name: &str,
    allowed: &[&str],
    constructor: &str,
) -> Result<Option<String>, IntlError> {
    match options.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(Some(s.clone())),
        Some(other) => {
            let shown = other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned);
            Err(IntlError::range(format!(
                "Value {shown} out of range for {constructor} options property {name}"
            )))
        }
    }
}

/// One boolean option.
pub(crate) fn flag(options: &serde_json::Map<String, Value>, name: &str) -> Option<bool> {
    options.get(name).and_then(Value::as_bool)
}

/// One integer option within `min..=max`.
pub(crate) fn digits(
    options: &serde_json::Map<String, Value>,
    name: &str,
    min: u8,
    max: u8,
) -> Result<Option<u8>, IntlError> {
    match options.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => {
            let n = value.as_f64().unwrap_or(f64::NAN);
            if n.is_finite() && n >= f64::from(min) && n <= f64::from(max) {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Ok(Some(n.floor() as u8))
            } else {
                Err(IntlError::range(format!("{name} value is out of range.")))
            }
        }
    }
}

#[cfg(test)]
mod tests;
