//! `Intl` in the engine, computed by the host (`bosun-intl`): Triggerfish's system-info shape
//! unmodified, and the ECMA-402 surface plugins use, with the errors browsers throw.

use bosun_sandbox::{CallOptions, Grants, JsGrants};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use bosun_plugins::typescript::strip_types;

use crate::support::{PluginSource, call, call_with, fixture_dir};

fn text(outcome: bosun_js::ToolOutcome) -> String {
    match outcome {
        bosun_js::ToolOutcome::Ok {
            output: Value::String(text),
            ..
        } => text,
        other => panic!("expected text, got {other:?}"),
    }
}

const NOV_14_2023: u64 = 1_700_000_000_000; // 2023-11-14T22:13:20Z

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggerfishs_system_info_runs_unmodified() {
    let grants = Grants {
        js: JsGrants { host_info: true },
        ..Grants::default()
    };
    // As the host loads it: the TypeScript's types erased by oxc, the type-only import gone.
    let typescript = std::fs::read_to_string(fixture_dir("system-info").join("mod.ts")).unwrap();
    let javascript = strip_types(std::path::Path::new("mod.ts"), &typescript).unwrap();
    let mut plugin = PluginSource::triggerfish("system-info", &javascript)
        .trusted()
        .activate_with(grants)
        .await
        .unwrap();

    let time = |zone: Option<&str>| {
        let mut input = json!({ "at": NOV_14_2023 });
        if let Some(zone) = zone {
            input["timezone"] = json!(zone);
        }
        input
    };
    let (outcome, _) = call_with(
        &mut plugin,
        "system_time",
        time(Some("Asia/Tokyo")),
        CallOptions::default(),
    )
    .await
    .unwrap();
    let answer: Value = serde_json::from_str(&text(outcome)).unwrap();
    assert_eq!(answer["timezone"], "Asia/Tokyo");
    assert_eq!(
        answer["formatted"],
        "Wednesday, November 15, 2023 at 7:13:20\u{202f}AM GMT+9"
    );
    assert_eq!(answer["iso"], "2023-11-14T22:13:20.000Z");

    // No zone: the host's own, as Deno reports the system's.
    let outcome = call(&mut plugin, "system_time", time(None)).await;
    let answer: Value = serde_json::from_str(&text(outcome)).unwrap();
    assert_eq!(answer["timezone"], bosun_intl::host_time_zone());

    // An invalid zone takes the plugin's own error path, with the browser's RangeError.
    let outcome = call(&mut plugin, "system_time", time(Some("Mars/Olympus_Mons"))).await;
    assert_eq!(
        text(outcome),
        "Invalid timezone: Mars/Olympus_Mons (RangeError: Invalid time zone specified: Mars/Olympus_Mons)"
    );

    let outcome = call(&mut plugin, "system_info", json!({})).await;
    let info: Value = serde_json::from_str(&text(outcome)).unwrap();
    assert_eq!(info["os"], std::env::consts::OS);
    assert_eq!(info["arch"], std::env::consts::ARCH);
    assert!(
        info["deno"].as_str().unwrap().contains("QuickJS-ng"),
        "{info}"
    );
    assert!(
        info["memory"]["heapUsedMB"].as_f64().unwrap() > 0.0,
        "{info}"
    );
    assert_ne!(info["hostname"], "unknown");
}

/// A Forge plugin exercising the ECMA-402 surface; one tool returns every result as JSON.
const SURFACE: &str = r#"
export default function activate(api) {
  api.registerTool({
    name: "intl_surface",
    description: "Exercises Intl.",
    risk: "read",
    inputSchema: api.z.object({}),
    execute: async () => {
      const at = new Date(1700000000000);
      const errors = {};
      const attempt = (name, fn) => {
        try { fn(); errors[name] = "no error"; } catch (e) { errors[name] = `${e.constructor.name}: ${e.message}`; }
      };
      attempt("zone", () => new Intl.DateTimeFormat("en", { timeZone: "Nowhere/Land" }));
      attempt("style", () => new Intl.DateTimeFormat("en", { dateStyle: "huge" }));
      attempt("mixed", () => new Intl.DateTimeFormat("en", { dateStyle: "short", month: "long" }));
      attempt("locale", () => new Intl.NumberFormat("x-!!"));
      attempt("currency", () => new Intl.NumberFormat("en", { style: "currency" }));
      attempt("plural_call", () => Intl.PluralRules());
      attempt("invalid_date", () => new Intl.DateTimeFormat("en").format(NaN));
      const dtf = new Intl.DateTimeFormat("de-DE", { timeZone: "Europe/Berlin", weekday: "long", hour: "2-digit", minute: "2-digit" });
      return { ok: true, output: {
        de: dtf.format(at),
        parts: dtf.formatToParts(at).map((p) => p.type),
        callable: Intl.DateTimeFormat("en-GB", { timeZone: "UTC" }).format(at),
        toLocale: at.toLocaleString("en-US", { timeZone: "UTC" }),
        toLocaleDate: at.toLocaleDateString("sv-SE", { timeZone: "UTC" }),
        number: (1234567.891).toLocaleString("fr-FR"),
        currency: new Intl.NumberFormat("de-DE", { style: "currency", currency: "EUR" }).format(1234.5),
        percent: new Intl.NumberFormat("en-US", { style: "percent", maximumFractionDigits: 1 }).format(0.1234),
        compact: new Intl.NumberFormat("en", { notation: "compact" }).format(2207),
        bigint: (12345678901234567890n).toLocaleString("en-US"),
        plural: [0, 1, 2].map((n) => new Intl.PluralRules("en-US").select(n)),
        ordinal: [1, 2, 3, 4].map((n) => new Intl.PluralRules("en-US", { type: "ordinal" }).select(n)),
        sorted: ["z", "ä", "a"].sort(new Intl.Collator("sv").compare),
        localeCompare: "a".localeCompare("B", "en", { sensitivity: "base" }),
        relative: new Intl.RelativeTimeFormat("en", { numeric: "auto" }).format(-1, "day"),
        canonical: Intl.getCanonicalLocales(["EN-us", "de-de"]),
        tag: Object.prototype.toString.call(new Intl.NumberFormat()),
        resolvedLocale: new Intl.NumberFormat().resolvedOptions().locale,
        errors,
      }, truncated: false };
    },
  });
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ecma_402_surface_plugins_use_answers_as_browsers_do() {
    let mut plugin = PluginSource::forge("intl-surface", &["tools:register"], SURFACE)
        .start()
        .await;
    let outcome = call(&mut plugin, "intl_surface", json!({})).await;
    let bosun_js::ToolOutcome::Ok { output: out, .. } = outcome else {
        panic!("{outcome:?}");
    };
    // ICU4X's semantic field sets: a long weekday with a time takes CLDR's long glue.
    assert_eq!(out["de"], "Dienstag um 23:13");
    assert_eq!(
        out["parts"],
        json!(["weekday", "literal", "hour", "literal", "minute"])
    );
    assert_eq!(out["callable"], "14/11/2023");
    assert_eq!(out["toLocale"], "11/14/2023, 10:13:20\u{202f}PM");
    assert_eq!(out["toLocaleDate"], "2023-11-14");
    assert_eq!(out["number"], "1\u{202f}234\u{202f}567,891");
    assert_eq!(out["currency"], "1.234,50\u{a0}€");
    assert_eq!(out["percent"], "12.3%");
    assert_eq!(out["compact"], "2.2K");
    assert_eq!(out["bigint"], "12,345,678,901,234,567,890");
    assert_eq!(out["plural"], json!(["other", "one", "other"]));
    assert_eq!(out["ordinal"], json!(["one", "two", "few", "other"]));
    assert_eq!(out["sorted"], json!(["a", "z", "ä"]));
    assert_eq!(out["localeCompare"], -1);
    assert_eq!(out["relative"], "yesterday");
    assert_eq!(out["canonical"], json!(["en-US", "de-DE"]));
    assert_eq!(out["tag"], "[object Intl.NumberFormat]");
    assert_eq!(out["resolvedLocale"], "en-US");
    let errors = &out["errors"];
    assert_eq!(
        errors["zone"],
        "RangeError: Invalid time zone specified: Nowhere/Land"
    );
    assert_eq!(
        errors["style"],
        "RangeError: Value huge out of range for Intl.DateTimeFormat options property dateStyle"
    );
    assert_eq!(
        errors["mixed"],
        "TypeError: Can't set option month when dateStyle is used"
    );
    assert!(
        errors["locale"]
            .as_str()
            .unwrap()
            .starts_with("RangeError: Incorrect locale information provided"),
        "{errors}"
    );
    assert_eq!(
        errors["currency"],
        "TypeError: Currency code is required with currency style."
    );
    assert_eq!(
        errors["plural_call"],
        "TypeError: class constructors must be invoked with 'new'"
    );
    assert_eq!(errors["invalid_date"], "RangeError: Invalid time value");
}
