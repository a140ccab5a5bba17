// Bosun JS engine prelude: `Intl` (DateTimeFormat, NumberFormat, Collator, PluralRules,
// RelativeTimeFormat, getCanonicalLocales) and the locale-aware methods of Date, Number,
// BigInt and String. QuickJS has no Intl; this file keeps the objects and coerces options as
// ECMA-402 does, and the host computes everything that needs data (crates/intl: ICU4X's CLDR
// data and the IANA time-zone database) through one host call, `intl(op, json)`, whose errors
// arrive as the RangeError or TypeError a browser throws.
"use strict";

(function bosunPreludeIntl(shared) {
  const {
    ObjectDefineProperty, JSONStringify, JSONParse, DateNow, SymbolToStringTag, host, freezeClass,
  } = shared;
  const nativeIntl = host.intl;
  const DateGetTime = Date.prototype.getTime;
  const ReflectApply = Reflect.apply;
  const StringCtor = String;
  const NumberCtor = Number;

  function call(op, request) {
    return JSONParse(nativeIntl(op, JSONStringify(request)));
  }

  /** ECMA-402 CanonicalizeLocaleList, minus the data: the host checks and canonicalises. */
  function localeList(locales) {
    if (locales === undefined) return [];
    if (typeof locales === "string") return [locales];
    if (locales === null) throw new TypeError("Cannot convert undefined or null to object");
    const list = [];
    const length = NumberCtor(locales.length) || 0;
    for (let i = 0; i < length; i++) {
      if (!(i in Object(locales))) continue;
      const value = locales[i];
      if (typeof value !== "string" && (typeof value !== "object" || value === null)) {
        throw new TypeError("Language ID should be string or object.");
      }
      list.push(StringCtor(value));
    }
    return list;
  }

  /** Reads each named option once, coerced as GetOption does. */
  function readOptions(options, spec) {
    if (options === undefined) return {};
    if (options === null) throw new TypeError("Cannot convert undefined or null to object");
    const object = Object(options);
    const out = {};
    for (const name in spec) {
      const value = object[name];
      if (value === undefined) continue;
      switch (spec[name]) {
        case "boolean": out[name] = !!value; break;
        case "number": out[name] = NumberCtor(value); break;
        case "grouping":
          out[name] = typeof value === "boolean" ? value : StringCtor(value);
          break;
        default: out[name] = StringCtor(value);
      }
    }
    return out;
  }

  function supportedLocalesOf(locales, options) {
    readOptions(options, { localeMatcher: "string" });
    return call("locale.canonicalize", { locales: localeList(locales) }).locales;
  }

  const DATE_OPTIONS = {
    localeMatcher: "string", calendar: "string", numberingSystem: "string", hour12: "boolean",
    hourCycle: "string", timeZone: "string", weekday: "string", era: "string", year: "string",
    month: "string", day: "string", dayPeriod: "string", hour: "string", minute: "string",
    second: "string", fractionalSecondDigits: "number", timeZoneName: "string",
    formatMatcher: "string", dateStyle: "string", timeStyle: "string",
  };

  function timeValue(date) {
    if (date === undefined) return DateNow();
    if (date instanceof Date) return ReflectApply(DateGetTime, date, []);
    return NumberCtor(date);
  }

  class DateTimeFormat {
    #resolved;
    #bound;

    constructor(locales, options, defaults = "date") {
      this.#resolved = call("datetime.resolve", {
        locales: localeList(locales),
        options: readOptions(options, DATE_OPTIONS),
        defaults,
      });
    }

    static #check(value, method) {
      if (typeof value !== "object" || value === null || !(#resolved in value)) {
        throw new TypeError(`Method Intl.DateTimeFormat.prototype.${method} called on incompatible receiver ${StringCtor(value)}`);
      }
    }

    get format() {
      DateTimeFormat.#check(this, "format");
      if (this.#bound === undefined) {
        const resolved = this.#resolved;
        this.#bound = (date) => partsText(call("datetime.format", { resolved, epochMs: timeValue(date) }).parts);
      }
      return this.#bound;
    }

    formatToParts(date) {
      DateTimeFormat.#check(this, "formatToParts");
      return call("datetime.format", { resolved: this.#resolved, epochMs: timeValue(date) }).parts;
    }

    resolvedOptions() {
      DateTimeFormat.#check(this, "resolvedOptions");
      return { ...this.#resolved };
    }

    static supportedLocalesOf(locales, options) {
      return supportedLocalesOf(locales, options);
    }
  }

  function partsText(parts) {
    let text = "";
    for (const part of parts) text += part.value;
    return text;
  }

  const NUMBER_OPTIONS = {
    localeMatcher: "string", numberingSystem: "string", style: "string", currency: "string",
    currencyDisplay: "string", currencySign: "string", unit: "string", unitDisplay: "string",
    notation: "string", compactDisplay: "string", useGrouping: "grouping",
    minimumIntegerDigits: "number", minimumFractionDigits: "number",
    maximumFractionDigits: "number", minimumSignificantDigits: "number",
    maximumSignificantDigits: "number", signDisplay: "string", roundingMode: "string",
  };

  /** A number, a BigInt or a decimal string, as the host takes it. */
  function numericValue(value) {
    if (typeof value === "bigint") return StringCtor(value);
    if (typeof value === "string") return value;
    const n = NumberCtor(value);
    if (n !== n) return "NaN";
    if (n === Infinity) return "Infinity";
    if (n === -Infinity) return "-Infinity";
    if (n === 0 && 1 / n < 0) return "-0";
    return n;
  }

  class NumberFormat {
    #resolved;
    #bound;

    constructor(locales, options) {
      this.#resolved = call("number.resolve", {
        locales: localeList(locales),
        options: readOptions(options, NUMBER_OPTIONS),
      });
    }

    static #check(value, method) {
      if (typeof value !== "object" || value === null || !(#resolved in value)) {
        throw new TypeError(`Method Intl.NumberFormat.prototype.${method} called on incompatible receiver ${StringCtor(value)}`);
      }
    }

    get format() {
      NumberFormat.#check(this, "format");
      if (this.#bound === undefined) {
        const resolved = this.#resolved;
        this.#bound = (value) => partsText(call("number.format", { resolved, value: numericValue(value) }).parts);
      }
      return this.#bound;
    }

    formatToParts(value) {
      NumberFormat.#check(this, "formatToParts");
      return call("number.format", { resolved: this.#resolved, value: numericValue(value) }).parts;
    }

    resolvedOptions() {
      NumberFormat.#check(this, "resolvedOptions");
      return { ...this.#resolved };
    }

    static supportedLocalesOf(locales, options) {
      return supportedLocalesOf(locales, options);
    }
  }

  class Collator {
    #resolved;
    #bound;

    constructor(locales, options) {
      this.#resolved = call("collator.resolve", {
        locales: localeList(locales),
        options: readOptions(options, {
          localeMatcher: "string", usage: "string", sensitivity: "string",
          ignorePunctuation: "boolean", numeric: "boolean", caseFirst: "string", collation: "string",
        }),
      });
    }

    static #check(value, method) {
      if (typeof value !== "object" || value === null || !(#resolved in value)) {
        throw new TypeError(`Method Intl.Collator.prototype.${method} called on incompatible receiver ${StringCtor(value)}`);
      }
    }

    get compare() {
      Collator.#check(this, "compare");
      if (this.#bound === undefined) {
        const resolved = this.#resolved;
        this.#bound = (a, b) => call("collator.compare", { resolved, a: StringCtor(a), b: StringCtor(b) }).result;
      }
      return this.#bound;
    }

    resolvedOptions() {
      Collator.#check(this, "resolvedOptions");
      return { ...this.#resolved };
    }

    static supportedLocalesOf(locales, options) {
      return supportedLocalesOf(locales, options);
    }
  }

  class PluralRules {
    #resolved;

    constructor(locales, options) {
      this.#resolved = call("plural.resolve", {
        locales: localeList(locales),
        options: readOptions(options, {
          localeMatcher: "string", type: "string", minimumIntegerDigits: "number",
          minimumFractionDigits: "number", maximumFractionDigits: "number",
        }),
      });
    }

    static #check(value, method) {
      if (typeof value !== "object" || value === null || !(#resolved in value)) {
        throw new TypeError(`Method Intl.PluralRules.prototype.${method} called on incompatible receiver ${StringCtor(value)}`);
      }
    }

    select(value) {
      PluralRules.#check(this, "select");
      return call("plural.select", { resolved: this.#resolved, value: NumberCtor(value) }).category;
    }

    resolvedOptions() {
      PluralRules.#check(this, "resolvedOptions");
      const r = this.#resolved;
      return { ...r, pluralCategories: [...r.pluralCategories] };
    }

    static supportedLocalesOf(locales, options) {
      return supportedLocalesOf(locales, options);
    }
  }

  class RelativeTimeFormat {
    #resolved;

    constructor(locales, options) {
      this.#resolved = call("relative.resolve", {
        locales: localeList(locales),
        options: readOptions(options, { localeMatcher: "string", style: "string", numeric: "string", numberingSystem: "string" }),
      });
    }

    static #check(value, method) {
      if (typeof value !== "object" || value === null || !(#resolved in value)) {
        throw new TypeError(`Method Intl.RelativeTimeFormat.prototype.${method} called on incompatible receiver ${StringCtor(value)}`);
      }
    }

    formatToParts(value, unit) {
      RelativeTimeFormat.#check(this, "formatToParts");
      const answer = call("relative.format", { resolved: this.#resolved, value: NumberCtor(value), unit: StringCtor(unit) });
      return answer.parts.map((part) => (part.type === "literal" ? part : { ...part, unit: answer.unit }));
    }

    format(value, unit) {
      RelativeTimeFormat.#check(this, "format");
      return partsText(call("relative.format", { resolved: this.#resolved, value: NumberCtor(value), unit: StringCtor(unit) }).parts);
    }

    resolvedOptions() {
      RelativeTimeFormat.#check(this, "resolvedOptions");
      return { ...this.#resolved };
    }

    static supportedLocalesOf(locales, options) {
      return supportedLocalesOf(locales, options);
    }
  }

  // DateTimeFormat, NumberFormat and Collator may be called without `new` (ECMA-402 keeps that
  // for the three oldest constructors); the others throw, as their classes do.
  function callable(cls, name) {
    const wrapper = function (locales, options) {
      return new cls(locales, options);
    };
    ObjectDefineProperty(wrapper, "name", { value: name });
    ObjectDefineProperty(wrapper, "length", { value: 0 });
    wrapper.prototype = cls.prototype;
    ObjectDefineProperty(cls.prototype, "constructor", { value: wrapper, writable: true, configurable: true });
    wrapper.supportedLocalesOf = cls.supportedLocalesOf;
    return wrapper;
  }

  for (const [cls, name] of [
    [DateTimeFormat, "Intl.DateTimeFormat"], [NumberFormat, "Intl.NumberFormat"],
    [Collator, "Intl.Collator"], [PluralRules, "Intl.PluralRules"],
    [RelativeTimeFormat, "Intl.RelativeTimeFormat"],
  ]) {
    ObjectDefineProperty(cls.prototype, SymbolToStringTag, { value: name, configurable: true });
  }

  const Intl = {
    DateTimeFormat: callable(DateTimeFormat, "DateTimeFormat"),
    NumberFormat: callable(NumberFormat, "NumberFormat"),
    Collator: callable(Collator, "Collator"),
    PluralRules,
    RelativeTimeFormat,
    getCanonicalLocales(locales) {
      return call("locale.canonicalize", { locales: localeList(locales) }).locales;
    },
  };
  ObjectDefineProperty(Intl, SymbolToStringTag, { value: "Intl", configurable: true });
  for (const cls of [DateTimeFormat, NumberFormat, Collator, PluralRules, RelativeTimeFormat]) {
    freezeClass(cls);
  }

  // The locale-aware methods ECMA-402 redefines, each through the matching formatter.
  function method(proto, name, fn) {
    ObjectDefineProperty(proto, name, { value: fn, writable: true, configurable: true, enumerable: false });
  }
  function dateMethod(defaults) {
    return function (locales, options) {
      const time = ReflectApply(DateGetTime, this, []);
      if (time !== time) return "Invalid Date";
      return new DateTimeFormat(locales, options, defaults).format(time);
    };
  }
  method(Date.prototype, "toLocaleString", dateMethod("all"));
  method(Date.prototype, "toLocaleDateString", dateMethod("date"));
  method(Date.prototype, "toLocaleTimeString", dateMethod("time"));
  const NumberValueOf = Number.prototype.valueOf;
  method(Number.prototype, "toLocaleString", function (locales, options) {
    return new NumberFormat(locales, options).format(ReflectApply(NumberValueOf, this, []));
  });
  const BigIntValueOf = BigInt.prototype.valueOf;
  method(BigInt.prototype, "toLocaleString", function (locales, options) {
    return new NumberFormat(locales, options).format(ReflectApply(BigIntValueOf, this, []));
  });
  method(String.prototype, "localeCompare", function (that, locales, options) {
    if (this === undefined || this === null) {
      throw new TypeError("String.prototype.localeCompare called on null or undefined");
    }
    return new Collator(locales, options).compare(StringCtor(this), StringCtor(that));
  });

  shared.provide({ Intl });
})(globalThis.__bosunPrelude);
