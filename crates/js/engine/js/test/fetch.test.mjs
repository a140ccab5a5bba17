// fetch, Request, Response and Headers from the prelude, against a scripted `__native.http`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createEngine, reply, hostError } from "./harness.mjs";

/** An engine whose host answers from a table `{url: reply | (request) => reply}`. */
async function withRoutes(routes) {
  return createEngine({
    http: (request) => {
      const route = routes[request.url];
      if (route === undefined) throw hostError("refused", `refused: ${request.url} is not granted to this call`);
      return typeof route === "function" ? route(request) : route;
    },
  });
}

test("redirect follow: every hop is a new host call; the response says where it ended", async () => {
  const engine = await withRoutes({
    "https://a.example/start": reply(302, { headers: { location: "/next?x=1" } }),
    "https://a.example/next?x=1": reply(301, { headers: { Location: "https://b.example/final" } }),
    "https://b.example/final": reply(200, { headers: { "content-type": "text/plain" }, body: "done" }),
  });
  const result = await engine.run(`
    const response = await fetch("https://a.example/start#frag");
    return { status: response.status, ok: response.ok, url: response.url, redirected: response.redirected,
             statusText: response.statusText, type: response.type, text: await response.text() };
  `);
  assert.deepEqual(result, {
    status: 200, ok: true, url: "https://b.example/final", redirected: true, statusText: "OK", type: "basic", text: "done",
  });
  assert.deepEqual(engine.httpCalls.map((c) => [c.method, c.url]), [
    ["GET", "https://a.example/start"],
    ["GET", "https://a.example/next?x=1"],
    ["GET", "https://b.example/final"],
  ]);
  // Without a timeout argument: the host's deadline bounds the exchange.
  assert.ok(engine.httpCalls.every((c) => c.timeoutMs === undefined));
});

test("redirects: 303 turns POST into GET without a body; 307 keeps both; cross-origin drops credentials", async () => {
  const engine = await withRoutes({
    "https://a.example/form": reply(303, { headers: { location: "https://a.example/result" } }),
    "https://a.example/result": reply(200, { body: "result" }),
    "https://a.example/keep": reply(307, { headers: { location: "https://c.example/kept" } }),
    "https://c.example/kept": (request) => reply(200, { body: `${request.method} ${request.body?.toString()}` }),
  });
  const result = await engine.run(`
    const a = await fetch("https://a.example/form", { method: "POST", body: "name=x", headers: { "content-type": "text/plain", authorization: "Bearer t" } });
    const b = await fetch("https://a.example/keep", { method: "POST", body: "payload", headers: { authorization: "Bearer t", "x-other": "1" } });
    return [await a.text(), await b.text()];
  `);
  assert.deepEqual(result, ["result", "POST payload"]);
  const [form, afterForm, keep, kept] = engine.httpCalls;
  assert.equal(form.method, "POST");
  assert.equal(form.body.toString(), "name=x");
  assert.equal(afterForm.method, "GET");
  assert.equal(afterForm.body, undefined);
  assert.ok(!afterForm.headers.some(([n]) => n === "content-type"));
  assert.ok(afterForm.headers.some(([n]) => n === "authorization"), "same origin keeps authorization");
  assert.equal(keep.method, "POST");
  assert.equal(kept.method, "POST");
  assert.ok(!kept.headers.some(([n]) => n === "authorization"), "cross-origin drops authorization");
  assert.ok(kept.headers.some(([n]) => n === "x-other"));
});

test("redirect manual returns the 3xx with its location; error rejects; more than 20 hops rejects", async () => {
  const loop = {};
  for (let i = 0; i < 30; i++) loop[`https://loop.example/${i}`] = reply(302, { headers: { location: `/${i + 1}` } });
  const engine = await withRoutes({
    "https://a.example/moved": reply(301, { headers: { location: "https://a.example/new" } }),
    ...loop,
  });
  const result = await engine.run(`
    const manual = await fetch("https://a.example/moved", { redirect: "manual" });
    let error, loop;
    try { await fetch("https://a.example/moved", { redirect: "error" }); } catch (e) { error = [e.name, e.message, e.cause.message]; }
    try { await fetch("https://loop.example/0"); } catch (e) { loop = [e.name, e.message, e.cause.message]; }
    return { status: manual.status, location: manual.headers.get("location"), redirected: manual.redirected, ok: manual.ok, error, loop };
  `);
  assert.deepEqual(result, {
    status: 301, location: "https://a.example/new", redirected: false, ok: false,
    error: ["TypeError", "fetch failed", "unexpected redirect (301) to https://a.example/new"],
    loop: ["TypeError", "fetch failed", "redirect count exceeded"],
  });
  const loopCalls = engine.httpCalls.filter((c) => c.url.startsWith("https://loop.example/"));
  assert.equal(loopCalls.length, 21, "the first request and 20 redirects");
});

test("host errors: refused is fetch's TypeError with the host's message as cause; timeout is a TimeoutError", async () => {
  const engine = await createEngine({
    http: ({ url }) => {
      if (url.includes("slow")) throw hostError("timeout", "no answer within 30 s");
      if (url.includes("big")) throw hostError("too_large", "the response body is larger than 16777216 bytes");
      if (url.includes("down")) throw hostError("network", "connection reset");
      if (url.includes("stop")) throw hostError("cancelled", "the call was cancelled");
      throw hostError("refused", "refused: evil.example is not granted to this call");
    },
  });
  const result = await engine.run(`
    const outcome = async (url) => {
      try { await fetch(url); return "resolved"; }
      catch (e) { return { name: e.name, message: e.message, isType: e instanceof TypeError, isDom: e instanceof DOMException,
                          cause: e.cause && { message: e.cause.message, code: e.cause.code } }; }
    };
    return {
      refused: await outcome("https://evil.example/"),
      slow: await outcome("https://slow.example/"),
      big: await outcome("https://big.example/"),
      down: await outcome("https://down.example/"),
      stop: await outcome("https://stop.example/"),
      scheme: await outcome("ftp://files.example/x"),
      relative: await outcome("/relative"),
    };
  `);
  assert.deepEqual(result.refused, {
    name: "TypeError", message: "fetch failed", isType: true, isDom: false,
    cause: { message: "refused: evil.example is not granted to this call", code: "refused" },
  });
  assert.deepEqual(result.slow, { name: "TimeoutError", message: "The request timed out: no answer within 30 s", isType: false, isDom: true });
  assert.equal(result.big.cause.code, "too_large");
  assert.equal(result.down.cause.code, "network");
  assert.equal(result.stop.name, "AbortError");
  assert.match(result.scheme.cause.message, /the URL scheme "ftp" is not supported/);
  assert.equal(result.relative.name, "TypeError");
  assert.match(result.relative.message, /relative URLs need a base/);
});

test("an aborted signal rejects with its reason before any host call", async () => {
  const engine = await withRoutes({ "https://a.example/": reply(200) });
  const result = await engine.run(`
    const controller = new AbortController();
    controller.abort();
    let first, second;
    try { await fetch("https://a.example/", { signal: controller.signal }); } catch (e) { first = [e.name, e instanceof DOMException, e.message]; }
    try { await fetch("https://a.example/", { signal: AbortSignal.abort(new Error("custom")) }); } catch (e) { second = e.message; }
    return { first, second };
  `);
  assert.deepEqual(result, { first: ["AbortError", true, "This operation was aborted"], second: "custom" });
  assert.equal(engine.httpCalls.length, 0);
});

test("request bodies and headers reach the host as WHATWG fetch builds them", async () => {
  const engine = await withRoutes({ "https://api.example/echo": (request) => reply(200, { body: JSON.stringify(request.headers) }) });
  await engine.run(`
    await fetch("https://api.example/echo", { method: "post", body: "text" });
    await fetch("https://api.example/echo", { method: "PUT", body: new URLSearchParams({ a: "1 2", b: "é" }) });
    await fetch("https://api.example/echo", { method: "PATCH", body: new Uint8Array([1, 2, 3]), headers: new Headers([["X-Trace", " v "]]) });
    await fetch(new URL("https://api.example/echo"), { headers: { Accept: "application/json" } });
    await fetch(new Request("https://api.example/echo", { method: "DELETE" }));
  `);
  const [text, form, bytes, accept, del] = engine.httpCalls;
  assert.equal(text.method, "POST");
  assert.deepEqual(text.headers, [["content-type", "text/plain;charset=UTF-8"], ["accept", "*/*"]]);
  assert.equal(text.body.toString(), "text");
  assert.equal(form.body.toString(), "a=1+2&b=%C3%A9");
  assert.deepEqual(form.headers[0], ["content-type", "application/x-www-form-urlencoded;charset=UTF-8"]);
  assert.deepEqual([...bytes.body], [1, 2, 3]);
  assert.deepEqual(bytes.headers, [["x-trace", "v"], ["accept", "*/*"]]);
  assert.deepEqual(accept.headers, [["accept", "application/json"]]);
  assert.equal(del.method, "DELETE");
  const errors = await engine.run(`
    const messages = [];
    for (const attempt of [
      () => new Request("https://a.example/", { method: "GET", body: "x" }),
      () => new Request("https://a.example/", { method: "CONNECT" }),
      () => new Request("https://user:pw@a.example/"),
      () => new Headers({ "bad header": "x" }),
      () => new Headers({ ok: "line\\nbreak" }),
      () => new Request("https://a.example/", { redirect: "sometimes" }),
    ]) { try { attempt(); messages.push("no error"); } catch (e) { messages.push(e.name); } }
    return messages;
  `);
  assert.deepEqual(errors, ["TypeError", "TypeError", "TypeError", "TypeError", "TypeError", "TypeError"]);
});

test("Response: body methods, one-chunk reader, used bodies, HEAD and 204 have no body", async () => {
  const engine = await withRoutes({
    "https://a.example/json": reply(200, { headers: { "Content-Type": "application/json", "Set-Cookie": "a=1", "set-cookie": "b=2" }, body: '{"x":[1,2]}' }),
    "https://a.example/empty": reply(204),
    "https://a.example/missing": reply(404, { body: "nope" }),
  });
  const result = await engine.run(`
    const r = await fetch("https://a.example/json");
    const headers = [...r.headers];
    const immutable = (() => { try { r.headers.set("x", "y"); return "mutable"; } catch (e) { return e.name; } })();
    const reader = r.clone().body.getReader();
    const first = await reader.read();
    const second = await reader.read();
    const json = await r.json();
    let again; try { await r.text(); } catch (e) { again = e.name; }
    const head = await fetch("https://a.example/json", { method: "HEAD" });
    const empty = await fetch("https://a.example/empty");
    const missing = await fetch("https://a.example/missing");
    const forAwait = [];
    for await (const chunk of (await fetch("https://a.example/json")).body) forAwait.push(chunk.length);
    const buffer = await (await fetch("https://a.example/json")).arrayBuffer();
    const bytes = await (await fetch("https://a.example/json")).bytes();
    return {
      headers, immutable, contentType: r.headers.get("CONTENT-TYPE"), cookies: r.headers.getSetCookie(),
      first: { done: first.done, text: new TextDecoder().decode(first.value), isBytes: first.value instanceof Uint8Array },
      second, json, again, bodyUsed: r.bodyUsed,
      head: head.body, empty: [empty.status, empty.body, await empty.text()], missing: [missing.ok, missing.statusText, await missing.text()],
      forAwait, bufferLength: buffer.byteLength, bytes: bytes instanceof Uint8Array && bytes.length,
    };
  `);
  assert.deepEqual(result, {
    headers: [["content-type", "application/json"], ["set-cookie", "a=1"], ["set-cookie", "b=2"]],
    immutable: "TypeError",
    contentType: "application/json",
    cookies: ["a=1", "b=2"],
    first: { done: false, text: '{"x":[1,2]}', isBytes: true },
    second: { done: true },
    json: { x: [1, 2] },
    again: "TypeError",
    bodyUsed: true,
    head: null,
    empty: [204, null, ""],
    missing: [false, "Not Found", "nope"],
    forAwait: [11],
    bufferLength: 11,
    bytes: 11,
  });
});

test("Response and Request constructors, Response.json, redirect, error, clone", async () => {
  const engine = await createEngine();
  const result = await engine.run(`
    const plain = new Response("hi", { status: 201, statusText: "Made", headers: { "x-a": "1" } });
    const json = Response.json({ a: 1 }, { status: 202 });
    const redirect = Response.redirect("https://a.example/x", 308);
    const error = Response.error();
    const empty = new Response();
    const clone = plain.clone();
    const request = new Request("https://a.example/p?q=1", { method: "post", body: "b", headers: { "X-Y": "z" } });
    const copy = request.clone();
    const failures = [];
    for (const attempt of [() => new Response("x", { status: 204 }), () => new Response(null, { status: 99 }), () => Response.redirect("https://a.example", 200)]) {
      try { attempt(); failures.push("none"); } catch (e) { failures.push(e.name); }
    }
    return {
      plain: [plain.status, plain.statusText, plain.ok, plain.headers.get("content-type"), plain.headers.get("x-a"), await plain.text()],
      json: [json.status, json.headers.get("content-type"), await json.json()],
      redirect: [redirect.status, redirect.headers.get("location"), redirect.body],
      error: [error.type, error.status, error.ok],
      empty: [empty.status, empty.body, await empty.text()],
      clone: await clone.text(),
      request: [request.method, request.url, request.headers.get("x-y"), request.headers.get("content-type"), await copy.text(), request.signal.aborted, request.redirect],
      failures,
      tags: [Object.prototype.toString.call(plain), Object.prototype.toString.call(plain.body), Object.prototype.toString.call(new Headers())],
    };
  `);
  assert.deepEqual(result, {
    plain: [201, "Made", true, "text/plain;charset=UTF-8", "1", "hi"],
    json: [202, "application/json", { a: 1 }],
    redirect: [308, "https://a.example/x", null],
    error: ["error", 0, false],
    empty: [200, null, ""],
    clone: "hi",
    request: ["POST", "https://a.example/p?q=1", "z", "text/plain;charset=UTF-8", "b", false, "follow"],
    failures: ["TypeError", "RangeError", "RangeError"],
    tags: ["[object Response]", "[object ReadableStream]", "[object Headers]"],
  });
});

test("fetch keeps working when a plugin replaces the globals it might have used", async () => {
  const engine = await withRoutes({ "https://a.example/": reply(200, { body: "still works" }) });
  const result = await engine.run(`
    globalThis.URL = function () { throw new Error("patched URL"); };
    globalThis.Headers = function () { throw new Error("patched Headers"); };
    globalThis.Uint8Array = function () { throw new Error("patched Uint8Array"); };
    const response = await fetch("https://a.example/");
    let patchProto;
    try { Response.prototype.text = () => "fake"; patchProto = "patched"; } catch (e) { patchProto = e.name; }
    let patchStatic;
    try { AbortSignal.timeout = () => null; patchStatic = "patched"; } catch (e) { patchStatic = e.name; }
    return [await response.text(), patchProto, patchStatic];
  `);
  assert.deepEqual(result, ["still works", "TypeError", "TypeError"]);
});
