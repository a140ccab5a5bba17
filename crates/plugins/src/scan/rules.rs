//! The scanner's rules: each has a stable id, a category and a weight. Weights follow
//! Triggerfish's scanner (`src/plugin/scanner.ts`, 20 patterns) where a rule matches one of its
//! patterns; `triggerfish` names the pattern, and `docs/plugins.md` lists where Bosun deviates.

use std::fmt;

use serde::Serialize;

/// What kind of behaviour a finding points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Code built at run time: `eval`, `Function`, string timers, workers, `data:` imports.
    CodeExecution,
    /// Text that addresses the model to override its instructions.
    PromptInjection,
    /// Starting processes: `Deno.Command`, `Deno.run`, `node:child_process`.
    Subprocess,
    /// Zero-width, bidi and tag characters anywhere in the source.
    HiddenCharacters,
    /// Raw sockets and servers: `Deno.listen*`, `Deno.serve`, `Deno.connect*`, `createServer`.
    NetworkListener,
    /// The process environment: `Deno.env`, `process.env`.
    Environment,
    /// Direct file access: `Deno.readFile`… (and every `*Sync`), `node:fs`.
    Filesystem,
    /// Code loaded from outside the plugin: URLs, `npm:`/`jsr:`, paths that leave the directory,
    /// and imports whose specifier is computed.
    RemoteImport,
    /// Hiding what the code does: encoded strings, decoding constants, escaped identifiers,
    /// host objects reached by keys the scanner cannot resolve.
    Obfuscation,
    /// A file the scanner could not review: it does not parse, is not UTF-8, is too large, is a
    /// symbolic link, or could not be read.
    Unreadable,
}

impl Category {
    /// The serialised name, e.g. `code_execution`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CodeExecution => "code_execution",
            Self::PromptInjection => "prompt_injection",
            Self::Subprocess => "subprocess",
            Self::HiddenCharacters => "hidden_characters",
            Self::NetworkListener => "network_listener",
            Self::Environment => "environment",
            Self::Filesystem => "filesystem",
            Self::RemoteImport => "remote_import",
            Self::Obfuscation => "obfuscation",
            Self::Unreadable => "unreadable",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rule. A rule's weight counts once per file however often it matches there (as each of
/// Triggerfish's patterns does); every match is still listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Stable id, e.g. `eval`.
    pub id: &'static str,
    /// Its category.
    pub category: Category,
    /// 1 (informational) to 3 (critical: refuses on its own).
    pub weight: u8,
    /// The Triggerfish pattern it corresponds to (§1.10 of the contract), if any.
    pub triggerfish: Option<&'static str>,
}

macro_rules! rules {
    ($($name:ident = $id:literal, $category:ident, $weight:literal, $tf:expr;)*) => {
        $(
            #[doc = concat!("`", $id, "`.")]
            pub const $name: Rule = Rule {
                id: $id,
                category: Category::$category,
                weight: $weight,
                triggerfish: $tf,
            };
        )*
        /// Every rule, in the order `docs/plugins.md` lists them.
        pub const ALL: &[Rule] = &[$($name),*];
    };
}

rules! {
    EVAL = "eval", CodeExecution, 3, Some("#9 eval(");
    FUNCTION_CONSTRUCTOR = "function-constructor", CodeExecution, 3, Some("#10 new Function(");
    STRING_TIMER = "string-timer", CodeExecution, 3, None;
    WORKER = "worker", CodeExecution, 3, None;
    NATIVE_CODE = "native-code", CodeExecution, 3, None;
    VM_MODULE = "vm-module", CodeExecution, 3, None;
    DATA_IMPORT = "data-import", CodeExecution, 3, None;
    BUILTIN_MODULE_LOADER = "builtin-module-loader", CodeExecution, 3, None;
    WEBASSEMBLY = "webassembly", CodeExecution, 2, None;
    PROMPT_INJECTION = "prompt-injection", PromptInjection, 3, Some("#1-#8");
    SUBPROCESS = "subprocess", Subprocess, 3, Some("#13 Deno.(run|command|exec)(");
    HIDDEN_CHARACTER = "hidden-character", HiddenCharacters, 3, Some("#17 zero-width characters");
    NETWORK_LISTENER = "network-listener", NetworkListener, 3, Some("#15 Deno.(listen|connect|listenTls|connectTls)(");
    ENVIRONMENT = "environment", Environment, 2, Some("#11 Deno.env.(get|toObject|set|delete|has)(");
    FILESYSTEM = "filesystem", Filesystem, 2, Some("#14 Deno.(readFile|readTextFile|writeFile|writeTextFile|remove|rename|mkdir)(");
    REMOTE_IMPORT = "remote-import", RemoteImport, 3, Some("#12 import(\"http(s)://");
    COMPUTED_IMPORT = "computed-import", RemoteImport, 2, None;
    BASE64_DECODE = "base64-decode", Obfuscation, 3, Some("#16 atob(");
    RUNTIME_DECODE = "runtime-decode", Obfuscation, 1, Some("#16 atob(");
    CHAR_CODES = "char-codes", Obfuscation, 2, None;
    ENCODED_STRING = "encoded-string", Obfuscation, 2, Some("#20 [A-Za-z0-9+/]{40,}");
    ESCAPED_STRING = "escaped-string", Obfuscation, 2, None;
    ESCAPED_IDENTIFIER = "escaped-identifier", Obfuscation, 3, None;
    ESCAPED_NON_ASCII_IDENTIFIER = "escaped-non-ascii-identifier", Obfuscation, 1, None;
    SHELL_DECODE = "shell-decode", Obfuscation, 3, Some("#18 base64 -d | echo … | sh");
    ROT13 = "rot13", Obfuscation, 2, Some("#19 rot13");
    UNRESOLVED_ACCESS = "unresolved-access", Obfuscation, 2, None;
    UNREADABLE = "unreadable", Unreadable, 3, None;
}

/// A weight at or above this refuses on its own (Triggerfish: "critical").
pub const CRITICAL_WEIGHT: u8 = 3;
/// A total at or above this refuses (Triggerfish's threshold).
pub const REFUSE_TOTAL: u32 = 4;
