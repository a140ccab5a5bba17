// Bosun JS engine runtime: Forge plugins. The frozen `api` with Forge's rules, checked at
// registration time; tool calls through the tool's zod schema; the prompt, restrict, observe and
// command hooks. Part of `bosun:runtime` (see shared.js).

const toJSONSchema = z.toJSONSchema;

/** Where the workspace is mounted in the sandbox (the ToolContext's root and cwd). */
const WORKSPACE = "/workspace";
/** The workspace as every tool call's context shows it: frozen, so one object serves all. */
const CONTEXT_WORKSPACE = ObjectFreeze({ root: WORKSPACE, cwd: WORKSPACE });

/** Forge's name rules. */
const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const COMMAND_NAME = /^[a-z][a-z0-9-]{0,63}$/;
/** Strict kebab-case for subagent roles (Forge's guide says kebab-case), 1–64 characters. */
const SUBAGENT_NAME = /^(?=.{1,64}$)[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
/** Tool error codes a plugin may return: lower snake case. */
const ERROR_CODE = /^[a-z][a-z0-9_]{0,63}$/;

const RISKS = ["read", "write", "process", "network"];
const MAX_SUBAGENT_INSTRUCTIONS_BYTES = 16384;
const MAX_SUBAGENT_TOOLS = 32;
const MAX_SUBAGENT_STEPS = 8;
const MAX_SUBAGENT_TOOL_CALLS = 20;
const DEFAULT_SUBAGENT_STEPS = 4;
const DEFAULT_SUBAGENT_TOOL_CALLS = 8;
const MAX_COMMAND_OUTPUT_BYTES = 1 << 20;
const MAX_REASON_CHARS = 2000;

function createForgeState(request) {
  return {
    ...request,
    activated: false,
    /** name → `{name, description, risk, schema, jsonSchema, execute, self}` */
    tools: new Map(),
    /** Tools whose input schema has async parts: parsed with `safeParseAsync` only. */
    asyncInputs: new Set(),
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
  let activateFunction = module.activate ?? module.default;
  // A CommonJS entry's `module.exports` is its default export; Node also offers the object's
  // `activate` as a named export, so `module.exports = { activate }` loads like the ES form.
  const exported = module.default;
  if (typeof activateFunction !== "function" && exported !== null && typeof exported === "object"
    && typeof exported.activate === "function"
    && (state.entry.endsWith(".cjs") || state.commonjs.has(state.entry))) {
    activateFunction = exported.activate;
  }
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
      // Serialised once: `call` returns this answer as it is.
      return successAnswer(text, truncated);
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

/**
 * The tool's input through its schema: the result, or a promise of it. zod's synchronous parse
 * gives what its asynchronous parse gives for a schema without async parts, at a fraction of the
 * cost in this engine (no promise per check), and its result is used as it is, without a turn
 * of the job queue; on the first async part it throws, and from then on the tool's input is
 * parsed asynchronously. Only that first call runs the schema's checks before its async part
 * twice, as zod's own Standard Schema `validate` does. A schema object with only `safeParse` is
 * awaited.
 */
function parseToolInput(state, tool, input) {
  const schema = tool.schema;
  if (typeof schema.safeParseAsync !== "function") return awaited(schema.safeParse(input));
  if (!state.asyncInputs.has(tool.name)) {
    let result;
    try {
      result = schema.safeParse(input);
    } catch {
      result = undefined;
    }
    if (result !== null && typeof result === "object") {
      if (typeof result.then !== "function") return result;
      state.asyncInputs.add(tool.name);
      return awaited(result);
    }
    // It threw (zod's async error, or a check that throws again below) or gave no result.
    state.asyncInputs.add(tool.name);
  }
  return schema.safeParseAsync(input);
}

/** A promise of `value` settled (a thenable's result, or the value). */
async function awaited(value) {
  return await value;
}

/** Whether `value` must be awaited: a promise or another thenable. */
function isThenable(value) {
  return value !== null && (typeof value === "object" || typeof value === "function")
    && typeof value.then === "function";
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
    parsed = parseToolInput(state, tool, input);
    if (isThenable(parsed)) parsed = await parsed;
  } catch (error) {
    return failure("plugin_error", `The input schema of ${toolName} failed: ${describeThrown(error)}`);
  }
  if (parsed === null || typeof parsed !== "object") {
    return failure("plugin_error", `The input schema of ${toolName} returned ${kindOf(parsed)} from safeParse.`);
  }
  if (!parsed.success) return failure("invalid_input", `Invalid input for ${toolName}: ${describeIssues(parsed.error)}`);
  const tracked = cancellation.track();
  cancellation.checkCancelled();
  const context = ObjectFreeze({
    workspace: CONTEXT_WORKSPACE,
    get signal() {
      return tracked.signal;
    },
    limits: state.limits,
  });
  let result;
  try {
    result = await ReflectApply(tool.execute, tool.self, [parsed.data, context]);
  } catch (thrown) {
    if (tracked.aborted) return failure("cancelled", `The call to ${toolName} was cancelled.`);
    // Forge's own mapping of a throw, with a bounded description of what was thrown added.
    return failure("io_error", `The tool failed unexpectedly. ${describeThrown(thrown, MAX_THROWN_CHARS)}`, true);
  } finally {
    tracked.release();
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
  const tracked = cancellation.track();
  const context = ObjectFreeze({
    cwd: String(cwd),
    workspaceRoot: String(workspaceRoot),
    args: ObjectFreeze([...args]),
    signal: tracked.signal,
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
    tracked.release();
  }
  return { exitCode, stdout: streams.stdout, stderr: streams.stderr };
}
