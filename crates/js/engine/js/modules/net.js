// Bosun JS engine: `node:net`, the part of it that needs no socket.
//
// `isIP`, `isIPv4` and `isIPv6` behave as Node's (strict dotted-decimal IPv4 without leading
// zeros; IPv6 with `::` compression, an embedded IPv4 tail and an optional `%zone`). Plugins
// have no sockets in Bosun's sandbox: every socket function throws a clear error; use `fetch`,
// which goes through the host's guard.

const V4_PART = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]\d|\d)$/;

export function isIPv4(input) {
  const text = String(input);
  const parts = text.split(".");
  return parts.length === 4 && parts.every((part) => V4_PART.test(part));
}

export function isIPv6(input) {
  let text = String(input);
  const zone = text.indexOf("%");
  if (zone >= 0) {
    if (!/^[0-9a-zA-Z\-.:]+$/.test(text.slice(zone + 1))) return false;
    text = text.slice(0, zone);
  }
  if (text.length === 0) return false;
  const halves = text.split("::");
  if (halves.length > 2) return false;
  const groupsOf = (half) => (half === "" ? [] : half.split(":"));
  const head = groupsOf(halves[0]);
  const tail = halves.length === 2 ? groupsOf(halves[1]) : [];
  const groups = [...head, ...tail];
  let count = 0;
  for (let i = 0; i < groups.length; i++) {
    const group = groups[i];
    const last = i === groups.length - 1;
    if (last && group.includes(".")) {
      if (!isIPv4(group)) return false;
      count += 2;
    } else if (/^[0-9a-fA-F]{1,4}$/.test(group)) {
      count += 1;
    } else {
      return false;
    }
  }
  return halves.length === 2 ? count <= 7 : count === 8;
}

export function isIP(input) {
  if (isIPv4(input)) return 4;
  if (isIPv6(input)) return 6;
  return 0;
}

function noSockets(name) {
  return function refused() {
    const error = new Error(
      `node:net ${name} is not available in Bosun's sandbox: plugins cannot open sockets; use fetch, which the host checks against the plugin's grants`,
    );
    error.code = "ERR_ACCESS_DENIED";
    throw error;
  };
}

export const connect = noSockets("connect");
export const createConnection = noSockets("createConnection");
export const createServer = noSockets("createServer");
export const Socket = noSockets("Socket");
export const Server = noSockets("Server");

export default { isIP, isIPv4, isIPv6, connect, createConnection, createServer, Socket, Server };
