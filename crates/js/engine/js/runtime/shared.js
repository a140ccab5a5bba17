// Bosun JS engine runtime, first part: what the Forge and Triggerfish parts share. The imports,
// captured intrinsics, `PluginError`, small helpers, the activation request and loading the entry.
//
// The runtime (`bosun:runtime`) is evaluated once after the prelude when the engine is
// pre-initialised. It defines `globalThis.__engine`, which the Rust core captures and
// deletes: `activate`, `call`, `hook`, `nextTimer`, `runTimers`, `cancel` (README.md has the
// contract, the activation request and the descriptor).
//
// `bosun:runtime` is one module assembled from the files of this directory: src/loader.rs
// concatenates shared.js, forge.js, triggerfish.js and engine.js, in that order (test/harness.mjs
// reads the same list). They share one module scope, so only this file imports and no file
// exports; top-level code uses only what earlier files declare (functions run later and may
// use anything). Plugin code can import none of them, as before.
//
// Two plugin formats, each loaded unmodified:
//
// - Forge (`plugin.json` + an ES module exporting `activate(api)` or a default function): the
//   frozen `api` with Forge's rules, checked here at registration time (capability gates, names,
//   risks, schemas, subagent limits) so that a bad registration fails activation with Forge's
//   message. Tools' zod schemas become JSON Schema for the host; at call time the same schema
//   parses the input again so zod's transforms and defaults apply.
// - Triggerfish (`mod.ts`, types stripped by the host, exporting `manifest`, `toolDefinitions`,
//   `createExecutor`, optional `systemPrompt`): the exports checked as Triggerfish's loader does,
//   the flat `parameters` maps turned into JSON Schema, the `PluginContext`, and `Deno` as the
//   trust level allows.
//
// Nothing a plugin does escapes as an exception from `call`: every throw, rejection or malformed
// result becomes a tool error. `activate` and `hook` reject (with a `PluginError` whose message is
// complete and safe to show) only when the plugin broke its contract.
import internal from "bosun:internal";
import pluginDir from "bosun:plugin-dir";
import { z } from "zod";
import { spawn as spawnChild } from "node:child_process";

const { native, web, util, cancellation, timers } = internal;
const { describeThrown, utf8ByteLength, bound } = util;
const nativeLog = native.log;

const ObjectFreeze = Object.freeze;
const ObjectKeys = Object.keys;
const ObjectValues = Object.values;
const ObjectDefineProperty = Object.defineProperty;
const ArrayIsArray = Array.isArray;
const ReflectApply = Reflect.apply;
const JSONParse = JSON.parse;
const JSONStringify = JSON.stringify;
const NumberIsInteger = Number.isInteger;

const MAX_DESCRIPTION_CHARS = 1024;
const MAX_PROMPT_BYTES = 32768;
const MAX_THROWN_CHARS = 500;

/** A broken plugin contract. The message is complete; the stack would only be noise. */
class PluginError extends Error {
  constructor(message) {
    super(message);
    ObjectDefineProperty(this, "name", { value: "PluginError", writable: true, configurable: true });
    ObjectDefineProperty(this, "code", { value: "plugin_error", writable: true, configurable: true });
    ObjectDefineProperty(this, "stack", { value: "", writable: true, configurable: true });
  }
}

// -----------------------------------------------------------------------------------------
// Small helpers
// -----------------------------------------------------------------------------------------

/**
 * A successful tool result as the answer `call` returns, from output that is already JSON text:
 * what `JSON.stringify({ok: true, output, truncated})` would write. A string, so nothing a
 * plugin did to `Object.prototype` can reach it on its way out.
 */
function successAnswer(outputJson, truncated) {
  return `{"ok":true,"output":${outputJson},"truncated":${truncated ? "true" : "false"}}`;
}

function failure(code, message, retryable = false) {
  return { ok: false, error: { code, message, retryable } };
}

/** What kind of value this is, for messages: `null`, `a number (42)`, `an array`, … */
function kindOf(value) {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (ArrayIsArray(value)) return "an array";
  switch (typeof value) {
    case "string": return "a string";
    case "number": return `a number (${value})`;
    case "boolean": return `a boolean (${value})`;
    case "function": return "a function";
    case "bigint": return "a bigint";
    case "symbol": return "a symbol";
    default: return "an object";
  }
}

function isPlainObject(value) {
  return value !== null && typeof value === "object" && !ArrayIsArray(value);
}

function isNonBlankString(value) {
  return typeof value === "string" && value.trim() !== "";
}

/** Freezes a JSON-shaped value all the way down. */
function deepFreeze(value) {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    ObjectFreeze(value);
    for (const key of ObjectKeys(value)) deepFreeze(value[key]);
  }
  return value;
}

/** A JSON copy (plain data only), or undefined when the value is not JSON-serialisable. */
function jsonCopy(value) {
  try {
    const text = JSONStringify(value);
    return text === undefined ? undefined : JSONParse(text);
  } catch {
    return undefined;
  }
}

/** The longest prefix of `text` whose UTF-8 encoding fits in `maxBytes`. */
function cutToBytes(text, maxBytes) {
  if (utf8ByteLength(text) <= maxBytes) return text;
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (utf8ByteLength(text.slice(0, middle)) <= maxBytes) low = middle;
    else high = middle - 1;
  }
  return text.slice(0, low);
}

function log(level, message) {
  try {
    // The host's strings are Rust strings: no lone surrogates.
    nativeLog(level, String(message).replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd"));
  } catch {
    // Logging never breaks the caller.
  }
}

// -----------------------------------------------------------------------------------------
// The activation request
// -----------------------------------------------------------------------------------------

const DEFAULT_LIMITS = { maxOutputBytes: 65536, maxEntries: 200, commandTimeoutMs: 60000 };

function positiveInteger(value, fallback, what) {
  if (value === undefined) return fallback;
  if (!NumberIsInteger(value) || value <= 0) {
    throw new PluginError(`The activation request's ${what} must be a positive integer.`);
  }
  return value;
}

function parseRequest(requestJson) {
  let request;
  try {
    request = JSONParse(requestJson);
  } catch {
    throw new PluginError("The activation request is not valid JSON.");
  }
  if (!isPlainObject(request)) throw new PluginError("The activation request must be a JSON object.");
  const { format, name, entry } = request;
  if (format !== "forge" && format !== "triggerfish") {
    throw new PluginError(`The activation request's format must be "forge" or "triggerfish", not ${JSONStringify(format)}.`);
  }
  if (!isNonBlankString(name)) throw new PluginError("The activation request needs the plugin's name.");
  if (!isNonBlankString(entry)) throw new PluginError("The activation request needs the plugin's entry file.");
  const capabilities = request.capabilities ?? [];
  if (!ArrayIsArray(capabilities) || !capabilities.every((c) => typeof c === "string")) {
    throw new PluginError("The activation request's capabilities must be an array of strings.");
  }
  const reserved = request.reservedToolNames ?? [];
  if (!ArrayIsArray(reserved) || !reserved.every((c) => typeof c === "string")) {
    throw new PluginError("The activation request's reservedToolNames must be an array of strings.");
  }
  const trust = request.trust ?? "sandboxed";
  if (trust !== "trusted" && trust !== "sandboxed") {
    throw new PluginError(`The activation request's trust must be "trusted" or "sandboxed", not ${JSONStringify(trust)}.`);
  }
  const config = request.config ?? {};
  if (!isPlainObject(config)) throw new PluginError("The activation request's config must be an object.");
  const limits = request.limits ?? {};
  if (!isPlainObject(limits)) throw new PluginError("The activation request's limits must be an object.");
  const toolLimits = {
    maxOutputBytes: positiveInteger(limits.maxOutputBytes, DEFAULT_LIMITS.maxOutputBytes, "limits.maxOutputBytes"),
    maxEntries: positiveInteger(limits.maxEntries, DEFAULT_LIMITS.maxEntries, "limits.maxEntries"),
  };
  const commandTimeoutMs = positiveInteger(limits.commandTimeoutMs, DEFAULT_LIMITS.commandTimeoutMs, "limits.commandTimeoutMs");
  if (commandTimeoutMs !== undefined) toolLimits.commandTimeoutMs = commandTimeoutMs;
  const codeFromStrings = request.codeFromStrings ?? false;
  if (typeof codeFromStrings !== "boolean") {
    throw new PluginError("The activation request's codeFromStrings must be a boolean.");
  }
  const env = request.env ?? {};
  if (!isPlainObject(env) || !ObjectValues(env).every((v) => typeof v === "string")) {
    throw new PluginError("The activation request's env must be an object of strings.");
  }
  const commonjs = request.commonjs ?? [];
  if (!ArrayIsArray(commonjs) || !commonjs.every((c) => typeof c === "string")) {
    throw new PluginError("The activation request's commonjs must be an array of strings.");
  }
  const directory = request.directory ?? {};
  if (!isPlainObject(directory) || !ObjectValues(directory).every((v) => typeof v === "string")) {
    throw new PluginError("The activation request's directory must be an object of base64 strings.");
  }
  return {
    commonjs: new Set(commonjs),
    directory,
    env: ObjectFreeze({ ...env }),
    format,
    name,
    entry,
    trust,
    config,
    codeFromStrings,
    capabilities: new Set(capabilities),
    reserved: new Set(reserved),
    limits: ObjectFreeze(toolLimits),
  };
}

async function importEntry(state) {
  try {
    return await import(state.entry);
  } catch (error) {
    throw new PluginError(`Plugin "${state.name}" could not load its entry "${state.entry}": ${describeThrown(error, 1000)}`);
  }
}
