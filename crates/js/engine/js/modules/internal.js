// Bosun JS engine: `bosun:internal`, the layer's private registry.
//
// The prelude (classic scripts) cannot export anything, so it leaves one frozen object on a
// temporary, non-enumerable global; this module takes it and deletes the global the first time
// it is evaluated, which happens while `bosun:runtime` is evaluated during pre-initialisation,
// before any plugin code exists. Module instances are cached, so every later importer gets the
// same object.
//
// The core's loader resolves `bosun:internal` only for the engine's own modules
// (`bosun:runtime` and the `node:` modules), never for plugin files.
//
// What it holds (see prelude/publish.js for the details):
//   native        the host calls (`__native`), captured before the prelude deleted them
//   timers        nextTimer, runTimers, setTimeout, clearTimeout
//   cancellation  track() a call's AbortController, cancelAll(reason), checkCancelled()
//   codeFromStrings allow(): lets this instance's plugin use eval and Function (its manifest
//                 asked, and the person trusting it saw that)
//   web           the web classes and functions as the prelude made them
//   util          inspect, describeThrown, describeError, utf8ByteLength, utf8Encode,
//                 utf8Decode, reportError, bound
const internal = globalThis.__bosunInternal;
if (internal === undefined || internal === null) {
  throw new Error("bosun:internal: the prelude has not run, or its internal object was already taken");
}
delete globalThis.__bosunInternal;

export default internal;
