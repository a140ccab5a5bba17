// Bosun JS engine: `node:child_process`, processes started through the host.
//
// `spawn`, `execFile` and `exec` ask the host to start the program (`__native.spawn`): Bosun
// judges it as `process.spawn` of that program (a person may be asked, naming the plugin and
// the command line), starts it in the OS sandbox with the workspace as its directory, and only
// for a tool of risk `process`; any other refusal reaches the plugin as the child's `error`
// event, as a missing program does in Node. There is no shell: `shell: true` is refused, and
// `exec` splits its command line into words and refuses shell syntax. The synchronous forms and
// `fork` throw: they would stop the engine's event loop.
//
// The child's stdout and stderr arrive as `data` events (Buffers, or strings after
// `setEncoding`), then `end`/`close`; `exit` and `close` carry the exit code or signal. Every
// process a call started is killed when the call ends.
import internal from "bosun:internal";

const { native, io, web } = internal;
const { Buffer, TextDecoder, queueMicrotask, setTimeout, clearTimeout, process } = web;
const ReflectApply = Reflect.apply;
const JSONStringify = JSON.stringify;

/** Node's EventEmitter, as much of it as child processes and their streams use. */
class EventEmitter {
  #listeners = new Map();

  on(name, listener) {
    if (typeof listener !== "function") {
      throw codedError(TypeError, "ERR_INVALID_ARG_TYPE", 'The "listener" argument must be of type function');
    }
    const list = this.#listeners.get(name) ?? [];
    list.push({ listener, once: false });
    this.#listeners.set(name, list);
    return this;
  }

  addListener(name, listener) { return this.on(name, listener); }

  once(name, listener) {
    this.on(name, listener);
    const list = this.#listeners.get(name);
    list[list.length - 1].once = true;
    return this;
  }

  prependListener(name, listener) {
    this.on(name, listener);
    const list = this.#listeners.get(name);
    list.unshift(list.pop());
    return this;
  }

  off(name, listener) {
    const list = this.#listeners.get(name);
    if (list === undefined) return this;
    const index = list.findIndex((entry) => entry.listener === listener);
    if (index >= 0) list.splice(index, 1);
    return this;
  }

  removeListener(name, listener) { return this.off(name, listener); }

  removeAllListeners(name = undefined) {
    if (name === undefined) this.#listeners.clear();
    else this.#listeners.delete(name);
    return this;
  }

  listenerCount(name) { return this.#listeners.get(name)?.length ?? 0; }

  listeners(name) { return (this.#listeners.get(name) ?? []).map((entry) => entry.listener); }

  emit(name, ...args) {
    const list = this.#listeners.get(name);
    if (list === undefined || list.length === 0) {
      if (name === "error") throw args[0];
      return false;
    }
    for (const entry of [...list]) {
      if (entry.once) this.off(name, entry.listener);
      ReflectApply(entry.listener, this, args);
    }
    return true;
  }

  setMaxListeners() { return this; }
}

/** A child's stdout or stderr: flowing unless paused, decoded after `setEncoding`. */
class ChildReadable extends EventEmitter {
  #decoder = null;
  #paused = false;
  #queued = [];
  #ended = false;
  readable = true;
  destroyed = false;

  setEncoding(encoding = "utf8") {
    const label = String(encoding).toLowerCase();
    if (label !== "utf8" && label !== "utf-8") {
      throw codedError(TypeError, "ERR_UNKNOWN_ENCODING", `Unknown encoding: ${encoding}`);
    }
    this.#decoder = new TextDecoder("utf-8");
    return this;
  }

  pause() { this.#paused = true; return this; }

  resume() {
    this.#paused = false;
    while (!this.#paused && this.#queued.length > 0) this.#deliver(this.#queued.shift());
    if (!this.#paused && this.#ended && this.#queued.length === 0) this.#finish();
    return this;
  }

  isPaused() { return this.#paused; }

  destroy() {
    this.destroyed = true;
    this.#queued = [];
    this.#paused = true;
    return this;
  }

  /** From the host: a chunk the child wrote. */
  push(bytes) {
    if (this.destroyed) return;
    const chunk = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (this.#paused) {
      // A paused stream keeps at most 16 MiB; what comes later is dropped, as the host would
      // otherwise be asked to hold an unbounded amount for a plugin that never reads it.
      const held = this.#queued.reduce((sum, c) => sum + c.length, 0);
      if (held + chunk.length <= 16 << 20) this.#queued.push(chunk);
      return;
    }
    this.#deliver(chunk);
  }

  /** From the host: the pipe reached its end. */
  end() {
    this.#ended = true;
    if (!this.#paused) this.#finish();
  }

  #deliver(chunk) {
    if (this.#decoder === null) {
      this.emit("data", chunk);
      return;
    }
    const text = this.#decoder.decode(chunk, { stream: true });
    if (text.length > 0) this.emit("data", text);
  }

  #finish() {
    if (!this.readable) return;
    if (this.#decoder !== null) {
      const rest = this.#decoder.decode();
      if (rest.length > 0) this.emit("data", rest);
    }
    this.readable = false;
    this.emit("end");
    this.emit("close");
  }
}

/** A child's stdin. */
class ChildWritable extends EventEmitter {
  #id;
  writable = true;
  destroyed = false;

  constructor(id) {
    super();
    this.#id = id;
  }

  write(chunk, encoding = undefined, callback = undefined) {
    if (typeof encoding === "function") [callback, encoding] = [encoding, undefined];
    if (!this.writable) {
      const error = codedError(Error, "ERR_STREAM_WRITE_AFTER_END", "write after end");
      queueMicrotask(() => {
        if (callback) callback(error);
        else this.emit("error", error);
      });
      return false;
    }
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, encoding ?? "utf8") : Buffer.from(chunk);
    if (this.#id === null) {
      // The process never started (its `error` event says why): the bytes go nowhere.
      if (callback) queueMicrotask(() => callback(null));
      return true;
    }
    try {
      native.processWrite(this.#id, bytes);
    } catch (error) {
      queueMicrotask(() => {
        if (callback) callback(error);
        else this.emit("error", error);
      });
      return false;
    }
    if (callback) queueMicrotask(() => callback(null));
    return true;
  }

  end(chunk = undefined, encoding = undefined, callback = undefined) {
    if (typeof chunk === "function") [callback, chunk] = [chunk, undefined];
    if (typeof encoding === "function") [callback, encoding] = [encoding, undefined];
    if (chunk !== undefined && chunk !== null && this.writable) this.write(chunk, encoding);
    if (this.writable) {
      this.writable = false;
      if (this.#id !== null) native.processCloseStdin(this.#id);
      queueMicrotask(() => {
        this.emit("finish");
        this.emit("close");
      });
    }
    if (callback) queueMicrotask(() => callback());
    return this;
  }

  destroy() {
    this.destroyed = true;
    return this.end();
  }
}

/** A started process (or one that could not start: its `error` event says why). */
class ChildProcess extends EventEmitter {
  pid = undefined;
  exitCode = null;
  signalCode = null;
  killed = false;
  connected = false;
  spawnfile;
  spawnargs;
  stdin = null;
  stdout = null;
  stderr = null;
  stdio = [null, null, null];
  #id = null;

  kill(signal = "SIGTERM") {
    if (this.#id === null || this.exitCode !== null || this.signalCode !== null) return false;
    const name = typeof signal === "number" ? signalFromNumber(signal) : String(signal);
    native.processKill(this.#id, name);
    this.killed = true;
    return true;
  }

  ref() { return this; }
  unref() { return this; }

  /** Starts the process; called once by `spawn`. */
  static start(file, args, options) {
    const child = new ChildProcess();
    child.spawnfile = file;
    child.spawnargs = [file, ...args];
    const request = {
      program: file,
      args,
      cwd: options.cwd === undefined ? undefined : String(options.cwd),
      env: plainEnv(options.env ?? process.env),
    };
    // As in Node, the streams exist even when the process cannot start: what is written to
    // it then goes nowhere, and the `error` event says why.
    child.stdout = new ChildReadable();
    child.stderr = new ChildReadable();
    let id;
    try {
      id = native.spawn(JSONStringify(request));
    } catch (thrown) {
      const error = spawnError(thrown, file, args);
      child.stdin = new ChildWritable(null);
      child.stdio = [child.stdin, child.stdout, child.stderr];
      queueMicrotask(() => child.emit("error", error));
      return child;
    }
    child.#id = id;
    child.pid = id;
    child.stdin = new ChildWritable(id);
    child.stdio = [child.stdin, child.stdout, child.stderr];
    io.register(id, (event) => {
      if (event.kind === "stdout") child.stdout.push(event.data);
      else if (event.kind === "stderr") child.stderr.push(event.data);
      else if (event.kind === "exit") {
        child.exitCode = event.code ?? null;
        child.signalCode = event.signal ?? null;
        child.stdin.writable = false;
        child.emit("exit", child.exitCode, child.signalCode);
        child.stdout.end();
        child.stderr.end();
        child.emit("close", child.exitCode, child.signalCode);
      }
    });
    queueMicrotask(() => child.emit("spawn"));
    if (options.signal !== undefined && options.signal !== null) {
      const signal = options.signal;
      const abort = () => {
        child.kill(options.killSignal ?? "SIGTERM");
        const error = new web.DOMException("The operation was aborted", "AbortError");
        error.code = "ABORT_ERR";
        child.emit("error", error);
      };
      if (signal.aborted) queueMicrotask(abort);
      else signal.addEventListener("abort", abort, { once: true });
    }
    if (typeof options.timeout === "number" && options.timeout > 0) {
      const timer = setTimeout(() => child.kill(options.killSignal ?? "SIGTERM"), options.timeout);
      child.once("exit", () => clearTimeout(timer));
    }
    return child;
  }
}

function codedError(Kind, code, message) {
  const error = new Kind(message);
  error.code = code;
  return error;
}

function spawnError(thrown, file, args) {
  const code = typeof thrown?.code === "string" ? thrown.code : "EIO";
  const error = new Error(`spawn ${file} ${code}: ${thrown?.message ?? String(thrown)}`);
  error.code = code;
  error.errno = code === "ENOENT" ? -2 : code === "EACCES" ? -13 : -5;
  error.syscall = `spawn ${file}`;
  error.path = file;
  error.spawnargs = args;
  return error;
}

function plainEnv(env) {
  const out = {};
  if (env === null || typeof env !== "object") return out;
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && value !== null) out[String(key)] = String(value);
  }
  return out;
}

function signalFromNumber(number) {
  return { 1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 9: "SIGKILL", 15: "SIGTERM" }[number] ?? "SIGTERM";
}

/** `(file, args?, options?)` with the optional middle argument, as Node reads it. */
function normalise(file, args, options) {
  if (typeof file !== "string" || file.length === 0) {
    throw codedError(TypeError, "ERR_INVALID_ARG_TYPE", 'The "file" argument must be a non-empty string');
  }
  if (!Array.isArray(args)) {
    if (args !== undefined && args !== null && typeof args === "object") options = args;
    args = [];
  }
  options = options ?? {};
  if (options.shell) {
    throw codedError(
      Error,
      "ERR_ACCESS_DENIED",
      "child_process: shell is not available in Bosun's sandbox; pass the program and its arguments without a shell",
    );
  }
  return [file, args.map((a) => String(a)), options];
}

export function spawn(file, args = undefined, options = undefined) {
  const [f, a, o] = normalise(file, args, options);
  return ChildProcess.start(f, a, o);
}

export function execFile(file, args = undefined, options = undefined, callback = undefined) {
  if (typeof args === "function") [callback, args, options] = [args, undefined, undefined];
  else if (typeof options === "function") [callback, options] = [options, undefined];
  const [f, a, o] = normalise(file, args, options);
  const maxBuffer = typeof o.maxBuffer === "number" ? o.maxBuffer : 1024 * 1024;
  const encoding = o.encoding === "buffer" ? null : "utf8";
  const child = ChildProcess.start(f, a, o);
  const out = [];
  const err = [];
  let size = 0;
  let overflow = false;
  const collect = (into) => (chunk) => {
    size += chunk.length;
    if (size > maxBuffer) {
      overflow = true;
      child.kill("SIGTERM");
      return;
    }
    into.push(chunk);
  };
  child.stdout?.on("data", collect(out));
  child.stderr?.on("data", collect(err));
  let done = false;
  const finish = (error) => {
    if (done) return;
    done = true;
    const stdout = encoding === null ? Buffer.concat(out) : Buffer.concat(out).toString("utf8");
    const stderr = encoding === null ? Buffer.concat(err) : Buffer.concat(err).toString("utf8");
    if (error !== null) {
      error.stdout = stdout;
      error.stderr = stderr;
    }
    if (typeof callback === "function") callback(error, stdout, stderr);
  };
  child.once("error", (error) => finish(error));
  child.once("close", (code, signal) => {
    if (overflow) {
      finish(codedError(RangeError, "ERR_CHILD_PROCESS_STDIO_MAXBUFFER", "stdout or stderr maxBuffer length exceeded"));
    } else if (code === 0) {
      finish(null);
    } else {
      const error = new Error(`Command failed: ${[f, ...a].join(" ")}`);
      error.code = code;
      error.signal = signal;
      error.killed = child.killed;
      error.cmd = [f, ...a].join(" ");
      finish(error);
    }
  });
  return child;
}

/** Splits a command line into words: quotes and backslashes as a POSIX shell reads them, and
 * no shell syntax at all (no pipes, redirections, variables or globs). */
function words(command) {
  const out = [];
  let word = null;
  let quote = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === "\\" && i + 1 < command.length && '"\\$`'.includes(command[i + 1])) word += command[++i];
      else if (c === "$" || c === "`") throw shellSyntax(command);
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= "";
    } else if (c === "\\" && i + 1 < command.length) {
      word = (word ?? "") + command[++i];
    } else if (/\s/.test(c)) {
      if (word !== null) out.push(word);
      word = null;
    } else if ("|&;<>()$`*?[]{}~".includes(c)) {
      throw shellSyntax(command);
    } else {
      word = (word ?? "") + c;
    }
  }
  if (quote !== null) throw shellSyntax(command);
  if (word !== null) out.push(word);
  return out;
}

function shellSyntax(command) {
  return codedError(
    Error,
    "ERR_ACCESS_DENIED",
    `exec: Bosun runs no shell, and ${JSONStringify(command)} needs one; use execFile or spawn with the program and its arguments`,
  );
}

export function exec(command, options = undefined, callback = undefined) {
  if (typeof options === "function") [callback, options] = [options, undefined];
  let parts;
  try {
    parts = words(String(command));
  } catch (error) {
    queueMicrotask(() => callback?.(error, "", ""));
    const child = new ChildProcess();
    queueMicrotask(() => { if (!callback) child.emit("error", error); });
    return child;
  }
  if (parts.length === 0) throw codedError(TypeError, "ERR_INVALID_ARG_VALUE", "exec: the command is empty");
  const { shell: _ignored, ...rest } = options ?? {};
  return execFile(parts[0], parts.slice(1), rest, callback);
}

function refuseSync(name) {
  return function refused() {
    throw codedError(
      Error,
      "ERR_ACCESS_DENIED",
      `child_process.${name} is not available in Bosun's sandbox: a synchronous child would stop the plugin's event loop; use the asynchronous form`,
    );
  };
}

export const spawnSync = refuseSync("spawnSync");
export const execSync = refuseSync("execSync");
export const execFileSync = refuseSync("execFileSync");
export function fork() {
  throw codedError(Error, "ERR_ACCESS_DENIED", "child_process.fork is not available in Bosun's sandbox: there is no Node to fork");
}
export { ChildProcess, EventEmitter };

export default { spawn, spawnSync, exec, execSync, execFile, execFileSync, fork, ChildProcess };
