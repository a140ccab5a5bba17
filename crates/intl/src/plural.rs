//! `Intl.PluralRules`: CLDR plural categories from ICU4X, for cardinals and ordinals, with the
//! operands a formatted number has (`1.0` with one fraction digit is `other` in English).

use std::str::FromStr;

use icu::decimal::input::Decimal;
use icu::plurals::{PluralCategory, PluralRuleType, PluralRules};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{IntlError, ResolveRequest, choice, data, digits, locale};

const CTOR: &str = "Intl.PluralRules";

/// What `resolvedOptions()` returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resolved {
    locale: String,
    #[serde(rename = "type")]
    kind: String,
    minimum_integer_digits: u8,
    minimum_fraction_digits: u8,
    maximum_fraction_digits: u8,
    plural_categories: Vec<String>,
}

fn name(category: PluralCategory) -> &'static str {
    match category {
        PluralCategory::Zero => "zero",
        PluralCategory::One => "one",
        PluralCategory::Two => "two",
        PluralCategory::Few => "few",
        PluralCategory::Many => "many",
        PluralCategory::Other => "other",
    }
}

fn rules(locale: &str, kind: &str) -> Result<PluralRules, IntlError> {
    let locale = locale::parse(locale)?;
    let kind = if kind == "ordinal" {
        PluralRuleType::Ordinal
    } else {
        PluralRuleType::Cardinal
    };
    PluralRules::try_new_with_buffer_provider(data::provider()?, (&locale).into(), kind.into())
        .map_err(|e| IntlError::range(format!("no plural rules for this locale: {e}")))
}

pub(crate) fn resolve(request: ResolveRequest) -> Result<Value, IntlError> {
    let o = &request.options;
    let chosen = request.locale(CTOR)?;
    let kind =
        choice(o, "type", &["cardinal", "ordinal"], CTOR)?.unwrap_or_else(|| "cardinal".to_owned());
    let min_fd = digits(o, "minimumFractionDigits", 0, 100)?.unwrap_or(0);
    let max_fd = digits(o, "maximumFractionDigits", 0, 100)?.unwrap_or(3.max(min_fd));
    if min_fd > max_fd {
        return Err(IntlError::range(
            "maximumFractionDigits value is out of range.",
        ));
    }
    let locale = locale::base_name(&chosen);
    let rules = rules(&locale, &kind)?;
    let resolved = Resolved {
        plural_categories: rules.categories().map(|c| name(c).to_owned()).collect(),
        locale,
        kind,
        minimum_integer_digits: digits(o, "minimumIntegerDigits", 1, 21)?.unwrap_or(1),
        minimum_fraction_digits: min_fd,
        maximum_fraction_digits: max_fd,
    };
    serde_json::to_value(&resolved).map_err(|e| IntlError::type_error(e.to_string()))
}

#[derive(Deserialize)]
pub(crate) struct SelectRequest {
    resolved: Resolved,
    value: f64,
}

pub(crate) fn select(request: SelectRequest) -> Result<Value, IntlError> {
    let r = &request.resolved;
    if !request.value.is_finite() {
        return Ok(json!({ "category": "other" }));
    }
    let rules = rules(&r.locale, &r.kind)?;
    let mut d = Decimal::try_from_f64(
        request.value.abs(),
        fixed_decimal::FloatPrecision::RoundTrip,
    )
    .or_else(|_| Decimal::from_str("0"))
    .map_err(|_| IntlError::range("Invalid number value"))?;
    use fixed_decimal::{SignedRoundingMode, UnsignedRoundingMode};
    d.round_with_mode(
        -i16::from(r.maximum_fraction_digits),
        SignedRoundingMode::Unsigned(UnsignedRoundingMode::HalfExpand),
    );
    d.absolute.trim_end();
    d.absolute.pad_end(-i16::from(r.minimum_fraction_digits));
    Ok(json!({ "category": name(rules.category_for(&d)) }))
}
