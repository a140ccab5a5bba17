//! The plugin's tests, on the host target: call the tools as functions, or through the same JSON
//! dispatch the component uses, and check the metadata the build wrote.

use super::*;
use bosun_sdk::testing;
use serde_json::json;

#[test]
fn counts_words_lines_and_characters() {
    let counts = count_words(CountWordsInput {
        text: "one two\nthree é".into(),
    });
    assert_eq!(
        counts.unwrap(),
        Counts {
            words: 4,
            lines: 2,
            characters: 15
        }
    );
}

#[test]
fn answers_through_the_json_dispatch() {
    let out = testing::call::<ThisPlugin>("count_words", json!({"text": "a b"})).unwrap();
    assert_eq!(out["words"], 2);
    let err = testing::call::<ThisPlugin>("count_words", json!({"txt": "a"})).unwrap_err();
    assert_eq!(err.code, "invalid_input");
}

#[test]
fn metadata_declares_exactly_the_handled_tools() {
    let doc = testing::check_metadata::<ThisPlugin>(bosun_sdk::metadata!()).unwrap();
    assert_eq!(doc["name"], env!("CARGO_PKG_NAME"));
    assert_eq!(doc["tools"][0]["input_schema"]["required"], json!(["text"]));
}
