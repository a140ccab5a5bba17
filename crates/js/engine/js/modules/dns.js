// Bosun JS engine: `node:dns`, the callback form of `lookup` plus `dns.promises`.
//
// `lookup(hostname[, options], callback)` calls back with `(err, address, family)`, or
// `(err, addresses)` with `{all: true}`, after the current job, as Node does. Resolution is the
// host's (see dns_promises.js). Other resolvers are not provided.
import internal from "bosun:internal";
import promises, { lookupSync, setDefaultResultOrder, getDefaultResultOrder } from "node:dns/promises";

const queueMicrotask = internal.web.queueMicrotask;

export function lookup(hostname, options, callback) {
  if (typeof options === "function") {
    callback = options;
    options = undefined;
  }
  if (typeof callback !== "function") {
    const error = new TypeError("The \"callback\" argument must be of type function");
    error.code = "ERR_INVALID_ARG_TYPE";
    throw error;
  }
  let result;
  let failure = null;
  try {
    result = lookupSync(hostname, options);
  } catch (error) {
    failure = error;
  }
  queueMicrotask(() => {
    if (failure) callback(failure);
    else if (Array.isArray(result)) callback(null, result);
    else callback(null, result.address, result.family);
  });
}

export { promises, setDefaultResultOrder, getDefaultResultOrder };

export default { lookup, promises, setDefaultResultOrder, getDefaultResultOrder };
