//! The ICU4X data Bosun's `Intl` uses, listed once: the data baked into ICU4X's data crates
//! (CLDR, as each crate version ships it) behind one provider the export driver can iterate.
//! A marker missing here is a `DataError` (`MarkerNotFound`) in `bosun-intl`'s tests.

use icu_provider::prelude::*;

/// Every marker of the list below, as the data crates bake it.
#[derive(Debug)]
pub struct Source;

/// A singleton marker has one payload, under the empty identifier. (The data crates' own
/// iteration for singletons names `std::collections::BtreeSet` and does not compile.)
macro_rules! iterable_singleton {
    ($($marker:ty),+ $(,)?) => {
        $(
            impl icu_provider::IterableDataProvider<$marker> for Source {
                fn iter_ids(
                    &self,
                ) -> Result<std::collections::BTreeSet<DataIdentifierCow<'static>>, DataError> {
                    Ok([DataIdentifierCow::default()].into_iter().collect())
                }
            }
        )+
    };
}

#[allow(unused_imports)]
const _: () = {
    use icu_calendar_data::*;
    use icu_collator_data::*;
    use icu_datetime_data::*;
    use icu_decimal_data::*;
    use icu_experimental_data::*;
    use icu_locale_data::*;
    use icu_normalizer_data::*;
    use icu_plurals_data::*;
    use icu_time_data::*;
    icu_datetime_data::make_provider!(Source);
    icu_datetime_data::impl_datetime_names_dayperiod_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_buddhist_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_chinese_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_coptic_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_dangi_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_ethiopian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_gregorian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_hebrew_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_hijri_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_indian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_japanese_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_japanext_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_persian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_month_roc_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_weekday_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_buddhist_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_chinese_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_coptic_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_dangi_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_ethiopian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_gregorian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_hebrew_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_hijri_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_indian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_japanese_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_japanext_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_persian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_names_year_roc_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_buddhist_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_chinese_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_coptic_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_dangi_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_ethiopian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_gregorian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_hebrew_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_hijri_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_indian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_japanese_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_japanext_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_persian_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_date_roc_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_glue_v1!(Source, ITER);
    icu_datetime_data::impl_datetime_patterns_time_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_cities_override_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_cities_root_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_essentials_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_generic_long_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_generic_short_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_locations_override_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_locations_root_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_specific_long_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_specific_short_v1!(Source, ITER);
    icu_datetime_data::impl_timezone_names_standard_long_v1!(Source, ITER);
    icu_decimal_data::impl_decimal_digits_v1!(Source, ITER);
    icu_decimal_data::impl_decimal_symbols_v1!(Source, ITER);
    icu_plurals_data::impl_plurals_cardinal_v1!(Source, ITER);
    icu_plurals_data::impl_plurals_ordinal_v1!(Source, ITER);
    icu_plurals_data::impl_plurals_ranges_v1!(Source, ITER);
    icu_collator_data::impl_collation_diacritics_v1!(Source, ITER);
    icu_collator_data::impl_collation_jamo_v1!(Source);
    icu_collator_data::impl_collation_metadata_v1!(Source, ITER);
    icu_collator_data::impl_collation_reordering_v1!(Source, ITER);
    icu_collator_data::impl_collation_root_v1!(Source);
    icu_collator_data::impl_collation_special_primaries_v1!(Source);
    icu_collator_data::impl_collation_tailoring_v1!(Source, ITER);
    icu_calendar_data::impl_calendar_japanese_extended_v1!(Source);
    icu_calendar_data::impl_calendar_japanese_modern_v1!(Source);
    icu_calendar_data::impl_calendar_week_v1!(Source, ITER);
    icu_time_data::impl_timezone_identifiers_iana_core_v1!(Source);
    icu_time_data::impl_timezone_identifiers_iana_extended_v1!(Source);
    icu_time_data::impl_timezone_identifiers_windows_v1!(Source);
    icu_time_data::impl_timezone_periods_v1!(Source);
    icu_normalizer_data::impl_normalizer_nfc_v1!(Source);
    icu_normalizer_data::impl_normalizer_nfd_data_v1!(Source);
    icu_normalizer_data::impl_normalizer_nfd_supplement_v1!(Source);
    icu_normalizer_data::impl_normalizer_nfd_tables_v1!(Source);
    icu_normalizer_data::impl_normalizer_nfkd_data_v1!(Source);
    icu_normalizer_data::impl_normalizer_nfkd_tables_v1!(Source);
    icu_normalizer_data::impl_normalizer_uts46_data_v1!(Source);
    icu_locale_data::impl_locale_aliases_v1!(Source);
    icu_locale_data::impl_locale_likely_subtags_extended_v1!(Source);
    icu_locale_data::impl_locale_likely_subtags_language_v1!(Source);
    icu_locale_data::impl_locale_likely_subtags_script_region_v1!(Source);
    icu_locale_data::impl_locale_parents_v1!(Source);
    icu_locale_data::impl_locale_script_direction_v1!(Source);
    icu_experimental_data::impl_currency_displayname_v1!(Source, ITER);
    icu_experimental_data::impl_currency_essentials_v1!(Source, ITER);
    icu_experimental_data::impl_currency_extended_data_v1!(Source, ITER);
    icu_experimental_data::impl_currency_patterns_data_v1!(Source, ITER);
    icu_experimental_data::impl_long_compact_decimal_format_data_v1!(Source, ITER);
    icu_experimental_data::impl_long_day_relative_v1!(Source, ITER);
    icu_experimental_data::impl_long_hour_relative_v1!(Source, ITER);
    icu_experimental_data::impl_long_minute_relative_v1!(Source, ITER);
    icu_experimental_data::impl_long_month_relative_v1!(Source, ITER);
    icu_experimental_data::impl_long_quarter_relative_v1!(Source, ITER);
    icu_experimental_data::impl_long_second_relative_v1!(Source, ITER);
    icu_experimental_data::impl_long_week_relative_v1!(Source, ITER);
    icu_experimental_data::impl_long_year_relative_v1!(Source, ITER);
    icu_experimental_data::impl_narrow_day_relative_v1!(Source, ITER);
    icu_experimental_data::impl_narrow_hour_relative_v1!(Source, ITER);
    icu_experimental_data::impl_narrow_minute_relative_v1!(Source, ITER);
    icu_experimental_data::impl_narrow_month_relative_v1!(Source, ITER);
    icu_experimental_data::impl_narrow_quarter_relative_v1!(Source, ITER);
    icu_experimental_data::impl_narrow_second_relative_v1!(Source, ITER);
    icu_experimental_data::impl_narrow_week_relative_v1!(Source, ITER);
    icu_experimental_data::impl_narrow_year_relative_v1!(Source, ITER);
    icu_experimental_data::impl_percent_essentials_v1!(Source, ITER);
    icu_experimental_data::impl_short_compact_decimal_format_data_v1!(Source, ITER);
    icu_experimental_data::impl_short_currency_compact_v1!(Source, ITER);
    icu_experimental_data::impl_short_day_relative_v1!(Source, ITER);
    icu_experimental_data::impl_short_hour_relative_v1!(Source, ITER);
    icu_experimental_data::impl_short_minute_relative_v1!(Source, ITER);
    icu_experimental_data::impl_short_month_relative_v1!(Source, ITER);
    icu_experimental_data::impl_short_quarter_relative_v1!(Source, ITER);
    icu_experimental_data::impl_short_second_relative_v1!(Source, ITER);
    icu_experimental_data::impl_short_week_relative_v1!(Source, ITER);
    icu_experimental_data::impl_short_year_relative_v1!(Source, ITER);
    icu_provider::export::make_exportable_provider!(
        Source,
        [
            icu::datetime::provider::neo::DatetimeNamesDayperiodV1,
            icu::datetime::provider::neo::DatetimeNamesMonthBuddhistV1,
            icu::datetime::provider::neo::DatetimeNamesMonthChineseV1,
            icu::datetime::provider::neo::DatetimeNamesMonthCopticV1,
            icu::datetime::provider::neo::DatetimeNamesMonthDangiV1,
            icu::datetime::provider::neo::DatetimeNamesMonthEthiopianV1,
            icu::datetime::provider::neo::DatetimeNamesMonthGregorianV1,
            icu::datetime::provider::neo::DatetimeNamesMonthHebrewV1,
            icu::datetime::provider::neo::DatetimeNamesMonthHijriV1,
            icu::datetime::provider::neo::DatetimeNamesMonthIndianV1,
            icu::datetime::provider::neo::DatetimeNamesMonthJapaneseV1,
            icu::datetime::provider::neo::DatetimeNamesMonthJapanextV1,
            icu::datetime::provider::neo::DatetimeNamesMonthPersianV1,
            icu::datetime::provider::neo::DatetimeNamesMonthRocV1,
            icu::datetime::provider::neo::DatetimeNamesWeekdayV1,
            icu::datetime::provider::neo::DatetimeNamesYearBuddhistV1,
            icu::datetime::provider::neo::DatetimeNamesYearChineseV1,
            icu::datetime::provider::neo::DatetimeNamesYearCopticV1,
            icu::datetime::provider::neo::DatetimeNamesYearDangiV1,
            icu::datetime::provider::neo::DatetimeNamesYearEthiopianV1,
            icu::datetime::provider::neo::DatetimeNamesYearGregorianV1,
            icu::datetime::provider::neo::DatetimeNamesYearHebrewV1,
            icu::datetime::provider::neo::DatetimeNamesYearHijriV1,
            icu::datetime::provider::neo::DatetimeNamesYearIndianV1,
            icu::datetime::provider::neo::DatetimeNamesYearJapaneseV1,
            icu::datetime::provider::neo::DatetimeNamesYearJapanextV1,
            icu::datetime::provider::neo::DatetimeNamesYearPersianV1,
            icu::datetime::provider::neo::DatetimeNamesYearRocV1,
            icu::datetime::provider::DatetimePatternsDateBuddhistV1,
            icu::datetime::provider::DatetimePatternsDateChineseV1,
            icu::datetime::provider::DatetimePatternsDateCopticV1,
            icu::datetime::provider::DatetimePatternsDateDangiV1,
            icu::datetime::provider::DatetimePatternsDateEthiopianV1,
            icu::datetime::provider::DatetimePatternsDateGregorianV1,
            icu::datetime::provider::DatetimePatternsDateHebrewV1,
            icu::datetime::provider::DatetimePatternsDateHijriV1,
            icu::datetime::provider::DatetimePatternsDateIndianV1,
            icu::datetime::provider::DatetimePatternsDateJapaneseV1,
            icu::datetime::provider::DatetimePatternsDateJapanextV1,
            icu::datetime::provider::DatetimePatternsDatePersianV1,
            icu::datetime::provider::DatetimePatternsDateRocV1,
            icu::datetime::provider::neo::DatetimePatternsGlueV1,
            icu::datetime::provider::DatetimePatternsTimeV1,
            icu::datetime::provider::time_zones::TimezoneNamesCitiesOverrideV1,
            icu::datetime::provider::time_zones::TimezoneNamesCitiesRootV1,
            icu::datetime::provider::time_zones::TimezoneNamesEssentialsV1,
            icu::datetime::provider::time_zones::TimezoneNamesGenericLongV1,
            icu::datetime::provider::time_zones::TimezoneNamesGenericShortV1,
            icu::datetime::provider::time_zones::TimezoneNamesLocationsOverrideV1,
            icu::datetime::provider::time_zones::TimezoneNamesLocationsRootV1,
            icu::datetime::provider::time_zones::TimezoneNamesSpecificLongV1,
            icu::datetime::provider::time_zones::TimezoneNamesSpecificShortV1,
            icu::datetime::provider::time_zones::TimezoneNamesStandardLongV1,
            icu::decimal::provider::DecimalDigitsV1,
            icu::decimal::provider::DecimalSymbolsV1,
            icu::plurals::provider::PluralsCardinalV1,
            icu::plurals::provider::PluralsOrdinalV1,
            icu::plurals::provider::PluralsRangesV1,
            icu::collator::provider::CollationDiacriticsV1,
            icu::collator::provider::CollationJamoV1,
            icu::collator::provider::CollationMetadataV1,
            icu::collator::provider::CollationReorderingV1,
            icu::collator::provider::CollationRootV1,
            icu::collator::provider::CollationSpecialPrimariesV1,
            icu::collator::provider::CollationTailoringV1,
            icu::calendar::provider::CalendarJapaneseExtendedV1,
            icu::calendar::provider::CalendarJapaneseModernV1,
            icu::calendar::provider::CalendarWeekV1,
            icu::time::provider::iana::TimezoneIdentifiersIanaCoreV1,
            icu::time::provider::iana::TimezoneIdentifiersIanaExtendedV1,
            icu::time::provider::windows::TimezoneIdentifiersWindowsV1,
            icu::time::provider::TimezonePeriodsV1,
            icu::normalizer::provider::NormalizerNfcV1,
            icu::normalizer::provider::NormalizerNfdDataV1,
            icu::normalizer::provider::NormalizerNfdSupplementV1,
            icu::normalizer::provider::NormalizerNfdTablesV1,
            icu::normalizer::provider::NormalizerNfkdDataV1,
            icu::normalizer::provider::NormalizerNfkdTablesV1,
            icu::normalizer::provider::NormalizerUts46DataV1,
            icu::locale::provider::LocaleAliasesV1,
            icu::locale::provider::LocaleLikelySubtagsExtendedV1,
            icu::locale::provider::LocaleLikelySubtagsLanguageV1,
            icu::locale::provider::LocaleLikelySubtagsScriptRegionV1,
            icu::locale::provider::LocaleParentsV1,
            icu::locale::provider::LocaleScriptDirectionV1,
            icu::experimental::dimension::provider::currency::displayname::CurrencyDisplaynameV1,
            icu::experimental::dimension::provider::currency::essentials::CurrencyEssentialsV1,
            icu::experimental::dimension::provider::currency::extended::CurrencyExtendedDataV1,
            icu::experimental::dimension::provider::currency::patterns::CurrencyPatternsDataV1,
            icu::experimental::compactdecimal::provider::LongCompactDecimalFormatDataV1,
            icu::experimental::relativetime::provider::LongDayRelativeV1,
            icu::experimental::relativetime::provider::LongHourRelativeV1,
            icu::experimental::relativetime::provider::LongMinuteRelativeV1,
            icu::experimental::relativetime::provider::LongMonthRelativeV1,
            icu::experimental::relativetime::provider::LongQuarterRelativeV1,
            icu::experimental::relativetime::provider::LongSecondRelativeV1,
            icu::experimental::relativetime::provider::LongWeekRelativeV1,
            icu::experimental::relativetime::provider::LongYearRelativeV1,
            icu::experimental::relativetime::provider::NarrowDayRelativeV1,
            icu::experimental::relativetime::provider::NarrowHourRelativeV1,
            icu::experimental::relativetime::provider::NarrowMinuteRelativeV1,
            icu::experimental::relativetime::provider::NarrowMonthRelativeV1,
            icu::experimental::relativetime::provider::NarrowQuarterRelativeV1,
            icu::experimental::relativetime::provider::NarrowSecondRelativeV1,
            icu::experimental::relativetime::provider::NarrowWeekRelativeV1,
            icu::experimental::relativetime::provider::NarrowYearRelativeV1,
            icu::experimental::dimension::provider::percent::PercentEssentialsV1,
            icu::experimental::compactdecimal::provider::ShortCompactDecimalFormatDataV1,
            icu::experimental::dimension::provider::currency::compact::ShortCurrencyCompactV1,
            icu::experimental::relativetime::provider::ShortDayRelativeV1,
            icu::experimental::relativetime::provider::ShortHourRelativeV1,
            icu::experimental::relativetime::provider::ShortMinuteRelativeV1,
            icu::experimental::relativetime::provider::ShortMonthRelativeV1,
            icu::experimental::relativetime::provider::ShortQuarterRelativeV1,
            icu::experimental::relativetime::provider::ShortSecondRelativeV1,
            icu::experimental::relativetime::provider::ShortWeekRelativeV1,
            icu::experimental::relativetime::provider::ShortYearRelativeV1,
        ]
    );
};

iterable_singleton!(
    icu::collator::provider::CollationJamoV1,
    icu::collator::provider::CollationRootV1,
    icu::collator::provider::CollationSpecialPrimariesV1,
    icu::calendar::provider::CalendarJapaneseExtendedV1,
    icu::calendar::provider::CalendarJapaneseModernV1,
    icu::time::provider::iana::TimezoneIdentifiersIanaCoreV1,
    icu::time::provider::iana::TimezoneIdentifiersIanaExtendedV1,
    icu::time::provider::windows::TimezoneIdentifiersWindowsV1,
    icu::time::provider::TimezonePeriodsV1,
    icu::normalizer::provider::NormalizerNfcV1,
    icu::normalizer::provider::NormalizerNfdDataV1,
    icu::normalizer::provider::NormalizerNfdSupplementV1,
    icu::normalizer::provider::NormalizerNfdTablesV1,
    icu::normalizer::provider::NormalizerNfkdDataV1,
    icu::normalizer::provider::NormalizerNfkdTablesV1,
    icu::normalizer::provider::NormalizerUts46DataV1,
    icu::locale::provider::LocaleAliasesV1,
    icu::locale::provider::LocaleLikelySubtagsExtendedV1,
    icu::locale::provider::LocaleLikelySubtagsLanguageV1,
    icu::locale::provider::LocaleLikelySubtagsScriptRegionV1,
    icu::locale::provider::LocaleParentsV1,
    icu::locale::provider::LocaleScriptDirectionV1,
);
