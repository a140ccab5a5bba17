use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

fn run(op: &str, request: Value) -> Result<Value, IntlError> {
    call(op, &request.to_string()).map(|text| serde_json::from_str(&text).unwrap())
}

fn text(parts: &Value) -> String {
    parts["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_str().unwrap())
        .collect()
}

fn date(locales: &[&str], options: Value, epoch_ms: f64) -> String {
    let resolved = run(
        "datetime.resolve",
        json!({"locales": locales, "options": options}),
    )
    .unwrap();
    text(
        &run(
            "datetime.format",
            json!({"resolved": resolved, "epochMs": epoch_ms}),
        )
        .unwrap(),
    )
}

const NOV_14_2023: f64 = 1_700_000_000_000.0; // 2023-11-14T22:13:20Z

#[test]
fn date_styles_match_what_browsers_print() {
    let zone = json!("Europe/Stockholm");
    assert_eq!(
        date(
            &["en-US"],
            json!({"timeZone": zone, "dateStyle": "full", "timeStyle": "long"}),
            NOV_14_2023
        ),
        "Tuesday, November 14, 2023 at 11:13:20\u{202f}PM GMT+1"
    );
    assert_eq!(
        date(
            &["en-US"],
            json!({"timeZone": "UTC", "dateStyle": "medium", "timeStyle": "short"}),
            NOV_14_2023
        ),
        "Nov 14, 2023, 10:13\u{202f}PM"
    );
    assert_eq!(
        date(
            &["en-GB"],
            json!({"timeZone": "UTC", "dateStyle": "short"}),
            NOV_14_2023
        ),
        "14/11/2023"
    );
    assert_eq!(
        date(
            &["de"],
            json!({"timeZone": "Europe/Berlin", "dateStyle": "long"}),
            NOV_14_2023
        ),
        "14. November 2023"
    );
    assert_eq!(
        date(
            &["en-US"],
            json!({"timeZone": "America/New_York"}),
            NOV_14_2023
        ),
        "11/14/2023"
    );
    assert_eq!(
        date(
            &["en-US"],
            json!({"timeZone": "Asia/Tokyo", "hour": "numeric", "minute": "2-digit", "hour12": false}),
            NOV_14_2023
        ),
        "07:13"
    );
}

#[test]
fn the_zone_moves_the_wall_clock_with_daylight_saving() {
    let summer = 1_688_000_000_000.0; // 2023-06-29T00:53:20Z
    let opts = json!({"timeZone": "Europe/Stockholm", "hour": "2-digit", "minute": "2-digit", "hourCycle": "h23"});
    assert_eq!(date(&["sv"], opts.clone(), summer), "02:53");
    assert_eq!(date(&["sv"], opts, NOV_14_2023), "23:13");
}

#[test]
fn invalid_zones_and_options_are_range_errors() {
    let err = run(
        "datetime.resolve",
        json!({"options": {"timeZone": "Mars/Base"}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "RangeError: Invalid time zone specified: Mars/Base"
    );
    let err = run(
        "datetime.resolve",
        json!({"options": {"dateStyle": "huge"}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "RangeError: Value huge out of range for Intl.DateTimeFormat options property dateStyle"
    );
    let err = run(
        "datetime.resolve",
        json!({"options": {"dateStyle": "short", "month": "long"}}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Type);
    let err = run("datetime.resolve", json!({"locales": ["not a locale!"]})).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Range);
    let resolved = run("datetime.resolve", json!({"options": {"timeZone": "UTC"}})).unwrap();
    let err = run(
        "datetime.format",
        json!({"resolved": resolved, "epochMs": f64::MAX}),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "RangeError: Invalid time value");
}

#[test]
fn resolved_options_name_the_zone_canonically() {
    let r = run("datetime.resolve", json!({"locales": ["EN-us"], "options": {"timeZone": "europe/stockholm", "hour": "numeric"}})).unwrap();
    assert_eq!(r["timeZone"], "Europe/Stockholm");
    assert_eq!(r["locale"], "en-US");
    assert_eq!(r["hourCycle"], "h12");
    assert_eq!(r["hour12"], true);
    let r = run(
        "datetime.resolve",
        json!({"locales": ["sv"], "options": {"hour": "numeric"}}),
    )
    .unwrap();
    assert_eq!(r["hourCycle"], "h23");
    let r = run("datetime.resolve", json!({})).unwrap();
    assert_eq!(r["timeZone"], host_time_zone());
}

#[test]
fn format_to_parts_types_each_field() {
    let resolved = run("datetime.resolve", json!({"locales": ["en-US"], "options": {"timeZone": "UTC", "year": "numeric", "month": "long", "day": "numeric", "hour": "numeric", "minute": "2-digit", "second": "2-digit", "fractionalSecondDigits": 2, "timeZoneName": "short"}})).unwrap();
    let parts = run(
        "datetime.format",
        json!({"resolved": resolved, "epochMs": NOV_14_2023 + 450.0}),
    )
    .unwrap();
    let types: Vec<&str> = parts["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .filter(|t| *t != "literal")
        .collect();
    assert_eq!(
        types,
        [
            "month",
            "day",
            "year",
            "hour",
            "minute",
            "second",
            "fractionalSecond",
            "dayPeriod",
            "timeZoneName"
        ]
    );
    assert!(text(&parts).contains(":20.45"), "{}", text(&parts));
}

fn number(locales: &[&str], options: Value, value: Value) -> String {
    let resolved = run(
        "number.resolve",
        json!({"locales": locales, "options": options}),
    )
    .unwrap();
    text(
        &run(
            "number.format",
            json!({"resolved": resolved, "value": value}),
        )
        .unwrap(),
    )
}

#[test]
fn numbers_match_what_browsers_print() {
    assert_eq!(
        number(&["en-US"], json!({}), json!(1234567.891)),
        "1,234,567.891"
    );
    assert_eq!(
        number(&["de-DE"], json!({}), json!(1234567.891)),
        "1.234.567,891"
    );
    assert_eq!(
        number(&["en-US"], json!({"maximumFractionDigits": 1}), json!(2.25)),
        "2.3"
    );
    assert_eq!(
        number(&["en-US"], json!({"minimumFractionDigits": 2}), json!(5)),
        "5.00"
    );
    assert_eq!(
        number(&["en-US"], json!({"useGrouping": false}), json!(12345)),
        "12345"
    );
    assert_eq!(
        number(
            &["en-US"],
            json!({"maximumSignificantDigits": 3}),
            json!(123456)
        ),
        "123,000"
    );
    assert_eq!(
        number(&["en-US"], json!({"style": "percent"}), json!(0.256)),
        "26%"
    );
    assert_eq!(
        number(
            &["en-US"],
            json!({"style": "currency", "currency": "USD"}),
            json!(1234.5)
        ),
        "$1,234.50"
    );
    assert_eq!(
        number(
            &["en-US"],
            json!({"style": "currency", "currency": "JPY"}),
            json!(1234.5)
        ),
        "¥1,235"
    );
    assert_eq!(
        number(&["en-US"], json!({"notation": "compact"}), json!(15127)),
        "15K"
    );
    assert_eq!(
        number(
            &["en-US"],
            json!({"notation": "compact", "compactDisplay": "long"}),
            json!(3_010_349)
        ),
        "3 million"
    );
    assert_eq!(number(&["en-US"], json!({}), json!("NaN")), "NaN");
    assert_eq!(number(&["en-US"], json!({}), json!("-Infinity")), "-∞");
    assert_eq!(
        number(&["en-US"], json!({"minimumIntegerDigits": 3}), json!(7)),
        "007"
    );
}

#[test]
fn number_options_out_of_range_are_errors() {
    let err = run("number.resolve", json!({"options": {"style": "currency"}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "TypeError: Currency code is required with currency style."
    );
    let err = run(
        "number.resolve",
        json!({"options": {"style": "currency", "currency": "US"}}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Range);
    let err = run(
        "number.resolve",
        json!({"options": {"maximumFractionDigits": 101}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "RangeError: maximumFractionDigits value is out of range."
    );
}

#[test]
fn plural_rules_collation_and_relative_time() {
    let select = |locale: &str, options: Value, value: f64| {
        let r = run(
            "plural.resolve",
            json!({"locales": [locale], "options": options}),
        )
        .unwrap();
        run("plural.select", json!({"resolved": r, "value": value})).unwrap()["category"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(select("en", json!({}), 1.0), "one");
    assert_eq!(select("en", json!({}), 2.0), "other");
    assert_eq!(
        select("en", json!({"minimumFractionDigits": 1}), 1.0),
        "other"
    );
    assert_eq!(select("en", json!({"type": "ordinal"}), 22.0), "two");
    assert_eq!(select("pl", json!({}), 5.0), "many");

    let compare = |locale: &str, options: Value, a: &str, b: &str| {
        let r = run(
            "collator.resolve",
            json!({"locales": [locale], "options": options}),
        )
        .unwrap();
        run("collator.compare", json!({"resolved": r, "a": a, "b": b})).unwrap()["result"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(compare("sv", json!({}), "ä", "z"), 1);
    assert_eq!(compare("de", json!({}), "ä", "z"), -1);
    assert_eq!(compare("en", json!({"sensitivity": "base"}), "a", "A"), 0);
    assert_eq!(
        compare("en", json!({"numeric": true}), "item 2", "item 10"),
        -1
    );
    assert_eq!(compare("en", json!({}), "item 2", "item 10"), 1);

    let relative = |options: Value, value: f64, unit: &str| {
        let r = run(
            "relative.resolve",
            json!({"locales": ["en"], "options": options}),
        )
        .unwrap();
        text(
            &run(
                "relative.format",
                json!({"resolved": r, "value": value, "unit": unit}),
            )
            .unwrap(),
        )
    };
    assert_eq!(relative(json!({}), -1.0, "day"), "1 day ago");
    assert_eq!(
        relative(json!({"numeric": "auto"}), -1.0, "day"),
        "yesterday"
    );
    assert_eq!(relative(json!({}), 3.0, "hours"), "in 3 hours");
    let r = run("relative.resolve", json!({"locales": ["en"]})).unwrap();
    let err = run(
        "relative.format",
        json!({"resolved": r, "value": 1, "unit": "fortnight"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Range);
}

#[test]
fn canonical_locales() {
    let out = run(
        "locale.canonicalize",
        json!({"locales": ["EN-us", "en-US", "iw"]}),
    )
    .unwrap();
    assert_eq!(out["locales"], json!(["en-US", "he"]));
    assert!(run("locale.canonicalize", json!({"locales": [""]})).is_err());
    assert!(call("nope", "{}").is_err());
    assert!(call("number.format", "not json").is_err());
}

#[test]
fn other_calendars_and_numbering_systems_format_without_failing() {
    for locale in [
        "th",
        "en-u-ca-hebrew",
        "ar-EG",
        "fa",
        "ja-JP-u-ca-japanese",
        "zh-u-nu-hanidec",
    ] {
        let out = date(
            &[locale],
            json!({"timeZone": "UTC", "dateStyle": "long"}),
            NOV_14_2023,
        );
        assert!(!out.is_empty(), "{locale}");
        let _ = number(&[locale], json!({}), json!(1234.5));
    }
    let r = run("datetime.resolve", json!({"locales": ["th-TH"]})).unwrap();
    assert_eq!(r["calendar"], "buddhist");
    let r = run("datetime.resolve", json!({"locales": ["en-US"]})).unwrap();
    assert_eq!(r["calendar"], "gregory");
    assert_eq!(r["numberingSystem"], "latn");
    let r = run("number.resolve", json!({"locales": ["ar-EG"]})).unwrap();
    assert_eq!(r["numberingSystem"], "arab");
    assert_eq!(number(&["ar-EG"], json!({}), json!(12)), "\u{661}\u{662}");
}

/// Junk requests are refused as errors, never a panic.
#[test]
fn junk_requests_are_errors() {
    for (op, request) in [
        ("datetime.format", "{}"),
        (
            "datetime.format",
            r#"{"resolved": {"locale": "en"}, "epochMs": 0}"#,
        ),
        ("datetime.resolve", r#"{"locales": [1, 2]}"#),
        (
            "datetime.resolve",
            r#"{"options": {"fractionalSecondDigits": 99}}"#,
        ),
        (
            "datetime.resolve",
            r#"{"options": {"timeZone": "../../etc/passwd"}}"#,
        ),
        ("number.format", r#"{"resolved": null, "value": 1}"#),
        (
            "relative.format",
            r#"{"resolved": {"locale": "en", "style": "long", "numeric": "always", "numberingSystem": "latn"}, "value": 1e308, "unit": "day"}"#,
        ),
        (
            "collator.compare",
            r#"{"resolved": {"locale": "xx-!!", "usage": "sort", "sensitivity": "base", "ignorePunctuation": false, "collation": "default", "numeric": false, "caseFirst": "false"}, "a": "a", "b": "b"}"#,
        ),
    ] {
        let _ = call(op, request);
    }
    let huge = format!(r#"{{"locales": ["{}"]}}"#, "a".repeat(MAX_REQUEST_BYTES));
    assert_eq!(
        call("locale.canonicalize", &huge).unwrap_err().kind,
        ErrorKind::Range
    );
}
