//! Compiles the engine's built-in modules (`src/builtins.rs`: zod, the layer's runtime, the
//! `node:` modules) and the prelude's classic scripts to QuickJS bytecode, with the same QuickJS as the engine built for the host,
//! and writes `builtins.rs` into `OUT_DIR`: the table of names and bytecode the loader reads.
//!
//! Why bytecode and not source: QuickJS keeps a copy of every function's source text for
//! `Function.prototype.toString` (a nested function's again inside its parent's), about
//! 0.55 MB for zod and the layer, and parsing leaves its working memory behind in the heap.
//! Both end up in the pre-initialised snapshot that every process maps, copies and hashes. The
//! bytecode keeps line numbers (stack traces still point into the module), not the source: the
//! `toString` of these functions reads `function name() { [native code] }`, as a built-in's
//! does. QuickJS's bytecode carries its format version, which `JS_ReadObject` checks; it does not
//! depend on the pointer width or byte order of the machine that wrote it.

use std::fmt::Write as _;
use std::path::PathBuf;

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Context, Ctx, Error, Module, Runtime, WriteOptions};

#[path = "src/builtins.rs"]
mod builtins;

fn main() {
    if let Err(message) = run() {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    println!("cargo:rerun-if-changed=src/builtins.rs");
    println!("cargo:rerun-if-changed=js");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| format!("OUT_DIR: {e}"))?);
    let runtime = Runtime::new().map_err(|e| format!("starting QuickJS: {e}"))?;
    // QuickJS loads a module's imports as it compiles it: the built-ins import each other.
    runtime.set_loader(Builtins, Builtins);
    let context = Context::full(&runtime).map_err(|e| format!("starting QuickJS: {e}"))?;
    let mut table = String::from(
        "/// The built-in modules as QuickJS bytecode, without source text (build.rs).\n\
         pub static BYTECODE: [(&str, &[u8]); ",
    );
    let _ = writeln!(table, "{}] = [", builtins::BUILTINS.len());
    for (index, (name, source)) in builtins::BUILTINS.iter().enumerate() {
        let bytecode = context.with(|ctx| {
            let module = Module::declare(ctx.clone(), *name, *source).map_err(|e| {
                let thrown = ctx.catch();
                format!("compiling the built-in module {name}: {e}: {thrown:?}")
            })?;
            module
                .write(WriteOptions {
                    strip_source: true,
                    ..WriteOptions::default()
                })
                .map_err(|e| format!("writing the bytecode of {name}: {e}"))
        })?;
        let file = out_dir.join(format!("builtin-{index}.qjsbc"));
        std::fs::write(&file, &bytecode).map_err(|e| format!("writing {}: {e}", file.display()))?;
        let _ = writeln!(
            table,
            "    ({name:?}, include_bytes!(concat!(env!(\"OUT_DIR\"), \"/builtin-{index}.qjsbc\"))),"
        );
    }
    table.push_str("];\n");
    let _ = writeln!(
        table,
        "/// The prelude's classic scripts as QuickJS bytecode, without source text (build.rs).\n\
         pub static PRELUDE: [(&str, &[u8]); {}] = [",
        builtins::PRELUDE.len()
    );
    for (index, (file, source)) in builtins::PRELUDE.iter().enumerate() {
        let bytecode = context.with(|ctx| compile_script(&ctx, file, source))?;
        let path = out_dir.join(format!("prelude-{index}.qjsbc"));
        std::fs::write(&path, &bytecode).map_err(|e| format!("writing {}: {e}", path.display()))?;
        let _ = writeln!(
            table,
            "    ({file:?}, include_bytes!(concat!(env!(\"OUT_DIR\"), \"/prelude-{index}.qjsbc\"))),"
        );
    }
    table.push_str("];\n");
    let path = out_dir.join("builtins.rs");
    std::fs::write(&path, table).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// A classic script compiled as `Ctx::eval` compiles it (global, strict, named `eval_script`)
/// and written as bytecode without its source text. rquickjs has no API for scripts' bytecode.
fn compile_script(ctx: &Ctx<'_>, file: &str, source: &str) -> Result<Vec<u8>, String> {
    use rquickjs::qjs;
    let text = std::ffi::CString::new(source).map_err(|e| format!("{file}: {e}"))?;
    let flags =
        qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY;
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `raw` is the live context `ctx` borrows; `text` is NUL-terminated and outlives the
    // call; the compiled function is freed once written, and the buffer QuickJS allocated for the
    // bytecode is copied out and freed with QuickJS's allocator.
    unsafe {
        let function = qjs::JS_Eval(
            raw,
            text.as_ptr(),
            source.len() as _,
            c"eval_script".as_ptr(),
            flags as i32,
        );
        if qjs::JS_IsException(function) {
            return Err(format!("compiling {file}: {:?}", ctx.catch()));
        }
        let mut len = 0;
        let buffer = qjs::JS_WriteObject(
            raw,
            &mut len,
            function,
            (qjs::JS_WRITE_OBJ_BYTECODE | qjs::JS_WRITE_OBJ_STRIP_SOURCE) as i32,
        );
        qjs::JS_FreeValue(raw, function);
        if buffer.is_null() {
            return Err(format!("writing the bytecode of {file}: {:?}", ctx.catch()));
        }
        let len = usize::try_from(len).map_err(|e| format!("{file}: {e}"))?;
        let bytecode = std::slice::from_raw_parts(buffer, len).to_vec();
        qjs::js_free(raw, buffer.cast());
        Ok(bytecode)
    }
}

/// Resolves and loads the built-in modules by name from their source, for their imports.
struct Builtins;

impl Resolver for Builtins {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        _base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        Ok(name.to_owned())
    }
}

impl Loader for Builtins {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, Declared>> {
        match builtins::BUILTINS.iter().find(|(n, _)| *n == name) {
            Some((_, source)) => Module::declare(ctx.clone(), name, *source),
            None => Err(Error::new_loading(name)),
        }
    }
}
