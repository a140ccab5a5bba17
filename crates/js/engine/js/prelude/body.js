// Bosun JS engine prelude: the body that Request and Response share. The host exchanges whole
// bodies, so `body` is a minimal readable stream that yields them as one chunk, then ends.
"use strict";

(function bosunPreludeBody(shared) {
  const {
    ObjectFreeze, ObjectPrototypeToString, JSONParse, PromiseCtor, SymbolAsyncIterator, U8,
    resolvedPromise, then, tag, asBytes, utf8Encode, utf8Decode, toUSVString, URLSearchParams,
  } = shared;

  /** Turns a BodyInit into `{bytes, type}` (type: the implied content-type or null). */
  function extractBody(body) {
    if (typeof body === "string") return { bytes: utf8Encode(toUSVString(body)), type: "text/plain;charset=UTF-8" };
    if (body instanceof URLSearchParams) {
      return { bytes: utf8Encode(body.toString()), type: "application/x-www-form-urlencoded;charset=UTF-8" };
    }
    const view = asBytes(body);
    if (view) return { bytes: view.slice(), type: null };
    if (body instanceof BodyStream) {
      throw new TypeError("a Response or Request body cannot be another body's stream in Bosun's engine; read it with arrayBuffer() first");
    }
    const kind = ObjectPrototypeToString.call(body).slice(8, -1);
    if (["Blob", "File", "FormData", "ReadableStream"].includes(kind)) {
      throw new TypeError(`a ${kind} body is not supported in Bosun's engine; pass a string, a Uint8Array or URLSearchParams`);
    }
    return { bytes: utf8Encode(toUSVString(body)), type: "text/plain;charset=UTF-8" };
  }

  let bodyTake;
  let bodyDisturb;
  let bodySetBytes;
  let bodyPeekBytes;

  class BodyStream {
    #owner;
    #locked = false;
    #done = false;

    constructor(owner) { this.#owner = owner; }

    get locked() { return this.#locked; }

    getReader(options = undefined) {
      if (options?.mode === "byob") throw new TypeError("getReader: BYOB readers are not supported in Bosun's engine");
      if (this.#locked) throw new TypeError("getReader: the stream is already locked to a reader");
      this.#locked = true;
      const stream = this;
      let released = false;
      let resolveClosed;
      const closed = new PromiseCtor((resolve) => { resolveClosed = resolve; });
      const reader = {
        read() {
          if (released) return PromiseCtor.reject(new TypeError("read: the reader has been released"));
          if (stream.#done) return resolvedPromise({ value: undefined, done: true });
          stream.#done = true;
          const bytes = bodyTake(stream.#owner);
          resolveClosed(undefined);
          if (bytes.length === 0) return resolvedPromise({ value: undefined, done: true });
          return resolvedPromise({ value: bytes, done: false });
        },
        cancel(reason = undefined) {
          stream.#done = true;
          bodyDisturb(stream.#owner);
          resolveClosed(undefined);
          return resolvedPromise(undefined);
        },
        releaseLock() {
          if (released) return;
          released = true;
          stream.#locked = false;
        },
        get closed() { return closed; },
      };
      return ObjectFreeze(reader);
    }

    cancel(reason = undefined) {
      if (this.#locked) return PromiseCtor.reject(new TypeError("cancel: the stream is locked to a reader"));
      this.#done = true;
      bodyDisturb(this.#owner);
      return resolvedPromise(undefined);
    }

    async *[SymbolAsyncIterator]() {
      const reader = this.getReader();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          yield value;
        }
      } finally {
        reader.releaseLock();
      }
    }
  }
  tag(BodyStream, "ReadableStream");

  class Body {
    /** The body's bytes, or null for no body. */
    #bytes = null;
    #used = false;
    #stream = null;

    get body() {
      if (this.#bytes === null) return null;
      if (!this.#stream) this.#stream = new BodyStream(this);
      return this.#stream;
    }

    get bodyUsed() { return this.#used; }

    #consume() {
      if (this.#used || (this.#stream && this.#stream.locked)) {
        return PromiseCtor.reject(new TypeError("Body is unusable: Body has already been read"));
      }
      this.#used = true;
      const bytes = this.#bytes === null ? new U8(0) : this.#bytes;
      return resolvedPromise(bytes);
    }

    arrayBuffer() {
      return then(this.#consume(), (bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    }

    bytes() {
      return then(this.#consume(), (bytes) => bytes.slice());
    }

    text() {
      return then(this.#consume(), (bytes) => {
        const text = utf8Decode(bytes, false);
        return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
      });
    }

    json() {
      return then(this.text(), (text) => JSONParse(text));
    }

    blob() {
      return PromiseCtor.reject(new TypeError("blob() is not available in Bosun's engine (there is no Blob); use arrayBuffer() or text()"));
    }

    formData() {
      return PromiseCtor.reject(new TypeError("formData() is not available in Bosun's engine; use text() or json()"));
    }

    static {
      bodyTake = (owner) => {
        owner.#used = true;
        const bytes = owner.#bytes === null ? new U8(0) : owner.#bytes;
        return bytes.slice();
      };
      bodyDisturb = (owner) => { owner.#used = true; };
      bodySetBytes = (owner, bytes) => { owner.#bytes = bytes; };
      bodyPeekBytes = (owner) => {
        if (owner.#used) throw new TypeError("Body is unusable: Body has already been read");
        return owner.#bytes;
      };
    }
  }

  shared.provide({ extractBody, bodySetBytes, bodyPeekBytes, BodyStream, Body });
})(globalThis.__bosunPrelude);
