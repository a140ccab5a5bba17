// The prelude's web globals, in a context that starts with only the ECMAScript built-ins.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createEngine } from "./harness.mjs";

test("the globals exist, and __native and the internal hand-over global are gone", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const names = ["console", "URL", "URLSearchParams", "TextEncoder", "TextDecoder", "atob", "btoa",
      "AbortController", "AbortSignal", "Event", "EventTarget", "DOMException", "setTimeout", "clearTimeout",
      "setInterval", "clearInterval", "setImmediate", "clearImmediate", "queueMicrotask", "Headers", "Request",
      "Response", "fetch", "Buffer", "structuredClone", "performance", "process"];
    return {
      missing: names.filter((n) => typeof globalThis[n] === "undefined"),
      enumerable: names.filter((n) => Object.keys(globalThis).includes(n)),
      native: typeof __native, internal: typeof __bosunInternal, engine: typeof __engine, deno: typeof Deno,
      shared: typeof __bosunPrelude, own: ["__native", "__bosunPrelude", "__bosunInternal", "__engine"].filter((n) => Object.getOwnPropertyNames(globalThis).includes(n)),
    };
  `);
  assert.deepEqual(result, { missing: [], enumerable: [], native: "undefined", internal: "undefined", engine: "undefined", deno: "undefined", shared: "undefined", own: [] });
});

test("URL: parsing, setters, searchParams linked both ways, errors", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const u = new URL("https://user:pw@Example.COM:8080/a/../b?x=1&y=%C3%A9#frag");
    const parts = [u.href, u.origin, u.protocol, u.username, u.password, u.host, u.hostname, u.port, u.pathname, u.search, u.hash];
    const relative = new URL("../c?d", "https://example.com/a/b/").href;
    const withUrlBase = new URL("/x", new URL("https://example.com/y")).href;
    const s = new URL("https://example.com/p");
    s.searchParams.set("q", "forge plugins");
    s.searchParams.append("n", "1");
    const afterParams = s.href;
    s.search = "?z=9";
    const paramsAfterSearch = [...s.searchParams];
    s.pathname = "/new path";
    s.hash = "h";
    s.port = "8443";
    s.hostname = "other.example";
    s.protocol = "http";
    const afterSetters = s.href;
    s.protocol = "mailto";
    const special = s.protocol;
    let invalid;
    try { new URL("not a url"); } catch (e) { invalid = [e.name, e.message, e.code]; }
    return { parts, relative, withUrlBase, afterParams, paramsAfterSearch, afterSetters, special, invalid,
      canParse: [URL.canParse("https://x.y"), URL.canParse("nope"), URL.canParse("/p", "https://x.y")],
      parse: URL.parse("nope"), json: JSON.stringify({ u: new URL("https://a.example") }), string: String(new URL("https://a.example/b")) };
  `);
  assert.deepEqual(result, {
    parts: ["https://user:pw@example.com:8080/b?x=1&y=%C3%A9#frag", "https://example.com:8080", "https:", "user", "pw", "example.com:8080", "example.com", "8080", "/b", "?x=1&y=%C3%A9", "#frag"],
    relative: "https://example.com/a/c?d",
    withUrlBase: "https://example.com/x",
    afterParams: "https://example.com/p?q=forge+plugins&n=1",
    paramsAfterSearch: [["z", "9"]],
    afterSetters: "http://other.example:8443/new%20path?z=9#h",
    special: "http:",
    invalid: ["TypeError", "Invalid URL: not a url", "ERR_INVALID_URL"],
    canParse: [true, false, true],
    parse: null,
    json: '{"u":"https://a.example/"}',
    string: "https://a.example/b",
  });
});

test("URLSearchParams: parsing, serialisation, mutation and iteration", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const p = new URLSearchParams("?a=1&b=x+y&a=2&c=%E2%9C%93&d&=e");
    const fromRecord = new URLSearchParams({ q: "a&b=c", emoji: "👋", star: "*-._ !'()~" }).toString();
    const fromPairs = new URLSearchParams([["x", "1"], ["x", "2"]]).getAll("x");
    p.delete("b");
    p.set("a", "3");
    p.sort();
    const seen = [];
    p.forEach((value, key) => seen.push(key + "=" + value));
    return { all: [...p.entries()], str: p.toString(), size: p.size, has: [p.has("a"), p.has("a", "4"), p.has("zz")],
      get: [p.get("c"), p.get("missing")], fromRecord, fromPairs, seen, keys: [...p.keys()] };
  `);
  assert.deepEqual(result, {
    all: [["", "e"], ["a", "3"], ["c", "✓"], ["d", ""]],
    str: "=e&a=3&c=%E2%9C%93&d=",
    size: 4,
    has: [true, false, false],
    get: ["✓", null],
    fromRecord: "q=a%26b%3Dc&emoji=%F0%9F%91%8B&star=*-._+%21%27%28%29%7E",
    fromPairs: ["1", "2"],
    seen: ["=e", "a=3", "c=✓", "d="],
    keys: ["", "a", "c", "d"],
  });
});

test("TextEncoder and TextDecoder: UTF-8, streaming, fatal, BOM", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const enc = new TextEncoder();
    const bytes = enc.encode("a€😀");
    const target = new Uint8Array(4);
    const into = enc.encodeInto("a€😀", target);
    const stream = new TextDecoder();
    const euro = [0xe2, 0x82, 0xac];
    const streamed = stream.decode(new Uint8Array(euro.slice(0, 2)), { stream: true }) + stream.decode(new Uint8Array(euro.slice(2)));
    let fatal;
    try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xff])); } catch (e) { fatal = e.name; }
    let label;
    try { new TextDecoder("latin1"); } catch (e) { label = e.name; }
    return {
      bytes: [...bytes], into, target: [...target], streamed,
      lossy: new TextDecoder().decode(new Uint8Array([0x61, 0xff])),
      bom: new TextDecoder().decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x68])),
      keepBom: new TextDecoder("utf-8", { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x68])).length,
      fromBuffer: new TextDecoder().decode(new Uint8Array([104, 105]).buffer),
      fatal, label, lone: [...enc.encode("\\ud800")],
    };
  `);
  assert.deepEqual(result, {
    bytes: [0x61, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80],
    into: { read: 2, written: 4 },
    target: [0x61, 0xe2, 0x82, 0xac],
    streamed: "€",
    lossy: "a\ufffd",
    bom: "h",
    keepBom: 2,
    fromBuffer: "hi",
    fatal: "TypeError",
    label: "RangeError",
    lone: [0xef, 0xbf, 0xbd],
  });
});

test("atob and btoa follow the HTML rules", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const errors = [];
    for (const attempt of [() => btoa("€"), () => atob("a"), () => atob("a*bc")]) {
      try { attempt(); errors.push("none"); } catch (e) { errors.push(e.name + ":" + (e instanceof DOMException)); }
    }
    return { b: btoa("hello\\xff"), a: atob("aGVsbG8="), unpadded: atob(" aGVs bG8 "), errors,
      loose: [atob("aGl="), atob("aGk"), Buffer.from("aGl", "base64").toString(), Buffer.from("aR", "base64").length] };
  `);
  assert.deepEqual(result, {
    b: "aGVsbG//",
    a: "hello",
    unpadded: "hello",
    errors: ["InvalidCharacterError:true", "InvalidCharacterError:true", "InvalidCharacterError:true"],
    loose: ["hi", "hi", "hi", 1],
  });
});

test("Buffer: a Uint8Array subclass with Node's encodings and helpers", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const b = Buffer.from("héllo", "utf8");
    const sub = b.slice(1, 3);
    sub[0] = 0x41;
    const errors = [];
    try { Buffer.from("x", "klingon"); } catch (e) { errors.push(e.message); }
    try { Buffer.from(42); } catch (e) { errors.push(e.name); }
    return {
      isU8: b instanceof Uint8Array, isBuffer: [Buffer.isBuffer(b), Buffer.isBuffer(new Uint8Array(1))],
      length: b.length, shared: b.toString(),
      hex: Buffer.from("6869ff", "hex").toString("hex"), badHex: Buffer.from("68zz69", "hex").length,
      base64: Buffer.from("hi there").toString("base64"), base64url: Buffer.from([0xfb, 0xff]).toString("base64url"),
      fromB64: Buffer.from("aGkgdGhlcmU", "base64").toString(), fromB64url: [...Buffer.from("-_8", "base64url")],
      latin1: Buffer.from("é", "latin1").length,
      byteLength: [Buffer.byteLength("€"), Buffer.byteLength("aGk=", "base64"), Buffer.byteLength(new Uint8Array(5)), Buffer.byteLength("😀", "utf8")],
      concat: Buffer.concat([Buffer.from("ab"), new Uint8Array([99]), Buffer.from("d")]).toString(),
      concatLimited: Buffer.concat([Buffer.from("abcdef")], 3).toString(),
      alloc: [...Buffer.alloc(3)], filled: Buffer.alloc(4, "ab").toString(), allocNumber: [...Buffer.alloc(2, 7)],
      json: JSON.stringify(Buffer.from([1, 2])),
      fromJson: Buffer.from({ type: "Buffer", data: [104, 105] }).toString(),
      equals: Buffer.from("a").equals(Buffer.from("a")), compare: Buffer.compare(Buffer.from("a"), Buffer.from("b")),
      indexOf: [Buffer.from("hello world").indexOf("world"), Buffer.from("abc").includes("d"), Buffer.from("abc").indexOf(98)],
      mapped: Buffer.isBuffer(Buffer.from([1, 2]).map((x) => x * 2)),
      sub: Buffer.isBuffer(b.subarray(0, 1)),
      fromArrayBuffer: (() => { const ab = new Uint8Array([1, 2, 3]).buffer; const v = Buffer.from(ab, 1); v[0] = 9; return [new Uint8Array(ab)[1], v.length]; })(),
      write: (() => { const t = Buffer.alloc(4); const n = t.write("hé", 1); return [n, [...t]]; })(),
      copy: (() => { const t = Buffer.alloc(3); const n = Buffer.from("xyz").copy(t, 1); return [n, t.toString()]; })(),
      range: Buffer.from("hello").toString("utf8", 1, 3),
      errors, encodings: [Buffer.isEncoding("utf-8"), Buffer.isEncoding("nope")],
    };
  `);
  assert.deepEqual(result, {
    isU8: true, isBuffer: [true, false], length: 6, shared: "hA\ufffdllo",
    hex: "6869ff", badHex: 1,
    base64: "aGkgdGhlcmU=", base64url: "-_8",
    fromB64: "hi there", fromB64url: [0xfb, 0xff],
    latin1: 1,
    byteLength: [3, 2, 5, 4],
    concat: "abcd", concatLimited: "abc",
    alloc: [0, 0, 0], filled: "abab", allocNumber: [7, 7],
    json: '{"type":"Buffer","data":[1,2]}',
    fromJson: "hi",
    equals: true, compare: -1,
    indexOf: [6, false, 1],
    mapped: true, sub: true,
    fromArrayBuffer: [9, 2],
    write: [3, [0, 0x68, 0xc3, 0xa9]],
    copy: [2, "\u0000xy"],
    range: "el",
    errors: ["Unknown encoding: klingon", "TypeError"],
    encodings: [true, false],
  });
});

test("timers: order, clearing, intervals, immediates, microtasks; unref'd timers keep nothing alive", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const order = [];
    await new Promise((resolve) => {
      setTimeout(() => order.push("t30"), 30);
      const cleared = setTimeout(() => order.push("cleared"), 10);
      clearTimeout(cleared);
      setTimeout((a, b) => order.push("t10:" + a + b), 10, "x", "y");
      setImmediate(() => order.push("immediate"));
      queueMicrotask(() => order.push("microtask"));
      let n = 0;
      const interval = setInterval(() => { order.push("i" + ++n); if (n === 3) clearInterval(interval); }, 5);
      setTimeout(resolve, 60);
      const id = setTimeout(() => order.push("by number"), 1);
      clearTimeout(+id);
    });
    const handle = setTimeout(() => {}, 1);
    return { order, handle: [typeof handle, typeof +handle, handle.hasRef(), handle.unref().hasRef(), handle.ref() === handle] };
  `);
  assert.equal(result.order[0], "microtask");
  assert.equal(result.order[1], "immediate");
  assert.deepEqual(result.order.filter((e) => e.startsWith("i")).slice(1), ["i1", "i2", "i3"]);
  assert.ok(result.order.indexOf("t10:xy") < result.order.indexOf("t30"));
  assert.ok(!result.order.includes("cleared"));
  assert.ok(!result.order.includes("by number"));
  assert.deepEqual(result.handle, ["object", "number", true, false, true]);

  // Only an unref'd timer is left: nothing keeps the loop alive.
  const engine2 = await createEngine();
  engine2.eval(`setTimeout(() => {}, 100000).unref(); AbortSignal.timeout(100000);`);
  assert.equal(engine2.engine.nextTimer(), undefined);
  engine2.eval(`globalThis.t = setTimeout(() => {}, 50)`);
  const wait = engine2.engine.nextTimer();
  assert.ok(wait > 0 && wait <= 50, String(wait));
  engine2.eval(`clearTimeout(t)`);
  assert.equal(engine2.engine.nextTimer(), undefined);
  await assert.rejects(engine2.run(`await new Promise(() => {});`), /can never settle/);
  // A throwing timer is reported to the log, not to whoever is awaiting.
  await engine2.run(`await new Promise((r) => { setTimeout(() => { throw new Error("timer boom"); }, 1); setTimeout(r, 5); });`);
  assert.ok(engine2.logs.some((l) => l.level === "error" && l.message.includes("Uncaught Error: timer boom")));
});

test("AbortController, AbortSignal (abort, timeout, any) and EventTarget", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const controller = new AbortController();
    const events = [];
    controller.signal.onabort = (e) => events.push("onabort:" + e.type);
    controller.signal.addEventListener("abort", () => events.push("listener"), { once: true });
    controller.signal.addEventListener("abort", { handleEvent: (e) => events.push("object:" + (e.target === controller.signal)) });
    const combined = AbortSignal.any([controller.signal, new AbortController().signal]);
    controller.abort();
    controller.abort("again");
    const reason = controller.signal.reason;
    const timeout = AbortSignal.timeout(10);
    // AbortSignal.timeout's timer is unref'd (as in Node): another timer keeps the loop going.
    const keepAlive = setTimeout(() => {}, 1000);
    await new Promise((r) => timeout.addEventListener("abort", r));
    clearTimeout(keepAlive);
    let thrown;
    try { timeout.throwIfAborted(); } catch (e) { thrown = e.name; }
    let illegal;
    try { new AbortSignal(); } catch (e) { illegal = e.name; }
    const target = new EventTarget();
    let count = 0;
    const listener = () => count++;
    target.addEventListener("ping", listener);
    target.addEventListener("ping", listener);
    target.dispatchEvent(new Event("ping"));
    target.removeEventListener("ping", listener);
    target.dispatchEvent(new Event("ping"));
    const cancelable = new Event("c", { cancelable: true });
    target.addEventListener("c", (e) => e.preventDefault());
    const notPrevented = target.dispatchEvent(cancelable);
    const viaSignal = new AbortController();
    target.addEventListener("s", () => count += 10, { signal: viaSignal.signal });
    viaSignal.abort();
    target.dispatchEvent(new Event("s"));
    return {
      events, reason: [reason.name, reason.message, reason.code, reason instanceof DOMException, reason instanceof Error],
      combined: [combined.aborted, combined.reason === reason], timeout: [timeout.aborted, timeout.reason.name], thrown, illegal,
      count, notPrevented, prevented: cancelable.defaultPrevented,
      staticAbort: [AbortSignal.abort().reason.name, AbortSignal.abort("why").reason],
    };
  `);
  assert.deepEqual(result, {
    events: ["onabort:abort", "listener", "object:true"],
    reason: ["AbortError", "This operation was aborted", 20, true, true],
    combined: [true, true],
    timeout: [true, "TimeoutError"],
    thrown: "TimeoutError",
    illegal: "TypeError",
    count: 1,
    notPrevented: false,
    prevented: true,
    staticAbort: ["AbortError", "why"],
  });
});

test("structuredClone, DOMException, performance and process", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const source = { date: new Date(0), map: new Map([["k", { v: 1 }]]), set: new Set([1]), bytes: new Uint8Array([1, 2]), re: /a/g, nested: [1, { x: 2 }] };
    source.self = source;
    const copy = structuredClone(source);
    let functionError;
    try { structuredClone({ f() {} }); } catch (e) { functionError = [e.name, e instanceof DOMException]; }
    const error = structuredClone(new RangeError("cloned"));
    const dom = new DOMException("m", { name: "NotFoundError", cause: 1 });
    return {
      clone: [copy !== source, copy.self === copy, copy.date.getTime(), copy.map.get("k").v, copy.set.has(1), [...copy.bytes], copy.re.flags, copy.nested[1].x],
      functionError, error: [error instanceof RangeError, error.message],
      dom: [dom.name, dom.message, dom.code, dom.cause, DOMException.NOT_FOUND_ERR, new DOMException().name],
      performance: typeof performance.now() === "number" && performance.now() >= 0,
      process: [JSON.stringify(process.env), process.platform, process.cwd(), typeof process.nextTick, Array.isArray(process.hrtime())],
    };
  `);
  assert.deepEqual(result, {
    clone: [true, true, 0, 1, true, [1, 2], "g", 2],
    functionError: ["DataCloneError", true],
    error: [true, "cloned"],
    dom: ["NotFoundError", "m", 8, 1, 8, "Error"],
    performance: true,
    process: ["{}", "wasi", "/workspace", "function", true],
  });
});

test("console formats like Node and goes to the host's log at the right level", async () => {
  const engine = await createEngine();
  await engine.run(`
    console.log("plain", 1, true, null, undefined);
    console.info("%s has %d items (%i%%) %j", "list", 3.5, 42.9, { a: 1 });
    console.warn({ a: [1, 2, { b: "x" }], fn() {}, nested: { deep: { deeper: { deepest: 1 } } } });
    console.error(new TypeError("bad thing"));
    console.debug([1, 2, 3], new Map([["k", 1]]), new Set(["s"]), Buffer.from("hi"), new Uint8Array([1]));
    const cyclic = { name: "c" }; cyclic.self = cyclic;
    console.log(cyclic, Symbol("s"), 10n, -0, class Foo {});
    console.log("x".repeat(20000));
    console.assert(false, "asserted");
    console.log("lone \\ud800 surrogate", Buffer.from("\\udc00").length);
  `);
  const messages = engine.logs.map((l) => [l.level, l.message]);
  assert.deepEqual(messages[0], ["info", "plain 1 true null undefined"]);
  assert.deepEqual(messages[1], ["info", 'list has 3.5 items (42%) {"a":1}']);
  assert.deepEqual(messages[2], ["warn", "{ a: [ 1, 2, { b: 'x' } ], fn: [Function: fn], nested: { deep: { deeper: [Object] } } }"]);
  assert.deepEqual(messages[3], ["error", "TypeError: bad thing"]);
  assert.deepEqual(messages[4], ["debug", "[ 1, 2, 3 ] Map(1) { 'k' => 1 } Set(1) { 's' } <Buffer 68 69> Uint8Array(1) [ 1 ]"]);
  assert.deepEqual(messages[5], ["info", "{ name: 'c', self: [Circular] } Symbol(s) 10n -0 [class Foo]"]);
  assert.ok(messages[6][1].length < 16500 && messages[6][1].endsWith("(10000 more characters)"));
  assert.deepEqual(messages[7], ["error", "Assertion failed asserted"]);
  assert.deepEqual(messages[8], ["info", "lone \ufffd surrogate 3"]);
});
