// Bosun JS engine prelude: `Buffer`, Node's basics as a Uint8Array subclass (no numeric
// read/write methods, no UTF-16; README.md lists what is not provided).
"use strict";

(function bosunPreludeBuffer(shared) {
  const {
    ObjectDefineProperty, ArrayIsArray, MathMin, MathMax, MathFloor, SymbolToPrimitive, U8,
    ArrayBufferCtor, ArrayBufferIsView, asBytes, utf8Encode, utf8Decode, utf8ByteLength,
    latin1Decode, latin1Encode, hexEncode, hexDecode, base64Encode, base64DecodeLenient,
  } = shared;

  const ENCODINGS = ["utf8", "utf-8", "hex", "base64", "base64url", "latin1", "binary", "ascii"];

  function normaliseEncoding(encoding) {
    const name = encoding === undefined || encoding === null ? "utf8" : String(encoding).toLowerCase();
    if (!ENCODINGS.includes(name)) {
      const error = new TypeError(`Unknown encoding: ${encoding}`);
      error.code = "ERR_UNKNOWN_ENCODING";
      throw error;
    }
    if (name === "utf-8") return "utf8";
    if (name === "binary") return "latin1";
    return name;
  }

  function encodeString(text, encoding) {
    switch (normaliseEncoding(encoding)) {
      case "utf8": return utf8Encode(text);
      case "hex": return hexDecode(text);
      case "base64":
      case "base64url": return base64DecodeLenient(text);
      case "latin1": return latin1Encode(text);
      case "ascii": return latin1Encode(text).map((b) => b & 0x7f);
      default: throw new TypeError(`Unknown encoding: ${encoding}`);
    }
  }

  function decodeBytes(bytes, encoding) {
    switch (normaliseEncoding(encoding)) {
      case "utf8": return utf8Decode(bytes, false);
      case "hex": return hexEncode(bytes);
      case "base64": return base64Encode(bytes);
      case "base64url": return base64Encode(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      case "latin1": return latin1Decode(bytes);
      case "ascii": return latin1Decode(bytes.map((b) => b & 0x7f));
      default: throw new TypeError(`Unknown encoding: ${encoding}`);
    }
  }

  function isBuffer(value) {
    return value instanceof Buffer;
  }

  class Buffer extends U8 {
    /**
     * Typed-array construction (length; buffer, offset, length; array-like) as Uint8Array does,
     * which is also what `subarray`, `map` and friends use; `new Buffer(string, encoding)` (old
     * Node) behaves like `Buffer.from`.
     */
    constructor(arg, encodingOrOffset, length) {
      if (typeof arg === "string") {
        const bytes = encodeString(arg, encodingOrOffset);
        super(bytes.length);
        this.set(bytes);
        return;
      }
      if (length !== undefined) super(arg, encodingOrOffset, length);
      else if (encodingOrOffset !== undefined) super(arg, encodingOrOffset);
      else super(arg);
    }

    static from(value, encodingOrOffset = undefined, length = undefined) {
      if (typeof value === "string") return new Buffer(value, encodingOrOffset);
      if (value instanceof ArrayBufferCtor) {
        const offset = encodingOrOffset === undefined ? 0 : Number(encodingOrOffset);
        const size = length === undefined ? value.byteLength - offset : Number(length);
        return new Buffer(value, offset, size);
      }
      if (ArrayBufferIsView(value)) {
        const bytes = asBytes(value);
        const copy = new Buffer(bytes.length);
        copy.set(bytes);
        return copy;
      }
      if (ArrayIsArray(value)) {
        const copy = new Buffer(value.length);
        for (let i = 0; i < value.length; i++) copy[i] = Number(value[i]) & 0xff;
        return copy;
      }
      if (value !== null && typeof value === "object") {
        if (value.type === "Buffer" && ArrayIsArray(value.data)) return Buffer.from(value.data);
        if (typeof value.length === "number") return Buffer.from(Array.from(value));
        const primitive = typeof value[SymbolToPrimitive] === "function"
          ? value[SymbolToPrimitive]("string")
          : typeof value.valueOf === "function" ? value.valueOf() : value;
        if (primitive !== value && (typeof primitive === "string" || typeof primitive === "object")) {
          return Buffer.from(primitive, encodingOrOffset, length);
        }
      }
      throw new TypeError("The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object.");
    }

    static alloc(size, fill = undefined, encoding = undefined) {
      const buffer = new Buffer(Number(size));
      if (fill !== undefined && fill !== 0) buffer.fill(fill, 0, buffer.length, encoding);
      return buffer;
    }

    static allocUnsafe(size) { return new Buffer(Number(size)); }
    static allocUnsafeSlow(size) { return new Buffer(Number(size)); }

    static byteLength(value, encoding = undefined) {
      if (typeof value === "string") {
        const name = normaliseEncoding(encoding);
        if (name === "utf8") return utf8ByteLength(value);
        if (name === "latin1" || name === "ascii") return value.length;
        return encodeString(value, name).length;
      }
      const bytes = asBytes(value);
      if (bytes) return bytes.byteLength;
      throw new TypeError("Buffer.byteLength: the argument must be a string, a Buffer or an ArrayBuffer");
    }

    static concat(list, totalLength = undefined) {
      if (!ArrayIsArray(list)) throw new TypeError("Buffer.concat: the list must be an array");
      const total = totalLength === undefined ? list.reduce((sum, item) => sum + asBytes(item).length, 0) : Number(totalLength);
      const out = Buffer.alloc(total);
      let offset = 0;
      for (const item of list) {
        const bytes = asBytes(item);
        if (!bytes) throw new TypeError("Buffer.concat: every item must be a Buffer or a Uint8Array");
        if (offset >= total) break;
        const part = bytes.subarray(0, total - offset);
        out.set(part, offset);
        offset += part.length;
      }
      return out;
    }

    static isBuffer(value) { return isBuffer(value); }

    static isEncoding(encoding) {
      try {
        normaliseEncoding(encoding);
        return typeof encoding === "string";
      } catch {
        return false;
      }
    }

    static compare(a, b) {
      const x = asBytes(a);
      const y = asBytes(b);
      const n = MathMin(x.length, y.length);
      for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
      return x.length === y.length ? 0 : x.length < y.length ? -1 : 1;
    }

    toString(encoding = "utf8", start = 0, end = this.length) {
      const from = MathMax(0, MathFloor(Number(start) || 0));
      const to = MathMin(this.length, end === undefined ? this.length : MathFloor(Number(end)));
      if (to <= from) return "";
      return decodeBytes(new U8(this.buffer, this.byteOffset + from, to - from), encoding);
    }

    toJSON() { return { type: "Buffer", data: Array.from(this) }; }

    equals(other) { return Buffer.compare(this, other) === 0; }

    compare(other) { return Buffer.compare(this, other); }

    /** Node's slice shares memory (unlike Uint8Array's). */
    slice(start = undefined, end = undefined) { return this.subarray(start, end); }

    copy(target, targetStart = 0, sourceStart = 0, sourceEnd = this.length) {
      const part = this.subarray(sourceStart, sourceEnd);
      const room = MathMax(0, target.length - targetStart);
      const chunk = part.subarray(0, room);
      target.set(chunk, targetStart);
      return chunk.length;
    }

    fill(value, offset = 0, end = this.length, encoding = undefined) {
      if (typeof offset === "string") return this.fill(value, 0, this.length, offset);
      if (typeof value === "string") {
        const pattern = encodeString(value, encoding);
        if (pattern.length === 0) return super.fill(0, offset, end);
        for (let i = offset, j = 0; i < end; i++, j = (j + 1) % pattern.length) this[i] = pattern[j];
        return this;
      }
      return super.fill(typeof value === "number" ? value & 0xff : value, offset, end);
    }

    indexOf(value, byteOffset = 0, encoding = undefined) {
      if (typeof value === "number") return super.indexOf(value & 0xff, byteOffset);
      const needle = typeof value === "string" ? encodeString(value, encoding) : asBytes(value);
      if (!needle) throw new TypeError("Buffer.indexOf: the value must be a string, a number or a Buffer");
      const from = byteOffset < 0 ? MathMax(0, this.length + byteOffset) : byteOffset;
      if (needle.length === 0) return from <= this.length ? from : this.length;
      outer: for (let i = from; i + needle.length <= this.length; i++) {
        for (let j = 0; j < needle.length; j++) if (this[i + j] !== needle[j]) continue outer;
        return i;
      }
      return -1;
    }

    includes(value, byteOffset = 0, encoding = undefined) {
      return this.indexOf(value, byteOffset, encoding) !== -1;
    }

    write(text, offset = 0, length = undefined, encoding = undefined) {
      if (typeof offset === "string") return this.write(text, 0, undefined, offset);
      if (typeof length === "string") return this.write(text, offset, undefined, length);
      const bytes = encodeString(String(text), encoding);
      const room = MathMax(0, this.length - offset);
      const count = MathMin(bytes.length, room, length === undefined ? room : length);
      this.set(bytes.subarray(0, count), offset);
      return count;
    }
  }
  ObjectDefineProperty(Buffer, "poolSize", { value: 8192, enumerable: true });

  shared.provide({ isBuffer, Buffer });
})(globalThis.__bosunPrelude);
