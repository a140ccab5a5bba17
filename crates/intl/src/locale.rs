//! Locale lists: parsed strictly (`RangeError: Incorrect locale information provided`),
//! canonicalised as ECMA-402 asks (case, aliases), the first one chosen; `en-US` when none.

use icu::locale::{Locale, LocaleCanonicalizer};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{IntlError, data};

/// Longest locale tag accepted.
const MAX_TAG_BYTES: usize = 256;
/// The locale used when the caller names none.
pub(crate) const DEFAULT_LOCALE: &str = "en-US";

#[derive(Deserialize)]
pub(crate) struct LocalesRequest {
    #[serde(default)]
    locales: Vec<String>,
}

/// `Intl.getCanonicalLocales`.
pub(crate) fn canonicalize(request: LocalesRequest) -> Result<Value, IntlError> {
    let mut out: Vec<String> = Vec::new();
    for tag in &request.locales {
        let locale = parse(tag)?.to_string();
        if !out.contains(&locale) {
            out.push(locale);
        }
    }
    Ok(json!({ "locales": out }))
}

/// One tag, canonicalised.
pub(crate) fn parse(tag: &str) -> Result<Locale, IntlError> {
    let bad = || IntlError::range(format!("Incorrect locale information provided: {tag}"));
    if tag.is_empty() || tag.len() > MAX_TAG_BYTES {
        return Err(bad());
    }
    let mut locale = Locale::try_from_str(tag).map_err(|_| bad())?;
    canonicalizer()?.canonicalize(&mut locale);
    Ok(locale)
}

/// The extended canonicaliser (aliases and likely subtags), made once from the data file.
fn canonicalizer() -> Result<&'static LocaleCanonicalizer, IntlError> {
    static CANONICALIZER: std::sync::OnceLock<LocaleCanonicalizer> = std::sync::OnceLock::new();
    if let Some(made) = CANONICALIZER.get() {
        return Ok(made);
    }
    let made = LocaleCanonicalizer::try_new_extended_with_buffer_provider(data::provider()?)
        .map_err(|e| {
            IntlError::type_error(format!("Bosun's Intl data lacks locale aliases: {e}"))
        })?;
    Ok(CANONICALIZER.get_or_init(|| made))
}

/// The locale a constructor uses: every tag must be well-formed; the first is chosen (ICU4X
/// falls back within its data from there), `en-US` when the list is empty.
pub(crate) fn choose(locales: &[String]) -> Result<Locale, IntlError> {
    let mut chosen = None;
    for tag in locales {
        let locale = parse(tag)?;
        chosen.get_or_insert(locale);
    }
    match chosen {
        Some(locale) => Ok(locale),
        None => parse(DEFAULT_LOCALE),
    }
}

/// `locale` without extensions, with the given Unicode extension keywords added.
pub(crate) fn with_keywords(locale: &str, keywords: &[(&str, &str)]) -> Result<Locale, IntlError> {
    let base = parse(locale)?.id.to_string();
    if keywords.is_empty() {
        return parse(&base);
    }
    let mut tag = format!("{base}-u");
    for (key, value) in keywords {
        tag.push('-');
        tag.push_str(key);
        tag.push('-');
        tag.push_str(value);
    }
    parse(&tag)
}

/// The base name (`language[-Script][-REGION]`) `resolvedOptions().locale` reports.
pub(crate) fn base_name(locale: &Locale) -> String {
    locale.id.to_string()
}

/// The numbering system `locale` writes digits in, named as BCP 47 does, read from how it writes
/// zero (`latn` when the digit is not one of the common systems).
pub(crate) fn numbering_system(locale: &str) -> Result<String, IntlError> {
    let locale = parse(locale)?;
    let formatter = icu::decimal::DecimalFormatter::try_new_with_buffer_provider(
        data::provider()?,
        (&locale).into(),
        Default::default(),
    )
    .map_err(|e| IntlError::range(format!("no number data for this locale: {e}")))?;
    let zero = writeable::Writeable::write_to_string(
        &formatter.format(&icu::decimal::input::Decimal::from(0)),
    )
    .into_owned();
    Ok(match zero.chars().next() {
        Some('\u{660}') => "arab",
        Some('\u{6f0}') => "arabext",
        Some('\u{966}') => "deva",
        Some('\u{9e6}') => "beng",
        Some('\u{e50}') => "thai",
        Some('\u{1040}') => "mymr",
        Some('\u{3007}') => "hanidec",
        _ => "latn",
    }
    .to_owned())
}
