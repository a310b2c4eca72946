//! `--redact PATH…`: values at those paths of a call's arguments and of its
//! structured result are replaced before anything is written, and a
//! redacted string is scrubbed from every other string of the record (the
//! text blocks that repeat a result, an error's message), so the secret's
//! bytes never reach the disk.

use super::RecordError;
use serde_json::{Map, Value};

/// What a redacted string becomes.
pub const REDACTED: &str = "[redacted]";

/// The redaction paths, parsed once.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    paths: Vec<Vec<String>>,
    raw: Vec<String>,
}

impl Redactor {
    /// Parses dot paths (the mock language's paths, with `*` for any key or
    /// index); an empty segment is `invalid_redact_path`, at `/redact/i`.
    pub fn new(paths: &[String]) -> Result<Self, RecordError> {
        let mut parsed = Vec::with_capacity(paths.len());
        for (i, path) in paths.iter().enumerate() {
            let segments: Vec<String> = path.split('.').map(str::to_owned).collect();
            if path.is_empty() || segments.iter().any(String::is_empty) {
                return Err(RecordError::InvalidRedactPath {
                    path: format!("/redact/{i}"),
                    given: path.clone(),
                });
            }
            parsed.push(segments);
        }
        Ok(Redactor {
            paths: parsed,
            raw: paths.to_vec(),
        })
    }

    /// The paths as given.
    pub fn paths(&self) -> &[String] {
        &self.raw
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Redacts one call record in place: `arguments` and the result's
    /// `structuredContent` at the paths; a text block that held the
    /// structured result's JSON is rewritten from the redacted result; then
    /// every redacted string is scrubbed from every string of the record.
    pub fn record(&self, record: &mut Value) {
        if self.is_empty() {
            return;
        }
        let mut secrets = Vec::new();
        if let Some(arguments) = record.get_mut("arguments") {
            self.apply(arguments, &mut secrets);
        }
        if let Some(result) = record.get_mut("result").and_then(Value::as_object_mut) {
            let original = result.get("structuredContent").cloned();
            if let Some(structured) = result.get_mut("structuredContent") {
                self.apply(structured, &mut secrets);
            }
            let redacted = result.get("structuredContent").cloned();
            if let (Some(original), Some(redacted), Some(Value::Array(content))) =
                (original, redacted, result.get_mut("content"))
            {
                for block in content {
                    let Some(text) = block.get_mut("text") else {
                        continue;
                    };
                    let same = text
                        .as_str()
                        .and_then(|t| serde_json::from_str::<Value>(t).ok())
                        .is_some_and(|parsed| parsed == original);
                    if same {
                        *text = Value::String(redacted.to_string());
                    }
                }
            }
        }
        secrets.retain(|s| !s.is_empty() && s != REDACTED);
        // Longest first, so a secret that contains another goes whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        scrub(record, &secrets);
    }

    fn apply(&self, value: &mut Value, secrets: &mut Vec<String>) {
        for path in &self.paths {
            at_path(value, path, &mut |found| blank(found, secrets));
        }
    }
}

/// Calls `f` on every value at `path` (`*` matches any key or index).
fn at_path(value: &mut Value, path: &[String], f: &mut dyn FnMut(&mut Value)) {
    let Some((first, rest)) = path.split_first() else {
        f(value);
        return;
    };
    match value {
        Value::Object(map) if first == "*" => {
            for child in map.values_mut() {
                at_path(child, rest, f);
            }
        }
        Value::Object(map) => {
            if let Some(child) = map.get_mut(first.as_str()) {
                at_path(child, rest, f);
            }
        }
        Value::Array(items) if first == "*" => {
            for child in items {
                at_path(child, rest, f);
            }
        }
        Value::Array(items) => {
            // Indexes as the mock language writes them: digits, no leading zero.
            let index = (first == "0" || !first.starts_with('0'))
                .then(|| first.parse::<usize>().ok())
                .flatten();
            if let Some(child) = index.and_then(|i| items.get_mut(i)) {
                at_path(child, rest, f);
            }
        }
        _ => {}
    }
}

/// Replaces every leaf under `value` by its type's placeholder (strings
/// `[redacted]`, numbers 0, booleans false; the shape is kept), remembering
/// the strings and numbers that were there.
fn blank(value: &mut Value, secrets: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            secrets.push(std::mem::take(s));
            *s = REDACTED.to_owned();
        }
        Value::Number(n) => {
            secrets.push(n.to_string());
            *value = Value::from(0);
        }
        Value::Bool(b) => *b = false,
        Value::Array(items) => items.iter_mut().for_each(|v| blank(v, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| blank(v, secrets)),
        Value::Null => {}
    }
}

/// Replaces every occurrence of a secret string in every string (and key)
/// of `value`. A number's text is scrubbed only from strings that hold
/// nothing but it, so digits elsewhere are left alone.
fn scrub(value: &mut Value, secrets: &[String]) {
    match value {
        Value::String(s) => {
            for secret in secrets {
                let numeric = secret.parse::<f64>().is_ok();
                if numeric {
                    if s == secret {
                        *s = REDACTED.to_owned();
                    }
                } else if s.contains(secret.as_str()) {
                    *s = s.replace(secret.as_str(), REDACTED);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub(v, secrets)),
        Value::Object(map) => {
            let taken = std::mem::take(map);
            let mut rebuilt = Map::with_capacity(taken.len());
            for (key, mut child) in taken {
                scrub(&mut child, secrets);
                let mut key = Value::String(key);
                scrub(&mut key, secrets);
                if let Value::String(key) = key {
                    rebuilt.insert(key, child);
                }
            }
            *map = rebuilt;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redacts_paths_wildcards_and_repeated_text() {
        let redactor = Redactor::new(&["patient.ssn".into(), "rows.*.token".into()]).unwrap();
        let mut record = json!({
            "tool": "t",
            "arguments": {"patient": {"ssn": "123-45-6789", "name": "Ada"}},
            "result": {
                "structuredContent": {"rows": [{"token": "tok-9"}, {"token": 77}], "note": "ssn 123-45-6789"},
                "content": [{"type": "text", "text": "{\"rows\":[{\"token\":\"tok-9\"},{\"token\":77}],\"note\":\"ssn 123-45-6789\"}"},
                            {"type": "text", "text": "saw tok-9 for 123-45-6789"}]
            }
        });
        redactor.record(&mut record);
        let text = record.to_string();
        for secret in ["123-45-6789", "tok-9", "77"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(record["arguments"]["patient"]["name"], "Ada");
        assert_eq!(record["result"]["structuredContent"]["rows"][1]["token"], 0);
    }

    #[test]
    fn an_empty_segment_is_refused_with_its_index() {
        let e = Redactor::new(&["a".into(), "a..b".into()]).unwrap_err();
        assert_eq!(e.code(), "invalid_redact_path");
        assert_eq!(e.path(), Some("/redact/1"));
    }
}
