//! The JSON bodies the server answers with: small flat objects of strings and numbers (one
//! nested object in the API's errors), written straight to text. serde_json escapes each
//! string; no document tree is built and no key is sorted at run time.

use std::io::Write as _;

/// A JSON object being written. Keys go in the order they are added: callers add them in
/// alphabetical order, the order the bodies have always had on the wire.
pub(crate) struct JsonObject {
    text: Vec<u8>,
}

impl JsonObject {
    pub fn new() -> Self {
        let mut text = Vec::with_capacity(256);
        text.push(b'{');
        JsonObject { text }
    }

    fn key(&mut self, key: &str) {
        if self.text.len() > 1 {
            self.text.push(b',');
        }
        self.escaped(key);
        self.text.push(b':');
    }

    fn escaped(&mut self, value: &str) {
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.text, value);
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
        self.text.push(b'[');
        for (i, value) in values.into_iter().enumerate() {
            if i > 0 {
                self.text.push(b',');
            }
            self.escaped(value);
        }
        self.text.push(b']');
        self
    }

    /// Adds `"key": true` or `false`.
    pub fn boolean(mut self, key: &str, value: bool) -> Self {
        self.key(key);
        self.text
            .extend_from_slice(if value { b"true" } else { b"false" });
        self
    }

    /// Adds `"key": <value>`, `value` being JSON text this server wrote.
    pub fn json(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        self.text.extend_from_slice(value.as_bytes());
        self
    }

    /// Adds `"key": {…}`.
    pub fn object(mut self, key: &str, value: JsonObject) -> Self {
        self.key(key);
        self.text.extend_from_slice(&value.finish_bytes());
        self
    }

    fn finish_bytes(mut self) -> Vec<u8> {
        self.text.push(b'}');
        self.text
    }

    /// The object's text.
    pub fn finish(self) -> String {
        // Only valid UTF-8 was written: the keys and the escaped values are text, and JSON
        // punctuation is ASCII.
        String::from_utf8(self.finish_bytes())
            .unwrap_or_else(|bad| String::from_utf8_lossy(bad.as_bytes()).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::JsonObject;

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
