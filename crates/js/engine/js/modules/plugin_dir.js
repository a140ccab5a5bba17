// Bosun JS engine: `bosun:plugin-dir`, the plugin's own directory as `node:fs` reads it.
//
// The host hands over, in the activation request, the bytes of every file of the plugin's
// directory: exactly the snapshot the trust review hashed (a snapshot holds no symbolic link, so
// none can point out of it). Reading is served from those bytes; nothing here reaches any file
// system, so no path a plugin writes can name a file outside its directory, and a file changed
// after the review is not what the plugin reads. The directory is read-only.
//
// The plugin sees its directory at `/plugin` (`import.meta.url` is `file:///plugin/<file>`). A
// relative path resolves beneath it. A path that leaves it — `..` above it, an absolute path
// elsewhere, a `file:` URL of another host — is refused with EACCES, never clamped.
//
// Only the engine's own modules can import this one (the core's loader refuses `bosun:` names
// to plugin files); `setFiles` takes effect once per instance.
import internal from "bosun:internal";

export const ROOT = "/plugin";

const { base64Decode, utf8Decode } = internal.native;
const { URL } = internal.web;

/** path → base64 text, or the decoded bytes once read. */
let files = null;
/** directory path ("" is the root) → sorted entry names. */
let directories = null;

/** Takes the request's `directory` (plugin-relative path → base64). */
export function setFiles(map) {
  if (files !== null) throw new Error("the plugin's directory is already set");
  files = new Map();
  directories = new Map([["", new Set()]]);
  for (const [path, base64] of Object.entries(map ?? {})) {
    if (typeof path !== "string" || typeof base64 !== "string") continue;
    files.set(path, base64);
    const parts = path.split("/");
    for (let i = 0; i < parts.length; i += 1) {
      const parent = parts.slice(0, i).join("/");
      if (!directories.has(parent)) directories.set(parent, new Set());
      directories.get(parent).add(parts[i]);
    }
  }
  for (const [key, names] of directories) directories.set(key, [...names].sort());
}

/** A Node-style file system error. */
export function fsError(code, syscall, shown, detail) {
  const what = {
    ENOENT: "no such file or directory",
    EACCES: "permission denied",
    EROFS: "read-only file system",
    EISDIR: "illegal operation on a directory",
    ENOTDIR: "not a directory",
    EINVAL: "invalid argument",
  }[code] ?? code;
  const error = new Error(`${code}: ${what}, ${syscall}${shown === undefined ? "" : ` '${shown}'`}${detail ? `: ${detail}` : ""}`);
  error.code = code;
  error.errno = { ENOENT: -2, EACCES: -13, EROFS: -30, EISDIR: -21, ENOTDIR: -20, EINVAL: -22 }[code];
  error.syscall = syscall;
  if (shown !== undefined) error.path = shown;
  return error;
}

const OUTSIDE = `Bosun lets a plugin read only its own directory (${ROOT})`;

/** The path a plugin passed, as text: a string, a `file:` URL (object or text) or bytes. */
function pathText(input, syscall) {
  if (input instanceof URL || (typeof input === "object" && input !== null && typeof input.href === "string" && typeof input.protocol === "string")) {
    return fileUrlPath(String(input.href), syscall);
  }
  if (input instanceof Uint8Array) return utf8Decode(input, false);
  if (typeof input !== "string") {
    const error = new TypeError(`The "path" argument must be of type string or an instance of Buffer or URL. Received ${input === null ? "null" : typeof input}`);
    error.code = "ERR_INVALID_ARG_TYPE";
    throw error;
  }
  if (input.startsWith("file:")) return fileUrlPath(input, syscall);
  return input;
}

/** The path of a `file:` URL (Node's `fileURLToPath` rules): local host only, no encoded `/`. */
export function fileUrlPath(href, syscall = "open") {
  let url;
  try {
    url = new URL(href);
  } catch {
    throw fsError("EINVAL", syscall, href, "not a valid URL");
  }
  if (url.protocol !== "file:") {
    const error = new TypeError("The URL must be of scheme file");
    error.code = "ERR_INVALID_URL_SCHEME";
    throw error;
  }
  if (url.hostname !== "" && url.hostname !== "localhost") {
    const error = new TypeError(`File URL host must be "localhost" or empty on this platform: ${url.hostname}`);
    error.code = "ERR_INVALID_FILE_URL_HOST";
    throw error;
  }
  if (/%2f/i.test(url.pathname)) {
    const error = new TypeError("File URL path must not include encoded / characters");
    error.code = "ERR_INVALID_FILE_URL_PATH";
    throw error;
  }
  return decodeURIComponent(url.pathname);
}

/**
 * The plugin-relative path ("" for the directory itself) of what a plugin asked for, or a
 * refusal: relative paths resolve beneath the directory; `..` above it and absolute paths
 * elsewhere are EACCES.
 */
export function resolve(input, syscall = "open") {
  const text = pathText(input, syscall);
  if (text.includes("\0")) {
    const error = new TypeError("The argument 'path' must be a string, Uint8Array, or URL without null bytes.");
    error.code = "ERR_INVALID_ARG_VALUE";
    throw error;
  }
  const absolute = text.startsWith("/");
  const parts = [];
  for (const part of (absolute ? text : `${ROOT}/${text}`).split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length === 0) throw fsError("EACCES", syscall, text, OUTSIDE);
      parts.pop();
    } else {
      parts.push(part);
    }
  }
  if (parts[0] !== ROOT.slice(1)) throw fsError("EACCES", syscall, text, OUTSIDE);
  return parts.slice(1).join("/");
}

/** `file`, `directory` or `undefined`. */
export function kindOf(relative) {
  if (files === null) return undefined;
  if (files.has(relative)) return "file";
  if (directories.has(relative)) return "directory";
  return undefined;
}

/** A copy of a file's bytes. */
export function bytesOf(relative) {
  let value = files.get(relative);
  if (typeof value === "string") {
    value = base64Decode(value);
    files.set(relative, value);
  }
  return new Uint8Array(value);
}

/** A file's size in bytes without decoding it more than once. */
export function sizeOf(relative) {
  let value = files.get(relative);
  if (typeof value === "string") {
    value = base64Decode(value);
    files.set(relative, value);
  }
  return value.length;
}

/** A directory's entry names, sorted. */
export function namesIn(relative) {
  return [...(directories.get(relative) ?? [])];
}

/** The path as the plugin sees it. */
export function shownPath(relative) {
  return relative === "" ? ROOT : `${ROOT}/${relative}`;
}

export default { ROOT, setFiles, resolve, kindOf, bytesOf, sizeOf, namesIn, shownPath, fsError, fileUrlPath };
