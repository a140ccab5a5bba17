// Bosun JS engine prelude: no code built from strings. `eval` and every constructor of the
// Function family (Function, AsyncFunction, GeneratorFunction, AsyncGeneratorFunction, reached
// as globals or through any function's `constructor`) throw an EvalError, so a plugin runs only
// the code that was scanned, hashed and trusted. `instanceof Function` keeps working.
"use strict";

(function bosunPreludeCodeFromStrings(global) {
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
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
    // A function (not an arrow) so `new` reaches `refuse`; its `prototype` keeps `instanceof`.
    const replacement = function Function() {
      refuse();
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
  const evalReplacement = function () {
    refuse();
  };
  ObjectDefineProperty(evalReplacement, "name", { value: "eval" });
  ObjectDefineProperty(global, "eval", {
    value: evalReplacement,
    writable: false,
    enumerable: false,
    configurable: false,
  });
})(globalThis);
