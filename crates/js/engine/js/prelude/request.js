// Bosun JS engine prelude: `Request`. There is no document to resolve against, so its URL must be
// absolute; credentials in the URL, forbidden methods and a GET/HEAD body are refused.
"use strict";

(function bosunPreludeRequest(shared) {
  const {
    tag, toUSVString, createSignal, AbortSignal, tryParseUrl, TOKEN, headersList, Headers,
    extractBody, bodySetBytes, bodyPeekBytes, Body,
  } = shared;

  const NORMALISED_METHODS = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH"];
  const FORBIDDEN_METHODS = ["CONNECT", "TRACE", "TRACK"];
  let neverAbortedSignal = null;
  let requestParts;

  class Request extends Body {
    #url;
    #method = "GET";
    #headers;
    #redirect = "follow";
    #signal = null;

    constructor(input, init = undefined) {
      super();
      if (arguments.length === 0) throw new TypeError("Request: 1 argument required");
      const options = init === undefined || init === null ? {} : init;
      let inherited = null;
      if (input instanceof Request) {
        inherited = input;
        this.#url = input.#url;
        this.#method = input.#method;
        this.#redirect = input.#redirect;
        this.#signal = input.#signal;
      } else {
        const text = toUSVString(input);
        const record = tryParseUrl(text);
        if (!record) throw new TypeError(`Request: invalid URL "${text}" (relative URLs need a base; there is no document here)`);
        if (record.username || record.password) throw new TypeError("Request: a URL with credentials is not allowed");
        this.#url = record.href;
      }
      if (options.method !== undefined) {
        const method = String(options.method);
        if (!TOKEN.test(method)) throw new TypeError(`Request: "${method}" is not a valid method`);
        const upper = method.toUpperCase();
        if (FORBIDDEN_METHODS.includes(upper)) throw new TypeError(`Request: the method ${upper} is forbidden`);
        this.#method = NORMALISED_METHODS.includes(upper) ? upper : method;
      }
      if (options.redirect !== undefined) {
        const redirect = String(options.redirect);
        if (!["follow", "manual", "error"].includes(redirect)) {
          throw new TypeError(`Request: redirect must be "follow", "manual" or "error", not "${redirect}"`);
        }
        this.#redirect = redirect;
      }
      if (options.signal !== undefined) {
        if (options.signal !== null && !(options.signal instanceof AbortSignal)) {
          throw new TypeError("Request: signal must be an AbortSignal");
        }
        this.#signal = options.signal;
      }
      this.#headers = new Headers(options.headers !== undefined ? options.headers : inherited ? inherited.#headers : undefined);
      let bytes = null;
      if (options.body !== undefined && options.body !== null) {
        if (this.#method === "GET" || this.#method === "HEAD") {
          throw new TypeError("Request with GET/HEAD method cannot have body.");
        }
        const extracted = extractBody(options.body);
        bytes = extracted.bytes;
        if (extracted.type && !this.#headers.has("content-type")) this.#headers.set("content-type", extracted.type);
      } else if (inherited) {
        const source = bodyPeekBytes(inherited);
        bytes = source === null ? null : source.slice();
      }
      bodySetBytes(this, bytes);
    }

    get url() { return this.#url; }
    get method() { return this.#method; }
    get headers() { return this.#headers; }
    get redirect() { return this.#redirect; }
    get signal() {
      if (this.#signal) return this.#signal;
      if (!neverAbortedSignal) neverAbortedSignal = createSignal();
      return neverAbortedSignal;
    }
    get cache() { return "default"; }
    get credentials() { return "same-origin"; }
    get destination() { return ""; }
    get integrity() { return ""; }
    get keepalive() { return false; }
    get mode() { return "cors"; }
    get referrer() { return "about:client"; }
    get referrerPolicy() { return ""; }

    clone() {
      if (this.bodyUsed) throw new TypeError("Request.clone: the body has already been read");
      return new Request(this);
    }

    static {
      requestParts = (request) => ({
        url: request.#url,
        method: request.#method,
        headers: headersList(request.#headers),
        redirect: request.#redirect,
        signal: request.#signal,
      });
    }
  }
  tag(Request, "Request");

  shared.provide({ requestParts, Request });
})(globalThis.__bosunPrelude);
