// Bosun JS engine: `node:fs`, read-only and limited to the plugin's own directory.
//
// Reads are served by `bosun:plugin-dir` from the bytes the trust review hashed (see there for
// how paths resolve and what is refused). Everything that would write, create, remove, open a
// descriptor or watch throws EROFS (or says it is not available), so a plugin learns at once
// that its directory is read-only in Bosun.
import internal from "bosun:internal";
import dir from "bosun:plugin-dir";

const { Buffer } = internal.web;

export const constants = Object.freeze({ F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1, O_RDONLY: 0 });
export const F_OK = 0;
export const R_OK = 4;
export const W_OK = 2;
export const X_OK = 1;

function encodingOf(options) {
  if (typeof options === "string") return options;
  if (options !== null && typeof options === "object" && options.encoding != null) return options.encoding;
  return undefined;
}

function existing(path, syscall) {
  const relative = dir.resolve(path, syscall);
  const kind = dir.kindOf(relative);
  if (kind === undefined) throw dir.fsError("ENOENT", syscall, String(path));
  return { relative, kind };
}

export function readFileSync(path, options) {
  const { relative, kind } = existing(path, "open");
  if (kind === "directory") throw dir.fsError("EISDIR", "read", undefined);
  const bytes = dir.bytesOf(relative);
  const encoding = encodingOf(options);
  const buffer = Buffer.from(bytes);
  return encoding === undefined ? buffer : buffer.toString(encoding);
}

export function existsSync(path) {
  try {
    return dir.kindOf(dir.resolve(path, "access")) !== undefined;
  } catch {
    return false;
  }
}

/** What `Dirent` and `Stats` answer about kind: a file or a directory, never anything else. */
class EntryKind {
  #kind;
  constructor(kind) { this.#kind = kind; }
  isFile() { return this.#kind === "file"; }
  isDirectory() { return this.#kind === "directory"; }
  isSymbolicLink() { return false; }
  isBlockDevice() { return false; }
  isCharacterDevice() { return false; }
  isFIFO() { return false; }
  isSocket() { return false; }
}

class Dirent extends EntryKind {
  constructor(name, parentPath, kind) {
    super(kind);
    this.name = name;
    this.parentPath = parentPath;
    this.path = parentPath;
  }
}

export function readdirSync(path, options) {
  const { relative, kind } = existing(path, "scandir");
  if (kind !== "directory") throw dir.fsError("ENOTDIR", "scandir", String(path));
  const withTypes = options !== null && typeof options === "object" && options.withFileTypes === true;
  const recursive = options !== null && typeof options === "object" && options.recursive === true;
  const out = [];
  const walk = (at, prefix) => {
    for (const name of dir.namesIn(at)) {
      const child = at === "" ? name : `${at}/${name}`;
      const childKind = dir.kindOf(child);
      out.push(withTypes ? new Dirent(name, dir.shownPath(at), childKind) : prefix + name);
      if (recursive && childKind === "directory") walk(child, `${prefix}${name}/`);
    }
  };
  walk(relative, "");
  return out;
}

class Stats extends EntryKind {
  constructor(kind, size) {
    super(kind);
    const epoch = new Date(0);
    Object.assign(this, {
      dev: 0, ino: 0, mode: kind === "directory" ? 0o40555 : 0o100444, nlink: 1, uid: 0, gid: 0,
      rdev: 0, size, blksize: 4096, blocks: Math.ceil(size / 512), atimeMs: 0, mtimeMs: 0,
      ctimeMs: 0, birthtimeMs: 0, atime: epoch, mtime: epoch, ctime: epoch, birthtime: epoch,
    });
  }
}

export function statSync(path, options) {
  let found;
  try {
    found = existing(path, "stat");
  } catch (error) {
    if (error?.code === "ENOENT" && options?.throwIfNoEntry === false) return undefined;
    throw error;
  }
  return new Stats(found.kind, found.kind === "file" ? dir.sizeOf(found.relative) : 4096);
}

export const lstatSync = statSync;

export function accessSync(path, mode = F_OK) {
  existing(path, "access");
  if ((Number(mode) & W_OK) !== 0) {
    throw dir.fsError("EROFS", "access", String(path), "a plugin's directory is read-only in Bosun");
  }
}

export function realpathSync(path) {
  const { relative } = existing(path, "realpath");
  return dir.shownPath(relative);
}
realpathSync.native = realpathSync;

function readOnly(name) {
  return function refused(path) {
    throw dir.fsError("EROFS", name, typeof path === "string" ? path : undefined,
      `fs.${name} is refused: a plugin's directory is read-only in Bosun and it has no other file system; keep state in memory or in the plugin's config`);
  };
}

function unavailable(name) {
  return function refused() {
    const error = new Error(`fs.${name} is not available in Bosun's engine: a plugin reads its own files whole with readFile or readFileSync`);
    error.code = "ERR_METHOD_NOT_IMPLEMENTED";
    throw error;
  };
}

const WRITES = [
  "writeFile", "appendFile", "mkdir", "mkdtemp", "rm", "rmdir", "unlink", "rename", "copyFile",
  "cp", "symlink", "link", "chmod", "lchmod", "chown", "lchown", "truncate", "utimes", "lutimes",
];
const writesSync = Object.fromEntries(WRITES.map((n) => [`${n}Sync`, readOnly(n)]));
const writesCallback = Object.fromEntries(WRITES.map((n) => [n, readOnly(n)]));

export const writeFileSync = writesSync.writeFileSync;
export const appendFileSync = writesSync.appendFileSync;
export const mkdirSync = writesSync.mkdirSync;
export const mkdtempSync = writesSync.mkdtempSync;
export const rmSync = writesSync.rmSync;
export const rmdirSync = writesSync.rmdirSync;
export const unlinkSync = writesSync.unlinkSync;
export const renameSync = writesSync.renameSync;
export const copyFileSync = writesSync.copyFileSync;
export const cpSync = writesSync.cpSync;
export const symlinkSync = writesSync.symlinkSync;
export const linkSync = writesSync.linkSync;
export const chmodSync = writesSync.chmodSync;
export const chownSync = writesSync.chownSync;
export const truncateSync = writesSync.truncateSync;
export const utimesSync = writesSync.utimesSync;
export const createWriteStream = readOnly("createWriteStream");
export const openSync = unavailable("openSync");
export const createReadStream = unavailable("createReadStream");
export const watch = unavailable("watch");
export const watchFile = unavailable("watchFile");

/** Node's callback form of a synchronous function: the result or error on a later turn. */
function callbackOf(sync) {
  return function callbackForm(...args) {
    const callback = args.pop();
    if (typeof callback !== "function") {
      const error = new TypeError('The "cb" argument must be of type function');
      error.code = "ERR_INVALID_ARG_TYPE";
      throw error;
    }
    let result;
    let failure = null;
    try {
      result = sync(...args);
    } catch (error) {
      failure = error;
    }
    queueMicrotask(() => (failure === null ? callback(null, result) : callback(failure)));
  };
}

export const readFile = callbackOf(readFileSync);
export const readdir = callbackOf(readdirSync);
export const stat = callbackOf(statSync);
export const lstat = callbackOf(lstatSync);
export const access = callbackOf(accessSync);
export const realpath = callbackOf(realpathSync);
export function exists(path, callback) {
  const found = existsSync(path);
  queueMicrotask(() => callback(found));
}
export const writeFile = callbackOf(writesCallback.writeFile);
export const appendFile = callbackOf(writesCallback.appendFile);
export const mkdir = callbackOf(writesCallback.mkdir);
export const rm = callbackOf(writesCallback.rm);
export const unlink = callbackOf(writesCallback.unlink);
export const rename = callbackOf(writesCallback.rename);
export const copyFile = callbackOf(writesCallback.copyFile);
export const open = callbackOf(openSync);

/** The promise forms (`node:fs/promises`), built from the same functions. */
function promiseOf(sync) {
  return async function promiseForm(...args) {
    return sync(...args);
  };
}

export const promises = Object.freeze({
  constants,
  readFile: promiseOf(readFileSync),
  readdir: promiseOf(readdirSync),
  stat: promiseOf(statSync),
  lstat: promiseOf(lstatSync),
  access: promiseOf(accessSync),
  realpath: promiseOf(realpathSync),
  open: promiseOf(openSync),
  opendir: promiseOf(unavailable("opendir")),
  watch: promiseOf(unavailable("watch")),
  ...Object.fromEntries(WRITES.map((n) => [n, promiseOf(writesCallback[n])])),
});

export { Dirent, Stats };

export default {
  constants, F_OK, R_OK, W_OK, X_OK, Dirent, Stats, promises,
  readFileSync, existsSync, readdirSync, statSync, lstatSync, accessSync, realpathSync,
  readFile, readdir, stat, lstat, access, realpath, exists, open, openSync,
  createReadStream, createWriteStream, watch, watchFile,
  ...writesSync,
  writeFile, appendFile, mkdir, rm, unlink, rename, copyFile,
};
