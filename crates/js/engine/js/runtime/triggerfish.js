// Bosun JS engine runtime: Triggerfish plugins. The exports checked as Triggerfish's loader
// does, `parameters` maps as JSON Schema, the PluginContext, `Deno` as the trust level allows,
// and executor calls. Part of `bosun:runtime` (see shared.js).

const nativeHostInfo = native.hostInfo;
const nativeSessionTaint = native.sessionTaint;
const nativeEscalateTaint = native.escalateTaint;

/** Triggerfish tool names (its loader checks only "non-empty string"; the host namespaces them). */
const TRIGGERFISH_TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

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
function installDeno(trust, env) {
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
      // Only the host variables the user passed to this plugin ([plugins.<name>] env).
      env: ObjectFreeze({
        get: (name) => env[String(name)],
        has: (name) => ObjectHasOwnEnv(env, String(name)),
        toObject: () => ({ ...env }),
        set() { throw new Error("Deno.env.set is not available: the plugin's environment is what the user gave it"); },
        delete() { throw new Error("Deno.env.delete is not available: the plugin's environment is what the user gave it"); },
      }),
      Command: denoCommand(env),
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

const ObjectHasOwnEnv = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

/** Bytes from a child's stream, for `output()` and `spawn()`'s readers. */
function chunkQueue(stream) {
  const chunks = [];
  const waiting = [];
  let done = false;
  stream?.on("data", (chunk) => {
    const bytes = new Uint8Array(chunk);
    const next = waiting.shift();
    if (next) next({ value: bytes, done: false });
    else chunks.push(bytes);
  });
  stream?.on("end", () => {
    done = true;
    for (const next of waiting.splice(0)) next({ value: undefined, done: true });
  });
  const read = () => {
    if (chunks.length > 0) return Promise.resolve({ value: chunks.shift(), done: false });
    if (done || !stream) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => waiting.push(resolve));
  };
  const all = async () => {
    const parts = [];
    for (;;) {
      const { value, done: finished } = await read();
      if (finished) break;
      parts.push(value);
    }
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) { out.set(part, at); at += part.length; }
    return out;
  };
  return ObjectFreeze({
    getReader: () => ObjectFreeze({ read, releaseLock() {}, cancel: async () => {} }),
    [Symbol.asyncIterator]: () => ({ next: read }),
    all,
  });
}

/**
 * `Deno.Command` for trusted Triggerfish plugins: `output()` and `spawn()`, started through
 * the host exactly as `node:child_process` starts a process (policy, a person, the OS sandbox).
 */
function denoCommand(env) {
  return class Command {
    #program;
    #options;

    constructor(command, options = {}) {
      this.#program = command instanceof URL ? command.pathname : String(command);
      this.#options = options ?? {};
    }

    #start() {
      const options = this.#options;
      const childEnv = options.clearEnv ? { ...(options.env ?? {}) } : { ...env, ...(options.env ?? {}) };
      const args = ArrayIsArray(options.args) ? options.args.map((a) => String(a)) : [];
      const cwd = options.cwd instanceof URL ? options.cwd.pathname : options.cwd;
      return spawnChild(this.#program, args, { cwd, env: childEnv, signal: options.signal });
    }

    output() {
      const child = this.#start();
      const stdout = chunkQueue(child.stdout);
      const stderr = chunkQueue(child.stderr);
      child.stdin?.end();
      return new Promise((resolve, reject) => {
        child.once("error", (error) => reject(new Error(`Deno.Command: ${error.message}`)));
        child.once("close", async (code, signal) => {
          resolve({ code: code ?? 1, success: code === 0, signal, stdout: await stdout.all(), stderr: await stderr.all() });
        });
      });
    }

    outputSync() {
      throw new Error("Deno.Command.outputSync is not available: a synchronous child would stop the plugin's event loop; use output()");
    }

    spawn() {
      const child = this.#start();
      const stdout = chunkQueue(child.stdout);
      const stderr = chunkQueue(child.stderr);
      const status = new Promise((resolve, reject) => {
        child.once("error", (error) => reject(new Error(`Deno.Command: ${error.message}`)));
        child.once("close", (code, signal) => resolve({ code: code ?? 1, success: code === 0, signal }));
      });
      return ObjectFreeze({
        get pid() { return child.pid; },
        status,
        stdout,
        stderr,
        stdin: ObjectFreeze({
          getWriter: () => ObjectFreeze({
            write: async (bytes) => { child.stdin?.write(bytes); },
            close: async () => { child.stdin?.end(); },
            releaseLock() {},
          }),
        }),
        kill: (signal = "SIGTERM") => { child.kill(signal); },
        output: async () => {
          const { code, success, signal } = await status;
          return { code, success, signal, stdout: await stdout.all(), stderr: await stderr.all() };
        },
        ref() {},
        unref() {},
      });
    }
  };
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
  installDeno(state.trust, state.env);
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
