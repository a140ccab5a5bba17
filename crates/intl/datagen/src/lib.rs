//! Writes the ICU4X data file `bosun-intl` loads at its first `Intl` operation
//! (`crates/intl/data/icu4x.postcard`), from the data ICU4X's own crates bake in.
//!
//! The host binary carries no ICU4X data of its own: compiled-in ("baked") data is a tree of
//! Rust statics full of pointers, which the dynamic loader has to relocate at every start of
//! every command, whether it formats a date or not. The same data as one postcard blob is plain
//! bytes, read only by a process that uses `Intl`.
//!
//! Run after changing the ICU4X versions or the marker list ([`source`]):
//! `cargo run --release -p bosun-intl-datagen -- crates/intl/data/icu4x.postcard`. The test
//! below fails while the committed file differs from what this writes.

extern crate alloc;

pub mod source;

use std::io::Write;
use std::sync::{Arc, Mutex};

use icu::locale::fallback::LocaleFallbacker;
use icu_provider::DataError;
use icu_provider::export::ExportableProvider;
use icu_provider_export::blob_exporter::BlobExporter;
use icu_provider_export::{DataLocaleFamily, DeduplicationStrategy, ExportDriver};

/// The data file's bytes: every identifier of every marker in [`source::Source`] exactly as the
/// baked data has it (no further deduplication: the reader falls back between locales the way
/// the baked data did, through `LocaleFallbackProvider`; equal payloads are stored once).
///
/// # Errors
/// What ICU4X's export driver reports (a marker that cannot be serialised, for one).
pub fn generate() -> Result<Vec<u8>, DataError> {
    let source = source::Source;
    let fallbacker = LocaleFallbacker::try_new_unstable(&source)?;
    let sink = SharedBuffer::default();
    let exporter = BlobExporter::new_with_sink(Box::new(sink.clone()));
    ExportDriver::new(
        [DataLocaleFamily::FULL],
        DeduplicationStrategy::None.into(),
        fallbacker,
    )
    .with_markers(source.supported_markers())
    .with_additional_collations(["search*".to_owned()])
    .export(&source, exporter)?;
    Ok(sink.take())
}

/// A `Write + Sync` buffer the exporter writes into and the caller reads back.
#[derive(Clone, Default)]
struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    fn take(&self) -> Vec<u8> {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_data_file_is_what_the_generator_writes() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/icu4x.postcard");
        let committed = std::fs::read(path).expect("crates/intl/data/icu4x.postcard is readable");
        let fresh = super::generate().expect("the export succeeds");
        assert!(
            committed == fresh,
            "crates/intl/data/icu4x.postcard ({} bytes) is not what the generator writes ({} bytes): \
             run `cargo run --release -p bosun-intl-datagen -- crates/intl/data/icu4x.postcard`",
            committed.len(),
            fresh.len()
        );
    }
}
