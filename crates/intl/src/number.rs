//! `Intl.NumberFormat`: digits and rounding as ECMA-402 resolves them (half-expand), grouping
//! and symbols from ICU4X's `DecimalFormatter`; percent, currency and compact notation from
//! ICU4X's formatters for them.

use std::str::FromStr;

use icu::decimal::DecimalFormatter;
use icu::decimal::input::Decimal;
use icu::decimal::options::{DecimalFormatterOptions, GroupingStrategy};
use icu_experimental::compactdecimal::CompactDecimalFormatter;
use icu_experimental::dimension::currency::CurrencyCode;
use icu_experimental::dimension::currency::formatter::CurrencyFormatter;
use icu_experimental::dimension::currency::long_formatter::LongCurrencyFormatter;
use icu_experimental::dimension::currency::options::{CurrencyFormatterOptions, Width};
use icu_experimental::dimension::percent::formatter::PercentFormatter;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::parts::{Parts, to_json};
use crate::{IntlError, ResolveRequest, choice, data, digits, locale};

const CTOR: &str = "Intl.NumberFormat";

/// Currencies whose minor unit is not 2 digits (ISO 4217).
const CURRENCY_DIGITS: &[(&str, u8)] = &[
    ("BHD", 3),
    ("BIF", 0),
    ("CLP", 0),
    ("DJF", 0),
    ("GNF", 0),
    ("IQD", 3),
    ("ISK", 0),
    ("JOD", 3),
    ("JPY", 0),
    ("KMF", 0),
    ("KRW", 0),
    ("KWD", 3),
    ("LYD", 3),
    ("OMR", 3),
    ("PYG", 0),
    ("RWF", 0),
    ("TND", 3),
    ("UGX", 0),
    ("UYI", 0),
    ("VND", 0),
    ("VUV", 0),
    ("XAF", 0),
    ("XOF", 0),
    ("XPF", 0),
];

/// What `resolvedOptions()` returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resolved {
    locale: String,
    numbering_system: String,
    style: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    currency: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    currency_display: Option<String>,
    minimum_integer_digits: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    minimum_fraction_digits: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    maximum_fraction_digits: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    minimum_significant_digits: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    maximum_significant_digits: Option<u8>,
    use_grouping: Value,
    notation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    compact_display: Option<String>,
    sign_display: String,
    rounding_mode: String,
}

pub(crate) fn resolve(request: ResolveRequest) -> Result<Value, IntlError> {
    let o = &request.options;
    let chosen = request.locale(CTOR)?;
    let style = choice(
        o,
        "style",
        &["decimal", "percent", "currency", "unit"],
        CTOR,
    )?
    .unwrap_or_else(|| "decimal".to_owned());
    if style == "unit" {
        return Err(IntlError::range(
            "Value unit out of range for Intl.NumberFormat options property style: unit formatting is not supported by this engine",
        ));
    }
    let currency = match o.get("currency").and_then(Value::as_str) {
        Some(code) => {
            if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(IntlError::range(format!("Invalid currency code : {code}")));
            }
            Some(code.to_ascii_uppercase())
        }
        None => None,
    };
    if style == "currency" && currency.is_none() {
        return Err(IntlError::type_error(
            "Currency code is required with currency style.",
        ));
    }
    let currency_display = choice(
        o,
        "currencyDisplay",
        &["code", "symbol", "narrowSymbol", "name"],
        CTOR,
    )?;
    let notation = choice(o, "notation", &["standard", "compact"], CTOR)?
        .unwrap_or_else(|| "standard".to_owned());
    let compact_display = choice(o, "compactDisplay", &["short", "long"], CTOR)?;
    let sign_display = choice(
        o,
        "signDisplay",
        &["auto", "never", "always", "exceptZero", "negative"],
        CTOR,
    )?
    .unwrap_or_else(|| "auto".to_owned());
    let minimum_integer_digits = digits(o, "minimumIntegerDigits", 1, 21)?.unwrap_or(1);
    let min_sd = digits(o, "minimumSignificantDigits", 1, 21)?;
    let max_sd = digits(o, "maximumSignificantDigits", 1, 21)?;
    let min_fd = digits(o, "minimumFractionDigits", 0, 100)?;
    let max_fd = digits(o, "maximumFractionDigits", 0, 100)?;
    let currency_digits = currency.as_deref().map_or(2, |c| {
        CURRENCY_DIGITS
            .iter()
            .find(|(code, _)| *code == c)
            .map_or(2, |(_, d)| *d)
    });
    let (default_min, default_max) = match (style.as_str(), notation.as_str()) {
        (_, "compact") => (0, 0),
        ("currency", _) => (currency_digits, currency_digits),
        ("percent", _) => (0, 0),
        _ => (0, 3),
    };
    let base = locale::base_name(&chosen);
    let mut r = Resolved {
        numbering_system: locale::numbering_system(&base)?,
        locale: base,
        style: style.clone(),
        currency: currency.filter(|_| style == "currency"),
        currency_display: (style == "currency")
            .then(|| currency_display.unwrap_or_else(|| "symbol".to_owned())),
        minimum_integer_digits,
        minimum_fraction_digits: None,
        maximum_fraction_digits: None,
        minimum_significant_digits: None,
        maximum_significant_digits: None,
        use_grouping: match o.get("useGrouping") {
            Some(Value::Bool(false)) => Value::Bool(false),
            Some(Value::String(s)) if s == "false" => Value::Bool(false),
            _ if notation == "compact" => Value::String("min2".to_owned()),
            _ => Value::String("auto".to_owned()),
        },
        notation: notation.clone(),
        compact_display: (notation == "compact")
            .then(|| compact_display.unwrap_or_else(|| "short".to_owned())),
        sign_display,
        rounding_mode: "halfExpand".to_owned(),
    };
    if min_sd.is_some() || max_sd.is_some() {
        let min = min_sd.unwrap_or(1);
        let max = max_sd.unwrap_or(21);
        if min > max {
            return Err(IntlError::range(
                "maximumSignificantDigits value is out of range.",
            ));
        }
        r.minimum_significant_digits = Some(min);
        r.maximum_significant_digits = Some(max);
    } else if notation != "compact" || min_fd.is_some() || max_fd.is_some() {
        let min = min_fd.unwrap_or(default_min.min(max_fd.unwrap_or(u8::MAX)));
        let max = max_fd.unwrap_or(default_max.max(min));
        if min > max {
            return Err(IntlError::range(
                "maximumFractionDigits value is out of range.",
            ));
        }
        r.minimum_fraction_digits = Some(min);
        r.maximum_fraction_digits = Some(max);
    }
    serde_json::to_value(&r).map_err(|e| IntlError::type_error(e.to_string()))
}

#[derive(Deserialize)]
pub(crate) struct FormatRequest {
    resolved: Resolved,
    /// A JSON number, or a decimal string (a BigInt or an exact decimal).
    value: Value,
}

/// A value to format: a finite decimal, or NaN / ±Infinity.
enum Number {
    Finite(Decimal),
    NaN,
    Infinite { negative: bool },
}

fn number_of(value: &Value) -> Number {
    let from_f64 = |f: f64| {
        if f.is_nan() {
            Number::NaN
        } else if f.is_infinite() {
            Number::Infinite { negative: f < 0.0 }
        } else {
            Decimal::try_from_f64(f, fixed_decimal::FloatPrecision::RoundTrip)
                .map_or(Number::NaN, Number::Finite)
        }
    };
    match value {
        Value::Number(n) => n.as_f64().map_or(Number::NaN, from_f64),
        Value::String(s) => {
            let s = s.trim();
            match s {
                "NaN" => Number::NaN,
                "Infinity" | "+Infinity" => Number::Infinite { negative: false },
                "-Infinity" => Number::Infinite { negative: true },
                _ => Decimal::from_str(s)
                    .map(Number::Finite)
                    .unwrap_or_else(|_| s.parse::<f64>().map_or(Number::NaN, from_f64)),
            }
        }
        _ => Number::NaN,
    }
}

/// Rounds and pads as the resolved digits say (rounding mode half-expand).
fn round(r: &Resolved, d: &mut Decimal) {
    use fixed_decimal::{SignedRoundingMode, UnsignedRoundingMode};
    let mode = SignedRoundingMode::Unsigned(UnsignedRoundingMode::HalfExpand);
    if let (Some(min), Some(max)) = (r.minimum_significant_digits, r.maximum_significant_digits) {
        let msd = d.absolute.nonzero_magnitude_start();
        d.round_with_mode(msd - i16::from(max) + 1, mode);
        d.absolute.trim_end();
        let msd = d.absolute.nonzero_magnitude_start();
        d.absolute.pad_end(msd - i16::from(min) + 1);
    } else if let (Some(min), Some(max)) = (r.minimum_fraction_digits, r.maximum_fraction_digits) {
        d.round_with_mode(-i16::from(max), mode);
        d.absolute.trim_end();
        d.absolute.pad_end(-i16::from(min));
    }
    d.absolute.pad_start(i16::from(r.minimum_integer_digits));
}

fn decimal_options(r: &Resolved) -> DecimalFormatterOptions {
    let mut options = DecimalFormatterOptions::default();
    options.grouping_strategy = Some(match &r.use_grouping {
        Value::Bool(false) => GroupingStrategy::Never,
        Value::String(s) if s == "min2" => GroupingStrategy::Min2,
        Value::String(s) if s == "always" => GroupingStrategy::Always,
        _ => GroupingStrategy::Auto,
    });
    options
}

fn sign(r: &Resolved, d: &mut Decimal) {
    use fixed_decimal::SignDisplay;
    d.apply_sign_display(match r.sign_display.as_str() {
        "never" => SignDisplay::Never,
        "always" => SignDisplay::Always,
        "exceptZero" => SignDisplay::ExceptZero,
        "negative" => SignDisplay::Negative,
        _ => SignDisplay::Auto,
    });
}

pub(crate) fn format(request: FormatRequest) -> Result<Value, IntlError> {
    let r = &request.resolved;
    let locale = locale::parse(&r.locale)?;
    let data_error = |e| no_data(&r.locale, &e);
    let mut d = match number_of(&request.value) {
        Number::Finite(d) => d,
        Number::NaN => return Ok(json!({ "parts": [{"type": "nan", "value": "NaN"}] })),
        Number::Infinite { negative } => {
            let mut parts = Vec::new();
            if negative {
                parts.push(json!({"type": "minusSign", "value": "-"}));
            }
            parts.push(json!({"type": "infinity", "value": "∞"}));
            return Ok(json!({ "parts": parts }));
        }
    };
    if r.style == "percent" {
        d.multiply_pow10(2);
    }
    let decimal_part = |p: &writeable::Part| {
        if p.category != "decimal" {
            return None;
        }
        Some(match p.value {
            "integer" => "integer",
            "fraction" => "fraction",
            "group" => "group",
            "decimal" => "decimal",
            "minusSign" => "minusSign",
            "plusSign" => "plusSign",
            _ => return None,
        })
    };
    if r.notation == "compact" {
        let options = decimal_options(r).into();
        let formatter = if r.compact_display.as_deref() == Some("long") {
            CompactDecimalFormatter::try_new_long_with_buffer_provider(
                data::provider()?,
                (&locale).into(),
                options,
            )
        } else {
            CompactDecimalFormatter::try_new_short_with_buffer_provider(
                data::provider()?,
                (&locale).into(),
                options,
            )
        }
        .map_err(data_error)?;
        sign(r, &mut d);
        // ICU4X rounds compact numbers itself: a fraction digit only below 10 of the unit
        // (1.2K, 15K), halves to even (ECMAScript expands them: 1,650 is 1.6K here, 1.7K in a
        // browser).
        let parts = Parts::of(&formatter.format_fixed_decimal(&d));
        return Ok(
            json!({ "parts": to_json(parts.entries(decimal_part, |gap| gap_parts(gap, "compact"))) }),
        );
    }
    round(r, &mut d);
    sign(r, &mut d);
    let parts = match r.style.as_str() {
        "percent" => {
            let formatter = PercentFormatter::try_new_with_buffer_provider(
                data::provider()?,
                (&locale).into(),
                Default::default(),
            )
            .map_err(data_error)?;
            let decimal = DecimalFormatter::try_new_with_buffer_provider(
                data::provider()?,
                (&locale).into(),
                decimal_options(r),
            )
            .map_err(data_error)?;
            // The percent pattern around digits grouped as the options say.
            let digits = Parts::of(&decimal.format(&d));
            let pattern = Parts::of(&formatter.format(&Decimal::from(7)));
            splice(
                &pattern,
                "7",
                digits.entries(decimal_part, |g| gap_parts(g, "percentSign")),
                "percentSign",
            )
        }
        "currency" => {
            let code = r.currency.clone().unwrap_or_default();
            let tiny = tinystr::TinyAsciiStr::<3>::try_from_str(&code)
                .map_err(|_| IntlError::range(format!("Invalid currency code : {code}")))?;
            let code_value = CurrencyCode(tiny);
            let decimal = DecimalFormatter::try_new_with_buffer_provider(
                data::provider()?,
                (&locale).into(),
                decimal_options(r),
            )
            .map_err(data_error)?;
            let digits =
                Parts::of(&decimal.format(&d)).entries(decimal_part, |g| gap_parts(g, "currency"));
            match r.currency_display.as_deref() {
                Some("name") => {
                    let formatter = LongCurrencyFormatter::try_new_with_buffer_provider(
                        data::provider()?,
                        (&locale).into(),
                        &code_value,
                    )
                    .map_err(data_error)?;
                    let pattern =
                        Parts::of(&formatter.format_fixed_decimal(&Decimal::from(7), code_value));
                    splice(&pattern, "7", digits, "currency")
                }
                Some("code") => {
                    let mut out =
                        vec![("currency", code.clone()), ("literal", "\u{a0}".to_owned())];
                    out.extend(digits);
                    out
                }
                display => {
                    let width = if display == Some("narrowSymbol") {
                        Width::Narrow
                    } else {
                        Width::Short
                    };
                    let formatter = CurrencyFormatter::try_new_with_buffer_provider(
                        data::provider()?,
                        (&locale).into(),
                        CurrencyFormatterOptions::from(width),
                    )
                    .map_err(data_error)?;
                    let pattern =
                        Parts::of(&formatter.format_fixed_decimal(&Decimal::from(7), code_value));
                    splice(&pattern, "7", digits, "currency")
                }
            }
        }
        _ => {
            let decimal = DecimalFormatter::try_new_with_buffer_provider(
                data::provider()?,
                (&locale).into(),
                decimal_options(r),
            )
            .map_err(data_error)?;
            Parts::of(&decimal.format(&d)).entries(decimal_part, |g| gap_parts(g, "literal"))
        }
    };
    Ok(json!({ "parts": to_json(parts) }))
}

fn no_data(locale: &str, e: &dyn std::fmt::Display) -> IntlError {
    IntlError::range(format!("no number data for {locale}: {e}"))
}

/// Replaces the placeholder digit in a formatted pattern with the real digits' parts; the rest
/// of the pattern becomes `symbol` (whitespace stays literal).
fn splice(
    pattern: &Parts,
    placeholder: &str,
    digits: Vec<(&'static str, String)>,
    symbol: &'static str,
) -> Vec<(&'static str, String)> {
    let text = &pattern.text;
    let Some(at) = text.find(placeholder) else {
        return digits;
    };
    let mut out = gap_parts(&text[..at], symbol);
    out.extend(digits);
    out.extend(gap_parts(&text[at + placeholder.len()..], symbol));
    out
}

/// Text outside the digits: whitespace is `literal`, the rest `symbol`.
fn gap_parts(gap: &str, symbol: &'static str) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for c in gap.chars() {
        let kind = if c.is_whitespace() || c == '\u{a0}' || c == '\u{202f}' {
            "literal"
        } else if c == '-' || c == '\u{2212}' {
            "minusSign"
        } else {
            symbol
        };
        match out.last_mut() {
            Some((last, text)) if *last == kind => text.push(c),
            _ => out.push((kind, c.to_string())),
        }
    }
    out
}
