//! ICU4X's locale data, read from one file at the first `Intl` operation of a process.
//!
//! The data (CLDR as ICU4X's crates ship it: date, number, plural, collation and relative-time
//! data of every locale) is `data/icu4x.postcard`, written by `bosun-intl-datagen` from the
//! data ICU4X bakes into its own crates. It used to be compiled in: ICU4X's baked data is a tree
//! of Rust statics full of pointers, which the dynamic loader relocated at every start of every
//! command (about 42,000 of them), whether the command ran JavaScript or not. As a file it costs
//! nothing until a JavaScript plugin first uses `Intl`; then it is read once (11 MB), checked
//! against the BLAKE3 digest recorded when this crate was built, and kept for the process.
//!
//! Where the file is looked for, first found wins:
//! 1. `$BOSUN_INTL_DATA`, when set (and then only there);
//! 2. `<directory of the bosun binary>/../share/bosun/icu4x.postcard` (an installed layout);
//! 3. `crates/intl/data/icu4x.postcard` of the source tree the binary was built from (a
//!    checkout, or cargo's copy of the crate for `cargo install`).
//!
//! A missing, oversized or different file is an error that says which file and how to fix it;
//! the bytes are never handed to ICU4X's parser unless their digest matches: ICU4X refuses a
//! malformed blob (`tests::a_corrupt_blob_is_refused`) but trusts the offsets inside a
//! well-formed one.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use icu::locale::fallback::LocaleFallbacker;
use icu_provider_adapters::fallback::LocaleFallbackProvider;
use icu_provider_blob::BlobDataProvider;

use crate::IntlError;

include!(concat!(env!("OUT_DIR"), "/icu4x_data.rs"));

/// The environment variable that names the data file.
pub const DATA_ENV: &str = "BOSUN_INTL_DATA";

/// The data file's name.
pub const DATA_FILE: &str = "icu4x.postcard";

/// Largest file read (64 MiB): Bosun's is about 11 MB; anything far larger is not it.
pub const MAX_DATA_BYTES: u64 = 64 << 20;

/// Where the source tree's copy is.
const SOURCE_COPY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/icu4x.postcard");

/// ICU4X data with locale fallback (`de-AT` → `de` → root), as the compiled-in data had.
pub(crate) type Provider = LocaleFallbackProvider<BlobDataProvider>;

/// The process's data, read at the first call that needs it.
///
/// A failure is not kept: the next call looks again (after the user fixed the file).
pub(crate) fn provider() -> Result<&'static Provider, IntlError> {
    static PROVIDER: OnceLock<Provider> = OnceLock::new();
    if let Some(provider) = PROVIDER.get() {
        return Ok(provider);
    }
    let loaded = load(&locate()?)?;
    Ok(PROVIDER.get_or_init(|| loaded))
}

/// Where the data file is looked for, in order (see the module's documentation).
pub fn candidates() -> Vec<PathBuf> {
    candidates_from(
        std::env::var_os(DATA_ENV),
        std::env::current_exe().ok().as_deref(),
    )
}

fn candidates_from(named: Option<std::ffi::OsString>, exe: Option<&Path>) -> Vec<PathBuf> {
    if let Some(path) = named.filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(path)];
    }
    let mut paths = Vec::new();
    if let Some(dir) = exe.and_then(Path::parent) {
        paths.push(dir.join("..").join("share").join("bosun").join(DATA_FILE));
    }
    paths.push(PathBuf::from(SOURCE_COPY));
    paths
}

fn locate() -> Result<PathBuf, IntlError> {
    let candidates = candidates();
    if let Some(found) = candidates.iter().find(|p| p.exists()) {
        return Ok(found.clone());
    }
    let looked = candidates
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Err(data_error(format!(
        "Bosun's Intl data file ({DATA_FILE}) was not found (looked at {looked}). It is \
         crates/intl/data/{DATA_FILE} in Bosun's source: set {DATA_ENV} to its path, or install \
         it as <prefix>/share/bosun/{DATA_FILE} beside <prefix>/bin/bosun"
    )))
}

/// Reads, checks and opens the data file at `path`.
pub(crate) fn load(path: &Path) -> Result<Provider, IntlError> {
    let shown = path.display();
    let fix = format!(
        "replace it with crates/intl/data/{DATA_FILE} from the source of this version of Bosun \
         (or unset {DATA_ENV} if it points elsewhere)"
    );
    let file = std::fs::File::open(path).map_err(|e| {
        data_error(format!(
            "cannot read Bosun's Intl data at {shown}: {e}; {fix}"
        ))
    })?;
    let meta = file.metadata().map_err(|e| {
        data_error(format!(
            "cannot read Bosun's Intl data at {shown}: {e}; {fix}"
        ))
    })?;
    if !meta.is_file() {
        return Err(data_error(format!(
            "Bosun's Intl data at {shown} is not a regular file; {fix}"
        )));
    }
    if meta.len() > MAX_DATA_BYTES {
        return Err(data_error(format!(
            "{shown} is {} bytes, more than the {MAX_DATA_BYTES} Bosun's Intl data may be: it \
             is not Bosun's data file; {fix}",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // Bounded even if the file grows while it is read.
    file.take(MAX_DATA_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            data_error(format!(
                "cannot read Bosun's Intl data at {shown}: {e}; {fix}"
            ))
        })?;
    if bytes.len() as u64 != DATA_LEN || *blake3::hash(&bytes).as_bytes() != DATA_BLAKE3 {
        return Err(data_error(format!(
            "{shown} is not the Intl data this build of Bosun was made with ({} bytes where \
             {DATA_LEN} were expected, or a different BLAKE3 digest): it is damaged or from \
             another version; {fix}",
            bytes.len()
        )));
    }
    from_bytes(bytes.into_boxed_slice())
        .map_err(|e| data_error(format!("{shown} cannot be used: {e}; {fix}")))
}

/// Opens a blob already read: ICU4X checks its structure, then the locale fallback's own data
/// is loaded from it.
pub(crate) fn from_bytes(bytes: Box<[u8]>) -> Result<Provider, String> {
    let blob = BlobDataProvider::try_new_from_blob(bytes)
        .map_err(|e| format!("it is not an ICU4X data blob ({e})"))?;
    let fallbacker = LocaleFallbacker::try_new_with_buffer_provider(&blob)
        .map_err(|e| format!("it lacks the locale fallback data ({e})"))?;
    Ok(LocaleFallbackProvider::new(blob, fallbacker))
}

/// Data errors are `TypeError`s in JavaScript (not the `RangeError` of a bad option): nothing
/// the plugin passed would change them.
fn data_error(message: String) -> IntlError {
    IntlError::type_error(message)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn message(result: Result<Provider, IntlError>) -> String {
        match result {
            Ok(_) => panic!("the file was accepted"),
            Err(e) => {
                assert_eq!(e.kind, crate::ErrorKind::Type);
                e.message
            }
        }
    }

    fn copy_with(dir: &Path, change: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
        let mut bytes = std::fs::read(SOURCE_COPY).unwrap();
        change(&mut bytes);
        let path = dir.join(DATA_FILE);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn the_source_trees_file_loads() {
        load(Path::new(SOURCE_COPY)).unwrap();
    }

    #[test]
    fn the_named_file_is_the_only_place_looked_at() {
        let named = candidates_from(
            Some("/srv/icu.postcard".into()),
            Some(Path::new("/x/bin/bosun")),
        );
        assert_eq!(named, vec![PathBuf::from("/srv/icu.postcard")]);
        let usual = candidates_from(Some("".into()), Some(Path::new("/opt/bosun/bin/bosun")));
        assert_eq!(
            usual,
            vec![
                PathBuf::from("/opt/bosun/bin/../share/bosun/icu4x.postcard"),
                PathBuf::from(SOURCE_COPY)
            ]
        );
    }

    #[test]
    fn a_missing_file_says_where_it_looked_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let text = message(load(&dir.path().join("gone.postcard")));
        assert!(text.contains("gone.postcard"), "{text}");
        assert!(text.contains("crates/intl/data/icu4x.postcard"), "{text}");
        let text = message(load(dir.path()));
        assert!(text.contains("not a regular file"), "{text}");
    }

    #[test]
    fn an_oversized_file_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DATA_FILE);
        // Sparse: a terabyte would be refused the same way, without reading it.
        std::fs::File::create(&path)
            .unwrap()
            .set_len(MAX_DATA_BYTES + 1)
            .unwrap();
        let text = message(load(&path));
        assert!(text.contains("more than the 67108864"), "{text}");
    }

    #[test]
    fn a_damaged_or_different_file_is_refused_by_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let flipped = copy_with(dir.path(), |b| {
            let middle = b.len() / 2;
            b[middle] ^= 0x01;
        });
        let text = message(load(&flipped));
        assert!(
            text.contains("not the Intl data this build of Bosun was made with"),
            "{text}"
        );
        let truncated = copy_with(dir.path(), |b| b.truncate(b.len() - 1));
        message(load(&truncated));
        let longer = copy_with(dir.path(), |b| b.push(0));
        message(load(&longer));
    }

    /// What a caller hands the parser without the digest check: junk and cut-off blobs are
    /// refused whole. (Bytes changed inside an intact structure are what the digest is for:
    /// ICU4X reads its tries trusting their offsets, "garbage in, garbage out".)
    #[test]
    fn a_corrupt_blob_is_refused() {
        for junk in [
            Vec::new(),
            vec![0u8; 64],
            vec![0xff; 4096],
            b"not a blob at all".to_vec(),
        ] {
            assert!(from_bytes(junk.into_boxed_slice()).is_err());
        }
        let real = std::fs::read(SOURCE_COPY).unwrap();
        for cut in [1, 16, 256, real.len() / 3, real.len() - 1] {
            assert!(
                from_bytes(real[..cut].to_vec().into_boxed_slice()).is_err(),
                "a blob cut at {cut} bytes was accepted"
            );
        }
    }
}
