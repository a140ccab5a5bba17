// Bosun JS engine prelude: `TextEncoder`, `TextDecoder` (UTF-8 only, streaming included),
// `atob` and `btoa`.
"use strict";

(function bosunPreludeEncoding(shared) {
  const {
    MathMin, U8, nativeBase64Decode, asBytes, utf8Encode, utf8Decode, toUSVString, latin1Decode,
    latin1Encode, base64Encode, canonicalBase64, DOMException,
  } = shared;

  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(input = "") {
      return utf8Encode(toUSVString(input));
    }
    encodeInto(source, destination) {
      if (!(destination instanceof U8)) throw new TypeError("encodeInto: the destination must be a Uint8Array");
      const text = toUSVString(source);
      let read = 0;
      let written = 0;
      for (const char of text) {
        const bytes = utf8Encode(char);
        if (written + bytes.length > destination.length) break;
        destination.set(bytes, written);
        written += bytes.length;
        read += char.length;
      }
      return { read, written };
    }
  }

  const UTF8_LABELS = ["utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"];

  /** How many bytes at the end of `bytes` start an incomplete UTF-8 sequence. */
  function incompleteTail(bytes) {
    for (let back = 1; back <= MathMin(3, bytes.length); back++) {
      const byte = bytes[bytes.length - back];
      if ((byte & 0xc0) === 0x80) continue; // continuation byte: look further back
      const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
      return need > back ? back : 0;
    }
    return 0;
  }

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    #pending = new U8(0);
    #bomSeen = false;

    constructor(label = "utf-8", options = undefined) {
      const normalised = String(label).trim().toLowerCase();
      if (!UTF8_LABELS.includes(normalised)) {
        throw new RangeError(`TextDecoder: the encoding "${label}" is not supported (only utf-8 is)`);
      }
      this.#fatal = !!options?.fatal;
      this.#ignoreBOM = !!options?.ignoreBOM;
    }

    get encoding() { return "utf-8"; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }

    decode(input = undefined, options = undefined) {
      const stream = !!options?.stream;
      let bytes = input === undefined || input === null ? new U8(0) : asBytes(input);
      if (bytes === undefined) throw new TypeError("TextDecoder.decode: the input must be an ArrayBuffer or an ArrayBufferView");
      if (this.#pending.length) {
        const joined = new U8(this.#pending.length + bytes.length);
        joined.set(this.#pending, 0);
        joined.set(bytes, this.#pending.length);
        bytes = joined;
        this.#pending = new U8(0);
      }
      if (stream) {
        const tail = incompleteTail(bytes);
        if (tail) {
          this.#pending = bytes.slice(bytes.length - tail);
          bytes = bytes.subarray(0, bytes.length - tail);
        }
      }
      let text = utf8Decode(bytes, this.#fatal);
      if (!this.#ignoreBOM && !this.#bomSeen && text.length > 0) {
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        this.#bomSeen = true;
      }
      if (!stream) this.#bomSeen = false;
      return text;
    }
  }

  function btoa(data) {
    if (arguments.length === 0) throw new TypeError("btoa: 1 argument required");
    const text = String(data);
    for (let i = 0; i < text.length; i++) {
      if (text.charCodeAt(i) > 0xff) {
        throw new DOMException("Invalid character", "InvalidCharacterError");
      }
    }
    return base64Encode(latin1Encode(text));
  }

  function atob(data) {
    if (arguments.length === 0) throw new TypeError("atob: 1 argument required");
    // Forgiving-base64 decode (HTML): strip ASCII whitespace, allow missing padding.
    let text = String(data).replace(/[\t\n\f\r ]/g, "");
    if (text.length % 4 === 0) text = text.replace(/={1,2}$/, "");
    if (text.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(text)) {
      throw new DOMException("The string to be decoded is not correctly encoded.", "InvalidCharacterError");
    }
    return latin1Decode(nativeBase64Decode(canonicalBase64(text)));
  }

  shared.provide({ TextEncoder, TextDecoder, btoa, atob });
})(globalThis.__bosunPrelude);
