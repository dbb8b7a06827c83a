//! What a JSON parser forgives and a record must not: a key given twice in one object (the
//! parser keeps the last silently) and an integer beyond the 64-bit range (the parser turns it
//! into a float, losing digits).
//!
//! A scan of the record's text, run after it parsed, so it may assume well-formed JSON; it
//! reports each finding at its JSON path.

use std::collections::HashSet;

use crate::Violation;

/// One open container while scanning.
enum Frame {
    /// An object: the keys seen, the latest key, and whether a key comes next.
    Object { keys: HashSet<String>, key: String, expect_key: bool },
    /// An array and the index of the current element.
    Array { index: usize },
}

/// The path of the value the scan is at, e.g. `$.payload.items[2]`.
fn path(stack: &[Frame]) -> String {
    let mut p = String::from("$");
    for frame in stack {
        match frame {
            Frame::Object { key, .. } => push_key(&mut p, key),
            Frame::Array { index } => p.push_str(&format!("[{index}]")),
        }
    }
    p
}

/// `.key` for a plain key, `["key"]` (JSON-quoted) for any other.
fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&serde_json::Value::String(key.to_owned()).to_string());
        path.push(']');
    }
}

/// Duplicate keys (`json.duplicate_key`) and integers outside the 64-bit range
/// (`json.integer_range`) in `text`, which must be valid JSON (checked first: the scan assumes
/// it), each at its JSON path. Record validation runs it; a server runs it over a request body.
pub fn scan(text: &str) -> Vec<Violation> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => stack.push(Frame::Object {
                keys: HashSet::new(),
                key: String::new(),
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            b'"' => {
                let end = string_end(bytes, i);
                let is_key = matches!(stack.last(), Some(Frame::Object { expect_key: true, .. }));
                if is_key {
                    // The key as the parser reads it, escapes decoded ("\u0061" is "a").
                    let key: String =
                        serde_json::from_str(&text[i..end]).unwrap_or_else(|_| text[i..end].into());
                    let mut duplicate = false;
                    if let Some(Frame::Object { keys, key: current, expect_key }) = stack.last_mut()
                    {
                        duplicate = !keys.insert(key.clone());
                        *current = key.clone();
                        *expect_key = false;
                    }
                    if duplicate {
                        out.push(Violation::with_text(
                            path(&stack),
                            Some(&key),
                            "json.duplicate_key",
                            format!(
                                "the key `{key}` appears more than once in one object: give each \
                                 key once (a parser would silently keep only the last)"
                            ),
                        ));
                    }
                }
                i = end;
                continue;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let number = &text[start..i];
                let integer = !number.contains(['.', 'e', 'E']);
                if integer && number.parse::<i64>().is_err() && number.parse::<u64>().is_err() {
                    out.push(Violation::with_text(
                        path(&stack),
                        Some(number),
                        "json.integer_range",
                        format!(
                            "the integer {number} is outside the 64-bit range \
                             ({}..={}): it would lose digits as a float; send it as a string",
                            i64::MIN,
                            u64::MAX
                        ),
                    ));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The index just past the string starting with the quote at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, &'static str, Option<String>)> {
        scan(text).into_iter().map(|v| (v.path, v.rule, v.value)).collect()
    }

    #[test]
    fn a_duplicate_key_is_named_at_its_path() {
        let v = found(r#"{"a": 1, "payload": {"x": [1, {"k": 2, "k": 3}], "y": "k"}, "a": 2}"#);
        assert_eq!(
            v,
            [
                ("$.payload.x[1].k".to_owned(), "json.duplicate_key", Some("k".to_owned())),
                ("$.a".to_owned(), "json.duplicate_key", Some("a".to_owned())),
            ]
        );
        // Escapes are decoded as the parser decodes them; the same key in two objects is fine.
        assert_eq!(found(r#"{"a": 1, "\u0061": 2}"#).len(), 1);
        assert!(found(r#"{"a": {"b": 1}, "c": {"b": 1}, "s": "{\"a\": 1, \"a\": 2}"}"#).is_empty());
    }

    #[test]
    fn an_integer_beyond_64_bits_is_refused_and_a_float_is_not() {
        let v = found(r#"{"payload": {"n": [18446744073709551616, -9223372036854775809]}}"#);
        assert_eq!(
            v,
            [
                (
                    "$.payload.n[0]".to_owned(),
                    "json.integer_range",
                    Some("18446744073709551616".to_owned())
                ),
                (
                    "$.payload.n[1]".to_owned(),
                    "json.integer_range",
                    Some("-9223372036854775809".to_owned())
                ),
            ]
        );
        assert!(
            found(r#"{"a": 18446744073709551615, "b": -9223372036854775808, "c": 1e30, "d": 1.5}"#)
                .is_empty()
        );
    }

    #[test]
    fn keys_that_are_not_plain_words_are_quoted_in_the_path() {
        let v = found(r#"{"a b": {"x": 1, "x": 2}}"#);
        assert_eq!(v[0].0, r#"$["a b"].x"#);
    }
}
