// A stand-in for Bosun's JS engine core, for testing the JavaScript layer under Node without
// the Rust core or wasm.
//
// - A `vm` context plays QuickJS: it has only the ECMAScript built-ins (no URL, TextEncoder,
//   fetch, console, timers…), so everything the layer relies on must come from the prelude.
// - A fake `__native` (README.md's table) is installed first: URL parsing through Node's WHATWG
//   URL, UTF-8 and base64 through Buffer, HTTP and DNS through scripted functions the test
//   supplies. It follows the real core's calling conventions (values of the context's realm, a
//   thrown `Error` with a `code`, no `undefined` in optional numeric arguments) so that mistakes
//   show here rather than in wasm.
// - The prelude's files and the pieces of `bosun:runtime` are read from the lists in the core's
//   src/builtins.rs (`PRELUDE` and the `concat!` of `bosun:runtime`), so the tests evaluate the same
//   files in the same order as the engine.
// - Modules are linked with `vm.SourceTextModule` under the same resolution rules as the core's
//   loader (crates/js/engine/src/loader.rs): plugin files by relative path, `zod` and the `node:`
//   modules (with or without the prefix), `bosun:internal` only for the engine's own modules.
// - `settle()` is the core's event loop: run jobs, then timers (`nextTimer`/`runTimers`), until
//   the promise settles; fails when nothing is left to run.
//
// Run with `node --experimental-vm-modules` (scripts/test-js does).
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { fileURLToPath } from "node:url";

export const JS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const FIXTURES = path.join(JS_DIR, "test", "fixtures");
const SRC_DIR = path.join(JS_DIR, "..", "src");

/** The `include_str!("../js/…")` paths, in order, in the part of a core source that `pattern` captures. */
function includedFiles(rustFile, pattern) {
  const match = pattern.exec(fs.readFileSync(path.join(SRC_DIR, rustFile), "utf8"));
  const files = match ? [...match[1].matchAll(/include_str!\("\.\.\/js\/([^"]+)"\)/g)].map((m) => m[1]) : [];
  if (files.length === 0) throw new Error(`harness: src/${rustFile} no longer has the list ${pattern} looks for`);
  return files;
}

/** The prelude's files in the order the core evaluates them. */
const PRELUDE_FILES = includedFiles("builtins.rs", /const PRELUDE\b[^=]*= \[([\s\S]*?)\n\];/);

/** Built-in module names → files (as src/builtins.rs maps them); a list is concatenated, as `concat!` does. */
const BUILTINS = {
  zod: "zod.js",
  "bosun:runtime": includedFiles("builtins.rs", /"bosun:runtime",\s*concat!\(([\s\S]*?)\n\s*\),/),
  "bosun:internal": "modules/internal.js",
  "bosun:plugin-dir": "modules/plugin_dir.js",
  "node:buffer": "modules/buffer.js",
  "node:child_process": "modules/child_process.js",
  "node:dns": "modules/dns.js",
  "node:dns/promises": "modules/dns_promises.js",
  "node:fs": "modules/fs.js",
  "node:fs/promises": "modules/fs_promises.js",
  "node:net": "modules/net.js",
  "node:path": "modules/path.js",
  "node:path/posix": "modules/path.js",
  "node:timers/promises": "modules/timers_promises.js",
  "node:url": "modules/url.js",
};
const NODE_MODULES = Object.keys(BUILTINS).filter((n) => n.startsWith("node:")).map((n) => n.slice(5));
const PLUGIN_PREFIX = "plugin:";

const sourceCache = new Map();
function readSource(file) {
  if (Array.isArray(file)) return file.map(readSource).join("");
  if (!sourceCache.has(file)) sourceCache.set(file, fs.readFileSync(path.join(JS_DIR, file), "utf8"));
  return sourceCache.get(file);
}

/** Joins a relative specifier onto a plugin file's directory; null when it climbs out. */
function join(base, relative) {
  const parts = base.split("/");
  parts.pop();
  for (const part of relative.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length === 0) return null;
      parts.pop();
    } else parts.push(part);
  }
  return parts.join("/");
}

/** Reads every file under a fixture directory into `{relativePath: text}`. */
export function loadFixture(name) {
  const root = path.join(FIXTURES, name);
  const files = {};
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else files[path.relative(root, full).split(path.sep).join("/")] = fs.readFileSync(full, "utf8");
    }
  };
  walk(root);
  return files;
}

/** A scripted HTTP response. */
export function reply(status, { headers = {}, body = "" } = {}) {
  return {
    status,
    headers: Object.entries(headers),
    body: typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body),
  };
}

/** An error as the core's host calls throw it: an Error with a `code`. */
export function hostError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

/**
 * Creates an engine: a fresh context with the prelude and the runtime evaluated.
 *
 * options:
 *   files      {path: source} of the plugin (a fixture from loadFixture, or inline)
 *   http       ({method, url, headers, body}) => reply(...) | throws hostError(...)
 *   lookup     (hostname) => string[] | throws hostError("ENOTFOUND" | "refused", …)
 *   hostInfo   {key: string}
 *   intl       (op, requestJson) => answerJson (throws as the host would)
 *   config     the plugin's config object (for configAll/config)
 *   taint      the session's starting taint
 */
export async function createEngine(options = {}) {
  const files = { ...(options.files ?? {}) };
  const context = vm.createContext({});
  const realm = vm.runInContext("({ Uint8Array, Error, TypeError, Array, Object })", context);
  const logs = [];
  const httpCalls = [];
  const lookups = [];
  const LEVELS = ["PUBLIC", "INTERNAL", "CONFIDENTIAL", "RESTRICTED"];
  const host = { cancelled: false, taint: options.taint ?? "PUBLIC" };

  const toRealmBytes = (bytes) => {
    const out = new realm.Uint8Array(bytes.length);
    out.set(bytes);
    return out;
  };
  const fromRealmBytes = (value, what) => {
    if (value instanceof realm.Uint8Array || ArrayBuffer.isView(value)) {
      return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    }
    if (Object.prototype.toString.call(value) === "[object ArrayBuffer]") return Buffer.from(value);
    throw new realm.TypeError(`${what}: expected a Uint8Array or an ArrayBuffer`);
  };
  const realmError = (code, message, Ctor = realm.Error) => {
    const error = new Ctor(message);
    if (code !== undefined) error.code = code;
    return error;
  };
  const requireString = (value, what) => {
    if (typeof value !== "string") throw new realm.TypeError(`${what}: expected a string, got ${typeof value}`);
    // The core converts to Rust strings, which cannot hold lone surrogates.
    if (!value.isWellFormed()) throw new realm.TypeError(`${what}: the string has a lone surrogate`);
  };

  const native = {
    log(level, message) {
      requireString(level, "log level");
      requireString(message, "log message");
      logs.push({ level, message });
    },
    config(key) {
      const value = (options.config ?? {})[key];
      return value === undefined ? undefined : JSON.stringify(value);
    },
    configAll() {
      return JSON.stringify(options.config ?? {});
    },
    isCancelled() {
      return host.cancelled;
    },
    http(...args) {
      const [method, url, headers, body, timeoutMs] = args;
      requireString(method, "http method");
      requireString(url, "http url");
      // rquickjs's Opt<f64> does not accept an explicit undefined: mirror that.
      if (args.length >= 5 && typeof timeoutMs !== "number") throw new realm.TypeError("http timeoutMs: expected a number");
      if (!Array.isArray(headers) || !headers.every((p) => Array.isArray(p) && p.length === 2 && p.every((s) => typeof s === "string"))) {
        throw new realm.TypeError("http headers: expected [[name, value], …] of strings");
      }
      const request = {
        method,
        url,
        headers: Array.from(headers, ([n, v]) => [n, v]),
        body: body === undefined || body === null ? undefined : fromRealmBytes(body, "http body"),
        timeoutMs,
      };
      httpCalls.push(request);
      if (typeof options.http !== "function") throw realmError("refused", `refused: ${url} is not granted to this plugin`);
      let response;
      try {
        response = options.http(request);
      } catch (error) {
        throw realmError(error.code ?? "network", error.message);
      }
      const out = new realm.Object();
      out.status = response.status;
      out.headers = new realm.Array();
      for (const [n, v] of response.headers) {
        const pair = new realm.Array();
        pair.push(String(n), String(v));
        out.headers.push(pair);
      }
      out.body = toRealmBytes(response.body);
      return out;
    },
    parseUrl(...args) {
      const [input, base] = args;
      requireString(input, "parseUrl input");
      if (args.length >= 2) requireString(base, "parseUrl base");
      let url;
      try {
        url = args.length >= 2 ? new URL(input, base) : new URL(input);
      } catch {
        throw realmError(undefined, `Invalid URL: ${input}`, realm.TypeError);
      }
      const out = new realm.Object();
      for (const key of ["href", "origin", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"]) {
        out[key] = url[key];
      }
      return out;
    },
    utf8Encode(text) {
      requireString(text, "utf8Encode");
      return toRealmBytes(Buffer.from(text, "utf8"));
    },
    utf8Decode(bytes, fatal) {
      const buffer = fromRealmBytes(bytes, "utf8Decode");
      try {
        return new TextDecoder("utf-8", { fatal: !!fatal, ignoreBOM: true }).decode(buffer);
      } catch {
        throw realmError(undefined, "The encoded data was not valid UTF-8", realm.TypeError);
      }
    },
    base64Encode(bytes) {
      return fromRealmBytes(bytes, "base64Encode").toString("base64");
    },
    base64Decode(text) {
      requireString(text, "base64Decode");
      const cleaned = text.replace(/\s/g, "").replace(/=+$/, "");
      if (!/^[A-Za-z0-9+/]*$/.test(cleaned) || cleaned.length % 4 === 1) {
        throw realmError(undefined, "invalid base64", realm.TypeError);
      }
      // As Rust's STANDARD engine: the last character's unused bits must be zero.
      const decoded = Buffer.from(cleaned, "base64");
      if (decoded.toString("base64").replace(/=+$/, "") !== cleaned) {
        throw realmError(undefined, "invalid base64: Invalid last symbol", realm.TypeError);
      }
      return toRealmBytes(decoded);
    },
    sessionTaint() {
      return host.taint;
    },
    escalateTaint(level) {
      requireString(level, "escalateTaint");
      const index = LEVELS.indexOf(level);
      if (index < 0) throw realmError(undefined, `unknown classification "${level}"`, realm.TypeError);
      if (index > LEVELS.indexOf(host.taint)) host.taint = level;
    },
    hostInfo(key) {
      requireString(key, "hostInfo");
      return (options.hostInfo ?? {})[key];
    },
    intl(op, request) {
      requireString(op, "intl");
      requireString(request, "intl");
      // The host computes Intl (crates/intl); the harness has no locale data of its own.
      if (typeof options.intl !== "function") throw realmError(undefined, "Intl is computed by the host, and this harness has none", realm.TypeError);
      return options.intl(op, request);
    },
    lookup(hostname) {
      requireString(hostname, "lookup");
      lookups.push(hostname);
      if (typeof options.lookup !== "function") throw realmError("refused", `refused: ${hostname} is not granted`);
      let found;
      try {
        found = options.lookup(hostname);
      } catch (error) {
        throw realmError(error.code ?? "refused", error.message);
      }
      const out = new realm.Array();
      for (const address of found) out.push(String(address));
      return out;
    },
  };

  // Processes: the harness starts none (the Rust tests run real ones through the host).
  native.spawn = (request) => {
    requireString(request, "spawn");
    throw realmError("EACCES", "this plugin may not start processes here");
  };
  native.processWrite = () => {
    throw realmError("EPIPE", "there is no process");
  };
  native.processCloseStdin = () => {};
  native.processKill = () => {};
  native.processPoll = () => new realm.Array();

  context.__native = native;
  for (const file of PRELUDE_FILES) vm.runInContext(readSource(file), context, { filename: file });

  // ----- modules -------------------------------------------------------------------------
  const modules = new Map();
  const commonjs = new Set();
  const isEngineModule = (base) => base.startsWith("bosun:") || base.startsWith("node:");

  function resolve(specifier, base) {
    if (specifier === "bosun:internal") {
      if (isEngineModule(base)) return specifier;
      throw new realm.Error(`cannot import "${specifier}" from ${base}: it is internal to the engine`);
    }
    if (specifier.startsWith("bosun:") && isEngineModule(base)) return specifier;
    if (specifier === "zod") return "zod";
    const bare = specifier.startsWith("node:") ? specifier.slice(5) : specifier;
    if (NODE_MODULES.includes(bare)) return `node:${bare}`;
    if (base === "bosun:runtime") {
      const file = specifier.startsWith("./") ? specifier.slice(2) : specifier;
      if (Object.hasOwn(files, file)) return PLUGIN_PREFIX + file;
    }
    if (base.startsWith(PLUGIN_PREFIX) && (specifier.startsWith("./") || specifier.startsWith("../"))) {
      const from = base.slice(PLUGIN_PREFIX.length);
      const file = join(from, specifier);
      if (file === null) throw new realm.Error(`cannot import "${specifier}" from ${from}: it leaves the plugin directory`);
      if (!Object.hasOwn(files, file)) throw new realm.Error(`cannot import "${specifier}" from ${from}: the plugin has no file ${file}`);
      return PLUGIN_PREFIX + file;
    }
    const shown = base.startsWith(PLUGIN_PREFIX) ? base.slice(PLUGIN_PREFIX.length) : base;
    throw new realm.Error(`cannot import "${specifier}" from ${shown}: a plugin may import its own files (with a relative path), "zod" and the node: modules ${NODE_MODULES.map((m) => `node:${m}`).sort().join(", ")}; bundle other dependencies into the plugin directory`);
  }

  function moduleFor(name) {
    let module = modules.get(name);
    if (module) return module;
    let source;
    if (Object.hasOwn(BUILTINS, name)) source = readSource(BUILTINS[name]);
    else if (name.startsWith(PLUGIN_PREFIX)) {
      source = files[name.slice(PLUGIN_PREFIX.length)];
      // The core wraps CommonJS files the same way (loader.rs, `commonjs_module`).
      if (source !== undefined && (name.endsWith(".cjs") || commonjs.has(name.slice(PLUGIN_PREFIX.length)))) {
        source = "const module = { exports: {} };\n" +
          "const require = (id) => { throw new Error(`require(${JSON.stringify(String(id))}) is not available in Bosun's sandbox: bundle the dependency into the plugin, or use an ES module entry with import`); };\n" +
          `(function (module, exports, require) {\n${source}\n}).call(module.exports, module, module.exports, require);\n` +
          "export default module.exports;\n";
      }
    }
    if (source === undefined) throw new realm.Error(`could not load module ${name}`);
    module = new vm.SourceTextModule(source, {
      identifier: name,
      context,
      initializeImportMeta(meta) {
        // As loader.rs: a plugin file is seen at /plugin/<path>.
        if (name.startsWith(PLUGIN_PREFIX)) {
          const filename = `/plugin/${name.slice(PLUGIN_PREFIX.length)}`;
          meta.url = new URL(`file://${filename}`).href;
          meta.filename = filename;
          meta.dirname = filename.slice(0, filename.lastIndexOf("/"));
        } else {
          meta.url = name;
        }
      },
      importModuleDynamically: (specifier) => dynamicImport(specifier, name),
    });
    modules.set(name, module);
    return module;
  }

  const linker = (specifier, referencing) => moduleFor(resolve(specifier, referencing.identifier));

  async function dynamicImport(specifier, base) {
    const module = moduleFor(resolve(specifier, base));
    if (module.status === "unlinked") await module.link(linker);
    if (module.status === "linked") await module.evaluate();
    if (module.status === "errored") throw module.error;
    return module;
  }

  const runtime = moduleFor("bosun:runtime");
  await runtime.link(linker);
  await runtime.evaluate();
  const engine = vm.runInContext("globalThis.__engine", context);
  vm.runInContext("delete globalThis.__engine", context);
  if (!engine) throw new Error("the runtime did not define __engine");

  // ----- the event loop ------------------------------------------------------------------
  async function settle(promise) {
    let state = "pending";
    let value;
    promise.then(
      (v) => { state = "resolved"; value = v; },
      (e) => { state = "rejected"; value = e; },
    );
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      if (state === "resolved") return value;
      if (state === "rejected") throw value;
      if (host.cancelled) throw new Error("cancelled: the call was cancelled or ran past its deadline");
      const wait = engine.nextTimer();
      if (wait === undefined) throw new Error("the plugin's promise can never settle");
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 20)));
      engine.runTimers();
    }
  }

  return {
    context,
    engine,
    host,
    logs,
    httpCalls,
    lookups,
    files,
    settle,
    /** Activates with a request object; resolves to the parsed descriptor. */
    async activate(request) {
      // As engine.rs: the `.js` files the host found to be CommonJS load as `.cjs` files do.
      for (const file of request.commonjs ?? []) commonjs.add(file);
      return JSON.parse(await settle(engine.activate(JSON.stringify(request))));
    },
    /** Calls a tool; resolves to the parsed tool result. */
    async call(tool, input) {
      const text = await settle(engine.call(tool, typeof input === "string" ? input : JSON.stringify(input)));
      return JSON.parse(text);
    },
    /** Runs a hook; resolves to the parsed result. */
    async hook(op, payload) {
      return JSON.parse(await settle(engine.hook(op, JSON.stringify(payload))));
    },
    /** Evaluates a classic script in the context. */
    eval(code) {
      return vm.runInContext(code, context);
    },
    /** Runs an async function body (strict, as module code is) through the event loop; returns its JSON result. */
    async run(body) {
      const promise = vm.runInContext(`"use strict"; (async () => { ${body} })().then((v) => JSON.stringify(v === undefined ? null : v))`, context);
      return JSON.parse(await settle(promise));
    },
  };
}

/** A Forge activation request with defaults. */
export function forgeRequest(overrides = {}) {
  return {
    format: "forge",
    name: "test-plugin",
    entry: "index.mjs",
    capabilities: ["tools:register"],
    trust: "trusted",
    config: {},
    limits: { maxOutputBytes: 65536, maxEntries: 200, commandTimeoutMs: 60000 },
    reservedToolNames: ["list_files", "read_file", "search", "create_file", "apply_patch", "run_command"],
    ...overrides,
  };
}

/** A Triggerfish activation request with defaults. */
export function triggerfishRequest(overrides = {}) {
  return {
    format: "triggerfish",
    name: "test-plugin",
    entry: "mod.ts",
    capabilities: [],
    trust: "sandboxed",
    config: {},
    limits: { maxOutputBytes: 65536, maxEntries: 200, commandTimeoutMs: 60000 },
    reservedToolNames: [],
    ...overrides,
  };
}
