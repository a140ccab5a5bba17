// Bosun JS engine: the runtime (`bosun:runtime`), evaluated once after the prelude when the
// engine is pre-initialised. It defines `globalThis.__engine`, which the Rust core captures and
// deletes: `activate`, `call`, `hook`, `nextTimer`, `runTimers`, `cancel` (README.md has the
// contract, the activation request and the descriptor).
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
import { z } from "zod";

const { native, web, util, cancellation, timers } = internal;
const { describeThrown, utf8ByteLength, bound } = util;
const nativeLog = native.log;
const nativeHostInfo = native.hostInfo;
const nativeSessionTaint = native.sessionTaint;
const nativeEscalateTaint = native.escalateTaint;

const ObjectFreeze = Object.freeze;
const ObjectKeys = Object.keys;
const ObjectDefineProperty = Object.defineProperty;
const ArrayIsArray = Array.isArray;
const ReflectApply = Reflect.apply;
const JSONParse = JSON.parse;
const JSONStringify = JSON.stringify;
const NumberIsInteger = Number.isInteger;
const toJSONSchema = z.toJSONSchema;

/** Where the workspace is mounted in the sandbox (the ToolContext's root and cwd). */
const WORKSPACE = "/workspace";

/** Forge's name rules. */
const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const COMMAND_NAME = /^[a-z][a-z0-9-]{0,63}$/;
/** Strict kebab-case for subagent roles (Forge's guide says kebab-case), 1–64 characters. */
const SUBAGENT_NAME = /^(?=.{1,64}$)[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
/** Triggerfish tool names (its loader checks only "non-empty string"; the host namespaces them). */
const TRIGGERFISH_TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
/** Tool error codes a plugin may return: lower snake case. */
const ERROR_CODE = /^[a-z][a-z0-9_]{0,63}$/;

const RISKS = ["read", "write", "process", "network"];
const MAX_DESCRIPTION_CHARS = 1024;
const MAX_PROMPT_BYTES = 32768;
const MAX_SUBAGENT_INSTRUCTIONS_BYTES = 16384;
const MAX_SUBAGENT_TOOLS = 32;
const MAX_SUBAGENT_STEPS = 8;
const MAX_SUBAGENT_TOOL_CALLS = 20;
const DEFAULT_SUBAGENT_STEPS = 4;
const DEFAULT_SUBAGENT_TOOL_CALLS = 8;
const MAX_COMMAND_OUTPUT_BYTES = 1 << 20;
const MAX_REASON_CHARS = 2000;
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
  return {
    format,
    name,
    entry,
    trust,
    config,
    capabilities: new Set(capabilities),
    reserved: new Set(reserved),
    limits: ObjectFreeze(toolLimits),
  };
}

/** The plugin this engine runs (one per instance), set by a successful `activate`. */
let plugin = null;
/**
 * Set by the first `activate`, successful or not: a failed activation leaves its modules in the
 * loader's cache (and `Deno` defined), so a retry needs a fresh instance.
 */
let attempted = false;

async function importEntry(state) {
  try {
    return await import(state.entry);
  } catch (error) {
    throw new PluginError(`Plugin "${state.name}" could not load its entry "${state.entry}": ${describeThrown(error, 1000)}`);
  }
}

// -----------------------------------------------------------------------------------------
// Forge
// -----------------------------------------------------------------------------------------

function createForgeState(request) {
  return {
    ...request,
    activated: false,
    /** name → `{name, description, risk, schema, jsonSchema, execute, self}` */
    tools: new Map(),
    /** name → `{name, description, execute, self}` */
    commands: new Map(),
    /** name → descriptor entry */
    subagents: new Map(),
    subagentToolNames: new Set(),
    promptHooks: [],
    restrictHooks: [],
    observers: [],
  };
}

function createForgeApi(state) {
  const pluginName = state.name;
  const who = `Plugin "${pluginName}"`;

  function gate(capability) {
    if (!state.capabilities.has(capability)) {
      throw new PluginError(`${who} used undeclared capability "${capability}"`);
    }
    if (state.activated) {
      throw new PluginError(`${who} registered something after activation finished; register everything inside activate().`);
    }
  }

  /** Why `name` cannot be a new tool name, or null. */
  function toolNameTaken(name) {
    if (state.reserved.has(name)) return "it is reserved (a built-in tool or another plugin's tool)";
    if (state.tools.has(name)) return "this plugin already registered a tool with that name";
    if (state.subagentToolNames.has(name)) return "this plugin's subagent already uses it as its tool name";
    return null;
  }

  function registerTool(tool) {
    gate("tools:register");
    if (tool === null || typeof tool !== "object") throw new PluginError(`${who} registered a tool that is not an object.`);
    const { name, description, risk, inputSchema, execute } = tool;
    if (typeof name !== "string" || !TOOL_NAME.test(name)) {
      throw new PluginError(`${who} registered a tool with the invalid name ${JSONStringify(String(name))}: tool names must match ^[a-z][a-z0-9_]{0,63}$.`);
    }
    const taken = toolNameTaken(name);
    if (taken) throw new PluginError(`${who} registered the tool "${name}", but ${taken}.`);
    // Forge 0.2's host accepts only these four; `model` belongs to host-generated subagent tools.
    if (!RISKS.includes(risk)) {
      throw new PluginError(`${who} registered the tool "${name}" with the invalid risk ${JSONStringify(String(risk))}: risk must be "read", "write", "process" or "network".`);
    }
    if (risk === "network" && !state.capabilities.has("network:access")) {
      throw new PluginError(`${who} registered a network tool without declaring capability "network:access"`);
    }
    // Stricter than Forge, which checks only `typeof description === "string"` and so accepts an
    // empty or unbounded description: the description goes to the model verbatim.
    if (!isNonBlankString(description) || description.length > MAX_DESCRIPTION_CHARS) {
      throw new PluginError(`${who} registered the tool "${name}" with an invalid description: it must be a non-blank string of at most ${MAX_DESCRIPTION_CHARS} characters.`);
    }
    if (inputSchema === null || typeof inputSchema !== "object" || typeof inputSchema.safeParse !== "function") {
      throw new PluginError(`${who} registered the tool "${name}" whose inputSchema is not a zod schema (it has no safeParse function).`);
    }
    if (typeof execute !== "function") {
      throw new PluginError(`${who} registered the tool "${name}" whose execute is not a function.`);
    }
    let jsonSchema;
    try {
      jsonSchema = toJSONSchema(inputSchema, { target: "draft-2020-12", io: "input", unrepresentable: "any" });
    } catch (error) {
      throw new PluginError(`${who} registered the tool "${name}" whose inputSchema cannot be converted to JSON Schema: ${describeThrown(error)}`);
    }
    jsonSchema = jsonCopy(jsonSchema);
    if (!isPlainObject(jsonSchema)) {
      throw new PluginError(`${who} registered the tool "${name}" whose inputSchema did not convert to a JSON Schema object.`);
    }
    state.tools.set(name, ObjectFreeze({ name, description, risk, schema: inputSchema, jsonSchema, execute, self: tool }));
  }

  function registerCommand(command) {
    gate("commands:register");
    if (command === null || typeof command !== "object") throw new PluginError(`${who} registered a command that is not an object.`);
    const { name, description, execute } = command;
    if (typeof name !== "string" || !COMMAND_NAME.test(name)) {
      throw new PluginError(`${who} registered a command with the invalid name ${JSONStringify(String(name))}: command names must match ^[a-z][a-z0-9-]{0,63}$.`);
    }
    if (state.commands.has(name)) throw new PluginError(`${who} registered the command "${name}" twice.`);
    if (!isNonBlankString(description) || description.length > MAX_DESCRIPTION_CHARS) {
      throw new PluginError(`${who} registered the command "${name}" with an invalid description: it must be a non-blank string of at most ${MAX_DESCRIPTION_CHARS} characters.`);
    }
    if (typeof execute !== "function") throw new PluginError(`${who} registered the command "${name}" whose execute is not a function.`);
    state.commands.set(name, ObjectFreeze({ name, description, execute, self: command }));
  }

  function registerSubagent(definition) {
    gate("subagents:register");
    if (definition === null || typeof definition !== "object") throw new PluginError(`${who} registered a subagent that is not an object.`);
    const { name, toolName, description, instructions, tools, limits } = definition;
    if (typeof name !== "string" || !SUBAGENT_NAME.test(name)) {
      throw new PluginError(`${who} registered a subagent with the invalid name ${JSONStringify(String(name))}: subagent names are kebab-case (a-z, 0-9, single hyphens), 1–64 characters.`);
    }
    const sub = `${who} registered the subagent "${name}"`;
    if (state.subagents.has(name)) throw new PluginError(`${sub} twice.`);
    if (typeof toolName !== "string" || !TOOL_NAME.test(toolName)) {
      throw new PluginError(`${sub} with the invalid toolName ${JSONStringify(String(toolName))}: it must be lower snake case matching ^[a-z][a-z0-9_]{0,63}$.`);
    }
    const taken = toolNameTaken(toolName);
    if (taken) throw new PluginError(`${sub} with the toolName "${toolName}", but ${taken}.`);
    if (!isNonBlankString(description) || description.length > MAX_DESCRIPTION_CHARS) {
      throw new PluginError(`${sub} with an invalid description: it must be a non-blank string of at most ${MAX_DESCRIPTION_CHARS} characters.`);
    }
    if (!isNonBlankString(instructions)) throw new PluginError(`${sub} without instructions.`);
    if (utf8ByteLength(instructions) > MAX_SUBAGENT_INSTRUCTIONS_BYTES) {
      throw new PluginError(`${sub} with instructions of ${utf8ByteLength(instructions)} bytes; the limit is ${MAX_SUBAGENT_INSTRUCTIONS_BYTES} bytes (16 KiB).`);
    }
    if (!ArrayIsArray(tools) || !tools.every((t) => typeof t === "string" && TOOL_NAME.test(t))) {
      throw new PluginError(`${sub} whose tools are not an array of tool names.`);
    }
    const unique = [...new Set(tools)];
    if (unique.length > MAX_SUBAGENT_TOOLS) {
      throw new PluginError(`${sub} with ${unique.length} tools; a subagent may use at most ${MAX_SUBAGENT_TOOLS}.`);
    }
    // Whether each tool exists is the host's check (it knows the built-ins and other plugins);
    // a subagent tool of this plugin is known here and may never be delegated to.
    const nested = unique.find((t) => state.subagentToolNames.has(t) || t === toolName);
    if (nested) throw new PluginError(`${sub} with the subagent tool "${nested}" among its tools; subagents cannot delegate to subagents.`);
    let maxModelSteps = DEFAULT_SUBAGENT_STEPS;
    let maxToolCalls = DEFAULT_SUBAGENT_TOOL_CALLS;
    if (limits !== undefined) {
      if (!isPlainObject(limits)) throw new PluginError(`${sub} whose limits are not an object.`);
      if (limits.maxModelSteps !== undefined) {
        if (!NumberIsInteger(limits.maxModelSteps) || limits.maxModelSteps < 1 || limits.maxModelSteps > MAX_SUBAGENT_STEPS) {
          throw new PluginError(`${sub} with limits.maxModelSteps ${JSONStringify(limits.maxModelSteps)}; it must be an integer from 1 to ${MAX_SUBAGENT_STEPS}.`);
        }
        maxModelSteps = limits.maxModelSteps;
      }
      if (limits.maxToolCalls !== undefined) {
        if (!NumberIsInteger(limits.maxToolCalls) || limits.maxToolCalls < 1 || limits.maxToolCalls > MAX_SUBAGENT_TOOL_CALLS) {
          throw new PluginError(`${sub} with limits.maxToolCalls ${JSONStringify(limits.maxToolCalls)}; it must be an integer from 1 to ${MAX_SUBAGENT_TOOL_CALLS}.`);
        }
        maxToolCalls = limits.maxToolCalls;
      }
    }
    state.subagentToolNames.add(toolName);
    state.subagents.set(name, ObjectFreeze({
      name, toolName, description, instructions, tools: unique, limits: { maxModelSteps, maxToolCalls },
    }));
  }

  function hookRegistrar(capability, list, what) {
    return function register(hook) {
      gate(capability);
      if (typeof hook !== "function") throw new PluginError(`${who} registered a ${what} that is not a function.`);
      list.push(hook);
    };
  }

  return ObjectFreeze({
    apiVersion: "1",
    z,
    registerTool,
    registerCommand,
    registerSubagent,
    contributePrompt: hookRegistrar("prompt:contribute", state.promptHooks, "prompt contribution"),
    observeRunEvents: hookRegistrar("events:observe", state.observers, "run-event observer"),
    restrictPolicy: hookRegistrar("policy:restrict", state.restrictHooks, "policy hook"),
  });
}

async function activateForge(state) {
  const module = await importEntry(state);
  const activateFunction = module.activate ?? module.default;
  if (typeof activateFunction !== "function") {
    throw new PluginError(`Plugin "${state.name}" must export an activate function (a named export "activate" or a default export).`);
  }
  const api = createForgeApi(state);
  try {
    await activateFunction(api);
  } catch (error) {
    if (error instanceof PluginError) throw error;
    throw new PluginError(`Activation failed for plugin "${state.name}": ${describeThrown(error, 1000)}`);
  }
  state.activated = true;
  return {
    tools: [...state.tools.values()].map((t) => ({
      name: t.name, description: t.description, risk: t.risk, inputSchema: t.jsonSchema,
    })),
    commands: [...state.commands.values()].map((c) => ({ name: c.name, description: c.description })),
    subagents: [...state.subagents.values()].map((s) => ({
      name: s.name, toolName: s.toolName, description: s.description, instructions: s.instructions,
      tools: [...s.tools], limits: { ...s.limits },
    })),
    hooks: {
      prompt: state.promptHooks.length,
      restrict: state.restrictHooks.length,
      observe: state.observers.length,
    },
  };
}

/** The issues of a failed safeParse, as one bounded line. */
function describeIssues(error) {
  try {
    const issues = error?.issues;
    if (ArrayIsArray(issues) && issues.length) {
      return bound(issues.map((issue) => {
        const path = ArrayIsArray(issue.path) && issue.path.length ? issue.path.map(String).join(".") : "(input)";
        return `${path}: ${String(issue.message)}`;
      }).join("; "), 1000);
    }
    return bound(typeof error?.message === "string" ? error.message : "the input does not match the schema", 1000);
  } catch {
    return "the input does not match the schema";
  }
}

/**
 * Checks a Forge ToolResult and returns what goes back to the host. Unknown extra keys are
 * dropped (Forge passed them through, and its own trace reader then rejected the trace).
 */
function normaliseForgeResult(result, toolName, pluginName) {
  const invalid = (why) => failure(
    "plugin_error",
    `The tool "${toolName}" from plugin "${pluginName}" returned an invalid result: ${why}. A tool returns {ok: true, output, truncated: boolean} or {ok: false, error: {code, message, retryable}}.`,
  );
  try {
    if (result === null || typeof result !== "object") return invalid(`got ${kindOf(result)}`);
    const ok = result.ok;
    if (ok === true) {
      if (!("output" in result)) return invalid("`output` is missing");
      const truncated = result.truncated;
      if (typeof truncated !== "boolean") return invalid("`truncated` must be a boolean");
      const output = result.output === undefined ? null : result.output;
      let text;
      try {
        text = JSONStringify(output);
      } catch (error) {
        return invalid(`its output is not JSON-serialisable (${describeThrown(error, 200)})`);
      }
      if (text === undefined) return invalid("its output is not JSON-serialisable");
      return { ok: true, output: JSONParse(text), truncated };
    }
    if (ok === false) {
      const error = result.error;
      if (error === null || typeof error !== "object") return invalid("`error` must be an object");
      const { code, message, retryable } = error;
      if (typeof code !== "string" || !ERROR_CODE.test(code)) return invalid("`error.code` must be a lower_snake_case string");
      if (typeof message !== "string") return invalid("`error.message` must be a string");
      if (typeof retryable !== "boolean") return invalid("`error.retryable` must be a boolean");
      return failure(code, message, retryable);
    }
    return invalid("`ok` must be true or false");
  } catch (error) {
    return invalid(`reading it threw (${describeThrown(error, 200)})`);
  }
}

async function callForge(state, toolName, inputJson) {
  const tool = state.tools.get(toolName);
  if (!tool) return failure("unknown_tool", `Plugin "${state.name}" has no tool "${toolName}".`);
  let input;
  try {
    input = JSONParse(inputJson);
  } catch {
    return failure("invalid_input", `The input for ${toolName} is not valid JSON.`);
  }
  // The host has validated the input against the JSON Schema already; parsing it again applies
  // zod's transforms and defaults (trim, default(…)) that the tool expects.
  let parsed;
  try {
    parsed = typeof tool.schema.safeParseAsync === "function"
      ? await tool.schema.safeParseAsync(input)
      : await tool.schema.safeParse(input);
  } catch (error) {
    return failure("plugin_error", `The input schema of ${toolName} failed: ${describeThrown(error)}`);
  }
  if (parsed === null || typeof parsed !== "object") {
    return failure("plugin_error", `The input schema of ${toolName} returned ${kindOf(parsed)} from safeParse.`);
  }
  if (!parsed.success) return failure("invalid_input", `Invalid input for ${toolName}: ${describeIssues(parsed.error)}`);
  const { controller, release } = cancellation.track();
  cancellation.checkCancelled();
  const context = ObjectFreeze({
    workspace: ObjectFreeze({ root: WORKSPACE, cwd: WORKSPACE }),
    signal: controller.signal,
    limits: state.limits,
  });
  let result;
  try {
    result = await ReflectApply(tool.execute, tool.self, [parsed.data, context]);
  } catch (thrown) {
    if (controller.signal.aborted) return failure("cancelled", `The call to ${toolName} was cancelled.`);
    // Forge's own mapping of a throw, with a bounded description of what was thrown added.
    return failure("io_error", `The tool failed unexpectedly. ${describeThrown(thrown, MAX_THROWN_CHARS)}`, true);
  } finally {
    release();
  }
  return normaliseForgeResult(result, toolName, state.name);
}

/** A fresh, deep-frozen copy of the hook payload for each hook (plugins cannot share state through it). */
function snapshotOf(payloadJson) {
  return () => deepFreeze(JSONParse(payloadJson));
}

async function forgePromptHook(state, payloadJson) {
  const snapshot = snapshotOf(payloadJson);
  const texts = [];
  for (const hook of state.promptHooks) {
    let result;
    try {
      result = await hook(snapshot());
    } catch (error) {
      throw new PluginError(`The prompt contribution of plugin "${state.name}" failed: ${describeThrown(error)}`);
    }
    if (result === undefined || result === null) continue;
    if (typeof result !== "string") {
      throw new PluginError(`The prompt contribution of plugin "${state.name}" returned ${kindOf(result)}; it must return a string or undefined.`);
    }
    if (result.trim() === "") continue;
    const bytes = utf8ByteLength(result);
    if (bytes > MAX_PROMPT_BYTES) {
      throw new PluginError(`The prompt contribution of plugin "${state.name}" is ${bytes} bytes; the limit is ${MAX_PROMPT_BYTES} bytes (UTF-8).`);
    }
    texts.push(result);
  }
  return texts;
}

async function forgeRestrictHook(state, payloadJson) {
  const snapshot = snapshotOf(payloadJson);
  let decision = null;
  for (const hook of state.restrictHooks) {
    let result;
    try {
      result = await hook(snapshot());
    } catch (error) {
      throw new PluginError(`The policy hook of plugin "${state.name}" failed: ${describeThrown(error)}`);
    }
    if (result === undefined) continue;
    let kind;
    let reason;
    try {
      kind = result?.kind;
      reason = result?.reason;
    } catch {
      kind = undefined;
    }
    if ((kind !== "confirm" && kind !== "deny") || !isNonBlankString(reason)) {
      throw new PluginError(`The policy hook of plugin "${state.name}" returned an invalid decision: it must return undefined, {kind: "confirm", reason} or {kind: "deny", reason} with a non-blank reason.`);
    }
    const made = { kind, reason: bound(`${state.name}: ${reason}`, MAX_REASON_CHARS) };
    if (kind === "deny") return made; // deny wins and ends the evaluation
    if (decision === null) decision = made; // confirm only ever replaces an allow
  }
  return decision;
}

async function forgeObserveHook(state, payloadJson) {
  const snapshot = snapshotOf(payloadJson);
  const warnings = [];
  for (const observer of state.observers) {
    try {
      await observer(snapshot());
    } catch {
      warnings.push(`Observer in plugin "${state.name}" failed.`);
    }
  }
  return { warnings };
}

async function forgeCommandHook(state, payload) {
  if (!isPlainObject(payload)) throw new PluginError("The command payload must be an object.");
  const { name, args = [], cwd = WORKSPACE, workspaceRoot = WORKSPACE } = payload;
  const command = state.commands.get(name);
  if (!command) throw new PluginError(`Plugin "${state.name}" has no command ${JSONStringify(String(name))}.`);
  if (!ArrayIsArray(args) || !args.every((a) => typeof a === "string")) {
    throw new PluginError("The command payload's args must be an array of strings.");
  }
  const streams = { stdout: "", stderr: "" };
  const used = { stdout: 0, stderr: 0 };
  const truncated = { stdout: false, stderr: false };
  let open = true;
  const append = (which, value) => {
    if (!open || truncated[which]) return;
    const text = String(value);
    const size = utf8ByteLength(text);
    if (used[which] + size <= MAX_COMMAND_OUTPUT_BYTES) {
      streams[which] += text;
      used[which] += size;
      return;
    }
    const part = cutToBytes(text, MAX_COMMAND_OUTPUT_BYTES - used[which]);
    streams[which] += `${part}\n[output truncated at ${MAX_COMMAND_OUTPUT_BYTES} bytes]\n`;
    truncated[which] = true;
  };
  const { controller, release } = cancellation.track();
  const context = ObjectFreeze({
    cwd: String(cwd),
    workspaceRoot: String(workspaceRoot),
    args: ObjectFreeze([...args]),
    signal: controller.signal,
    write: (text) => append("stdout", text),
    writeError: (text) => append("stderr", text),
  });
  let exitCode = 0;
  try {
    const result = await ReflectApply(command.execute, command.self, [context]);
    if (result === undefined) exitCode = 0;
    else if (NumberIsInteger(result) && result >= 0 && result <= 255) exitCode = result;
    else {
      exitCode = 1;
      append("stderr", `The command "${name}" of plugin "${state.name}" returned ${kindOf(result)}; a command returns nothing or an exit code from 0 to 255.\n`);
    }
  } catch (error) {
    exitCode = 1;
    append("stderr", `The command "${name}" of plugin "${state.name}" failed: ${describeThrown(error)}\n`);
  } finally {
    open = false;
    release();
  }
  return { exitCode, stdout: streams.stdout, stderr: streams.stderr };
}

// -----------------------------------------------------------------------------------------
// Triggerfish
// -----------------------------------------------------------------------------------------

const JSON_TYPES = ["string", "number", "integer", "boolean", "array", "object", "null"];
/** JSON Schema keywords a Triggerfish parameter may carry through (anything else is dropped). */
const PASSED_KEYWORDS = [
  "description", "enum", "const", "default", "format", "pattern", "minLength", "maxLength",
  "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems",
  "maxItems", "uniqueItems", "examples", "title",
];

/**
 * One Triggerfish parameter (`{type, description, required?, enum?, items?, …}`) as JSON
 * Schema: known keywords kept, `type` kept when it names a JSON type, nested `items` and
 * `properties` converted the same way; Triggerfish's boolean `required` is lifted to the parent.
 */
function parameterSchema(definition, depth = 0) {
  const out = {};
  if (!isPlainObject(definition) || depth > 16) return out;
  const type = definition.type;
  if (typeof type === "string" && JSON_TYPES.includes(type)) out.type = type;
  else if (ArrayIsArray(type) && type.length && type.every((t) => JSON_TYPES.includes(t))) out.type = [...type];
  for (const keyword of PASSED_KEYWORDS) {
    if (definition[keyword] !== undefined) {
      const copy = jsonCopy(definition[keyword]);
      if (copy !== undefined) out[keyword] = copy;
    }
  }
  if (isPlainObject(definition.items)) out.items = parameterSchema(definition.items, depth + 1);
  if (isPlainObject(definition.properties)) {
    const nested = parametersSchema(definition.properties, depth + 1, definition.required);
    out.properties = nested.properties;
    if (nested.required) out.required = nested.required;
  }
  return out;
}

/** A flat `parameters` map as a JSON Schema object. Unknown arguments pass (Triggerfish passes them through). */
function parametersSchema(parameters, depth = 0, requiredList = undefined) {
  const properties = {};
  const required = [];
  for (const key of ObjectKeys(parameters)) {
    const definition = parameters[key];
    properties[key] = parameterSchema(definition, depth);
    if (isPlainObject(definition) && definition.required === true) required.push(key);
  }
  if (ArrayIsArray(requiredList)) {
    for (const key of requiredList) if (typeof key === "string" && !required.includes(key)) required.push(key);
  }
  return { properties, required: required.length ? required : undefined };
}

function triggerfishInputSchema(parameters) {
  const { properties, required } = parametersSchema(parameters);
  const schema = { type: "object", properties };
  if (required) schema.required = required;
  schema.additionalProperties = true;
  return schema;
}

/**
 * `globalThis.Deno`, as far as the trust level allows. Trusted: a frozen object with only
 * `hostname()`, `memoryUsage()`, `build` and `version`, each read through the host (which
 * answers only for plugins the user trusts with it). Sandboxed: Triggerfish's proxy, where
 * reading any member throws `Sandbox: access to Deno.<prop> is blocked`. No other Deno member
 * exists in either case.
 */
function installDeno(trust) {
  let deno;
  if (trust === "trusted") {
    const unavailable = (what) => new Error(`Deno.${what} is not available: the host did not provide it`);
    const json = (key, what) => {
      const text = nativeHostInfo(key);
      if (typeof text !== "string") throw unavailable(what);
      return JSONParse(text);
    };
    deno = ObjectFreeze({
      hostname() {
        const name = nativeHostInfo("hostname");
        if (typeof name !== "string") throw unavailable("hostname()");
        return name;
      },
      memoryUsage() {
        return json("memoryUsage", "memoryUsage()");
      },
      get build() {
        return deepFreeze(json("build", "build"));
      },
      get version() {
        return deepFreeze(json("version", "version"));
      },
    });
  } else {
    const blocked = (property) => new Error(`Sandbox: access to Deno.${String(property)} is blocked`);
    deno = new Proxy(ObjectFreeze(Object.create(null)), {
      get(_target, property) { throw blocked(property); },
      set(_target, property) { throw blocked(property); },
      defineProperty(_target, property) { throw blocked(property); },
      deleteProperty(_target, property) { throw blocked(property); },
      has() { return false; },
    });
  }
  ObjectDefineProperty(globalThis, "Deno", { value: deno, writable: false, enumerable: false, configurable: false });
}

function createTriggerfishContext(state) {
  const logAt = (level) => (message, context = undefined) => {
    let text = String(message);
    if (context !== undefined) {
      let shown;
      try {
        shown = JSONStringify(context);
      } catch {
        shown = undefined;
      }
      text += ` ${shown === undefined ? util.inspect(context) : shown}`;
    }
    log(level, bound(text, 16384));
  };
  return ObjectFreeze({
    pluginName: state.name,
    getSessionTaint: () => nativeSessionTaint(),
    escalateTaint: (level) => {
      nativeEscalateTaint(String(level));
    },
    log: ObjectFreeze({ debug: logAt("debug"), info: logAt("info"), warn: logAt("warn"), error: logAt("error") }),
    // A copy of the plugin's config: the plugin may change its copy, nothing else sees it.
    config: jsonCopy(state.config) ?? {},
  });
}

/** Checks the module's exports as Triggerfish's loader does (plus names that work as tool names). */
function checkTriggerfishExports(state, module) {
  const who = `Plugin "${state.name}"`;
  const { manifest, toolDefinitions, createExecutor, systemPrompt } = module;
  if (!isPlainObject(manifest)) throw new PluginError(`${who} must export a manifest object.`);
  if (!ArrayIsArray(toolDefinitions)) throw new PluginError(`${who} must export toolDefinitions as an array.`);
  const names = new Set();
  toolDefinitions.forEach((tool, index) => {
    const at = `${who}: toolDefinitions[${index}]`;
    if (!isPlainObject(tool)) throw new PluginError(`${at} must be an object.`);
    if (!isNonBlankString(tool.name)) throw new PluginError(`${at} must have a non-empty string name.`);
    if (!TRIGGERFISH_TOOL_NAME.test(tool.name)) {
      throw new PluginError(`${at} has the name ${JSONStringify(tool.name)}; tool names must match ^[A-Za-z][A-Za-z0-9_-]{0,63}$.`);
    }
    if (names.has(tool.name)) throw new PluginError(`${at} repeats the tool name "${tool.name}".`);
    names.add(tool.name);
    if (typeof tool.description !== "string") throw new PluginError(`${at} ("${tool.name}") must have a string description.`);
    if (tool.description.length > MAX_DESCRIPTION_CHARS) {
      throw new PluginError(`${at} ("${tool.name}") has a description longer than ${MAX_DESCRIPTION_CHARS} characters.`);
    }
    if (tool.parameters === null || typeof tool.parameters !== "object") {
      throw new PluginError(`${at} ("${tool.name}") must have a parameters object.`);
    }
  });
  if (typeof createExecutor !== "function") throw new PluginError(`${who} must export createExecutor as a function.`);
  if (systemPrompt !== undefined && typeof systemPrompt !== "string") {
    throw new PluginError(`${who} exports a systemPrompt that is not a string.`);
  }
}

/** The module's systemPrompt as it is now (an `export let` may change it; Triggerfish re-reads it). */
function currentSystemPrompt(state) {
  const text = state.module.systemPrompt;
  if (typeof text !== "string" || text.trim() === "") return undefined;
  const bytes = utf8ByteLength(text);
  if (bytes > MAX_PROMPT_BYTES) {
    throw new PluginError(`The systemPrompt of plugin "${state.name}" is ${bytes} bytes; the limit is ${MAX_PROMPT_BYTES} bytes (UTF-8).`);
  }
  return text;
}

async function activateTriggerfish(state) {
  installDeno(state.trust);
  const module = await importEntry(state);
  checkTriggerfishExports(state, module);
  const manifest = jsonCopy(module.manifest);
  if (!isPlainObject(manifest)) throw new PluginError(`Plugin "${state.name}" exports a manifest that is not JSON data.`);
  const endpoints = manifest.declaredEndpoints;
  // Triggerfish has no per-tool risk. A plugin that declares endpoints talks to the network, so
  // all its tools are "network" (confirmed by default); otherwise "read".
  const risk = ArrayIsArray(endpoints) && endpoints.length > 0 ? "network" : "read";
  const tools = module.toolDefinitions.map((tool) => ({
    name: tool.name,
    description: tool.description,
    risk,
    inputSchema: triggerfishInputSchema(tool.parameters),
  }));
  state.module = module;
  const systemPrompt = module.systemPrompt;
  currentSystemPrompt(state); // bounded like every prompt contribution
  const context = createTriggerfishContext(state);
  let executor;
  try {
    executor = await module.createExecutor(context);
  } catch (error) {
    throw new PluginError(`Plugin "${state.name}" initialization failed: ${describeThrown(error, 1000)}`);
  }
  if (typeof executor !== "function") {
    throw new PluginError(`Plugin "${state.name}": createExecutor returned ${kindOf(executor)}; it must return a function (name, input) => Promise<string | null>.`);
  }
  state.executor = executor;
  state.activated = true;
  const descriptor = {
    tools,
    commands: [],
    subagents: [],
    hooks: { prompt: systemPrompt === undefined ? 0 : 1, restrict: 0, observe: 0 },
    manifest,
  };
  if (systemPrompt !== undefined) descriptor.systemPrompt = systemPrompt;
  return descriptor;
}

/** The message of a thrown value as Triggerfish's sandboxed wrapper shows it. */
function thrownMessage(thrown) {
  try {
    if (thrown instanceof Error || (thrown !== null && typeof thrown === "object" && typeof thrown.message === "string")) {
      return bound(String(thrown.message).replace(/[\u0000-\u001f\u007f]+/g, " ").trim(), MAX_THROWN_CHARS);
    }
  } catch {
    // fall through to the generic description
  }
  return describeThrown(thrown, MAX_THROWN_CHARS);
}

async function callTriggerfish(state, toolName, inputJson) {
  let input;
  try {
    input = JSONParse(inputJson);
  } catch {
    return failure("invalid_input", `The input for ${toolName} is not valid JSON.`);
  }
  if (!isPlainObject(input)) return failure("invalid_input", `The input for ${toolName} must be a JSON object.`);
  let result;
  try {
    result = await ReflectApply(state.executor, undefined, [toolName, input]);
  } catch (thrown) {
    // Triggerfish turns a throw into `Plugin <name> error: <message>` for sandboxed plugins and
    // lets it escape for trusted ones; here it is a tool error for both.
    return failure("plugin_error", `Plugin ${state.name} error: ${thrownMessage(thrown)}`);
  }
  if (typeof result === "string") return { ok: true, output: result, truncated: false };
  if (result === null) return failure("unknown_tool", `Plugin "${state.name}" does not handle the tool "${toolName}".`);
  return failure("plugin_error", `Plugin ${state.name} error: the executor returned ${kindOf(result)} for ${toolName}; it must return a string, or null for a tool it does not know.`);
}

// -----------------------------------------------------------------------------------------
// __engine
// -----------------------------------------------------------------------------------------

async function activate(requestJson) {
  if (attempted) {
    throw new PluginError(plugin !== null
      ? "This engine instance has already activated a plugin."
      : "This engine instance already tried to activate a plugin and failed; use a new instance.");
  }
  attempted = true;
  const request = parseRequest(requestJson);
  const state = request.format === "forge" ? createForgeState(request) : { ...request, activated: false };
  const descriptor = request.format === "forge" ? await activateForge(state) : await activateTriggerfish(state);
  plugin = state;
  return JSONStringify(descriptor);
}

async function call(toolName, inputJson) {
  let result;
  try {
    if (plugin === null) result = failure("plugin_error", "The plugin has not been activated.");
    else if (plugin.format === "forge") result = await callForge(plugin, String(toolName), String(inputJson));
    else result = await callTriggerfish(plugin, String(toolName), String(inputJson));
  } catch (error) {
    result = failure("plugin_error", `The engine failed while calling ${String(toolName)}: ${describeThrown(error)}`);
  }
  try {
    return JSONStringify(result);
  } catch (error) {
    return JSONStringify(failure("plugin_error", `The result of ${String(toolName)} could not be serialised: ${describeThrown(error)}`));
  }
}

async function hook(op, payloadJson) {
  if (plugin === null) throw new PluginError("The plugin has not been activated.");
  const text = String(payloadJson);
  let payload;
  try {
    payload = JSONParse(text);
  } catch {
    throw new PluginError(`The payload of the ${String(op)} hook is not valid JSON.`);
  }
  const state = plugin;
  let result;
  switch (op) {
    case "prompt":
      if (state.format === "forge") result = await forgePromptHook(state, text);
      else {
        const prompt = currentSystemPrompt(state);
        result = prompt === undefined ? [] : [prompt];
      }
      break;
    case "restrict":
      result = state.format === "forge" ? await forgeRestrictHook(state, text) : null;
      break;
    case "observe":
      result = state.format === "forge" ? await forgeObserveHook(state, text) : { warnings: [] };
      break;
    case "command":
      if (state.format !== "forge") throw new PluginError(`Plugin "${state.name}" has no commands.`);
      result = await forgeCommandHook(state, payload);
      break;
    default:
      throw new PluginError(`Unknown hook operation ${JSONStringify(String(op))}.`);
  }
  return JSONStringify(result);
}

/** Aborts the signal of every running call (the core may call this when it sees cancellation). */
function cancel(reason = undefined) {
  cancellation.cancelAll(reason === undefined
    ? new web.DOMException("The call was cancelled or ran past its deadline", "AbortError")
    : reason);
}

ObjectDefineProperty(globalThis, "__engine", {
  value: ObjectFreeze({
    activate,
    call,
    hook,
    nextTimer: timers.nextTimer,
    runTimers: timers.runTimers,
    cancel,
  }),
  writable: false,
  enumerable: false,
  configurable: true,
});
