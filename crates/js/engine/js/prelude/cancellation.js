// Bosun JS engine prelude: cancellation of the current call. The runtime tracks each call's
// controller; the host is asked before every fetch hop and timer turn, and the core may call
// __engine.cancel(). Installs no global.
"use strict";

(function bosunPreludeCancellation(shared) {
  const { ObjectFreeze, nativeIsCancelled, DOMException, abortError, AbortController } = shared;

  /** The calls running now, each a handle whose controller is made when first needed. */
  const trackedCalls = new Set();

  function cancelAll(reason) {
    for (const call of [...trackedCalls]) {
      trackedCalls.delete(call);
      call.abort(reason === undefined ? abortError() : reason);
    }
  }

  /** Aborts every tracked call when the host reports cancellation; returns whether it did. */
  function checkCancelled() {
    let cancelled = false;
    try {
      cancelled = !!nativeIsCancelled();
    } catch {
      cancelled = false;
    }
    if (cancelled && trackedCalls.size > 0) {
      cancelAll(new DOMException("The call was cancelled or ran past its deadline", "AbortError"));
    }
    return cancelled;
  }

  /**
   * One call's cancellation. Most tools never read their signal, so its AbortController is made
   * on first use of `signal`; a call cancelled before that gets a signal already aborted with
   * the reason it was cancelled with, as if it had been made first.
   */
  class TrackedCall {
    #controller = null;
    #aborted = false;
    #reason = undefined;

    get signal() {
      if (this.#controller === null) {
        this.#controller = new AbortController();
        if (this.#aborted) this.#controller.abort(this.#reason);
      }
      return this.#controller.signal;
    }

    get aborted() {
      return this.#controller === null ? this.#aborted : this.#controller.signal.aborted;
    }

    abort(reason) {
      if (this.#controller !== null) {
        this.#controller.abort(reason);
      } else if (!this.#aborted) {
        this.#aborted = true;
        this.#reason = reason;
      }
    }

    release() {
      trackedCalls.delete(this);
    }
  }

  const cancellation = ObjectFreeze({
    /** A new call's cancellation (`signal`, `aborted`); `release()` stops tracking it. */
    track() {
      const call = new TrackedCall();
      trackedCalls.add(call);
      return call;
    },
    cancelAll,
    checkCancelled,
  });

  shared.provide({ checkCancelled, cancellation });
})(globalThis.__bosunPrelude);
