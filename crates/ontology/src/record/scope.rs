//! Scope and PII flags: who a record is for (seed 004's `scope` and `policy`) and whether its
//! content has cleared PII review.
//!
//! Events and memories may carry
//! ```json
//! "scope": {"audience": ["role:operator", "principal:ops1"], "allow_roles": ["operator"],
//!           "deny_roles": ["visitor"], "tags": ["lab"], "location": "lab/arm-bench",
//!           "time_range": ["2025-01-05T12:00:00Z", "2025-01-05T12:01:00Z"]},
//! "pii": {"pii_cleared": true, "pending_review": false, "pii_redacted": false}
//! ```
//! Validation only checks the shape; what a principal may see is decided by the engine's access
//! policy, the one place that reads these values. The projection copies them onto the node as
//! flat properties (`scope_audience`, `scope_allow_roles`, `scope_deny_roles`, `scope_tags`,
//! `scope_location`, `scope_from`, `scope_until`, `pii_cleared`, `pending_review`,
//! `pii_redacted`), so a check reads the node it already has.

use serde_json::{Map, Value};

use crate::graph::Properties;
use crate::violation::Violation;

use super::Validator;

/// Fields of a `scope` object.
const SCOPE_FIELDS: &[&str] =
    &["audience", "allow_roles", "deny_roles", "tags", "location", "time_range"];
/// Fields of a `pii` object.
const PII_FIELDS: &[&str] = &["pii_cleared", "pending_review", "pii_redacted"];
/// Kinds of audience entry: `role:NAME` or a named principal (`principal:`, `agent:`, `user:`).
pub const AUDIENCE_KINDS: &[&str] = &["role", "principal", "agent", "user"];
/// Most entries in one scope list.
const MAX_SCOPE_ITEMS: usize = 64;

/// Who a record is for, and its PII state. The default (all empty, no flags) is "everyone in
/// the tenant".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// `role:NAME`, `principal:NAME`, `agent:NAME` or `user:NAME` entries; empty means everyone.
    pub audience: Vec<String>,
    /// Roles of which the reader must hold one; empty means no requirement.
    pub allow_roles: Vec<String>,
    /// Roles that may never read it.
    pub deny_roles: Vec<String>,
    /// Free tags, for query constraints.
    pub tags: Vec<String>,
    /// Location path (`lab/arm-bench`), for query constraints.
    pub location: Option<String>,
    /// When it applies: RFC 3339 from and until, as written.
    pub time_range: Option<(String, String)>,
    /// `Some(false)`: contains PII that has not been cleared.
    pub pii_cleared: Option<bool>,
    /// Waiting for PII review.
    pub pending_review: bool,
    /// PII was redacted from the content.
    pub pii_redacted: bool,
}

impl Scope {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self == &Scope::default()
    }

    /// The `scope` and `pii` members of a record's canonical JSON (absent when empty).
    pub fn write_json(&self, m: &mut Map<String, Value>) {
        let mut s = Map::new();
        for (k, list) in [
            ("audience", &self.audience),
            ("allow_roles", &self.allow_roles),
            ("deny_roles", &self.deny_roles),
            ("tags", &self.tags),
        ] {
            if !list.is_empty() {
                s.insert(k.into(), list.clone().into());
            }
        }
        if let Some(l) = &self.location {
            s.insert("location".into(), l.clone().into());
        }
        if let Some((from, until)) = &self.time_range {
            s.insert("time_range".into(), vec![from.clone(), until.clone()].into());
        }
        if !s.is_empty() {
            m.insert("scope".into(), Value::Object(s));
        }
        let mut p = Map::new();
        if let Some(c) = self.pii_cleared {
            p.insert("pii_cleared".into(), c.into());
        }
        if self.pending_review {
            p.insert("pending_review".into(), true.into());
        }
        if self.pii_redacted {
            p.insert("pii_redacted".into(), true.into());
        }
        if !p.is_empty() {
            m.insert("pii".into(), Value::Object(p));
        }
    }

    /// The node properties the projection writes (only those set).
    pub fn node_properties(&self, props: &mut Properties) {
        for (k, list) in [
            ("scope_audience", &self.audience),
            ("scope_allow_roles", &self.allow_roles),
            ("scope_deny_roles", &self.deny_roles),
            ("scope_tags", &self.tags),
        ] {
            if !list.is_empty() {
                props.insert(k.into(), list.clone().into());
            }
        }
        if let Some(l) = &self.location {
            props.insert("scope_location".into(), l.clone().into());
        }
        if let Some((from, until)) = &self.time_range {
            props.insert("scope_from".into(), from.clone().into());
            props.insert("scope_until".into(), until.clone().into());
        }
        if let Some(c) = self.pii_cleared {
            props.insert("pii_cleared".into(), c.into());
        }
        if self.pending_review {
            props.insert("pending_review".into(), true.into());
        }
        if self.pii_redacted {
            props.insert("pii_redacted".into(), true.into());
        }
    }
}

impl Validator<'_> {
    /// The optional `scope` and `pii` members of `obj`.
    pub(super) fn scope(&mut self, obj: &Map<String, Value>) -> Option<Scope> {
        let mut scope = Scope::default();
        let mut ok = true;
        match obj.get("scope") {
            None | Some(Value::Null) => {}
            Some(Value::Object(s)) => {
                self.unknown_fields(s, SCOPE_FIELDS, "$.scope");
                for (field, slot) in [
                    ("audience", &mut scope.audience),
                    ("allow_roles", &mut scope.allow_roles),
                    ("deny_roles", &mut scope.deny_roles),
                    ("tags", &mut scope.tags),
                ] {
                    match self.scope_list(s, field) {
                        Some(list) => *slot = list,
                        None => ok = false,
                    }
                }
                for (i, entry) in scope.audience.iter().enumerate() {
                    let kind = entry.split_once(':').map(|(k, _)| k);
                    let named = entry.split_once(':').is_some_and(|(_, n)| !n.is_empty());
                    if !named || !kind.is_some_and(|k| AUDIENCE_KINDS.contains(&k)) {
                        self.out.push(Violation::for_str(
                            format!("$.scope.audience[{i}]"),
                            entry,
                            "scope.audience_format",
                            "must be role:NAME, principal:NAME, agent:NAME or user:NAME",
                        ));
                        ok = false;
                    }
                }
                scope.location =
                    self.string(s, "location", "$.scope.location", false).map(str::to_owned);
                match s.get("time_range") {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(pair)) if pair.len() == 2 => {
                        let mut range = Map::new();
                        range.insert("from".into(), pair[0].clone());
                        range.insert("until".into(), pair[1].clone());
                        let from = self.timestamp(&range, "from", "$.scope.time_range[0]");
                        let until = self.timestamp(&range, "until", "$.scope.time_range[1]");
                        match (from, until) {
                            (Some(f), Some(u)) if f.1 <= u.1 => scope.time_range = Some((f.0, u.0)),
                            (Some(f), Some(u)) => {
                                self.out.push(Violation::new(
                                    "$.scope.time_range",
                                    s.get("time_range"),
                                    "scope.time_range_order",
                                    format!("the start {} is after the end {}", f.0, u.0),
                                ));
                                ok = false;
                            }
                            _ => ok = false,
                        }
                    }
                    Some(other) => {
                        self.out.push(Violation::new(
                            "$.scope.time_range",
                            Some(other),
                            "envelope.type",
                            "must be a list of two RFC 3339 timestamps [from, until]",
                        ));
                        ok = false;
                    }
                }
            }
            Some(other) => {
                self.out.push(Violation::new(
                    "$.scope",
                    Some(other),
                    "envelope.type",
                    "must be a JSON object",
                ));
                ok = false;
            }
        }
        match obj.get("pii") {
            None | Some(Value::Null) => {}
            Some(Value::Object(p)) => {
                self.unknown_fields(p, PII_FIELDS, "$.pii");
                for field in PII_FIELDS {
                    match p.get(*field) {
                        None | Some(Value::Null) => {}
                        Some(Value::Bool(b)) => match *field {
                            "pii_cleared" => scope.pii_cleared = Some(*b),
                            "pending_review" => scope.pending_review = *b,
                            _ => scope.pii_redacted = *b,
                        },
                        Some(other) => {
                            self.out.push(Violation::new(
                                format!("$.pii.{field}"),
                                Some(other),
                                "envelope.type",
                                "must be true or false",
                            ));
                            ok = false;
                        }
                    }
                }
            }
            Some(other) => {
                self.out.push(Violation::new(
                    "$.pii",
                    Some(other),
                    "envelope.type",
                    "must be a JSON object",
                ));
                ok = false;
            }
        }
        ok.then_some(scope)
    }

    /// A list of 1–64 non-empty names without whitespace, sorted and deduplicated so the
    /// canonical form does not depend on how it was written.
    fn scope_list(&mut self, obj: &Map<String, Value>, field: &str) -> Option<Vec<String>> {
        let path = format!("$.scope.{field}");
        let items = match obj.get(field) {
            None | Some(Value::Null) => return Some(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.out.push(Violation::new(
                    path,
                    Some(other),
                    "envelope.type",
                    "must be a list of strings",
                ));
                return None;
            }
        };
        if items.len() > MAX_SCOPE_ITEMS {
            self.out.push(Violation::with_text(
                path,
                Some(&format!("{} entries", items.len())),
                "scope.too_many",
                format!("at most {MAX_SCOPE_ITEMS} entries"),
            ));
            return None;
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let name = item.as_str().filter(|s| {
                !s.is_empty()
                    && s.len() <= self.limits.max_id_bytes
                    && !s.chars().any(|c| c.is_whitespace() || c.is_control())
            });
            match name {
                Some(n) => out.push(n.to_owned()),
                None => {
                    self.out.push(Violation::new(
                        format!("{path}[{i}]"),
                        Some(item),
                        "scope.name_format",
                        "must be a non-empty string without whitespace",
                    ));
                    return None;
                }
            }
        }
        out.sort();
        out.dedup();
        Some(out)
    }
}
