// Bosun JS engine prelude: bytes and strings. The UTF-8, Latin-1, hex and base64 conversions
// the encoding classes, URL, fetch and Buffer share; the host does the UTF-8 and base64 work.
"use strict";

(function bosunPreludeBytes(shared) {
  const {
    ReflectApply, StringFromCharCode, U8, ArrayBufferCtor, ArrayBufferIsView, nativeUtf8Encode,
    nativeUtf8Decode, nativeBase64Encode, nativeBase64Decode,
  } = shared;

  /** `value` as a Uint8Array view (ArrayBuffer, any ArrayBufferView); undefined otherwise. */
  function asBytes(value) {
    if (value instanceof U8) return value;
    if (value instanceof ArrayBufferCtor) return new U8(value);
    if (ArrayBufferIsView(value)) return new U8(value.buffer, value.byteOffset, value.byteLength);
    return undefined;
  }

  /** UTF-8 bytes of a string (lone surrogates become U+FFFD), as a fresh Uint8Array. */
  function utf8Encode(text) {
    // Lone surrogates are replaced here: the host's strings are Rust strings.
    const bytes = nativeUtf8Encode(toUSVString(text));
    // The host returns a Uint8Array of this realm; copy defensively if it did not.
    return bytes instanceof U8 ? bytes : new U8(bytes);
  }

  function utf8Decode(bytes, fatal) {
    return nativeUtf8Decode(bytes, !!fatal);
  }

  /** The UTF-8 length of a string without encoding it. */
  function utf8ByteLength(text) {
    let length = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit < 0x80) length += 1;
      else if (unit < 0x800) length += 2;
      else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
        const next = text.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) {
          length += 4;
          i++;
        } else {
          length += 3;
        }
      } else length += 3;
    }
    return length;
  }

  /** Replaces lone surrogates with U+FFFD (WebIDL USVString conversion). */
  function toUSVString(value) {
    const text = String(value);
    return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
  }

  function latin1Decode(bytes) {
    let out = "";
    for (let i = 0; i < bytes.length; i += 8192) {
      out += ReflectApply(StringFromCharCode, null, bytes.subarray(i, i + 8192));
    }
    return out;
  }

  function latin1Encode(text) {
    const bytes = new U8(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 0xff;
    return bytes;
  }

  const HEX = "0123456789abcdef";
  function hexEncode(bytes) {
    let out = "";
    for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i] >> 4] + HEX[bytes[i] & 15];
    return out;
  }

  /** Node's hex decoding: pairs of hex digits, stopping at the first invalid pair. */
  function hexDecode(text) {
    const out = [];
    for (let i = 0; i + 1 < text.length; i += 2) {
      const byte = parseInt(text.slice(i, i + 2), 16);
      if (!/^[0-9a-fA-F]{2}$/.test(text.slice(i, i + 2))) break;
      out.push(byte);
    }
    return new U8(out);
  }

  function base64Encode(bytes) {
    return nativeBase64Encode(bytes);
  }

  const BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

  /**
   * Unpadded standard base64 (length % 4 !== 1) made canonical and padded for the host: the last
   * character's unused bits are cleared (browsers and Node ignore them; Rust's decoder refuses
   * them), then `=` is added.
   */
  function canonicalBase64(text) {
    let out = text;
    const rest = out.length % 4;
    if (rest === 2 || rest === 3) {
      const value = BASE64_ALPHABET.indexOf(out[out.length - 1]) & (rest === 2 ? 0b110000 : 0b111100);
      out = out.slice(0, -1) + BASE64_ALPHABET[value];
    }
    while (out.length % 4 !== 0) out += "=";
    return out;
  }

  /** Node-style lenient base64/base64url decoding: ignores other characters, padding optional. */
  function base64DecodeLenient(text) {
    let cleaned = String(text).replace(/[-_]/g, (c) => (c === "-" ? "+" : "/"));
    const end = cleaned.indexOf("=");
    if (end >= 0) cleaned = cleaned.slice(0, end);
    cleaned = cleaned.replace(/[^A-Za-z0-9+/]/g, "");
    if (cleaned.length % 4 === 1) cleaned = cleaned.slice(0, -1);
    const bytes = nativeBase64Decode(canonicalBase64(cleaned));
    return bytes instanceof U8 ? bytes : new U8(bytes);
  }

  shared.provide({
    asBytes, utf8Encode, utf8Decode, utf8ByteLength, toUSVString, latin1Decode, latin1Encode,
    hexEncode, hexDecode, base64Encode, canonicalBase64, base64DecodeLenient,
  });
})(globalThis.__bosunPrelude);
