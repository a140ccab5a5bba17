//! A Triggerfish plugin's manifest (Triggerfish at `adfaa9f`, `src/plugin/loader.ts`), read from
//! `mod.ts` without running it.
//!
//! Triggerfish imports `mod.ts` and validates the object its `manifest` export holds. Bosun
//! reads metadata without running plugin code, so it parses `mod.ts` (as TypeScript, with oxc)
//! and reads the export **statically**. This is a deliberate deviation: the manifest must be a
//! literal object so Bosun can read it without running the plugin. Accepted forms:
//!
//! ```ts
//! export const manifest = { name: "weather", /* … */ };
//! export const manifest: PluginManifest = { trust: "sandboxed" as const, /* … */ };
//! export const manifest = { /* … */ } as const;
//! export const manifest = { /* … */ } satisfies PluginManifest;
//! const manifest = { /* … */ };
//! export { manifest };
//! ```
//!
//! The value is an object literal whose keys are names or strings and whose values are string,
//! number, boolean or `null` literals, templates without substitutions, and arrays and objects
//! of the same; type assertions (`as`, `satisfies`, `!`, `<T>`) and parentheses are looked
//! through. The binding must be a top-level `const`. Anything else — a spread, a computed key, a
//! getter or method, a shorthand property, a function call, a variable, an import, `let` — makes
//! the plugin invalid with that reason and the position.
//!
//! The manifest is then checked as Triggerfish's `validatePluginManifest` does: `name` matches
//! `^[a-z][a-z0-9-]*$` and equals the directory name; `version` and `description` are non-empty
//! strings; `classification` is exactly `PUBLIC`, `INTERNAL`, `CONFIDENTIAL` or `RESTRICTED`;
//! `trust` is required and exactly `sandboxed` or `trusted`; `declaredEndpoints` is a required
//! array of strings. Other keys are ignored, as by Triggerfish. Bosun is stricter in that:
//! `name` has at most 64 characters; `version` and `description` hold no control, bidi or
//! zero-width characters and `description` at most 1,024 characters; and every endpoint must be
//! an `http` or `https` URL with a host and without user info, because Bosun enforces them: the
//! authorities (`host[:port]`, the port only when not the scheme's default) are what the plugin's
//! `net.http` grant allows.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use bosun_core::{Authority, Classification};
use oxc::allocator::Allocator;
use oxc::ast::ast::{
    ArrayExpressionElement, BindingPattern, Declaration, Expression, ModuleExportName,
    ObjectPropertyKind, PropertyKey, PropertyKind, Statement, UnaryOperator,
    VariableDeclarationKind, VariableDeclarator,
};
use oxc::parser::Parser;
use oxc::span::{GetSpan, SourceType, Span};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::PluginError;
use crate::discovery::TRIGGERFISH_ENTRY;
use crate::line_col;
use crate::source::SourceSnapshot;
use crate::typescript::{ParseGuard, diagnostic_message, diagnostic_position, on_parser_stack};

/// Longest plugin name Bosun accepts (Triggerfish sets no bound).
pub const MAX_TRIGGERFISH_NAME: usize = 64;
/// Longest description, in characters (Bosun's bound for every description).
pub const MAX_TRIGGERFISH_DESCRIPTION: usize = 1024;
/// Deepest nesting of arrays and objects in a static manifest.
const MAX_LITERAL_DEPTH: usize = 16;

/// The reason every manifest Bosun cannot read statically is refused with.
pub const NOT_LITERAL: &str =
    "the manifest must be a literal object so Bosun can read it without running the plugin";

/// The trust a Triggerfish manifest asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ManifestTrust {
    /// The default: the plugin gets what its declared endpoints allow.
    Sandboxed,
    /// Asks for the few host values Triggerfish's trusted plugins read; a trust review shows it
    /// as the capability `triggerfish:trusted`.
    Trusted,
}

impl fmt::Display for ManifestTrust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sandboxed => "sandboxed",
            Self::Trusted => "trusted",
        })
    }
}

/// A checked Triggerfish manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TriggerfishManifest {
    /// The plugin's name, equal to its directory's.
    pub name: String,
    /// Its version (any non-empty text; Triggerfish does not check semver).
    pub version: String,
    /// What it does.
    pub description: String,
    /// The classification of what its tools return.
    pub classification: Classification,
    /// The trust it asks for.
    pub trust: ManifestTrust,
    /// `declaredEndpoints` as written.
    pub declared_endpoints: Vec<String>,
    /// The authorities (host, and the port when it is not the scheme's default) of the
    /// endpoints, sorted, each once: what Bosun lets the plugin's HTTP reach. Read here, with the
    /// manifest; the runtime only consumes them.
    pub endpoint_authorities: Vec<Authority>,
    /// Bosun's extension `bosun: { codeFromStrings: true }`: the plugin may use `eval` and
    /// `Function` (refused otherwise).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub code_from_strings: bool,
}

impl TriggerfishManifest {
    /// Reads the manifest from `mod.ts` in the snapshot of the plugin directory `dir` (whose
    /// name the manifest's `name` must equal).
    pub fn from_snapshot(snapshot: &SourceSnapshot, dir: &Path) -> Result<Self, PluginError> {
        let path = dir.join(TRIGGERFISH_ENTRY);
        let Some(file) = snapshot.get(TRIGGERFISH_ENTRY) else {
            return Err(PluginError::ManifestInvalid {
                path,
                message: "is missing: a Triggerfish plugin's directory holds mod.ts".to_owned(),
            });
        };
        let source =
            std::str::from_utf8(&file.bytes).map_err(|e| PluginError::ManifestInvalid {
                path: path.clone(),
                message: format!("is not UTF-8 text ({e}): save the module as UTF-8"),
            })?;
        let value = static_manifest(source, &path)?;
        Self::from_value(&value, &path, crate::discovery::dir_name(dir).as_deref())
    }

    /// Checks a manifest value as Triggerfish's `validatePluginManifest` does, plus Bosun's
    /// stricter rules (see the module documentation). `path` names `mod.ts` in errors.
    pub fn from_value(
        value: &Value,
        path: &Path,
        dir_name: Option<&str>,
    ) -> Result<Self, PluginError> {
        let invalid = |message: String| PluginError::ManifestInvalid {
            path: path.to_owned(),
            message,
        };
        let Some(object) = value.as_object() else {
            return Err(invalid(
                "`manifest` is not an object: export an object literal".to_owned(),
            ));
        };
        let string = |key: &str| -> Result<&str, PluginError> {
            match object.get(key) {
                Some(Value::String(s)) if !s.is_empty() => Ok(s),
                Some(Value::String(_)) => Err(invalid(format!(
                    "manifest `{key}` is empty: write it as a non-empty string"
                ))),
                Some(other) => Err(invalid(format!(
                    "manifest `{key}` is {}, not a string: write it as a non-empty string",
                    kind(other)
                ))),
                None => Err(invalid(format!(
                    "manifest `{key}` is missing: add it as a non-empty string"
                ))),
            }
        };
        let name = string("name")?;
        if let Err(problem) = crate::metadata::check_name_characters(name) {
            return Err(invalid(format!(
                "manifest `name` `{}` {problem}",
                crate::metadata::escape_name(name)
            )));
        }
        if !crate::metadata::is_plugin_name(name) {
            return Err(invalid(format!(
                "manifest `name` {name:?} is not a valid Triggerfish plugin name: use 1-{MAX_TRIGGERFISH_NAME} characters a-z, 0-9 and -, starting with a letter"
            )));
        }
        let version = string("version")?;
        check_visible("version", version).map_err(|e| invalid(e.to_string()))?;
        let description = string("description")?;
        check_visible("description", description).map_err(|e| invalid(e.to_string()))?;
        let chars = description.chars().count();
        if chars > MAX_TRIGGERFISH_DESCRIPTION {
            return Err(invalid(format!(
                "manifest `description` has {chars} characters: shorten it to at most {MAX_TRIGGERFISH_DESCRIPTION}"
            )));
        }
        let classification = match object.get("classification") {
            Some(Value::String(label)) => Classification::from_str(label)
                .map_err(|e| invalid(format!("manifest `classification`: {e}")))?,
            Some(other) => {
                return Err(invalid(format!(
                    "manifest `classification` is {}: use one of \"PUBLIC\", \"INTERNAL\", \"CONFIDENTIAL\", \"RESTRICTED\"",
                    kind(other)
                )));
            }
            None => {
                return Err(invalid(
                    "manifest `classification` is missing: add one of \"PUBLIC\", \"INTERNAL\", \"CONFIDENTIAL\", \"RESTRICTED\"".to_owned(),
                ));
            }
        };
        let trust = match object.get("trust") {
            Some(Value::String(t)) if t == "sandboxed" => ManifestTrust::Sandboxed,
            Some(Value::String(t)) if t == "trusted" => ManifestTrust::Trusted,
            Some(other) => {
                return Err(invalid(format!(
                    "manifest `trust` is {other}: write \"sandboxed\" or \"trusted\""
                )));
            }
            None => {
                return Err(invalid(
                    "manifest `trust` is missing: Triggerfish requires it; write \"sandboxed\" (or \"trusted\")".to_owned(),
                ));
            }
        };
        let endpoints = match object.get("declaredEndpoints") {
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(invalid(format!(
                    "manifest `declaredEndpoints` is {}: write an array of URL strings (it may be empty)",
                    kind(other)
                )));
            }
            None => {
                return Err(invalid(
                    "manifest `declaredEndpoints` is missing: add an array of the URLs the plugin reaches (it may be empty)".to_owned(),
                ));
            }
        };
        let mut declared_endpoints = Vec::new();
        let mut authorities = BTreeSet::new();
        for (i, item) in endpoints.iter().enumerate() {
            let Value::String(endpoint) = item else {
                return Err(invalid(format!(
                    "manifest `declaredEndpoints[{i}]` is {}, not a string: write each endpoint as a URL string",
                    kind(item)
                )));
            };
            let authority = endpoint_authority(endpoint).map_err(|problem| {
                invalid(format!(
                    "manifest `declaredEndpoints[{i}]` {endpoint:?} {problem}"
                ))
            })?;
            declared_endpoints.push(endpoint.clone());
            authorities.insert(authority);
        }
        let extension: crate::forge::BosunExtension = match object.get("bosun") {
            None => crate::forge::BosunExtension::default(),
            Some(value) => serde_json::from_value(value.clone()).map_err(|e| {
                invalid(format!(
                    "manifest `bosun` is not Bosun's extension ({e}): write `bosun: {{ codeFromStrings: true }}` or leave it out"
                ))
            })?,
        };
        if dir_name != Some(name) {
            return Err(invalid(format!(
                "manifest `name` is {name:?} but the plugin's directory is {:?}: Triggerfish requires them to be equal; rename the directory or change `name`",
                dir_name.unwrap_or("")
            )));
        }
        Ok(Self {
            name: name.to_owned(),
            version: version.to_owned(),
            description: description.to_owned(),
            classification,
            trust,
            declared_endpoints,
            endpoint_authorities: authorities.into_iter().collect(),
            code_from_strings: extension.code_from_strings,
        })
    }

    /// The capabilities as trust records them: `net.http:<authority>` for each endpoint, and
    /// `triggerfish:trusted` when the manifest asks for trust.
    pub fn trust_capabilities(&self) -> BTreeSet<String> {
        let mut caps: BTreeSet<String> = self
            .endpoint_authorities
            .iter()
            .map(|a| format!("net.http:{a}"))
            .collect();
        if self.trust == ManifestTrust::Trusted {
            caps.insert("triggerfish:trusted".to_owned());
        }
        if self.code_from_strings {
            caps.insert(crate::forge::CODE_FROM_STRINGS.to_owned());
        }
        caps
    }

    /// Whether `runtime` — the `manifest` the plugin exported once activated — says what the
    /// static reading said, field by field (name, version, description, classification, trust,
    /// declaredEndpoints). Code can change an exported object after Bosun read its literal; a
    /// host that finds a difference must not use the plugin. `Err` names the first field that
    /// differs.
    pub fn check_runtime(&self, runtime: &Value) -> Result<(), ManifestChanged> {
        let fields: [(&str, Value); 6] = [
            ("name", Value::from(self.name.as_str())),
            ("version", Value::from(self.version.as_str())),
            ("description", Value::from(self.description.as_str())),
            (
                "classification",
                Value::from(self.classification.to_string()),
            ),
            ("trust", Value::from(self.trust.to_string())),
            (
                "declaredEndpoints",
                Value::from(self.declared_endpoints.clone()),
            ),
        ];
        for (key, expected) in fields {
            if runtime.get(key) != Some(&expected) {
                return Err(ManifestChanged { field: key });
            }
        }
        Ok(())
    }
}

/// The manifest a Triggerfish plugin exports at run time differs from the literal that was
/// reviewed ([`TriggerfishManifest::check_runtime`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the plugin's manifest `{field}` at run time differs from the literal in mod.ts that was reviewed: the plugin changes its own manifest; it is not loaded"
)]
pub struct ManifestChanged {
    /// The first field that differs.
    pub field: &'static str,
}

/// A manifest text field holds an invisible (or, in `version`, a control) character.
#[derive(Debug, thiserror::Error)]
#[error("manifest `{key}` holds the invisible or control character U+{code:04X}: remove it")]
struct InvisibleCharacter {
    key: &'static str,
    code: u32,
}

fn check_visible(key: &'static str, text: &str) -> Result<(), InvisibleCharacter> {
    match text
        .chars()
        .find(|&c| bosun_core::is_hidden_char(c) || (key == "version" && c.is_control()))
    {
        Some(c) => Err(InvisibleCharacter {
            key,
            code: c as u32,
        }),
        None => Ok(()),
    }
}

/// Why a Triggerfish endpoint cannot be granted ([`endpoint_authority`]); each message follows
/// the endpoint it is about and says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// A space, invisible or control character.
    #[error("holds the space, invisible or control character U+{0:04X}: remove it")]
    Character(u32),
    /// Not a URL.
    #[error("is not a URL ({0}): write an http or https URL such as \"https://api.example.com\"")]
    NotAUrl(url::ParseError),
    /// A scheme other than http and https.
    #[error("has the scheme `{0}`: Bosun lets plugins reach http and https URLs only")]
    Scheme(String),
    /// A user name or password in the URL.
    #[error(
        "holds user info: remove it (credentials belong in the plugin's config, not its manifest)"
    )]
    UserInfo,
    /// No host.
    #[error("has no host: write the URL with its host")]
    NoHost,
    /// A host that is not a host name by Bosun's one rule ([`bosun_core::is_host_name`]).
    #[error(
        "has the host `{0}`, which is not a host name: write dot-separated labels of a-z, 0-9, `-` and `_` (such as \"https://api.example.com\")"
    )]
    HostName(String),
}

/// `a string`, `a number`… for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The authority Bosun grants for an endpoint: the lowercase host and the port when it is not
/// the scheme's default.
pub fn endpoint_authority(endpoint: &str) -> Result<Authority, EndpointError> {
    if let Some(c) = endpoint
        .chars()
        .find(|&c| c.is_whitespace() || c.is_control() || bosun_core::is_hidden_char(c))
    {
        return Err(EndpointError::Character(c as u32));
    }
    let url = url::Url::parse(endpoint).map_err(EndpointError::NotAUrl)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(EndpointError::Scheme(url.scheme().to_owned()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(EndpointError::UserInfo);
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) if !d.is_empty() => {
            let name = d.to_ascii_lowercase();
            let name = name.strip_suffix('.').unwrap_or(&name).to_owned();
            if !bosun_core::is_host_name(&name) {
                return Err(EndpointError::HostName(name));
            }
            name
        }
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        _ => return Err(EndpointError::NoHost),
    };
    Ok(Authority::new(&host, url.port()))
}

/// The value of `mod.ts`'s `manifest` export, read from its literal without running anything.
/// `path` names the file in errors.
pub fn static_manifest(source: &str, path: &Path) -> Result<Value, PluginError> {
    let at = |offset: u32, message: String| {
        let (line, column) = line_col(source, offset as usize);
        PluginError::ManifestSyntax {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    };
    let work = || -> Result<Value, PluginError> {
        let allocator = Allocator::default();
        let parsed = Parser::new(&allocator, source, SourceType::ts().with_module(true)).parse();
        if let Some(first) = parsed.diagnostics.first() {
            let (line, column) = diagnostic_position(source, first);
            return Err(PluginError::ManifestSyntax {
                path: path.to_owned(),
                line,
                column,
                message: format!(
                    "{}: fix the TypeScript so Bosun can read the manifest",
                    diagnostic_message(first)
                ),
            });
        }
        if parsed.panicked {
            return Err(at(
                0,
                "the TypeScript parser gave up on this file: fix its syntax".to_owned(),
            ));
        }
        let init = find_manifest(&parsed.program.body).map_err(|r| at(r.offset, r.message))?;
        literal(init, 0).map_err(|r| at(r.offset, r.message))
    };
    match on_parser_stack(source, work) {
        Ok(result) => result,
        Err(ParseGuard::TooDense(problem) | ParseGuard::Thread(problem)) => {
            Err(PluginError::ManifestInvalid {
                path: path.to_owned(),
                message: problem,
            })
        }
    }
}

/// Why the manifest cannot be read, and where.
struct Refusal {
    offset: u32,
    message: String,
}

impl Refusal {
    fn at(span: Span, why: impl fmt::Display) -> Self {
        Self {
            offset: span.start,
            message: format!("{NOT_LITERAL}: {why}"),
        }
    }
}

/// The initialiser of the top-level `const` that the module exports as `manifest`.
fn find_manifest<'s, 'a>(body: &'s [Statement<'a>]) -> Result<&'s Expression<'a>, Refusal> {
    const NAME: &str = "manifest";
    // Top-level variable declarators by name, and the local names exported as `manifest`.
    let mut declared: BTreeMap<
        &str,
        Vec<(VariableDeclarationKind, bool, &VariableDeclarator<'a>)>,
    > = BTreeMap::new();
    let mut exported: Vec<(&str, Span)> = Vec::new();
    let mut star_export: Option<Span> = None;
    for statement in body {
        match statement {
            Statement::VariableDeclaration(v) => {
                for d in &v.declarations {
                    if let BindingPattern::BindingIdentifier(id) = &d.id {
                        declared
                            .entry(id.name.as_str())
                            .or_default()
                            .push((v.kind, v.declare, d));
                    }
                }
            }
            Statement::ExportDeclaration(e) => match &e.declaration {
                Declaration::VariableDeclaration(v) => {
                    for d in &v.declarations {
                        match &d.id {
                            BindingPattern::BindingIdentifier(id) => {
                                let name = id.name.as_str();
                                declared
                                    .entry(name)
                                    .or_default()
                                    .push((v.kind, v.declare, d));
                                if name == NAME {
                                    exported.push((name, d.span));
                                }
                            }
                            _ => {
                                return Err(Refusal::at(
                                    d.span,
                                    "a destructuring export may bind `manifest`; export it as `export const manifest = { … }`",
                                ));
                            }
                        }
                    }
                }
                Declaration::FunctionDeclaration(f)
                    if f.id.as_ref().is_some_and(|id| id.name == NAME) =>
                {
                    return Err(Refusal::at(f.span, "`manifest` is exported as a function"));
                }
                Declaration::ClassDeclaration(c)
                    if c.id.as_ref().is_some_and(|id| id.name == NAME) =>
                {
                    return Err(Refusal::at(c.span, "`manifest` is exported as a class"));
                }
                _ => {}
            },
            Statement::ExportNamedDeclaration(n) => {
                for s in &n.specifiers {
                    if s.exported.name() == NAME {
                        match &s.local {
                            ModuleExportName::IdentifierReference(local) => {
                                exported.push((local.name.as_str(), s.span));
                            }
                            _ => {
                                return Err(Refusal::at(
                                    s.span,
                                    "`manifest` is exported under a string name",
                                ));
                            }
                        }
                    }
                }
            }
            Statement::ExportFromDeclaration(f)
                if f.specifiers.iter().any(|s| s.exported.name() == NAME) =>
            {
                return Err(Refusal::at(
                    f.span,
                    "`manifest` is re-exported from another module; declare it in mod.ts",
                ));
            }
            Statement::ExportAllDeclaration(a) => {
                if a.exported.as_ref().is_some_and(|e| e.name() == NAME) {
                    return Err(Refusal::at(
                        a.span,
                        "`manifest` is re-exported from another module; declare it in mod.ts",
                    ));
                }
                star_export.get_or_insert(a.span);
            }
            _ => {}
        }
    }
    let (local, export_span) = match exported.as_slice() {
        [one] => *one,
        [] => {
            let message = match star_export {
                Some(_) => {
                    "mod.ts does not declare a `manifest` export (an `export *` from another module may provide one, which Bosun does not read): add `export const manifest = { name, version, description, classification, trust, declaredEndpoints }`"
                }
                None => {
                    "mod.ts does not export `manifest`: add `export const manifest = { name, version, description, classification, trust, declaredEndpoints }`"
                }
            };
            return Err(Refusal {
                offset: star_export.map_or(0, |s| s.start),
                message: message.to_owned(),
            });
        }
        [_, (_, second), ..] => {
            return Err(Refusal::at(
                *second,
                "`manifest` is exported more than once",
            ));
        }
    };
    let declarators = declared.get(local).map(Vec::as_slice).unwrap_or_default();
    let (kind, declare, declarator) = match declarators {
        [one] => *one,
        [] => {
            return Err(Refusal::at(
                export_span,
                format!(
                    "`{local}` is not a top-level `const` of mod.ts (imported, or declared in a block)"
                ),
            ));
        }
        [_, (_, _, second), ..] => {
            return Err(Refusal::at(
                second.span,
                format!("`{local}` is declared more than once"),
            ));
        }
    };
    if kind != VariableDeclarationKind::Const {
        return Err(Refusal::at(
            declarator.span,
            format!(
                "`{local}` is declared with `{}`; declare it `const` so it cannot be reassigned after Bosun reads it",
                match kind {
                    VariableDeclarationKind::Var => "var",
                    VariableDeclarationKind::Let => "let",
                    _ => "using",
                }
            ),
        ));
    }
    match (&declarator.init, declare) {
        (Some(init), false) => Ok(init),
        _ => Err(Refusal::at(
            declarator.span,
            format!("`{local}` has no value in mod.ts (a `declare const`)"),
        )),
    }
}

/// The JSON value of a literal expression.
fn literal(expr: &Expression<'_>, depth: usize) -> Result<Value, Refusal> {
    if depth > MAX_LITERAL_DEPTH {
        return Err(Refusal::at(
            expr.span(),
            format!("it nests more than {MAX_LITERAL_DEPTH} levels deep"),
        ));
    }
    let expr = expr.get_inner_expression();
    match expr {
        Expression::StringLiteral(s) if !s.lone_surrogates => Ok(Value::from(s.value.as_str())),
        Expression::TemplateLiteral(t) if t.expressions.is_empty() => match t.quasis.as_slice() {
            [q] if !q.lone_surrogates => match &q.value.cooked {
                Some(cooked) => Ok(Value::from(cooked.as_str())),
                None => Err(Refusal::at(t.span, "a template with an invalid escape")),
            },
            _ => Err(Refusal::at(t.span, "a template that is not plain text")),
        },
        Expression::NumericLiteral(n) => number(n.value, n.span),
        Expression::UnaryExpression(u) if u.operator == UnaryOperator::UnaryNegation => {
            match u.argument.get_inner_expression() {
                Expression::NumericLiteral(n) => number(-n.value, u.span),
                _ => Err(Refusal::at(u.span, "a computed number")),
            }
        }
        Expression::BooleanLiteral(b) => Ok(Value::Bool(b.value)),
        Expression::NullLiteral(_) => Ok(Value::Null),
        Expression::ArrayExpression(a) => {
            let mut items = Vec::with_capacity(a.elements.len());
            for element in &a.elements {
                match element {
                    ArrayExpressionElement::SpreadElement(s) => {
                        return Err(Refusal::at(s.span, "a spread (`...`) in an array"));
                    }
                    ArrayExpressionElement::Elision(e) => {
                        return Err(Refusal::at(e.span, "a hole in an array"));
                    }
                    element => match element.as_expression() {
                        Some(item) => items.push(literal(item, depth + 1)?),
                        None => return Err(Refusal::at(element.span(), "an array element")),
                    },
                }
            }
            Ok(Value::Array(items))
        }
        Expression::ObjectExpression(o) => {
            let mut map = Map::new();
            for property in &o.properties {
                let p = match property {
                    ObjectPropertyKind::SpreadProperty(s) => {
                        return Err(Refusal::at(s.span, "a spread (`...`) in an object"));
                    }
                    ObjectPropertyKind::ObjectProperty(p) => p,
                };
                if p.kind != PropertyKind::Init || p.method {
                    return Err(Refusal::at(p.span, "a getter, setter or method"));
                }
                if p.computed {
                    return Err(Refusal::at(p.span, "a computed key (`[…]:`)"));
                }
                if p.shorthand {
                    return Err(Refusal::at(
                        p.span,
                        "a shorthand property, which takes a variable's value",
                    ));
                }
                let key = match &p.key {
                    PropertyKey::StaticIdentifier(id) => id.name.as_str(),
                    PropertyKey::StringLiteral(s) if !s.lone_surrogates => s.value.as_str(),
                    other => {
                        return Err(Refusal::at(
                            other.span(),
                            "a key that is not a name or a string",
                        ));
                    }
                };
                let value = literal(&p.value, depth + 1)?;
                if map.insert(key.to_owned(), value).is_some() {
                    return Err(Refusal::at(
                        p.span,
                        format!("the key `{key}` is written twice"),
                    ));
                }
            }
            Ok(Value::Object(map))
        }
        Expression::Identifier(id) => Err(Refusal::at(
            id.span,
            format!("`{}` is a variable, not a literal", id.name),
        )),
        Expression::CallExpression(c) => Err(Refusal::at(c.span, "a function call")),
        Expression::TemplateLiteral(t) => Err(Refusal::at(
            t.span,
            "a template with substitutions (`${…}`)",
        )),
        other => Err(Refusal::at(
            other.span(),
            "an expression that is not a literal",
        )),
    }
}

fn number(value: f64, span: Span) -> Result<Value, Refusal> {
    serde_json::Number::from_f64(value)
        .map(|n| {
            // Integers as integers, as JSON.stringify writes them.
            if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
                Value::from(value as i64)
            } else {
                Value::Number(n)
            }
        })
        .ok_or_else(|| Refusal::at(span, "a number JSON cannot hold"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::source::SourceFile;

    const WEATHER: &str = r#"export const manifest = {
  name: "weather",
  version: "1.0.0",
  description: "Väderprognosfrågor",
  classification: "PUBLIC" as const,
  trust: "sandboxed" as const,
  declaredEndpoints: ["https://api.weather.com"],
};

export const toolDefinitions = [
  { name: "forecast", description: "Hämta väderprognosen för en stad.", parameters: {} },
];

export function createExecutor(context) {
  return async (name, input) => null;
}
"#;

    fn read(source: &str) -> Result<TriggerfishManifest, PluginError> {
        let snapshot = SourceSnapshot::from_files(vec![SourceFile {
            path: "mod.ts".to_owned(),
            bytes: Arc::from(source.as_bytes()),
        }])
        .unwrap();
        TriggerfishManifest::from_snapshot(&snapshot, Path::new("/plugins/weather"))
    }

    fn extract(source: &str) -> Result<Value, PluginError> {
        static_manifest(source, Path::new("mod.ts"))
    }

    fn weather_value() -> Value {
        json!({
            "name": "weather",
            "version": "1.0.0",
            "description": "Väderprognosfrågor",
            "classification": "PUBLIC",
            "trust": "sandboxed",
            "declaredEndpoints": ["https://api.weather.com"],
        })
    }

    fn not_literal(source: &str) -> String {
        match extract(source) {
            Ok(v) => panic!("read statically: {v}"),
            Err(e) => {
                let text = e.to_string();
                assert!(text.contains(NOT_LITERAL), "{text}");
                text
            }
        }
    }

    fn check(value: &Value) -> Result<TriggerfishManifest, PluginError> {
        TriggerfishManifest::from_value(value, Path::new("mod.ts"), Some("weather"))
    }

    fn with(key: &str, value: Value) -> Value {
        let mut m = weather_value();
        m[key] = value;
        m
    }

    fn without(key: &str) -> Value {
        let mut m = weather_value();
        m.as_object_mut().unwrap().remove(key);
        m
    }

    fn refusal(value: &Value) -> String {
        match check(value) {
            Ok(m) => panic!("accepted: {m:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_triggerfish_plugin_name_with_terminal_controls_is_refused_naming_the_character() {
        crate::metadata::assert_refuses_hostile_names(|name| refusal(&with("name", json!(name))));
    }

    #[test]
    fn bosuns_extension_asks_for_code_from_strings_and_is_read_strictly() {
        let m = check(&with("bosun", json!({"codeFromStrings": true}))).unwrap();
        assert!(m.code_from_strings);
        assert!(m.trust_capabilities().contains(crate::CODE_FROM_STRINGS));
        assert!(!check(&weather_value()).unwrap().code_from_strings);
        assert!(refusal(&with("bosun", json!({"eval": true}))).contains("manifest `bosun`"));
        assert!(
            refusal(&with("bosun", json!({"codeFromStrings": "yes"}))).contains("manifest `bosun`")
        );
    }

    #[test]
    fn the_guide_example_is_read_and_checked() {
        assert_eq!(
            read(WEATHER).unwrap(),
            TriggerfishManifest {
                name: "weather".to_owned(),
                version: "1.0.0".to_owned(),
                description: "Väderprognosfrågor".to_owned(),
                classification: Classification::Public,
                trust: ManifestTrust::Sandboxed,
                declared_endpoints: vec!["https://api.weather.com".to_owned()],
                endpoint_authorities: vec![Authority::new("api.weather.com", None)],
                code_from_strings: false,
            }
        );
    }

    #[test]
    fn a_plain_literal_is_read() {
        let v = extract(
            r#"export const manifest = { name: "weather", 'version': `1.0.0`, n: -1.5, ok: true, none: null, nested: { list: ["a", 2] } };"#,
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"name": "weather", "version": "1.0.0", "n": -1.5, "ok": true, "none": null, "nested": {"list": ["a", 2]}})
        );
    }

    #[test]
    fn as_const_is_looked_through() {
        let v = extract(r#"export const manifest = ({ name: "weather" as const }) as const;"#);
        assert_eq!(v.unwrap(), json!({"name": "weather"}));
    }

    #[test]
    fn satisfies_is_looked_through() {
        let v = extract(
            r#"import type { PluginManifest } from "../../src/plugin/types.ts";
export const manifest = { name: "weather" } satisfies PluginManifest;"#,
        );
        assert_eq!(v.unwrap(), json!({"name": "weather"}));
    }

    #[test]
    fn a_type_annotation_is_ignored() {
        let v = extract(
            r#"import type { PluginManifest } from "triggerfish/plugin/types.ts";
export const manifest: PluginManifest = <PluginManifest>{ name: "weather" };"#,
        );
        assert_eq!(v.unwrap(), json!({"name": "weather"}));
    }

    #[test]
    fn a_separate_export_clause_is_read() {
        let v = extract(
            r#"const manifest = { name: "weather" };
const other = { name: "other" };
export { manifest, other };"#,
        );
        assert_eq!(v.unwrap(), json!({"name": "weather"}));
        let renamed = extract(r#"const m = { name: "weather" }; export { m as manifest };"#);
        assert_eq!(renamed.unwrap(), json!({"name": "weather"}));
    }

    #[test]
    fn a_computed_key_is_not_literal() {
        let text = not_literal(
            "const k = \"trust\";\nexport const manifest = {\n  name: \"weather\",\n  [k]: \"trusted\",\n};",
        );
        assert!(text.starts_with("mod.ts:4:3:"), "{text}");
        assert!(text.contains("a computed key"), "{text}");
    }

    #[test]
    fn a_spread_is_not_literal() {
        let text = not_literal(
            r#"const base = { trust: "trusted" }; export const manifest = { name: "weather", ...base };"#,
        );
        assert!(text.contains("a spread"), "{text}");
        assert!(
            not_literal(
                r#"const e = ["x"]; export const manifest = { declaredEndpoints: [...e] };"#
            )
            .contains("a spread")
        );
    }

    #[test]
    fn a_function_call_is_not_literal() {
        let text =
            not_literal(r#"export const manifest = { name: "weather", version: getVersion() };"#);
        assert!(text.contains("a function call"), "{text}");
        assert!(
            not_literal(r#"export const manifest = makeManifest();"#).contains("a function call")
        );
    }

    #[test]
    fn other_dynamic_forms_are_not_literal() {
        for (source, why) in [
            (
                r#"const v = "1"; export const manifest = { version: v };"#,
                "is a variable",
            ),
            (
                r#"const name = "x"; export const manifest = { name };"#,
                "a shorthand property",
            ),
            (
                r#"export const manifest = { get trust() { return "trusted"; } };"#,
                "a getter",
            ),
            (
                r#"export const manifest = { version: `${1}.0` };"#,
                "substitutions",
            ),
            (
                r#"export let manifest = { name: "weather" };"#,
                "declare it `const`",
            ),
            (
                r#"export { manifest } from "./manifest.ts";"#,
                "re-exported",
            ),
            (
                r#"import { m } from "./m.ts"; export { m as manifest };"#,
                "not a top-level `const`",
            ),
            (
                r#"export function manifest() { return {}; }"#,
                "as a function",
            ),
            (
                r#"export const { manifest } = { manifest: {} };"#,
                "destructuring",
            ),
            (
                r#"export const manifest = { name: "a", name: "b" };"#,
                "written twice",
            ),
            (
                r#"export const manifest = { version: 1 + 1 };"#,
                "not a literal",
            ),
        ] {
            let text = not_literal(source);
            assert!(text.contains(why), "{source}: {text}");
        }
    }

    #[test]
    fn a_module_without_a_manifest_export_says_what_to_add() {
        let text = extract("export const toolDefinitions = [];")
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("mod.ts does not export `manifest`: add `export const manifest"),
            "{text}"
        );
    }

    #[test]
    fn a_syntax_error_is_placed() {
        let text = extract("export const manifest = {\n  name: \"weather\"\n  version: \"1\"\n};")
            .unwrap_err()
            .to_string();
        assert!(text.starts_with("mod.ts:3:"), "{text}");
        assert!(text.contains("fix the TypeScript"), "{text}");
    }

    #[test]
    fn the_name_must_match_the_pattern_and_the_bound() {
        for bad in [
            "Weather",
            "1weather",
            "we_ather",
            &format!("w{}", "e".repeat(64)),
        ] {
            let text = refusal(&with("name", json!(bad)));
            assert!(text.contains("manifest `name`"), "{bad}: {text}");
        }
        assert!(crate::metadata::is_plugin_name(&format!(
            "w{}",
            "e".repeat(63)
        )));
    }

    #[test]
    fn the_name_must_equal_the_directory_name() {
        let m = TriggerfishManifest::from_value(&weather_value(), Path::new("mod.ts"), Some("wx"));
        let text = m.unwrap_err().to_string();
        assert!(
            text.contains("`name` is \"weather\" but the plugin's directory is \"wx\""),
            "{text}"
        );
    }

    #[test]
    fn version_and_description_are_required_non_empty_strings() {
        for key in ["name", "version", "description"] {
            assert!(refusal(&without(key)).contains(&format!("manifest `{key}` is missing")));
            assert!(refusal(&with(key, json!(""))).contains(&format!("manifest `{key}` is empty")));
            assert!(refusal(&with(key, json!(1))).contains("a number, not a string"));
        }
        assert!(refusal(&with("description", json!("ok\u{200b}"))).contains("U+200B"));
        assert!(refusal(&with("description", json!("d".repeat(1025)))).contains("at most 1024"));
    }

    #[test]
    fn classification_is_one_of_four_labels_case_sensitive() {
        for (label, level) in [
            ("PUBLIC", Classification::Public),
            ("INTERNAL", Classification::Internal),
            ("CONFIDENTIAL", Classification::Confidential),
            ("RESTRICTED", Classification::Restricted),
        ] {
            assert_eq!(
                check(&with("classification", json!(label)))
                    .unwrap()
                    .classification,
                level
            );
        }
        for bad in [json!("public"), json!("SECRET"), json!(1)] {
            assert!(refusal(&with("classification", bad)).contains("manifest `classification`"));
        }
        assert!(refusal(&without("classification")).contains("`classification` is missing"));
    }

    #[test]
    fn trust_is_required_and_exactly_sandboxed_or_trusted() {
        assert_eq!(
            check(&with("trust", json!("trusted"))).unwrap().trust,
            ManifestTrust::Trusted
        );
        assert!(refusal(&without("trust")).contains("manifest `trust` is missing"));
        for bad in [json!("Trusted"), json!("full"), json!(true)] {
            assert!(refusal(&with("trust", bad)).contains("manifest `trust` is"));
        }
    }

    #[test]
    fn declared_endpoints_is_a_required_array_of_strings() {
        assert!(refusal(&without("declaredEndpoints")).contains("`declaredEndpoints` is missing"));
        assert!(
            refusal(&with("declaredEndpoints", json!("https://a.example"))).contains("is a string")
        );
        assert!(
            refusal(&with("declaredEndpoints", json!([1])))
                .contains("`declaredEndpoints[0]` is a number")
        );
        assert_eq!(
            check(&with("declaredEndpoints", json!([])))
                .unwrap()
                .endpoint_authorities,
            Vec::<Authority>::new()
        );
    }

    #[test]
    fn endpoints_must_be_http_urls_with_a_host() {
        for (bad, why) in [
            ("api.weather.com", "is not a URL"),
            ("ftp://files.example.com", "scheme `ftp`"),
            ("file:///etc/passwd", "scheme `file`"),
            ("https://user:pw@api.example.com", "user info"),
            ("https://api.example.com/\u{202e}x", "U+202E"),
            (" https://api.example.com", "U+0020"),
            (
                "https://api*.example.com",
                "`api*.example.com`, which is not a host name",
            ),
        ] {
            let text = refusal(&with("declaredEndpoints", json!([bad])));
            assert!(text.contains(why), "{bad}: {text}");
        }
    }

    #[test]
    fn a_malformed_endpoint_is_refused_naming_the_endpoint_and_the_fix() {
        let text = refusal(&with(
            "declaredEndpoints",
            json!(["https://api.weather.com", "https://api*.weather.com/v1"]),
        ));
        assert_eq!(
            text,
            "mod.ts: manifest `declaredEndpoints[1]` \"https://api*.weather.com/v1\" has the host \
             `api*.weather.com`, which is not a host name: write dot-separated labels of a-z, \
             0-9, `-` and `_` (such as \"https://api.example.com\")"
        );
    }

    #[test]
    fn endpoint_authorities_are_host_and_non_default_port() {
        let m = check(&with(
            "declaredEndpoints",
            json!([
                "https://API.Example.com/v1?q=1",
                "https://api.example.com:443/other",
                "http://localhost:8080",
                "http://[::1]:9000/x",
                "http://10.0.0.1",
            ]),
        ))
        .unwrap();
        assert_eq!(
            m.endpoint_authorities
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "10.0.0.1",
                "[::1]:9000",
                "api.example.com",
                "localhost:8080"
            ]
        );
        assert_eq!(m.declared_endpoints.len(), 5);
    }

    #[test]
    fn other_fields_are_ignored() {
        let mut m = weather_value();
        m["author"] = json!({"name": "someone"});
        assert!(check(&m).is_ok());
    }

    #[test]
    fn trust_capabilities_name_each_authority_and_trusted() {
        let m = check(&with("trust", json!("trusted"))).unwrap();
        assert_eq!(
            m.trust_capabilities().into_iter().collect::<Vec<_>>(),
            ["net.http:api.weather.com", "triggerfish:trusted"]
        );
    }

    #[test]
    fn a_runtime_manifest_must_say_what_the_literal_said() {
        let m = check(&weather_value()).unwrap();
        assert_eq!(m.check_runtime(&weather_value()), Ok(()));
        let mut changed = weather_value();
        changed["trust"] = json!("trusted");
        assert!(
            m.check_runtime(&changed)
                .unwrap_err()
                .to_string()
                .contains("`trust`")
        );
    }
}
