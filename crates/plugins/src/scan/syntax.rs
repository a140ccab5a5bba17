//! The scanner's pass over one parsed file. It walks every node of the syntax tree once (no
//! recursion of its own), asks [`Resolver`] what references and calls refer to, and matches
//! that against the rules: host APIs by their resolved path (so `Deno["env"]`, `const d = Deno`
//! and `Deno.env` are the same thing), module loads by specifier, literal text and comments by
//! phrase. It never evaluates the code it reads.

mod api;

use std::collections::HashMap;

use oxc::ast::AstKind;
use oxc::ast::ast::{Argument, BinaryOperator, Expression, MemberExpression, Program};
use oxc::semantic::{NodeId, Semantic};
use oxc::span::{GetSpan, Span};

use super::Hit;
use super::resolve::{Const, Resolver, Value, function_kind};
use super::rules::{self, Rule};
use super::text;
pub(crate) use api::{classify_specifier, describe};

/// How a reference is used by what surrounds it.
#[derive(Clone, Copy)]
enum Use<'n, 'a> {
    /// It is called (or tags a template): `x(…)`.
    Called(&'n [Argument<'a>]),
    /// It is constructed: `new x(…)`.
    Constructed(&'n [Argument<'a>]),
    /// It leaves for somewhere the scanner does not follow: an argument, an array or object, a
    /// return value, an export, a variable that changes.
    Escapes,
    /// Anything else (read, compared, `typeof`).
    Read,
}

pub(crate) struct Pass<'s, 'a> {
    semantic: &'s Semantic<'a>,
    resolver: Resolver<'s, 'a>,
    source: &'a str,
    rel_path: &'s str,
    pub(crate) hits: Vec<Hit>,
    /// Per rule, the spans already reported that may still contain later nodes (the walk is in
    /// source order): a reference inside a reported one of the same rule is not reported again.
    open: HashMap<&'static str, Vec<Span>>,
    /// Injection phrases found in text assembled from pieces, reported at the end.
    composed: Vec<(Span, String)>,
    /// Hits kept per rule; past [`super::MAX_LISTED_PER_RULE`] a hit is only counted.
    per_rule: HashMap<&'static str, usize>,
    /// Hits counted but not kept.
    pub(crate) omitted: usize,
}

impl<'s, 'a> Pass<'s, 'a> {
    pub(crate) fn new(semantic: &'s Semantic<'a>, source: &'a str, rel_path: &'s str) -> Self {
        Self {
            semantic,
            resolver: Resolver::new(semantic),
            source,
            rel_path,
            hits: Vec::new(),
            open: HashMap::new(),
            composed: Vec::new(),
            per_rule: HashMap::new(),
            omitted: 0,
        }
    }

    pub(crate) fn run(&mut self, program: &Program<'a>) {
        let nodes = self.semantic.nodes();
        for node in nodes.iter() {
            let id = node.id();
            match node.kind() {
                AstKind::IdentifierReference(r) => {
                    self.identifier_spelling(r.span, &r.name);
                    if !self.is_member_object(id) {
                        let value = self.resolver.identifier(r);
                        self.reference(id, r.span, value, r.name == "eval");
                    }
                }
                AstKind::StaticMemberExpression(m) if !self.is_member_object(id) => {
                    let value = self.resolver.static_member(m);
                    self.reference(id, m.span, value, false);
                }
                AstKind::ComputedMemberExpression(m) => {
                    if !self.is_member_object(id) {
                        let value = self.resolver.computed_member(m);
                        self.reference(id, m.span, value, false);
                    }
                    if self.resolver.fold_string(&m.expression).is_none() {
                        let object = self.resolver.value(&m.object);
                        if object.is_host_root() {
                            self.hit(
                                rules::UNRESOLVED_ACCESS,
                                m.span,
                                format!(
                                    "reads a member of {} with a key the scanner cannot resolve",
                                    describe(&object)
                                ),
                            );
                        }
                    }
                }
                AstKind::CallExpression(c) => {
                    self.call(c.span, &c.callee, &c.arguments, false);
                    if !self.continues_fold(id) {
                        let folded = self.resolver.fold_call_expression(c);
                        self.composed_text(c.span, folded);
                    }
                }
                AstKind::NewExpression(n) => self.call(n.span, &n.callee, &n.arguments, true),
                AstKind::ImportExpression(i) => match self.resolver.fold_string(&i.source) {
                    Some(specifier) => self.module_load(i.span, &specifier),
                    None => self.hit(
                        rules::COMPUTED_IMPORT,
                        i.span,
                        "imports a module whose name is computed at run time".to_owned(),
                    ),
                },
                AstKind::ImportDeclaration(d) if !d.import_kind.is_type() => {
                    self.module_load(d.span, &d.source.value);
                }
                AstKind::ExportFromDeclaration(d) if !d.export_kind.is_type() => {
                    self.module_load(d.span, &d.source.value);
                }
                AstKind::ExportAllDeclaration(d) if !d.export_kind.is_type() => {
                    self.module_load(d.span, &d.source.value);
                }
                AstKind::TSExternalModuleReference(r) => {
                    self.module_load(r.span, &r.expression.value);
                }
                AstKind::StringLiteral(s) => {
                    self.literal_text(s.span, &s.value, true);
                    let raw = self.slice(s.span);
                    if text::escaped_alphanumerics(raw) >= 2 {
                        self.hit(
                            rules::ESCAPED_STRING,
                            s.span,
                            format!(
                                "writes letters as escape sequences: \"{}\"",
                                text::escape(&text::truncate(&s.value, 40))
                            ),
                        );
                    }
                }
                AstKind::TemplateLiteral(t) => {
                    for quasi in &t.quasis {
                        let value = quasi.value.cooked.as_ref().unwrap_or(&quasi.value.raw);
                        let exact = quasi.value.raw == *value;
                        self.literal_text(quasi.span, value, exact);
                        if text::escaped_alphanumerics(&quasi.value.raw) >= 2 {
                            self.hit(
                                rules::ESCAPED_STRING,
                                quasi.span,
                                format!(
                                    "writes letters as escape sequences: \"{}\"",
                                    text::escape(&text::truncate(value, 40))
                                ),
                            );
                        }
                    }
                    if !t.expressions.is_empty() {
                        let folded = self.resolver.fold_template(t);
                        self.composed_text(t.span, folded);
                    }
                }
                AstKind::BinaryExpression(b) if b.operator == BinaryOperator::Addition => {
                    let inside_another = matches!(
                        nodes.parent_kind(id),
                        AstKind::BinaryExpression(p) if p.operator == BinaryOperator::Addition
                    );
                    if !inside_another {
                        let folded = self.resolver.fold_addition(b);
                        self.composed_text(b.span, folded);
                    }
                }
                AstKind::JSXText(t) => self.literal_text(t.span, &t.value, true),
                AstKind::BindingIdentifier(b) => self.identifier_spelling(b.span, &b.name),
                AstKind::IdentifierName(n) => self.identifier_spelling(n.span, &n.name),
                AstKind::LabelIdentifier(l) => self.identifier_spelling(l.span, &l.name),
                AstKind::PrivateIdentifier(p) => self.identifier_spelling(p.span, &p.name),
                _ => {}
            }
        }
        for comment in &program.comments {
            let span = comment.content_span();
            let content = self.slice(span);
            self.text_rules(span.start as usize, content, true, span);
        }
        self.report_composed();
        if self.resolver.budget_exhausted() {
            self.hit(
                rules::UNRESOLVED_ACCESS,
                Span::new(0, 0),
                "assembles more constant text than the scanner folds (32 MiB); later computed keys and assembled strings were not checked".to_owned(),
            );
        }
    }

    fn slice(&self, span: Span) -> &'a str {
        self.source
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
    }

    fn hit(&mut self, rule: Rule, span: Span, message: String) {
        let count = self.per_rule.entry(rule.id).or_default();
        if *count >= super::MAX_LISTED_PER_RULE {
            self.omitted += 1;
            return;
        }
        *count += 1;
        self.hits.push(Hit {
            rule,
            start: span.start as usize,
            end: span.end as usize,
            message,
        });
    }

    /// Report `rule` at `span` unless a report of the same rule already covers it.
    fn hit_once(&mut self, rule: Rule, span: Span, message: String) {
        let open = self.open.entry(rule.id).or_default();
        while open.last().is_some_and(|last| last.end <= span.start) {
            open.pop();
        }
        if open
            .last()
            .is_some_and(|last| last.start <= span.start && span.end <= last.end)
        {
            return;
        }
        open.push(span);
        self.hit(rule, span, message);
    }

    /// Walk up from `id` through what passes its value on unchanged (parentheses, TypeScript
    /// assertions, optional chains, the last of a sequence; with `values`, also `await`,
    /// `a || b` and `c ? a : b`). Returns the outermost such node and its span.
    fn climb(&self, mut id: NodeId, values: bool) -> (NodeId, Span) {
        let nodes = self.semantic.nodes();
        loop {
            let span = nodes.kind(id).span();
            let parent = nodes.parent_id(id);
            if parent == id {
                return (id, span);
            }
            let passes = match nodes.kind(parent) {
                AstKind::ParenthesizedExpression(_)
                | AstKind::TSAsExpression(_)
                | AstKind::TSSatisfiesExpression(_)
                | AstKind::TSNonNullExpression(_)
                | AstKind::TSTypeAssertion(_)
                | AstKind::TSInstantiationExpression(_)
                | AstKind::ChainExpression(_) => true,
                AstKind::SequenceExpression(s) => {
                    s.expressions.last().is_some_and(|e| e.span() == span)
                }
                AstKind::AwaitExpression(_) | AstKind::LogicalExpression(_) => values,
                AstKind::ConditionalExpression(c) => values && c.test.span() != span,
                _ => false,
            };
            if !passes {
                return (id, span);
            }
            id = parent;
        }
    }

    /// How the expression at `id` is used.
    fn use_of(&self, id: NodeId) -> Use<'s, 'a> {
        let nodes = self.semantic.nodes();
        let (top, span) = self.climb(id, false);
        match nodes.parent_kind(top) {
            AstKind::CallExpression(c) if c.callee.span() == span => {
                return Use::Called(&c.arguments);
            }
            AstKind::NewExpression(n) if n.callee.span() == span => {
                return Use::Constructed(&n.arguments);
            }
            AstKind::TaggedTemplateExpression(t) if t.tag.span() == span => {
                return Use::Called(&[]);
            }
            _ => {}
        }
        let (top, span) = self.climb(id, true);
        let parent = nodes.parent_id(top);
        let escapes = match nodes.kind(parent) {
            AstKind::CallExpression(c) => c.callee.span() != span,
            AstKind::NewExpression(n) => n.callee.span() != span,
            AstKind::ArrayExpression(_)
            | AstKind::SpreadElement(_)
            | AstKind::ReturnStatement(_)
            | AstKind::YieldExpression(_)
            | AstKind::ArrowFunctionExpression(_)
            | AstKind::ExportDefaultDeclaration(_)
            | AstKind::ExportSpecifier(_)
            | AstKind::WithStatement(_) => true,
            AstKind::ObjectProperty(p) => p.value.span() == span,
            AstKind::PropertyDefinition(p) => p.value.as_ref().is_some_and(|v| v.span() == span),
            AstKind::AssignmentExpression(a) => a.right.span() == span,
            AstKind::AssignmentPattern(a) => a.right.span() == span,
            AstKind::ForInStatement(f) => f.right.span() == span,
            AstKind::ForOfStatement(f) => f.right.span() == span,
            AstKind::VariableDeclarator(d) => {
                d.init.as_ref().is_some_and(|i| i.span() == span)
                    && !self.declarator_followed(parent)
            }
            _ => false,
        };
        if escapes { Use::Escapes } else { Use::Read }
    }

    /// Whether the resolver follows the value of the declarator at `id` to its uses: it is not
    /// exported, and a plain binding never changes.
    fn declarator_followed(&self, id: NodeId) -> bool {
        let nodes = self.semantic.nodes();
        let AstKind::VariableDeclarator(d) = nodes.kind(id) else {
            return false;
        };
        let declaration = nodes.parent_id(id);
        if matches!(
            nodes.parent_kind(declaration),
            AstKind::ExportDeclaration(_)
        ) {
            return false;
        }
        match &d.id {
            oxc::ast::ast::BindingPattern::BindingIdentifier(b) => b
                .symbol_id
                .get()
                .is_some_and(|symbol| self.resolver.followable(symbol)),
            _ => true,
        }
    }

    /// Whether the expression at `id` is the object of a member expression, whose own node
    /// then reports the whole path.
    fn is_member_object(&self, id: NodeId) -> bool {
        let (top, span) = self.climb(id, false);
        match self.semantic.nodes().parent_kind(top) {
            AstKind::StaticMemberExpression(m) => m.object.span() == span,
            AstKind::ComputedMemberExpression(m) => m.object.span() == span,
            _ => false,
        }
    }

    /// `typeof Deno.env`: asks whether something exists, reaches nothing.
    fn is_typeof_operand(&self, id: NodeId) -> bool {
        let (top, _) = self.climb(id, false);
        matches!(
            self.semantic.nodes().parent_kind(top),
            AstKind::UnaryExpression(u) if u.operator == oxc::syntax::operator::UnaryOperator::Typeof
        )
    }

    /// A reference (identifier or member expression) resolved to `value`.
    fn reference(&mut self, id: NodeId, span: Span, value: Value, plain_eval: bool) {
        if matches!(value, Value::Unknown) || self.is_typeof_operand(id) {
            return;
        }
        let how = self.use_of(id);
        let direct = plain_eval && self.climb(id, false).1 == span;
        if let Some((rule, message)) = self.api_rule(&value, how, direct) {
            self.hit_once(rule, span, message);
        } else if matches!(how, Use::Escapes) && value.is_host_root() {
            self.hit_once(
                rules::UNRESOLVED_ACCESS,
                span,
                format!(
                    "passes {} on as a value the scanner cannot follow",
                    describe(&value)
                ),
            );
        }
    }

    /// A call or `new` whose callee is not itself a reference (`Reflect.get(…)(…)`,
    /// `f.constructor(…)`), and `require(…)`.
    fn call(&mut self, span: Span, callee: &Expression<'a>, args: &[Argument<'a>], new: bool) {
        let inner = callee.get_inner_expression();
        let how = if new {
            Use::Constructed(args)
        } else {
            Use::Called(args)
        };
        match inner {
            Expression::Identifier(_)
            | Expression::StaticMemberExpression(_)
            | Expression::ComputedMemberExpression(_)
            | Expression::ChainExpression(_) => {}
            other => {
                let value = self.resolver.value(other);
                if let Some((rule, message)) = self.api_rule(&value, how, false) {
                    self.hit_once(rule, callee.span(), message);
                }
            }
        }
        if let Value::Global(path) = self.resolver.value(callee)
            && (path.as_slice() == ["require"]
                || path.as_slice() == ["process", "getBuiltinModule"])
        {
            match args
                .first()
                .and_then(Argument::as_expression)
                .and_then(|a| self.resolver.fold_string(a))
            {
                Some(specifier) => self.module_load(span, &specifier),
                None => self.hit(
                    rules::COMPUTED_IMPORT,
                    span,
                    "requires a module whose name is computed at run time".to_owned(),
                ),
            }
        }
        if let Some(constructor) = self.reaches_function_constructor(inner) {
            self.hit_once(
                rules::FUNCTION_CONSTRUCTOR,
                callee.span(),
                format!("reaches the {constructor} constructor through .constructor"),
            );
        }
    }

    /// `(function(){}).constructor`, `x.constructor.constructor`, `Array.constructor`,
    /// `Object.getPrototypeOf(async function(){}).constructor`: each is `Function` or its
    /// async and generator kin, named in the result. What the resolver follows is reported
    /// as a reference; this also catches objects it does not know (`x.constructor.constructor`).
    fn reaches_function_constructor(&self, callee: &Expression<'a>) -> Option<&'static str> {
        let member = callee.as_member_expression()?;
        let key = match member {
            MemberExpression::StaticMemberExpression(m) => Some(m.property.name.to_string()),
            MemberExpression::ComputedMemberExpression(m) => {
                self.resolver.fold_string(&m.expression)
            }
            MemberExpression::PrivateFieldExpression(_) => None,
        };
        if key.as_deref() != Some("constructor") {
            return None;
        }
        let object = member.object().get_inner_expression();
        let kind_of = |e: &Expression<'a>| match e.get_inner_expression() {
            Expression::FunctionExpression(f) => Some(function_kind(f.r#async, f.generator)),
            Expression::ArrowFunctionExpression(f) => Some(function_kind(f.r#async, false)),
            Expression::ClassExpression(_) => Some("Function"),
            _ => None,
        };
        if let Some(kind) = kind_of(object) {
            return Some(kind);
        }
        match object {
            Expression::CallExpression(c) => matches!(
                self.resolver.value(&c.callee),
                Value::Global(p) if p.len() == 2 && (p[0] == "Object" || p[0] == "Reflect") && p[1] == "getPrototypeOf"
            )
            .then(|| {
                let kind = c.arguments.first().and_then(Argument::as_expression).and_then(kind_of);
                kind.unwrap_or("Function")
            }),
            other => {
                let nested = other.as_member_expression().is_some_and(|m| match m {
                    MemberExpression::StaticMemberExpression(m) => m.property.name == "constructor",
                    MemberExpression::ComputedMemberExpression(m) => {
                        self.resolver.fold_string(&m.expression).as_deref() == Some("constructor")
                    }
                    MemberExpression::PrivateFieldExpression(_) => false,
                });
                let constructor = nested
                    || matches!(
                        self.resolver.value(other),
                        Value::Global(p) if p.len() == 1 && p[0].starts_with(|c: char| c.is_ascii_uppercase())
                    );
                constructor.then_some("Function")
            }
        }
    }

    /// Whether the call at `id` is the object of a method call the resolver folds with it
    /// (`"…".split("")` in `"…".split("").reverse()`), so that the outer call checks the text.
    fn continues_fold(&self, id: NodeId) -> bool {
        let nodes = self.semantic.nodes();
        let (top, span) = self.climb(id, false);
        let parent = nodes.parent_id(top);
        let AstKind::StaticMemberExpression(m) = nodes.kind(parent) else {
            return false;
        };
        if m.object.span() != span {
            return false;
        }
        let (member, member_span) = self.climb(parent, false);
        matches!(
            nodes.parent_kind(member),
            AstKind::CallExpression(c) if c.callee.span() == member_span
        )
    }

    fn string_like(&self, expr: &Expression<'a>) -> bool {
        match expr.get_inner_expression() {
            Expression::StringLiteral(_) | Expression::TemplateLiteral(_) => true,
            Expression::BinaryExpression(b) if b.operator == BinaryOperator::Addition => {
                self.string_like(&b.left) || self.string_like(&b.right)
            }
            other => matches!(self.resolver.fold(other), Some(Const::Str(_))),
        }
    }

    /// An import, re-export, `require` or `import()` of `specifier`.
    fn module_load(&mut self, span: Span, specifier: &str) {
        if let Some((rule, message)) = classify_specifier(specifier, self.rel_path) {
            self.hit(rule, span, message);
        }
    }

    /// Prompt injection and the other phrase rules in a literal's text. `exact` says that the
    /// text is the source at `span` (no escapes), so a match can be placed where it is.
    fn literal_text(&mut self, span: Span, value: &str, exact: bool) {
        // A string literal's span includes its quotes.
        let content_start = match self.source.as_bytes().get(span.start as usize) {
            Some(b'"' | b'\'') => span.start as usize + 1,
            _ => span.start as usize,
        };
        self.text_rules(content_start, value, exact, span);
        if let Some(what) = text::encoded_run(value) {
            self.hit(rules::ENCODED_STRING, span, format!("holds {what}"));
        }
    }

    fn text_rules(&mut self, content_start: usize, value: &str, exact: bool, span: Span) {
        let normalized = text::normalize(value);
        let place = |offset: usize| -> Span {
            if exact {
                let at = (content_start + offset) as u32;
                Span::new(at, span.end.max(at))
            } else {
                span
            }
        };
        if let Some(m) = text::injection(&normalized) {
            let at = place(m.offset);
            self.hit(
                rules::PROMPT_INJECTION,
                at,
                format!(
                    "prompt injection: {} (\"{}\")",
                    m.message,
                    text::escape(&m.phrase)
                ),
            );
        }
        if let Some(m) = text::shell_decode(&normalized) {
            let at = place(m.offset);
            self.hit(
                rules::SHELL_DECODE,
                at,
                format!("{} (\"{}\")", m.message, text::escape(&m.phrase)),
            );
        }
        if let Some(m) = text::rot13(&normalized) {
            let at = place(m.offset);
            self.hit(rules::ROT13, at, m.message.to_owned());
        }
    }

    /// Text assembled from pieces (`"Ign" + "ore previous…"`, a template with constants):
    /// checked for injection when no single piece already was.
    fn composed_text(&mut self, span: Span, folded: Option<Const>) {
        let Some(Const::Str(folded)) = folded else {
            return;
        };
        if let Some(m) = text::injection(&text::normalize(&folded)) {
            self.composed.push((
                span,
                format!(
                    "prompt injection assembled from pieces: {} (\"{}\")",
                    m.message,
                    text::escape(&m.phrase)
                ),
            ));
        }
    }

    /// Report the assembled injections whose pieces were not already reported one by one, nor
    /// as a smaller assembly inside (`"x" + [..].join(" ")`: the join). The pieces are visited
    /// after the whole, so this runs at the end.
    fn report_composed(&mut self) {
        let mut single: Vec<usize> = self
            .hits
            .iter()
            .filter(|h| h.rule.id == rules::PROMPT_INJECTION.id)
            .map(|h| h.start)
            .collect();
        single.sort_unstable();
        let mut composed = std::mem::take(&mut self.composed);
        composed.sort_by_key(|(span, _)| (span.start, std::cmp::Reverse(span.end)));
        composed.dedup_by_key(|(span, _)| *span);
        // Syntax spans nest or are apart, so in this order an assembly holds another exactly
        // when the next one starts inside it.
        let holds_next: Vec<bool> = composed
            .windows(2)
            .map(|pair| pair[1].0.start < pair[0].0.end)
            .chain(std::iter::once(false))
            .collect();
        for ((span, message), holds) in composed.into_iter().zip(holds_next) {
            let (start, end) = (span.start as usize, span.end as usize);
            let first_inside = single.partition_point(|&at| at < start);
            if !holds && single.get(first_inside).is_none_or(|&at| at >= end) {
                self.hit(rules::PROMPT_INJECTION, span, message);
            }
        }
    }

    /// An identifier written with `\u` escapes: the name a reader sees is not the one that runs.
    fn identifier_spelling(&mut self, span: Span, name: &str) {
        let raw = self.slice(span);
        if raw.contains('\\') {
            let (rule, what) = if name.is_ascii() {
                (rules::ESCAPED_IDENTIFIER, "the identifier")
            } else {
                (
                    rules::ESCAPED_NON_ASCII_IDENTIFIER,
                    "the non-ASCII identifier",
                )
            };
            self.hit(
                rule,
                span,
                format!(
                    "writes {what} `{}` with unicode escapes",
                    text::escape(name)
                ),
            );
        }
        let mentions_rot = name
            .as_bytes()
            .windows(3)
            .any(|w| w.eq_ignore_ascii_case(b"rot"));
        if mentions_rot && text::rot13(&text::normalize(&text::identifier_words(name))).is_some() {
            self.hit(rules::ROT13, span, "a ROT13 reference".to_owned());
        }
    }
}
