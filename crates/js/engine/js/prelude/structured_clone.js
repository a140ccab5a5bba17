// Bosun JS engine prelude: `structuredClone`. Cycles and shared references are kept; functions,
// symbols, promises and weak collections are refused, and transfer lists are not supported.
"use strict";

(function bosunPreludeStructuredClone(shared) {
  const {
    ObjectDefineProperty, ObjectKeys, ObjectPrototypeToString, ObjectHasOwn, ArrayIsArray,
    PromiseCtor, U8, ArrayBufferCtor, ArrayBufferIsView, inspect, DOMException,
  } = shared;

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

  shared.provide({ structuredClone });
})(globalThis.__bosunPrelude);
