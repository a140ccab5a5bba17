//! `bosun plugins new NAME`: writes a new plugin (a Rust crate, a Forge or a Triggerfish plugin)
//! from template files, substituting the plugin's name. It creates one new directory and never
//! touches an existing one.

use std::path::{Component, Path, PathBuf};

use crate::PluginError;
use crate::metadata::is_plugin_name;

/// Writes `templates` (relative path, contents) under the new directory `dir`, replacing
/// `{{name}}` with `name` and `{{name_snake}}` with `name` with `-` turned into `_` (for Rust
/// identifiers and tool names). Refuses a `dir` that exists, a bad plugin name and a template
/// path that would leave `dir`; on a failure part-way, removes what it wrote. Returns the
/// files written, in template order.
pub fn scaffold(
    dir: &Path,
    name: &str,
    templates: &[(&str, &str)],
) -> Result<Vec<PathBuf>, PluginError> {
    if !is_plugin_name(name) {
        return Err(PluginError::BadPluginName(bosun_core::escape_hidden(name)));
    }
    for (path, _) in templates {
        let p = Path::new(path);
        let inside = !path.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
        if !inside {
            return Err(PluginError::BadTemplatePath((*path).to_owned()));
        }
    }
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| PluginError::Write { path, source }
    };
    if dir.symlink_metadata().is_ok() {
        return Err(PluginError::AlreadyExists(dir.to_owned()));
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(write_error(parent))?;
    }
    // `create_dir` fails if the directory appeared since the check: never write into one.
    std::fs::create_dir(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => PluginError::AlreadyExists(dir.to_owned()),
        _ => PluginError::Write {
            path: dir.to_owned(),
            source: e,
        },
    })?;
    let snake = name.replace('-', "_");
    let mut written = Vec::with_capacity(templates.len());
    for (path, contents) in templates {
        let target = dir.join(path);
        let text = contents
            .replace("{{name}}", name)
            .replace("{{name_snake}}", &snake);
        if let Err(e) = write_new(&target, &text) {
            // Best effort: the directory is ours, created above.
            let _ = std::fs::remove_dir_all(dir);
            return Err(e);
        }
        written.push(target);
    }
    Ok(written)
}

fn write_new(path: &Path, text: &str) -> Result<(), PluginError> {
    let error = |source| PluginError::Write {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    let mut file = options.open(path).map_err(error)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(error)
}

/// The Rust SDK's own files, written into a new plugin crate at `vendor/bosun-sdk/` so that the
/// crate builds anywhere without this repository (the SDK is not on crates.io yet). The crate's
/// `Cargo.toml` points `bosun-sdk` there with a relative `[patch.crates-io]`.
pub const VENDORED_SDK: &[(&str, &str)] = &[
    (
        "vendor/bosun-sdk/README.md",
        include_str!("../../sdk/README.md"),
    ),
    (
        "vendor/bosun-sdk/wit/v1/plugin.wit",
        include_str!("../../sdk/wit/v1/plugin.wit"),
    ),
    (
        "vendor/bosun-sdk/src/lib.rs",
        include_str!("../../sdk/src/lib.rs"),
    ),
    (
        "vendor/bosun-sdk/src/bindings.rs",
        include_str!("../../sdk/src/bindings.rs"),
    ),
    (
        "vendor/bosun-sdk/src/tools.rs",
        include_str!("../../sdk/src/tools.rs"),
    ),
    (
        "vendor/bosun-sdk/src/host.rs",
        include_str!("../../sdk/src/host.rs"),
    ),
    (
        "vendor/bosun-sdk/src/build.rs",
        include_str!("../../sdk/src/build.rs"),
    ),
    (
        "vendor/bosun-sdk/src/testing.rs",
        include_str!("../../sdk/src/testing.rs"),
    ),
    (
        "vendor/bosun-sdk/src/spec.rs",
        include_str!("../../sdk/src/spec.rs"),
    ),
    (
        "vendor/bosun-sdk/src/error.rs",
        include_str!("../../sdk/src/error.rs"),
    ),
    (
        "vendor/bosun-sdk/src/http.rs",
        include_str!("../../sdk/src/http.rs"),
    ),
    (
        "vendor/bosun-sdk/src/http/url.rs",
        include_str!("../../sdk/src/http/url.rs"),
    ),
];

/// The SDK's `Cargo.toml` as a vendored copy needs it: outside this repository's guest
/// workspace and its shared lints.
pub fn vendored_sdk_manifest() -> String {
    let original = include_str!("../../sdk/Cargo.toml");
    let mut out = String::new();
    let mut skipping_lints = false;
    for line in original.lines() {
        if line.starts_with("workspace = ") || line.starts_with("include = ") {
            continue;
        }
        if line == "[lints]" {
            skipping_lints = true;
            continue;
        }
        if skipping_lints {
            if line.starts_with('[') {
                skipping_lints = false;
            } else {
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The `[patch.crates-io]` lines that point a new crate's `bosun-sdk` at `sdk` (a path
/// relative to the crate, or absolute).
pub fn sdk_patch(sdk: &str) -> String {
    format!("\n[patch.crates-io]\nbosun-sdk = {{ path = {sdk:?} }}\n")
}

const RUST_TEMPLATES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../sdk/template/Cargo.toml.tmpl"),
    ),
    ("build.rs", include_str!("../../sdk/template/build.rs")),
    (".gitignore", include_str!("../../sdk/template/gitignore")),
    ("src/lib.rs", include_str!("../../sdk/template/src/lib.rs")),
    (
        "src/spec.rs",
        include_str!("../../sdk/template/src/spec.rs"),
    ),
    (
        "src/tests.rs",
        include_str!("../../sdk/template/src/tests.rs"),
    ),
];

/// The kind of plugin `bosun plugins new` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewKind {
    /// A Rust crate built into a WebAssembly component.
    Rust,
    /// A Forge plugin: `plugin.json` and `index.mjs`.
    Forge,
    /// A Triggerfish plugin: `mod.ts`.
    Triggerfish,
}

const FORGE_TEMPLATES: &[(&str, &str)] = &[
    (
        "plugin.json",
        r#"{
  "schemaVersion": 1,
  "apiVersion": "1",
  "name": "{{name}}",
  "version": "0.1.0",
  "entry": "./index.mjs",
  "capabilities": ["tools:register"]
}
"#,
    ),
    (
        "index.mjs",
        r#"// A Forge plugin: `activate` registers its tools. Bosun runs it in a WebAssembly sandbox.
export default function activate(api) {
  const inputSchema = api.z
    .object({ name: api.z.string().min(1).max(200).describe("Who to greet.") })
    .strict();

  api.registerTool({
    name: "greet",
    description: "Greets someone by name.",
    risk: "read",
    inputSchema,
    execute: async (input) => {
      const parsed = inputSchema.safeParse(input);
      if (!parsed.success) {
        return {
          ok: false,
          error: { code: "invalid_input", message: "Give a name to greet.", retryable: false },
        };
      }
      return { ok: true, output: { greeting: `Hello, ${parsed.data.name}!` }, truncated: false };
    },
  });
}
"#,
    ),
];

const TRIGGERFISH_TEMPLATES: &[(&str, &str)] = &[(
    "mod.ts",
    r#"// A Triggerfish plugin. Bosun strips the types and runs it in a WebAssembly sandbox.
export const manifest = {
  name: "{{name}}",
  version: "0.1.0",
  description: "Greets people.",
  classification: "PUBLIC",
  trust: "sandboxed",
  declaredEndpoints: [],
} as const;

export const toolDefinitions = [
  {
    name: "greet",
    description: "Greets someone by name.",
    parameters: { name: { type: "string", description: "Who to greet.", required: true } },
  },
];

export function createExecutor(_context: { pluginName: string }) {
  return async (name: string, input: Record<string, unknown>): Promise<string | null> => {
    if (name !== "greet") return null;
    return JSON.stringify({ greeting: `Hello, ${String(input.name ?? "")}!` });
  };
}
"#,
)];

/// Writes a new plugin of `kind` named `name` in the new directory `dir` (see [`scaffold`]): a
/// Rust crate (with the SDK vendored at `vendor/bosun-sdk`, or patched to `sdk_path`), a Forge
/// or a Triggerfish plugin. Returns the files written.
pub fn new_plugin(
    dir: &Path,
    name: &str,
    kind: NewKind,
    sdk_path: Option<&Path>,
) -> Result<Vec<PathBuf>, PluginError> {
    match kind {
        NewKind::Forge => scaffold(dir, name, FORGE_TEMPLATES),
        NewKind::Triggerfish => scaffold(dir, name, TRIGGERFISH_TEMPLATES),
        NewKind::Rust => {
            // The SDK goes with the crate (`vendor/bosun-sdk`), so it builds anywhere; or the
            // user names a checkout of the SDK.
            let mut templates: Vec<(&str, &str)> = RUST_TEMPLATES.to_vec();
            let manifest = vendored_sdk_manifest();
            if sdk_path.is_none() {
                templates.extend_from_slice(VENDORED_SDK);
                templates.push(("vendor/bosun-sdk/Cargo.toml", &manifest));
            }
            let written = scaffold(dir, name, &templates)?;
            let patch = match sdk_path {
                Some(sdk) => sdk_patch(&sdk.display().to_string()),
                None => sdk_patch("vendor/bosun-sdk"),
            };
            let cargo_toml = dir.join("Cargo.toml");
            let mut text =
                std::fs::read_to_string(&cargo_toml).map_err(|source| PluginError::Read {
                    path: cargo_toml.clone(),
                    source,
                })?;
            text.push_str(&patch);
            std::fs::write(&cargo_toml, text).map_err(|source| PluginError::Write {
                path: cargo_toml.clone(),
                source,
            })?;
            Ok(written)
        }
    }
}
