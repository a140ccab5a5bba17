// Bosun JS engine prelude: `Headers`, a list of lower-cased names and checked values, with the
// immutable guard that fetch's responses carry.
"use strict";

(function bosunPreludeHeaders(shared) {
  const { ObjectKeys, ReflectApply, SymbolIterator, tag } = shared;

  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

  function headerName(name) {
    const text = String(name);
    if (!TOKEN.test(text)) throw new TypeError(`Headers: "${text}" is not a valid header name`);
    return text.toLowerCase();
  }

  function headerValue(value) {
    const text = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
    if (/[\0\r\n]/.test(text)) throw new TypeError("Headers: a header value may not contain NUL, CR or LF");
    return text;
  }

  let headersFill;
  let headersSetGuard;
  let headersList;

  class Headers {
    /** `[lowercase name, value]` in insertion order. */
    #list = [];
    /** "none" or "immutable" (responses from fetch). */
    #guard = "none";

    constructor(init = undefined) {
      if (init !== undefined && init !== null) headersFill(this, init);
    }

    #check() {
      if (this.#guard === "immutable") throw new TypeError("Headers: these headers are immutable");
    }

    append(name, value) {
      this.#check();
      this.#list.push([headerName(name), headerValue(value)]);
    }

    delete(name) {
      this.#check();
      const key = headerName(name);
      this.#list = this.#list.filter(([n]) => n !== key);
    }

    get(name) {
      const key = headerName(name);
      const values = this.#list.filter(([n]) => n === key).map(([, v]) => v);
      return values.length ? values.join(", ") : null;
    }

    getSetCookie() {
      return this.#list.filter(([n]) => n === "set-cookie").map(([, v]) => v);
    }

    has(name) {
      const key = headerName(name);
      return this.#list.some(([n]) => n === key);
    }

    set(name, value) {
      this.#check();
      const key = headerName(name);
      const text = headerValue(value);
      const index = this.#list.findIndex(([n]) => n === key);
      if (index < 0) this.#list.push([key, text]);
      else {
        this.#list[index] = [key, text];
        this.#list = this.#list.filter(([n], i) => i <= index || n !== key);
      }
    }

    /** The sorted, combined view iteration uses (set-cookie values stay separate). */
    #sorted() {
      const names = [...new Set(this.#list.map(([n]) => n))].sort();
      const out = [];
      for (const name of names) {
        if (name === "set-cookie") {
          for (const value of this.getSetCookie()) out.push([name, value]);
        } else {
          out.push([name, this.get(name)]);
        }
      }
      return out;
    }

    forEach(callback, thisArg = undefined) {
      if (typeof callback !== "function") throw new TypeError("Headers.forEach: the callback must be a function");
      for (const [name, value] of this.#sorted()) ReflectApply(callback, thisArg, [value, name, this]);
    }

    *keys() { for (const [name] of this.#sorted()) yield name; }
    *values() { for (const [, value] of this.#sorted()) yield value; }
    *entries() { yield* this.#sorted(); }
    [SymbolIterator]() { return this.entries(); }

    static {
      headersFill = (headers, init) => {
        if (init instanceof Headers) {
          for (const [n, v] of init.#list) headers.#list.push([n, v]);
        } else if (typeof init === "object" && init !== null && typeof init[SymbolIterator] === "function") {
          for (const pair of init) {
            const entry = [...pair];
            if (entry.length !== 2) throw new TypeError("Headers: each header pair must have exactly two elements");
            headers.append(entry[0], entry[1]);
          }
        } else if (typeof init === "object" && init !== null) {
          for (const key of ObjectKeys(init)) headers.append(key, init[key]);
        } else {
          throw new TypeError("Headers: the init must be a Headers object, an array of pairs or a record");
        }
      };
      headersSetGuard = (headers, guard) => { headers.#guard = guard; };
      headersList = (headers) => headers.#list.map(([n, v]) => [n, v]);
    }
  }
  tag(Headers, "Headers");

  shared.provide({ TOKEN, headersFill, headersSetGuard, headersList, Headers });
})(globalThis.__bosunPrelude);
