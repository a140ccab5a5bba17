// Bosun JS engine prelude: cancellation of the current call. The runtime tracks each call's
// controller; the host is asked before every fetch hop and timer turn, and the core may call
// __engine.cancel(). Installs no global.
"use strict";

(function bosunPreludeCancellation(shared) {
  const { ObjectFreeze, nativeIsCancelled, DOMException, abortError, AbortController } = shared;

  const trackedControllers = new Set();

  function cancelAll(reason) {
    for (const controller of [...trackedControllers]) {
      trackedControllers.delete(controller);
      controller.abort(reason === undefined ? abortError() : reason);
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
    if (cancelled && trackedControllers.size > 0) {
      cancelAll(new DOMException("The call was cancelled or ran past its deadline", "AbortError"));
    }
    return cancelled;
  }

  const cancellation = ObjectFreeze({
    /** A new AbortController for one call; `release()` stops tracking it. */
    track() {
      const controller = new AbortController();
      trackedControllers.add(controller);
      return ObjectFreeze({ controller, release: () => trackedControllers.delete(controller) });
    },
    cancelAll,
    checkCancelled,
  });

  shared.provide({ checkCancelled, cancellation });
})(globalThis.__bosunPrelude);
