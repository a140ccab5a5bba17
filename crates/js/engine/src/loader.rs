//! The module loader: a plugin imports only its own files and the engine's built-in modules.
//!
//! - `./x.js`, `../lib/y.mjs` (relative to the importing plugin file) resolve inside the
//!   plugin's file set, which the host handed over in `activate`; a path that climbs out of the
//!   plugin directory or names a file that is not there is an import error. Nothing is read from
//!   any filesystem: the only code the engine can run is code the host hashed.
//! - `zod` and the small Node surface ([`NODE_MODULES`], with or without the `node:` prefix;
//!   `node:fs` reads only the plugin's own files, from the bytes the host handed over) resolve
//!   to modules built into the engine. A plugin file's `import.meta.url` is
//!   `file:///plugin/<path>`.
//! - `bosun:internal` (the layer's private registry of host functions) resolves only for the
//!   engine's own modules, never for plugin code.
//! - Anything else (a package name, an `https:` or `npm:` specifier, an absolute path) fails
//!   with a message that says what to do.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Ctx, Error, Module, Result};

/// Module names of plugin files carry this prefix.
const PLUGIN_PREFIX: &str = "plugin:";

thread_local! {
    /// The plugin's files, path relative to the plugin directory → JavaScript source.
    static FILES: RefCell<BTreeMap<String, String>> = const { RefCell::new(BTreeMap::new()) };
    /// The `.js` files among them that are CommonJS (the host decides, as Node does).
    static COMMONJS: RefCell<BTreeSet<String>> = const { RefCell::new(BTreeSet::new()) };
}

/// Replaces the plugin's file set and which `.js` files are CommonJS (once per instance, in
/// `activate`).
pub fn set_files(files: BTreeMap<String, String>, commonjs: BTreeSet<String>) {
    FILES.with(|f| *f.borrow_mut() = files);
    COMMONJS.with(|c| *c.borrow_mut() = commonjs);
}

/// Whether a plugin file loads as CommonJS: every `.cjs` file, and the `.js` files the host
/// named.
fn is_commonjs(path: &str) -> bool {
    path.ends_with(".cjs") || COMMONJS.with(|c| c.borrow().contains(path))
}

/// Whether `path` is one of the plugin's files.
pub fn has_file(path: &str) -> bool {
    FILES.with(|f| f.borrow().contains_key(path))
}

/// The module name of a plugin file.
pub fn plugin_module(path: &str) -> String {
    format!("{PLUGIN_PREFIX}{path}")
}

/// The `node:` modules the engine provides, as a plugin names them (with or without the
/// prefix), each with its source: one list for the loader and for the import error.
const NODE_MODULES: [(&str, &str); 11] = [
    ("node:buffer", include_str!("../js/modules/buffer.js")),
    (
        "node:child_process",
        include_str!("../js/modules/child_process.js"),
    ),
    ("node:dns", include_str!("../js/modules/dns.js")),
    (
        "node:dns/promises",
        include_str!("../js/modules/dns_promises.js"),
    ),
    ("node:fs", include_str!("../js/modules/fs.js")),
    (
        "node:fs/promises",
        include_str!("../js/modules/fs_promises.js"),
    ),
    ("node:net", include_str!("../js/modules/net.js")),
    ("node:path", include_str!("../js/modules/path.js")),
    (
        "node:timers/promises",
        include_str!("../js/modules/timers_promises.js"),
    ),
    ("node:url", include_str!("../js/modules/url.js")),
    ("node:path/posix", include_str!("../js/modules/path.js")),
];

/// Where a plugin sees its own directory (`import.meta.url` is `file:///plugin/<file>`;
/// `js/modules/plugin_dir.js` serves reads beneath it).
const PLUGIN_DIR: &str = "/plugin";

/// Built-in modules: name → source.
fn builtin(name: &str) -> Option<&'static str> {
    Some(match name {
        "zod" => include_str!("../js/zod.js"),
        // One module from pieces that share its scope (js/runtime/shared.js says why);
        // test/harness.mjs reads this list.
        "bosun:runtime" => concat!(
            include_str!("../js/runtime/shared.js"),
            include_str!("../js/runtime/forge.js"),
            include_str!("../js/runtime/triggerfish.js"),
            include_str!("../js/runtime/engine.js"),
        ),
        "bosun:internal" => include_str!("../js/modules/internal.js"),
        "bosun:plugin-dir" => include_str!("../js/modules/plugin_dir.js"),
        _ => {
            return NODE_MODULES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, s)| *s);
        }
    })
}

/// The canonical built-in name for a specifier, if it names one.
fn builtin_name(specifier: &str) -> Option<&'static str> {
    if specifier == "zod" {
        return Some("zod");
    }
    let bare = specifier.strip_prefix("node:").unwrap_or(specifier);
    NODE_MODULES
        .iter()
        .map(|(name, _)| *name)
        .find(|name| name.strip_prefix("node:") == Some(bare))
}

/// Every `node:` module a plugin can import, for the import error.
fn node_module_list() -> String {
    let mut names: Vec<&str> = NODE_MODULES.iter().map(|(n, _)| *n).collect();
    names.sort_unstable();
    names.join(", ")
}

/// Joins `relative` onto the directory of `base` (both plugin-relative), refusing to climb out.
fn join(base: &str, relative: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// Resolves specifiers as the module docs above describe.
pub struct PluginResolver;

impl Resolver for PluginResolver {
    fn resolve<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<String> {
        let refuse = |message: String| Err(rquickjs::Exception::throw_message(ctx, &message));
        // The core itself imports with an empty base.
        let engine_module =
            base.is_empty() || base.starts_with("bosun:") || base.starts_with("node:");
        if name == "bosun:internal" {
            return if engine_module {
                Ok(name.to_owned())
            } else {
                refuse(format!(
                    "cannot import \"{name}\" from {base}: it is internal to the engine"
                ))
            };
        }
        if name.starts_with("bosun:") && engine_module {
            return Ok(name.to_owned());
        }
        if let Some(builtin) = builtin_name(name) {
            return Ok(builtin.to_owned());
        }
        // The runtime imports the entry by its plugin-relative path.
        if base == "bosun:runtime" {
            let path = name.strip_prefix("./").unwrap_or(name);
            if has_file(path) {
                return Ok(plugin_module(path));
            }
        }
        if let Some(from) = base.strip_prefix(PLUGIN_PREFIX)
            && (name.starts_with("./") || name.starts_with("../"))
        {
            return match join(from, name) {
                Some(path) if has_file(&path) => Ok(plugin_module(&path)),
                Some(path) => refuse(format!(
                    "cannot import \"{name}\" from {from}: the plugin has no file {path}"
                )),
                None => refuse(format!(
                    "cannot import \"{name}\" from {from}: it leaves the plugin directory"
                )),
            };
        }
        let shown = base.strip_prefix(PLUGIN_PREFIX).unwrap_or(base);
        refuse(format!(
            "cannot import \"{name}\" from {shown}: a plugin may import its own files (with a relative path), \"zod\" and the node: modules {}; bundle other dependencies into the plugin directory",
            node_module_list()
        ))
    }
}

/// A CommonJS file (`.cjs`, or a `.js` file the host found to be CommonJS) as Node's `import()`
/// presents it: its `module.exports` is the default export. `require` is not available (the
/// plugin's dependencies must be bundled or imported as modules), and says so when called.
fn commonjs_module(source: &str) -> String {
    format!(
        "const module = {{ exports: {{}} }};\n\
         const require = (id) => {{ throw new Error(`require(${{JSON.stringify(String(id))}}) is not available in Bosun's sandbox: bundle the dependency into the plugin, or use an ES module entry with import`); }};\n\
         (function (module, exports, require) {{\n{source}\n}}).call(module.exports, module, module.exports, require);\n\
         export default module.exports;\n"
    )
}

/// A path as the path of a `file:` URL: bytes outside the unreserved set and `/` percent-encoded.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Loads plugin files and built-in modules.
pub struct PluginLoader;

impl Loader for PluginLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<Module<'js, Declared>> {
        if let Some(path) = name.strip_prefix(PLUGIN_PREFIX) {
            let source = FILES.with(|f| f.borrow().get(path).cloned());
            let module = match source {
                Some(source) if is_commonjs(path) => {
                    Module::declare(ctx.clone(), name, commonjs_module(&source))?
                }
                Some(source) => Module::declare(ctx.clone(), name, source)?,
                None => return Err(Error::new_loading(name)),
            };
            // Node's `import.meta` of a file: what `new URL("./settings.json", import.meta.url)`
            // and `node:fs` need to find the plugin's own files.
            let meta = module.meta()?;
            let filename = format!("{PLUGIN_DIR}/{path}");
            let dirname = filename
                .rsplit_once('/')
                .map_or(PLUGIN_DIR, |(dir, _)| dir)
                .to_owned();
            meta.set("url", format!("file://{}", encode_path(&filename)))?;
            meta.set("filename", filename)?;
            meta.set("dirname", dirname)?;
            return Ok(module);
        }
        match builtin(name) {
            Some(source) => Module::declare(ctx.clone(), name, source),
            None => Err(Error::new_loading(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn relative_paths_stay_inside_the_plugin() {
        assert_eq!(join("index.mjs", "./lib/a.js").as_deref(), Some("lib/a.js"));
        assert_eq!(join("lib/a.js", "../b.js").as_deref(), Some("b.js"));
        assert_eq!(join("index.mjs", "../outside.js"), None);
        assert_eq!(join("lib/a.js", "../../x.js"), None);
    }
}
