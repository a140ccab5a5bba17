// Bosun JS engine prelude: no code built from strings. `eval` and every constructor of the
// Function family (Function, AsyncFunction, GeneratorFunction, AsyncGeneratorFunction, reached
// as globals or through any function's `constructor`) throw an EvalError, so a plugin runs only
// the code that was scanned, hashed and trusted. `instanceof Function` keeps working.
//
// The one way back: a plugin whose manifest asks for it (`"bosun": {"codeFromStrings": true}`),
// which the person trusting it was shown. The runtime then calls `codeFromStrings.allow()`
// (through `bosun:internal`, unreachable from plugin code) before the plugin's code is
// evaluated; the replacements then hand over to the originals they captured here. It cannot be
// taken back within the instance, and each instance runs one plugin.
"use strict";

(function bosunPreludeCodeFromStrings(global, shared) {
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectFreeze = Object.freeze;
  const ReflectApply = Reflect.apply;
  const ReflectConstruct = Reflect.construct;
  let allowed = false;
  const message =
    "code built from strings (eval, Function and its async and generator forms) does not run in Bosun's sandbox: write the code in the plugin's files";

  function refuse() {
    throw new EvalError(message);
  }

  const prototypes = [
    Function.prototype,
    ObjectGetPrototypeOf(async function () {}),
    ObjectGetPrototypeOf(function* () {}),
    ObjectGetPrototypeOf(async function* () {}),
  ];
  const replacements = prototypes.map((prototype) => {
    const original = prototype.constructor;
    // A function (not an arrow) so `new` reaches `refuse`; its `prototype` keeps `instanceof`.
    const replacement = function Function(...args) {
      if (!allowed) refuse();
      return ReflectConstruct(original, args);
    };
    ObjectDefineProperty(replacement, "prototype", {
      value: prototype,
      writable: false,
      enumerable: false,
      configurable: false,
    });
    ObjectDefineProperty(prototype, "constructor", {
      value: replacement,
      writable: false,
      enumerable: false,
      configurable: false,
    });
    return replacement;
  });
  ObjectDefineProperty(global, "Function", {
    value: replacements[0],
    writable: false,
    enumerable: false,
    configurable: false,
  });
  const originalEval = global.eval;
  // Called through this function, `eval` is always indirect: the code runs in the global scope.
  const evalReplacement = function (code) {
    if (!allowed) refuse();
    return ReflectApply(originalEval, undefined, [code]);
  };
  ObjectDefineProperty(evalReplacement, "name", { value: "eval" });
  ObjectDefineProperty(global, "eval", {
    value: evalReplacement,
    writable: false,
    enumerable: false,
    configurable: false,
  });
  shared.provide({
    codeFromStrings: ObjectFreeze({
      allow() {
        allowed = true;
      },
    }),
  });
})(globalThis, globalThis.__bosunPrelude);
