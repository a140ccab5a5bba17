// node:fs and node:fs/promises: a plugin reads its own directory (the bytes the host handed
// over) and nothing else; every write is refused. Each hostile case here would read outside the
// directory, or write, if resolution or the read-only rule were removed.
import test from "node:test";
import assert from "node:assert/strict";

import { createEngine, forgeRequest } from "./harness.mjs";

const SETTINGS = JSON.stringify({ maxResults: 3, engine: "duck" });

function directoryOf(files) {
  return Object.fromEntries(Object.entries(files).map(([path, text]) => [path, Buffer.from(text).toString("base64")]));
}

/** A plugin whose one tool runs `body` with `imports`, its directory holding `extra` too. */
async function probe(imports, body, { extra = {}, entry = "index.mjs" } = {}) {
  const files = {
    [entry]: `${imports}
      export default (api) => api.registerTool({
        name: "probe", description: "Runs the probe.", risk: "read", inputSchema: api.z.object({}),
        execute: async () => ({ ok: true, output: await (async () => { ${body} })(), truncated: false }),
      });`,
  };
  const engine = await createEngine({ files });
  const directory = directoryOf({ ...files, "plugin.json": "{}", "settings.json": SETTINGS, "data/words.txt": "alpha\nbeta\n", ...extra });
  await engine.activate(forgeRequest({ entry, directory }));
  const result = await engine.call("probe", {});
  if (!result.ok) assert.fail(`the probe failed: ${result.error.message}`);
  return result.output;
}

test("a plugin reads its own settings.json as web-tools 1.1 does, by URL, path and relative name", async () => {
  const output = await probe(
    `import { readFile, readdir, stat, access } from "node:fs/promises";
     import fs, { readFileSync, existsSync, readdirSync, statSync } from "node:fs";
     import path from "node:path";
     import { fileURLToPath } from "node:url";`,
    `
      const byUrl = JSON.parse(await readFile(new URL("./settings.json", import.meta.url), "utf8"));
      const here = path.dirname(fileURLToPath(import.meta.url));
      const byPath = JSON.parse(readFileSync(path.join(here, "settings.json"), { encoding: "utf-8" }));
      const byName = JSON.parse(String(readFileSync("settings.json")));
      const callback = await new Promise((resolve) => fs.readFile("data/words.txt", "utf8", (e, text) => resolve([e, text])));
      const info = await stat("settings.json");
      await access("settings.json");
      return {
        byUrl, same: JSON.stringify(byUrl) === JSON.stringify(byPath) && JSON.stringify(byPath) === JSON.stringify(byName),
        url: import.meta.url, dirname: import.meta.dirname, here,
        callback, exists: [existsSync("settings.json"), existsSync("nope.json"), existsSync(import.meta.filename)],
        root: (await readdir(here)).sort(), nested: readdirSync(".", { recursive: true }).sort(),
        typed: readdirSync("/plugin", { withFileTypes: true }).map((d) => d.name + (d.isDirectory() ? "/" : "")),
        size: info.size, isFile: info.isFile(), dirIsDir: statSync("data").isDirectory(),
        missing: statSync("nope", { throwIfNoEntry: false }),
      };
    `,
  );
  assert.deepEqual(output.byUrl, { maxResults: 3, engine: "duck" });
  assert.equal(output.same, true);
  assert.equal(output.url, "file:///plugin/index.mjs");
  assert.equal(output.dirname, "/plugin");
  assert.equal(output.here, "/plugin");
  assert.deepEqual(output.callback, [null, "alpha\nbeta\n"]);
  assert.deepEqual(output.exists, [true, false, true]);
  assert.deepEqual(output.root, ["data", "index.mjs", "plugin.json", "settings.json"]);
  assert.deepEqual(output.nested, ["data", "data/words.txt", "index.mjs", "plugin.json", "settings.json"]);
  assert.deepEqual(output.typed, ["data/", "index.mjs", "plugin.json", "settings.json"]);
  assert.equal(output.size, SETTINGS.length);
  assert.equal(output.isFile, true);
  assert.equal(output.dirIsDir, true);
  assert.equal(output.missing, undefined);
});

test("paths that leave the plugin's directory are refused, never clamped", async () => {
  const output = await probe(
    `import { readFileSync, existsSync, readdirSync, statSync } from "node:fs";
     import { readFile } from "node:fs/promises";`,
    `
      const attempts = [
        "../outside.txt", "../../etc/passwd", "data/../../etc/passwd", "settings.json/../../x",
        "/etc/passwd", "/workspace/secret.txt", "/plugin/../etc/passwd", "/plugin-other/settings.json",
        "/", "file:///etc/passwd", "file://evil.example/plugin/settings.json",
        "file:///plugin/..%2Fetc%2Fpasswd", "/plugin/settings.json\\u0000.png",
      ];
      const codes = [];
      for (const p of attempts) {
        try { readFileSync(p); codes.push([p, "read"]); } catch (e) { codes.push([p, e.code]); }
      }
      let viaUrl;
      try { await readFile(new URL("file:///etc/passwd")); viaUrl = "read"; } catch (e) { viaUrl = e.code; }
      let listing;
      try { readdirSync(".."); listing = "listed"; } catch (e) { listing = e.code; }
      let bytesPath;
      try { readFileSync(new TextEncoder().encode("/etc/passwd")); bytesPath = "read"; } catch (e) { bytesPath = e.code; }
      let message;
      try { statSync("/etc/passwd"); } catch (e) { message = e.message; }
      return { codes, viaUrl, listing, bytesPath, exists: existsSync("/etc/passwd"), message };
    `,
  );
  assert.deepEqual(output.codes, [
    ["../outside.txt", "EACCES"],
    ["../../etc/passwd", "EACCES"],
    ["data/../../etc/passwd", "EACCES"],
    ["settings.json/../../x", "EACCES"],
    ["/etc/passwd", "EACCES"],
    ["/workspace/secret.txt", "EACCES"],
    ["/plugin/../etc/passwd", "EACCES"],
    ["/plugin-other/settings.json", "EACCES"],
    ["/", "EACCES"],
    ["file:///etc/passwd", "EACCES"],
    ["file://evil.example/plugin/settings.json", "ERR_INVALID_FILE_URL_HOST"],
    ["file:///plugin/..%2Fetc%2Fpasswd", "ERR_INVALID_FILE_URL_PATH"],
    ["/plugin/settings.json\u0000.png", "ERR_INVALID_ARG_VALUE"],
  ]);
  assert.equal(output.viaUrl, "EACCES");
  assert.equal(output.listing, "EACCES");
  assert.equal(output.bytesPath, "EACCES");
  assert.equal(output.exists, false);
  assert.match(output.message, /^EACCES: permission denied, stat '\/etc\/passwd': Bosun lets a plugin read only its own directory \(\/plugin\)$/);
});

test("every write through node:fs and node:fs/promises is refused as a read-only file system", async () => {
  const output = await probe(
    `import fs from "node:fs";
     import * as fsp from "node:fs/promises";`,
    `
      const codes = {};
      for (const name of ["writeFileSync", "appendFileSync", "mkdirSync", "rmSync", "unlinkSync", "renameSync", "copyFileSync", "symlinkSync", "chmodSync", "truncateSync", "createWriteStream"]) {
        try { fs[name]("settings.json", "x"); codes[name] = "wrote"; } catch (e) { codes[name] = e.code; }
      }
      for (const name of ["writeFile", "appendFile", "mkdir", "rm", "unlink", "rename", "copyFile", "symlink", "chmod", "truncate"]) {
        try { await fsp[name]("settings.json", "x"); codes["promises." + name] = "wrote"; } catch (e) { codes["promises." + name] = e.code; }
      }
      codes.callback = await new Promise((resolve) => fs.writeFile("settings.json", "x", (e) => resolve(e?.code)));
      try { fs.accessSync("settings.json", fs.constants.W_OK); codes.access = "writable"; } catch (e) { codes.access = e.code; }
      let message;
      try { fs.writeFileSync("settings.json", "{}"); } catch (e) { message = e.message; }
      return { codes, message, after: fs.readFileSync("settings.json", "utf8") };
    `,
  );
  for (const [name, code] of Object.entries(output.codes)) assert.equal(code, "EROFS", name);
  assert.equal(Object.keys(output.codes).length, 23);
  assert.match(output.message, /^EROFS: read-only file system, writeFile 'settings.json': .*read-only in Bosun/);
  assert.equal(output.after, SETTINGS);
});

test("a plugin without a directory in its request reads nothing", async () => {
  const engine = await createEngine({
    files: {
      "index.mjs": `import { existsSync, readFileSync } from "node:fs";
        export default (api) => api.registerTool({ name: "probe", description: "Runs the probe.", risk: "read", inputSchema: api.z.object({}),
          execute: async () => { let code; try { readFileSync("index.mjs"); } catch (e) { code = e.code; } return { ok: true, output: [existsSync("index.mjs"), code], truncated: false }; } });`,
    },
  });
  await engine.activate(forgeRequest());
  const result = await engine.call("probe", {});
  assert.deepEqual(result.output, [false, "ENOENT"]);
});

test("a CommonJS entry (.cjs, or .js the host names) whose module.exports is an object with activate loads like the ES form", async () => {
  for (const source of [
    "module.exports = { activate(api) { api.registerTool(tool(api)); } };",
    "exports.activate = function (api) { api.registerTool(tool(api)); };",
    "module.exports = function activate(api) { api.registerTool(tool(api)); };",
  ]) {
    const engine = await createEngine({
      files: {
        "index.cjs": `function tool(api) { return { name: "hello", description: "Says hello.", risk: "read", inputSchema: api.z.object({}),
          execute: async () => ({ ok: true, output: "hello", truncated: false }) }; }\n${source}`,
      },
    });
    const descriptor = await engine.activate(forgeRequest({ entry: "index.cjs" }));
    assert.deepEqual(descriptor.tools.map((t) => t.name), ["hello"], source);
    assert.equal((await engine.call("hello", {})).output, "hello", source);
  }
  // A `.js` entry the host found to be CommonJS (no package.json type, no ES syntax) too.
  const js = await createEngine({
    files: {
      "index.js": `module.exports = { activate(api) { api.registerTool({ name: "hello", description: "Says hello.", risk: "read",
        inputSchema: api.z.object({}), execute: async () => ({ ok: true, output: typeof require, truncated: false }) }); } };`,
    },
  });
  await js.activate(forgeRequest({ entry: "index.js", commonjs: ["index.js"] }));
  assert.equal((await js.call("hello", {})).output, "function");
  // Without the host's word a `.js` file is an ES module, where `module` does not exist.
  const esm = await createEngine({ files: { "index.js": "module.exports = { activate() {} };" } });
  await assert.rejects(esm.activate(forgeRequest({ entry: "index.js" })), { message: /module is not defined/ });
  // An object without a callable activate is still refused with the reason.
  const engine = await createEngine({ files: { "index.cjs": "module.exports = { activate: 42 };" } });
  await assert.rejects(engine.activate(forgeRequest({ entry: "index.cjs" })), { message: /must export an activate function/ });
});
