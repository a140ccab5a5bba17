// Bosun JS engine: `node:buffer`, the prelude's Buffer (Node's basics as a Uint8Array
// subclass; see prelude/buffer.js) plus `atob`, `btoa` and the size constants.
import internal from "bosun:internal";

export const Buffer = internal.web.Buffer;
export const atob = internal.web.atob;
export const btoa = internal.web.btoa;
export const kMaxLength = 2 ** 32;
export const kStringMaxLength = 2 ** 29 - 24;
export const constants = Object.freeze({ MAX_LENGTH: kMaxLength, MAX_STRING_LENGTH: kStringMaxLength });

export default { Buffer, atob, btoa, kMaxLength, kStringMaxLength, constants };
