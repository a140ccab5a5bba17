// Bosun JS engine runtime: `globalThis.__engine`, the entry points the core calls, which pick
// the plugin's format and dispatch to forge.js or triggerfish.js. Part of `bosun:runtime` (see
// shared.js).

/** The plugin this engine runs (one per instance), set by a successful `activate`. */
let plugin = null;
/**
 * Set by the first `activate`, successful or not: a failed activation leaves its modules in the
 * loader's cache (and `Deno` defined), so a retry needs a fresh instance.
 */
let attempted = false;

async function activate(requestJson) {
  if (attempted) {
    throw new PluginError(plugin !== null
      ? "This engine instance has already activated a plugin."
      : "This engine instance already tried to activate a plugin and failed; use a new instance.");
  }
  attempted = true;
  const request = parseRequest(requestJson);
  // The plugin's own files, the bytes the trust review hashed, for `node:fs` to read.
  pluginDir.setFiles(request.directory);
  // Before any of the plugin's code is evaluated: only a manifest that asked for it, shown to
  // the person who trusted the plugin, lets it build code from strings.
  if (request.codeFromStrings === true) internal.codeFromStrings.allow();
  // The host variables the user passed to this plugin ([plugins.<name>] env), and no others.
  Object.assign(internal.web.process.env, request.env);
  const state = request.format === "forge" ? createForgeState(request) : { ...request, activated: false };
  const descriptor = request.format === "forge" ? await activateForge(state) : await activateTriggerfish(state);
  plugin = state;
  return JSONStringify(descriptor);
}

async function call(toolName, inputJson) {
  // The processes of an earlier call ended with it.
  internal.io.reset();
  let result;
  try {
    if (plugin === null) result = failure("plugin_error", "The plugin has not been activated.");
    else if (plugin.format === "forge") result = await callForge(plugin, String(toolName), String(inputJson));
    else result = await callTriggerfish(plugin, String(toolName), String(inputJson));
  } catch (error) {
    result = failure("plugin_error", `The engine failed while calling ${String(toolName)}: ${describeThrown(error)}`);
  }
  // A Forge tool's success is already its answer (`successAnswer`).
  if (typeof result === "string") return result;
  try {
    return JSONStringify(result);
  } catch (error) {
    return JSONStringify(failure("plugin_error", `The result of ${String(toolName)} could not be serialised: ${describeThrown(error)}`));
  }
}

async function hook(op, payloadJson) {
  internal.io.reset();
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
    ioPending: internal.io.pending,
    pollIo: internal.io.poll,
    cancel,
  }),
  writable: false,
  enumerable: false,
  configurable: true,
});
