//! `globalThis.__native`: the host calls the JavaScript layer builds on (see `js/README.md`).
//!
//! Each function is synchronous. Outgoing HTTP goes through `wasi:http`, which the sandbox links
//! to its guard (per-call granted authorities, host-side DNS, private addresses refused, bounded
//! responses); the engine follows no redirect itself, so every hop the layer makes is checked
//! again by the host.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bosun_sdk::host::{self, LogLevel};
use bosun_sdk::http::{HttpError, Method, Request, Url};
use rquickjs::function::Opt;
use rquickjs::{Ctx, Exception, Function, Object, Result, TypedArray, Value};

use crate::bindings::bosun::js::runtime;

/// The largest response body the engine reads (the host bounds it too).
const MAX_BODY_BYTES: usize = 16 << 20;

/// Installs `__native` on the global object.
pub fn install(ctx: &Ctx<'_>) -> Result<()> {
    let native = Object::new(ctx.clone())?;
    native.set("log", Function::new(ctx.clone(), log)?)?;
    native.set("config", Function::new(ctx.clone(), config)?)?;
    native.set("configAll", Function::new(ctx.clone(), config_all)?)?;
    native.set(
        "isCancelled",
        Function::new(ctx.clone(), host::is_cancelled)?,
    )?;
    native.set("http", Function::new(ctx.clone(), http)?)?;
    native.set("parseUrl", Function::new(ctx.clone(), parse_url)?)?;
    native.set("utf8Encode", Function::new(ctx.clone(), utf8_encode)?)?;
    native.set("utf8Decode", Function::new(ctx.clone(), utf8_decode)?)?;
    native.set("base64Encode", Function::new(ctx.clone(), base64_encode)?)?;
    native.set("base64Decode", Function::new(ctx.clone(), base64_decode)?)?;
    native.set(
        "sessionTaint",
        Function::new(ctx.clone(), runtime::session_taint)?,
    )?;
    native.set("escalateTaint", Function::new(ctx.clone(), escalate_taint)?)?;
    native.set("hostInfo", Function::new(ctx.clone(), host_info)?)?;
    native.set("lookup", Function::new(ctx.clone(), lookup)?)?;
    native.set("intl", Function::new(ctx.clone(), intl)?)?;
    native.set("spawn", Function::new(ctx.clone(), spawn)?)?;
    native.set("processWrite", Function::new(ctx.clone(), process_write)?)?;
    native.set(
        "processCloseStdin",
        Function::new(ctx.clone(), runtime::process_close_stdin)?,
    )?;
    native.set("processKill", Function::new(ctx.clone(), process_kill)?)?;
    native.set("processPoll", Function::new(ctx.clone(), process_poll)?)?;
    ctx.globals().set("__native", native)
}

fn log(level: String, message: String) {
    let level = match level.as_str() {
        "trace" => LogLevel::Trace,
        "debug" => LogLevel::Debug,
        "warn" => LogLevel::Warn,
        "error" => LogLevel::Error,
        _ => LogLevel::Info,
    };
    host::log(level, &message);
}

fn config(key: String) -> Option<String> {
    host::config(&key)
}

fn config_all() -> String {
    crate::engine::plugin_config()
}

/// Copies the bytes out of a `Uint8Array` or `ArrayBuffer`.
fn bytes_of(ctx: &Ctx<'_>, value: &Value<'_>) -> Result<Vec<u8>> {
    if let Ok(array) = TypedArray::<u8>::from_value(value.clone()) {
        let raw = array
            .as_raw()
            .ok_or_else(|| Exception::throw_type(ctx, "the Uint8Array is detached"))?;
        // SAFETY: `raw` points into the live, attached array buffer of `array`, which this
        // function holds; no JavaScript runs while the bytes are copied.
        #[allow(unsafe_code)]
        let slice = unsafe { raw.as_ref() };
        return Ok(slice.to_vec());
    }
    if let Some(buffer) = value
        .as_object()
        .and_then(|o| rquickjs::ArrayBuffer::from_object(o.clone()))
    {
        let raw = buffer
            .as_raw()
            .ok_or_else(|| Exception::throw_type(ctx, "the ArrayBuffer is detached"))?;
        // SAFETY: as above, for the buffer itself.
        #[allow(unsafe_code)]
        let slice = unsafe { raw.as_ref() };
        return Ok(slice.to_vec());
    }
    Err(Exception::throw_type(
        ctx,
        "expected a Uint8Array or an ArrayBuffer",
    ))
}

/// Throws an `Error` with a `code` property.
fn throw_coded(ctx: &Ctx<'_>, code: &str, message: &str) -> rquickjs::Error {
    match Exception::from_message(ctx.clone(), message) {
        Ok(exception) => {
            if exception.as_object().set("code", code).is_err() {
                return rquickjs::Error::Exception;
            }
            ctx.throw(exception.into_value())
        }
        Err(e) => e,
    }
}

fn http<'js>(
    ctx: Ctx<'js>,
    method: String,
    url: String,
    headers: Vec<Vec<String>>,
    body: Opt<Value<'js>>,
    timeout_ms: Opt<f64>,
) -> Result<Object<'js>> {
    let method = match method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        other => {
            return Err(Exception::throw_type(
                &ctx,
                &format!("fetch: the method {other} is not supported"),
            ));
        }
    };
    let parsed = Url::parse(&url).map_err(|e| Exception::throw_type(&ctx, &e.to_string()))?;
    let mut request = Request::new(method, parsed).max_body_bytes(MAX_BODY_BYTES);
    for pair in headers {
        if let [name, value] = pair.as_slice() {
            request = request.header(name.clone(), value.clone());
        }
    }
    if let Some(body) = body.0.filter(|b| !b.is_undefined() && !b.is_null()) {
        request = request.body(bytes_of(&ctx, &body)?);
    }
    if let Some(ms) = timeout_ms.0.filter(|ms| ms.is_finite() && *ms > 0.0) {
        request = request.timeout(Duration::from_millis(ms as u64));
    }
    let response = request.send().map_err(|e| {
        let code = match &e {
            HttpError::Denied(_) => "refused",
            HttpError::TimedOut => "timeout",
            HttpError::Cancelled => "cancelled",
            _ => "network",
        };
        throw_coded(&ctx, code, &e.to_string())
    })?;
    if response.truncated {
        return Err(throw_coded(
            &ctx,
            "too_large",
            &format!("the response body is larger than {MAX_BODY_BYTES} bytes"),
        ));
    }
    let out = Object::new(ctx.clone())?;
    out.set("status", response.status)?;
    let headers: Vec<Vec<String>> = response
        .headers
        .into_iter()
        .map(|(n, v)| vec![n, v])
        .collect();
    out.set("headers", headers)?;
    out.set("body", TypedArray::<u8>::new(ctx.clone(), response.body)?)?;
    Ok(out)
}

fn parse_url<'js>(ctx: Ctx<'js>, input: String, base: Opt<String>) -> Result<Object<'js>> {
    let invalid =
        |e: url::ParseError| Exception::throw_type(&ctx, &format!("Invalid URL: {input} ({e})"));
    let parsed = match base.0 {
        Some(base) => {
            let base = url::Url::parse(&base).map_err(invalid)?;
            base.join(&input).map_err(invalid)?
        }
        None => url::Url::parse(&input).map_err(invalid)?,
    };
    let out = Object::new(ctx.clone())?;
    out.set("href", parsed.as_str())?;
    out.set("origin", parsed.origin().ascii_serialization())?;
    out.set("protocol", format!("{}:", parsed.scheme()))?;
    out.set("username", parsed.username())?;
    out.set("password", parsed.password().unwrap_or(""))?;
    let hostname = parsed.host_str().unwrap_or("");
    let port = parsed.port().map(|p| p.to_string()).unwrap_or_default();
    let host = if port.is_empty() {
        hostname.to_owned()
    } else {
        format!("{hostname}:{port}")
    };
    out.set("host", host)?;
    out.set("hostname", hostname)?;
    out.set("port", port)?;
    out.set("pathname", parsed.path())?;
    out.set(
        "search",
        parsed
            .query()
            .filter(|q| !q.is_empty())
            .map(|q| format!("?{q}"))
            .unwrap_or_default(),
    )?;
    out.set(
        "hash",
        parsed
            .fragment()
            .filter(|f| !f.is_empty())
            .map(|f| format!("#{f}"))
            .unwrap_or_default(),
    )?;
    Ok(out)
}

fn utf8_encode<'js>(ctx: Ctx<'js>, text: String) -> Result<TypedArray<'js, u8>> {
    TypedArray::<u8>::new(ctx, text.into_bytes())
}

fn utf8_decode(ctx: Ctx<'_>, bytes: Value<'_>, fatal: Opt<bool>) -> Result<String> {
    let bytes = bytes_of(&ctx, &bytes)?;
    if fatal.0.unwrap_or(false) {
        String::from_utf8(bytes)
            .map_err(|_| Exception::throw_type(&ctx, "The encoded data was not valid UTF-8"))
    } else {
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

fn base64_encode(ctx: Ctx<'_>, bytes: Value<'_>) -> Result<String> {
    Ok(STANDARD.encode(bytes_of(&ctx, &bytes)?))
}

fn base64_decode<'js>(ctx: Ctx<'js>, text: String) -> Result<TypedArray<'js, u8>> {
    let cleaned: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let bytes = STANDARD
        .decode(cleaned.as_bytes())
        .or_else(|_| {
            base64::engine::general_purpose::STANDARD_NO_PAD.decode(cleaned.trim_end_matches('='))
        })
        .map_err(|e| Exception::throw_type(&ctx, &format!("invalid base64: {e}")))?;
    TypedArray::<u8>::new(ctx, bytes)
}

fn escalate_taint(ctx: Ctx<'_>, level: String) -> Result<()> {
    runtime::escalate_taint(&level).map_err(|e| Exception::throw_type(&ctx, &e))
}

/// One `Intl` operation on the host; its errors are thrown as the `RangeError` or `TypeError`
/// they name.
fn intl(ctx: Ctx<'_>, op: String, request: String) -> Result<String> {
    runtime::intl(&op, &request).map_err(|e| match e.strip_prefix("RangeError: ") {
        Some(message) => Exception::throw_range(&ctx, message),
        None => Exception::throw_type(&ctx, e.strip_prefix("TypeError: ").unwrap_or(&e)),
    })
}

fn host_info(key: String) -> Option<String> {
    runtime::host_info(&key)
}

fn lookup(ctx: Ctx<'_>, hostname: String) -> Result<Vec<String>> {
    runtime::lookup(&hostname).map_err(|e| {
        let code = if e.contains("not found") {
            "ENOTFOUND"
        } else {
            "refused"
        };
        throw_coded(&ctx, code, &e)
    })
}

/// Starts a process through the host (policy, a person, the OS sandbox); its id, or an error
/// whose `code` is `EACCES` (refused or denied), `ENOENT` (no such program) or `EIO`.
fn spawn(ctx: Ctx<'_>, request: String) -> Result<u32> {
    runtime::spawn(&request).map_err(|e| {
        let code = if e.contains("no such program") {
            "ENOENT"
        } else if e.contains("denied")
            || e.contains("declined")
            || e.contains("may not")
            || e.contains("approval")
        {
            "EACCES"
        } else {
            "EIO"
        };
        throw_coded(&ctx, code, &e)
    })
}

fn process_write<'js>(ctx: Ctx<'js>, id: u32, data: Value<'js>) -> Result<()> {
    let bytes = bytes_of(&ctx, &data)?;
    runtime::process_write(id, &bytes).map_err(|e| throw_coded(&ctx, "EPIPE", &e))
}

fn process_kill(id: u32, signal: String) {
    runtime::process_kill(id, &signal);
}

/// What the call's processes said since the last poll: `[{id, kind, data, code, signal}]`.
fn process_poll<'js>(ctx: Ctx<'js>, wait_ms: f64) -> Result<rquickjs::Array<'js>> {
    let wait = if wait_ms.is_finite() && wait_ms > 0.0 {
        // At most 100 ms on the host's side; the cast saturates.
        wait_ms.min(100.0) as u32
    } else {
        0
    };
    let events = runtime::process_poll(wait);
    let list = rquickjs::Array::new(ctx.clone())?;
    for (i, event) in events.into_iter().enumerate() {
        let object = Object::new(ctx.clone())?;
        object.set("id", event.id)?;
        object.set("kind", event.kind)?;
        object.set("data", TypedArray::<u8>::new(ctx.clone(), event.data)?)?;
        object.set("code", event.code)?;
        object.set("signal", event.signal)?;
        list.set(i, object)?;
    }
    Ok(list)
}
