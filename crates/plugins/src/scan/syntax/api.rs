//! What a host API or a module member the resolver named means: the rule it breaks and the
//! message that says so (`Deno.run` runs a subprocess, `node:vm` runs strings as code), and what
//! loading a specifier means. Pure lookups: no syntax tree is walked here.

use oxc::ast::ast::Argument;

use super::{Pass, Use};
use crate::scan::resolve::{Const, Value};
use crate::scan::rules::{self, Rule};
use crate::scan::text;

/// Filesystem calls on `Deno`; each also has a `…Sync` twin.
const DENO_FS: &[&str] = &[
    "readFile",
    "readTextFile",
    "writeFile",
    "writeTextFile",
    "remove",
    "rename",
    "mkdir",
    "open",
    "create",
    "copyFile",
    "readDir",
    "stat",
    "lstat",
    "link",
    "symlink",
    "readLink",
    "realPath",
    "truncate",
    "chmod",
    "chown",
    "makeTempDir",
    "makeTempFile",
    "utime",
    "watchFs",
    "chdir",
    "umask",
    "FsFile",
];
/// Network listeners and raw connections on `Deno`.
const DENO_NET: &[&str] = &[
    "listen",
    "listenTls",
    "listenDatagram",
    "serve",
    "serveHttp",
    "connect",
    "connectTls",
    "startTls",
    "connectQuic",
    "listenQuic",
    "QuicEndpoint",
];
/// Process APIs on `Deno`, compared in lower case (Triggerfish's #13 is case-insensitive).
const DENO_PROCESS: &[&str] = &["command", "run", "exec", "spawn", "childprocess", "kill"];
/// Node modules whose servers and sockets are network listeners.
const NODE_NET: &[&str] = &["http", "https", "http2", "net", "tls", "dgram"];
const NODE_NET_CALLS: &[&str] = &[
    "createServer",
    "createSecureServer",
    "Server",
    "connect",
    "createConnection",
    "createSocket",
    "Socket",
];

impl<'a> Pass<'_, 'a> {
    pub(super) fn api_rule(
        &self,
        value: &Value,
        how: Use<'_, 'a>,
        direct: bool,
    ) -> Option<(Rule, String)> {
        let called = matches!(how, Use::Called(_) | Use::Constructed(_));
        let args: &[Argument<'a>] = match how {
            Use::Called(args) | Use::Constructed(args) => args,
            _ => &[],
        };
        let arg = |i: usize| args.get(i).and_then(Argument::as_expression);
        let name = describe(value);
        let path: Vec<&str> = match value {
            Value::Global(path) => path.iter().map(String::as_str).collect(),
            Value::Module { specifier, path } => {
                return self.module_member_rule(specifier, path, how);
            }
            Value::Intrinsic { name, path } => return function_family_rule(name, path, how),
            Value::FunctionOf(_) => return None,
            Value::TooDeep => {
                return Some((
                    rules::UNRESOLVED_ACCESS,
                    "refers to something through more aliases than the scanner follows".to_owned(),
                ));
            }
            Value::Unknown => return None,
        };
        let first = path.first().copied().unwrap_or("");
        let second = path.get(1).copied().unwrap_or("");
        match path.as_slice() {
            ["eval", ..] => {
                let message = if direct && called {
                    "calls eval".to_owned()
                } else if path.len() > 1 {
                    format!("calls eval indirectly ({name})")
                } else if called {
                    "calls eval indirectly".to_owned()
                } else {
                    "takes eval as a value, to call it indirectly".to_owned()
                };
                return Some((rules::EVAL, message));
            }
            ["Function"] if called => {
                return Some((
                    rules::FUNCTION_CONSTRUCTOR,
                    "builds a function from a string with Function".to_owned(),
                ));
            }
            ["Function"] if matches!(how, Use::Escapes) => {
                return Some((
                    rules::FUNCTION_CONSTRUCTOR,
                    "passes Function on as a value, to build functions from strings".to_owned(),
                ));
            }
            ["Function", "call" | "apply" | "bind"] => {
                return Some((
                    rules::FUNCTION_CONSTRUCTOR,
                    format!("builds a function from a string with {name}"),
                ));
            }
            ["setTimeout" | "setInterval"]
                if called && arg(0).is_some_and(|a| self.string_like(a)) =>
            {
                return Some((
                    rules::STRING_TIMER,
                    format!("passes a string to {name}, which runs it as code"),
                ));
            }
            ["Worker" | "SharedWorker"] if called => {
                return Some((
                    rules::WORKER,
                    format!("starts a {name}, which runs code the scanner does not see"),
                ));
            }
            ["Deno", "dlopen", ..] | ["process", "dlopen" | "binding" | "_linkedBinding", ..] => {
                return Some((rules::NATIVE_CODE, format!("loads native code ({name})")));
            }
            [
                "WebAssembly",
                "compile"
                | "compileStreaming"
                | "instantiate"
                | "instantiateStreaming"
                | "Module"
                | "Instance",
                ..,
            ] => {
                return Some((
                    rules::WEBASSEMBLY,
                    format!("compiles WebAssembly the scanner cannot read ({name})"),
                ));
            }
            ["Deno" | "process", "env", ..] => {
                return Some((
                    rules::ENVIRONMENT,
                    format!("reads the process environment ({name})"),
                ));
            }
            ["process", "kill", ..] => {
                return Some((rules::SUBPROCESS, format!("signals processes ({name})")));
            }
            // Read on its own (`if (process.getBuiltinModule)`) it only asks whether it exists.
            ["process", "getBuiltinModule", ..] if !matches!(how, Use::Read) => {
                return Some((
                    rules::BUILTIN_MODULE_LOADER,
                    format!("loads a built-in module by name at run time ({name})"),
                ));
            }
            ["atob"] if called => {
                return Some(match arg(0).and_then(|a| self.resolver.fold_string(a)) {
                    Some(decoded) => (
                        rules::BASE64_DECODE,
                        format!(
                            "decodes a constant hidden in base64: \"{}\"",
                            text::escape(&text::truncate(
                                &text::decode_base64(&decoded).unwrap_or_default(),
                                40
                            ))
                        ),
                    ),
                    None => (
                        rules::RUNTIME_DECODE,
                        "decodes base64 at run time (atob)".to_owned(),
                    ),
                });
            }
            ["Buffer", "from"] | ["Uint8Array", "fromBase64" | "fromHex"] if called => {
                let base64 = second != "from"
                    || arg(1)
                        .and_then(|a| self.resolver.fold_string(a))
                        .is_some_and(|e| matches!(e.as_str(), "base64" | "base64url" | "hex"));
                if base64 {
                    let constant = arg(0).and_then(|a| self.resolver.fold_string(a)).is_some();
                    return Some(if constant {
                        (
                            rules::BASE64_DECODE,
                            format!("decodes a constant hidden in an encoding ({name})"),
                        )
                    } else {
                        (
                            rules::RUNTIME_DECODE,
                            format!("decodes an encoding at run time ({name})"),
                        )
                    });
                }
                return None;
            }
            ["String", "fromCharCode" | "fromCodePoint"] if called && args.len() >= 2 => {
                let built = args.iter().all(|a| {
                    a.as_expression()
                        .is_some_and(|e| matches!(self.resolver.fold(e), Some(Const::Num(_))))
                });
                if built {
                    return Some((
                        rules::CHAR_CODES,
                        format!("builds a string from character codes ({name})"),
                    ));
                }
                return None;
            }
            _ => {}
        }
        if first == "Deno" {
            let lower = second.to_ascii_lowercase();
            if DENO_PROCESS.contains(&lower.as_str()) {
                return Some((rules::SUBPROCESS, format!("runs a subprocess ({name})")));
            }
            if DENO_NET.contains(&second) {
                return Some((
                    rules::NETWORK_LISTENER,
                    format!("opens a raw network listener or connection ({name})"),
                ));
            }
            let base = second.strip_suffix("Sync").unwrap_or(second);
            if DENO_FS.contains(&base) {
                return Some((
                    rules::FILESYSTEM,
                    format!("accesses files directly ({name})"),
                ));
            }
        }
        None
    }

    fn module_member_rule(
        &self,
        specifier: &str,
        path: &[String],
        how: Use<'_, 'a>,
    ) -> Option<(Rule, String)> {
        let called = matches!(how, Use::Called(_) | Use::Constructed(_));
        let first = path.first()?;
        let name = format!("{} from node:{specifier}", path.join("."));
        match specifier {
            "child_process" => Some((rules::SUBPROCESS, format!("runs a subprocess ({name})"))),
            "fs" | "fs/promises" => Some((
                rules::FILESYSTEM,
                format!("accesses files directly ({name})"),
            )),
            "vm" => Some((rules::VM_MODULE, format!("runs strings as code ({name})"))),
            s if NODE_NET.contains(&s) && NODE_NET_CALLS.contains(&first.as_str()) => Some((
                rules::NETWORK_LISTENER,
                format!("opens a raw network listener or connection ({name})"),
            )),
            "worker_threads" if called && first == "Worker" => Some((
                rules::WORKER,
                format!("starts a Worker, which runs code the scanner does not see ({name})"),
            )),
            "module"
                if matches!(first.as_str(), "createRequire" | "_load")
                    && !matches!(how, Use::Read) =>
            {
                Some((
                    rules::BUILTIN_MODULE_LOADER,
                    format!("loads modules by name, outside the file's imports ({name})"),
                ))
            }
            _ => None,
        }
    }
}

/// The rule for a non-global constructor of the Function family, or a member of it.
fn function_family_rule(name: &str, path: &[String], how: Use<'_, '_>) -> Option<(Rule, String)> {
    match (path, how) {
        ([], Use::Called(_) | Use::Constructed(_)) => Some((
            rules::FUNCTION_CONSTRUCTOR,
            format!("builds a function from a string with the {name} constructor"),
        )),
        ([], Use::Escapes) => Some((
            rules::FUNCTION_CONSTRUCTOR,
            format!("passes the {name} constructor on as a value, to build functions from strings"),
        )),
        ([method], _) if matches!(method.as_str(), "call" | "apply" | "bind") => Some((
            rules::FUNCTION_CONSTRUCTOR,
            format!(
                "builds a function from a string with the {name} constructor ({name}.{method})"
            ),
        )),
        _ => None,
    }
}

/// What a resolved value is called in a message.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Global(path) if path.is_empty() => "globalThis".to_owned(),
        Value::Global(path) => path.join("."),
        Value::Module { specifier, path } if path.is_empty() => format!("node:{specifier}"),
        Value::Module { specifier, path } => format!("{} from node:{specifier}", path.join(".")),
        Value::Intrinsic { name, path } if path.is_empty() => format!("the {name} constructor"),
        Value::Intrinsic { name, path } => format!("{name}.{}", path.join(".")),
        Value::FunctionOf(_) => "a function".to_owned(),
        Value::TooDeep | Value::Unknown => "an unknown value".to_owned(),
    }
}

/// What loading `specifier` from the file at `rel_path` means, if it is a finding.
pub(crate) fn classify_specifier(specifier: &str, rel_path: &str) -> Option<(Rule, String)> {
    let name = specifier.strip_prefix("node:").unwrap_or(specifier);
    let shown = text::escape(&text::truncate(specifier, 80));
    match name {
        "child_process" => {
            return Some((rules::SUBPROCESS, "imports node:child_process".to_owned()));
        }
        "fs" | "fs/promises" => {
            return Some((rules::FILESYSTEM, format!("imports node:{name}")));
        }
        "vm" => {
            return Some((
                rules::VM_MODULE,
                "imports node:vm, which runs strings as code".to_owned(),
            ));
        }
        _ => {}
    }
    let lower = specifier.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Some((
            rules::REMOTE_IMPORT,
            format!("imports code from the network ({shown})"),
        ));
    }
    if lower.starts_with("npm:") || lower.starts_with("jsr:") {
        return Some((
            rules::REMOTE_IMPORT,
            format!("imports a package from a registry at run time ({shown})"),
        ));
    }
    if lower.starts_with("data:") || lower.starts_with("blob:") {
        return Some((
            rules::DATA_IMPORT,
            format!(
                "imports code from a {} URL",
                &lower[..lower.find(':').unwrap_or(0) + 1]
            ),
        ));
    }
    if lower.starts_with("file:") || specifier.starts_with('/') || specifier.starts_with('\\') {
        return Some((
            rules::REMOTE_IMPORT,
            format!("imports a file outside the plugin directory ({shown})"),
        ));
    }
    if (specifier.starts_with("./") || specifier.starts_with("../"))
        && leaves_directory(rel_path, specifier)
    {
        return Some((
            rules::REMOTE_IMPORT,
            format!("imports a file outside the plugin directory ({shown})"),
        ));
    }
    None
}

/// Whether `specifier`, relative to the file at `rel_path`, climbs above the plugin directory.
fn leaves_directory(rel_path: &str, specifier: &str) -> bool {
    let mut depth: i64 = rel_path.split('/').count() as i64 - 1;
    for part in specifier.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => depth += 1,
        }
    }
    false
}
