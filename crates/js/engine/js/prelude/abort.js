// Bosun JS engine prelude: `AbortSignal` (abort, timeout, any) and `AbortController`. A signal's
// state is private: only its controller, its timer or the signals it follows can abort it.
"use strict";

(function bosunPreludeAbort(shared) {
  const {
    ReflectApply, NumberIsFinite, reportError, DOMException, abortError, Event, EventTarget,
    addTimer,
  } = shared;

  const signalToken = Symbol("AbortSignal");
  let createSignal;
  let signalAbort;

  class AbortSignal extends EventTarget {
    #aborted = false;
    #reason = undefined;
    #onabort = null;

    constructor(token) {
      if (token !== signalToken) throw new TypeError("Illegal constructor");
      super();
    }

    get aborted() { return this.#aborted; }
    get reason() { return this.#reason; }
    get onabort() { return this.#onabort; }
    set onabort(handler) { this.#onabort = typeof handler === "function" ? handler : null; }

    throwIfAborted() {
      if (this.#aborted) throw this.#reason;
    }

    static abort(reason = undefined) {
      const signal = createSignal();
      signalAbort(signal, reason === undefined ? abortError() : reason);
      return signal;
    }

    static timeout(milliseconds) {
      const ms = Number(milliseconds);
      if (!NumberIsFinite(ms) || ms < 0) {
        throw new TypeError("AbortSignal.timeout: the delay must be a non-negative finite number");
      }
      const signal = createSignal();
      addTimer(() => {
        signalAbort(signal, new DOMException("The operation was aborted due to timeout", "TimeoutError"));
      }, ms, [], false, false);
      return signal;
    }

    static any(signals) {
      const list = [...signals];
      const combined = createSignal();
      for (const source of list) {
        if (!(source instanceof AbortSignal)) throw new TypeError("AbortSignal.any: every element must be an AbortSignal");
      }
      for (const source of list) {
        if (source.aborted) {
          signalAbort(combined, source.reason);
          return combined;
        }
      }
      for (const source of list) {
        source.addEventListener("abort", () => signalAbort(combined, source.reason), { once: true });
      }
      return combined;
    }

    static {
      createSignal = () => new AbortSignal(signalToken);
      signalAbort = (signal, reason) => {
        if (signal.#aborted) return;
        signal.#aborted = true;
        signal.#reason = reason;
        const event = new Event("abort");
        if (signal.#onabort) {
          try {
            ReflectApply(signal.#onabort, signal, [event]);
          } catch (error) {
            reportError(error);
          }
        }
        ReflectApply(EventTarget.prototype.dispatchEvent, signal, [event]);
      };
    }
  }

  class AbortController {
    #signal = createSignal();
    get signal() { return this.#signal; }
    abort(reason = undefined) {
      signalAbort(this.#signal, reason === undefined ? abortError() : reason);
    }
  }

  shared.provide({ createSignal, AbortSignal, AbortController });
})(globalThis.__bosunPrelude);
