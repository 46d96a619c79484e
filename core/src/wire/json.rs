//! The JSON bodies the server answers with: small flat objects of strings and numbers (one
//! nested object in the API's errors), written straight to text. serde_json escapes each
//! string that needs it; no document tree is built and no key is sorted at run time.

use crate::prelude::*;
use core::fmt::Write as _;

/// A JSON object being written. Keys go in the order they are added: callers add them in
/// alphabetical order, the order the bodies have always had on the wire.
pub(crate) struct JsonObject {
    text: String,
}

impl JsonObject {
    pub fn new() -> Self {
        let mut text = String::with_capacity(256);
        text.push('{');
        JsonObject { text }
    }

    fn key(&mut self, key: &str) {
        if self.text.len() > 1 {
            self.text.push(',');
        }
        self.escaped(key);
        self.text.push(':');
    }

    /// `value` as a JSON string. Most values (tokens, ids, scopes, URLs) hold nothing JSON
    /// escapes, and are copied between quotes; the others are escaped by serde_json.
    fn escaped(&mut self, value: &str) {
        if value.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
            // Serializing a string cannot fail.
            self.text
                .push_str(&serde_json::to_string(value).unwrap_or_default());
        } else {
            self.text.push('"');
            self.text.push_str(value);
            self.text.push('"');
        }
    }

    /// Adds `"key": "value"`.
    pub fn string(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        self.escaped(value);
        self
    }

    /// Adds `"key": "value"` if there is a value: an optional member is absent, never `null`.
    pub fn optional_string(self, key: &str, value: Option<&str>) -> Self {
        match value {
            Some(value) => self.string(key, value),
            None => self,
        }
    }

    /// Adds `"key": value` for a whole number.
    pub fn number(mut self, key: &str, value: u64) -> Self {
        self.key(key);
        let _ = write!(self.text, "{value}");
        self
    }

    /// Adds `"key": ["…", …]`.
    pub fn strings<'a>(mut self, key: &str, values: impl IntoIterator<Item = &'a str>) -> Self {
        self.key(key);
        self.text.push('[');
        for value in values {
            self.list_item(value);
        }
        self.text.push(']');
        self
    }

    /// Adds one string to the list being written, after a comma unless it is the first: kept
    /// out of `strings`, which is generic (one copy per kind of list).
    fn list_item(&mut self, value: &str) {
        if !self.text.ends_with('[') {
            self.text.push(',');
        }
        self.escaped(value);
    }

    /// Adds `"key": true` or `false`.
    pub fn boolean(mut self, key: &str, value: bool) -> Self {
        self.key(key);
        self.text.push_str(if value { "true" } else { "false" });
        self
    }

    /// Adds `"key": <value>`, `value` being JSON text this server wrote.
    pub fn json(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        self.text.push_str(value);
        self
    }

    /// Adds `"key": {…}`.
    pub fn object(mut self, key: &str, value: JsonObject) -> Self {
        self.key(key);
        self.text.push_str(&value.finish());
        self
    }

    /// The object's text.
    pub fn finish(mut self) -> String {
        self.text.push('}');
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::JsonObject;
    use proptest::prelude::*;

    proptest! {
        /// A string is written exactly as serde_json writes it, whether it was copied between
        /// quotes or escaped (control characters, quotes, backslashes, any Unicode).
        #[test]
        fn strings_are_written_as_serde_json_writes_them(value in any::<String>()) {
            let text = JsonObject::new().string("k", &value).finish();
            let expected = format!("{{\"k\":{}}}", serde_json::to_string(&value).unwrap_or_default());
            prop_assert_eq!(text, expected);
        }
    }

    #[test]
    fn writes_what_serde_json_reads_back() {
        let text = JsonObject::new()
            .string("a\"b", "line\nbreak \u{1} \\ é")
            .number("n", u64::MAX)
            .object("o", JsonObject::new().string(".tag", "x"))
            .object("empty", JsonObject::new())
            .strings("list", ["a", "\"b\""])
            .strings("none", [])
            .boolean("yes", true)
            .boolean("no", false)
            .finish();
        let value: Result<serde_json::Value, _> = serde_json::from_str(&text);
        let expected = serde_json::json!({
            "a\"b": "line\nbreak \u{1} \\ é",
            "n": u64::MAX,
            "o": { ".tag": "x" },
            "empty": {},
            "list": ["a", "\"b\""],
            "none": [],
            "yes": true,
            "no": false,
        });
        assert_eq!(value.ok(), Some(expected), "{text}");
    }
}
