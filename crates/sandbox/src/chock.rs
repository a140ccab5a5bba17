//! Chock plugins in the sandbox: a core WebAssembly module with no imports, called through
//! Chock's ABI. The module gets no host function at all; it is a pure function from an
//! argument record to text, run under the same deadline, memory cap, cancellation and output
//! bound as every other plugin.
//!
//! One call: `chock_plugin_init` once per instance (its count must equal the metadata's tool
//! count), then `chock_plugin_arguments(len)` for the address of the guest's argument buffer
//! (0 = too long), the record written there, `chock_plugin_call(index, ptr, len)` for the
//! address of a 12-byte answer `{outcome, text_ptr, text_len}`, every field of which is bounded
//! against the memory with checked arithmetic before a byte is read.

use wasmtime::{Instance, Memory, Store, TypedFunc};

use crate::store::StoreState;

/// Longest text a Chock plugin may answer with (1 MiB), before the output bound.
pub(crate) const MAX_TEXT_BYTES: u32 = 1 << 20;
/// Largest argument record (64 KiB).
pub(crate) const MAX_ARGUMENT_BYTES: usize = 64 * 1024;

/// An instance's Chock exports.
pub(crate) struct ChockBound {
    memory: Memory,
    init: TypedFunc<(), i32>,
    arguments: TypedFunc<i32, i32>,
    call: TypedFunc<(i32, i32, i32), i32>,
    /// The tool count the metadata declares.
    tools: u32,
    initialised: bool,
}

/// How a Chock call answered.
pub(crate) enum Answer {
    /// Outcome 0.
    Success(String),
    /// Outcome 1: the tool failed, with its text.
    Failure(String),
}

fn fault(message: String) -> wasmtime::Error {
    wasmtime::Error::msg(message)
}

impl ChockBound {
    /// Looks up the exports (their types were checked when the module was loaded).
    pub(crate) fn new(
        instance: &Instance,
        store: &mut Store<StoreState>,
        tools: u32,
    ) -> wasmtime::Result<Self> {
        Ok(Self {
            memory: instance
                .get_memory(&mut *store, "memory")
                .ok_or_else(|| fault("the module exports no memory".into()))?,
            init: instance.get_typed_func(&mut *store, "chock_plugin_init")?,
            arguments: instance.get_typed_func(&mut *store, "chock_plugin_arguments")?,
            call: instance.get_typed_func(&mut *store, "chock_plugin_call")?,
            tools,
            initialised: false,
        })
    }

    /// Runs tool `index` with the argument record `args`.
    pub(crate) async fn run(
        &mut self,
        store: &mut Store<StoreState>,
        index: u32,
        args: &[u8],
    ) -> wasmtime::Result<Answer> {
        if !self.initialised {
            let bound = self.init.call_async(&mut *store, ()).await?;
            if u32::try_from(bound).ok() != Some(self.tools) {
                return Err(fault(format!(
                    "chock_plugin_init bound {bound} tools, and the module's metadata declares {}",
                    self.tools
                )));
            }
            self.initialised = true;
        }
        if args.len() > MAX_ARGUMENT_BYTES {
            return Err(fault(format!(
                "the arguments are {} bytes, and a Chock plugin's buffer holds {MAX_ARGUMENT_BYTES}",
                args.len()
            )));
        }
        let len = i32::try_from(args.len()).unwrap_or(i32::MAX);
        // A tool that takes nothing receives 0 bytes; guest memory is not touched for it.
        let ptr = if args.is_empty() {
            0
        } else {
            let ptr = self.arguments.call_async(&mut *store, len).await?;
            if ptr == 0 {
                return Err(fault(format!(
                    "chock_plugin_arguments refused {} bytes of arguments",
                    args.len()
                )));
            }
            self.memory
                .write(&mut *store, addr(ptr), args)
                .map_err(|_| {
                    fault(format!(
                        "chock_plugin_arguments answered address {}, and {} bytes there are outside the plugin's memory",
                        addr(ptr),
                        args.len()
                    ))
                })?;
            ptr
        };
        let index = i32::try_from(index).map_err(|_| fault("tool index out of range".into()))?;
        let record = self.call.call_async(&mut *store, (index, ptr, len)).await?;
        if record == 0 {
            return Err(fault(format!(
                "the plugin gave no answer for tool index {index}: it did not bind that tool"
            )));
        }
        let mut raw = [0u8; 12];
        self.memory
            .read(&*store, addr(record), &mut raw)
            .map_err(|_| {
                fault(format!(
                    "the plugin's answer record at address {} is outside its memory",
                    addr(record)
                ))
            })?;
        let word = |i: usize| u32::from_le_bytes([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]);
        let (outcome, text_ptr, text_len) = (word(0), word(4), word(8));
        if text_len > MAX_TEXT_BYTES {
            return Err(fault(format!(
                "the plugin answered with {text_len} bytes of text, more than Chock's {MAX_TEXT_BYTES}"
            )));
        }
        let data = self.memory.data(&*store);
        let text = usize::try_from(text_ptr)
            .ok()
            .and_then(|start| Some(start..start.checked_add(usize::try_from(text_len).ok()?)?))
            .and_then(|range| data.get(range))
            .ok_or_else(|| {
                fault(format!(
                    "the plugin's answer text ({text_len} bytes at address {text_ptr}) is outside its memory"
                ))
            })?;
        let text = String::from_utf8_lossy(text).into_owned();
        match outcome {
            0 => Ok(Answer::Success(text)),
            1 => Ok(Answer::Failure(text)),
            other => Err(fault(format!(
                "the plugin answered with outcome {other}: Chock's outcomes are 0 (success) and 1 (failure)"
            ))),
        }
    }
}

/// A guest address (an `i32` the guest returned) as the unsigned offset it stands for.
fn addr(ptr: i32) -> usize {
    u32::from_ne_bytes(ptr.to_ne_bytes()) as usize
}
