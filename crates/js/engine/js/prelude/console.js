// Bosun JS engine prelude: `console` (util.format-like formatting, to the host's log) and
// reportError, where errors no caller can catch (timers, listeners) are logged.
"use strict";

(function bosunPreludeConsole(shared) {
  const { JSONStringify, DateNow, nativeLog, toUSVString, inspect, bound } = shared;

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

  shared.provide({ console, reportError });
})(globalThis.__bosunPrelude);
