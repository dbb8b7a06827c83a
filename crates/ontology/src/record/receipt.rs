//! Decision receipts (seed 004): write-time provenance of a stateful change.
//!
//! A `receipt` record names the task, the actor, the approvals, the referenced inputs (events and
//! entities by id, and documents, configs and spans by their stable ids), the policies checked
//! with their result, the exceptions invoked with their justification, the action, the outcome
//! (status, notes, follow-ups) and its timestamps (`committed` required, `requested` optional).
//!
//! Forgiving on input where it is cheap: seed 004's layout is accepted as written, and so are
//! `id` for `receipt_id`, `approvers` for `approvals`, `inputs` for `referenced_inputs`,
//! `policies` for `policies_checked`, `waivers` for `exceptions`, top-level `requested_at` and
//! `committed_at`, `episodes` for events, `docs` for documents, `cms_spans` for spans, a bare
//! string for a one-item list, and the aliases of the `policy_result` and `receipt_status`
//! enums (`passed`, `denied`, `failed`...). The stored form is canonical. That the events and
//! entities named exist is checked by the engine at write time.

use serde_json::{Map, Value};

use super::Validator;
use crate::violation::Violation;

/// A validated `receipt` record.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiptRecord {
    /// Unique id (given, or `receipt-` and a hash of the record).
    pub receipt_id: String,
    /// What the decision was for.
    pub task: String,
    /// Who requested and carried it out.
    pub actor: String,
    /// Who or what approved it (reviewers, automated checks).
    pub approvals: Vec<String>,
    /// The inputs it referenced.
    pub inputs: ReceiptInputs,
    /// The policies checked, with their result.
    pub policies: Vec<PolicyCheck>,
    /// The exception paths invoked.
    pub exceptions: Vec<ReceiptException>,
    /// What was done (apply, rollback, defer, promote_candidate...).
    pub action: String,
    /// What came of it.
    pub outcome: ReceiptOutcome,
    /// When it was requested (RFC 3339), if known.
    pub requested_at: Option<String>,
    /// When it was committed (RFC 3339).
    pub committed_at: String,
    /// `committed_at` in nanoseconds since the Unix epoch.
    pub committed_at_ns: i64,
}

/// The inputs a receipt referenced, by kind, each list sorted and without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiptInputs {
    /// Event ids.
    pub events: Vec<String>,
    /// Entity ids (`{entity_type}:{normalised name}`).
    pub entities: Vec<String>,
    /// Document ids.
    pub documents: Vec<String>,
    /// Config ids (versions).
    pub configs: Vec<String>,
    /// Span ids.
    pub spans: Vec<String>,
}

/// One policy check: the policy and its result (`allow` or `deny`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PolicyCheck {
    /// The policy id.
    pub id: String,
    /// `allow` or `deny`.
    pub result: String,
}

/// One exception path invoked, with its justification.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReceiptException {
    /// The exception (waiver) id.
    pub id: String,
    /// Why it was used.
    pub justification: String,
}

/// What came of a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptOutcome {
    /// `success`, `failure`, `partial` or `pending`.
    pub status: String,
    /// Notes (residual risk, what was observed).
    pub notes: Option<String>,
    /// Follow-up tasks.
    pub follow_ups: Vec<String>,
}

/// Longest free text of a receipt (task, action, notes, justification, follow-up), in bytes.
pub const MAX_RECEIPT_TEXT_BYTES: usize = 4096;
/// Most items of any one list of a receipt.
pub const MAX_RECEIPT_ITEMS: usize = 256;

pub(super) const RECEIPT_FIELDS: &[&str] = &[
    "record_type",
    "receipt_id",
    "id",
    "task",
    "actor",
    "approvals",
    "approvers",
    "referenced_inputs",
    "inputs",
    "policies_checked",
    "policies",
    "exceptions",
    "waivers",
    "action",
    "outcome",
    "timestamps",
    "requested_at",
    "committed_at",
];
const INPUT_KINDS: &[(&str, &[&str])] = &[
    ("events", &["events", "episodes"]),
    ("entities", &["entities"]),
    ("documents", &["documents", "docs"]),
    ("configs", &["configs"]),
    ("spans", &["spans", "cms_spans"]),
];
const POLICY_FIELDS: &[&str] = &["id", "result"];
const EXCEPTION_FIELDS: &[&str] = &["id", "justification"];
const OUTCOME_FIELDS: &[&str] = &["status", "notes", "follow_ups"];
const TIMESTAMP_FIELDS: &[&str] = &["requested", "committed"];

impl Validator<'_> {
    /// The value of the first of `names` present, with the path it was found under.
    fn aliased<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        names: &[&str],
        prefix: &str,
    ) -> Option<(&'v Value, String)> {
        let present: Vec<&str> =
            names.iter().copied().filter(|n| obj.get(*n).is_some_and(|v| !v.is_null())).collect();
        if present.len() > 1 {
            self.out.push(Violation::new(
                format!("{prefix}.{}", present[1]),
                obj.get(present[1]),
                "receipt.duplicate_field",
                format!("`{}` and `{}` name the same field: give one", present[0], present[1]),
            ));
        }
        let name = present.first()?;
        obj.get(*name).map(|v| (v, format!("{prefix}.{name}")))
    }

    /// Non-blank text of at most [`MAX_RECEIPT_TEXT_BYTES`] without control characters.
    fn receipt_text(&mut self, value: &Value, path: &str) -> Option<String> {
        let Value::String(s) = value else {
            self.out.push(Violation::new(path, Some(value), "envelope.type", "must be a string"));
            return None;
        };
        let t = s.trim();
        if t.is_empty()
            || t.len() > MAX_RECEIPT_TEXT_BYTES
            || t.chars().any(|c| c.is_control() && c != '\n')
        {
            self.out.push(Violation::for_str(
                path,
                s,
                "receipt.text_format",
                format!(
                    "must be 1 to {MAX_RECEIPT_TEXT_BYTES} bytes of text without control characters"
                ),
            ));
            return None;
        }
        Some(t.to_owned())
    }

    /// An id: 1 to `max_id_bytes` bytes without whitespace or control characters.
    fn receipt_id_at(&mut self, value: &Value, path: &str) -> Option<String> {
        let mut one = Map::new();
        one.insert("id".into(), value.clone());
        self.id(&one, "id", path, true)
    }

    /// A list of items (a bare item is a list of one), each checked by `item`; sorted, without
    /// repeats when `sort`.
    fn receipt_list<T: Ord + Clone>(
        &mut self,
        value: Option<(&Value, String)>,
        sort: bool,
        mut item: impl FnMut(&mut Self, &Value, &str) -> Option<T>,
    ) -> Option<Vec<T>> {
        let Some((value, path)) = value else { return Some(Vec::new()) };
        let items: Vec<&Value> = match value {
            Value::Array(a) => a.iter().collect(),
            other @ (Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Object(_)) => vec![other],
        };
        if items.len() > MAX_RECEIPT_ITEMS {
            self.out.push(Violation::with_text(
                path,
                Some(&format!("{} items", items.len())),
                "receipt.too_many",
                format!("at most {MAX_RECEIPT_ITEMS} items"),
            ));
            return None;
        }
        let before = self.out.len();
        let mut out = Vec::new();
        for (i, v) in items.iter().enumerate() {
            let p = if matches!(value, Value::Array(_)) {
                format!("{path}[{i}]")
            } else {
                path.clone()
            };
            if let Some(x) = item(self, v, &p) {
                out.push(x);
            }
        }
        if sort {
            out.sort();
            out.dedup();
        }
        (self.out.len() == before).then_some(out)
    }

    /// `value` as an object with only `fields`, or an `envelope.type` violation at `path`.
    pub(super) fn object<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
        fields: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        let Value::Object(o) = value else {
            self.out.push(Violation::new(
                path,
                Some(value),
                "envelope.type",
                format!("must be an object {{{}}}", fields.join(", ")),
            ));
            return None;
        };
        self.unknown_fields(o, fields, path);
        Some(o)
    }

    pub(super) fn receipt(&mut self, obj: &Map<String, Value>) -> Option<ReceiptRecord> {
        self.unknown_fields(obj, RECEIPT_FIELDS, "$");
        let given_id = self
            .aliased(obj, &["receipt_id", "id"], "$")
            .and_then(|(v, p)| self.receipt_id_at(v, &p));
        let task = self.required_text(obj, "task");
        let actor =
            self.required_field(obj, "actor").and_then(|v| self.receipt_id_at(v, "$.actor"));
        let approvals_value = self.aliased(obj, &["approvals", "approvers"], "$");
        let approvals = self.receipt_list(approvals_value, true, |v, x, p| v.receipt_id_at(x, p));
        let inputs = self.receipt_inputs(obj);
        let policies_value = self.aliased(obj, &["policies_checked", "policies"], "$");
        let policies = self.receipt_list(policies_value, false, |v, x, p| {
            let o = v.object(x, p, POLICY_FIELDS)?;
            let id = v.string(o, "id", &format!("{p}.id"), true).map(|s| Value::String(s.into()));
            let id = id.and_then(|id| v.receipt_id_at(&id, &format!("{p}.id")));
            let result = v.string(o, "result", &format!("{p}.result"), true).and_then(|r| {
                v.enum_value("policy_result", &r.trim().to_lowercase(), &format!("{p}.result"))
            });
            Some(PolicyCheck { id: id?, result: result? })
        });
        let exceptions_value = self.aliased(obj, &["exceptions", "waivers"], "$");
        let exceptions = self.receipt_list(exceptions_value, false, |v, x, p| {
            let o = v.object(x, p, EXCEPTION_FIELDS)?;
            let id = o.get("id").cloned().unwrap_or(Value::Null);
            let id = if id.is_null() {
                v.out.push(Violation::new(
                    format!("{p}.id"),
                    None,
                    "envelope.required_field",
                    "required field is missing",
                ));
                None
            } else {
                v.receipt_id_at(&id, &format!("{p}.id"))
            };
            let justification = match o.get("justification") {
                None | Some(Value::Null) => {
                    v.out.push(Violation::new(
                        format!("{p}.justification"),
                        None,
                        "receipt.justification",
                        "an exception path needs its justification",
                    ));
                    None
                }
                Some(j) => v.receipt_text(j, &format!("{p}.justification")),
            };
            Some(ReceiptException { id: id?, justification: justification? })
        });
        let action = self.required_text(obj, "action");
        let outcome = self.receipt_outcome(obj);
        let (requested, committed) = self.receipt_times(obj);
        let mut policies = policies?;
        let mut seen = std::collections::BTreeSet::new();
        for (i, p) in policies.iter().enumerate() {
            if !seen.insert(p.id.clone()) {
                self.out.push(Violation::for_str(
                    format!("$.policies_checked[{i}].id"),
                    &p.id,
                    "receipt.duplicate_policy",
                    "each policy is checked once per receipt",
                ));
            }
        }
        policies.sort_by(|a, b| a.id.cmp(&b.id));
        let mut exceptions = exceptions?;
        exceptions.sort_by(|a, b| a.id.cmp(&b.id));
        exceptions.dedup_by(|a, b| a.id == b.id);
        let (committed_at, committed_at_ns) = committed?;
        let mut record = ReceiptRecord {
            receipt_id: given_id.clone().unwrap_or_default(),
            task: task?,
            actor: actor?,
            approvals: approvals?,
            inputs: inputs?,
            policies,
            exceptions,
            action: action?,
            outcome: outcome?,
            requested_at: requested?,
            committed_at,
            committed_at_ns,
        };
        if given_id.is_none() {
            record.receipt_id = super::memory::derived_id("receipt", &receipt_json(&record));
        }
        (self.out.is_empty()).then_some(record)
    }

    fn required_field<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        field: &str,
    ) -> Option<&'v Value> {
        self.required_at(obj, field, &format!("$.{field}"))
    }

    /// `obj[field]`, or an `envelope.required_field` violation at `path` when it is missing
    /// or null.
    pub(super) fn required_at<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        field: &str,
        path: &str,
    ) -> Option<&'v Value> {
        match obj.get(field) {
            None | Some(Value::Null) => {
                self.out.push(Violation::new(
                    path,
                    None,
                    "envelope.required_field",
                    "required field is missing",
                ));
                None
            }
            Some(v) => Some(v),
        }
    }

    fn required_text(&mut self, obj: &Map<String, Value>, field: &str) -> Option<String> {
        let v = self.required_field(obj, field)?;
        self.receipt_text(v, &format!("$.{field}"))
    }

    fn receipt_inputs(&mut self, obj: &Map<String, Value>) -> Option<ReceiptInputs> {
        let Some((value, path)) = self.aliased(obj, &["referenced_inputs", "inputs"], "$") else {
            return Some(ReceiptInputs::default());
        };
        let allowed: Vec<&str> =
            INPUT_KINDS.iter().flat_map(|(_, names)| names.iter().copied()).collect();
        let o = self.object(value, &path, &allowed)?;
        let mut lists: Vec<Vec<String>> = Vec::new();
        let before = self.out.len();
        for (kind, names) in INPUT_KINDS {
            let found = self.aliased(o, names, &path);
            let list = if *kind == "entities" {
                self.receipt_list(found, true, |v, x, p| match x {
                    Value::String(s) => v.entity_key_at(s, p),
                    other @ (Value::Null
                    | Value::Bool(_)
                    | Value::Number(_)
                    | Value::Array(_)
                    | Value::Object(_)) => {
                        v.out.push(Violation::new(
                            p,
                            Some(other),
                            "envelope.type",
                            "must be an entity id",
                        ));
                        None
                    }
                })
            } else {
                self.receipt_list(found, true, |v, x, p| v.receipt_id_at(x, p))
            };
            lists.push(list.unwrap_or_default());
        }
        if self.out.len() != before {
            return None;
        }
        let mut it = lists.into_iter();
        let mut next = || it.next().unwrap_or_default();
        Some(ReceiptInputs {
            events: next(),
            entities: next(),
            documents: next(),
            configs: next(),
            spans: next(),
        })
    }

    fn receipt_outcome(&mut self, obj: &Map<String, Value>) -> Option<ReceiptOutcome> {
        let value = self.required_field(obj, "outcome")?;
        // A bare status is an outcome without notes.
        if let Value::String(s) = value {
            let status =
                self.enum_value("receipt_status", &s.trim().to_lowercase(), "$.outcome")?;
            return Some(ReceiptOutcome { status, notes: None, follow_ups: Vec::new() });
        }
        let o = self.object(value, "$.outcome", OUTCOME_FIELDS)?;
        let status = self.string(o, "status", "$.outcome.status", true).and_then(|s| {
            self.enum_value("receipt_status", &s.trim().to_lowercase(), "$.outcome.status")
        });
        let notes = match o.get("notes") {
            None | Some(Value::Null) => Some(None),
            Some(n) => self.receipt_text(n, "$.outcome.notes").map(Some),
        };
        let follow = o
            .get("follow_ups")
            .filter(|v| !v.is_null())
            .map(|v| (v, "$.outcome.follow_ups".to_owned()));
        let follow_ups = self.receipt_list(follow, false, |v, x, p| v.receipt_text(x, p));
        Some(ReceiptOutcome { status: status?, notes: notes?, follow_ups: follow_ups? })
    }

    /// `requested` (optional) and `committed` (required), under `timestamps` or top level.
    #[allow(clippy::type_complexity, reason = "two results of one parse, named at the call")]
    fn receipt_times(
        &mut self,
        obj: &Map<String, Value>,
    ) -> (Option<Option<String>>, Option<(String, i64)>) {
        let mut flat = Map::new();
        if let Some(t) = obj.get("timestamps").filter(|v| !v.is_null()) {
            if let Some(o) = self.object(t, "$.timestamps", TIMESTAMP_FIELDS) {
                for (k, v) in o {
                    flat.insert(format!("{k}_at"), v.clone());
                }
            } else {
                return (None, None);
            }
        }
        for field in ["requested_at", "committed_at"] {
            if let Some(v) = obj.get(field).filter(|v| !v.is_null()) {
                if flat.contains_key(field) {
                    self.out.push(Violation::new(
                        format!("$.{field}"),
                        Some(v),
                        "receipt.duplicate_field",
                        "given both here and in `timestamps`: give one",
                    ));
                }
                flat.insert(field.into(), v.clone());
            }
        }
        let requested = if flat.contains_key("requested_at") {
            self.timestamp(&flat, "requested_at", "$.timestamps.requested").map(|(t, _)| Some(t))
        } else {
            Some(None)
        };
        let committed = self.timestamp(&flat, "committed_at", "$.timestamps.committed");
        (requested, committed)
    }
}

/// Canonical JSON of a receipt record: seed 004's layout.
pub(super) fn receipt_json(r: &ReceiptRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "receipt".into());
    if !r.receipt_id.is_empty() {
        m.insert("receipt_id".into(), r.receipt_id.clone().into());
    }
    m.insert("task".into(), r.task.clone().into());
    m.insert("actor".into(), r.actor.clone().into());
    m.insert("approvals".into(), r.approvals.clone().into());
    let i = &r.inputs;
    m.insert(
        "referenced_inputs".into(),
        serde_json::json!({"events": i.events, "entities": i.entities, "documents": i.documents,
            "configs": i.configs, "spans": i.spans}),
    );
    m.insert(
        "policies_checked".into(),
        r.policies.iter().map(|p| serde_json::json!({"id": p.id, "result": p.result})).collect(),
    );
    m.insert(
        "exceptions".into(),
        r.exceptions
            .iter()
            .map(|e| serde_json::json!({"id": e.id, "justification": e.justification}))
            .collect(),
    );
    m.insert("action".into(), r.action.clone().into());
    let mut outcome = Map::new();
    outcome.insert("status".into(), r.outcome.status.clone().into());
    if let Some(n) = &r.outcome.notes {
        outcome.insert("notes".into(), n.clone().into());
    }
    outcome.insert("follow_ups".into(), r.outcome.follow_ups.clone().into());
    m.insert("outcome".into(), Value::Object(outcome));
    let mut ts = Map::new();
    if let Some(t) = &r.requested_at {
        ts.insert("requested".into(), t.clone().into());
    }
    ts.insert("committed".into(), r.committed_at.clone().into());
    m.insert("timestamps".into(), Value::Object(ts));
    Value::Object(m)
}

impl ReceiptRecord {
    /// The text a receipt is found by (full text and vectors): its task, action, actor,
    /// outcome, policies with results, exceptions with justifications and follow-ups.
    pub fn text(&self) -> String {
        let mut t = format!(
            "decision receipt for {}: {} by {}, outcome {}",
            self.task.replace('_', " "),
            self.action.replace('_', " "),
            self.actor,
            self.outcome.status
        );
        if let Some(n) = &self.outcome.notes {
            t.push_str(&format!(" ({n})"));
        }
        for a in &self.approvals {
            t.push_str(&format!("; approved by {a}"));
        }
        for p in &self.policies {
            t.push_str(&format!("; policy {} {}", p.id, p.result));
        }
        for e in &self.exceptions {
            t.push_str(&format!("; exception {}: {}", e.id, e.justification));
        }
        for f in &self.outcome.follow_ups {
            t.push_str(&format!("; follow-up: {f}"));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use crate::{Limits, RecordBody, Schema, ValidationErrors, validate};

    use super::*;

    fn check(value: &Value) -> Result<ReceiptRecord, ValidationErrors> {
        let schema = Schema::core().unwrap();
        validate(&schema, &Limits::default(), &value.to_string()).map(|r| {
            let RecordBody::Receipt(r) = r.body() else { panic!("not a receipt: {r:?}") };
            r.clone()
        })
    }

    /// Seed 004's example, as written there.
    fn seed() -> Value {
        json!({"record_type": "receipt", "id": "receipt/1", "task": "deploy_pi5_wavecore_loop",
            "actor": "user/ops1", "approvals": ["user/reviewer_a", "check/ci_suite@v2"],
            "referenced_inputs": {"episodes": ["rlds/episode/abc"], "cms_spans": ["cms/span/123"],
                "configs": ["config/wavecore/v1.2"]},
            "policies_checked": [{"id": "policy/pii_cleared", "result": "allow"},
                {"id": "policy/budget", "result": "allow"}],
            "exceptions": [{"id": "waiver/temp_net_degradation", "justification": "lab wifi outage"}],
            "action": "promote_candidate",
            "outcome": {"status": "success", "notes": "latency stable",
                "follow_ups": ["validate on-device drift"]},
            "timestamps": {"requested": "2025-01-05T12:00:00Z", "committed": "2025-01-05T12:07:00Z"}})
    }

    #[test]
    fn seed_004s_receipt_validates_with_its_aliases_resolved() {
        let r = check(&seed()).unwrap();
        assert_eq!(r.receipt_id, "receipt/1");
        assert_eq!(r.inputs.events, ["rlds/episode/abc"]);
        assert_eq!(r.inputs.spans, ["cms/span/123"]);
        assert_eq!(
            r.policies.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            ["policy/budget", "policy/pii_cleared"]
        );
        assert_eq!(r.requested_at.as_deref(), Some("2025-01-05T12:00:00Z"));
        // The canonical form is stable: validating it again gives the same record.
        let again = check(&receipt_json(&r)).unwrap();
        assert_eq!(again, r);
    }

    #[test]
    fn aliases_are_forgiven_and_canonical() {
        let mut v = seed();
        let o = v.as_object_mut().unwrap();
        let policies = o.remove("policies_checked").unwrap();
        o.insert("policies".into(), policies);
        let approvals = o.remove("approvals").unwrap();
        o.insert("approvers".into(), approvals);
        o["policies"][0]["result"] = json!("PASSED");
        o["policies"][1]["result"] = json!("Denied");
        o.insert("outcome".into(), json!("failed"));
        let ts = o.remove("timestamps").unwrap();
        o.insert("committed_at".into(), ts["committed"].clone());
        let r = check(&v).unwrap();
        assert_eq!(r.policies[0].result, "deny");
        assert_eq!(r.policies[1].result, "allow");
        assert_eq!(r.outcome.status, "failure");
        assert_eq!(r.approvals.len(), 2);
        // Without an id, the id is derived from the content: the same receipt, the same id.
        o_remove_id(&mut v);
        assert_eq!(check(&v).unwrap().receipt_id, check(&v).unwrap().receipt_id);
        assert!(check(&v).unwrap().receipt_id.starts_with("receipt-"));
    }

    fn o_remove_id(v: &mut Value) {
        v.as_object_mut().unwrap().remove("id");
    }

    #[test]
    fn bad_receipts_name_every_field_value_and_rule() {
        let v = json!({"record_type": "receipt", "task": " ", "actor": "user ops",
            "policies_checked": [{"id": "p", "result": "maybe"}, {"id": "p", "result": "allow"}],
            "exceptions": [{"id": "w"}], "action": "apply",
            "referenced_inputs": {"entities": ["Not An Id"], "tickets": []},
            "outcome": {"status": "done"}, "timestamps": {"committed": "yesterday"}, "extra": 1});
        let err = check(&v).unwrap_err();
        let got: Vec<(&str, &str)> =
            err.violations.iter().map(|v| (v.path.as_str(), v.rule)).collect();
        for want in [
            ("$.extra", "envelope.unknown_field"),
            ("$.task", "receipt.text_format"),
            ("$.actor", "envelope.id_format"),
            ("$.policies_checked[0].result", "schema.enum"),
            ("$.exceptions[0].justification", "receipt.justification"),
            ("$.referenced_inputs.tickets", "envelope.unknown_field"),
            ("$.outcome.status", "schema.enum"),
            ("$.timestamps.committed", "envelope.timestamp_format"),
        ] {
            assert!(got.contains(&want), "{want:?} missing from {got:?}");
        }
        assert!(err.violations.iter().all(|v| !v.message.is_empty()));
        let v = json!({"record_type": "receipt", "task": "t", "actor": "a", "action": "x",
            "outcome": "success", "committed_at": "2025-01-05T12:07:00Z",
            "policies_checked": [{"id": "p", "result": "allow"}, {"id": "p", "result": "deny"}]});
        let err = check(&v).unwrap_err();
        assert_eq!(err.violations[0].rule, "receipt.duplicate_policy");
        let both = json!({"record_type": "receipt", "task": "t", "actor": "a", "action": "x",
            "outcome": "success", "committed_at": "2025-01-05T12:07:00Z",
            "approvals": ["a"], "approvers": ["b"]});
        assert_eq!(check(&both).unwrap_err().violations[0].rule, "receipt.duplicate_field");
    }

    proptest! {
        /// Accepted exactly when the result is one of the enum's names or aliases, in any case.
        #[test]
        fn policy_results_are_accepted_by_an_independent_rule(result in "[a-zA-Z]{1,8}") {
            let v = json!({"record_type": "receipt", "task": "t", "actor": "a", "action": "x",
                "outcome": "success", "committed_at": "2025-01-05T12:07:00Z",
                "policies_checked": [{"id": "p", "result": result.clone()}]});
            let lower = result.to_lowercase();
            let allow = ["allow", "allowed", "pass", "passed"].contains(&lower.as_str());
            let deny = ["deny", "denied", "fail", "failed", "block", "blocked"].contains(&lower.as_str());
            match check(&v) {
                Ok(r) => {
                    prop_assert!(allow || deny);
                    prop_assert_eq!(&r.policies[0].result, if allow { "allow" } else { "deny" });
                }
                Err(e) => {
                    prop_assert!(!allow && !deny);
                    prop_assert_eq!(e.violations[0].rule, "schema.enum");
                }
            }
        }
    }
}
