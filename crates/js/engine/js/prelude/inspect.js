// Bosun JS engine prelude: a safe, bounded description of any value, for console output and
// for error messages (inspect, describeError, describeThrown). Installs no global.
"use strict";

(function bosunPreludeInspect(shared) {
  const {
    ObjectKeys, ObjectGetPrototypeOf, ObjectPrototypeToString, ArrayIsArray, ReflectApply,
    JSONStringify, MathMin, NumberIsFinite, PromiseCtor, ArrayBufferIsView, hexEncode,
  } = shared;

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
      // URL and Buffer come from later files: looked up on `shared` when called, not now.
      if (value instanceof shared.URL) return `URL { href: '${value.href}' }`;
      if (shared.isBuffer(value)) {
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

  /**
   * ` (at index.mjs:12:5)`: the plugin file, line and column of the innermost frame of an
   * error's stack that is in the plugin's own code (its modules are named `plugin:<path>`), or
   * nothing when there is none or the stack cannot be read.
   */
  function whereThrown(error) {
    try {
      const stack = error.stack;
      if (typeof stack !== "string") return "";
      const frame = /plugin:([\w./@+-]{1,200}):(\d{1,7})(?::(\d{1,7}))?/.exec(stack.slice(0, 4000));
      if (!frame) return "";
      return ` (at ${frame[1]}:${frame[2]}${frame[3] === undefined ? "" : `:${frame[3]}`})`;
    } catch {
      // A getter that throws, or a plugin that replaced what this uses: no location.
      return "";
    }
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
    if (value instanceof Error || isErrorLike(value)) text = describeError(value) + whereThrown(value);
    else if (typeof value === "string") text = `Non-Error value thrown: ${JSONStringify(value.slice(0, max))}`;
    else text = `Non-Error value thrown: ${inspect(value, 1, [], true)}`;
    // Control characters (newlines included) would only garble a one-line message.
    // eslint-disable-next-line no-control-regex
    return bound(text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim(), max);
  }

  shared.provide({ inspect, describeError, bound, describeThrown });
})(globalThis.__bosunPrelude);
