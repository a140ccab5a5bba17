// Bosun JS engine: the prelude. A classic script, evaluated once (before `bosun:runtime`) when
// the engine is pre-initialised.
//
// It builds the web globals plugins expect (console, URL, URLSearchParams, TextEncoder,
// TextDecoder, atob/btoa, Event/EventTarget, AbortController/AbortSignal, DOMException, timers,
// Headers/Request/Response/fetch, Buffer, structuredClone, performance, a small `process`) on
// top of `globalThis.__native`, the host calls the Rust core installs (see README.md). It then
// deletes `__native`: plugin code never sees the host calls directly.
//
// What the runtime and the built-in modules need (the captured host calls, the timer table,
// cancellation, the classes as the prelude made them) goes into one frozen "internal" object,
// handed over through a temporary global that `modules/internal.js` (`bosun:internal`) takes and
// deletes while `bosun:runtime` is evaluated, still before any plugin code exists. The core's
// loader lets only the engine's own modules import `bosun:internal`.
//
// Robustness against plugin code: everything here uses functions captured at start-up (the host
// calls, JSON, Reflect.apply, Promise), class state lives in private fields, and the prototypes
// and constructors of the classes the runtime relies on are frozen, so a plugin that patches a
// global or a prototype changes only what it itself sees. None of this is a security boundary
// (the wasmtime sandbox and the host's guards are); it keeps the layer's own behaviour honest.
"use strict";

(function bosunPrelude(global) {
  const native = global.__native;
  if (native === null || typeof native !== "object") {
    throw new Error("prelude: globalThis.__native is missing; the engine core must install it first");
  }
  delete global.__native;

  // ---------------------------------------------------------------------------------------
  // Captured intrinsics and host calls
  // ---------------------------------------------------------------------------------------

  const ObjectFreeze = Object.freeze;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectKeys = Object.keys;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectPrototypeToString = Object.prototype.toString;
  const ObjectHasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
  const ArrayIsArray = Array.isArray;
  const ReflectApply = Reflect.apply;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const DateNow = Date.now;
  const MathMin = Math.min;
  const MathMax = Math.max;
  const MathFloor = Math.floor;
  const NumberIsFinite = Number.isFinite;
  const StringFromCharCode = String.fromCharCode;
  const PromiseCtor = Promise;
  const PromiseThen = Promise.prototype.then;
  const SymbolIterator = Symbol.iterator;
  const SymbolAsyncIterator = Symbol.asyncIterator;
  const SymbolToPrimitive = Symbol.toPrimitive;
  const SymbolToStringTag = Symbol.toStringTag;
  const U8 = Uint8Array;
  const ArrayBufferCtor = ArrayBuffer;
  const ArrayBufferIsView = ArrayBuffer.isView;

  const NATIVE_NAMES = [
    "log", "config", "configAll", "isCancelled", "http", "parseUrl", "utf8Encode", "utf8Decode",
    "base64Encode", "base64Decode", "sessionTaint", "escalateTaint", "hostInfo", "lookup",
  ];
  const host = {};
  for (const name of NATIVE_NAMES) {
    const fn = native[name];
    if (typeof fn !== "function") {
      throw new Error(`prelude: __native.${name} is missing`);
    }
    host[name] = fn;
  }
  ObjectFreeze(host);
  const nativeLog = host.log;
  const nativeHttp = host.http;
  const nativeParseUrl = host.parseUrl;
  const nativeUtf8Encode = host.utf8Encode;
  const nativeUtf8Decode = host.utf8Decode;
  const nativeBase64Encode = host.base64Encode;
  const nativeBase64Decode = host.base64Decode;
  const nativeIsCancelled = host.isCancelled;

  const resolvedPromise = (value) => new PromiseCtor((resolve) => resolve(value));
  const then = (promise, onFulfilled, onRejected) =>
    ReflectApply(PromiseThen, promise, [onFulfilled, onRejected]);

  /** Defines non-enumerable, writable, configurable globals (as WebIDL does). */
  function defineGlobals(entries) {
    for (const name of ObjectKeys(entries)) {
      try {
        ObjectDefineProperty(global, name, {
          value: entries[name],
          writable: true,
          enumerable: false,
          configurable: true,
        });
      } catch (error) {
        throw new Error(`prelude: cannot define the global ${name}: ${error && error.message}`);
      }
    }
  }

  /** Freezes a class: its constructor (statics) and its prototype. */
  function freezeClass(cls) {
    ObjectFreeze(cls.prototype);
    ObjectFreeze(cls);
  }

  /** Sets `Symbol.toStringTag` on a prototype (so `Object.prototype.toString` names it). */
  function tag(cls, name) {
    ObjectDefineProperty(cls.prototype, SymbolToStringTag, { value: name, configurable: true });
  }

  // ---------------------------------------------------------------------------------------
  // Bytes and strings
  // ---------------------------------------------------------------------------------------

  /** `value` as a Uint8Array view (ArrayBuffer, any ArrayBufferView); undefined otherwise. */
  function asBytes(value) {
    if (value instanceof U8) return value;
    if (value instanceof ArrayBufferCtor) return new U8(value);
    if (ArrayBufferIsView(value)) return new U8(value.buffer, value.byteOffset, value.byteLength);
    return undefined;
  }

  /** UTF-8 bytes of a string (lone surrogates become U+FFFD), as a fresh Uint8Array. */
  function utf8Encode(text) {
    // Lone surrogates are replaced here: the host's strings are Rust strings.
    const bytes = nativeUtf8Encode(toUSVString(text));
    // The host returns a Uint8Array of this realm; copy defensively if it did not.
    return bytes instanceof U8 ? bytes : new U8(bytes);
  }

  function utf8Decode(bytes, fatal) {
    return nativeUtf8Decode(bytes, !!fatal);
  }

  /** The UTF-8 length of a string without encoding it. */
  function utf8ByteLength(text) {
    let length = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit < 0x80) length += 1;
      else if (unit < 0x800) length += 2;
      else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
        const next = text.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) {
          length += 4;
          i++;
        } else {
          length += 3;
        }
      } else length += 3;
    }
    return length;
  }

  /** Replaces lone surrogates with U+FFFD (WebIDL USVString conversion). */
  function toUSVString(value) {
    const text = String(value);
    return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
  }

  function latin1Decode(bytes) {
    let out = "";
    for (let i = 0; i < bytes.length; i += 8192) {
      out += ReflectApply(StringFromCharCode, null, bytes.subarray(i, i + 8192));
    }
    return out;
  }

  function latin1Encode(text) {
    const bytes = new U8(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 0xff;
    return bytes;
  }

  const HEX = "0123456789abcdef";
  function hexEncode(bytes) {
    let out = "";
    for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i] >> 4] + HEX[bytes[i] & 15];
    return out;
  }

  /** Node's hex decoding: pairs of hex digits, stopping at the first invalid pair. */
  function hexDecode(text) {
    const out = [];
    for (let i = 0; i + 1 < text.length; i += 2) {
      const byte = parseInt(text.slice(i, i + 2), 16);
      if (!/^[0-9a-fA-F]{2}$/.test(text.slice(i, i + 2))) break;
      out.push(byte);
    }
    return new U8(out);
  }

  function base64Encode(bytes) {
    return nativeBase64Encode(bytes);
  }

  const BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

  /**
   * Unpadded standard base64 (length % 4 !== 1) made canonical and padded for the host: the last
   * character's unused bits are cleared (browsers and Node ignore them; Rust's decoder refuses
   * them), then `=` is added.
   */
  function canonicalBase64(text) {
    let out = text;
    const rest = out.length % 4;
    if (rest === 2 || rest === 3) {
      const value = BASE64_ALPHABET.indexOf(out[out.length - 1]) & (rest === 2 ? 0b110000 : 0b111100);
      out = out.slice(0, -1) + BASE64_ALPHABET[value];
    }
    while (out.length % 4 !== 0) out += "=";
    return out;
  }

  /** Node-style lenient base64/base64url decoding: ignores other characters, padding optional. */
  function base64DecodeLenient(text) {
    let cleaned = String(text).replace(/[-_]/g, (c) => (c === "-" ? "+" : "/"));
    const end = cleaned.indexOf("=");
    if (end >= 0) cleaned = cleaned.slice(0, end);
    cleaned = cleaned.replace(/[^A-Za-z0-9+/]/g, "");
    if (cleaned.length % 4 === 1) cleaned = cleaned.slice(0, -1);
    const bytes = nativeBase64Decode(canonicalBase64(cleaned));
    return bytes instanceof U8 ? bytes : new U8(bytes);
  }

  // ---------------------------------------------------------------------------------------
  // Safe description of arbitrary values (console and error messages)
  // ---------------------------------------------------------------------------------------

  const INSPECT_MAX_ITEMS = 100;
  const INSPECT_MAX_STRING = 10000;

  /**
   * A Node-like rendering of `value` for console output and error messages. Never throws:
   * getters that throw, proxies that refuse, cycles and deep nesting all render as markers.
   */
  function inspect(value, depth = 2, seen = [], nested = false) {
    try {
      switch (typeof value) {
        case "string": {
          const text = value.length > INSPECT_MAX_STRING
            ? `${value.slice(0, INSPECT_MAX_STRING)}… (${value.length - INSPECT_MAX_STRING} more characters)`
            : value;
          return nested ? `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n")}'` : text;
        }
        case "number":
          return Object.is(value, -0) ? "-0" : String(value);
        case "bigint":
          return `${value}n`;
        case "boolean":
        case "undefined":
          return String(value);
        case "symbol":
          return value.toString();
        case "function": {
          const name = typeof value.name === "string" && value.name ? value.name : "(anonymous)";
          const source = (() => {
            try {
              return ReflectApply(Function.prototype.toString, value, []);
            } catch {
              return "";
            }
          })();
          return source.startsWith("class") ? `[class ${name}]` : `[Function: ${name}]`;
        }
        default:
          break;
      }
      if (value === null) return "null";
      if (seen.includes(value)) return "[Circular]";
      if (value instanceof Error || isErrorLike(value)) return describeError(value);
      if (value instanceof Date) {
        const time = value.getTime();
        return NumberIsFinite(time) ? value.toISOString() : "Invalid Date";
      }
      if (value instanceof RegExp) return String(value);
      if (value instanceof URL) return `URL { href: '${value.href}' }`;
      if (isBuffer(value)) {
        const shown = hexEncode(value.subarray(0, 50)).replace(/(..)(?!$)/g, "$1 ");
        return `<Buffer${shown ? ` ${shown}` : ""}${value.length > 50 ? ` ... ${value.length - 50} more bytes` : ""}>`;
      }
      if (ArrayBufferIsView(value) && !(value instanceof DataView)) {
        const name = ObjectPrototypeToString.call(value).slice(8, -1);
        const items = [];
        for (let i = 0; i < MathMin(value.length, INSPECT_MAX_ITEMS); i++) items.push(inspect(value[i], 0, seen, true));
        if (value.length > INSPECT_MAX_ITEMS) items.push(`... ${value.length - INSPECT_MAX_ITEMS} more items`);
        return `${name}(${value.length}) [${items.length ? ` ${items.join(", ")} ` : ""}]`;
      }
      if (depth < 0) return ArrayIsArray(value) ? "[Array]" : "[Object]";
      const inner = [...seen, value];
      if (ArrayIsArray(value)) {
        const items = [];
        for (let i = 0; i < MathMin(value.length, INSPECT_MAX_ITEMS); i++) {
          items.push(i in value ? inspect(value[i], depth - 1, inner, true) : "<empty>");
        }
        if (value.length > INSPECT_MAX_ITEMS) items.push(`... ${value.length - INSPECT_MAX_ITEMS} more items`);
        return items.length ? `[ ${items.join(", ")} ]` : "[]";
      }
      if (value instanceof Map) {
        const items = [];
        for (const [k, v] of value) {
          if (items.length >= INSPECT_MAX_ITEMS) break;
          items.push(`${inspect(k, depth - 1, inner, true)} => ${inspect(v, depth - 1, inner, true)}`);
        }
        return `Map(${value.size}) {${items.length ? ` ${items.join(", ")} ` : ""}}`;
      }
      if (value instanceof Set) {
        const items = [];
        for (const v of value) {
          if (items.length >= INSPECT_MAX_ITEMS) break;
          items.push(inspect(v, depth - 1, inner, true));
        }
        return `Set(${value.size}) {${items.length ? ` ${items.join(", ")} ` : ""}}`;
      }
      if (value instanceof PromiseCtor) return "Promise { <pending or settled> }";
      const keys = ObjectKeys(value);
      const items = [];
      for (const key of keys.slice(0, INSPECT_MAX_ITEMS)) {
        let shown;
        try {
          shown = inspect(value[key], depth - 1, inner, true);
        } catch {
          shown = "[Getter threw]";
        }
        const name = /^[A-Za-z_$][\w$]*$/.test(key) ? key : `'${key}'`;
        items.push(`${name}: ${shown}`);
      }
      if (keys.length > INSPECT_MAX_ITEMS) items.push(`... ${keys.length - INSPECT_MAX_ITEMS} more properties`);
      let prefix = "";
      const proto = ObjectGetPrototypeOf(value);
      if (proto === null) prefix = "[Object: null prototype] ";
      else if (proto !== Object.prototype) {
        const ctor = proto.constructor;
        if (typeof ctor === "function" && typeof ctor.name === "string" && ctor.name) prefix = `${ctor.name} `;
      }
      return `${prefix}{${items.length ? ` ${items.join(", ")} ` : ""}}`;
    } catch {
      return "[value that could not be inspected]";
    }
  }

  function isErrorLike(value) {
    try {
      return typeof value === "object" && value !== null && typeof value.message === "string" &&
        typeof value.name === "string" && typeof value.stack === "string";
    } catch {
      return false;
    }
  }

  /** `Name: message` for an error, read defensively. */
  function describeError(error) {
    let name = "Error";
    let message = "";
    try {
      if (typeof error.name === "string" && error.name) name = error.name;
    } catch { /* keep the default */ }
    try {
      if (typeof error.message === "string") message = error.message;
    } catch { /* keep the default */ }
    return message ? `${name}: ${message}` : name;
  }

  /** Cuts `text` to at most `max` UTF-16 units, marking the cut. */
  function bound(text, max) {
    return text.length <= max ? text : `${text.slice(0, max)}… [truncated]`;
  }

  /**
   * A bounded, single-line description of a thrown value, safe for tool error messages:
   * `TypeError: x is not a function`, `Non-Error value thrown: 42`, `… thrown: null`.
   */
  function describeThrown(value, max = 500) {
    let text;
    if (value instanceof Error || isErrorLike(value)) text = describeError(value);
    else if (typeof value === "string") text = `Non-Error value thrown: ${JSONStringify(value.slice(0, max))}`;
    else text = `Non-Error value thrown: ${inspect(value, 1, [], true)}`;
    // Control characters (newlines included) would only garble a one-line message.
    // eslint-disable-next-line no-control-regex
    return bound(text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim(), max);
  }

  // ---------------------------------------------------------------------------------------
  // console
  // ---------------------------------------------------------------------------------------

  const MAX_LOG_CHARS = 16384;

  /** util.format-like: %s %d %i %f %j %o %O %c %% in a leading string, then the rest. */
  function formatLog(args) {
    const parts = [];
    let index = 0;
    if (typeof args[0] === "string" && args.length > 1 && args[0].includes("%")) {
      index = 1;
      const text = args[0].replace(/%([sdifjoOc%])/g, (match, spec) => {
        if (spec === "%") return "%";
        if (index >= args.length) return match;
        const arg = args[index++];
        try {
          switch (spec) {
            case "s": return typeof arg === "string" ? arg : inspect(arg, 1, [], typeof arg === "object" && arg !== null);
            case "d": return typeof arg === "bigint" ? `${arg}n` : String(Number(arg));
            case "i": return typeof arg === "bigint" ? `${arg}n` : String(parseInt(arg, 10));
            case "f": return String(parseFloat(arg));
            case "j": try { return JSONStringify(arg); } catch { return "[Circular]"; }
            case "c": return "";
            default: return inspect(arg, 4, [], true);
          }
        } catch {
          return "[value that could not be formatted]";
        }
      });
      parts.push(text);
    }
    for (; index < args.length; index++) parts.push(inspect(args[index]));
    return bound(parts.join(" "), MAX_LOG_CHARS);
  }

  function logAt(level) {
    return function log(...args) {
      try {
        nativeLog(level, toUSVString(formatLog(args)));
      } catch {
        // Logging must never break the caller.
      }
    };
  }

  const counts = new Map();
  const timersByLabel = new Map();
  const console = {
    log: logAt("info"),
    info: logAt("info"),
    warn: logAt("warn"),
    error: logAt("error"),
    debug: logAt("debug"),
    trace: logAt("trace"),
    dir: (value) => logAt("info")(inspect(value)),
    table: (value) => logAt("info")(inspect(value)),
    assert(condition, ...args) {
      if (!condition) logAt("error")("Assertion failed", ...args);
    },
    count(label = "default") {
      const n = (counts.get(label) ?? 0) + 1;
      counts.set(label, n);
      logAt("info")(`${label}: ${n}`);
    },
    countReset(label = "default") {
      counts.delete(label);
    },
    time(label = "default") {
      timersByLabel.set(label, DateNow());
    },
    timeLog(label = "default", ...args) {
      const start = timersByLabel.get(label);
      if (start !== undefined) logAt("info")(`${label}: ${DateNow() - start}ms`, ...args);
    },
    timeEnd(label = "default") {
      const start = timersByLabel.get(label);
      if (start !== undefined) {
        timersByLabel.delete(label);
        logAt("info")(`${label}: ${DateNow() - start}ms`);
      }
    },
    group: logAt("info"),
    groupCollapsed: logAt("info"),
    groupEnd() {},
  };

  /** Reports an error no caller can catch (a throwing timer or listener) to the run's log. */
  function reportError(error) {
    try {
      nativeLog("error", toUSVString(`Uncaught ${bound(inspect(error), MAX_LOG_CHARS)}`));
    } catch {
      // Nothing more can be done.
    }
  }

  // ---------------------------------------------------------------------------------------
  // DOMException
  // ---------------------------------------------------------------------------------------

  const DOM_ERROR_CODES = {
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4,
    InvalidCharacterError: 5, NoModificationAllowedError: 7, NotFoundError: 8,
    NotSupportedError: 9, InvalidStateError: 11, SyntaxError: 12,
    InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
    TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20,
    URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23,
    InvalidNodeTypeError: 24, DataCloneError: 25,
  };

  class DOMException extends Error {
    /**
     * `new DOMException(message, name)` or `new DOMException(message, {name, cause})`.
     * `name` and `code` are own properties (simpler than WebIDL's prototype getters, same reads).
     */
    constructor(message = "", options = "Error") {
      let name = "Error";
      let hasCause = false;
      let cause;
      if (options !== null && typeof options === "object") {
        if (options.name !== undefined) name = String(options.name);
        if ("cause" in options) {
          hasCause = true;
          cause = options.cause;
        }
      } else if (options !== undefined) {
        name = String(options);
      }
      super(String(message), hasCause ? { cause } : undefined);
      ObjectDefineProperty(this, "name", { value: name, writable: true, configurable: true });
      ObjectDefineProperty(this, "code", {
        value: ObjectHasOwn(DOM_ERROR_CODES, name) ? DOM_ERROR_CODES[name] : 0,
        writable: true,
        configurable: true,
      });
    }
  }
  {
    const constants = {
      INDEX_SIZE_ERR: 1, DOMSTRING_SIZE_ERR: 2, HIERARCHY_REQUEST_ERR: 3, WRONG_DOCUMENT_ERR: 4,
      INVALID_CHARACTER_ERR: 5, NO_DATA_ALLOWED_ERR: 6, NO_MODIFICATION_ALLOWED_ERR: 7,
      NOT_FOUND_ERR: 8, NOT_SUPPORTED_ERR: 9, INUSE_ATTRIBUTE_ERR: 10, INVALID_STATE_ERR: 11,
      SYNTAX_ERR: 12, INVALID_MODIFICATION_ERR: 13, NAMESPACE_ERR: 14, INVALID_ACCESS_ERR: 15,
      VALIDATION_ERR: 16, TYPE_MISMATCH_ERR: 17, SECURITY_ERR: 18, NETWORK_ERR: 19,
      ABORT_ERR: 20, URL_MISMATCH_ERR: 21, QUOTA_EXCEEDED_ERR: 22, TIMEOUT_ERR: 23,
      INVALID_NODE_TYPE_ERR: 24, DATA_CLONE_ERR: 25,
    };
    for (const key of ObjectKeys(constants)) {
      ObjectDefineProperty(DOMException, key, { value: constants[key], enumerable: true });
      ObjectDefineProperty(DOMException.prototype, key, { value: constants[key], enumerable: true });
    }
  }

  const abortError = () => new DOMException("This operation was aborted", "AbortError");

  // ---------------------------------------------------------------------------------------
  // Event and EventTarget (no bubbling: there is no tree)
  // ---------------------------------------------------------------------------------------

  let eventBeginDispatch;
  let eventEndDispatch;
  let eventStopped;

  class Event {
    #type;
    #bubbles;
    #cancelable;
    #composed;
    #defaultPrevented = false;
    #target = null;
    #currentTarget = null;
    #stopImmediate = false;
    #timeStamp = DateNow();

    constructor(type, init = undefined) {
      if (arguments.length === 0) throw new TypeError("Event: the type argument is required");
      this.#type = String(type);
      this.#bubbles = !!init?.bubbles;
      this.#cancelable = !!init?.cancelable;
      this.#composed = !!init?.composed;
    }

    get type() { return this.#type; }
    get target() { return this.#target; }
    get currentTarget() { return this.#currentTarget; }
    get srcElement() { return this.#target; }
    get bubbles() { return this.#bubbles; }
    get cancelable() { return this.#cancelable; }
    get composed() { return this.#composed; }
    get defaultPrevented() { return this.#defaultPrevented; }
    get returnValue() { return !this.#defaultPrevented; }
    get eventPhase() { return this.#currentTarget ? 2 : 0; }
    get isTrusted() { return false; }
    get timeStamp() { return this.#timeStamp; }
    get cancelBubble() { return this.#stopImmediate; }
    set cancelBubble(value) { if (value) this.#stopImmediate = true; }
    composedPath() { return this.#currentTarget ? [this.#currentTarget] : []; }
    preventDefault() { if (this.#cancelable) this.#defaultPrevented = true; }
    stopPropagation() {}
    stopImmediatePropagation() { this.#stopImmediate = true; }

    static {
      eventBeginDispatch = (event, target) => {
        if (!(#type in event)) throw new TypeError("dispatchEvent: the argument is not an Event");
        event.#target = target;
        event.#currentTarget = target;
        event.#stopImmediate = false;
      };
      eventEndDispatch = (event) => {
        event.#currentTarget = null;
      };
      eventStopped = (event) => event.#stopImmediate;
    }
  }
  for (const [name, value] of [["NONE", 0], ["CAPTURING_PHASE", 1], ["AT_TARGET", 2], ["BUBBLING_PHASE", 3]]) {
    ObjectDefineProperty(Event, name, { value, enumerable: true });
  }

  class EventTarget {
    /** type → listener records `{callback, capture, once, removed}` in registration order. */
    #listeners = new Map();

    addEventListener(type, callback, options = undefined) {
      if (callback === null || callback === undefined) return;
      if (typeof callback !== "function" && (typeof callback !== "object")) {
        throw new TypeError("addEventListener: the listener must be a function or an object");
      }
      const capture = typeof options === "boolean" ? options : !!options?.capture;
      const once = typeof options === "object" && options !== null && !!options.once;
      const signal = typeof options === "object" && options !== null ? options.signal : undefined;
      if (signal !== undefined && signal !== null && signal.aborted) return;
      const key = String(type);
      let list = this.#listeners.get(key);
      if (!list) {
        list = [];
        this.#listeners.set(key, list);
      }
      if (list.some((l) => l.callback === callback && l.capture === capture)) return;
      list.push({ callback, capture, once, removed: false });
      if (signal !== undefined && signal !== null) {
        signal.addEventListener("abort", () => this.removeEventListener(key, callback, { capture }), { once: true });
      }
    }

    removeEventListener(type, callback, options = undefined) {
      const capture = typeof options === "boolean" ? options : !!options?.capture;
      const list = this.#listeners.get(String(type));
      if (!list) return;
      const index = list.findIndex((l) => l.callback === callback && l.capture === capture);
      if (index >= 0) {
        list[index].removed = true;
        list.splice(index, 1);
      }
    }

    dispatchEvent(event) {
      eventBeginDispatch(event, this);
      try {
        const list = this.#listeners.get(event.type);
        if (list) {
          for (const listener of [...list]) {
            if (listener.removed) continue;
            if (listener.once) this.removeEventListener(event.type, listener.callback, { capture: listener.capture });
            try {
              if (typeof listener.callback === "function") ReflectApply(listener.callback, this, [event]);
              else if (typeof listener.callback.handleEvent === "function") listener.callback.handleEvent(event);
            } catch (error) {
              reportError(error);
            }
            if (eventStopped(event)) break;
          }
        }
      } finally {
        eventEndDispatch(event);
      }
      return !event.defaultPrevented;
    }
  }

  // ---------------------------------------------------------------------------------------
  // Timers: one table, driven by the core's event loop through nextTimer()/runTimers()
  // ---------------------------------------------------------------------------------------

  /** id → `{id, due, delay, repeat, callback, args, ref}`. */
  const timerTable = new Map();
  let lastTimerId = 0;
  const TIMEOUT_MAX = 2147483647;

  function normaliseDelay(delay) {
    let ms = Number(delay);
    if (!(ms >= 0)) ms = 0; // NaN, negatives
    if (ms > TIMEOUT_MAX) ms = 1; // as Node: an overflowing delay fires at once
    return ms;
  }

  /** Node-style timer handle: clearTimeout accepts it or its numeric id (`+handle`). */
  class Timeout {
    #id;
    constructor(id) { this.#id = id; }
    ref() { const t = timerTable.get(this.#id); if (t) t.ref = true; return this; }
    unref() { const t = timerTable.get(this.#id); if (t) t.ref = false; return this; }
    hasRef() { const t = timerTable.get(this.#id); return t ? t.ref : false; }
    refresh() { const t = timerTable.get(this.#id); if (t) t.due = DateNow() + t.delay; return this; }
    close() { timerTable.delete(this.#id); return this; }
    [SymbolToPrimitive]() { return this.#id; }
  }
  tag(Timeout, "Timeout");
  freezeClass(Timeout);

  function addTimer(callback, delay, args, repeat, ref = true) {
    if (typeof callback !== "function") {
      throw new TypeError("The \"callback\" argument must be a function");
    }
    const ms = normaliseDelay(delay);
    const id = ++lastTimerId;
    timerTable.set(id, { id, due: DateNow() + ms, delay: ms, repeat, callback, args, ref });
    return new Timeout(id);
  }

  function clearTimer(handle) {
    if (handle === null || handle === undefined) return;
    let id;
    try {
      id = Number(handle);
    } catch {
      return;
    }
    timerTable.delete(id);
  }

  function setTimeout(callback, delay = 0, ...args) {
    return addTimer(callback, delay, args, false);
  }
  function setInterval(callback, delay = 0, ...args) {
    return addTimer(callback, delay, args, true);
  }
  function setImmediate(callback, ...args) {
    return addTimer(callback, 0, args, false);
  }
  function clearTimeout(handle) { clearTimer(handle); }
  function clearInterval(handle) { clearTimer(handle); }
  function clearImmediate(handle) { clearTimer(handle); }

  function queueMicrotask(callback) {
    if (typeof callback !== "function") {
      throw new TypeError("queueMicrotask: the callback must be a function");
    }
    then(resolvedPromise(undefined), () => {
      try {
        callback();
      } catch (error) {
        reportError(error);
      }
    });
  }

  /**
   * Milliseconds until the earliest timer is due (0 if one is), or undefined when no timer
   * keeps the loop alive. Unref'd timers (AbortSignal.timeout, `timer.unref()`) fire while
   * another timer or a pending promise keeps the loop going, but never keep it alive alone,
   * as in Node.
   */
  function nextTimer() {
    let earliest = Infinity;
    let anyRef = false;
    for (const timer of timerTable.values()) {
      if (timer.ref) anyRef = true;
      if (timer.due < earliest) earliest = timer.due;
    }
    if (!anyRef) return undefined;
    return MathMax(0, earliest - DateNow());
  }

  /** Runs every timer that is due now, in due order. Timers they add run on a later turn. */
  function runTimers() {
    checkCancelled();
    const now = DateNow();
    const due = [];
    for (const timer of timerTable.values()) if (timer.due <= now) due.push(timer);
    due.sort((a, b) => a.due - b.due || a.id - b.id);
    for (const timer of due) {
      if (timerTable.get(timer.id) !== timer) continue; // cleared by an earlier callback
      if (timer.repeat) timer.due = now + MathMax(1, timer.delay);
      else timerTable.delete(timer.id);
      try {
        ReflectApply(timer.callback, undefined, timer.args);
      } catch (error) {
        reportError(error);
      }
    }
  }

  // ---------------------------------------------------------------------------------------
  // AbortSignal and AbortController
  // ---------------------------------------------------------------------------------------

  const signalToken = Symbol("AbortSignal");
  let createSignal;
  let signalAbort;

  class AbortSignal extends EventTarget {
    #aborted = false;
    #reason = undefined;
    #onabort = null;

    constructor(token) {
      if (token !== signalToken) throw new TypeError("Illegal constructor");
      super();
    }

    get aborted() { return this.#aborted; }
    get reason() { return this.#reason; }
    get onabort() { return this.#onabort; }
    set onabort(handler) { this.#onabort = typeof handler === "function" ? handler : null; }

    throwIfAborted() {
      if (this.#aborted) throw this.#reason;
    }

    static abort(reason = undefined) {
      const signal = createSignal();
      signalAbort(signal, reason === undefined ? abortError() : reason);
      return signal;
    }

    static timeout(milliseconds) {
      const ms = Number(milliseconds);
      if (!NumberIsFinite(ms) || ms < 0) {
        throw new TypeError("AbortSignal.timeout: the delay must be a non-negative finite number");
      }
      const signal = createSignal();
      addTimer(() => {
        signalAbort(signal, new DOMException("The operation was aborted due to timeout", "TimeoutError"));
      }, ms, [], false, false);
      return signal;
    }

    static any(signals) {
      const list = [...signals];
      const combined = createSignal();
      for (const source of list) {
        if (!(source instanceof AbortSignal)) throw new TypeError("AbortSignal.any: every element must be an AbortSignal");
      }
      for (const source of list) {
        if (source.aborted) {
          signalAbort(combined, source.reason);
          return combined;
        }
      }
      for (const source of list) {
        source.addEventListener("abort", () => signalAbort(combined, source.reason), { once: true });
      }
      return combined;
    }

    static {
      createSignal = () => new AbortSignal(signalToken);
      signalAbort = (signal, reason) => {
        if (signal.#aborted) return;
        signal.#aborted = true;
        signal.#reason = reason;
        const event = new Event("abort");
        if (signal.#onabort) {
          try {
            ReflectApply(signal.#onabort, signal, [event]);
          } catch (error) {
            reportError(error);
          }
        }
        ReflectApply(EventTarget.prototype.dispatchEvent, signal, [event]);
      };
    }
  }

  class AbortController {
    #signal = createSignal();
    get signal() { return this.#signal; }
    abort(reason = undefined) {
      signalAbort(this.#signal, reason === undefined ? abortError() : reason);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Cancellation of the current call: the runtime tracks each call's controller; the host is
  // asked before every fetch hop and timer turn, and the core may call __engine.cancel().
  // ---------------------------------------------------------------------------------------

  const trackedControllers = new Set();

  function cancelAll(reason) {
    for (const controller of [...trackedControllers]) {
      trackedControllers.delete(controller);
      controller.abort(reason === undefined ? abortError() : reason);
    }
  }

  /** Aborts every tracked call when the host reports cancellation; returns whether it did. */
  function checkCancelled() {
    let cancelled = false;
    try {
      cancelled = !!nativeIsCancelled();
    } catch {
      cancelled = false;
    }
    if (cancelled && trackedControllers.size > 0) {
      cancelAll(new DOMException("The call was cancelled or ran past its deadline", "AbortError"));
    }
    return cancelled;
  }

  const cancellation = ObjectFreeze({
    /** A new AbortController for one call; `release()` stops tracking it. */
    track() {
      const controller = new AbortController();
      trackedControllers.add(controller);
      return ObjectFreeze({ controller, release: () => trackedControllers.delete(controller) });
    },
    cancelAll,
    checkCancelled,
  });

  // ---------------------------------------------------------------------------------------
  // TextEncoder, TextDecoder, atob, btoa
  // ---------------------------------------------------------------------------------------

  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(input = "") {
      return utf8Encode(toUSVString(input));
    }
    encodeInto(source, destination) {
      if (!(destination instanceof U8)) throw new TypeError("encodeInto: the destination must be a Uint8Array");
      const text = toUSVString(source);
      let read = 0;
      let written = 0;
      for (const char of text) {
        const bytes = utf8Encode(char);
        if (written + bytes.length > destination.length) break;
        destination.set(bytes, written);
        written += bytes.length;
        read += char.length;
      }
      return { read, written };
    }
  }

  const UTF8_LABELS = ["utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"];

  /** How many bytes at the end of `bytes` start an incomplete UTF-8 sequence. */
  function incompleteTail(bytes) {
    for (let back = 1; back <= MathMin(3, bytes.length); back++) {
      const byte = bytes[bytes.length - back];
      if ((byte & 0xc0) === 0x80) continue; // continuation byte: look further back
      const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
      return need > back ? back : 0;
    }
    return 0;
  }

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    #pending = new U8(0);
    #bomSeen = false;

    constructor(label = "utf-8", options = undefined) {
      const normalised = String(label).trim().toLowerCase();
      if (!UTF8_LABELS.includes(normalised)) {
        throw new RangeError(`TextDecoder: the encoding "${label}" is not supported (only utf-8 is)`);
      }
      this.#fatal = !!options?.fatal;
      this.#ignoreBOM = !!options?.ignoreBOM;
    }

    get encoding() { return "utf-8"; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }

    decode(input = undefined, options = undefined) {
      const stream = !!options?.stream;
      let bytes = input === undefined || input === null ? new U8(0) : asBytes(input);
      if (bytes === undefined) throw new TypeError("TextDecoder.decode: the input must be an ArrayBuffer or an ArrayBufferView");
      if (this.#pending.length) {
        const joined = new U8(this.#pending.length + bytes.length);
        joined.set(this.#pending, 0);
        joined.set(bytes, this.#pending.length);
        bytes = joined;
        this.#pending = new U8(0);
      }
      if (stream) {
        const tail = incompleteTail(bytes);
        if (tail) {
          this.#pending = bytes.slice(bytes.length - tail);
          bytes = bytes.subarray(0, bytes.length - tail);
        }
      }
      let text = utf8Decode(bytes, this.#fatal);
      if (!this.#ignoreBOM && !this.#bomSeen && text.length > 0) {
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        this.#bomSeen = true;
      }
      if (!stream) this.#bomSeen = false;
      return text;
    }
  }

  function btoa(data) {
    if (arguments.length === 0) throw new TypeError("btoa: 1 argument required");
    const text = String(data);
    for (let i = 0; i < text.length; i++) {
      if (text.charCodeAt(i) > 0xff) {
        throw new DOMException("Invalid character", "InvalidCharacterError");
      }
    }
    return base64Encode(latin1Encode(text));
  }

  function atob(data) {
    if (arguments.length === 0) throw new TypeError("atob: 1 argument required");
    // Forgiving-base64 decode (HTML): strip ASCII whitespace, allow missing padding.
    let text = String(data).replace(/[\t\n\f\r ]/g, "");
    if (text.length % 4 === 0) text = text.replace(/={1,2}$/, "");
    if (text.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(text)) {
      throw new DOMException("The string to be decoded is not correctly encoded.", "InvalidCharacterError");
    }
    return latin1Decode(nativeBase64Decode(canonicalBase64(text)));
  }

  // ---------------------------------------------------------------------------------------
  // URLSearchParams and URL (parsing by the host's WHATWG parser)
  // ---------------------------------------------------------------------------------------

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

  // ---------------------------------------------------------------------------------------
  // Headers
  // ---------------------------------------------------------------------------------------

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

  // ---------------------------------------------------------------------------------------
  // Bodies: Request and Response share this base; `body` is a minimal readable stream that
  // yields the whole body as one chunk, then ends.
  // ---------------------------------------------------------------------------------------

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

  // ---------------------------------------------------------------------------------------
  // Request
  // ---------------------------------------------------------------------------------------

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

  // ---------------------------------------------------------------------------------------
  // Response
  // ---------------------------------------------------------------------------------------

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

  // ---------------------------------------------------------------------------------------
  // fetch: one host HTTP exchange per hop; redirects are followed here, so the host checks
  // every hop against the plugin's grants.
  // ---------------------------------------------------------------------------------------

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

  // ---------------------------------------------------------------------------------------
  // Buffer: Node's basics, as a Uint8Array subclass
  // ---------------------------------------------------------------------------------------

  const ENCODINGS = ["utf8", "utf-8", "hex", "base64", "base64url", "latin1", "binary", "ascii"];

  function normaliseEncoding(encoding) {
    const name = encoding === undefined || encoding === null ? "utf8" : String(encoding).toLowerCase();
    if (!ENCODINGS.includes(name)) {
      const error = new TypeError(`Unknown encoding: ${encoding}`);
      error.code = "ERR_UNKNOWN_ENCODING";
      throw error;
    }
    if (name === "utf-8") return "utf8";
    if (name === "binary") return "latin1";
    return name;
  }

  function encodeString(text, encoding) {
    switch (normaliseEncoding(encoding)) {
      case "utf8": return utf8Encode(text);
      case "hex": return hexDecode(text);
      case "base64":
      case "base64url": return base64DecodeLenient(text);
      case "latin1": return latin1Encode(text);
      case "ascii": return latin1Encode(text).map((b) => b & 0x7f);
      default: throw new TypeError(`Unknown encoding: ${encoding}`);
    }
  }

  function decodeBytes(bytes, encoding) {
    switch (normaliseEncoding(encoding)) {
      case "utf8": return utf8Decode(bytes, false);
      case "hex": return hexEncode(bytes);
      case "base64": return base64Encode(bytes);
      case "base64url": return base64Encode(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      case "latin1": return latin1Decode(bytes);
      case "ascii": return latin1Decode(bytes.map((b) => b & 0x7f));
      default: throw new TypeError(`Unknown encoding: ${encoding}`);
    }
  }

  function isBuffer(value) {
    return value instanceof Buffer;
  }

  class Buffer extends U8 {
    /**
     * Typed-array construction (length; buffer, offset, length; array-like) as Uint8Array does,
     * which is also what `subarray`, `map` and friends use; `new Buffer(string, encoding)` (old
     * Node) behaves like `Buffer.from`.
     */
    constructor(arg, encodingOrOffset, length) {
      if (typeof arg === "string") {
        const bytes = encodeString(arg, encodingOrOffset);
        super(bytes.length);
        this.set(bytes);
        return;
      }
      if (length !== undefined) super(arg, encodingOrOffset, length);
      else if (encodingOrOffset !== undefined) super(arg, encodingOrOffset);
      else super(arg);
    }

    static from(value, encodingOrOffset = undefined, length = undefined) {
      if (typeof value === "string") return new Buffer(value, encodingOrOffset);
      if (value instanceof ArrayBufferCtor) {
        const offset = encodingOrOffset === undefined ? 0 : Number(encodingOrOffset);
        const size = length === undefined ? value.byteLength - offset : Number(length);
        return new Buffer(value, offset, size);
      }
      if (ArrayBufferIsView(value)) {
        const bytes = asBytes(value);
        const copy = new Buffer(bytes.length);
        copy.set(bytes);
        return copy;
      }
      if (ArrayIsArray(value)) {
        const copy = new Buffer(value.length);
        for (let i = 0; i < value.length; i++) copy[i] = Number(value[i]) & 0xff;
        return copy;
      }
      if (value !== null && typeof value === "object") {
        if (value.type === "Buffer" && ArrayIsArray(value.data)) return Buffer.from(value.data);
        if (typeof value.length === "number") return Buffer.from(Array.from(value));
        const primitive = typeof value[SymbolToPrimitive] === "function"
          ? value[SymbolToPrimitive]("string")
          : typeof value.valueOf === "function" ? value.valueOf() : value;
        if (primitive !== value && (typeof primitive === "string" || typeof primitive === "object")) {
          return Buffer.from(primitive, encodingOrOffset, length);
        }
      }
      throw new TypeError("The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object.");
    }

    static alloc(size, fill = undefined, encoding = undefined) {
      const buffer = new Buffer(Number(size));
      if (fill !== undefined && fill !== 0) buffer.fill(fill, 0, buffer.length, encoding);
      return buffer;
    }

    static allocUnsafe(size) { return new Buffer(Number(size)); }
    static allocUnsafeSlow(size) { return new Buffer(Number(size)); }

    static byteLength(value, encoding = undefined) {
      if (typeof value === "string") {
        const name = normaliseEncoding(encoding);
        if (name === "utf8") return utf8ByteLength(value);
        if (name === "latin1" || name === "ascii") return value.length;
        return encodeString(value, name).length;
      }
      const bytes = asBytes(value);
      if (bytes) return bytes.byteLength;
      throw new TypeError("Buffer.byteLength: the argument must be a string, a Buffer or an ArrayBuffer");
    }

    static concat(list, totalLength = undefined) {
      if (!ArrayIsArray(list)) throw new TypeError("Buffer.concat: the list must be an array");
      const total = totalLength === undefined ? list.reduce((sum, item) => sum + asBytes(item).length, 0) : Number(totalLength);
      const out = Buffer.alloc(total);
      let offset = 0;
      for (const item of list) {
        const bytes = asBytes(item);
        if (!bytes) throw new TypeError("Buffer.concat: every item must be a Buffer or a Uint8Array");
        if (offset >= total) break;
        const part = bytes.subarray(0, total - offset);
        out.set(part, offset);
        offset += part.length;
      }
      return out;
    }

    static isBuffer(value) { return isBuffer(value); }

    static isEncoding(encoding) {
      try {
        normaliseEncoding(encoding);
        return typeof encoding === "string";
      } catch {
        return false;
      }
    }

    static compare(a, b) {
      const x = asBytes(a);
      const y = asBytes(b);
      const n = MathMin(x.length, y.length);
      for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
      return x.length === y.length ? 0 : x.length < y.length ? -1 : 1;
    }

    toString(encoding = "utf8", start = 0, end = this.length) {
      const from = MathMax(0, MathFloor(Number(start) || 0));
      const to = MathMin(this.length, end === undefined ? this.length : MathFloor(Number(end)));
      if (to <= from) return "";
      return decodeBytes(new U8(this.buffer, this.byteOffset + from, to - from), encoding);
    }

    toJSON() { return { type: "Buffer", data: Array.from(this) }; }

    equals(other) { return Buffer.compare(this, other) === 0; }

    compare(other) { return Buffer.compare(this, other); }

    /** Node's slice shares memory (unlike Uint8Array's). */
    slice(start = undefined, end = undefined) { return this.subarray(start, end); }

    copy(target, targetStart = 0, sourceStart = 0, sourceEnd = this.length) {
      const part = this.subarray(sourceStart, sourceEnd);
      const room = MathMax(0, target.length - targetStart);
      const chunk = part.subarray(0, room);
      target.set(chunk, targetStart);
      return chunk.length;
    }

    fill(value, offset = 0, end = this.length, encoding = undefined) {
      if (typeof offset === "string") return this.fill(value, 0, this.length, offset);
      if (typeof value === "string") {
        const pattern = encodeString(value, encoding);
        if (pattern.length === 0) return super.fill(0, offset, end);
        for (let i = offset, j = 0; i < end; i++, j = (j + 1) % pattern.length) this[i] = pattern[j];
        return this;
      }
      return super.fill(typeof value === "number" ? value & 0xff : value, offset, end);
    }

    indexOf(value, byteOffset = 0, encoding = undefined) {
      if (typeof value === "number") return super.indexOf(value & 0xff, byteOffset);
      const needle = typeof value === "string" ? encodeString(value, encoding) : asBytes(value);
      if (!needle) throw new TypeError("Buffer.indexOf: the value must be a string, a number or a Buffer");
      const from = byteOffset < 0 ? MathMax(0, this.length + byteOffset) : byteOffset;
      if (needle.length === 0) return from <= this.length ? from : this.length;
      outer: for (let i = from; i + needle.length <= this.length; i++) {
        for (let j = 0; j < needle.length; j++) if (this[i + j] !== needle[j]) continue outer;
        return i;
      }
      return -1;
    }

    includes(value, byteOffset = 0, encoding = undefined) {
      return this.indexOf(value, byteOffset, encoding) !== -1;
    }

    write(text, offset = 0, length = undefined, encoding = undefined) {
      if (typeof offset === "string") return this.write(text, 0, undefined, offset);
      if (typeof length === "string") return this.write(text, offset, undefined, length);
      const bytes = encodeString(String(text), encoding);
      const room = MathMax(0, this.length - offset);
      const count = MathMin(bytes.length, room, length === undefined ? room : length);
      this.set(bytes.subarray(0, count), offset);
      return count;
    }
  }
  ObjectDefineProperty(Buffer, "poolSize", { value: 8192, enumerable: true });

  // ---------------------------------------------------------------------------------------
  // structuredClone
  // ---------------------------------------------------------------------------------------

  const TYPED_ARRAYS = {
    Int8Array, Uint8Array: U8, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array,
    Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array,
  };
  const ERROR_TYPES = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };

  function dataCloneError(what) {
    return new DOMException(`${what} could not be cloned.`, "DataCloneError");
  }

  function structuredClone(value, options = undefined) {
    if (arguments.length === 0) throw new TypeError("structuredClone: 1 argument required");
    if (options?.transfer !== undefined && [...options.transfer].length > 0) {
      throw new DOMException("structuredClone: transfer is not supported in Bosun's engine", "DataCloneError");
    }
    const memory = new Map();
    const clone = (v) => {
      if (typeof v === "function") throw dataCloneError(inspect(v));
      if (typeof v === "symbol") throw dataCloneError(v.toString());
      if (typeof v !== "object" || v === null) return v;
      if (memory.has(v)) return memory.get(v);
      let out;
      if (ArrayIsArray(v)) {
        out = new Array(v.length);
        memory.set(v, out);
        for (let i = 0; i < v.length; i++) if (i in v) out[i] = clone(v[i]);
        return out;
      }
      if (v instanceof Date) out = new Date(v.getTime());
      else if (v instanceof RegExp) out = new RegExp(v.source, v.flags);
      else if (v instanceof ArrayBufferCtor) out = v.slice(0);
      else if (v instanceof DataView) out = new DataView(clone(v.buffer), v.byteOffset, v.byteLength);
      else if (ArrayBufferIsView(v)) {
        const kind = ObjectPrototypeToString.call(v).slice(8, -1);
        const Ctor = TYPED_ARRAYS[kind];
        if (!Ctor) throw dataCloneError(kind);
        out = new Ctor(clone(v.buffer), v.byteOffset, v.length);
      } else if (v instanceof Map) {
        out = new Map();
        memory.set(v, out);
        for (const [k, item] of v) out.set(clone(k), clone(item));
        return out;
      } else if (v instanceof Set) {
        out = new Set();
        memory.set(v, out);
        for (const item of v) out.add(clone(item));
        return out;
      } else if (v instanceof Error) {
        const Ctor = ObjectHasOwn(ERROR_TYPES, v.name) ? ERROR_TYPES[v.name] : Error;
        out = new Ctor(v.message);
        memory.set(v, out);
        if (typeof v.stack === "string") ObjectDefineProperty(out, "stack", { value: v.stack, writable: true, configurable: true });
        if ("cause" in v) ObjectDefineProperty(out, "cause", { value: clone(v.cause), writable: true, configurable: true });
        return out;
      } else if (v instanceof Boolean || v instanceof Number || v instanceof String) {
        out = Object(v.valueOf());
      } else if (v instanceof PromiseCtor || v instanceof WeakMap || v instanceof WeakSet) {
        throw dataCloneError(ObjectPrototypeToString.call(v).slice(8, -1));
      } else {
        out = {};
        memory.set(v, out);
        for (const key of ObjectKeys(v)) out[key] = clone(v[key]);
        return out;
      }
      memory.set(v, out);
      return out;
    };
    return clone(value);
  }

  // ---------------------------------------------------------------------------------------
  // performance and process (small, honest subsets)
  // ---------------------------------------------------------------------------------------

  const timeOrigin = DateNow();
  const performance = ObjectFreeze({
    timeOrigin,
    now: () => DateNow() - timeOrigin,
    toJSON: () => ({ timeOrigin }),
  });

  // No environment reaches the sandbox: `process.env` is empty, so a plugin reading
  // `process.env.SOME_KEY` sees undefined exactly as if the variable were unset. Plugin
  // settings come from the plugin's config (Triggerfish: `context.config`).
  const process = {
    env: {},
    argv: [],
    execArgv: [],
    platform: "wasi",
    arch: "wasm32",
    version: "",
    versions: {},
    pid: 0,
    exitCode: undefined,
    cwd: () => "/workspace",
    nextTick(callback, ...args) {
      queueMicrotask(() => ReflectApply(callback, undefined, args));
    },
    emitWarning(warning) {
      console.warn(typeof warning === "string" ? `Warning: ${warning}` : warning);
    },
    hrtime: ObjectFreeze(Object.assign(
      (previous = undefined) => {
        const ms = DateNow() - timeOrigin;
        let seconds = MathFloor(ms / 1000);
        let nanos = (ms % 1000) * 1e6;
        if (previous) {
          seconds -= previous[0];
          nanos -= previous[1];
          if (nanos < 0) { seconds -= 1; nanos += 1e9; }
        }
        return [seconds, nanos];
      },
      { bigint: () => BigInt(DateNow() - timeOrigin) * 1000000n },
    )),
  };

  // ---------------------------------------------------------------------------------------
  // Publish: globals, frozen classes, and the internal object for bosun:internal
  // ---------------------------------------------------------------------------------------

  for (const cls of [
    DOMException, Event, EventTarget, AbortSignal, AbortController, TextEncoder, TextDecoder,
    URLSearchParams, URL, Headers, BodyStream, Body, Request, Response, Buffer,
  ]) {
    freezeClass(cls);
  }
  for (const fn of [
    fetch, setTimeout, setInterval, setImmediate, clearTimeout, clearInterval, clearImmediate,
    queueMicrotask, structuredClone, atob, btoa,
  ]) {
    ObjectFreeze(fn);
  }

  defineGlobals({
    console,
    DOMException,
    Event,
    EventTarget,
    AbortController,
    AbortSignal,
    TextEncoder,
    TextDecoder,
    URL,
    URLSearchParams,
    Headers,
    Request,
    Response,
    fetch,
    Buffer,
    atob,
    btoa,
    setTimeout,
    setInterval,
    setImmediate,
    clearTimeout,
    clearInterval,
    clearImmediate,
    queueMicrotask,
    structuredClone,
    performance,
    process,
  });

  const internal = ObjectFreeze({
    /** The host calls, captured before `__native` was deleted. */
    native: host,
    /** For `__engine.nextTimer` / `__engine.runTimers`. */
    timers: ObjectFreeze({ nextTimer, runTimers, setTimeout, clearTimeout }),
    /** Tracking and aborting the current call's signal. */
    cancellation,
    /** The classes and functions as the prelude made them (plugins may replace the globals). */
    web: ObjectFreeze({
      AbortController, AbortSignal, DOMException, Event, EventTarget, Headers, Request,
      Response, URL, URLSearchParams, TextEncoder, TextDecoder, Buffer, fetch, structuredClone,
      console, queueMicrotask, setTimeout, clearTimeout, setInterval, clearInterval,
      setImmediate, clearImmediate, atob, btoa, process,
    }),
    /** Helpers shared with the runtime and modules. */
    util: ObjectFreeze({
      inspect, describeThrown, describeError, utf8ByteLength, utf8Encode, utf8Decode,
      reportError, bound,
    }),
  });

  ObjectDefineProperty(global, "__bosunInternal", {
    value: internal,
    writable: false,
    enumerable: false,
    configurable: true,
  });
})(globalThis);
