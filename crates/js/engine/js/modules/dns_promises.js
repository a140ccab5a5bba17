// Bosun JS engine: `node:dns/promises`, host-mediated `lookup`.
//
// `lookup(hostname, options?)` resolves through `__native.lookup`, i.e. on the host and under
// the same rules as the plugin's outgoing HTTP (a host that is not granted is refused). Options
// as Node's: a family number, or `{family, all, verbatim, order}`. An IP literal is returned as
// it is without asking the host. Errors carry Node's shape: `code` (`ENOTFOUND`, or `EREFUSED`
// when the host refused to resolve the name), `syscall: "getaddrinfo"`, `hostname`.
//
// Other resolvers (`resolve4`, `resolveMx`, `Resolver`, …) are not provided.
import internal from "bosun:internal";
import { isIP } from "node:net";

const nativeLookup = internal.native.lookup;
let defaultOrder = "verbatim";

function familyOf(value) {
  if (value === undefined || value === null || value === 0) return 0;
  if (value === 4 || value === "IPv4") return 4;
  if (value === 6 || value === "IPv6") return 6;
  const error = new TypeError(`The argument 'family' must be one of: 0, 4, 6. Received ${String(value)}`);
  error.code = "ERR_INVALID_ARG_VALUE";
  throw error;
}

function lookupError(code, hostname, detail) {
  const error = new Error(`getaddrinfo ${code} ${hostname}${detail ? ` (${detail})` : ""}`);
  error.code = code;
  error.errno = code === "ENOTFOUND" ? -3008 : -3001;
  error.syscall = "getaddrinfo";
  error.hostname = hostname;
  return error;
}

/** The synchronous core of lookup, shared with node:dns. */
export function lookupSync(hostname, options) {
  if (typeof hostname !== "string") {
    const error = new TypeError(`The "hostname" argument must be of type string. Received ${typeof hostname}`);
    error.code = "ERR_INVALID_ARG_TYPE";
    throw error;
  }
  const settings = typeof options === "number" ? { family: options } : options ?? {};
  const family = familyOf(settings.family);
  const all = !!settings.all;
  let order = settings.order ?? (settings.verbatim === false ? "ipv4first" : defaultOrder);
  let addresses;
  const literal = isIP(hostname);
  if (literal) {
    addresses = [{ address: hostname, family: literal }];
  } else if (hostname === "") {
    throw lookupError("ENOTFOUND", hostname);
  } else {
    let found;
    try {
      found = nativeLookup(hostname);
    } catch (error) {
      const code = error && error.code === "ENOTFOUND" ? "ENOTFOUND" : "EREFUSED";
      throw lookupError(code, hostname, error && typeof error.message === "string" ? error.message : "");
    }
    addresses = [];
    for (const address of found) {
      const text = String(address);
      const kind = isIP(text);
      if (kind) addresses.push({ address: text, family: kind });
    }
  }
  if (family) addresses = addresses.filter((entry) => entry.family === family);
  if (order === "ipv4first") addresses.sort((a, b) => a.family - b.family);
  else if (order === "ipv6first") addresses.sort((a, b) => b.family - a.family);
  if (addresses.length === 0) throw lookupError("ENOTFOUND", hostname);
  return all ? addresses : addresses[0];
}

export async function lookup(hostname, options = undefined) {
  return lookupSync(hostname, options);
}

export function setDefaultResultOrder(order) {
  if (!["verbatim", "ipv4first", "ipv6first"].includes(order)) {
    throw new TypeError(`dns.setDefaultResultOrder: unknown order ${String(order)}`);
  }
  defaultOrder = order;
}

export function getDefaultResultOrder() {
  return defaultOrder;
}

export default { lookup, setDefaultResultOrder, getDefaultResultOrder };
