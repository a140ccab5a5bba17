// Bosun JS engine: `node:timers/promises`: `setTimeout(delay, value, {signal})`,
// `setImmediate(value, {signal})` and `scheduler.wait(delay, {signal})`, on the prelude's
// timer table. An aborted signal rejects with an AbortError DOMException (`code: "ABORT_ERR"`
// as in Node). `setInterval` (an async iterator) is not provided.
import internal from "bosun:internal";

const { setTimeout: addTimeout, clearTimeout: removeTimeout } = internal.timers;
const { DOMException } = internal.web;

function abortError(signal) {
  const error = new DOMException("The operation was aborted", { name: "AbortError", cause: signal.reason });
  Object.defineProperty(error, "code", { value: "ABORT_ERR", configurable: true, writable: true });
  return error;
}

function delayed(delay, value, options) {
  const signal = options?.signal;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const onAbort = () => {
      removeTimeout(timer);
      reject(abortError(signal));
    };
    const timer = addTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(value);
    }, delay);
    if (options?.ref === false) timer.unref();
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export function setTimeout(delay = 1, value = undefined, options = undefined) {
  return delayed(delay, value, options);
}

export function setImmediate(value = undefined, options = undefined) {
  return delayed(0, value, options);
}

export const scheduler = Object.freeze({
  wait: (delay, options = undefined) => delayed(delay, undefined, options),
  yield: () => delayed(0, undefined, undefined),
});

export default { setTimeout, setImmediate, scheduler };
