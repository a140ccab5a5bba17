// Bosun JS engine prelude: the timer functions and queueMicrotask. One timer table, which the
// core's event loop drives through nextTimer()/runTimers(): nothing else runs a timer.
"use strict";

(function bosunPreludeTimers(shared) {
  const {
    ReflectApply, DateNow, MathMax, SymbolToPrimitive, resolvedPromise, then, freezeClass, tag,
    reportError,
  } = shared;

  /** id → `{id, due, delay, repeat, callback, args, ref}`. */
  const timerTable = new Map();
  let lastTimerId = 0;
  const TIMEOUT_MAX = 2147483647;

  function normaliseDelay(delay) {
    let ms = Number(delay);
    if (!(ms >= 0)) ms = 0; // NaN, negatives
    if (ms > TIMEOUT_MAX) ms = 1; // as Node: an overflowing delay fires at once
    return ms;
  }

  /** Node-style timer handle: clearTimeout accepts it or its numeric id (`+handle`). */
  class Timeout {
    #id;
    constructor(id) { this.#id = id; }
    ref() { const t = timerTable.get(this.#id); if (t) t.ref = true; return this; }
    unref() { const t = timerTable.get(this.#id); if (t) t.ref = false; return this; }
    hasRef() { const t = timerTable.get(this.#id); return t ? t.ref : false; }
    refresh() { const t = timerTable.get(this.#id); if (t) t.due = DateNow() + t.delay; return this; }
    close() { timerTable.delete(this.#id); return this; }
    [SymbolToPrimitive]() { return this.#id; }
  }
  tag(Timeout, "Timeout");
  freezeClass(Timeout);

  function addTimer(callback, delay, args, repeat, ref = true) {
    if (typeof callback !== "function") {
      throw new TypeError("The \"callback\" argument must be a function");
    }
    const ms = normaliseDelay(delay);
    const id = ++lastTimerId;
    timerTable.set(id, { id, due: DateNow() + ms, delay: ms, repeat, callback, args, ref });
    return new Timeout(id);
  }

  function clearTimer(handle) {
    if (handle === null || handle === undefined) return;
    let id;
    try {
      id = Number(handle);
    } catch {
      return;
    }
    timerTable.delete(id);
  }

  function setTimeout(callback, delay = 0, ...args) {
    return addTimer(callback, delay, args, false);
  }
  function setInterval(callback, delay = 0, ...args) {
    return addTimer(callback, delay, args, true);
  }
  function setImmediate(callback, ...args) {
    return addTimer(callback, 0, args, false);
  }
  function clearTimeout(handle) { clearTimer(handle); }
  function clearInterval(handle) { clearTimer(handle); }
  function clearImmediate(handle) { clearTimer(handle); }

  function queueMicrotask(callback) {
    if (typeof callback !== "function") {
      throw new TypeError("queueMicrotask: the callback must be a function");
    }
    then(resolvedPromise(undefined), () => {
      try {
        callback();
      } catch (error) {
        reportError(error);
      }
    });
  }

  /**
   * Milliseconds until the earliest timer is due (0 if one is), or undefined when no timer
   * keeps the loop alive. Unref'd timers (AbortSignal.timeout, `timer.unref()`) fire while
   * another timer or a pending promise keeps the loop going, but never keep it alive alone,
   * as in Node.
   */
  function nextTimer() {
    let earliest = Infinity;
    let anyRef = false;
    for (const timer of timerTable.values()) {
      if (timer.ref) anyRef = true;
      if (timer.due < earliest) earliest = timer.due;
    }
    if (!anyRef) return undefined;
    return MathMax(0, earliest - DateNow());
  }

  /** Runs every timer that is due now, in due order. Timers they add run on a later turn. */
  function runTimers() {
    // cancellation.js comes later (it needs AbortController, which needs the timers).
    shared.checkCancelled();
    const now = DateNow();
    const due = [];
    for (const timer of timerTable.values()) if (timer.due <= now) due.push(timer);
    due.sort((a, b) => a.due - b.due || a.id - b.id);
    for (const timer of due) {
      if (timerTable.get(timer.id) !== timer) continue; // cleared by an earlier callback
      if (timer.repeat) timer.due = now + MathMax(1, timer.delay);
      else timerTable.delete(timer.id);
      try {
        ReflectApply(timer.callback, undefined, timer.args);
      } catch (error) {
        reportError(error);
      }
    }
  }

  shared.provide({
    addTimer, setTimeout, setInterval, setImmediate, clearTimeout, clearInterval, clearImmediate,
    queueMicrotask, nextTimer, runTimers,
  });
})(globalThis.__bosunPrelude);
