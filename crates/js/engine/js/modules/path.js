// Bosun JS engine: `node:path`, Node's POSIX path functions (pure string work: no file system).
// `process.cwd()` is `/workspace`, so `resolve` of a relative path starts there, as Node's does;
// a plugin's own directory is `/plugin` (see modules/plugin_dir.js).

export const sep = "/";
export const delimiter = ":";

function normalizeParts(path, absolute) {
  const out = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!absolute) out.push("..");
    } else {
      out.push(part);
    }
  }
  return out;
}

function check(value) {
  if (typeof value !== "string") {
    const error = new TypeError(`The "path" argument must be of type string. Received ${value === null ? "null" : typeof value}`);
    error.code = "ERR_INVALID_ARG_TYPE";
    throw error;
  }
  return value;
}

export function isAbsolute(path) {
  return check(path).startsWith("/");
}

export function normalize(path) {
  check(path);
  if (path === "") return ".";
  const absolute = path.startsWith("/");
  const trailing = path.endsWith("/");
  let out = normalizeParts(path, absolute).join("/");
  if (out === "" && !absolute) out = ".";
  if (out !== "" && trailing) out += "/";
  return absolute ? `/${out}` : out;
}

export function join(...parts) {
  const joined = parts.map(check).filter((p) => p !== "").join("/");
  return joined === "" ? "." : normalize(joined);
}

export function resolve(...parts) {
  let resolved = "";
  for (let i = parts.length - 1; i >= 0 && !resolved.startsWith("/"); i -= 1) {
    const part = check(parts[i]);
    if (part !== "") resolved = resolved === "" ? part : `${part}/${resolved}`;
  }
  if (!resolved.startsWith("/")) resolved = resolved === "" ? "/workspace" : `/workspace/${resolved}`;
  return `/${normalizeParts(resolved, true).join("/")}`;
}

export function relative(from, to) {
  const a = resolve(from).split("/").filter(Boolean);
  const b = resolve(to).split("/").filter(Boolean);
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  return [...a.slice(i).map(() => ".."), ...b.slice(i)].join("/");
}

export function dirname(path) {
  check(path);
  if (path === "") return ".";
  const trimmed = path.length > 1 ? path.replace(/\/+$/, "") : path;
  const at = trimmed.lastIndexOf("/");
  if (at === -1) return ".";
  if (at === 0) return "/";
  return trimmed.slice(0, at).replace(/\/+$/, "") || "/";
}

export function basename(path, suffix) {
  check(path);
  const trimmed = path.replace(/\/+$/, "");
  let base = trimmed.slice(trimmed.lastIndexOf("/") + 1);
  if (typeof suffix === "string" && suffix !== base && base.endsWith(suffix)) base = base.slice(0, -suffix.length);
  return base;
}

export function extname(path) {
  const base = basename(path);
  const at = base.lastIndexOf(".");
  return at <= 0 ? "" : base.slice(at);
}

export function parse(path) {
  check(path);
  const root = path.startsWith("/") ? "/" : "";
  const base = basename(path);
  const ext = extname(path);
  let dir = dirname(path);
  if (dir === "." && !path.includes("/")) dir = "";
  return { root, dir, base, ext, name: ext === "" ? base : base.slice(0, -ext.length) };
}

export function format(object) {
  const dir = object.dir || object.root || "";
  const base = object.base || `${object.name || ""}${object.ext || ""}`;
  if (dir === "") return base;
  return dir === object.root ? `${dir}${base}` : `${dir}/${base}`;
}

export function toNamespacedPath(path) {
  return path;
}

const path = {
  sep, delimiter, isAbsolute, normalize, join, resolve, relative, dirname, basename, extname,
  parse, format, toNamespacedPath,
};
path.posix = path;
export const posix = path;
export default path;
