//! Constant folding: the strings, numbers and string arrays an expression evaluates to when
//! everything it is built from is a literal or a binding that never changes (`"ev" + "al"`,
//! `["ev", "al"].join("")`, `atob("…")`). Bounded by depth, by the size of a folded string
//! and by a budget per file.

use oxc::ast::AstKind;
use oxc::ast::ast::{
    Argument, ArrayExpressionElement, BinaryExpression, BinaryOperator, BindingPattern,
    CallExpression, Expression, MemberExpression, TemplateLiteral,
};
use oxc::semantic::SymbolId;

use super::{MAX_DEPTH, MAX_FOLDED_BYTES, Resolver, Value};
use crate::scan::text::decode_base64;

/// A constant the resolver could fold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Const {
    /// A string.
    Str(String),
    /// A number.
    Num(f64),
    /// An array of strings (and numbers, as strings).
    List(Vec<String>),
}

impl Const {
    /// As JavaScript's `String(x)` would print it, for the cases folded.
    pub(crate) fn into_string(self) -> Option<String> {
        match self {
            Self::Str(s) => Some(s),
            Self::Num(n) => number_string(n),
            Self::List(items) => Some(items.join(",")),
        }
    }
}

fn number_string(n: f64) -> Option<String> {
    // Integers print the same in JavaScript and Rust; other numbers are left unknown.
    (n.is_finite() && n.fract() == 0.0 && n.abs() < 1e15).then(|| format!("{}", n as i64))
}

fn bounded(s: String) -> Option<String> {
    (s.len() <= MAX_FOLDED_BYTES).then_some(s)
}

impl<'s, 'a> Resolver<'s, 'a> {
    pub(super) fn fold_at(&self, expr: &Expression<'a>, depth: usize) -> Option<Const> {
        if depth > MAX_DEPTH || self.budget_exhausted() {
            return None;
        }
        let folded = self.fold_inner(expr, depth);
        self.spend(folded)
    }

    fn fold_inner(&self, expr: &Expression<'a>, depth: usize) -> Option<Const> {
        match expr.get_inner_expression() {
            Expression::StringLiteral(s) => Some(Const::Str(bounded(s.value.to_string())?)),
            Expression::NumericLiteral(n) => Some(Const::Num(n.value)),
            Expression::TemplateLiteral(t) => self.template_at(t, depth),
            Expression::BinaryExpression(b) if b.operator == BinaryOperator::Addition => {
                self.addition_at(b, depth)
            }
            Expression::ArrayExpression(a) => {
                let mut items = Vec::with_capacity(a.elements.len());
                let mut total = 0;
                for element in &a.elements {
                    match element {
                        ArrayExpressionElement::Elision(_) => return None,
                        // `[..."lave"]` spreads a string into its characters.
                        ArrayExpressionElement::SpreadElement(spread) => {
                            let more = spread_items(self.fold_at(&spread.argument, depth + 1)?)?;
                            total += more.iter().map(String::len).sum::<usize>();
                            items.extend(more);
                        }
                        other => {
                            let item = self.key_at(other.as_expression()?, depth + 1)?;
                            total += item.len();
                            items.push(item);
                        }
                    }
                    if total > MAX_FOLDED_BYTES {
                        return None;
                    }
                }
                Some(Const::List(items))
            }
            Expression::SequenceExpression(seq) => self.fold_at(seq.expressions.last()?, depth + 1),
            Expression::Identifier(id) => {
                let symbol = self.symbol_of(id)?;
                self.symbol_const(symbol, depth + 1)
            }
            Expression::CallExpression(call) => self.fold_call(call, depth + 1),
            _ => None,
        }
    }

    /// A template literal folded, when every substitution folds.
    pub(crate) fn fold_template(&self, t: &TemplateLiteral<'a>) -> Option<Const> {
        self.spend(self.template_at(t, 0))
    }

    /// A call folded (`[…].join(" ")`, `"…".split("").reverse().join("")`), when it is one
    /// the resolver folds and its parts fold.
    pub(crate) fn fold_call_expression(&self, call: &CallExpression<'a>) -> Option<Const> {
        if self.budget_exhausted() {
            return None;
        }
        self.spend(self.fold_call(call, 0))
    }

    /// `a + b + …` folded, when every operand folds.
    pub(crate) fn fold_addition(&self, b: &BinaryExpression<'a>) -> Option<Const> {
        self.spend(self.addition_at(b, 0))
    }

    /// Whether the file folded more text than [`FOLD_BUDGET_BYTES`], so that later folds gave
    /// up: what it assembles from constants was not all checked.
    pub(crate) fn budget_exhausted(&self) -> bool {
        self.budget.get() == 0
    }

    /// Count a folded result against the budget; nothing folds once it is spent.
    fn spend(&self, folded: Option<Const>) -> Option<Const> {
        let left = self.budget.get();
        if left == 0 {
            return None;
        }
        let size = match &folded {
            Some(Const::Str(s)) => s.len(),
            Some(Const::List(items)) => items.iter().map(String::len).sum(),
            _ => 0,
        };
        if size >= left {
            self.budget.set(0);
            return None;
        }
        self.budget.set(left - size);
        folded
    }

    fn template_at(&self, t: &TemplateLiteral<'a>, depth: usize) -> Option<Const> {
        let mut out = String::new();
        for (i, quasi) in t.quasis.iter().enumerate() {
            out.push_str(quasi.value.cooked.as_ref()?.as_str());
            if let Some(e) = t.expressions.get(i) {
                out.push_str(&self.key_at(e, depth + 1)?);
            }
            if out.len() > MAX_FOLDED_BYTES {
                return None;
            }
        }
        Some(Const::Str(out))
    }

    fn addition_at(&self, b: &BinaryExpression<'a>, depth: usize) -> Option<Const> {
        // Concatenations are left-deep: walk the left spine in a loop, not by recursion.
        let mut rights = vec![&b.right];
        let mut left = &b.left;
        while let Expression::BinaryExpression(inner) = left.get_inner_expression()
            && inner.operator == BinaryOperator::Addition
        {
            rights.push(&inner.right);
            left = &inner.left;
        }
        let mut acc = self.fold_at(left, depth + 1)?;
        for right in rights.into_iter().rev() {
            acc = add(acc, self.fold_at(right, depth + 1)?)?;
        }
        Some(acc)
    }

    fn symbol_const(&self, symbol: SymbolId, depth: usize) -> Option<Const> {
        if let Some(known) = self.consts.borrow().get(&symbol) {
            return known.clone();
        }
        self.consts.borrow_mut().insert(symbol, None);
        let value = match self.semantic.symbol_declaration(symbol).kind() {
            AstKind::VariableDeclarator(d)
                if self.followable(symbol)
                    && matches!(&d.id, BindingPattern::BindingIdentifier(_)) =>
            {
                d.init
                    .as_ref()
                    .and_then(|init| self.fold_at(init, depth + 1))
            }
            _ => None,
        };
        self.consts.borrow_mut().insert(symbol, value.clone());
        value
    }

    fn fold_call(&self, call: &CallExpression<'a>, depth: usize) -> Option<Const> {
        let args: Vec<&Expression<'a>> = call
            .arguments
            .iter()
            .map(Argument::as_expression)
            .collect::<Option<_>>()?;
        let string_arg = |i: usize| -> Option<String> { self.key_at(args.get(i)?, depth + 1) };
        if let Some(MemberExpression::StaticMemberExpression(m)) =
            call.callee.get_inner_expression().as_member_expression()
            && let Some(object) = self.fold_at(&m.object, depth + 1)
        {
            let method = m.property.name.as_str();
            return match (object, method) {
                (Const::List(items), "join") => {
                    let separator = match args.first() {
                        Some(_) => string_arg(0)?,
                        None => ",".to_owned(),
                    };
                    Some(Const::Str(bounded(items.join(&separator))?))
                }
                (Const::List(mut items), "reverse") => {
                    items.reverse();
                    Some(Const::List(items))
                }
                (Const::List(mut items), "concat") => {
                    for arg in &args {
                        match self.fold_at(arg, depth + 1)? {
                            Const::List(more) => items.extend(more),
                            other => items.push(other.into_string()?),
                        }
                    }
                    Some(Const::List(items))
                }
                (Const::Str(s), "split") => {
                    let separator = string_arg(0)?;
                    let items: Vec<String> = if separator.is_empty() {
                        s.chars().map(String::from).collect()
                    } else {
                        s.split(separator.as_str()).map(str::to_owned).collect()
                    };
                    Some(Const::List(items))
                }
                (Const::Str(mut s), "concat") => {
                    for i in 0..args.len() {
                        s.push_str(&string_arg(i)?);
                    }
                    Some(Const::Str(bounded(s)?))
                }
                (Const::Str(s), "toLowerCase") => Some(Const::Str(s.to_lowercase())),
                (Const::Str(s), "toUpperCase") => Some(Const::Str(s.to_uppercase())),
                (Const::Str(s), "trim") => Some(Const::Str(s.trim().to_owned())),
                (Const::Str(s), "replace") => {
                    Some(Const::Str(s.replacen(&string_arg(0)?, &string_arg(1)?, 1)))
                }
                (Const::Str(s), "replaceAll") => {
                    let from = string_arg(0)?;
                    if from.is_empty() {
                        return None;
                    }
                    Some(Const::Str(bounded(s.replace(&from, &string_arg(1)?))?))
                }
                _ => None,
            };
        }
        match self.value_at(&call.callee, depth + 1) {
            Value::Global(path)
                if path.as_slice() == ["String", "fromCharCode"]
                    || path.as_slice() == ["String", "fromCodePoint"] =>
            {
                let mut out = String::new();
                for arg in &args {
                    let Const::Num(n) = self.fold_at(arg, depth + 1)? else {
                        return None;
                    };
                    if !(0.0..=f64::from(0x10FFFF)).contains(&n) || n.fract() != 0.0 {
                        return None;
                    }
                    out.push(char::from_u32(n as u32)?);
                }
                Some(Const::Str(out))
            }
            Value::Global(path) if path.as_slice() == ["atob"] => {
                Some(Const::Str(decode_base64(&string_arg(0)?)?))
            }
            Value::Global(path) if path.as_slice() == ["Array", "from"] && args.len() == 1 => Some(
                Const::List(spread_items(self.fold_at(args.first()?, depth + 1)?)?),
            ),
            _ => None,
        }
    }
}

/// What spreading a folded constant gives: a string's characters, an array's items.
fn spread_items(value: Const) -> Option<Vec<String>> {
    match value {
        Const::Str(s) => Some(s.chars().map(String::from).collect()),
        Const::List(items) => Some(items),
        Const::Num(_) => None,
    }
}

/// `a + b` for folded constants, as JavaScript computes it for the cases folded.
fn add(a: Const, b: Const) -> Option<Const> {
    match (a, b) {
        (Const::Num(x), Const::Num(y)) => Some(Const::Num(x + y)),
        (a, b) => {
            let mut s = a.into_string()?;
            s.push_str(&b.into_string()?);
            Some(Const::Str(bounded(s)?))
        }
    }
}
