// Bosun JS engine prelude: `process`, a small honest subset of Node's (no environment, no exit,
// no streams).
"use strict";

(function bosunPreludeProcess(shared) {
  const {
    ObjectFreeze, ReflectApply, DateNow, MathFloor, console, queueMicrotask, timeOrigin,
  } = shared;

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

  shared.provide({ process });
})(globalThis.__bosunPrelude);
