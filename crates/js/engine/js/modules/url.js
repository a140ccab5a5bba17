// Bosun JS engine: `node:url`, the WHATWG `URL` and `URLSearchParams` of the prelude.
//
// `fileURLToPath` and `pathToFileURL` convert as Node's do (a plugin's `import.meta.url` is
// `file:///plugin/<file>`, and `node:fs` reads the plugin's own directory). The legacy `url.parse`/`url.format`/
// `url.resolve` API is not provided.
import internal from "bosun:internal";
import dir from "bosun:plugin-dir";

export const URL = internal.web.URL;
export const URLSearchParams = internal.web.URLSearchParams;

export function fileURLToPath(url) {
  const href = typeof url === "string" ? url : String(url?.href ?? url);
  return dir.fileUrlPath(href, "fileURLToPath");
}

export function pathToFileURL(path) {
  if (typeof path !== "string") {
    const error = new TypeError(`The "path" argument must be of type string. Received ${path === null ? "null" : typeof path}`);
    error.code = "ERR_INVALID_ARG_TYPE";
    throw error;
  }
  const absolute = path.startsWith("/") ? path : `/workspace/${path}`;
  const encoded = absolute.split("/").map((part) => encodeURIComponent(part)).join("/");
  return new URL(`file://${encoded}`);
}

export default { URL, URLSearchParams, fileURLToPath, pathToFileURL };
