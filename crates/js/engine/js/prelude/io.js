// Bosun JS engine prelude: the table of running processes the core's event loop waits on.
// `node:child_process` (and `Deno.Command`) register a handler per process; the core asks
// `pending()` whether anything is left to wait for and `poll(ms)` hands the host's events
// (`{id, kind: "stdout" | "stderr" | "exit", data, code, signal}`) to their handlers. A call's
// processes end with the call (the host kills them), so `reset()` forgets them at each call.
"use strict";

(function bosunPreludeIo(shared) {
  const { host, reportError } = shared;
  const handlers = new Map();

  /** Routes the events of process `id` to `handler` until it exits. */
  function register(id, handler) {
    handlers.set(id, handler);
  }

  function unregister(id) {
    handlers.delete(id);
  }

  /** Whether a running process can still settle something. */
  function pending() {
    return handlers.size > 0;
  }

  /** Waits up to `waitMs` for the host's events and dispatches them. */
  function poll(waitMs) {
    const events = host.processPoll(waitMs);
    for (const event of events) {
      const handler = handlers.get(event.id);
      if (handler === undefined) continue;
      if (event.kind === "exit") handlers.delete(event.id);
      try {
        handler(event);
      } catch (error) {
        reportError(error);
      }
    }
  }

  function reset() {
    handlers.clear();
  }

  shared.provide({ io: Object.freeze({ register, unregister, pending, poll, reset }) });
})(globalThis.__bosunPrelude);
