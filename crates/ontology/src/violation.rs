//! Validation failures: every problem with a record, each naming the field, the value and the rule.

use std::fmt;

/// One rule a record (or a schema file) broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON path of the offending field, e.g. `$.entities[2].role`.
    pub path: String,
    /// The offending value, rendered and truncated to stay readable; `None` when the field is absent.
    pub value: Option<String>,
    /// Stable machine code of the rule, e.g. `envelope.required_field`.
    pub rule: &'static str,
    /// What the rule demands, in words.
    pub message: String,
}

/// Longest rendered value kept in a violation, so a huge payload cannot flood an error report.
const MAX_RENDERED_VALUE: usize = 80;

impl Violation {
    /// A violation of `rule` at `path` for `value`.
    pub fn new(
        path: impl Into<String>,
        value: Option<&serde_json::Value>,
        rule: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Violation {
            path: path.into(),
            value: value.map(render_value),
            rule,
            message: message.into(),
        }
    }

    /// A violation whose value is a string from the input, shown JSON-quoted so that an empty or
    /// blank value is visible.
    pub fn for_str(
        path: impl Into<String>,
        value: &str,
        rule: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Violation::new(path, Some(&serde_json::Value::String(value.to_owned())), rule, message)
    }

    /// A violation whose value is already text (for example a raw input line).
    pub fn with_text(
        path: impl Into<String>,
        value: Option<&str>,
        rule: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Violation { path: path.into(), value: value.map(truncate), rule, message: message.into() }
    }
}

fn render_value(value: &serde_json::Value) -> String {
    truncate(&value.to_string())
}

fn truncate(text: &str) -> String {
    if text.len() <= MAX_RENDERED_VALUE {
        return text.to_owned();
    }
    let mut end = MAX_RENDERED_VALUE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => {
                write!(f, "{}: {} (value: {value}; rule: {})", self.path, self.message, self.rule)
            }
            None => write!(f, "{}: {} (rule: {})", self.path, self.message, self.rule),
        }
    }
}

/// Every violation found in one record, in the order the fields were checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors {
    /// The violations; never empty.
    pub violations: Vec<Violation>,
}

impl ValidationErrors {
    /// The stable code of the first violation, for callers that map errors to statuses.
    pub fn code(&self) -> &'static str {
        self.violations.first().map_or("validation.failed", |v| v.rule)
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.violations.len();
        write!(f, "{n} violation{}", if n == 1 { "" } else { "s" })?;
        for v in &self.violations {
            write!(f, "\n  - {v}")?;
        }
        Ok(())
    }
}

impl From<Vec<Violation>> for ValidationErrors {
    fn from(violations: Vec<Violation>) -> Self {
        ValidationErrors { violations }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_path_value_and_rule() {
        let v = Violation::new(
            "$.status",
            Some(&serde_json::json!("done")),
            "schema.enum",
            "must be one of pending, running, completed, failed",
        );
        assert_eq!(
            v.to_string(),
            "$.status: must be one of pending, running, completed, failed (value: \"done\"; rule: schema.enum)"
        );
    }

    #[test]
    fn long_values_are_truncated_on_a_char_boundary() {
        let long = "é".repeat(100);
        let v = Violation::with_text("$", Some(&long), "x", "y");
        let shown = v.value.unwrap();
        assert!(shown.ends_with('…'));
        assert!(shown.len() <= MAX_RENDERED_VALUE + '…'.len_utf8());
    }
}
