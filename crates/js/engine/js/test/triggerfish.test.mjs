// Triggerfish plugins through the runtime: exports, parameters → JSON Schema, the context,
// executor results and throws, and Deno by trust level.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createEngine, loadFixture, triggerfishRequest, forgeRequest, reply } from "./harness.mjs";

async function inline(source, overrides = {}, engineOptions = {}) {
  const engine = await createEngine({ files: { "mod.ts": source }, ...engineOptions });
  return { engine, activation: engine.activate(triggerfishRequest(overrides)) };
}

async function activationError(source, overrides = {}) {
  const { activation } = await inline(source, overrides);
  try {
    await activation;
  } catch (error) {
    return error;
  }
  assert.fail("activation should have failed");
}

const MINIMAL = `
  export const manifest = { name: "test-plugin", version: "1.0.0", description: "d", classification: "PUBLIC", trust: "sandboxed", declaredEndpoints: [] };
  export const toolDefinitions = [];
  export function createExecutor() { return async () => null; }
`;

test("weather (the guide's example): descriptor, a call through fetch, logs, null and throws", async () => {
  const engine = await createEngine({
    files: loadFixture("weather"),
    http: ({ url }) => reply(200, { headers: { "content-type": "application/json" }, body: JSON.stringify({ url, forecast: "sun" }) }),
  });
  const descriptor = await engine.activate(triggerfishRequest({ name: "weather" }));
  assert.deepEqual(descriptor.manifest, {
    name: "weather", version: "1.0.0", description: "Weather forecasts", classification: "PUBLIC",
    trust: "sandboxed", declaredEndpoints: ["https://api.weather.example"],
  });
  assert.equal(descriptor.systemPrompt, "Use `forecast` to get the weather for any city.");
  assert.deepEqual(descriptor.hooks, { prompt: 1, restrict: 0, observe: 0 });
  assert.deepEqual(descriptor.commands, []);
  assert.deepEqual(descriptor.subagents, []);
  assert.deepEqual(descriptor.tools, [
    {
      name: "forecast",
      description: "Get the weather forecast for a city.",
      risk: "network",
      inputSchema: {
        type: "object",
        properties: {
          city: { type: "string", description: "City name" },
          days: { type: "integer", description: "How many days" },
          units: { type: "string", description: "Units", enum: ["metric", "imperial"] },
        },
        required: ["city"],
        additionalProperties: true,
      },
    },
    {
      name: "alerts",
      description: "Current weather alerts.",
      risk: "network",
      inputSchema: { type: "object", properties: {}, additionalProperties: true },
    },
  ]);

  const result = await engine.call("forecast", { city: "Göteborg" });
  assert.deepEqual(result, {
    ok: true,
    output: JSON.stringify({ url: "https://api.weather.example/v1/forecast?city=G%C3%B6teborg", forecast: "sun" }),
    truncated: false,
  });
  assert.deepEqual(engine.logs, [{ level: "info", message: 'Fetching forecast {"city":"Göteborg"}' }]);
  assert.deepEqual(await engine.call("unknown", {}), {
    ok: false, error: { code: "unknown_tool", message: 'Plugin "weather" does not handle the tool "unknown".', retryable: false },
  });
  assert.deepEqual(await engine.call("alerts", {}), {
    ok: false, error: { code: "plugin_error", message: "Plugin weather error: no alert service for weather", retryable: false },
  });
  assert.equal((await engine.call("forecast", "[1]")).error.code, "invalid_input");
  assert.deepEqual(await engine.hook("prompt", {}), ["Use `forecast` to get the weather for any city."]);
  assert.equal(await engine.hook("restrict", { tool: { name: "forecast", risk: "network" }, call: {}, input: {} }), null);
  assert.deepEqual(await engine.hook("observe", { type: "run.started" }), { warnings: [] });
  await assert.rejects(engine.hook("command", { name: "x", args: [] }), { message: /has no commands/ });
});

test("no declared endpoints: tools are read risk; parameters convert recursively", async () => {
  const { activation } = await inline(`
    export const manifest = { name: "test-plugin", version: "1", description: "d", classification: "INTERNAL", trust: "sandboxed", declaredEndpoints: [] };
    export const toolDefinitions = [{
      name: "search_notes", description: "", parameters: {
        query: { type: "string", required: true, minLength: 1, description: "What to find" },
        tags: { type: "array", items: { type: "string", required: true, bogus: 1 } },
        filter: { type: "object", properties: { from: { type: "string", required: true }, to: { type: "string" } } },
        anything: { description: "Any value" },
        weird: { type: "date", required: true },
        notAnObject: "string",
      },
    }];
    export function createExecutor() { return async () => "ok"; }
  `);
  const descriptor = await activation;
  assert.equal(descriptor.tools[0].risk, "read");
  assert.equal(descriptor.tools[0].description, "");
  assert.equal(descriptor.systemPrompt, undefined);
  assert.equal(descriptor.hooks.prompt, 0);
  assert.deepEqual(descriptor.tools[0].inputSchema, {
    type: "object",
    properties: {
      query: { type: "string", description: "What to find", minLength: 1 },
      tags: { type: "array", items: { type: "string" } },
      filter: { type: "object", properties: { from: { type: "string" }, to: { type: "string" } }, required: ["from"] },
      anything: { description: "Any value" },
      weird: {},
      notAnObject: {},
    },
    required: ["query", "weird"],
    additionalProperties: true,
  });
});

test("exports are checked as Triggerfish's loader does", async () => {
  const manifest = `export const manifest = { name: "test-plugin", version: "1", description: "d", classification: "PUBLIC", trust: "sandboxed", declaredEndpoints: [] };`;
  const executor = `export function createExecutor() { return async () => null; }`;
  const cases = [
    [`export const toolDefinitions = []; ${executor}`, /must export a manifest object/],
    [`export const manifest = [1]; export const toolDefinitions = []; ${executor}`, /must export a manifest object/],
    [`${manifest} export const toolDefinitions = {}; ${executor}`, /must export toolDefinitions as an array/],
    [`${manifest} export const toolDefinitions = [null]; ${executor}`, /toolDefinitions\[0\] must be an object/],
    [`${manifest} export const toolDefinitions = [{ description: "", parameters: {} }]; ${executor}`, /toolDefinitions\[0\] must have a non-empty string name/],
    [`${manifest} export const toolDefinitions = [{ name: "a b", description: "", parameters: {} }]; ${executor}`, /tool names must match/],
    [`${manifest} export const toolDefinitions = [{ name: "a", parameters: {} }]; ${executor}`, /\("a"\) must have a string description/],
    [`${manifest} export const toolDefinitions = [{ name: "a", description: "", parameters: null }]; ${executor}`, /\("a"\) must have a parameters object/],
    [`${manifest} export const toolDefinitions = [{ name: "a", description: "", parameters: {} }, { name: "a", description: "", parameters: {} }]; ${executor}`, /repeats the tool name "a"/],
    [`${manifest} export const toolDefinitions = [];`, /must export createExecutor as a function/],
    [`${manifest} export const toolDefinitions = []; ${executor} export const systemPrompt = 42;`, /exports a systemPrompt that is not a string/],
    [`${manifest} export const toolDefinitions = []; export function createExecutor() { throw new Error("no key configured"); }`, /^Plugin "test-plugin" initialization failed: Error: no key configured \(at mod\.ts:1:\d+\)$/],
    [`${manifest} export const toolDefinitions = []; export async function createExecutor() { return "not a function"; }`, /createExecutor returned a string; it must return a function/],
    [`${manifest} export const toolDefinitions = []; ${executor} throw new Error("top-level");`, /could not load its entry "mod.ts": Error: top-level/],
  ];
  for (const [source, expected] of cases) {
    const error = await activationError(source);
    assert.match(error.message, expected, source.slice(-120));
  }
});

test("the context: name, taint, escalation, scoped log, a private copy of the config", async () => {
  const { engine, activation } = await inline(`
    export const manifest = { name: "test-plugin", version: "1", description: "d", classification: "PUBLIC", trust: "sandboxed", declaredEndpoints: [] };
    export const toolDefinitions = [{ name: "ctx", description: "", parameters: {} }, { name: "raise", description: "", parameters: { level: { type: "string" } } }];
    let captured;
    export async function createExecutor(context) {
      captured = context;
      context.config.apiKey = "changed by the plugin";
      return async (name, input) => {
        if (name === "ctx") {
          context.log.debug("debugging");
          context.log.warn("careful", { n: 1 });
          context.log.error("bad", 5);
          return JSON.stringify({ name: context.pluginName, taint: context.getSessionTaint(), config: context.config,
            frozen: Object.isFrozen(context), logKeys: Object.keys(context.log).sort() });
        }
        if (name === "raise") { context.escalateTaint(input.level); return context.getSessionTaint(); }
        return null;
      };
    }
  `, { config: { apiKey: "secret", region: "eu" } });
  await activation;
  const ctx = JSON.parse((await engine.call("ctx", {})).output);
  assert.deepEqual(ctx, {
    name: "test-plugin", taint: "PUBLIC", config: { apiKey: "changed by the plugin", region: "eu" },
    frozen: true, logKeys: ["debug", "error", "info", "warn"],
  });
  assert.deepEqual(engine.logs, [
    { level: "debug", message: "debugging" },
    { level: "warn", message: 'careful {"n":1}' },
    { level: "error", message: "bad 5" },
  ]);
  assert.deepEqual(await engine.call("raise", { level: "CONFIDENTIAL" }), { ok: true, output: "CONFIDENTIAL", truncated: false });
  assert.deepEqual(await engine.call("raise", { level: "PUBLIC" }), { ok: true, output: "CONFIDENTIAL", truncated: false });
  assert.equal(engine.host.taint, "CONFIDENTIAL");
  const bad = await engine.call("raise", { level: "BOGUS" });
  assert.deepEqual(bad, { ok: false, error: { code: "plugin_error", message: 'Plugin test-plugin error: unknown classification "BOGUS"', retryable: false } });
});

test("executor results: strings pass, null is unknown_tool, anything else and throws are plugin_error", async () => {
  const { engine, activation } = await inline(`
    export const manifest = { name: "test-plugin", version: "1", description: "d", classification: "PUBLIC", trust: "trusted", declaredEndpoints: [] };
    export const toolDefinitions = [];
    export function createExecutor() {
      return async (name) => {
        switch (name) {
          case "text": return "plain";
          case "empty": return "";
          case "object": return { a: 1 };
          case "undefined": return undefined;
          case "number": return 7;
          case "throw42": throw 42;
          case "throwError": throw new TypeError("line one\\nline two");
          case "throwLong": throw new Error("y".repeat(3000));
          default: return null;
        }
      };
    }
  `, { trust: "trusted" });
  await activation;
  assert.deepEqual(await engine.call("text", {}), { ok: true, output: "plain", truncated: false });
  assert.deepEqual(await engine.call("empty", {}), { ok: true, output: "", truncated: false });
  assert.equal((await engine.call("other", {})).error.code, "unknown_tool");
  for (const [name, kind] of [["object", "an object"], ["undefined", "undefined"], ["number", "a number (7)"]]) {
    const result = await engine.call(name, {});
    assert.equal(result.error.code, "plugin_error");
    assert.equal(result.error.message, `Plugin test-plugin error: the executor returned ${kind} for ${name}; it must return a string, or null for a tool it does not know.`);
  }
  // Trusted or not, a throw never escapes: it is a tool error with a bounded message.
  assert.equal((await engine.call("throw42", {})).error.message, "Plugin test-plugin error: Non-Error value thrown: 42");
  assert.equal((await engine.call("throwError", {})).error.message, "Plugin test-plugin error: line one line two");
  const long = await engine.call("throwLong", {});
  assert.ok(long.error.message.length < 600);
});

test("sandboxed: any Deno access throws Triggerfish's sandbox error; nothing else exists", async () => {
  const { engine, activation } = await inline(`
    export const manifest = { name: "test-plugin", version: "1", description: "d", classification: "PUBLIC", trust: "sandboxed", declaredEndpoints: [] };
    export const toolDefinitions = [{ name: "probe", description: "", parameters: {} }];
    export function createExecutor() {
      return async (name, input) => {
        if (input.op === "hostname") return String(Deno.hostname());
        if (input.op === "optional") return String(globalThis.Deno?.hostname?.());
        if (input.op === "env") return Deno.env.get("HOME");
        if (input.op === "typeof") return typeof Deno + ":" + ("env" in Deno) + ":" + Object.keys(Deno).length;
        if (input.op === "assign") { Deno.env = {}; return "assigned"; }
        if (input.op === "replace") { globalThis.Deno = {}; return "replaced"; }
        return null;
      };
    }
  `);
  await activation;
  const message = async (op) => (await engine.call("probe", { op })).error?.message ?? (await engine.call("probe", { op })).output;
  assert.equal(await message("hostname"), "Plugin test-plugin error: Sandbox: access to Deno.hostname is blocked");
  assert.equal(await message("optional"), "Plugin test-plugin error: Sandbox: access to Deno.hostname is blocked");
  assert.equal(await message("env"), "Plugin test-plugin error: Sandbox: access to Deno.env is blocked");
  assert.equal(await message("typeof"), "object:false:0");
  assert.equal(await message("assign"), "Plugin test-plugin error: Sandbox: access to Deno.env is blocked");
  assert.match(await message("replace"), /^Plugin test-plugin error: Cannot assign to read only property 'Deno'/);
});

test("trusted: Deno has hostname, memoryUsage, build and version read through the host, the env the user passed and Command", async () => {
  const engine = await createEngine({
    files: loadFixture("system-facts"),
    hostInfo: {
      hostname: "build-box",
      memoryUsage: '{"rss":100,"heapTotal":100,"heapUsed":64,"external":0}',
      build: '{"target":"x86_64-linux","arch":"x86_64","os":"linux"}',
      version: '{"bosun":"0.1.0","engine":"quickjs-ng"}',
    },
    taint: "INTERNAL",
  });
  const descriptor = await engine.activate(triggerfishRequest({ name: "system-facts", trust: "trusted" }));
  assert.equal(descriptor.tools[0].risk, "read");
  assert.deepEqual(await engine.hook("prompt", {}), ["Use system_facts for questions about the host."]);
  const facts = JSON.parse((await engine.call("system_facts", {})).output);
  assert.deepEqual(facts, {
    hostname: "build-box",
    hostAtLoad: "build-box",
    memory: 64,
    os: "linux",
    version: { bosun: "0.1.0", engine: "quickjs-ng" },
    members: ["Command", "build", "env", "hostname", "memoryUsage", "version"],
    env: "object",
    taint: "INTERNAL",
  });
  // `export let systemPrompt` is re-read for every prompt, as Triggerfish does.
  assert.deepEqual(await engine.hook("prompt", {}), ["The host facts were already read once."]);
  assert.equal((await engine.call("probe", { member: "readTextFile" })).output, "undefined");

  // A trusted plugin whose host gives no facts: a clear error, not undefined values (here at
  // load time, where the fixture reads the host name).
  const bare = await createEngine({ files: loadFixture("system-facts") });
  await assert.rejects(bare.activate(triggerfishRequest({ name: "system-facts", trust: "trusted" })), {
    message: /^Plugin "system-facts" could not load its entry "mod\.ts": Error: Deno\.hostname\(\) is not available: the host did not provide it \(at mod\.ts:\d+:\d+\)$/,
  });
});

test("Forge plugins see no Deno; Triggerfish sandboxing does not apply to them", async () => {
  const engine = await createEngine({ files: { "index.mjs": `export default (api) => {
    api.registerTool({ name: "deno", description: "Reports typeof Deno.", risk: "read", inputSchema: api.z.object({}),
      execute: async () => ({ ok: true, output: typeof Deno, truncated: false }) });
  };` } });
  await engine.activate(forgeRequest());
  assert.equal((await engine.call("deno", {})).output, "undefined");
});

test("a hook before activation, an unknown hook op, a second activation", async () => {
  const { engine, activation } = await inline(MINIMAL);
  await activation;
  await assert.rejects(engine.hook("summon", {}), { message: 'Unknown hook operation "summon".' });
  await assert.rejects(engine.activate(triggerfishRequest()), { message: /already activated a plugin/ });
  const fresh = await createEngine({ files: { "mod.ts": MINIMAL } });
  await assert.rejects(fresh.hook("prompt", {}), { message: /has not been activated/ });
  assert.equal((await fresh.call("x", {})).error.message, "The plugin has not been activated.");
  await assert.rejects(fresh.activate({ format: "deno" }), { message: /format must be "forge" or "triggerfish"/ });
  await assert.rejects(fresh.activate(triggerfishRequest()), { message: /already tried to activate a plugin and failed; use a new instance/ });
  const big = await activationError(`${MINIMAL} export const systemPrompt = "${"p".repeat(40000)}";`);
  assert.match(big.message, /The systemPrompt of plugin "test-plugin" is 40000 bytes; the limit is 32768 bytes/);
});
