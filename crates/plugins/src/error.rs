//! The one error type of this crate. Every message says what is wrong and what to do about it;
//! the tool-facing code of all of them is `plugin_error`.

use std::path::PathBuf;

use bosun_core::{ErrorCode, SpecError, ToolError};

/// Why a plugin, its configuration or the trust store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// A file or directory cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// What was read.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file cannot be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// What was written.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An enabled plugin's directory or `plugin.wasm` is missing.
    #[error("{path} does not exist: install the plugin there or fix `path` in [plugins.{local}]")]
    Missing {
        /// The plugin's local name.
        local: String,
        /// The missing path.
        path: PathBuf,
    },
    /// A plugin directory or `plugin.wasm` is a symbolic link.
    #[error(
        "{path} is a symbolic link, which Bosun does not follow for plugins: put the real {what} there"
    )]
    Symlink {
        /// The link.
        path: PathBuf,
        /// `directory` or `plugin.wasm`.
        what: &'static str,
    },
    /// `plugin.wasm` is not a regular file or is too large.
    #[error("{path} {problem}")]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        problem: String,
    },
    /// The bytes are not a WebAssembly component.
    #[error("not a valid WebAssembly component: {0}: rebuild the plugin for wasm32-wasip2")]
    NotWasm(String),
    /// A core module where a component is expected.
    #[error(
        "this is a core WebAssembly module, not a component: build the plugin for wasm32-wasip2 (cargo build --target wasm32-wasip2)"
    )]
    NotComponent,
    /// A core module that is not a usable Chock plugin.
    #[error("not a usable Chock plugin: {0}")]
    Chock(String),
    /// No metadata section anywhere in the component.
    #[error(
        "the component has no `bosun-plugin-metadata` custom section: build it with the Bosun SDK, which embeds the plugin's metadata"
    )]
    NoMetadata,
    /// More than one metadata section.
    #[error(
        "the component has {0} `bosun-plugin-metadata` custom sections: keep exactly one (is the SDK linked twice?)"
    )]
    DuplicateMetadata(usize),
    /// The metadata section is over the bound.
    #[error("the plugin metadata is {0} bytes: keep it within 262144 (256 KiB)")]
    MetadataTooLarge(usize),
    /// The metadata is not UTF-8 or not the expected JSON.
    #[error("the plugin metadata is malformed at line {line}, column {column}: {message}")]
    MetadataJson {
        /// 1-based line within the section.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser found.
        message: String,
    },
    /// A `metadata_version` this host does not read.
    #[error(
        "metadata_version {0} is not supported: this Bosun reads version 1; update Bosun or rebuild the plugin with a matching SDK"
    )]
    MetadataVersion(u32),
    /// A bad `api_version`.
    #[error("api_version `{version}` {problem}")]
    ApiVersion {
        /// As written.
        version: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// A plugin name with a control or hidden character.
    #[error("the plugin's name `{name}` {problem}")]
    PluginNameCharacters {
        /// The name, escaped.
        name: String,
        /// Which character, where, and what to do.
        problem: crate::metadata::NameCharacterError,
    },
    /// A bad plugin name.
    #[error(
        "invalid plugin name `{0}`: use 1-64 characters a-z, 0-9 and -, starting with a letter"
    )]
    BadPluginName(String),
    /// A version that is not semver.
    #[error(
        "version `{version}` is not a semantic version ({message}): use MAJOR.MINOR.PATCH, e.g. 0.1.0"
    )]
    BadVersion {
        /// As written.
        version: String,
        /// The parser's complaint.
        message: String,
    },
    /// The plugin's own description breaks a bound.
    #[error("plugin description: {0}")]
    PluginDescription(SpecError),
    /// The prompt is over 32 KiB.
    #[error("the plugin's prompt is {0} bytes: keep it within 32768 (32 KiB)")]
    PromptTooLarge(usize),
    /// The prompt holds a hidden character.
    #[error(
        "the plugin's prompt holds the invisible or control character U+{code:04X} at character {at}: remove it"
    )]
    PromptHiddenCharacter {
        /// The code point.
        code: u32,
        /// 0-based character index.
        at: usize,
    },
    /// More tools than the bound.
    #[error("the plugin declares {0} tools: declare at most 64")]
    TooManyTools(usize),
    /// Two tools share a name.
    #[error("the plugin declares tool `{0}` twice: give each tool its own name")]
    DuplicateTool(String),
    /// A tool is named like a built-in; the whole plugin is refused.
    #[error("plugin `{plugin}` declares tool `{tool}`, which shadows a built-in: rename the tool")]
    ShadowsBuiltin {
        /// The plugin's name.
        plugin: String,
        /// The tool.
        tool: String,
    },
    /// A tool breaks the tool contract.
    #[error("tool `{tool}`: {source}")]
    Tool {
        /// The tool as written.
        tool: String,
        /// The broken bound.
        source: SpecError,
    },
    /// A property name in a tool's input schema breaks the pattern.
    #[error(
        "tool `{tool}`: the input schema's property name {name:?} (at {at}) is not allowed: use 1-64 characters A-Z, a-z, 0-9, _ and -"
    )]
    BadPropertyName {
        /// The tool.
        tool: String,
        /// The property name.
        name: String,
        /// Where, as a JSON Pointer into the schema.
        at: String,
    },
    /// A capability entry is wrong.
    #[error("tool `{tool}`: capability `{capability}`: {problem}")]
    BadCapability {
        /// The tool.
        tool: String,
        /// The capability as declared.
        capability: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// A bad `[plugins.<local>]` entry in the user's config.
    #[error("{key}: {message}")]
    Config {
        /// The dotted key, e.g. `plugins.web.timeout_ms`.
        key: String,
        /// What to do.
        message: String,
    },
    /// A project plugin's local name is already used by a user plugin.
    #[error(
        "the project plugin directory `{local}` has the same local name as a plugin in your user config: rename the directory"
    )]
    LocalNameTaken {
        /// The name.
        local: String,
    },
    /// The trust store cannot be parsed.
    #[error(
        "{path}:{line}:{column}: {message}; correct that line, or move the file aside and trust each plugin again with `bosun plugins trust NAME` (nothing was changed)"
    )]
    TrustParse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The trust store parses but holds a bad value.
    #[error(
        "{path}: {key}: {message}; correct it, or move the file aside and trust each plugin again with `bosun plugins trust NAME` (nothing was changed)"
    )]
    TrustInvalid {
        /// The file.
        path: PathBuf,
        /// The dotted key.
        key: String,
        /// What to do.
        message: String,
    },
    /// A configured plugin directory holds none of the files that make a plugin.
    #[error(
        "{dir} holds no plugin.wasm (native), plugin.json (Forge) or mod.ts (Triggerfish): install the plugin there or fix `path` in [plugins.{local}]"
    )]
    NoPluginFile {
        /// The plugin's local name.
        local: String,
        /// The directory.
        dir: PathBuf,
    },
    /// A plugin directory holds the files of more than one format.
    #[error(
        "{dir} holds {files}: a plugin directory holds exactly one of plugin.wasm (native), plugin.json (Forge) or mod.ts (Triggerfish); remove the others or split the plugins into their own directories"
    )]
    AmbiguousFormat {
        /// The directory.
        dir: PathBuf,
        /// The files found, e.g. `plugin.wasm and plugin.json`.
        files: String,
    },
    /// A JavaScript plugin's source breaks one of the snapshot's rules (a link, a special file,
    /// a name that is not UTF-8, a bound).
    #[error("{path}: {problem}")]
    Source {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong and what to do.
        problem: String,
    },
    /// A manifest (`plugin.json`, or the `manifest` export of `mod.ts`) cannot be parsed; the
    /// position is the parser's.
    #[error("{path}:{line}:{column}: {message}")]
    ManifestSyntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong and what to do.
        message: String,
    },
    /// A manifest parses but breaks a rule of its format.
    #[error("{path}: {message}")]
    ManifestInvalid {
        /// The file.
        path: PathBuf,
        /// What is wrong (naming the field) and what to do.
        message: String,
    },
    /// A scaffold target exists already.
    #[error("{0} already exists: choose another name or directory")]
    AlreadyExists(PathBuf),
    /// A template path that would leave the new plugin's directory.
    #[error("template path `{0}` must be relative and stay inside the new plugin's directory")]
    BadTemplatePath(String),
}

impl PluginError {
    /// The stable code a tool result carries for this error.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::PluginError
    }

    /// This error as a tool error (`plugin_error`, not retryable).
    pub fn to_tool_error(&self) -> ToolError {
        ToolError::new(self.code(), self.to_string())
    }
}

impl From<PluginError> for ToolError {
    fn from(e: PluginError) -> Self {
        e.to_tool_error()
    }
}
