// Bosun JS engine prelude: `Response`, and the responses fetch builds from the host's answer
// (type `basic`, immutable headers, the status text of the status).
"use strict";

(function bosunPreludeResponse(shared) {
  const {
    JSONStringify, tag, toUSVString, tryParseUrl, headersFill, headersSetGuard, Headers,
    extractBody, bodySetBytes, bodyPeekBytes, Body,
  } = shared;

  const STATUS_TEXT = {
    100: "Continue", 101: "Switching Protocols", 102: "Processing", 103: "Early Hints",
    200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information",
    204: "No Content", 205: "Reset Content", 206: "Partial Content", 207: "Multi-Status",
    208: "Already Reported", 226: "IM Used", 300: "Multiple Choices", 301: "Moved Permanently",
    302: "Found", 303: "See Other", 304: "Not Modified", 305: "Use Proxy",
    307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request",
    401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required",
    408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required",
    412: "Precondition Failed", 413: "Payload Too Large", 414: "URI Too Long",
    415: "Unsupported Media Type", 416: "Range Not Satisfiable", 417: "Expectation Failed",
    418: "I'm a Teapot", 421: "Misdirected Request", 422: "Unprocessable Entity",
    423: "Locked", 424: "Failed Dependency", 425: "Too Early", 426: "Upgrade Required",
    428: "Precondition Required", 429: "Too Many Requests",
    431: "Request Header Fields Too Large", 451: "Unavailable For Legal Reasons",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
    503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
    506: "Variant Also Negotiates", 507: "Insufficient Storage", 508: "Loop Detected",
    510: "Not Extended", 511: "Network Authentication Required",
  };
  const NULL_BODY_STATUSES = [101, 103, 204, 205, 304];
  const REDIRECT_STATUSES = [301, 302, 303, 307, 308];
  const responseToken = Symbol("Response");
  let responseFromNetwork;

  class Response extends Body {
    #status = 200;
    #statusText = "";
    #headers;
    #url = "";
    #redirected = false;
    #type = "default";

    constructor(body = null, init = undefined) {
      super();
      if (body === responseToken) {
        // Internal construction (fetch, Response.error): fields are set by the caller.
        this.#headers = new Headers();
        return;
      }
      const options = init === undefined || init === null ? {} : init;
      if (options.status !== undefined) {
        const status = Number(options.status);
        if (!Number.isInteger(status) || status < 200 || status > 599) {
          throw new RangeError(`Response: status ${options.status} is outside the range [200, 599]`);
        }
        this.#status = status;
      }
      if (options.statusText !== undefined) {
        const text = String(options.statusText);
        if (/[^\t\x20-\x7e\x80-\xff]/.test(text)) throw new TypeError("Response: invalid statusText");
        this.#statusText = text;
      }
      this.#headers = new Headers(options.headers);
      let bytes = null;
      if (body !== null && body !== undefined) {
        if (NULL_BODY_STATUSES.includes(this.#status)) {
          throw new TypeError(`Response: a response with status ${this.#status} cannot have a body`);
        }
        const extracted = extractBody(body);
        bytes = extracted.bytes;
        if (extracted.type && !this.#headers.has("content-type")) this.#headers.set("content-type", extracted.type);
      }
      bodySetBytes(this, bytes);
    }

    get type() { return this.#type; }
    get url() { return this.#url; }
    get redirected() { return this.#redirected; }
    get status() { return this.#status; }
    get ok() { return this.#status >= 200 && this.#status <= 299; }
    get statusText() { return this.#statusText; }
    get headers() { return this.#headers; }

    clone() {
      if (this.bodyUsed) throw new TypeError("Response.clone: the body has already been read");
      const copy = new Response(responseToken);
      copy.#status = this.#status;
      copy.#statusText = this.#statusText;
      copy.#url = this.#url;
      copy.#redirected = this.#redirected;
      copy.#type = this.#type;
      headersFill(copy.#headers, this.#headers);
      if (this.#type !== "default") headersSetGuard(copy.#headers, "immutable");
      const bytes = bodyPeekBytes(this);
      bodySetBytes(copy, bytes === null ? null : bytes.slice());
      return copy;
    }

    static json(data, init = undefined) {
      const text = JSONStringify(data);
      if (text === undefined) throw new TypeError("Response.json: the data is not JSON-serialisable");
      const response = new Response(text, init);
      response.#headers.set("content-type", (init && new Headers(init.headers).get("content-type")) || "application/json");
      return response;
    }

    static error() {
      const response = new Response(responseToken);
      response.#status = 0;
      response.#type = "error";
      headersSetGuard(response.#headers, "immutable");
      bodySetBytes(response, null);
      return response;
    }

    static redirect(url, status = 302) {
      const record = tryParseUrl(toUSVString(url));
      if (!record) throw new TypeError(`Response.redirect: invalid URL "${url}"`);
      const code = Number(status);
      if (!REDIRECT_STATUSES.includes(code)) throw new RangeError(`Response.redirect: ${status} is not a redirect status`);
      const response = new Response(responseToken);
      response.#status = code;
      response.#headers.set("location", record.href);
      headersSetGuard(response.#headers, "immutable");
      bodySetBytes(response, null);
      return response;
    }

    static {
      /** A response as fetch returns it: immutable headers, `basic` type. */
      responseFromNetwork = ({ status, headers, body, url, redirected, method }) => {
        const response = new Response(responseToken);
        response.#status = status;
        response.#statusText = STATUS_TEXT[status] ?? "";
        for (const [name, value] of headers) {
          try {
            response.#headers.append(name, value);
          } catch {
            // A header the host passed that WHATWG would reject is dropped.
          }
        }
        headersSetGuard(response.#headers, "immutable");
        response.#url = url;
        response.#redirected = redirected;
        response.#type = "basic";
        const nullBody = NULL_BODY_STATUSES.includes(status) || method === "HEAD";
        bodySetBytes(response, nullBody ? null : body);
        return response;
      };
    }
  }
  tag(Response, "Response");

  shared.provide({ REDIRECT_STATUSES, responseFromNetwork, Response });
})(globalThis.__bosunPrelude);
