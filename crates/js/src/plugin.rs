//! One JavaScript plugin in its own engine instance.

use bosun_core::Decision;
use bosun_sandbox::{CallError, CallOptions, CallReport, Grants, Instance, Loaded, SandboxError};
use serde::Deserialize;
use serde_json::Value;

use crate::descriptor::{ActivationRequest, Descriptor};
use crate::thrown::ThrownAt;

/// Why a plugin could not be started or a hook failed.
#[derive(Debug, thiserror::Error)]
pub enum JsError {
    /// The engine instance could not be created.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The engine refused or failed the call (the plugin's code threw, broke its contract, ran
    /// past its deadline, ...).
    #[error("plugin {plugin}: {source}")]
    Call {
        /// The plugin's name.
        plugin: String,
        /// What the sandbox reported.
        #[source]
        source: CallError,
        /// Where the plugin's own error was thrown, when the engine named a place in the
        /// message of a [`bosun_sandbox::CallErrorKind::Tool`].
        thrown_at: Option<ThrownAt>,
    },
    /// The engine answered with JSON the host could not read.
    #[error(
        "plugin {plugin}: the engine answered malformed JSON ({reason}); this is a bug in Bosun's JavaScript layer"
    )]
    Protocol {
        /// The plugin's name.
        plugin: String,
        /// What was wrong.
        reason: String,
    },
}

impl JsError {
    /// A failed engine call of `plugin`, with the place its error was thrown read once here.
    fn call(plugin: &str, source: CallError) -> Self {
        let thrown_at = match &source.kind {
            bosun_sandbox::CallErrorKind::Tool { message, .. } => ThrownAt::find(message),
            _ => None,
        };
        Self::Call {
            plugin: plugin.to_owned(),
            source,
            thrown_at,
        }
    }
}

/// Parses the engine's JSON answer. JavaScript strings may hold lone UTF-16 surrogates, which
/// `JSON.stringify` writes as `\\uD800`-style escapes that are not Unicode; such an escape is read
/// as U+FFFD (as a browser's `TextEncoder` would), so a plugin's odd string is its own data, not a
/// protocol failure.
fn parse_answer<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(json).or_else(|error| {
        let repaired = replace_lone_surrogates(json);
        if repaired == json {
            Err(error)
        } else {
            serde_json::from_str(&repaired)
        }
    })
}

/// `json` with every `\\u` escape of a lone surrogate replaced by `\\ufffd`; a high surrogate
/// escape directly followed by a low one is a pair and kept.
fn replace_lone_surrogates(json: &str) -> String {
    fn escape_at(bytes: &[u8], i: usize) -> Option<u16> {
        let hex = bytes.get(i + 2..i + 6)?;
        if bytes.get(i) != Some(&b'\\') || bytes.get(i + 1) != Some(&b'u') {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    }
    let bytes = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(bytes, i) {
            Some(0xD800..=0xDBFF) => {
                if matches!(escape_at(bytes, i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12;
                } else {
                    out.push_str(&json[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.push_str(&json[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            Some(_) => i += 6,
            // Any other escape (`\\\\`, `\\"`, `\\n`): two bytes, so an escaped backslash
            // before a `u` is never read as the start of an escape.
            None => i += 2,
        }
    }
    out.push_str(&json[copied..]);
    out
}

/// A tool call's result as the plugin returned it.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// `{ok: true, output, truncated}`.
    Ok {
        /// The output.
        output: Value,
        /// Whether the plugin says it cut the output.
        truncated: bool,
    },
    /// `{ok: false, error}`.
    Err {
        /// The error code (not yet checked against Bosun's stable codes).
        code: String,
        /// The message.
        message: String,
        /// Where in the plugin's code the error was thrown, when the message names it.
        thrown_at: Option<ThrownAt>,
        /// Whether retrying may help.
        retryable: bool,
    },
}

/// A policy restriction from a Forge `restrictPolicy` hook.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Restriction {
    /// The hook's `kind`, read once here: `deny` is [`Decision::Deny`]; `confirm` (and any
    /// other word) asks a person, [`Decision::Ask`].
    #[serde(rename = "kind", deserialize_with = "restriction_decision")]
    pub decision: Decision,
    /// Why, prefixed with the plugin's name.
    pub reason: String,
}

/// A restriction's `kind` word as its decision: only `deny` refuses outright; anything else a
/// hook says still restricts the call to a person's approval.
fn restriction_decision<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Decision, D::Error> {
    let kind = String::deserialize(deserializer)?;
    Ok(if kind == "deny" {
        Decision::Deny
    } else {
        Decision::Ask
    })
}

/// What a Forge command did.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandOutput {
    /// Its exit code.
    pub exit_code: i32,
    /// What it wrote with `write`.
    #[serde(default)]
    pub stdout: String,
    /// What it wrote with `writeError`.
    #[serde(default)]
    pub stderr: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    ok: bool,
    #[serde(default)]
    output: Value,
    #[serde(default)]
    truncated: bool,
    #[serde(default)]
    error: Option<EnvelopeError>,
}

#[derive(Deserialize)]
struct EnvelopeError {
    code: String,
    message: String,
    #[serde(default)]
    retryable: bool,
}

/// A plugin running in its own engine instance. Calls run one at a time.
pub struct JsPlugin {
    name: String,
    instance: Instance,
    descriptor: Descriptor,
}

impl std::fmt::Debug for JsPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsPlugin")
            .field("name", &self.name)
            .field("descriptor", &self.descriptor)
            .finish_non_exhaustive()
    }
}

impl JsPlugin {
    /// Instantiates the engine with `grants`, hands it `files` (plugin-relative path,
    /// JavaScript source) and activates the plugin under the grant's deadline.
    ///
    /// # Errors
    /// [`JsError::Sandbox`] if the instance cannot be created, [`JsError::Call`] if activation
    /// fails (the plugin threw, broke its contract, or ran past the deadline),
    /// [`JsError::Protocol`] if the descriptor is malformed.
    pub async fn activate(
        engine: &Loaded,
        grants: Grants,
        files: &[(String, String)],
        request: &ActivationRequest,
        opts: CallOptions,
    ) -> Result<Self, JsError> {
        let name = request.name.clone();
        let mut instance = engine
            .clone()
            .with_label(name.clone())
            .instantiate(grants)
            .await?;
        let request_json = serde_json::to_string(request).map_err(|e| JsError::Protocol {
            plugin: name.clone(),
            reason: e.to_string(),
        })?;
        let out = instance
            .activate(files, &request_json, opts)
            .await
            .map_err(|source| JsError::call(&name, source))?;
        let descriptor: Descriptor =
            serde_json::from_str(&out.output_json).map_err(|e| JsError::Protocol {
                plugin: name.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            name,
            instance,
            descriptor,
        })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the plugin registered.
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// Whether an earlier call left the instance unusable (drop it and activate again).
    pub fn is_poisoned(&self) -> bool {
        self.instance.is_poisoned()
    }

    /// Bytes of linear memory the plugin's engine instance has grown to (see
    /// [`Instance::memory_bytes`]).
    pub fn memory_bytes(&self) -> usize {
        self.instance.memory_bytes()
    }

    /// Runs `tool` with `input_json`. The outcome is the plugin's own result; the report has
    /// its logs and refused requests.
    ///
    /// # Errors
    /// A [`CallError`] for a trap, timeout, cancellation, memory or output limit, or an engine
    /// failure (`plugin_error`).
    pub async fn call(
        &mut self,
        tool: &str,
        input_json: &str,
        opts: CallOptions,
    ) -> Result<(ToolOutcome, CallReport), JsError> {
        let out = self
            .instance
            .call(tool, input_json, opts)
            .await
            .map_err(|source| JsError::call(&self.name, source))?;
        let envelope: Envelope = parse_answer(&out.output_json).map_err(|e| JsError::Protocol {
            plugin: self.name.clone(),
            reason: e.to_string(),
        })?;
        let outcome = match (envelope.ok, envelope.error) {
            (true, _) => ToolOutcome::Ok {
                output: envelope.output,
                truncated: envelope.truncated,
            },
            (false, Some(e)) => ToolOutcome::Err {
                code: e.code,
                thrown_at: ThrownAt::find(&e.message),
                message: e.message,
                retryable: e.retryable,
            },
            (false, None) => {
                return Err(JsError::Protocol {
                    plugin: self.name.clone(),
                    reason: "a failed result without an error".into(),
                });
            }
        };
        Ok((outcome, out.report))
    }

    /// Runs the plugin's hooks of kind `op` and parses their JSON answer.
    async fn hook<T: serde::de::DeserializeOwned>(
        &mut self,
        op: &str,
        payload: &Value,
        opts: CallOptions,
    ) -> Result<T, JsError> {
        let out = self
            .instance
            .hook(op, &payload.to_string(), opts)
            .await
            .map_err(|source| JsError::call(&self.name, source))?;
        parse_answer(&out.output_json).map_err(|e| JsError::Protocol {
            plugin: self.name.clone(),
            reason: format!("{op} hook: {e}"),
        })
    }

    /// Prompt contributions for a run (`{prompt, workspaceRoot, workingDirectory}`).
    ///
    /// # Errors
    /// As [`JsPlugin::call`]; a contribution over 32 KiB is the plugin's error.
    pub async fn prompt(
        &mut self,
        payload: &Value,
        opts: CallOptions,
    ) -> Result<Vec<String>, JsError> {
        self.hook("prompt", payload, opts).await
    }

    /// The plugin's verdict on a proposed call, strictest over its hooks.
    ///
    /// # Errors
    /// As [`JsPlugin::call`]; a malformed verdict is the plugin's error (fail closed).
    pub async fn restrict(
        &mut self,
        payload: &Value,
        opts: CallOptions,
    ) -> Result<Option<Restriction>, JsError> {
        self.hook("restrict", payload, opts).await
    }

    /// Hands a redacted run event to the plugin's observers; returns their warnings.
    ///
    /// # Errors
    /// As [`JsPlugin::call`].
    pub async fn observe(
        &mut self,
        event: &Value,
        opts: CallOptions,
    ) -> Result<Vec<String>, JsError> {
        #[derive(Deserialize)]
        struct Observed {
            #[serde(default)]
            warnings: Vec<String>,
        }
        let observed: Observed = self.hook("observe", event, opts).await?;
        Ok(observed.warnings)
    }

    /// Runs a Forge command.
    ///
    /// # Errors
    /// As [`JsPlugin::call`].
    pub async fn command(
        &mut self,
        payload: &Value,
        opts: CallOptions,
    ) -> Result<CommandOutput, JsError> {
        self.hook("command", payload, opts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let value: serde_json::Value = parse_answer(
            r#"{"a": "x\ud800y", "b": "\udc00", "c": "\ud83d\ude00", "d": "\\ud800", "e": "\ud800"}"#,
        )
        .unwrap();
        assert_eq!(value["a"], "x\u{fffd}y");
        assert_eq!(value["b"], "\u{fffd}");
        assert_eq!(value["c"], "\u{1f600}");
        assert_eq!(value["d"], "\\ud800");
        assert_eq!(value["e"], "\u{fffd}");
    }
}
