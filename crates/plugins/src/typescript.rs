//! TypeScript to JavaScript by erasing types, with oxc: parse as a TypeScript module, build
//! scoping, run only the TypeScript transform (target `esnext`, so ES syntax stays as written)
//! and print. Enums and parameter properties are lowered to the JavaScript they mean.
//!
//! This module parses and prints; it never runs what it reads. Any diagnostic — a syntax error,
//! a construct the transform cannot erase faithfully (a non-const namespace export,
//! `import x = require(...)`) — refuses the file, with its line and column, rather than emit
//! JavaScript whose meaning might differ from the source.

use std::path::{Path, PathBuf};

use oxc::allocator::Allocator;
use oxc::ast::AstKind;
use oxc::ast::ast::Program;
use oxc::ast_visit::Visit;
use oxc::codegen::{Codegen, CodegenOptions};
use oxc::diagnostics::OxcDiagnostic;
use oxc::parser::Parser;
use oxc::semantic::SemanticBuilder;
use oxc::span::SourceType;
use oxc::transformer::{TransformOptions, Transformer};

use crate::line_col;

/// Largest TypeScript source [`strip_types`] accepts: 4 MiB.
pub const MAX_SOURCE_BYTES: usize = 4 * 1024 * 1024;

/// Deepest syntax tree [`strip_types`] prints. Far beyond hand-written or bundled code; it stops
/// a small file of nested blocks from making the printer's indentation quadratic.
pub const MAX_NESTING: usize = 10_000;

/// Why TypeScript could not be turned into JavaScript.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypeScriptError {
    /// The source is over [`MAX_SOURCE_BYTES`].
    #[error(
        "{path}: {bytes} bytes is over the 4 MiB bound for a TypeScript file: split the module"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: usize,
    },
    /// The source nests deeper than [`MAX_NESTING`], or is too dense to parse within the stack
    /// Bosun gives a parser.
    #[error("{path}: {problem}")]
    TooDeep {
        /// The file.
        path: PathBuf,
        /// What and what to do.
        problem: String,
    },
    /// The parser, the scope analysis or the transform reported a problem.
    #[error("{path}:{line}:{column}: {message}{more}", more = more_problems(*.more))]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line of the first problem.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// oxc's message for the first problem.
        message: String,
        /// How many further problems were reported.
        more: usize,
    },
    /// The parser thread could not start or stopped abnormally.
    #[error("{path}: {problem}")]
    Internal {
        /// The file.
        path: PathBuf,
        /// What happened and what to do.
        problem: String,
    },
}

fn more_problems(more: usize) -> String {
    match more {
        0 => String::new(),
        1 => " (and 1 more problem)".to_owned(),
        n => format!(" (and {n} more problems)"),
    }
}

/// Erase the types of a TypeScript module and return JavaScript with the same runtime meaning.
/// `path` names the file in errors (and tells the transform the module's name); the source is
/// always parsed as a TypeScript module, whatever its extension.
///
/// ```
/// use std::path::Path;
///
/// let js = bosun_plugins::typescript::strip_types(
///     Path::new("mod.ts"),
///     "export const n: number = 1 as const;",
/// )
/// .unwrap();
/// assert_eq!(js, "export const n = 1;\n");
/// ```
pub fn strip_types(path: &Path, source: &str) -> Result<String, TypeScriptError> {
    strip_types_mapped(path, source).map(|stripped| stripped.code)
}

/// JavaScript [`strip_types`] printed, with where each of its positions came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stripped {
    /// The JavaScript.
    pub code: String,
    /// Its positions in the TypeScript source.
    pub positions: SourcePositions,
}

/// Where the JavaScript printed from a TypeScript file came from: the printer's mappings (one at
/// each statement, expression and name it printed), so that an error thrown at a position of the
/// JavaScript can name the line and column the author wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourcePositions {
    /// `[generated line, generated column, source line, source column]`, 0-based, sorted by
    /// the generated position.
    marks: Vec<[u32; 4]>,
}

impl SourcePositions {
    /// The TypeScript line and column (1-based) of JavaScript line `line`, column `column`
    /// (1-based): the nearest mapping at or before it on that line, or the line's first one.
    /// `None` when the line has no mapping (a blank or synthesised line). Columns count UTF-16
    /// units as the source map does; in ASCII they are characters.
    pub fn original(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        let (line, column) = (line.checked_sub(1)?, column.saturating_sub(1));
        let first = self.marks.partition_point(|m| m[0] < line);
        let end = self.marks.partition_point(|m| m[0] <= line);
        let on_line = self.marks.get(first..end)?;
        let at = on_line.partition_point(|m| m[1] <= column);
        let mark = on_line.get(at.saturating_sub(1))?;
        Some((mark[2] + 1, mark[3] + 1))
    }
}

/// As [`strip_types`], keeping where each position of the JavaScript came from.
///
/// # Errors
/// As [`strip_types`].
pub fn strip_types_mapped(path: &Path, source: &str) -> Result<Stripped, TypeScriptError> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(TypeScriptError::TooLarge {
            path: path.to_owned(),
            bytes: source.len(),
        });
    }
    match on_parser_stack(source, || strip_on_this_thread(path, source)) {
        Ok(result) => result,
        Err(ParseGuard::TooDense(problem)) => Err(TypeScriptError::TooDeep {
            path: path.to_owned(),
            problem,
        }),
        Err(ParseGuard::Thread(problem)) => Err(TypeScriptError::Internal {
            path: path.to_owned(),
            problem,
        }),
    }
}

fn strip_on_this_thread(path: &Path, source: &str) -> Result<Stripped, TypeScriptError> {
    let fail = |diagnostics: &[OxcDiagnostic]| syntax_error(path, source, diagnostics);
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::ts().with_module(true)).parse();
    if parsed.panicked || !parsed.diagnostics.is_empty() {
        return Err(fail(&parsed.diagnostics));
    }
    let mut program = parsed.program;
    // The enum transform needs member values evaluated while scopes are built.
    let semantic = SemanticBuilder::new()
        .with_check_syntax_error(true)
        .with_enum_eval(true)
        .build(&program);
    if !semantic.diagnostics.is_empty() {
        return Err(fail(&semantic.diagnostics));
    }
    let depth = nesting_depth(&program);
    if depth > MAX_NESTING {
        return Err(TypeScriptError::TooDeep {
            path: path.to_owned(),
            problem: format!(
                "the syntax nests {depth} levels deep, over the bound of {MAX_NESTING}: flatten the deepest expression or block"
            ),
        });
    }
    let scoping = semantic.semantic.into_scoping();
    let options =
        TransformOptions::from_target("esnext").map_err(|problem| TypeScriptError::Internal {
            path: path.to_owned(),
            problem: format!("the TypeScript transform cannot be configured: {problem}"),
        })?;
    let transformed =
        Transformer::new(&allocator, path, &options).build_with_scoping(scoping, &mut program);
    if !transformed.diagnostics.is_empty() {
        return Err(fail(&transformed.diagnostics));
    }
    let printed = Codegen::new()
        .with_options(CodegenOptions {
            source_map_path: Some(path.to_owned()),
            ..CodegenOptions::default()
        })
        .build(&program);
    let mut marks: Vec<[u32; 4]> = printed
        .map
        .iter()
        .flat_map(|map| map.get_tokens())
        .map(|t| {
            [
                t.get_dst_line(),
                t.get_dst_col(),
                t.get_src_line(),
                t.get_src_col(),
            ]
        })
        .collect();
    marks.sort_unstable();
    Ok(Stripped {
        code: printed.code,
        positions: SourcePositions { marks },
    })
}

/// The first diagnostic, placed; oxc may report none on a panicked parse.
fn syntax_error(path: &Path, source: &str, diagnostics: &[OxcDiagnostic]) -> TypeScriptError {
    let (line, column, message) = match diagnostics.first() {
        Some(first) => {
            let (line, column) = diagnostic_position(source, first);
            (line, column, diagnostic_message(first))
        }
        None => (1, 1, "the parser gave up on this file".to_owned()),
    };
    TypeScriptError::Syntax {
        path: path.to_owned(),
        line,
        column,
        message,
        more: diagnostics.len().saturating_sub(1),
    }
}

/// The byte offset a diagnostic points at: its primary label, else its first, else 0.
pub(crate) fn diagnostic_offset(diagnostic: &OxcDiagnostic) -> usize {
    let labels = &diagnostic.labels;
    let label = labels.iter().find(|l| l.primary()).or(labels.first());
    label.map_or(0, |l| l.offset() as usize)
}

/// The line and column a diagnostic points at (see [`diagnostic_offset`]).
pub(crate) fn diagnostic_position(source: &str, diagnostic: &OxcDiagnostic) -> (usize, usize) {
    line_col(source, diagnostic_offset(diagnostic))
}

/// oxc's message, with its help when it has one.
pub(crate) fn diagnostic_message(diagnostic: &OxcDiagnostic) -> String {
    match &diagnostic.help {
        Some(help) => format!("{} ({help})", diagnostic.message),
        None => diagnostic.message.to_string(),
    }
}

/// How deep a syntax tree nests, in nodes.
fn nesting_depth(program: &Program<'_>) -> usize {
    struct Depth {
        now: usize,
        max: usize,
    }
    impl<'a> Visit<'a> for Depth {
        fn enter_node(&mut self, _: AstKind<'a>) {
            self.now += 1;
            self.max = self.max.max(self.now);
        }
        fn leave_node(&mut self, _: AstKind<'a>) {
            self.now = self.now.saturating_sub(1);
        }
    }
    let mut depth = Depth { now: 0, max: 0 };
    depth.visit_program(program);
    depth.max
}

/// Why [`on_parser_stack`] did not run its work.
#[derive(Debug)]
pub(crate) enum ParseGuard {
    /// The source could nest deeper than the largest stack Bosun gives a parser.
    TooDense(String),
    /// The thread could not start, or stopped abnormally.
    Thread(String),
}

/// Stack bytes one opening byte — `(`, `[`, `{`, `<` or a backtick — may cost. oxc's parser,
/// scope analysis, transform and printer recurse once per level of nesting: measured with oxc
/// 0.146, `class extends (` costs ~2.8 KiB a level, `{a:` and `` `${ `` ~1.8 KiB, `(`, `[` and
/// `A<` ~1.6 KiB.
const STACK_PER_OPENER: u64 = 4 * 1024;
/// Stack bytes any other operator byte may cost: `=>` ~0.9 KiB, `?` and `=` ~0.55 KiB, a
/// member or binary chain (`a.b.b…`, `1+1+…`) ~0.35 KiB, a unary `!` ~0.1 KiB.
const STACK_PER_OPERATOR: u64 = 1024;
/// Stack bytes one word may cost (a keyword such as `new`, `keyof` or `else if`: ≤ 0.6 KiB).
const STACK_PER_WORD: u64 = 1024;
/// Stack for everything that does not nest.
const STACK_BASE: u64 = 16 * 1024 * 1024;
/// The largest stack a parser thread gets; a source that could need more is refused. The stack
/// is reserved address space: only the pages that a deeply nested file reaches are used.
const STACK_MAX: u64 = 4 * 1024 * 1024 * 1024;

/// A stack on which oxc cannot overflow whatever `source` holds: an upper bound from counts of
/// the bytes that can open a level of nesting, so that it holds for every arrangement of them
/// (bytes inside strings and comments are counted too). Closing brackets, `,`, `;` and quotes
/// open nothing. `None` when the bound is over [`STACK_MAX`].
fn parser_stack_bytes(source: &str) -> Option<usize> {
    let mut openers: u64 = 0;
    let mut operators: u64 = 0;
    let mut words: u64 = 0;
    let mut in_word = false;
    for &b in source.as_bytes() {
        let word_byte = b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
        match b {
            b'(' | b'[' | b'{' | b'<' | b'`' => openers += 1,
            b')' | b']' | b'}' | b',' | b';' | b'"' | b'\'' => {}
            _ if word_byte && !in_word => words += 1,
            _ if word_byte => {}
            _ if b.is_ascii_punctuation() => operators += 1,
            _ => {}
        }
        in_word = word_byte;
    }
    let bytes = STACK_BASE
        + openers * STACK_PER_OPENER
        + operators * STACK_PER_OPERATOR
        + words * STACK_PER_WORD;
    if bytes > STACK_MAX {
        return None;
    }
    usize::try_from(bytes).ok()
}

/// Run `work`, which parses or walks `source`, on a thread whose stack is large enough for any
/// nesting `source` can hold, so that hostile input cannot overflow a stack and abort the process.
/// A panic inside oxc becomes an error too.
pub(crate) fn on_parser_stack<T: Send>(
    source: &str,
    work: impl FnOnce() -> T + Send,
) -> Result<T, ParseGuard> {
    let stack = parser_stack_bytes(source).ok_or_else(|| {
        ParseGuard::TooDense(
            "the file holds too many nesting tokens to parse within a 4 GiB stack: split it into smaller modules"
                .to_owned(),
        )
    })?;
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("bosun-js-parse".to_owned())
            .stack_size(stack)
            .spawn_scoped(scope, work)
            .map_err(|e| {
                ParseGuard::Thread(format!(
                    "cannot start a parser thread with a {} MiB stack: {e}: free some memory, or split the file",
                    stack / (1024 * 1024)
                ))
            })?;
        handle.join().map_err(|_| {
            ParseGuard::Thread(
                "the JavaScript parser stopped on this input; please report it as a Bosun bug"
                    .to_owned(),
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn strip(source: &str) -> String {
        strip_types(Path::new("mod.ts"), source).unwrap()
    }

    #[test]
    fn positions_in_the_javascript_lead_back_to_the_typescript() {
        let ts = "interface Input {\n  text: string;\n  count?: number;\n}\n\n\
                  type Out = { words: number };\n\n\
                  export function run(input: Input): Out {\n  \
                  const n: number = input.count ?? 0;\n  \
                  if (n < 0) throw new RangeError(`bad ${n}`);\n  \
                  return { words: n };\n}\n";
        let stripped = strip_types_mapped(Path::new("mod.ts"), ts).unwrap();
        let (index, line) = stripped
            .code
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains("throw"))
            .unwrap();
        let column = line.find("throw").unwrap() + 1;
        let js_line = u32::try_from(index + 1).unwrap();
        // The throw is on the JavaScript's line 3 and the TypeScript's line 10, column 14.
        assert!(js_line < 10, "{}", stripped.code);
        assert_eq!(
            stripped
                .positions
                .original(js_line, u32::try_from(column).unwrap()),
            Some((10, 14))
        );
        // A position past the end maps to nothing rather than somewhere wrong.
        assert_eq!(stripped.positions.original(1000, 1), None);
        assert_eq!(stripped.positions.original(0, 1), None);
    }

    #[test]
    fn interfaces_generics_and_annotations_are_erased() {
        let ts = "interface A { x: number }\n\
                  type Pair<T> = [T, T];\n\
                  export function first<T extends A>(items: Array<T>, fallback?: T): T | undefined {\n\
                  \x20 const out: T | undefined = items[0] ?? fallback;\n\
                  \x20 return out;\n\
                  }\n\
                  const id = <T,>(x: T): T => x;\n";
        assert_eq!(
            strip(ts),
            "export function first(items, fallback) {\n\tconst out = items[0] ?? fallback;\n\treturn out;\n}\nconst id = (x) => x;\n"
        );
    }

    #[test]
    fn type_only_imports_and_exports_are_erased() {
        let ts = "import type { PluginContext } from \"../../../src/plugin/types.ts\";\n\
                  import { type Options, run } from \"./run.ts\";\n\
                  export type { Tool } from \"./types.ts\";\n\
                  export type Id = string;\n\
                  export interface Manifest { name: string }\n\
                  export function go(ctx: PluginContext, o: Options): Id { return run(ctx, o); }\n";
        assert_eq!(
            strip(ts),
            "import { run } from \"./run.ts\";\nexport function go(ctx, o) {\n\treturn run(ctx, o);\n}\n"
        );
    }

    #[test]
    fn as_const_satisfies_and_non_null_leave_only_the_value() {
        let ts = "export const manifest = {\n\
                  \x20 trust: \"sandboxed\" as const,\n\
                  \x20 tags: [\"a\", \"b\"] as const,\n\
                  } satisfies Record<string, unknown>;\n\
                  const el = document.getElementById(\"x\")!;\n\
                  const n = (<number>(el as any).value)!;\n";
        assert_eq!(
            strip(ts),
            "export const manifest = {\n\ttrust: \"sandboxed\",\n\ttags: [\"a\", \"b\"]\n};\nconst el = document.getElementById(\"x\");\nconst n = el.value;\n"
        );
    }

    #[test]
    fn enums_are_lowered_to_objects_with_reverse_mapping() {
        let ts = "export enum Color { Red, Green = 5, Blue }\nenum Dir { Up = \"UP\" }\nconsole.log(Color.Blue, Dir.Up);\n";
        assert_eq!(
            strip(ts),
            "export let Color = /* @__PURE__ */ function(Color) {\n\
             \tColor[Color[\"Red\"] = 0] = \"Red\";\n\
             \tColor[Color[\"Green\"] = 5] = \"Green\";\n\
             \tColor[Color[\"Blue\"] = 6] = \"Blue\";\n\
             \treturn Color;\n\
             }({});\n\
             var Dir = /* @__PURE__ */ function(Dir) {\n\
             \tDir[\"Up\"] = \"UP\";\n\
             \treturn Dir;\n\
             }(Dir || {});\n\
             console.log(Color.Blue, Dir.Up);\n"
        );
    }

    #[test]
    fn parameter_properties_are_still_assigned() {
        // The runtime meaning of a parameter property is the assignment: erasing it with the
        // type would leave `this.x` undefined.
        let ts = "export class Point {\n\
                  \x20 constructor(public x: number, private readonly y: number, z: number) {\n\
                  \x20   console.log(z);\n\
                  \x20 }\n\
                  \x20 sum(): number { return this.x + this.y; }\n\
                  }\n";
        assert_eq!(
            strip(ts),
            "export class Point {\n\tx;\n\ty;\n\tconstructor(x, y, z) {\n\t\tthis.x = x;\n\t\tthis.y = y;\n\t\tconsole.log(z);\n\t}\n\tsum() {\n\t\treturn this.x + this.y;\n\t}\n}\n"
        );
    }

    #[test]
    fn modern_javascript_is_kept_as_written() {
        let js = "export class C {\n\t#n = 1;\n\tstatic s = 2;\n\tget n() {\n\t\treturn this.#n;\n\t}\n}\nexport const v = a?.b ?? c;\nexport async function* g() {\n\tfor await (const x of y) yield x;\n}\n";
        assert_eq!(strip(js), js);
    }

    #[test]
    fn a_syntax_error_names_the_file_line_and_column() {
        let err = strip_types(
            Path::new("plugins/x/mod.ts"),
            "export const a = 1;\nconst b: number = ;\n",
        )
        .unwrap_err();
        assert_eq!(
            err,
            TypeScriptError::Syntax {
                path: PathBuf::from("plugins/x/mod.ts"),
                line: 2,
                column: 19,
                message: "Unexpected token".to_owned(),
                more: 0,
            }
        );
        assert_eq!(err.to_string(), "plugins/x/mod.ts:2:19: Unexpected token");
    }

    #[test]
    fn what_cannot_be_erased_faithfully_is_refused() {
        // oxc warns (and would emit wrong code) for a namespace exporting a `let`.
        let err = strip_types(
            Path::new("ns.ts"),
            "export namespace N {\n  export let x = 1;\n}\n",
        )
        .unwrap_err();
        let TypeScriptError::Syntax { line, message, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(*line, 2, "{err}");
        assert!(message.contains("Namespaces exporting non-const"), "{err}");
    }

    #[test]
    fn oversized_source_is_refused_with_the_bound() {
        let source = "//".to_owned() + &"x".repeat(MAX_SOURCE_BYTES);
        let err = strip_types(Path::new("big.ts"), &source).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "big.ts: {} bytes is over the 4 MiB bound for a TypeScript file: split the module",
                MAX_SOURCE_BYTES + 2
            )
        );
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_a_stack() {
        // Nested blocks would make the printer's output quadratic in the nesting.
        let blocks = format!("{}{}", "{".repeat(20_000), "}".repeat(20_000));
        let err = strip_types(Path::new("deep.ts"), &blocks).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "deep.ts: the syntax nests 20001 levels deep, over the bound of 10000"
            ),
            "{err}"
        );
        // Each shape costs oxc the most stack per byte; filled up to the size bound, each is
        // either refused before parsing or parsed on a stack large enough for it.
        let fill = MAX_SOURCE_BYTES / 2 - 8;
        for (open, close) in [("(", ")"), ("[", "]"), ("{a:", "}"), ("`${", "}`")] {
            let n = fill / (open.len() + close.len());
            let source = format!("x = {}1{};", open.repeat(n), close.repeat(n));
            let err = strip_types(Path::new("dense.ts"), &source).unwrap_err();
            assert!(
                matches!(err, TypeScriptError::TooDeep { .. }),
                "{open}: {err}"
            );
        }
        // Under the stack bound: parsed on a large stack, then refused by the nesting bound.
        for (open, close) in [("(", ")"), ("class extends (", ") {}")] {
            let n = 200_000 / open.len().min(4);
            let source = format!("x = {}1{};", open.repeat(n), close.repeat(n));
            let err = strip_types(Path::new("dense.ts"), &source).unwrap_err();
            assert!(err.to_string().contains("levels deep"), "{open}: {err}");
        }
    }
}
