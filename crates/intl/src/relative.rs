//! `Intl.RelativeTimeFormat`: CLDR's relative-time patterns from ICU4X, for the eight units
//! ECMAScript names, in long, short and narrow styles, `numeric: "auto"` included.

use icu::decimal::input::Decimal;
use icu_experimental::relativetime::options::Numeric;
use icu_experimental::relativetime::{RelativeTimeFormatter, RelativeTimeFormatterOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::parts::{Parts, literal, to_json};
use crate::{IntlError, ResolveRequest, choice, data, locale};

const CTOR: &str = "Intl.RelativeTimeFormat";

/// What `resolvedOptions()` returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resolved {
    locale: String,
    style: String,
    numeric: String,
    numbering_system: String,
}

pub(crate) fn resolve(request: ResolveRequest) -> Result<Value, IntlError> {
    let o = &request.options;
    let chosen = request.locale(CTOR)?;
    let resolved = Resolved {
        locale: locale::base_name(&chosen),
        style: choice(o, "style", &["long", "short", "narrow"], CTOR)?
            .unwrap_or_else(|| "long".to_owned()),
        numeric: choice(o, "numeric", &["always", "auto"], CTOR)?
            .unwrap_or_else(|| "always".to_owned()),
        numbering_system: "latn".to_owned(),
    };
    serde_json::to_value(&resolved).map_err(|e| IntlError::type_error(e.to_string()))
}

#[derive(Deserialize)]
pub(crate) struct FormatRequest {
    resolved: Resolved,
    value: f64,
    unit: String,
}

macro_rules! formatter {
    ($style:expr, $unit:expr, $prefs:expr, $options:expr, { $($s:literal, $u:literal => $ctor:ident;)* }) => {
        match ($style, $unit) {
            $(($s, $u) => Some(RelativeTimeFormatter::$ctor(data::provider()?, $prefs, $options)),)*
            _ => None,
        }
    };
}

pub(crate) fn format(request: FormatRequest) -> Result<Value, IntlError> {
    let r = &request.resolved;
    if !request.value.is_finite() {
        return Err(IntlError::range("Invalid number value"));
    }
    let unit = request.unit.strip_suffix('s').unwrap_or(&request.unit);
    let locale = locale::parse(&r.locale)?;
    let options = RelativeTimeFormatterOptions {
        numeric: if r.numeric == "auto" {
            Numeric::Auto
        } else {
            Numeric::Always
        },
    };
    let prefs = (&locale).into();
    let made = formatter!(r.style.as_str(), unit, prefs, options, {
        "long", "second" => try_new_long_second_with_buffer_provider; "long", "minute" => try_new_long_minute_with_buffer_provider;
        "long", "hour" => try_new_long_hour_with_buffer_provider; "long", "day" => try_new_long_day_with_buffer_provider;
        "long", "week" => try_new_long_week_with_buffer_provider; "long", "month" => try_new_long_month_with_buffer_provider;
        "long", "quarter" => try_new_long_quarter_with_buffer_provider; "long", "year" => try_new_long_year_with_buffer_provider;
        "short", "second" => try_new_short_second_with_buffer_provider; "short", "minute" => try_new_short_minute_with_buffer_provider;
        "short", "hour" => try_new_short_hour_with_buffer_provider; "short", "day" => try_new_short_day_with_buffer_provider;
        "short", "week" => try_new_short_week_with_buffer_provider; "short", "month" => try_new_short_month_with_buffer_provider;
        "short", "quarter" => try_new_short_quarter_with_buffer_provider; "short", "year" => try_new_short_year_with_buffer_provider;
        "narrow", "second" => try_new_narrow_second_with_buffer_provider; "narrow", "minute" => try_new_narrow_minute_with_buffer_provider;
        "narrow", "hour" => try_new_narrow_hour_with_buffer_provider; "narrow", "day" => try_new_narrow_day_with_buffer_provider;
        "narrow", "week" => try_new_narrow_week_with_buffer_provider; "narrow", "month" => try_new_narrow_month_with_buffer_provider;
        "narrow", "quarter" => try_new_narrow_quarter_with_buffer_provider; "narrow", "year" => try_new_narrow_year_with_buffer_provider;
    });
    let formatter = made
        .ok_or_else(|| {
            IntlError::range(format!(
                "Invalid unit argument for format() '{}'",
                request.unit
            ))
        })?
        .map_err(|e| IntlError::range(format!("no relative-time data for this locale: {e}")))?;
    let mut value = Decimal::try_from_f64(request.value, fixed_decimal::FloatPrecision::RoundTrip)
        .map_err(|_| IntlError::range("Invalid number value"))?;
    if request.value == 0.0 && request.value.is_sign_negative() {
        value.sign = fixed_decimal::Sign::Negative;
    }
    let parts = Parts::of(&formatter.format(value));
    let entries = parts.entries(
        |p| match (p.category, p.value) {
            ("decimal", "integer") => Some("integer"),
            ("decimal", "fraction") => Some("fraction"),
            ("decimal", "group") => Some("group"),
            ("decimal", "decimal") => Some("decimal"),
            _ => None,
        },
        literal,
    );
    Ok(json!({ "parts": to_json(entries), "unit": unit }))
}
