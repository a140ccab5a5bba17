//! Redaction of secret values. Every string in an event is searched for every secret's value
//! (one Aho-Corasick pass); matches are replaced by `[REDACTED:<name>]` before the event leaves
//! the process. Values shorter than [`Redactor::MIN_SECRET_LEN`] are ignored: redacting `1` or
//! `true` everywhere would destroy the trace and protect nothing.

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

/// Env var name suffixes whose values are treated as secrets.
pub const SECRET_ENV_SUFFIXES: [&str; 4] = ["_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];

/// Replaces secret values in text and JSON.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    names: Vec<String>,
    replacements: Vec<String>,
    matcher: Option<AhoCorasick>,
    /// Whether some secret could stand inside a number's digits (it is made of digits, signs,
    /// points and exponents only); numbers are searched only then.
    numeric: bool,
}

impl Redactor {
    /// Shortest value that is redacted.
    pub const MIN_SECRET_LEN: usize = 6;

    /// Builds a redactor from `(name, value)` pairs.
    pub fn new<I, N, V>(secrets: I) -> Self
    where
        I: IntoIterator<Item = (N, V)>,
        N: Into<String>,
        V: Into<String>,
    {
        let mut pairs: Vec<(String, String)> = secrets
            .into_iter()
            .map(|(n, v)| (n.into(), v.into()))
            .filter(|(_, v)| v.len() >= Self::MIN_SECRET_LEN)
            .collect();
        // A value holding a quote, a backslash or a control character reads differently inside
        // serialised JSON (`"` becomes `\"`): match that spelling too, so a scan of a whole
        // serialised line finds it.
        let escaped: Vec<(String, String)> = pairs
            .iter()
            .filter_map(|(n, v)| {
                let json = serde_json::to_string(v).ok()?;
                let inner = json.get(1..json.len().saturating_sub(1))?.to_owned();
                (inner != *v).then(|| (n.clone(), inner))
            })
            .collect();
        pairs.extend(escaped);
        // Longest first, so a secret that contains another is replaced whole.
        pairs.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        pairs.dedup_by(|a, b| a.1 == b.1);
        if pairs.is_empty() {
            return Self::default();
        }
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(pairs.iter().map(|(_, v)| v.as_str()))
            .ok();
        let numeric = pairs.iter().any(|(_, v)| {
            v.bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
        });
        Self {
            numeric,
            replacements: pairs
                .iter()
                .map(|(n, _)| format!("[REDACTED:{n}]"))
                .collect(),
            names: {
                // One name per secret, however many spellings it is matched in.
                let mut names: Vec<String> = Vec::new();
                for (name, _) in pairs {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                names
            },
            matcher,
        }
    }

    /// Secrets from the environment: every variable whose name ends in one of
    /// [`SECRET_ENV_SUFFIXES`], plus the variables named in `extra`.
    pub fn from_env<I: IntoIterator<Item = (String, String)>>(vars: I, extra: &[String]) -> Self {
        Self::from_env_and(vars, extra, [])
    }

    /// [`from_env`](Self::from_env) plus secrets known by other means (`(name, value)` pairs:
    /// the values a person gave a plugin as secrets, kept outside the environment).
    pub fn from_env_and<I, M>(vars: I, extra: &[String], more: M) -> Self
    where
        I: IntoIterator<Item = (String, String)>,
        M: IntoIterator<Item = (String, String)>,
    {
        Self::new(
            vars.into_iter()
                .filter(|(name, _)| {
                    let upper = name.to_ascii_uppercase();
                    SECRET_ENV_SUFFIXES.iter().any(|s| upper.ends_with(s))
                        || extra.iter().any(|e| e == name)
                })
                .chain(more),
        )
    }

    /// The names of the secrets this redactor knows.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// True when there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// True when `text` holds a secret.
    pub fn finds(&self, text: &str) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(text))
    }

    /// Redacts a string.
    pub fn redact_str(&self, text: &str) -> String {
        match &self.matcher {
            Some(m) if m.is_match(text) => m.replace_all(text, &self.replacements),
            _ => text.to_owned(),
        }
    }

    /// Redacts every string, key and number in a JSON value, in place. A number whose digits
    /// hold a secret (a PIN, an account number) becomes the redacted string.
    pub fn redact_value(&self, value: &mut Value) {
        self.redact(value, true);
    }

    /// [`redact_value`](Self::redact_value) without numbers, for values whose numbers must stay
    /// numbers (counts the host computed itself).
    pub fn redact_strings(&self, value: &mut Value) {
        self.redact(value, false);
    }

    fn redact(&self, value: &mut Value, numbers: bool) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) if self.finds(s) => *s = self.redact_str(s),
            Value::Number(n) if numbers && self.numeric => {
                let digits = n.to_string();
                if self.finds(&digits) {
                    *value = Value::String(self.redact_str(&digits));
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact(v, numbers)),
            Value::Object(map) => {
                if map.keys().any(|k| self.finds(k)) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.redact_str(&k), v);
                    }
                }
                map.values_mut().for_each(|v| self.redact(v, numbers));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_with_quotes_are_found_in_serialised_json_and_in_strings() {
        let secret = "pa\"ss\\word1";
        let r = Redactor::new([("PASS", secret)]);
        let line = serde_json::to_string(&json!({"out": format!("x {secret} y")})).unwrap();
        assert!(r.finds(&line), "{line}");
        let mut value = json!({"out": format!("x {secret} y")});
        r.redact_value(&mut value);
        assert_eq!(value, json!({"out": "x [REDACTED:PASS] y"}));
    }

    #[test]
    fn secrets_in_numbers_are_redacted() {
        let r = Redactor::new([("PIN_SECRET", "48151623")]);
        let mut value =
            json!({"pin": 48151623, "n": [9481516230u64, 7], "f": 48151623.5, "s": "48151623"});
        r.redact_value(&mut value);
        let text = value.to_string();
        assert!(!text.contains("48151623"), "{text}");
        assert_eq!(value["n"][1], json!(7));
        let mut kept = json!({"pin": 48151623});
        r.redact_strings(&mut kept);
        assert_eq!(kept, json!({"pin": 48151623}));
    }

    #[test]
    fn secrets_are_replaced_everywhere() {
        let r = Redactor::new([("API_KEY", "sk-live-123456"), ("SHORT", "abc")]);
        let mut v = json!({"a": "token sk-live-123456 here", "sk-live-123456": ["x sk-live-123456"], "n": 1, "s": "abc"});
        r.redact_value(&mut v);
        assert_eq!(
            v,
            json!({"a": "token [REDACTED:API_KEY] here", "[REDACTED:API_KEY]": ["x [REDACTED:API_KEY]"], "n": 1, "s": "abc"})
        );
    }

    #[test]
    fn environment_suffixes_select_secrets() {
        let vars = vec![
            ("OPENAI_API_KEY".to_owned(), "sk-aaaaaaaa".to_owned()),
            ("GH_TOKEN".to_owned(), "ghp_bbbbbbbb".to_owned()),
            ("DB_PASSWORD".to_owned(), "hunter22".to_owned()),
            ("HOME".to_owned(), "/home/user".to_owned()),
            ("DATABASE_URL".to_owned(), "postgres://u:p@h/db".to_owned()),
        ];
        let r = Redactor::from_env(vars, &["DATABASE_URL".to_owned()]);
        let mut names = r.names().to_vec();
        names.sort();
        assert_eq!(
            names,
            ["DATABASE_URL", "DB_PASSWORD", "GH_TOKEN", "OPENAI_API_KEY"]
        );
        assert_eq!(r.redact_str("/home/user"), "/home/user");
    }
}
