//! What an expression refers to, as far as the syntax tells without running anything: a path
//! from the global object (`Deno.env.get`, `eval`), a member of an imported module
//! (`node:child_process` `exec`), or unknown. It sees through parentheses, TypeScript
//! wrappers, optional chains, `(0, x)`, `await`, `x || y`, computed keys that fold to constant
//! strings (`"ev" + "al"`, `` `env` ``, `["ev", "al"].join("")`, `String.fromCharCode(…)`,
//! `atob("…")`), `Reflect.get`, `.bind`, `require`, imports, and bindings that never change
//! (`const d = Deno`, `const { env } = Deno`, a `let` never assigned again). A binding declared
//! with `declare` is ambient: it names the global, not a local. Functions written in the file
//! lead through `.constructor` and `Object.getPrototypeOf` to the Function family's
//! constructors (`AsyncFunction` and its kin are no globals, so this is the only way to them);
//! `createRequire` makes `require`, and `process.getBuiltinModule` loads like it.
//!
//! Everything is bounded: recursion depth, the length of paths and of folded strings. Results
//! per binding are memoised, so a file is resolved in time linear in its size.

mod fold;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use oxc::ast::AstKind;
use oxc::ast::ast::{
    Argument, AssignmentOperator, BindingPattern, CallExpression, ChainElement,
    ComputedMemberExpression, Expression, IdentifierReference, MemberExpression,
    StaticMemberExpression, TSModuleReference,
};
use oxc::semantic::{Semantic, SymbolFlags, SymbolId};

pub(crate) use fold::Const;

/// Deepest recursion while resolving (alias hops, nested keys).
const MAX_DEPTH: usize = 500;
/// Longest string folded; longer ones are left unknown.
const MAX_FOLDED_BYTES: usize = 64 * 1024;
/// Most bytes of constant text folded in one file (each result counted); past it nothing more
/// folds, and the scanner says so.
const FOLD_BUDGET_BYTES: usize = 32 * 1024 * 1024;
/// Longest path kept; no rule looks further.
const MAX_PATH: usize = 8;
/// Node modules whose namespace is itself a capability (processes, files, code, sockets).
const HOST_MODULES: &[&str] = &[
    "child_process",
    "fs",
    "fs/promises",
    "vm",
    "http",
    "https",
    "http2",
    "net",
    "tls",
    "dgram",
    "worker_threads",
];
/// Names of the global object itself.
pub(crate) const GLOBAL_OBJECTS: [&str; 4] = ["globalThis", "window", "self", "global"];
/// Capitalised globals that are plain objects, not constructors: their `.constructor` is
/// `Object`, not `Function`.
const NAMESPACES: &[&str] = &[
    "Math",
    "JSON",
    "Reflect",
    "Atomics",
    "Intl",
    "Deno",
    "WebAssembly",
    "Temporal",
    "Bun",
    "CSS",
];

/// What an expression refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// A path from the global object; empty for the global object itself.
    Global(Vec<String>),
    /// A member of a module that is not plugin code (`node:` prefix removed).
    Module {
        /// `child_process`, `fs`, `https://…`.
        specifier: String,
        /// Members below the module's namespace; empty for the namespace (or default export).
        path: Vec<String>,
    },
    /// A function written in the file (`function () {}`, `async () => {}`, a class): what
    /// matters is its `.constructor`, the member of the Function family it names (`Function`,
    /// `AsyncFunction`, `GeneratorFunction`, `AsyncGeneratorFunction`).
    FunctionOf(&'static str),
    /// One of the Function family's constructors that is not a global, so reachable only
    /// through a function's prototype chain, and the members below it.
    Intrinsic {
        /// `AsyncFunction`, `GeneratorFunction` or `AsyncGeneratorFunction`.
        name: &'static str,
        /// Members below the constructor; empty for the constructor itself.
        path: Vec<String>,
    },
    /// Resolution went deeper than the bound: the code hides what it refers to.
    TooDeep,
    /// Not a host object, or not knowable from the syntax.
    Unknown,
}

impl Value {
    fn global(name: &str) -> Self {
        if GLOBAL_OBJECTS.contains(&name) {
            Self::Global(Vec::new())
        } else {
            Self::Global(vec![name.to_owned()])
        }
    }

    /// A module member, with the modules that are the global's own APIs mapped onto it.
    pub(crate) fn module(specifier: &str, path: Vec<String>) -> Self {
        let name = specifier.strip_prefix("node:").unwrap_or(specifier);
        match name {
            "process" => {
                let mut full = vec!["process".to_owned()];
                full.extend(path);
                Self::Global(full)
            }
            "buffer" | "timers" | "worker_threads" if !path.is_empty() => Self::Global(path),
            _ => Self::Module {
                specifier: name.to_owned(),
                path,
            },
        }
    }

    /// The constructor of the Function family named `name`, as a value.
    fn constructor(name: &'static str) -> Self {
        if name == "Function" {
            Self::Global(vec!["Function".to_owned()])
        } else {
            Self::Intrinsic {
                name,
                path: Vec::new(),
            }
        }
    }

    /// The prototype of the Function family's constructor `name`.
    fn prototype(name: &'static str) -> Self {
        match Self::constructor(name) {
            Self::Global(mut path) => {
                path.push("prototype".to_owned());
                Self::Global(path)
            }
            Self::Intrinsic { name, .. } => Self::Intrinsic {
                name,
                path: vec!["prototype".to_owned()],
            },
            other => other,
        }
    }

    fn member(self, name: &str) -> Self {
        match self {
            Self::Global(mut path) => {
                if name == "constructor" {
                    // `X.prototype.constructor` is `X`; a constructor's own constructor is
                    // `Function`.
                    if path.last().is_some_and(|last| last == "prototype") {
                        path.pop();
                        return Self::Global(path);
                    }
                    if let [one] = path.as_slice()
                        && one.starts_with(|c: char| c.is_ascii_uppercase())
                        && !NAMESPACES.contains(&one.as_str())
                    {
                        return Self::constructor("Function");
                    }
                }
                if !(path.is_empty() && GLOBAL_OBJECTS.contains(&name)) {
                    push_bounded(&mut path, name);
                }
                Self::Global(path)
            }
            Self::FunctionOf(kind) if name == "constructor" => Self::constructor(kind),
            Self::FunctionOf(_) => Self::Unknown,
            Self::Intrinsic {
                name: kind,
                mut path,
            } => {
                if name == "constructor" {
                    match path.last().map(String::as_str) {
                        Some("prototype") => {
                            path.pop();
                            return Self::Intrinsic { name: kind, path };
                        }
                        None => return Self::constructor("Function"),
                        Some(_) => {}
                    }
                }
                push_bounded(&mut path, name);
                Self::Intrinsic { name: kind, path }
            }
            Self::Module {
                specifier,
                mut path,
            } => {
                push_bounded(&mut path, name);
                Self::module(&specifier, path)
            }
            other => other,
        }
    }

    /// Whether this is the global object itself, `Deno`, `process` or the namespace of a node
    /// module that grants a capability: objects whose members a plugin reaches only to do what
    /// the rules look for.
    pub(crate) fn is_host_root(&self) -> bool {
        match self {
            Self::Global(path) => {
                path.is_empty()
                    || matches!(path.as_slice(), [one] if one == "Deno" || one == "process")
            }
            Self::Module { path, specifier } => {
                path.is_empty() && HOST_MODULES.contains(&specifier.as_str())
            }
            _ => false,
        }
    }
}

fn push_bounded(path: &mut Vec<String>, name: &str) {
    if path.len() < MAX_PATH {
        path.push(name.to_owned());
    } else if path.len() == MAX_PATH {
        path.push("…".to_owned());
    }
}

/// Resolves expressions of one parsed file.
pub(crate) struct Resolver<'s, 'a> {
    semantic: &'s Semantic<'a>,
    values: RefCell<HashMap<SymbolId, Value>>,
    consts: RefCell<HashMap<SymbolId, Option<Const>>>,
    /// Bytes of folded text left to produce.
    budget: Cell<usize>,
}

impl<'s, 'a> Resolver<'s, 'a> {
    pub(crate) fn new(semantic: &'s Semantic<'a>) -> Self {
        Self {
            semantic,
            values: RefCell::new(HashMap::new()),
            consts: RefCell::new(HashMap::new()),
            budget: Cell::new(FOLD_BUDGET_BYTES),
        }
    }

    /// What `expr` refers to.
    pub(crate) fn value(&self, expr: &Expression<'a>) -> Value {
        self.value_at(expr, 0)
    }

    /// What a reference refers to.
    pub(crate) fn identifier(&self, id: &IdentifierReference<'a>) -> Value {
        self.identifier_at(id, 0)
    }

    /// What `object.name` refers to.
    pub(crate) fn static_member(&self, m: &StaticMemberExpression<'a>) -> Value {
        self.value_at(&m.object, 1).member(&m.property.name)
    }

    /// What `object[key]` refers to: unknown when the key does not fold to a constant.
    pub(crate) fn computed_member(&self, m: &ComputedMemberExpression<'a>) -> Value {
        match self.key_at(&m.expression, 1) {
            Some(key) => self.value_at(&m.object, 1).member(&key),
            None => Value::Unknown,
        }
    }

    /// The constant `expr` folds to, if any.
    pub(crate) fn fold(&self, expr: &Expression<'a>) -> Option<Const> {
        self.fold_at(expr, 0)
    }

    /// `expr` folded to a string (numbers printed), if it folds.
    pub(crate) fn fold_string(&self, expr: &Expression<'a>) -> Option<String> {
        self.key_at(expr, 0)
    }

    fn key_at(&self, expr: &Expression<'a>, depth: usize) -> Option<String> {
        self.fold_at(expr, depth)?.into_string()
    }

    fn value_at(&self, expr: &Expression<'a>, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::TooDeep;
        }
        // A member chain is walked in a loop, so that `a.b.c…` of any length costs no recursion.
        let mut keys: Vec<Option<String>> = Vec::new();
        let mut current = expr;
        let base = loop {
            let member = match current {
                Expression::ParenthesizedExpression(e) => {
                    current = &e.expression;
                    continue;
                }
                Expression::TSAsExpression(e) => {
                    current = &e.expression;
                    continue;
                }
                Expression::TSSatisfiesExpression(e) => {
                    current = &e.expression;
                    continue;
                }
                Expression::TSNonNullExpression(e) => {
                    current = &e.expression;
                    continue;
                }
                Expression::TSTypeAssertion(e) => {
                    current = &e.expression;
                    continue;
                }
                Expression::TSInstantiationExpression(e) => {
                    current = &e.expression;
                    continue;
                }
                Expression::ChainExpression(chain) => match &chain.expression {
                    ChainElement::CallExpression(call) => break self.call_at(call, depth + 1),
                    ChainElement::TSNonNullExpression(e) => {
                        current = &e.expression;
                        continue;
                    }
                    element => match element.as_member_expression() {
                        Some(member) => member,
                        None => break Value::Unknown,
                    },
                },
                other => match other.as_member_expression() {
                    Some(member) => member,
                    None => break self.base_at(other, depth + 1),
                },
            };
            match member {
                MemberExpression::StaticMemberExpression(m) => {
                    keys.push(Some(m.property.name.to_string()));
                    current = &m.object;
                }
                MemberExpression::ComputedMemberExpression(m) => {
                    // One key the scanner cannot fold makes the whole path unknown: stop here.
                    let Some(key) = self.key_at(&m.expression, depth + 1) else {
                        return Value::Unknown;
                    };
                    keys.push(Some(key));
                    current = &m.object;
                }
                MemberExpression::PrivateFieldExpression(_) => break Value::Unknown,
            }
        };
        let mut value = base;
        for key in keys.iter().rev() {
            match key {
                Some(key) => value = value.member(key),
                None => return Value::Unknown,
            }
        }
        value
    }

    fn base_at(&self, expr: &Expression<'a>, depth: usize) -> Value {
        match expr {
            Expression::Identifier(id) => self.identifier_at(id, depth),
            Expression::CallExpression(call) => self.call_at(call, depth),
            Expression::ImportExpression(import) => match self.key_at(&import.source, depth) {
                Some(specifier) => Value::module(&specifier, Vec::new()),
                None => Value::Unknown,
            },
            Expression::SequenceExpression(seq) => match seq.expressions.last() {
                Some(last) => self.value_at(last, depth),
                None => Value::Unknown,
            },
            Expression::AwaitExpression(e) => self.value_at(&e.argument, depth),
            Expression::LogicalExpression(e) => match self.value_at(&e.left, depth) {
                Value::Unknown => self.value_at(&e.right, depth),
                known => known,
            },
            Expression::ConditionalExpression(e) => match self.value_at(&e.consequent, depth) {
                Value::Unknown => self.value_at(&e.alternate, depth),
                known => known,
            },
            Expression::AssignmentExpression(e) if e.operator == AssignmentOperator::Assign => {
                self.value_at(&e.right, depth)
            }
            Expression::FunctionExpression(f) => {
                Value::FunctionOf(function_kind(f.r#async, f.generator))
            }
            Expression::ArrowFunctionExpression(f) => {
                Value::FunctionOf(function_kind(f.r#async, false))
            }
            Expression::ClassExpression(_) => Value::FunctionOf("Function"),
            _ => Value::Unknown,
        }
    }

    fn call_at(&self, call: &CallExpression<'a>, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::TooDeep;
        }
        // `f.bind(x)` is `f` for what the rules care about.
        if let Some(MemberExpression::StaticMemberExpression(m)) =
            call.callee.get_inner_expression().as_member_expression()
            && m.property.name == "bind"
        {
            return self.value_at(&m.object, depth + 1);
        }
        let callee = self.value_at(&call.callee, depth + 1);
        let arg = |i: usize| call.arguments.get(i).and_then(Argument::as_expression);
        match &callee {
            Value::Global(path)
                if path.as_slice() == ["require"]
                    || path.as_slice() == ["process", "getBuiltinModule"] =>
            {
                match arg(0).and_then(|a| self.key_at(a, depth + 1)) {
                    Some(specifier) => Value::module(&specifier, Vec::new()),
                    None => Value::Unknown,
                }
            }
            // What `createRequire` makes is `require`, with the same specifiers.
            Value::Module { specifier, path }
                if specifier == "module" && path.as_slice() == ["createRequire"] =>
            {
                Value::Global(vec!["require".to_owned()])
            }
            Value::Global(path)
                if path.len() == 2
                    && (path[0] == "Object" || path[0] == "Reflect")
                    && path[1] == "getPrototypeOf" =>
            {
                match arg(0).map(|a| self.value_at(a, depth + 1)) {
                    Some(Value::FunctionOf(kind)) => Value::prototype(kind),
                    _ => Value::Unknown,
                }
            }
            Value::Global(path) if path.as_slice() == ["Reflect", "get"] => {
                match (arg(0), arg(1).and_then(|a| self.key_at(a, depth + 1))) {
                    (Some(object), Some(key)) => self.value_at(object, depth + 1).member(&key),
                    _ => Value::Unknown,
                }
            }
            _ => Value::Unknown,
        }
    }

    fn identifier_at(&self, id: &IdentifierReference<'a>, depth: usize) -> Value {
        match self.symbol_of(id) {
            Some(symbol) => self.symbol_value(symbol, depth),
            None => Value::global(&id.name),
        }
    }

    /// The local binding a reference resolves to; `None` for a global (unbound or ambient).
    pub(crate) fn symbol_of(&self, id: &IdentifierReference<'a>) -> Option<SymbolId> {
        let scoping = self.semantic.scoping();
        let symbol = scoping.get_reference(id.reference_id.get()?).symbol_id()?;
        if scoping.symbol_flags(symbol).contains(SymbolFlags::Ambient) {
            return None;
        }
        Some(symbol)
    }

    /// A binding whose value is the one it was declared with.
    pub(crate) fn followable(&self, symbol: SymbolId) -> bool {
        let scoping = self.semantic.scoping();
        !scoping.symbol_is_mutated(symbol) && scoping.symbol_redeclarations(symbol).is_empty()
    }

    fn symbol_value(&self, symbol: SymbolId, depth: usize) -> Value {
        if let Some(known) = self.values.borrow().get(&symbol) {
            return known.clone();
        }
        // Unknown while it is computed: a cycle of bindings ends there.
        self.values.borrow_mut().insert(symbol, Value::Unknown);
        let value = self.compute_symbol_value(symbol, depth);
        self.values.borrow_mut().insert(symbol, value.clone());
        value
    }

    fn compute_symbol_value(&self, symbol: SymbolId, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::TooDeep;
        }
        let nodes = self.semantic.nodes();
        let declaration = self.semantic.symbol_declaration(symbol);
        match declaration.kind() {
            AstKind::ImportSpecifier(spec) => {
                let AstKind::ImportDeclaration(import) = nodes.parent_kind(declaration.id()) else {
                    return Value::Unknown;
                };
                if import.import_kind.is_type() || spec.import_kind.is_type() {
                    return Value::Unknown;
                }
                let imported = spec.imported.name();
                let path = if imported == "default" {
                    Vec::new()
                } else {
                    vec![imported.to_string()]
                };
                Value::module(&import.source.value, path)
            }
            AstKind::ImportDefaultSpecifier(_) | AstKind::ImportNamespaceSpecifier(_) => {
                match nodes.parent_kind(declaration.id()) {
                    AstKind::ImportDeclaration(import) if !import.import_kind.is_type() => {
                        Value::module(&import.source.value, Vec::new())
                    }
                    _ => Value::Unknown,
                }
            }
            AstKind::TSImportEqualsDeclaration(decl) => match &decl.module_reference {
                TSModuleReference::ExternalModuleReference(external)
                    if !decl.import_kind.is_type() =>
                {
                    Value::module(&external.expression.value, Vec::new())
                }
                _ => Value::Unknown,
            },
            AstKind::Function(f) if self.followable(symbol) => {
                Value::FunctionOf(function_kind(f.r#async, f.generator))
            }
            AstKind::Class(_) if self.followable(symbol) => Value::FunctionOf("Function"),
            AstKind::VariableDeclarator(declarator) if self.followable(symbol) => {
                let Some(init) = &declarator.init else {
                    return Value::Unknown;
                };
                let mut path = Vec::new();
                if !binding_path(&declarator.id, symbol, &mut path, self, depth) {
                    return Value::Unknown;
                }
                let mut value = self.value_at(init, depth + 1);
                for step in path {
                    match step {
                        Some(key) => value = value.member(&key),
                        None => return Value::Unknown,
                    }
                }
                value
            }
            _ => Value::Unknown,
        }
    }
}

/// The member of the Function family that constructs functions written this way.
pub(crate) fn function_kind(is_async: bool, generator: bool) -> &'static str {
    match (is_async, generator) {
        (false, false) => "Function",
        (true, false) => "AsyncFunction",
        (false, true) => "GeneratorFunction",
        (true, true) => "AsyncGeneratorFunction",
    }
}

/// The keys leading from a declarator's initialiser to `symbol` in its binding pattern
/// (`const { env: { get } } = Deno` → `env`, `get`); `None` for a step the scanner cannot name
/// (an array position, a computed key it cannot fold). `false` if `symbol` is not in `pattern`.
fn binding_path<'a>(
    pattern: &BindingPattern<'a>,
    symbol: SymbolId,
    path: &mut Vec<Option<String>>,
    resolver: &Resolver<'_, 'a>,
    depth: usize,
) -> bool {
    if path.len() > MAX_PATH || depth > MAX_DEPTH {
        return false;
    }
    match pattern {
        BindingPattern::BindingIdentifier(id) => id.symbol_id.get() == Some(symbol),
        BindingPattern::AssignmentPattern(p) => {
            binding_path(&p.left, symbol, path, resolver, depth + 1)
        }
        BindingPattern::ObjectPattern(object) => {
            for property in &object.properties {
                let key = match property.key.static_name() {
                    Some(name) => Some(name.into_owned()),
                    None => property
                        .key
                        .as_expression()
                        .and_then(|e| resolver.key_at(e, depth + 1)),
                };
                path.push(key);
                if binding_path(&property.value, symbol, path, resolver, depth + 1) {
                    return true;
                }
                path.pop();
            }
            // `const { ...rest } = Deno`: the rest holds the same members.
            object
                .rest
                .as_ref()
                .is_some_and(|rest| binding_path(&rest.argument, symbol, path, resolver, depth + 1))
        }
        BindingPattern::ArrayPattern(array) => {
            path.push(None);
            let found = array
                .elements
                .iter()
                .flatten()
                .any(|element| binding_path(element, symbol, path, resolver, depth + 1))
                || array.rest.as_ref().is_some_and(|rest| {
                    binding_path(&rest.argument, symbol, path, resolver, depth + 1)
                });
            if !found {
                path.pop();
            }
            found
        }
    }
}
