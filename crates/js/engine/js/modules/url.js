// Bosun JS engine: `node:url`, the WHATWG `URL` and `URLSearchParams` of the prelude.
//
// `fileURLToPath` and `pathToFileURL` refuse: plugins have no file system in Bosun's engine, and
// a plugin's `import.meta.url` is not a `file:` URL. The legacy `url.parse`/`url.format`/
// `url.resolve` API is not provided.
import internal from "bosun:internal";

export const URL = internal.web.URL;
export const URLSearchParams = internal.web.URLSearchParams;

function noFiles(name) {
  return function refused() {
    const error = new Error(`url.${name} is not available in Bosun's engine: plugins have no file system`);
    error.code = "ERR_ACCESS_DENIED";
    throw error;
  };
}

export const fileURLToPath = noFiles("fileURLToPath");
export const pathToFileURL = noFiles("pathToFileURL");

export default { URL, URLSearchParams, fileURLToPath, pathToFileURL };
