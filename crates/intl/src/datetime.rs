//! `Intl.DateTimeFormat`: options resolved as ECMA-402 does, instants placed in their IANA
//! zone by `jiff`, and formatted with CLDR patterns by ICU4X's `DateTimeFormatter`.

use icu::calendar::Iso;
use icu::datetime::DateTimeFormatter;
use icu::datetime::fieldsets::builder::{DateFields, FieldSetBuilder, ZoneStyle};
use icu::datetime::fieldsets::enums::CompositeFieldSet;
use icu::datetime::options::{Length, SubsecondDigits, TimePrecision, YearStyle};
use icu::time::ZonedDateTime;
use icu::time::zone::IanaParser;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::parts::{Parts, literal, to_json};
use crate::{IntlError, choice, data, digits, flag, locale};

const CTOR: &str = "Intl.DateTimeFormat";
/// The largest |time value| ECMAScript dates hold, in milliseconds.
const MAX_TIME_MS: f64 = 8.64e15;

#[derive(Deserialize)]
pub(crate) struct ResolveRequest {
    #[serde(flatten)]
    base: crate::ResolveRequest,
    /// `date`, `time` or `all`: which fields to show when the options name none.
    #[serde(default = "default_defaults")]
    defaults: String,
}

fn default_defaults() -> String {
    "date".to_owned()
}

/// What `resolvedOptions()` returns, and what `format` computes with.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resolved {
    locale: String,
    calendar: String,
    numbering_system: String,
    time_zone: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    hour_cycle: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hour12: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    weekday: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    era: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    year: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    month: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    day: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hour: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    minute: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    second: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fractional_second_digits: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_zone_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    date_style: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_style: Option<String>,
}

const TEXT: &[&str] = &["narrow", "short", "long"];
const NUMERIC: &[&str] = &["numeric", "2-digit"];
const MONTH: &[&str] = &["numeric", "2-digit", "narrow", "short", "long"];
const STYLE: &[&str] = &["full", "long", "medium", "short"];
const ZONE_NAME: &[&str] = &[
    "short",
    "long",
    "shortOffset",
    "longOffset",
    "shortGeneric",
    "longGeneric",
];

/// The IANA name of `zone` as the database spells it, or the RangeError browsers give.
pub(crate) fn canonical_zone(zone: &str) -> Result<String, IntlError> {
    let invalid = || IntlError::range(format!("Invalid time zone specified: {zone}"));
    if zone.is_empty() || zone.len() > 64 {
        return Err(invalid());
    }
    if zone.eq_ignore_ascii_case("utc")
        || zone.eq_ignore_ascii_case("etc/utc")
        || zone.eq_ignore_ascii_case("gmt")
    {
        return Ok("UTC".to_owned());
    }
    let tz = jiff::tz::db().get(zone).map_err(|_| invalid())?;
    Ok(tz.iana_name().unwrap_or(zone).to_owned())
}

pub(crate) fn resolve(request: ResolveRequest) -> Result<Value, IntlError> {
    let o = &request.base.options;
    let chosen = request.base.locale(CTOR)?;
    choice(o, "formatMatcher", &["basic", "best fit"], CTOR)?;
    let mut r = Resolved {
        locale: locale::base_name(&chosen),
        calendar: "gregory".to_owned(),
        numbering_system: "latn".to_owned(),
        time_zone: match o.get("timeZone") {
            None | Some(Value::Null) => crate::host_time_zone(),
            Some(Value::String(zone)) => canonical_zone(zone)?,
            Some(other) => canonical_zone(&other.to_string())?,
        },
        hour_cycle: choice(o, "hourCycle", &["h11", "h12", "h23", "h24"], CTOR)?,
        hour12: flag(o, "hour12"),
        weekday: choice(o, "weekday", TEXT, CTOR)?,
        era: choice(o, "era", TEXT, CTOR)?,
        year: choice(o, "year", NUMERIC, CTOR)?,
        month: choice(o, "month", MONTH, CTOR)?,
        day: choice(o, "day", NUMERIC, CTOR)?,
        hour: choice(o, "hour", NUMERIC, CTOR)?,
        minute: choice(o, "minute", NUMERIC, CTOR)?,
        second: choice(o, "second", NUMERIC, CTOR)?,
        fractional_second_digits: digits(o, "fractionalSecondDigits", 1, 3)?,
        time_zone_name: choice(o, "timeZoneName", ZONE_NAME, CTOR)?,
        date_style: choice(o, "dateStyle", STYLE, CTOR)?,
        time_style: choice(o, "timeStyle", STYLE, CTOR)?,
    };
    let components = [
        ("weekday", r.weekday.is_some()),
        ("era", r.era.is_some()),
        ("year", r.year.is_some()),
        ("month", r.month.is_some()),
        ("day", r.day.is_some()),
        ("hour", r.hour.is_some()),
        ("minute", r.minute.is_some()),
        ("second", r.second.is_some()),
        (
            "fractionalSecondDigits",
            r.fractional_second_digits.is_some(),
        ),
        ("timeZoneName", r.time_zone_name.is_some()),
    ];
    let styled = r.date_style.is_some() || r.time_style.is_some();
    if styled {
        if let Some((name, _)) = components.iter().find(|(_, set)| *set) {
            let style = if r.date_style.is_some() {
                "dateStyle"
            } else {
                "timeStyle"
            };
            return Err(IntlError::type_error(format!(
                "Can't set option {name} when {style} is used"
            )));
        }
    } else if !components.iter().any(|(_, set)| *set) {
        let numeric = || Some("numeric".to_owned());
        if request.defaults != "time" {
            (r.year, r.month, r.day) = (numeric(), numeric(), numeric());
        }
        if request.defaults != "date" {
            (r.hour, r.minute, r.second) = (numeric(), numeric(), numeric());
        }
    }
    r.calendar = calendar_of(&r.locale)?;
    r.numbering_system = locale::numbering_system(&r.locale)?;
    let shows_hour = r.hour.is_some() || r.time_style.is_some();
    if shows_hour {
        let cycle = match (r.hour12, &r.hour_cycle) {
            (Some(true), _) => if default_cycle(&r.locale)? == "h11" {
                "h11"
            } else {
                "h12"
            }
            .to_owned(),
            (Some(false), _) => "h23".to_owned(),
            (None, Some(cycle)) => cycle.clone(),
            (None, None) => default_cycle(&r.locale)?,
        };
        r.hour12 = Some(matches!(cycle.as_str(), "h11" | "h12"));
        r.hour_cycle = Some(cycle);
    } else {
        r.hour_cycle = None;
        r.hour12 = None;
    }
    serde_json::to_value(&r).map_err(|e| IntlError::type_error(e.to_string()))
}

/// The calendar the locale formats in (Thai: `buddhist`; `-u-ca-` keywords are not kept in the
/// resolved locale, so this is the locale's default), as BCP 47 names it.
fn calendar_of(locale: &str) -> Result<String, IntlError> {
    use icu::calendar::AnyCalendarKind as K;
    let mut b = FieldSetBuilder::new();
    b.date_fields = Some(DateFields::YMD);
    let kind = formatter(locale, None, &b)?.calendar().kind();
    Ok(match kind {
        K::Buddhist => "buddhist",
        K::Chinese => "chinese",
        K::Coptic => "coptic",
        K::Dangi => "dangi",
        K::Ethiopian => "ethiopic",
        K::EthiopianAmeteAlem => "ethioaa",
        K::Hebrew => "hebrew",
        K::Indian => "indian",
        K::HijriTabularTypeIIFriday => "islamic-civil",
        K::HijriSimulatedMecca => "islamic-rgsa",
        K::HijriTabularTypeIIThursday => "islamic-tbla",
        K::HijriUmmAlQura => "islamic-umalqura",
        K::Iso => "iso8601",
        K::Japanese | K::JapaneseExtended => "japanese",
        K::Persian => "persian",
        _ => "gregory",
    }
    .to_owned())
}

/// The locale's own hour cycle, read from how it writes 13:00.
fn default_cycle(locale: &str) -> Result<String, IntlError> {
    let formatter = formatter(locale, None, &time_only())?;
    let zdt = zoned(13.0 * 3_600_000.0, "UTC")?;
    let text = formatter.format(&zdt).to_string();
    Ok(if text.contains("13") { "h23" } else { "h12" }.to_owned())
}

fn time_only() -> FieldSetBuilder {
    let mut b = FieldSetBuilder::new();
    b.time_precision = Some(TimePrecision::Hour);
    b
}

fn formatter(
    locale: &str,
    cycle: Option<&str>,
    builder: &FieldSetBuilder,
) -> Result<DateTimeFormatter<CompositeFieldSet>, IntlError> {
    let keywords: Vec<(&str, &str)> = cycle.map(|c| ("hc", c)).into_iter().collect();
    let locale = locale::with_keywords(locale, &keywords)?;
    let field_set = builder
        .clone()
        .build_composite()
        .map_err(|e| IntlError::type_error(format!("unsupported combination of fields: {e}")))?;
    DateTimeFormatter::try_new_with_buffer_provider(data::provider()?, locale.into(), field_set)
        .map_err(|e| IntlError::range(format!("no date formats for this locale: {e}")))
}

/// The instant `epoch_ms` in `zone`, as ICU4X takes it.
fn zoned(
    epoch_ms: f64,
    zone: &str,
) -> Result<ZonedDateTime<Iso, icu::time::TimeZoneInfo<icu::time::zone::models::AtTime>>, IntlError>
{
    if !epoch_ms.is_finite() || epoch_ms.abs() > MAX_TIME_MS {
        return Err(IntlError::range("Invalid time value"));
    }
    #[allow(clippy::cast_possible_truncation)]
    let ms = epoch_ms.trunc() as i64;
    let ts = jiff::Timestamp::from_millisecond(ms)
        .map_err(|_| IntlError::range("Invalid time value"))?;
    let tz = if zone == "UTC" {
        jiff::tz::TimeZone::UTC
    } else {
        jiff::tz::db()
            .get(zone)
            .map_err(|_| IntlError::range(format!("Invalid time zone specified: {zone}")))?
    };
    let civil = ts.to_zoned(tz);
    // RFC 9557 text (`2023-11-14T23:13:20+01:00[Europe/Stockholm]`) is how jiff and ICU4X
    // meet: the offset jiff computed from the IANA rules, the zone ICU4X names.
    let name = if zone == "UTC" { "Etc/UTC" } else { zone };
    let text = format!(
        "{}{}[{name}]",
        civil.datetime().strftime("%Y-%m-%dT%H:%M:%S%.f"),
        civil.offset()
    );
    let parser = IanaParser::try_new_with_buffer_provider(data::provider()?).map_err(|e| {
        IntlError::type_error(format!(
            "Bosun's Intl data lacks time zone identifiers: {e}"
        ))
    })?;
    ZonedDateTime::try_strict_from_str(&text, Iso, parser.as_borrowed())
        .map_err(|e| IntlError::range(format!("cannot place {text} in its zone: {e:?}")))
}

/// The ICU4X field set for resolved options.
fn field_set(r: &Resolved) -> FieldSetBuilder {
    let mut b = FieldSetBuilder::new();
    if r.date_style.is_some() || r.time_style.is_some() {
        if let Some(style) = &r.date_style {
            (b.date_fields, b.length) = match style.as_str() {
                "full" => (Some(DateFields::YMDE), Some(Length::Long)),
                "long" => (Some(DateFields::YMD), Some(Length::Long)),
                "medium" => (Some(DateFields::YMD), Some(Length::Medium)),
                _ => (Some(DateFields::YMD), Some(Length::Short)),
            };
        }
        if let Some(style) = &r.time_style {
            b.time_precision = Some(match style.as_str() {
                "short" => TimePrecision::Minute,
                _ => TimePrecision::Second,
            });
            b.zone_style = match style.as_str() {
                "full" => Some(ZoneStyle::SpecificLong),
                "long" => Some(ZoneStyle::SpecificShort),
                _ => None,
            };
            if b.length.is_none() {
                b.length = Some(match style.as_str() {
                    "full" | "long" => Length::Long,
                    "medium" => Length::Medium,
                    _ => Length::Short,
                });
            }
        }
        return b;
    }
    let (e, y, m, d) = (
        r.weekday.is_some(),
        r.year.is_some() || r.era.is_some(),
        r.month.is_some(),
        r.day.is_some(),
    );
    // The nearest field set ICU4X has for the fields asked for: a missing field between two
    // asked ones is shown too (CLDR has no "year and day" pattern).
    b.date_fields = match (y, m, d, e) {
        (false, false, false, false) => None,
        (false, false, false, true) => Some(DateFields::E),
        (true, false, false, false) => Some(DateFields::Y),
        (false, true, false, false) => Some(DateFields::M),
        (false, false, true, false) => Some(DateFields::D),
        (false, false, true, true) => Some(DateFields::DE),
        (true, true, false, _) => Some(DateFields::YM),
        (false, true, true, false) => Some(DateFields::MD),
        (false, true, _, true) => Some(DateFields::MDE),
        (true, _, _, true) => Some(DateFields::YMDE),
        (true, _, true, false) => Some(DateFields::YMD),
    };
    b.length = Some(match (r.month.as_deref(), r.weekday.as_deref()) {
        (Some("long"), _) => Length::Long,
        (Some("short" | "narrow"), _) => Length::Medium,
        (None, Some("long")) => Length::Long,
        (None, Some(_)) => Length::Medium,
        _ => Length::Short,
    });
    if r.year.as_deref() == Some("numeric") || r.era.is_some() {
        b.year_style = Some(if r.era.is_some() {
            YearStyle::WithEra
        } else {
            YearStyle::Full
        });
    }
    b.time_precision = match (
        r.hour.is_some(),
        r.minute.is_some(),
        r.second.is_some(),
        r.fractional_second_digits,
    ) {
        (_, _, _, Some(n)) => Some(TimePrecision::Subsecond(match n {
            1 => SubsecondDigits::S1,
            2 => SubsecondDigits::S2,
            _ => SubsecondDigits::S3,
        })),
        (_, _, true, None) => Some(TimePrecision::Second),
        (_, true, false, None) => Some(TimePrecision::Minute),
        (true, false, false, None) => Some(TimePrecision::Hour),
        _ => None,
    };
    b.zone_style = r.time_zone_name.as_deref().map(|style| match style {
        "short" => ZoneStyle::SpecificShort,
        "long" => ZoneStyle::SpecificLong,
        "shortOffset" => ZoneStyle::LocalizedOffsetShort,
        "longOffset" => ZoneStyle::LocalizedOffsetLong,
        "shortGeneric" => ZoneStyle::GenericShort,
        _ => ZoneStyle::GenericLong,
    });
    b
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormatRequest {
    resolved: Resolved,
    epoch_ms: Option<f64>,
}

pub(crate) fn format(request: FormatRequest) -> Result<Value, IntlError> {
    let r = &request.resolved;
    let epoch_ms = request.epoch_ms.unwrap_or(f64::NAN);
    let zdt = zoned(epoch_ms, &canonical_zone(&r.time_zone)?)?;
    let formatter = formatter(&r.locale, r.hour_cycle.as_deref(), &field_set(r))?;
    let parts = Parts::of(&formatter.format(&zdt));
    let entries = parts.entries(
        |p| {
            if p.category != "datetime" {
                return None;
            }
            Some(match p.value {
                "era" => "era",
                "year" | "extendedYear" => "year",
                "relatedYear" => "relatedYear",
                "yearName" => "yearName",
                "month" => "month",
                "day" => "day",
                "weekday" => "weekday",
                "dayPeriod" => "dayPeriod",
                "hour" => "hour",
                "minute" => "minute",
                "second" => "second",
                "timeZoneName" => "timeZoneName",
                _ => return None,
            })
        },
        literal,
    );
    Ok(json!({ "parts": to_json(split_fraction(entries)) }))
}

/// ICU4X writes fractional seconds inside the second; ECMAScript has a part of its own.
fn split_fraction(entries: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    let mut out = Vec::with_capacity(entries.len());
    for (kind, value) in entries {
        if kind == "second"
            && let Some(at) = value.find(|c: char| !c.is_numeric())
        {
            let (whole, rest) = value.split_at(at);
            let separator_len = rest.chars().next().map_or(0, char::len_utf8);
            out.push(("second", whole.to_owned()));
            out.push(("literal", rest[..separator_len].to_owned()));
            out.push(("fractionalSecond", rest[separator_len..].to_owned()));
        } else {
            out.push((kind, value));
        }
    }
    out
}
