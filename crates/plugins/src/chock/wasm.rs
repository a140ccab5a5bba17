//! The sections of a Chock module that its reader needs, walked with `wasmparser` without
//! compiling anything: imports, the two address globals, the exported functions' types and the
//! active data segments the metadata is read from.

use wasmparser::{
    CompositeInnerType, DataKind, Encoding, ExternalKind, Operator, Parser, Payload, TypeRef,
    ValType,
};

use crate::PluginError;
use crate::chock::refuse;

/// Most sections a module may have.
const MAX_SECTIONS: usize = 1024;
/// Longest export name.
const MAX_EXPORT_NAME: usize = 1024;
/// Most operators of a constant expression.
const MAX_CONST_OPS: usize = 16;

/// The parts of a module the reader needs.
#[derive(Default)]
pub(super) struct Sections<'a> {
    pub(super) imports: Vec<String>,
    pub(super) imported_globals: u32,
    pub(super) imported_funcs: u32,
    pub(super) types: Vec<Option<(Vec<ValType>, Vec<ValType>)>>,
    pub(super) funcs: Vec<u32>,
    /// Per defined global: its `i32.const` value, when it is a constant i32.
    pub(super) globals: Vec<Option<i32>>,
    pub(super) exports: Vec<(String, ExternalKind, u32)>,
    pub(super) segments: Vec<(u32, &'a [u8])>,
}

/// Walks the sections, keeping what the reader needs; function bodies are skipped unread.
pub(super) fn walk(bytes: &[u8]) -> Result<Sections<'_>, PluginError> {
    let bad = |e: wasmparser::BinaryReaderError| {
        refuse(format!("the module is malformed: {}", e.message()))
    };
    let mut s = Sections::default();
    let mut count = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(bad)?;
        count += 1;
        if count > MAX_SECTIONS {
            return Err(refuse(format!(
                "the module has more than {MAX_SECTIONS} sections"
            )));
        }
        match payload {
            Payload::Version { num, encoding, .. } => {
                if encoding == Encoding::Component {
                    return Err(refuse(
                        "this is a WebAssembly component, not a Chock module",
                    ));
                }
                if num != 1 {
                    return Err(refuse(format!(
                        "built for WebAssembly binary format {num}, this reader knows 1"
                    )));
                }
            }
            Payload::TypeSection(reader) => {
                for group in reader {
                    for ty in group.map_err(bad)?.into_types() {
                        s.types.push(match &ty.composite_type.inner {
                            CompositeInnerType::Func(f) => {
                                Some((f.params().to_vec(), f.results().to_vec()))
                            }
                            _ => None,
                        });
                    }
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(bad)?;
                    match import.ty {
                        TypeRef::Global(_) => s.imported_globals += 1,
                        TypeRef::Func(_) => s.imported_funcs += 1,
                        _ => {}
                    }
                    s.imports.push(format!("{}.{}", import.module, import.name));
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    s.funcs.push(ty.map_err(bad)?);
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    if memory.map_err(bad)?.shared {
                        return Err(refuse("the module declares a shared memory"));
                    }
                }
            }
            Payload::GlobalSection(reader) => {
                for global in reader {
                    let global = global.map_err(bad)?;
                    let value = if global.ty.content_type == ValType::I32 && !global.ty.mutable {
                        const_i32(&global.init_expr)
                    } else {
                        None
                    };
                    s.globals.push(value);
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(bad)?;
                    if export.name.len() > MAX_EXPORT_NAME {
                        return Err(refuse("an export name is longer than 1024 bytes"));
                    }
                    s.exports
                        .push((export.name.to_owned(), export.kind, export.index));
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data.map_err(bad)?;
                    if let DataKind::Active {
                        memory_index: 0,
                        offset_expr,
                    } = data.kind
                        && let Some(offset) = const_i32(&offset_expr)
                    {
                        #[allow(clippy::cast_sign_loss)]
                        s.segments.push((offset as u32, data.data));
                    }
                }
            }
            _ => {}
        }
    }
    s.segments.sort_by_key(|(offset, _)| *offset);
    for pair in s.segments.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if u64::from(a.0) + a.1.len() as u64 > u64::from(b.0) {
            return Err(refuse(format!(
                "two data segments overlap at address {}",
                b.0
            )));
        }
    }
    Ok(s)
}

/// The value of a constant expression that is exactly `i32.const N` (≤ 16 operators read).
fn const_i32(expr: &wasmparser::ConstExpr<'_>) -> Option<i32> {
    let mut reader = expr.get_operators_reader();
    let mut value = None;
    for _ in 0..MAX_CONST_OPS {
        match reader.read().ok()? {
            Operator::I32Const { value: v } if value.is_none() => value = Some(v),
            Operator::End => return value,
            _ => return None,
        }
    }
    None
}

impl Sections<'_> {
    pub(super) fn global_address(
        &self,
        name: &str,
        export: (ExternalKind, u32),
    ) -> Result<u32, PluginError> {
        let (kind, index) = export;
        if kind != ExternalKind::Global {
            return Err(refuse(format!(
                "the module exports {name} as a {}, and a plugin exports it as a global",
                kind_name(kind)
            )));
        }
        let Some(defined) = index.checked_sub(self.imported_globals) else {
            return Err(refuse(format!("{name} is an imported global")));
        };
        match self.globals.get(defined as usize) {
            #[allow(clippy::cast_sign_loss)]
            Some(Some(addr)) => Ok(*addr as u32),
            Some(None) => Err(refuse(format!(
                "{name} is not a constant i32 global initialised with i32.const"
            ))),
            None => Err(refuse(format!(
                "{name} names a global the module does not have"
            ))),
        }
    }

    pub(super) fn check_function(
        &self,
        name: &str,
        export: Option<(ExternalKind, u32)>,
        params: &[ValType],
        results: &[ValType],
    ) -> Result<(), PluginError> {
        let Some((kind, index)) = export else {
            return Err(refuse(format!(
                "an incomplete Chock plugin: it does not export {name}"
            )));
        };
        if kind != ExternalKind::Func {
            return Err(refuse(format!(
                "the module exports {name} as a {}, and a plugin exports it as a function",
                kind_name(kind)
            )));
        }
        let ty = index
            .checked_sub(self.imported_funcs)
            .and_then(|i| self.funcs.get(i as usize))
            .and_then(|t| self.types.get(*t as usize))
            .and_then(Option::as_ref);
        match ty {
            Some((p, r)) if p == params && r == results => Ok(()),
            _ => Err(refuse(format!(
                "{name} has the wrong signature: Chock's ABI wants ({}) -> ({})",
                types(params),
                types(results)
            ))),
        }
    }

    /// `len` bytes at `addr`, from active segments that cover them without a hole.
    pub(super) fn read(&self, addr: u32, len: u32) -> Option<Vec<u8>> {
        let end = u64::from(addr) + u64::from(len);
        let mut out = Vec::with_capacity(len as usize);
        let mut pos = u64::from(addr);
        while pos < end {
            let (start, data) = self
                .segments
                .iter()
                .find(|(s, d)| u64::from(*s) <= pos && pos < u64::from(*s) + d.len() as u64)?;
            let from = usize::try_from(pos - u64::from(*start)).ok()?;
            let to = usize::try_from((end - u64::from(*start)).min(data.len() as u64)).ok()?;
            out.extend_from_slice(data.get(from..to)?);
            pos = u64::from(*start) + to as u64;
        }
        Some(out)
    }

    pub(super) fn read_u32(&self, addr: u32) -> Option<u32> {
        let b = self.read(addr, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

fn kind_name(kind: ExternalKind) -> &'static str {
    match kind {
        ExternalKind::Func | ExternalKind::FuncExact => "function",
        ExternalKind::Table => "table",
        ExternalKind::Memory => "memory",
        ExternalKind::Global => "global",
        ExternalKind::Tag => "tag",
    }
}

fn types(list: &[ValType]) -> String {
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
