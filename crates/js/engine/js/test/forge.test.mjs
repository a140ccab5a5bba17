// Forge plugins through the runtime: activation, the api's rules, tool calls and every hook.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createEngine, loadFixture, forgeRequest } from "./harness.mjs";

/** An engine running an inline plugin (`index.mjs` = source). */
async function inline(source, overrides = {}, engineOptions = {}) {
  const engine = await createEngine({ files: { "index.mjs": source }, ...engineOptions });
  return { engine, activation: engine.activate(forgeRequest(overrides)) };
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

// ---------------------------------------------------------------------------------------------

test("count-text (the guide's quick start) activates and counts code points", async () => {
  const engine = await createEngine({ files: loadFixture("count-text") });
  const descriptor = await engine.activate(forgeRequest({ name: "count-text", entry: "./index.mjs" }));
  assert.deepEqual(descriptor.commands, []);
  assert.deepEqual(descriptor.subagents, []);
  assert.deepEqual(descriptor.hooks, { prompt: 0, restrict: 0, observe: 0 });
  assert.equal(descriptor.tools.length, 1);
  const [tool] = descriptor.tools;
  assert.equal(tool.name, "count_text");
  assert.equal(tool.risk, "read");
  assert.equal(tool.description, "Count Unicode characters in supplied text.");
  assert.deepEqual(tool.inputSchema, {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties: { text: { type: "string", maxLength: 10000 } },
    required: ["text"],
    additionalProperties: false,
  });

  assert.deepEqual(await engine.call("count_text", { text: "héllo 👋" }), {
    ok: true, output: { characters: 7 }, truncated: false,
  });
  const invalid = await engine.call("count_text", { text: 5 });
  assert.equal(invalid.ok, false);
  assert.equal(invalid.error.code, "invalid_input");
  assert.match(invalid.error.message, /^Invalid input for count_text: text: Invalid input: expected string, received number/);
  const strict = await engine.call("count_text", { text: "a", extra: 1 });
  assert.equal(strict.error.code, "invalid_input");
  assert.match(strict.error.message, /Unrecognized key/);
  assert.equal((await engine.call("nope", {})).error.code, "unknown_tool");
  assert.equal((await engine.call("count_text", "{not json")).error.code, "invalid_input");
});

test("the api is frozen; the ToolContext is frozen with the workspace, signal and limits", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      const seen = [];
      api.registerTool({
        name: "inspect_context", description: "Report the context.", risk: "read",
        inputSchema: api.z.object({}),
        execute: async (_input, context) => ({
          ok: true,
          output: {
            apiFrozen: Object.isFrozen(api),
            apiVersion: api.apiVersion,
            apiKeys: Object.keys(api).sort(),
            frozen: Object.isFrozen(context) && Object.isFrozen(context.workspace) && Object.isFrozen(context.limits),
            workspace: context.workspace,
            limits: context.limits,
            signal: context.signal instanceof AbortSignal && context.signal.aborted === false,
            deno: typeof Deno,
          },
          truncated: false,
        }),
      });
    }
  `, { limits: { maxOutputBytes: 1000, maxEntries: 50, commandTimeoutMs: 5000 } });
  await activation;
  const result = await engine.call("inspect_context", {});
  assert.deepEqual(result.output, {
    apiFrozen: true,
    apiVersion: "1",
    apiKeys: ["apiVersion", "contributePrompt", "observeRunEvents", "registerCommand", "registerSubagent", "registerTool", "restrictPolicy", "z"],
    frozen: true,
    workspace: { root: "/workspace", cwd: "/workspace" },
    limits: { maxOutputBytes: 1000, maxEntries: 50, commandTimeoutMs: 5000 },
    signal: true,
    deno: "undefined",
  });
});

test("zod transforms and defaults apply to the input the tool receives", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      const z = api.z;
      api.registerTool({
        name: "echo", description: "Echo the parsed input.", risk: "read",
        inputSchema: z.object({
          query: z.string().trim().min(1),
          limit: z.number().int().min(1).max(10).default(5),
          mode: z.enum(["a", "b"]).default("a"),
        }).strict(),
        execute: async (input) => ({ ok: true, output: input, truncated: false }),
      });
    }
  `);
  const descriptor = await activation;
  assert.deepEqual(descriptor.tools[0].inputSchema.required, ["query"]);
  assert.equal(descriptor.tools[0].inputSchema.properties.limit.default, 5);
  assert.deepEqual((await engine.call("echo", { query: "  padded  " })).output, { query: "padded", limit: 5, mode: "a" });
});

test("an input schema with async parts is parsed asynchronously; its sync checks run twice only on the first call", async () => {
  const { engine, activation } = await inline(`
    let checks = 0;
    export default function activate(api) {
      const z = api.z;
      api.registerTool({
        name: "claim", description: "Claim an id.", risk: "read",
        inputSchema: z.object({
          name: z.string().refine((v) => { checks += 1; return v.length > 0; }),
          id: z.string().refine(async (v) => v !== "taken", { message: "id is taken" }).transform(async (v) => v.toUpperCase()),
        }),
        execute: async (input) => ({ ok: true, output: { input, checks }, truncated: false }),
      });
    }
  `);
  await activation;
  // The first call tries zod's synchronous parse, which stops at the async refinement.
  assert.deepEqual((await engine.call("claim", { name: "a", id: "x" })).output, { input: { name: "a", id: "X" }, checks: 2 });
  assert.deepEqual((await engine.call("claim", { name: "b", id: "y" })).output, { input: { name: "b", id: "Y" }, checks: 3 });
  const refused = await engine.call("claim", { name: "c", id: "taken" });
  assert.equal(refused.ok, false);
  assert.equal(refused.error.code, "invalid_input");
  assert.match(refused.error.message, /id is taken/);
});

test("a sync input schema that throws is a plugin error, as before, on every call", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      const z = api.z;
      api.registerTool({
        name: "boom", description: "Throws in its schema.", risk: "read",
        inputSchema: z.object({ n: z.number().refine(() => { throw new TypeError("refinement broke"); }) }),
        execute: async () => ({ ok: true, output: null, truncated: false }),
      });
    }
  `);
  await activation;
  for (let i = 0; i < 2; i += 1) {
    const result = await engine.call("boom", { n: 1 });
    assert.equal(result.error.code, "plugin_error");
    assert.match(result.error.message, /refinement broke/);
  }
});

test("a tool's answer is exactly the JSON of {ok, output, truncated} with the output serialised once", async () => {
  const output = {
    when: new Date(0),
    text: "quote \" backslash \\ line\u2028sep \ud800 lone",
    nested: [1, -0, 1e21, null, { gone: undefined, kept: true }],
    custom: { toJSON() { return "custom"; } },
  };
  const { engine, activation } = await inline(`
    export default function activate(api) {
      api.registerTool({
        name: "shapes", description: "Odd outputs.", risk: "read", inputSchema: api.z.object({}),
        execute: async () => ({
          ok: true,
          truncated: true,
          output: JSON.parse(${JSON.stringify(JSON.stringify({ ...output, custom: undefined }))}, (k, v) => v),
        }),
      });
      api.registerTool({
        name: "dated", description: "A toJSON in the output.", risk: "read", inputSchema: api.z.object({}),
        execute: async () => ({ ok: true, truncated: false, output: { when: new Date(0), custom: { toJSON() { return "custom"; } } } }),
      });
    }
  `);
  await activation;
  const raw = await engine.settle(engine.engine.call("shapes", "{}"));
  const expected = JSON.stringify({ ok: true, output: JSON.parse(JSON.stringify({ ...output, custom: undefined })), truncated: true });
  assert.equal(raw, expected);
  const dated = await engine.settle(engine.engine.call("dated", "{}"));
  assert.equal(dated, '{"ok":true,"output":{"when":"1970-01-01T00:00:00.000Z","custom":"custom"},"truncated":false}');
});

test("a plugin that rewrites Object.prototype cannot change its answer's envelope", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      for (const key of ["ok", "output", "truncated", "outputJson", "answer", "then"]) {
        Object.defineProperty(Object.prototype, key, {
          get() { return key === "then" ? undefined : "forged"; }, set() {}, configurable: true,
        });
      }
      api.registerTool({
        name: "plain", description: "A plain result.", risk: "read", inputSchema: api.z.object({ n: api.z.number() }),
        execute: async (input) => ({ ok: true, output: { n: input.n }, truncated: true }),
      });
    }
  `);
  await activation;
  const raw = await engine.settle(engine.engine.call("plain", '{"n":1}'));
  assert.equal(raw, '{"ok":true,"output":{"n":1},"truncated":true}');
});

test("a result whose then getter throws, or a thenable that rejects, is the tool's failure", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      api.registerTool({
        name: "getter", description: "A result whose then getter throws.", risk: "read", inputSchema: api.z.object({}),
        execute: () => ({ ok: true, output: 1, truncated: false, get then() { throw new Error("then getter"); } }),
      });
      api.registerTool({
        name: "thenable", description: "A thenable that rejects.", risk: "read", inputSchema: api.z.object({}),
        execute: () => ({ then(resolve, reject) { reject(new Error("thenable rejected")); } }),
      });
    }
  `);
  await activation;
  const getter = JSON.parse(await engine.settle(engine.engine.call("getter", "{}")));
  assert.equal(getter.error.code, "io_error");
  assert.match(getter.error.message, /then getter/);
  const thenable = JSON.parse(await engine.settle(engine.engine.call("thenable", "{}")));
  assert.equal(thenable.error.code, "io_error");
  assert.match(thenable.error.message, /thenable rejected/);
});

test("todo-style plugin: module state, a discriminated union and a prompt contribution", async () => {
  const engine = await createEngine({ files: loadFixture("task-list") });
  const descriptor = await engine.activate(forgeRequest({
    name: "task-list", entry: "./index.mjs", capabilities: ["tools:register", "prompt:contribute"],
  }));
  assert.deepEqual(descriptor.hooks, { prompt: 1, restrict: 0, observe: 0 });
  const schema = descriptor.tools[0].inputSchema;
  assert.equal(schema.oneOf.length, 5);
  assert.deepEqual(schema.oneOf[1].properties.action, { type: "string", const: "add" });

  let result = await engine.call("task", { action: "add", text: "  Inspect  " });
  assert.deepEqual(result, {
    ok: true, truncated: false,
    output: { tasks: [{ id: 1, text: "Inspect", status: "pending" }], summary: "0/1 done" },
  });
  await engine.call("task", { action: "add", text: "Test" });
  result = await engine.call("task", { action: "update", id: 1, status: "in_progress" });
  assert.equal(result.output.tasks[0].status, "in_progress");
  result = await engine.call("task", { action: "update", id: 2, status: "in_progress" });
  assert.deepEqual(result, { ok: false, error: { code: "invalid_input", message: "Only one task may be in_progress.", retryable: false } });
  result = await engine.call("task", { action: "update", id: 0, status: "done" });
  assert.equal(result.error.code, "invalid_input");
  assert.match(result.error.message, /^Invalid input for task: id: /);

  const prompts = await engine.hook("prompt", { prompt: "plan the refactor", workspaceRoot: "/workspace", workingDirectory: "/workspace" });
  assert.equal(prompts.length, 1);
  assert.match(prompts[0], /task tool is available/);
  assert.deepEqual(await engine.hook("prompt", { prompt: "quick fix", workspaceRoot: "/w", workingDirectory: "/w" }), []);
});

test("stricter-policy style hook: confirm, deny with the plugin prefix, or no decision", async () => {
  const engine = await createEngine({ files: loadFixture("policy-guard") });
  const descriptor = await engine.activate(forgeRequest({ name: "policy-guard", entry: "./index.mjs", capabilities: ["policy:restrict"] }));
  assert.deepEqual(descriptor.hooks, { prompt: 0, restrict: 1, observe: 0 });
  const ask = (tool, input) => engine.hook("restrict", {
    tool: { name: tool, risk: tool === "run_command" ? "process" : "read" },
    call: { id: "call_1", name: tool, input },
    input,
  });
  assert.deepEqual(await ask("run_command", { program: "pnpm", args: ["test"] }), {
    kind: "confirm", reason: "policy-guard: package manager commands are reviewed one at a time.",
  });
  assert.deepEqual(await ask("run_command", { program: "ls", args: [] }), {
    kind: "deny", reason: "policy-guard: only pnpm or npm may run in this project.",
  });
  assert.equal(await ask("read_file", { path: "README.md" }), null);
});

test("restrict hooks: strictest wins, invalid decisions and throws reject", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      api.restrictPolicy(({ tool }) => tool.name === "a" ? { kind: "confirm", reason: "first" } : undefined);
      api.restrictPolicy(({ tool }) => tool.name === "a" ? { kind: "deny", reason: "second" } : undefined);
      api.restrictPolicy(({ tool }) => tool.name === "b" ? { kind: "allow", reason: "no" } : undefined);
      api.restrictPolicy(({ tool }) => tool.name === "c" ? { kind: "deny", reason: "   " } : undefined);
      api.restrictPolicy(({ tool, input }) => { if (tool.name === "d") input.changed = true; });
      api.restrictPolicy(({ tool }) => tool.name === "e" ? null : undefined);
    }
  `, { capabilities: ["policy:restrict"] });
  await activation;
  const ask = (name) => engine.hook("restrict", { tool: { name, risk: "read" }, call: { id: "1", name, input: {} }, input: {} });
  assert.deepEqual(await ask("a"), { kind: "deny", reason: "test-plugin: second" });
  for (const name of ["b", "c", "e"]) {
    await assert.rejects(ask(name), { message: /The policy hook of plugin "test-plugin" returned an invalid decision/ });
  }
  // The snapshot is deep-frozen: the mutation throws in the module's strict code.
  await assert.rejects(ask("d"), { message: /The policy hook of plugin "test-plugin" failed: TypeError/ });
  assert.equal(await ask("z"), null);
});

test("prompt hooks: blank skipped, over 32 KiB and non-strings rejected, each gets its own frozen copy", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      api.contributePrompt((ctx) => Object.isFrozen(ctx) ? "frozen:" + ctx.prompt : "not frozen");
      api.contributePrompt(() => "   ");
      api.contributePrompt(async (ctx) => ctx.prompt === "big" ? "é".repeat(16385) : undefined);
      api.contributePrompt((ctx) => ctx.prompt === "number" ? 42 : undefined);
      api.contributePrompt((ctx) => { if (ctx.prompt === "throw") throw new Error("no prompt today"); });
    }
  `, { capabilities: ["prompt:contribute"] });
  await activation;
  const payload = (prompt) => ({ prompt, workspaceRoot: "/workspace", workingDirectory: "/workspace" });
  assert.deepEqual(await engine.hook("prompt", payload("hello")), ["frozen:hello"]);
  await assert.rejects(engine.hook("prompt", payload("big")), { message: /is 32770 bytes; the limit is 32768 bytes/ });
  await assert.rejects(engine.hook("prompt", payload("number")), { message: /returned a number \(42\); it must return a string or undefined/ });
  await assert.rejects(engine.hook("prompt", payload("throw")), { message: /failed: Error: no prompt today/ });
});

test("observers get frozen events; a throw becomes Forge's warning", async () => {
  const { engine, activation } = await inline(`
    export const seen = [];
    export default function activate(api) {
      api.observeRunEvents((event) => { if (!Object.isFrozen(event.call)) throw new Error("not frozen"); });
      api.observeRunEvents(async (event) => { if (event.type === "run.failed") throw 42; });
    }
  `, { capabilities: ["events:observe"] });
  const descriptor = await activation;
  assert.equal(descriptor.hooks.observe, 2);
  assert.deepEqual(await engine.hook("observe", { type: "tool.started", step: 1, call: { id: "1", name: "x", input: {} } }), { warnings: [] });
  assert.deepEqual(await engine.hook("observe", { type: "run.failed", call: {} }), {
    warnings: ['Observer in plugin "test-plugin" failed.'],
  });
});

test("commands: frozen context, output, exit codes, bounded output, throws", async () => {
  const engine = await createEngine({ files: loadFixture("info-command") });
  const descriptor = await engine.activate(forgeRequest({ name: "info-command", entry: "./index.mjs", capabilities: ["commands:register"] }));
  assert.deepEqual(descriptor.commands.map((c) => c.name), ["plugin-info", "flood", "crash", "odd-exit"]);
  assert.deepEqual(descriptor.tools, []);

  const run = (name, args = []) => engine.hook("command", { name, args, cwd: "/workspace/src", workspaceRoot: "/workspace" });
  assert.deepEqual(await run("plugin-info", ["a", "b"]), {
    exitCode: 0,
    stdout: "info-command in /workspace/src (workspace /workspace)\nargs: a b\nfrozen args: true, signal: true\n",
    stderr: "",
  });
  const failed = await run("plugin-info", ["--fail"]);
  assert.equal(failed.exitCode, 3);
  assert.equal(failed.stderr, "asked to fail\n");

  const flood = await run("flood");
  assert.equal(flood.exitCode, 0);
  assert.ok(Buffer.byteLength(flood.stdout) <= (1 << 20) + 100);
  assert.match(flood.stdout, /\[output truncated at 1048576 bytes\]\n$/);

  const crash = await run("crash");
  assert.equal(crash.exitCode, 1);
  assert.equal(crash.stdout, "before the crash\n");
  assert.match(crash.stderr, /The command "crash" of plugin "info-command" failed: RangeError: the command broke/);

  const odd = await run("odd-exit");
  assert.equal(odd.exitCode, 1);
  assert.match(odd.stderr, /returned a string; a command returns nothing or an exit code from 0 to 255/);

  await assert.rejects(run("missing"), { message: /Plugin "info-command" has no command "missing"/ });
});

test("subagents: registered declaratively with defaults, deduplicated tools", async () => {
  const engine = await createEngine({ files: loadFixture("review-subagent") });
  const descriptor = await engine.activate(forgeRequest({ name: "review-subagent", entry: "./index.mjs", capabilities: ["subagents:register"] }));
  assert.deepEqual(descriptor.subagents, [
    {
      name: "code-reviewer",
      toolName: "delegate_code_review",
      description: "Delegate a focused, read-only review of part of the workspace.",
      instructions: "You review code. Report concrete correctness and security findings with file and line.",
      tools: ["list_files", "read_file", "search"],
      limits: { maxModelSteps: 3, maxToolCalls: 6 },
    },
    {
      name: "summariser",
      toolName: "delegate_summary",
      description: "Delegate a summary of a set of files.",
      instructions: "Summarise what the listed files do.",
      tools: ["read_file"],
      limits: { maxModelSteps: 4, maxToolCalls: 8 },
    },
  ]);
  assert.deepEqual(descriptor.tools, []);
});

test("subagents: every rule of the guide is enforced", async () => {
  const base = {
    name: "helper", toolName: "delegate_help", description: "Help.", instructions: "Do it.", tools: ["read_file"],
  };
  const attempt = (definition) => activationError(
    `export default (api) => api.registerSubagent(${JSON.stringify(definition)});`,
    { capabilities: ["subagents:register"] },
  );
  const cases = [
    [{ ...base, name: "Helper" }, /invalid name "Helper"/],
    [{ ...base, name: "help--er" }, /invalid name "help--er"/],
    [{ ...base, toolName: "Delegate" }, /invalid toolName "Delegate"/],
    [{ ...base, toolName: "read_file" }, /toolName "read_file", but it is reserved/],
    [{ ...base, instructions: "" }, /without instructions/],
    [{ ...base, instructions: "x".repeat(16385) }, /instructions of 16385 bytes; the limit is 16384 bytes/],
    [{ ...base, tools: Array.from({ length: 33 }, (_, i) => `tool_${i}`) }, /with 33 tools; a subagent may use at most 32/],
    [{ ...base, tools: ["delegate_help"] }, /subagents cannot delegate to subagents/],
    [{ ...base, limits: { maxModelSteps: 9 } }, /limits.maxModelSteps 9; it must be an integer from 1 to 8/],
    [{ ...base, limits: { maxToolCalls: 21 } }, /limits.maxToolCalls 21; it must be an integer from 1 to 20/],
    [{ ...base, description: " " }, /invalid description/],
  ];
  for (const [definition, expected] of cases) {
    const error = await attempt(definition);
    assert.match(error.message, expected, JSON.stringify(definition).slice(0, 80));
  }
  const missing = await activationError(`export default (api) => api.registerSubagent(${JSON.stringify(base)});`);
  assert.equal(missing.message, 'Plugin "test-plugin" used undeclared capability "subagents:register"');
  // A tool registered later may not take a subagent's tool name.
  const clash = await activationError(`
    export default (api) => {
      api.registerSubagent(${JSON.stringify(base)});
      api.registerTool({ name: "delegate_help", description: "x", risk: "read", inputSchema: api.z.object({}), execute: () => {} });
    };
  `, { capabilities: ["subagents:register", "tools:register"] });
  assert.match(clash.message, /registered the tool "delegate_help", but this plugin's subagent already uses it/);
});

test("capability gating uses Forge's message for every registration", async () => {
  const calls = {
    "tools:register": `api.registerTool({ name: "t", description: "d", risk: "read", inputSchema: api.z.object({}), execute: () => {} })`,
    "commands:register": `api.registerCommand({ name: "c", description: "d", execute: () => {} })`,
    "prompt:contribute": `api.contributePrompt(() => "x")`,
    "events:observe": `api.observeRunEvents(() => {})`,
    "policy:restrict": `api.restrictPolicy(() => undefined)`,
    "subagents:register": `api.registerSubagent({ name: "s", toolName: "s", description: "d", instructions: "i", tools: [] })`,
  };
  for (const [capability, call] of Object.entries(calls)) {
    const error = await activationError(`export function activate(api) { ${call}; }`, { name: "gated", capabilities: [] });
    assert.equal(error.message, `Plugin "gated" used undeclared capability "${capability}"`);
    assert.equal(error.code, "plugin_error");
    // With the capability declared, the same call activates.
    const { activation } = await inline(`export function activate(api) { ${call}; }`, { name: "gated", capabilities: [capability] });
    await activation;
  }
});

test("a network tool needs network:access", async () => {
  const source = `
    export default function activate(api) {
      api.registerTool({ name: "web_get", description: "Get a page.", risk: "network", inputSchema: api.z.object({ url: api.z.string() }), execute: async () => ({ ok: true, output: null, truncated: false }) });
    }`;
  const error = await activationError(source, { name: "net-tools" });
  assert.equal(error.message, 'Plugin "net-tools" registered a network tool without declaring capability "network:access"');
  const { activation } = await inline(source, { name: "net-tools", capabilities: ["tools:register", "network:access"] });
  assert.equal((await activation).tools[0].risk, "network");
});

test("tool registrations are validated: names, uniqueness, risk, description, schema", async () => {
  const tool = (fields) => `export default (api) => api.registerTool({ name: "ok_tool", description: "Does things.", risk: "read", inputSchema: api.z.object({}), execute: async () => {}, ${fields} });`;
  const cases = [
    ['name: "Bad-Name"', /the invalid name "Bad-Name": tool names must match/],
    ['name: "read_file"', /registered the tool "read_file", but it is reserved/],
    ['risk: "model"', /invalid risk "model": risk must be "read", "write", "process" or "network"/],
    ['risk: undefined', /invalid risk "undefined"/],
    ['description: ""', /invalid description: it must be a non-blank string of at most 1024 characters/],
    ['description: "x".repeat(1025)', /invalid description/],
    ['inputSchema: { type: "object" }', /inputSchema is not a zod schema/],
    ['execute: "no"', /whose execute is not a function/],
  ];
  for (const [fields, expected] of cases) {
    assert.match((await activationError(tool(fields))).message, expected, fields);
  }
  const twice = await activationError(`
    export default (api) => {
      const t = { name: "dup", description: "d", risk: "read", inputSchema: api.z.object({}), execute: async () => {} };
      api.registerTool(t);
      api.registerTool(t);
    };`);
  assert.match(twice.message, /registered the tool "dup", but this plugin already registered a tool with that name/);
  // A schema with a safeParse but nothing zod can convert.
  const foreign = await activationError(tool("inputSchema: { safeParse: () => ({ success: true, data: {} }) }"));
  assert.match(foreign.message, /inputSchema cannot be converted to JSON Schema/);
});

test("activation failures: throws are wrapped, missing activate, load errors, late registration", async () => {
  let error = await activationError(`export default function activate() { throw new TypeError("broken setup"); }`);
  // The plugin's file, line and column of the throw follow its message.
  assert.match(error.message, /^Activation failed for plugin "test-plugin": TypeError: broken setup \(at index\.mjs:1:\d+\)$/);
  error = await activationError(`export default async function activate() { throw null; }`);
  assert.equal(error.message, 'Activation failed for plugin "test-plugin": Non-Error value thrown: null');
  error = await activationError(`export const activate = 5;`);
  assert.match(error.message, /must export an activate function/);
  error = await activationError(`export default function activate( {`);
  assert.match(error.message, /^Plugin "test-plugin" could not load its entry "index.mjs": SyntaxError/);
  error = await activationError(`import "left-pad"; export default () => {};`);
  assert.match(error.message, /could not load its entry.*cannot import "left-pad"/);
  error = await activationError(`import internal from "bosun:internal"; export default () => {};`);
  assert.match(error.message, /cannot import "bosun:internal" from plugin:index.mjs: it is internal to the engine/);

  const { engine, activation } = await inline(`
    let saved;
    export default function activate(api) {
      saved = api;
      api.registerTool({ name: "late", description: "Registers later.", risk: "read", inputSchema: api.z.object({}),
        execute: async () => {
          try { saved.registerTool({ name: "later", description: "x", risk: "read", inputSchema: saved.z.object({}), execute: () => {} }); }
          catch (e) { return { ok: true, output: e.message, truncated: false }; }
          return { ok: true, output: "registered", truncated: false };
        } });
    }`);
  await activation;
  assert.match((await engine.call("late", {})).output, /registered something after activation finished/);
  await assert.rejects(engine.activate(forgeRequest()), { message: /already activated a plugin/ });
});

test("a throw of anything becomes io_error with a bounded description", async () => {
  const { engine, activation } = await inline(`
    const throwers = {
      error: () => { throw new RangeError("out of range"); },
      number: () => { throw 42; },
      null: () => { throw null; },
      undefined: () => { throw undefined; },
      string: () => { throw "plain\\ntext"; },
      object: () => { throw { reason: "object", nested: { deep: { deeper: 1 } } }; },
      symbol: () => { throw Symbol("sym"); },
      long: () => { throw new Error("x".repeat(5000)); },
      getter: () => { throw { get message() { throw new Error("gotcha"); }, name: "Trap", stack: "" }; },
      rejected: () => Promise.reject(new Error("async failure")),
    };
    export default function activate(api) {
      api.registerTool({ name: "thrower", description: "Throws what it is told.", risk: "read",
        inputSchema: api.z.object({ kind: api.z.string() }),
        execute: async ({ kind }) => throwers[kind]() });
    }`);
  await activation;
  const expectations = {
    error: /^RangeError: out of range \(at index\.mjs:3:\d+\)$/,
    number: "Non-Error value thrown: 42",
    null: "Non-Error value thrown: null",
    undefined: "Non-Error value thrown: undefined",
    string: 'Non-Error value thrown: "plain\\ntext"',
    object: "Non-Error value thrown: { reason: 'object', nested: { deep: [Object] } }",
    symbol: "Non-Error value thrown: Symbol(sym)",
    rejected: /^Error: async failure \(at index\.mjs:12:\d+\)$/,
  };
  for (const [kind, described] of Object.entries(expectations)) {
    const result = await engine.call("thrower", { kind });
    if (described instanceof RegExp) {
      assert.equal(result.error.code, "io_error", kind);
      const message = result.error.message.replace("The tool failed unexpectedly. ", "");
      assert.match(message, described, kind);
      continue;
    }
    assert.deepEqual(result, {
      ok: false,
      error: { code: "io_error", message: `The tool failed unexpectedly. ${described}`, retryable: true },
    }, kind);
  }
  const long = await engine.call("thrower", { kind: "long" });
  assert.ok(long.error.message.length < 600);
  assert.match(long.error.message, /… \[truncated\]$/);
  const getter = await engine.call("thrower", { kind: "getter" });
  assert.equal(getter.error.code, "io_error");
});

test("tool results are checked: wrong shapes become plugin_error, extra keys are dropped", async () => {
  const { engine, activation } = await inline(`
    const results = {
      good: { ok: true, output: { a: 1 }, truncated: false, extra: "dropped" },
      undefinedOutput: { ok: true, output: undefined, truncated: true },
      noTruncated: { ok: true, output: 1 },
      noOutput: { ok: true, truncated: false },
      string: "done",
      nothing: undefined,
      okString: { ok: "yes" },
      badCode: { ok: false, error: { code: "Not Valid", message: "m", retryable: false } },
      noRetryable: { ok: false, error: { code: "io_error", message: "m" } },
      goodError: { ok: false, error: { code: "not_found", message: "missing", retryable: false, hint: "dropped" } },
      bigint: { ok: true, output: { n: 1n }, truncated: false },
      cycle: (() => { const o = {}; o.self = o; return { ok: true, output: o, truncated: false }; })(),
    };
    export default function activate(api) {
      api.registerTool({ name: "result", description: "Returns a canned result.", risk: "read",
        inputSchema: api.z.object({ kind: api.z.string() }),
        execute: async ({ kind }) => results[kind] });
    }`);
  await activation;
  const call = (kind) => engine.call("result", { kind });
  assert.deepEqual(await call("good"), { ok: true, output: { a: 1 }, truncated: false });
  assert.deepEqual(await call("undefinedOutput"), { ok: true, output: null, truncated: true });
  assert.deepEqual(await call("goodError"), { ok: false, error: { code: "not_found", message: "missing", retryable: false } });
  const reasons = {
    noTruncated: "`truncated` must be a boolean",
    noOutput: "`output` is missing",
    string: "got a string",
    nothing: "got undefined",
    okString: "`ok` must be true or false",
    badCode: "`error.code` must be a lower_snake_case string",
    noRetryable: "`error.retryable` must be a boolean",
    bigint: "its output is not JSON-serialisable",
    cycle: "its output is not JSON-serialisable",
  };
  for (const [kind, reason] of Object.entries(reasons)) {
    const result = await call(kind);
    assert.equal(result.ok, false, kind);
    assert.equal(result.error.code, "plugin_error", kind);
    assert.equal(result.error.retryable, false);
    assert.ok(result.error.message.startsWith(`The tool "result" from plugin "test-plugin" returned an invalid result: ${reason}`), `${kind}: ${result.error.message}`);
  }
});

test("cancellation reaches the tool's signal: __engine.cancel and the host's isCancelled", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      api.registerTool({ name: "wait", description: "Waits until cancelled.", risk: "read",
        inputSchema: api.z.object({}),
        execute: (_input, { signal }) => new Promise((resolve) => {
          const timer = setTimeout(() => resolve({ ok: true, output: "not cancelled", truncated: false }), 5000);
          signal.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve({ ok: false, error: { code: "cancelled", message: "stopped: " + signal.reason.name, retryable: false } });
          });
        }) });
      api.registerTool({ name: "wait_throw", description: "Throws when cancelled.", risk: "read",
        inputSchema: api.z.object({}),
        execute: (_input, { signal }) => new Promise((_resolve, reject) => {
          setTimeout(() => {}, 5000);
          signal.addEventListener("abort", () => reject(signal.reason));
        }) });
    }`);
  await activation;
  // __engine.cancel(), as the core may call it.
  const first = engine.settle(engine.engine.call("wait", "{}"));
  setTimeout(() => engine.engine.cancel(), 30);
  assert.deepEqual(JSON.parse(await first), { ok: false, error: { code: "cancelled", message: "stopped: AbortError", retryable: false } });
  // The host reporting cancellation, noticed at the next timer turn.
  const second = engine.engine.call("wait_throw", "{}");
  const settled = engine.settle(second).catch((e) => e);
  await new Promise((r) => setTimeout(r, 30));
  engine.host.cancelled = true;
  // The harness loop stops like the core's does; the promise itself settles with `cancelled`.
  await settled;
  engine.engine.runTimers();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(JSON.parse(await second), { ok: false, error: { code: "cancelled", message: "The call to wait_throw was cancelled.", retryable: false } });
});

test("a tool that reads its signal only after it was cancelled finds it aborted with the reason", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      api.registerTool({ name: "late", description: "Reads its signal after a while.", risk: "read",
        inputSchema: api.z.object({}),
        execute: (_input, context) => new Promise((resolve) => {
          setTimeout(() => {
            const { signal } = context;
            let heard = false;
            signal.addEventListener("abort", () => { heard = true; });
            resolve({ ok: true, output: { aborted: signal.aborted, reason: signal.reason?.name ?? null, same: context.signal === signal, heard }, truncated: false });
          }, 60);
        }) });
    }`);
  await activation;
  const cancelled = engine.settle(engine.engine.call("late", "{}"));
  setTimeout(() => engine.engine.cancel(), 20);
  assert.deepEqual(JSON.parse(await cancelled), { ok: true, output: { aborted: true, reason: "AbortError", same: true, heard: false }, truncated: false });
  // A call nobody cancels sees a live signal, and the earlier call's cancellation is not its own.
  const live = await engine.settle(engine.engine.call("late", "{}"));
  assert.deepEqual(JSON.parse(live), { ok: true, output: { aborted: false, reason: null, same: true, heard: false }, truncated: false });
});

test("a network tool written like Forge's web-tools runs on the prelude and node modules", async () => {
  const engine = await createEngine({
    files: loadFixture("page-fetch"),
    lookup: (host) => (host === "internal.example" ? ["10.0.0.5"] : ["93.184.216.34", "2606:2800:220:1::1"]),
    http: ({ url }) => {
      if (url === "https://start.example/") return { status: 302, headers: [["location", "/moved"]], body: Buffer.alloc(0) };
      if (url === "https://start.example/moved") return { status: 301, headers: [["Location", "https://internal.example/"]], body: Buffer.alloc(0) };
      if (url === "https://docs.example/page") {
        return { status: 200, headers: [["content-type", "text/html"]], body: Buffer.from("<p>Hello, página</p>") };
      }
      throw Object.assign(new Error(`refused: ${url}`), { code: "refused" });
    },
  });
  const descriptor = await engine.activate(forgeRequest({ name: "page-fetch", entry: "./index.mjs", capabilities: ["tools:register", "network:access"] }));
  assert.equal(descriptor.tools[0].risk, "network");
  assert.deepEqual(await engine.call("page_fetch", { url: "https://docs.example/page" }), {
    ok: true,
    output: { url: "https://docs.example/page", finalUrl: "https://docs.example/page", status: 200, text: "<p>Hello, página</p>" },
    truncated: false,
  });
  assert.deepEqual(engine.lookups, ["docs.example"]);
  // Redirects are re-checked per hop: the second hop resolves to a private address.
  const blocked = await engine.call("page_fetch", { url: "https://start.example/" });
  assert.deepEqual(blocked, { ok: false, error: { code: "invalid_input", message: "The host resolves to a private address.", retryable: false } });
  assert.deepEqual(engine.httpCalls.map((c) => c.url), ["https://docs.example/page", "https://start.example/", "https://start.example/moved"]);
  assert.deepEqual(engine.httpCalls[0].headers, [["accept", "text/html,text/plain"], ["user-agent", "page-fetch/1.0"]]);
  // A refused destination surfaces as fetch's TypeError with the host's message as the cause.
  const refused = await engine.call("page_fetch", { url: "https://other.example/" });
  assert.deepEqual(refused, { ok: false, error: { code: "io_error", message: "The request failed: fetch failed (refused: https://other.example/)", retryable: true } });
  assert.equal((await engine.call("page_fetch", { url: "http://127.0.0.1/" })).error.message, "Private addresses are blocked.");
});

test("a plugin that patches JSON or the web globals does not change what the runtime reports", async () => {
  const { engine, activation } = await inline(`
    export default function activate(api) {
      JSON.stringify = () => '{"ok":true,"output":"forged","truncated":false}';
      JSON.parse = () => ({ forged: true });
      globalThis.AbortController = function () { throw new Error("patched"); };
      api.registerTool({ name: "honest", description: "Returns a fixed value.", risk: "read",
        inputSchema: api.z.object({ n: api.z.number() }),
        execute: async (input, context) => ({ ok: true, output: { n: input.n, signal: context.signal.aborted }, truncated: false }) });
    }`);
  const descriptor = await activation;
  assert.equal(descriptor.tools[0].name, "honest");
  assert.deepEqual(await engine.call("honest", { n: 3 }), { ok: true, output: { n: 3, signal: false }, truncated: false });
});
