// Bosun JS engine prelude: `URLSearchParams` and `URL`. Parsing is the host's WHATWG parser;
// the setters edit the parts and parse again, so every URL here is one the host produced.
"use strict";

(function bosunPreludeUrl(shared) {
  const {
    ObjectFreeze, ObjectDefineProperty, ObjectKeys, ReflectApply, SymbolIterator, U8,
    nativeParseUrl, tag, utf8Encode, utf8Decode, toUSVString,
  } = shared;

  /** application/x-www-form-urlencoded serialisation of one string. */
  function formEncode(text) {
    return encodeURIComponent(toUSVString(text))
      .replace(/%20/g, "+")
      .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  }

  /** Percent-decoding (bytes, then lossy UTF-8), `+` as space. */
  function formDecode(text) {
    const spaced = text.replace(/\+/g, " ");
    if (!spaced.includes("%")) return spaced;
    const bytes = [];
    for (let i = 0; i < spaced.length; i++) {
      const char = spaced[i];
      if (char === "%" && /^[0-9a-fA-F]{2}$/.test(spaced.slice(i + 1, i + 3))) {
        bytes.push(parseInt(spaced.slice(i + 1, i + 3), 16));
        i += 2;
      } else {
        const code = spaced.codePointAt(i);
        if (code > 0xffff) i++;
        for (const byte of utf8Encode(String.fromCodePoint(code))) bytes.push(byte);
      }
    }
    return utf8Decode(new U8(bytes), false);
  }

  function parseForm(query) {
    const list = [];
    for (const piece of query.split("&")) {
      if (piece === "") continue;
      const eq = piece.indexOf("=");
      const name = eq >= 0 ? piece.slice(0, eq) : piece;
      const value = eq >= 0 ? piece.slice(eq + 1) : "";
      list.push([formDecode(name), formDecode(value)]);
    }
    return list;
  }

  let paramsAttach;
  let paramsReset;
  let urlSetQueryFromParams;

  class URLSearchParams {
    /** `[name, value]` pairs in order. */
    #list = [];
    /** The URL this object belongs to (`url.searchParams`), or null. */
    #url = null;

    constructor(init = "") {
      if (init instanceof URLSearchParams) {
        this.#list = init.#list.map(([n, v]) => [n, v]);
      } else if (typeof init === "object" && init !== null) {
        if (typeof init[SymbolIterator] === "function") {
          for (const pair of init) {
            const entry = [...pair];
            if (entry.length !== 2) {
              throw new TypeError("URLSearchParams: each pair must have exactly two elements");
            }
            this.#list.push([toUSVString(entry[0]), toUSVString(entry[1])]);
          }
        } else {
          for (const key of ObjectKeys(init)) this.#list.push([toUSVString(key), toUSVString(init[key])]);
        }
      } else {
        let text = toUSVString(init);
        if (text.startsWith("?")) text = text.slice(1);
        this.#list = parseForm(text);
      }
    }

    #update() {
      if (this.#url) urlSetQueryFromParams(this.#url, this.toString());
    }

    get size() { return this.#list.length; }

    append(name, value) {
      this.#list.push([toUSVString(name), toUSVString(value)]);
      this.#update();
    }

    delete(name, value = undefined) {
      const key = toUSVString(name);
      const wanted = value === undefined ? undefined : toUSVString(value);
      this.#list = this.#list.filter(([n, v]) => !(n === key && (wanted === undefined || v === wanted)));
      this.#update();
    }

    get(name) {
      const key = toUSVString(name);
      const found = this.#list.find(([n]) => n === key);
      return found ? found[1] : null;
    }

    getAll(name) {
      const key = toUSVString(name);
      return this.#list.filter(([n]) => n === key).map(([, v]) => v);
    }

    has(name, value = undefined) {
      const key = toUSVString(name);
      const wanted = value === undefined ? undefined : toUSVString(value);
      return this.#list.some(([n, v]) => n === key && (wanted === undefined || v === wanted));
    }

    set(name, value) {
      const key = toUSVString(name);
      const text = toUSVString(value);
      const index = this.#list.findIndex(([n]) => n === key);
      if (index < 0) this.#list.push([key, text]);
      else {
        this.#list[index] = [key, text];
        this.#list = this.#list.filter(([n], i) => i <= index || n !== key);
      }
      this.#update();
    }

    sort() {
      // Array.prototype.sort is stable; names compare by UTF-16 code units.
      this.#list.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      this.#update();
    }

    forEach(callback, thisArg = undefined) {
      if (typeof callback !== "function") throw new TypeError("URLSearchParams.forEach: the callback must be a function");
      for (const [name, value] of this.#list.map((p) => [...p])) ReflectApply(callback, thisArg, [value, name, this]);
    }

    *keys() { for (const [name] of this.#list.map((p) => [...p])) yield name; }
    *values() { for (const [, value] of this.#list.map((p) => [...p])) yield value; }
    *entries() { for (const pair of this.#list.map((p) => [...p])) yield pair; }
    [SymbolIterator]() { return this.entries(); }

    toString() {
      return this.#list.map(([n, v]) => `${formEncode(n)}=${formEncode(v)}`).join("&");
    }

    static {
      paramsAttach = (params, url) => { params.#url = url; };
      paramsReset = (params, query) => { params.#list = parseForm(query); };
    }
  }
  tag(URLSearchParams, "URLSearchParams");

  const SPECIAL_SCHEMES = ["ftp:", "file:", "http:", "https:", "ws:", "wss:"];

  /** The host's parse, copied into a plain frozen record of this realm. */
  function parseUrlRecord(input, base) {
    const raw = base === undefined ? nativeParseUrl(input) : nativeParseUrl(input, base);
    return ObjectFreeze({
      href: String(raw.href),
      origin: String(raw.origin),
      protocol: String(raw.protocol),
      username: String(raw.username),
      password: String(raw.password),
      host: String(raw.host),
      hostname: String(raw.hostname),
      port: String(raw.port),
      pathname: String(raw.pathname),
      search: String(raw.search),
      hash: String(raw.hash),
    });
  }

  function tryParseUrl(input, base) {
    try {
      return parseUrlRecord(input, base);
    } catch {
      return null;
    }
  }

  /** Serialises a record's parts back into an href (for the setters, which re-parse). */
  function composeHref(parts) {
    let out = parts.protocol;
    if (parts.hasAuthority) {
      out += "//";
      if (parts.username || parts.password) {
        out += parts.username;
        if (parts.password) out += `:${parts.password}`;
        out += "@";
      }
      out += parts.hostname;
      if (parts.port) out += `:${parts.port}`;
    }
    return out + parts.pathname + parts.search + parts.hash;
  }

  class URL {
    #record;
    #searchParams = null;

    constructor(url, base = undefined) {
      if (arguments.length === 0) throw new TypeError("URL: 1 argument required");
      const input = toUSVString(url);
      try {
        this.#record = parseUrlRecord(input, base === undefined ? undefined : toUSVString(base));
      } catch (error) {
        const failure = new TypeError(`Invalid URL: ${input}`);
        ObjectDefineProperty(failure, "code", { value: "ERR_INVALID_URL", configurable: true, writable: true });
        ObjectDefineProperty(failure, "input", { value: input, configurable: true, writable: true });
        throw failure;
      }
    }

    static canParse(url, base = undefined) {
      return tryParseUrl(toUSVString(url), base === undefined ? undefined : toUSVString(base)) !== null;
    }

    static parse(url, base = undefined) {
      try {
        return new URL(url, base);
      } catch {
        return null;
      }
    }

    /** Applies a change to the parts and re-parses; an unparsable result leaves the URL as it was. */
    #change(edit) {
      const record = this.#record;
      const parts = {
        protocol: record.protocol,
        hasAuthority: record.href.startsWith(`${record.protocol}//`),
        username: record.username,
        password: record.password,
        hostname: record.hostname,
        port: record.port,
        pathname: record.pathname,
        search: record.search,
        hash: record.hash,
      };
      if (edit(parts) === false) return;
      const next = tryParseUrl(composeHref(parts));
      if (next) this.#setRecord(next);
    }

    #setRecord(record) {
      const searchChanged = record.search !== this.#record.search;
      this.#record = record;
      if (searchChanged && this.#searchParams) paramsReset(this.#searchParams, record.search.slice(1));
    }

    get href() { return this.#record.href; }
    set href(value) {
      const input = toUSVString(value);
      const next = tryParseUrl(input);
      if (!next) throw new TypeError(`Invalid URL: ${input}`);
      this.#setRecord(next);
    }

    get origin() { return this.#record.origin; }

    get protocol() { return this.#record.protocol; }
    set protocol(value) {
      const scheme = toUSVString(value).replace(/:.*$/s, "").toLowerCase();
      if (!/^[a-z][a-z0-9+.-]*$/.test(scheme)) return;
      const wasSpecial = SPECIAL_SCHEMES.includes(this.#record.protocol);
      if (SPECIAL_SCHEMES.includes(`${scheme}:`) !== wasSpecial) return;
      this.#change((parts) => { parts.protocol = `${scheme}:`; });
    }

    get username() { return this.#record.username; }
    set username(value) {
      this.#change((parts) => {
        if (!parts.hasAuthority || !parts.hostname || parts.protocol === "file:") return false;
        parts.username = encodeURIComponent(toUSVString(value));
        return true;
      });
    }

    get password() { return this.#record.password; }
    set password(value) {
      this.#change((parts) => {
        if (!parts.hasAuthority || !parts.hostname || parts.protocol === "file:") return false;
        parts.password = encodeURIComponent(toUSVString(value));
        return true;
      });
    }

    get host() { return this.#record.host; }
    set host(value) {
      const text = toUSVString(value);
      const match = /^(\[[^\]]*\]|[^:/?#@]*)(?::(\d*))?/.exec(text);
      if (!match || !match[1]) return;
      this.#change((parts) => {
        if (!parts.hasAuthority) return false;
        parts.hostname = match[1];
        if (match[2] !== undefined && match[2] !== "") parts.port = match[2];
        return true;
      });
    }

    get hostname() { return this.#record.hostname; }
    set hostname(value) {
      const text = toUSVString(value);
      const match = /^(\[[^\]]*\]|[^:/?#@]*)/.exec(text);
      if (!match || !match[1]) return;
      this.#change((parts) => {
        if (!parts.hasAuthority) return false;
        parts.hostname = match[1];
        return true;
      });
    }

    get port() { return this.#record.port; }
    set port(value) {
      const text = toUSVString(value);
      const digits = /^\d*/.exec(text)[0];
      if (text !== "" && digits === "") return;
      this.#change((parts) => {
        if (!parts.hasAuthority || !parts.hostname || parts.protocol === "file:") return false;
        parts.port = digits;
        return true;
      });
    }

    get pathname() { return this.#record.pathname; }
    set pathname(value) {
      const text = toUSVString(value).replace(/\?/g, "%3F").replace(/#/g, "%23");
      this.#change((parts) => {
        const opaque = !parts.hasAuthority && !parts.pathname.startsWith("/");
        if (opaque) return false;
        parts.pathname = parts.hasAuthority && !text.startsWith("/") ? `/${text}` : text;
        return true;
      });
    }

    get search() { return this.#record.search; }
    set search(value) {
      let text = toUSVString(value);
      if (text.startsWith("?")) text = text.slice(1);
      text = text.replace(/#/g, "%23");
      this.#change((parts) => { parts.search = text === "" ? "" : `?${text}`; });
    }

    get searchParams() {
      if (!this.#searchParams) {
        this.#searchParams = new URLSearchParams(this.#record.search.slice(1));
        paramsAttach(this.#searchParams, this);
      }
      return this.#searchParams;
    }

    get hash() { return this.#record.hash; }
    set hash(value) {
      let text = toUSVString(value);
      if (text.startsWith("#")) text = text.slice(1);
      this.#change((parts) => { parts.hash = text === "" ? "" : `#${text}`; });
    }

    toString() { return this.#record.href; }
    toJSON() { return this.#record.href; }

    static {
      urlSetQueryFromParams = (url, query) => {
        url.#change((parts) => { parts.search = query === "" ? "" : `?${query}`; });
      };
    }
  }
  tag(URL, "URL");

  shared.provide({ URLSearchParams, parseUrlRecord, tryParseUrl, URL });
})(globalThis.__bosunPrelude);
