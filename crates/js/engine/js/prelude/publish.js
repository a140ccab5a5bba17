// Bosun JS engine prelude, last file: freezes the classes and functions, defines the globals,
// hands the internal object over to `bosun:internal` and removes the prelude's shared object.
"use strict";

(function bosunPreludePublish(global, shared) {
  const {
    ObjectFreeze, ObjectDefineProperty, host, defineGlobals, freezeClass, utf8Encode, utf8Decode,
    utf8ByteLength, inspect, describeError, bound, describeThrown, console, reportError,
    DOMException, Event, EventTarget, setTimeout, setInterval, setImmediate, clearTimeout,
    clearInterval, clearImmediate, queueMicrotask, nextTimer, runTimers, AbortSignal,
    AbortController, cancellation, TextEncoder, TextDecoder, btoa, atob, URLSearchParams, URL,
    Headers, BodyStream, Body, Request, Response, fetch, Buffer, structuredClone, performance,
    process, Intl, codeFromStrings, io,
  } = shared;

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
    Intl,
  });

  const internal = ObjectFreeze({
    /** The host calls, captured before `__native` was deleted. */
    native: host,
    /** For `__engine.nextTimer` / `__engine.runTimers`. */
    timers: ObjectFreeze({ nextTimer, runTimers, setTimeout, clearTimeout }),
    /** Tracking and aborting the current call's signal. */
    cancellation,
    /** The running processes the event loop waits on (prelude/io.js). */
    io,
    /** `allow()`: lets this instance's plugin build code from strings (its manifest asked). */
    codeFromStrings,
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

  // From here on `shared` lives only in the files' closures, and stays as it is.
  ObjectFreeze(shared);
  delete global.__bosunPrelude;
})(globalThis, globalThis.__bosunPrelude);
