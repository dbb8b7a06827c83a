//! Decision-memory records (seed 003): a saved memory, the outcome of a memory, an explicit link
//! between two memories and a person's vote (delete or down-vote) on a link.
//!
//! Validation here checks the shape of each record alone. That the memories a record names exist is
//! checked by the engine at write time, against the graph, before anything is appended.
//!
//! Each record has an id, unique within its kind. When the writer gives none, the id is derived
//! from the record's content (FNV-1a of its canonical JSON), so the same write repeated is a
//! duplicate rather than a second memory.

use serde_json::{Map, Value};

use super::Validator;
use crate::violation::Violation;

/// A validated `memory` record: `save_memory` of seed 003.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRecord {
    /// Unique id (given, or `mem-` and a content hash).
    pub memory_id: String,
    /// `decision`, `checkpoint`, `insight` or `context`.
    pub kind: String,
    /// What it is about; required for a decision.
    pub topic: Option<String>,
    /// The memory itself.
    pub content: String,
    /// Why.
    pub reasoning: Option<String>,
    /// The memory this one replaces (an explicit SUPERSEDES link).
    pub supersedes: Option<String>,
    /// The memories this one carries out (explicit IMPLEMENTS links).
    pub implements: Vec<String>,
    /// How sure the writer is, in [0, 1]; 1.0 when not given.
    pub confidence: f64,
    /// `user`, `system` or `llm`; `user` when not given.
    pub created_by: String,
    /// The session it was saved in (temporal links stay inside one).
    pub session_id: Option<String>,
    /// Whether the automatic link rules may link it (true unless the record says
    /// `"auto_link": false`): a memory saved without them takes part in no automatic link, now
    /// or when the links are rebuilt.
    pub auto_link: bool,
    /// RFC 3339 time it was saved, as written.
    pub created_at: String,
    /// `created_at` in nanoseconds since the Unix epoch.
    pub created_at_ns: i64,
    /// Who it is for and its PII state.
    pub scope: super::Scope,
}

/// A validated `memory_outcome` record: `evolve_outcome` of seed 003.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryOutcomeRecord {
    /// Unique id (given, or `out-` and a content hash).
    pub outcome_id: String,
    /// The memory it is the outcome of.
    pub memory_id: String,
    /// `success`, `failed` or `partial`.
    pub outcome: String,
    /// Why, in words; empty when none was given.
    pub reason: String,
    /// `user`, `system` or `llm`.
    pub created_by: String,
    /// RFC 3339 time the outcome was recorded.
    pub at: String,
    /// `at` in nanoseconds since the Unix epoch.
    pub at_ns: i64,
}

/// A validated `memory_link` record: an explicit link between two memories.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryLinkRecord {
    /// Unique id (given, or `link-` and a content hash).
    pub link_id: String,
    /// Source memory.
    pub from: String,
    /// Target memory.
    pub to: String,
    /// `supersedes`, `implements`, `outcome_of`, `relates_to` or `temporal`.
    pub link_type: String,
    /// In [0, 1]; 1.0 when not given.
    pub confidence: f64,
    /// `user`, `system` or `llm`.
    pub created_by: String,
    /// RFC 3339 time the link was made (its decay starts here).
    pub created_at: String,
    /// Why, in words.
    pub reason: Option<String>,
    /// Free-form metadata object.
    pub metadata: Option<Map<String, Value>>,
}

/// A validated `memory_link_vote` record: a person deletes or down-votes the links of one type
/// from one memory to another.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryLinkVoteRecord {
    /// Unique id (given, or `vote-` and a content hash).
    pub vote_id: String,
    /// Source memory of the link.
    pub from: String,
    /// Target memory of the link.
    pub to: String,
    /// The link type voted on.
    pub link_type: String,
    /// `delete` or `downvote`.
    pub vote: String,
    /// Why, in words.
    pub reason: Option<String>,
    /// `user`, `system` or `llm`.
    pub created_by: String,
    /// RFC 3339 time of the vote.
    pub created_at: String,
}

pub(super) const MEMORY_FIELDS: &[&str] = &[
    "record_type",
    "memory_id",
    "kind",
    "topic",
    "content",
    "reasoning",
    "supersedes",
    "implements",
    "confidence",
    "created_by",
    "session_id",
    "auto_link",
    "created_at",
    "scope",
    "pii",
];
pub(super) const OUTCOME_FIELDS: &[&str] =
    &["record_type", "outcome_id", "memory_id", "outcome", "reason", "created_by", "at"];
pub(super) const LINK_FIELDS: &[&str] = &[
    "record_type",
    "link_id",
    "from",
    "to",
    "link_type",
    "confidence",
    "created_by",
    "created_at",
    "reason",
    "metadata",
];
pub(super) const VOTE_FIELDS: &[&str] = &[
    "record_type",
    "vote_id",
    "from",
    "to",
    "link_type",
    "vote",
    "reason",
    "created_by",
    "created_at",
];

/// The default creator of a memory record: the person at the keyboard.
const DEFAULT_CREATOR: &str = "user";

impl Validator<'_> {
    /// An enum value given in any letter case (seed 003 writes outcomes as `FAILED`).
    fn enum_any_case(
        &mut self,
        obj: &Map<String, Value>,
        field: &str,
        enum_name: &str,
        default: Option<&str>,
    ) -> Option<String> {
        let path = format!("$.{field}");
        match self.string(obj, field, &path, default.is_none()) {
            Some(raw) => {
                self.enum_value(enum_name, &raw.trim().to_lowercase(), &path).or_else(|| {
                    // enum_value reported the lower-cased text; show what was written.
                    if let Some(last) = self.out.last_mut() {
                        last.value = Some(Value::String(raw.to_owned()).to_string());
                    }
                    None
                })
            }
            None => default.map(str::to_owned),
        }
    }

    /// Non-blank text.
    fn non_blank(
        &mut self,
        obj: &Map<String, Value>,
        field: &str,
        required: bool,
    ) -> Option<String> {
        let path = format!("$.{field}");
        let s = self.string(obj, field, &path, required)?;
        if s.trim().is_empty() {
            self.out.push(Violation::for_str(path, s, "memory.blank", "must not be blank"));
            return None;
        }
        Some(s.to_owned())
    }

    pub(super) fn memory(&mut self, obj: &Map<String, Value>) -> Option<MemoryRecord> {
        self.unknown_fields(obj, MEMORY_FIELDS, "$");
        let given_id = self.id(obj, "memory_id", "$.memory_id", false);
        let kind = self.enum_any_case(obj, "kind", "memory_kind", None);
        let topic = self.non_blank(obj, "topic", false).map(|t| t.trim().to_owned());
        if kind.as_deref() == Some("decision") && topic.is_none() && !obj.contains_key("topic") {
            self.out.push(Violation::new(
                "$.topic",
                None,
                "memory.decision_topic",
                "a decision needs a topic: its evolution chain is found by topic",
            ));
        }
        let content = self.non_blank(obj, "content", true);
        let reasoning = self.non_blank(obj, "reasoning", false);
        let supersedes = self.id(obj, "supersedes", "$.supersedes", false);
        let implements = match obj.get("implements") {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::String(_)) => {
                self.id(obj, "implements", "$.implements", true).map(|i| vec![i])
            }
            Some(Value::Array(items)) => {
                let before = self.out.len();
                let mut ids = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let path = format!("$.implements[{i}]");
                    let mut one = Map::new();
                    one.insert("id".into(), item.clone());
                    if let Some(id) = self.id(&one, "id", &path, true)
                        && !ids.contains(&id)
                    {
                        ids.push(id);
                    }
                }
                (self.out.len() == before).then_some(ids)
            }
            Some(other) => {
                self.out.push(Violation::new(
                    "$.implements",
                    Some(other),
                    "envelope.type",
                    "must be a memory id or a list of memory ids",
                ));
                None
            }
        };
        let confidence = self.confidence(obj, "memory.confidence_range");
        let created_by = self.enum_any_case(obj, "created_by", "creator", Some(DEFAULT_CREATOR));
        let session_id = self.id(obj, "session_id", "$.session_id", false);
        let auto_link = match obj.get("auto_link") {
            None | Some(Value::Null) => Some(true),
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.out.push(Violation::new(
                    "$.auto_link",
                    Some(other),
                    "envelope.type",
                    "must be true or false",
                ));
                None
            }
        };
        let created = self.timestamp(obj, "created_at", "$.created_at");
        let scope = self.scope(obj);
        let mut implements = implements?;
        implements.sort();
        let (created_at, created_at_ns) = created?;
        let mut record = MemoryRecord {
            memory_id: given_id.clone().unwrap_or_default(),
            kind: kind?,
            topic,
            content: content?,
            reasoning,
            supersedes,
            implements,
            confidence: confidence?,
            created_by: created_by?,
            session_id,
            auto_link: auto_link?,
            created_at,
            created_at_ns,
            scope: scope?,
        };
        if given_id.is_none() {
            record.memory_id = derived_id("mem", &memory_json(&record));
        }
        for (path, target) in record
            .supersedes
            .iter()
            .map(|s| ("$.supersedes", s))
            .chain(record.implements.iter().map(|s| ("$.implements", s)))
        {
            if *target == record.memory_id {
                self.out.push(Violation::for_str(
                    path,
                    target,
                    "memory.self_link",
                    "a memory cannot link to itself",
                ));
            }
        }
        Some(record)
    }

    pub(super) fn memory_outcome(
        &mut self,
        obj: &Map<String, Value>,
    ) -> Option<MemoryOutcomeRecord> {
        self.unknown_fields(obj, OUTCOME_FIELDS, "$");
        let given_id = self.id(obj, "outcome_id", "$.outcome_id", false);
        let memory_id = self.id(obj, "memory_id", "$.memory_id", true);
        let outcome = self.enum_any_case(obj, "outcome", "outcome", None);
        // A reason is optional (an outcome is worth recording without one), but not blank.
        let reason = match obj.contains_key("reason") {
            true => self.non_blank(obj, "reason", true),
            false => Some(String::new()),
        };
        let created_by = self.enum_any_case(obj, "created_by", "creator", Some(DEFAULT_CREATOR));
        let at = self.timestamp(obj, "at", "$.at");
        let (at, at_ns) = at?;
        let mut record = MemoryOutcomeRecord {
            outcome_id: given_id.clone().unwrap_or_default(),
            memory_id: memory_id?,
            outcome: outcome?,
            reason: reason?,
            created_by: created_by?,
            at,
            at_ns,
        };
        if given_id.is_none() {
            record.outcome_id = derived_id("out", &outcome_json(&record));
        }
        Some(record)
    }

    pub(super) fn memory_link(&mut self, obj: &Map<String, Value>) -> Option<MemoryLinkRecord> {
        self.unknown_fields(obj, LINK_FIELDS, "$");
        let given_id = self.id(obj, "link_id", "$.link_id", false);
        let from = self.id(obj, "from", "$.from", true);
        let to = self.id(obj, "to", "$.to", true);
        let link_type = self.enum_any_case(obj, "link_type", "link_type", None);
        let confidence = self.confidence(obj, "memory.confidence_range");
        let created_by = self.enum_any_case(obj, "created_by", "creator", Some(DEFAULT_CREATOR));
        let created = self.timestamp(obj, "created_at", "$.created_at");
        let reason = self.non_blank(obj, "reason", false);
        let metadata = match obj.get("metadata") {
            None | Some(Value::Null) => Some(None),
            Some(Value::Object(m)) => Some(Some(m.clone())),
            Some(other) => {
                self.out.push(Violation::new(
                    "$.metadata",
                    Some(other),
                    "envelope.type",
                    "must be a JSON object",
                ));
                None
            }
        };
        let (from, to) = (from?, to?);
        if from == to {
            self.out.push(Violation::for_str(
                "$.to",
                &to,
                "memory.self_link",
                "a memory cannot link to itself",
            ));
        }
        let mut record = MemoryLinkRecord {
            link_id: given_id.clone().unwrap_or_default(),
            from,
            to,
            link_type: link_type?,
            confidence: confidence?,
            created_by: created_by?,
            created_at: created?.0,
            reason,
            metadata: metadata?,
        };
        if given_id.is_none() {
            record.link_id = derived_id("link", &link_json(&record));
        }
        Some(record)
    }

    pub(super) fn memory_link_vote(
        &mut self,
        obj: &Map<String, Value>,
    ) -> Option<MemoryLinkVoteRecord> {
        self.unknown_fields(obj, VOTE_FIELDS, "$");
        let given_id = self.id(obj, "vote_id", "$.vote_id", false);
        let from = self.id(obj, "from", "$.from", true);
        let to = self.id(obj, "to", "$.to", true);
        let link_type = self.enum_any_case(obj, "link_type", "link_type", None);
        let vote = self.enum_any_case(obj, "vote", "link_vote", None);
        let reason = self.non_blank(obj, "reason", false);
        let created_by = self.enum_any_case(obj, "created_by", "creator", Some(DEFAULT_CREATOR));
        let created = self.timestamp(obj, "created_at", "$.created_at");
        let mut record = MemoryLinkVoteRecord {
            vote_id: given_id.clone().unwrap_or_default(),
            from: from?,
            to: to?,
            link_type: link_type?,
            vote: vote?,
            reason,
            created_by: created_by?,
            created_at: created?.0,
        };
        if given_id.is_none() {
            record.vote_id = derived_id("vote", &vote_json(&record));
        }
        Some(record)
    }
}

/// `{prefix}-` and the FNV-1a 64-bit hash of `value`'s JSON text, in hex: stable across builds
/// and platforms (unlike the standard library's hasher).
pub(super) fn derived_id(prefix: &str, value: &Value) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in value.to_string().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{prefix}-{hash:016x}")
}

fn insert_opt(m: &mut Map<String, Value>, key: &str, value: &Option<String>) {
    if let Some(v) = value {
        m.insert(key.into(), v.clone().into());
    }
}

/// Canonical JSON of a memory record (sorted keys; the id included once it is set).
pub(super) fn memory_json(r: &MemoryRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "memory".into());
    if !r.memory_id.is_empty() {
        m.insert("memory_id".into(), r.memory_id.clone().into());
    }
    m.insert("kind".into(), r.kind.clone().into());
    insert_opt(&mut m, "topic", &r.topic);
    m.insert("content".into(), r.content.clone().into());
    insert_opt(&mut m, "reasoning", &r.reasoning);
    insert_opt(&mut m, "supersedes", &r.supersedes);
    if !r.implements.is_empty() {
        m.insert("implements".into(), r.implements.clone().into());
    }
    m.insert("confidence".into(), r.confidence.into());
    m.insert("created_by".into(), r.created_by.clone().into());
    insert_opt(&mut m, "session_id", &r.session_id);
    // Only the exception is written, so records without it keep their derived ids.
    if !r.auto_link {
        m.insert("auto_link".into(), false.into());
    }
    m.insert("created_at".into(), r.created_at.clone().into());
    r.scope.write_json(&mut m);
    Value::Object(m)
}

/// Canonical JSON of an outcome record.
pub(super) fn outcome_json(r: &MemoryOutcomeRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "memory_outcome".into());
    if !r.outcome_id.is_empty() {
        m.insert("outcome_id".into(), r.outcome_id.clone().into());
    }
    m.insert("memory_id".into(), r.memory_id.clone().into());
    m.insert("outcome".into(), r.outcome.clone().into());
    if !r.reason.is_empty() {
        m.insert("reason".into(), r.reason.clone().into());
    }
    m.insert("created_by".into(), r.created_by.clone().into());
    m.insert("at".into(), r.at.clone().into());
    Value::Object(m)
}

/// Canonical JSON of a link record.
pub(super) fn link_json(r: &MemoryLinkRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "memory_link".into());
    if !r.link_id.is_empty() {
        m.insert("link_id".into(), r.link_id.clone().into());
    }
    m.insert("from".into(), r.from.clone().into());
    m.insert("to".into(), r.to.clone().into());
    m.insert("link_type".into(), r.link_type.clone().into());
    m.insert("confidence".into(), r.confidence.into());
    m.insert("created_by".into(), r.created_by.clone().into());
    m.insert("created_at".into(), r.created_at.clone().into());
    insert_opt(&mut m, "reason", &r.reason);
    if let Some(meta) = &r.metadata {
        m.insert("metadata".into(), Value::Object(meta.clone()));
    }
    Value::Object(m)
}

/// Canonical JSON of a vote record.
pub(super) fn vote_json(r: &MemoryLinkVoteRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "memory_link_vote".into());
    if !r.vote_id.is_empty() {
        m.insert("vote_id".into(), r.vote_id.clone().into());
    }
    m.insert("from".into(), r.from.clone().into());
    m.insert("to".into(), r.to.clone().into());
    m.insert("link_type".into(), r.link_type.clone().into());
    m.insert("vote".into(), r.vote.clone().into());
    insert_opt(&mut m, "reason", &r.reason);
    m.insert("created_by".into(), r.created_by.clone().into());
    m.insert("created_at".into(), r.created_at.clone().into());
    Value::Object(m)
}

#[cfg(test)]
mod tests;
