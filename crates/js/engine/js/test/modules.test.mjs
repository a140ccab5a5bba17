// The built-in modules a plugin may import: zod, the node: surface, and `bosun:internal`,
// which it may not.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createEngine, forgeRequest, hostError } from "./harness.mjs";

/**
 * Activates a Forge plugin whose single tool runs `body` (an async function body with the
 * plugin's imports in scope) and returns its JSON value as the output.
 */
async function probe(imports, body, engineOptions = {}) {
  const engine = await createEngine({
    ...engineOptions,
    files: {
      "index.mjs": `${imports}
        export default (api) => api.registerTool({
          name: "probe", description: "Runs the probe.", risk: "read", inputSchema: api.z.object({}),
          execute: async () => ({ ok: true, output: await (async () => { ${body} })(), truncated: false }),
        });`,
    },
  });
  await engine.activate(forgeRequest());
  const result = await engine.call("probe", {});
  if (!result.ok) assert.fail(`the probe failed: ${result.error.message}`);
  return { output: result.output, engine };
}

test("zod: named, namespace and default imports are one instance with English messages and JSON Schema", async () => {
  const { output } = await probe(
    `import { z } from "zod"; import * as ns from "zod"; import zDefault from "zod";`,
    `
      const schema = z.object({ name: z.string().min(2), tags: z.array(z.string()).max(2).optional(), when: z.iso.datetime() });
      const failed = schema.safeParse({ name: "a", tags: ["x", "y", "z"], when: "yesterday" });
      return {
        same: z === zDefault && ns.z === z && ns.string === z.string,
        locales: Object.keys(z.locales),
        messages: failed.error.issues.map((i) => i.path.join(".") + ": " + i.message),
        pretty: z.prettifyError(failed.error).split("\\n")[0],
        jsonSchema: z.toJSONSchema(z.object({ n: z.number().int().positive(), e: z.email() }), { target: "draft-2020-12", io: "input", unrepresentable: "any" }),
        coerce: z.coerce.number().parse("5"),
      };
    `,
  );
  assert.deepEqual(output.same, true);
  assert.deepEqual(output.locales, ["en"]);
  assert.deepEqual(output.messages, [
    "name: Too small: expected string to have >=2 characters",
    "tags: Too big: expected array to have <=2 items",
    "when: Invalid ISO datetime",
  ]);
  assert.equal(output.pretty, "✖ Too small: expected string to have >=2 characters");
  assert.equal(output.jsonSchema.properties.n.type, "integer");
  assert.equal(output.jsonSchema.properties.e.format, "email");
  assert.equal(output.coerce, 5);
});

test("node:net isIP, isIPv4, isIPv6 (with and without the node: prefix); sockets refuse", async () => {
  const { output } = await probe(
    `import { isIP, isIPv4, isIPv6 } from "node:net"; import net from "net";`,
    `
      const cases = ["127.0.0.1", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "::", "::1", "fe80::1%eth0",
        "2001:db8::8a2e:370:7334", "::ffff:192.0.2.1", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::",
        "example.com", "", "[::1]"];
      let socket;
      try { net.connect(80, "example.com"); } catch (e) { socket = e.code + ": " + e.message; }
      return { ip: cases.map((c) => [c, isIP(c)]), v4: isIPv4("10.0.0.1"), v6: isIPv6("10.0.0.1"), same: net.isIP === isIP, socket };
    `,
  );
  assert.deepEqual(output.ip, [
    ["127.0.0.1", 4], ["255.255.255.255", 4], ["256.1.1.1", 0], ["01.2.3.4", 0], ["1.2.3", 0], ["::", 6], ["::1", 6],
    ["fe80::1%eth0", 6], ["2001:db8::8a2e:370:7334", 6], ["::ffff:192.0.2.1", 6], ["1:2:3:4:5:6:7:8", 6],
    ["1:2:3:4:5:6:7:8:9", 0], ["1::2::3", 0], ["12345::", 0], ["example.com", 0], ["", 0], ["[::1]", 0],
  ]);
  assert.equal(output.v4, true);
  assert.equal(output.v6, false);
  assert.equal(output.same, true);
  assert.match(output.socket, /^ERR_ACCESS_DENIED: node:net connect is not available in Bosun's sandbox/);
});

test("node:dns/promises and node:dns lookup go through the host", async () => {
  const { output, engine } = await probe(
    `import { lookup } from "node:dns/promises"; import dns from "node:dns";`,
    `
      const outcome = async (p) => { try { return await p; } catch (e) { return { code: e.code, syscall: e.syscall, hostname: e.hostname, message: e.message }; } };
      const callback = await new Promise((resolve) => dns.lookup("example.com", (err, address, family) => resolve([err, address, family])));
      const callbackAll = await new Promise((resolve) => dns.lookup("example.com", { all: true }, (err, list) => resolve(list)));
      return {
        first: await lookup("example.com"),
        all: await lookup("example.com", { all: true, verbatim: true }),
        v4first: await lookup("example.com", { all: true, order: "ipv4first" }),
        family6: await lookup("example.com", 6),
        literal: await lookup("192.0.2.7"),
        missing: await outcome(lookup("missing.example")),
        refused: await outcome(lookup("private.example")),
        empty: await outcome(lookup("")),
        callback, callbackAll, samePromises: dns.promises.lookup === lookup,
      };
    `,
    {
      lookup: (host) => {
        if (host === "missing.example") throw hostError("ENOTFOUND", "missing.example: not found");
        if (host === "private.example") throw hostError("refused", "refused: private.example is not granted to this call");
        return ["2606:2800::1", "93.184.216.34"];
      },
    },
  );
  assert.deepEqual(output.first, { address: "2606:2800::1", family: 6 });
  assert.deepEqual(output.all, [{ address: "2606:2800::1", family: 6 }, { address: "93.184.216.34", family: 4 }]);
  assert.deepEqual(output.v4first, [{ address: "93.184.216.34", family: 4 }, { address: "2606:2800::1", family: 6 }]);
  assert.deepEqual(output.family6, { address: "2606:2800::1", family: 6 });
  assert.deepEqual(output.literal, { address: "192.0.2.7", family: 4 });
  assert.deepEqual(output.missing, { code: "ENOTFOUND", syscall: "getaddrinfo", hostname: "missing.example", message: "getaddrinfo ENOTFOUND missing.example (missing.example: not found)" });
  assert.deepEqual(output.refused, {
    code: "EREFUSED", syscall: "getaddrinfo", hostname: "private.example",
    message: "getaddrinfo EREFUSED private.example (refused: private.example is not granted to this call)",
  });
  assert.equal(output.empty.code, "ENOTFOUND");
  assert.deepEqual(output.callback, [null, "2606:2800::1", 6]);
  assert.equal(output.callbackAll.length, 2);
  assert.equal(output.samePromises, true);
  // The literal never reached the host.
  assert.ok(!engine.lookups.includes("192.0.2.7"));
});

test("node:child_process asks the host and refuses shells and sync forms; node:buffer and node:timers/promises work", async () => {
  const { output } = await probe(
    `import { spawn, execSync, exec } from "node:child_process";
     import { URL as NodeURL, URLSearchParams as NodeParams, fileURLToPath } from "node:url";
     import { Buffer as NodeBuffer, atob as nodeAtob } from "buffer";
     import { setTimeout as sleep, setImmediate as nextTurn, scheduler } from "node:timers/promises";`,
    `
      const refusals = [];
      for (const attempt of [() => spawn("ls", [], { shell: true }), () => execSync("ls")]) {
        try { attempt(); refusals.push("allowed"); } catch (e) { refusals.push(e.code + ": " + e.message); }
      }
      // The host refused (this harness starts nothing): the child's error event says so.
      const spawnError = await new Promise((resolve) => spawn("ls", ["-l"]).on("error", (e) => resolve([e.code, e.syscall])));
      const execError = await new Promise((resolve) => exec("ls | wc -l", (e) => resolve(e.code)));
      const started = Date.now();
      const slept = await sleep(20, "value");
      const elapsed = Date.now() - started;
      const immediate = await nextTurn("now");
      await scheduler.wait(1);
      const controller = new AbortController();
      const pending = sleep(10000, "never", { signal: controller.signal });
      controller.abort();
      let aborted;
      try { await pending; } catch (e) { aborted = [e.name, e.code]; }
      let preAborted;
      try { await sleep(1, "x", { signal: AbortSignal.abort() }); } catch (e) { preAborted = e.name; }
      return {
        refusals, spawnError, execError, slept, elapsedOk: elapsed >= 15, immediate, aborted, preAborted,
        sameUrl: NodeURL === URL && NodeParams === URLSearchParams, sameBuffer: NodeBuffer === Buffer, atob: nodeAtob("aGk="),
      };
    `,
  );
  assert.deepEqual(output.refusals, [
    "ERR_ACCESS_DENIED: child_process: shell is not available in Bosun's sandbox; pass the program and its arguments without a shell",
    "ERR_ACCESS_DENIED: child_process.execSync is not available in Bosun's sandbox: a synchronous child would stop the plugin's event loop; use the asynchronous form",
  ]);
  assert.deepEqual(output.spawnError, ["EACCES", "spawn ls"]);
  assert.equal(output.execError, "ERR_ACCESS_DENIED");
  assert.equal(output.slept, "value");
  assert.equal(output.elapsedOk, true);
  assert.equal(output.immediate, "now");
  assert.deepEqual(output.aborted, ["AbortError", "ABORT_ERR"]);
  assert.equal(output.preAborted, "AbortError");
  assert.equal(output.sameUrl, true);
  assert.equal(output.sameBuffer, true);
  assert.equal(output.atob, "hi");
});

test("a plugin cannot import bosun:internal, bosun:runtime, packages or files outside its directory", async () => {
  for (const [specifier, expected] of [
    ["bosun:internal", /cannot import "bosun:internal" from plugin:index.mjs: it is internal to the engine/],
    ["bosun:runtime", /cannot import "bosun:runtime" from index.mjs/],
    ["lodash", /cannot import "lodash" from index.mjs/],
    ["node:os", /cannot import "node:os" from index.mjs: .*the node: modules node:buffer, node:child_process, node:dns, node:dns\/promises, node:fs, node:fs\/promises, node:net, node:path, node:path\/posix, node:timers\/promises, node:url;/],
    ["../outside.mjs", /it leaves the plugin directory/],
    ["./missing.mjs", /the plugin has no file missing.mjs/],
  ]) {
    const engine = await createEngine({ files: { "index.mjs": `import x from ${JSON.stringify(specifier)}; export default () => {};` } });
    await assert.rejects(engine.activate(forgeRequest()), { message: expected }, specifier);
  }
  // A dynamic import inside a tool fails the same way, as a tool error.
  const engine = await createEngine({ files: { "index.mjs": `export default (api) => api.registerTool({
    name: "sneak", description: "Tries to reach the internals.", risk: "read", inputSchema: api.z.object({}),
    execute: async () => { const m = await import("bosun:internal"); return { ok: true, output: Object.keys(m.default), truncated: false }; } });` } });
  await engine.activate(forgeRequest());
  const result = await engine.call("sneak", {});
  assert.equal(result.error.code, "io_error");
  assert.match(result.error.message, /it is internal to the engine/);
});
