//! The module loader: a plugin imports only its own files and the engine's built-in modules.
//!
//! - `./x.js`, `../lib/y.mjs` (relative to the importing plugin file) resolve inside the
//!   plugin's file set, which the host handed over in `activate`; a path that climbs out of the
//!   plugin directory or names a file that is not there is an import error. Nothing is read from
//!   any filesystem: the only code the engine can run is code the host hashed.
//! - `zod` and the small Node surface (`src/builtins.rs`, with or without the `node:` prefix;
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

mod compiled {
    include!(concat!(env!("OUT_DIR"), "/builtins.rs"));
}

/// Where a plugin sees its own directory (`import.meta.url` is `file:///plugin/<file>`;
/// `js/modules/plugin_dir.js` serves reads beneath it).
const PLUGIN_DIR: &str = "/plugin";

/// A built-in module's bytecode (`src/builtins.rs` lists them; `build.rs` compiles them).
fn builtin(name: &str) -> Option<&'static [u8]> {
    compiled::BYTECODE
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, bytecode)| *bytecode)
}

/// The prelude's classic scripts as bytecode, in the order they run (`src/builtins.rs`).
pub use compiled::PRELUDE;

/// Runs one of the prelude's scripts from its bytecode, as `Ctx::eval` would run its source: in
/// the global scope. On failure the exception is pending in `ctx` (`CatchResultExt::catch`).
pub fn run_script(ctx: &Ctx<'_>, bytecode: &[u8]) -> Result<()> {
    use rquickjs::qjs;
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: the bytes are the engine's own (`PRELUDE`), written by this QuickJS version at build
    // time and embedded in the engine, never from outside it; `JS_ReadObject` checks the format
    // version. `JS_EvalFunction` takes ownership of the function, and the result is freed.
    #[allow(unsafe_code)]
    unsafe {
        let function = qjs::JS_ReadObject(
            raw,
            bytecode.as_ptr(),
            bytecode.len() as _,
            qjs::JS_READ_OBJ_BYTECODE as i32,
        );
        if qjs::JS_IsException(function) {
            return Err(Error::Exception);
        }
        let result = qjs::JS_EvalFunction(raw, function);
        if qjs::JS_IsException(result) {
            return Err(Error::Exception);
        }
        qjs::JS_FreeValue(raw, result);
    }
    Ok(())
}

/// The `node:` modules the engine provides, as a plugin names them (with or without the
/// prefix).
fn node_modules() -> impl Iterator<Item = &'static str> {
    compiled::BYTECODE
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| name.starts_with("node:"))
}

/// The canonical built-in name for a specifier, if it names one.
fn builtin_name(specifier: &str) -> Option<&'static str> {
    if specifier == "zod" {
        return Some("zod");
    }
    let bare = specifier.strip_prefix("node:").unwrap_or(specifier);
    node_modules().find(|name| name.strip_prefix("node:") == Some(bare))
}

/// Every `node:` module a plugin can import, for the import error.
fn node_module_list() -> String {
    let mut names: Vec<&str> = node_modules().collect();
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
            // SAFETY: the bytes are the engine's own, written by `Module::write` of this
            // QuickJS version at build time (`build.rs`) and embedded in the engine; nothing from
            // outside the engine reaches `Module::load`. `JS_ReadObject` checks the format version.
            #[allow(unsafe_code)]
            Some(bytecode) => unsafe { Module::load(ctx.clone(), bytecode) },
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
