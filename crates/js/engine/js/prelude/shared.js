// Bosun JS engine prelude, first file: captures the host calls and the intrinsics the layer
// relies on, and creates `shared`, the one object through which the prelude's files share their
// internals.
//
// The prelude is the directory of classic scripts that builds the web globals plugins expect
// (console, URL, URLSearchParams, TextEncoder, TextDecoder, atob/btoa, Event/EventTarget,
// AbortController/AbortSignal, DOMException, timers, Headers/Request/Response/fetch, Buffer,
// structuredClone, performance, a small `process`, `Intl`) on top of `globalThis.__native`, the host calls
// the Rust core installs (see README.md). This file deletes `__native`: plugin code never sees the
// host calls directly.
//
// How the files share their internals:
// - The core evaluates them once, in the order of `PRELUDE` in src/engine.rs (test/harness.mjs
//   reads the same list), before `bosun:runtime` and before any plugin code exists.
// - A classic script's top-level declarations would be global bindings that plugin code could
//   read, so each file is one IIFE and declares nothing outside it.
// - This file puts `shared` (a null-prototype object) on a temporary, non-enumerable global,
//   `__bosunPrelude`. Every later file ends with `})(globalThis.__bosunPrelude);`, takes what it
//   uses by destructuring `shared` at its top, and adds what later files use with
//   `shared.provide({...})`, which refuses a name that is already there. A name that a later
//   file provides is read as `shared.name` when it is called, never while the files are
//   evaluated (inspect.js: URL and Buffer; timers.js: cancellation).
// - publish.js, last, defines the globals, hands the internal object over (below), freezes
//   `shared` and deletes `__bosunPrelude`. From then on `shared` is reachable only from the
//   files' closures: the global environment is exactly what publish.js defines.
//
// What the runtime and the built-in modules need (the captured host calls, the timer table,
// cancellation, the classes as the prelude made them) goes into one frozen "internal" object,
// handed over through a second temporary global that `modules/internal.js` (`bosun:internal`)
// takes and deletes while `bosun:runtime` is evaluated, still before any plugin code exists. The
// core's loader lets only the engine's own modules import `bosun:internal`.
//
// Robustness against plugin code: everything here uses functions captured at start-up (the host
// calls, JSON, Reflect.apply, Promise), class state lives in private fields, and the prototypes
// and constructors of the classes the runtime relies on are frozen, so a plugin that patches a
// global or a prototype changes only what it itself sees. None of this is a security boundary
// (the wasmtime sandbox and the host's guards are); it keeps the layer's own behaviour honest.
"use strict";

(function bosunPreludeShared(global) {
  const native = global.__native;
  if (native === null || typeof native !== "object") {
    throw new Error("prelude: globalThis.__native is missing; the engine core must install it first");
  }
  delete global.__native;

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
    "intl", "spawn", "processWrite", "processCloseStdin", "processKill", "processPoll",
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

  /** The prelude's internals, shared by its files (see the top of this file). */
  const shared = Object.create(null);

  /** Adds names for the files that follow; a name provided twice is a mistake in the file order. */
  function provide(entries) {
    for (const name of ObjectKeys(entries)) {
      if (ObjectHasOwn(shared, name)) throw new Error(`prelude: ${name} is provided twice`);
      shared[name] = entries[name];
    }
  }

  provide({
    provide,
    ObjectFreeze, ObjectDefineProperty, ObjectKeys, ObjectGetPrototypeOf, ObjectPrototypeToString,
    ObjectHasOwn, ArrayIsArray, ReflectApply, JSONStringify, JSONParse, DateNow, MathMin, MathMax,
    MathFloor, NumberIsFinite, StringFromCharCode, PromiseCtor, PromiseThen, SymbolIterator,
    SymbolAsyncIterator, SymbolToPrimitive, SymbolToStringTag, U8, ArrayBufferCtor,
    ArrayBufferIsView,
    host, nativeLog, nativeHttp, nativeParseUrl, nativeUtf8Encode, nativeUtf8Decode,
    nativeBase64Encode, nativeBase64Decode, nativeIsCancelled,
    resolvedPromise, then, defineGlobals, freezeClass, tag,
  });

  ObjectDefineProperty(global, "__bosunPrelude", {
    value: shared,
    writable: false,
    enumerable: false,
    configurable: true,
  });
})(globalThis);
