// Bosun JS engine prelude: `fetch`. One host HTTP exchange per hop; redirects are followed
// here, not by the host, so the host checks every hop against the plugin's grants.
"use strict";

(function bosunPreludeFetch(shared) {
  const {
    U8, nativeHttp, asBytes, DOMException, checkCancelled, parseUrlRecord, tryParseUrl,
    bodyPeekBytes, requestParts, Request, REDIRECT_STATUSES, responseFromNetwork,
  } = shared;

  const MAX_REDIRECTS = 20;
  const BODY_HEADERS = ["content-type", "content-length", "content-encoding", "content-language", "content-location"];
  const CROSS_ORIGIN_DROPPED = ["authorization", "cookie", "proxy-authorization"];

  function fetchFailed(message, code = undefined) {
    const cause = new Error(message);
    if (code !== undefined) cause.code = code;
    return new TypeError("fetch failed", { cause });
  }

  /** Turns an error thrown by `__native.http` into what fetch rejects with (as Node does). */
  function mapHostError(error) {
    let code;
    let message = "the request failed";
    try {
      code = error?.code;
      if (typeof error?.message === "string" && error.message) message = error.message;
    } catch {
      // keep the defaults
    }
    if (code === "timeout") return new DOMException(`The request timed out: ${message}`, "TimeoutError");
    if (code === "cancelled") return new DOMException(`The request was cancelled: ${message}`, "AbortError");
    return fetchFailed(message, typeof code === "string" ? code : "network");
  }

  function withoutFragment(href) {
    const hash = href.indexOf("#");
    return hash >= 0 ? href.slice(0, hash) : href;
  }

  async function fetch(input, init = undefined) {
    const request = new Request(input, init);
    const { url: startUrl, redirect, signal } = requestParts(request);
    let method = request.method;
    let headers = requestParts(request).headers;
    let body = bodyPeekBytes(request);
    if (!headers.some(([n]) => n === "accept")) headers.push(["accept", "*/*"]);
    let url = startUrl;
    for (let hop = 0; ; hop++) {
      checkCancelled();
      if (signal && signal.aborted) throw signal.reason;
      const record = parseUrlRecord(url);
      if (record.protocol !== "http:" && record.protocol !== "https:") {
        throw fetchFailed(`the URL scheme "${record.protocol.slice(0, -1)}" is not supported; fetch supports http and https`);
      }
      let raw;
      try {
        // No timeout argument: the host's per-call deadline bounds the exchange. Optional
        // arguments are left out rather than passed as undefined.
        raw = body === null
          ? nativeHttp(method, withoutFragment(url), headers)
          : nativeHttp(method, withoutFragment(url), headers, body);
      } catch (error) {
        throw mapHostError(error);
      }
      const status = Number(raw.status);
      const responseHeaders = [];
      for (const pair of raw.headers ?? []) responseHeaders.push([String(pair[0]), String(pair[1])]);
      const responseBody = raw.body === undefined || raw.body === null
        ? new U8(0)
        : asBytes(raw.body) ?? new U8(0);
      const location = responseHeaders.find(([n]) => n.toLowerCase() === "location");
      if (REDIRECT_STATUSES.includes(status) && location && redirect !== "manual") {
        if (redirect === "error") throw fetchFailed(`unexpected redirect (${status}) to ${location[1]}`);
        if (hop >= MAX_REDIRECTS) throw fetchFailed("redirect count exceeded");
        const next = tryParseUrl(location[1], url);
        if (!next) throw fetchFailed(`the redirect location "${location[1]}" is not a valid URL`);
        if (next.protocol !== "http:" && next.protocol !== "https:") {
          throw fetchFailed("URL scheme must be a HTTP(S) scheme");
        }
        if ((status === 303 && method !== "GET" && method !== "HEAD") ||
            ((status === 301 || status === 302) && method === "POST")) {
          method = "GET";
          body = null;
          headers = headers.filter(([n]) => !BODY_HEADERS.includes(n));
        }
        if (next.origin !== record.origin) {
          headers = headers.filter(([n]) => !CROSS_ORIGIN_DROPPED.includes(n));
        }
        // Keep the fragment across a redirect without one (WHATWG).
        url = next.hash === "" && record.hash !== "" ? next.href + record.hash : next.href;
        continue;
      }
      return responseFromNetwork({
        status,
        headers: responseHeaders,
        body: responseBody,
        url: withoutFragment(url),
        redirected: hop > 0,
        method,
      });
    }
  }

  shared.provide({ fetch });
})(globalThis.__bosunPrelude);
