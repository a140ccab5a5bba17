//! `Intl.Collator` and `String.prototype.localeCompare`: the Unicode Collation Algorithm with
//! CLDR tailorings from ICU4X (Swedish puts `ä` after `z`; German does not).

use icu::collator::Collator;
use icu::collator::options::{AlternateHandling, CaseLevel, CollatorOptions, Strength};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{IntlError, ResolveRequest, choice, data, flag, locale};

const CTOR: &str = "Intl.Collator";

/// What `resolvedOptions()` returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resolved {
    locale: String,
    usage: String,
    sensitivity: String,
    ignore_punctuation: bool,
    collation: String,
    numeric: bool,
    case_first: String,
}

pub(crate) fn resolve(request: ResolveRequest) -> Result<Value, IntlError> {
    let o = &request.options;
    let chosen = request.locale(CTOR)?;
    let resolved = Resolved {
        locale: locale::base_name(&chosen),
        usage: choice(o, "usage", &["sort", "search"], CTOR)?.unwrap_or_else(|| "sort".to_owned()),
        sensitivity: choice(
            o,
            "sensitivity",
            &["base", "accent", "case", "variant"],
            CTOR,
        )?
        .unwrap_or_else(|| "variant".to_owned()),
        ignore_punctuation: flag(o, "ignorePunctuation").unwrap_or(false),
        collation: "default".to_owned(),
        numeric: flag(o, "numeric").unwrap_or(false),
        case_first: choice(o, "caseFirst", &["upper", "lower", "false"], CTOR)?
            .unwrap_or_else(|| "false".to_owned()),
    };
    serde_json::to_value(&resolved).map_err(|e| IntlError::type_error(e.to_string()))
}

#[derive(Deserialize)]
pub(crate) struct CompareRequest {
    resolved: Resolved,
    a: String,
    b: String,
}

pub(crate) fn compare(request: CompareRequest) -> Result<Value, IntlError> {
    let r = &request.resolved;
    let mut keywords: Vec<(&str, &str)> = Vec::new();
    if r.numeric {
        keywords.push(("kn", "true"));
    }
    if r.case_first != "false" {
        keywords.push(("kf", r.case_first.as_str()));
    }
    let locale = locale::with_keywords(&r.locale, &keywords)?;
    let mut options = CollatorOptions::default();
    match r.sensitivity.as_str() {
        "base" => options.strength = Some(Strength::Primary),
        "accent" => options.strength = Some(Strength::Secondary),
        "case" => {
            options.strength = Some(Strength::Primary);
            options.case_level = Some(CaseLevel::On);
        }
        _ => options.strength = Some(Strength::Tertiary),
    }
    if r.ignore_punctuation {
        options.alternate_handling = Some(AlternateHandling::Shifted);
    }
    let collator =
        Collator::try_new_with_buffer_provider(data::provider()?, (&locale).into(), options)
            .map_err(|e| IntlError::range(format!("no collation data for this locale: {e}")))?;
    let result = match collator.as_borrowed().compare(&request.a, &request.b) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    };
    Ok(json!({ "result": result }))
}
