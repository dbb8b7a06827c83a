//! Conversations as memory: chat messages (JSONL) and LoCoMo conversations turned into event
//! records, with LLM-free entity extraction, ingested through the normal validated path.
//!
//! # The message format
//! One JSON object per line (blank lines are skipped):
//!
//! ```json
//! {"speaker": "Caroline", "text": "I went to the LGBTQ support group yesterday.",
//!  "timestamp": "2023-05-08T13:56:00Z", "session": "s1", "conversation": "c1",
//!  "id": "m1", "reply_to": "m0", "attributes": {"channel": "sms"}}
//! ```
//!
//! | field | required | meaning |
//! |---|---|---|
//! | `speaker` | yes | who said it: a name (1–256 bytes, no control characters), e.g. `Melanie Smith` |
//! | `text` | yes | what was said |
//! | `timestamp` | yes | RFC 3339 with an offset |
//! | `session` | yes | the session (one sitting of the conversation): an id |
//! | `conversation` | no | the conversation the session belongs to (default: the session) |
//! | `id` | no | the message id (default `{session}:{n}`, `n` the message's 1-based position in its session in the input) |
//! | `reply_to` | no | the id of the message this one answers |
//! | `attributes` | no | a JSON object kept with the message; it may not use the keys `text` and `speaker` |
//!
//! Unknown fields are refused. Every problem of a line is reported at once with the line number,
//! the path, the value and the rule (`message.unknown_field`, `message.required_field`,
//! `message.type`, `message.id_format`, `message.timestamp_format`, `message.timestamp_range`,
//! `message.reserved_attribute`, `message.self_reply`, `json.syntax`, `json.type`,
//! `json.encoding`, `limits.record_bytes`, `limits.payload_depth`).
//!
//! `n` counts every line that names the session, refused ones included, so a refused line fixed
//! and imported again keeps the ids of the lines after it.
//!
//! # The event record of a message
//! `event_type` [`MESSAGE_EVENT_TYPE`]; `event_id` the `id` or `{session}:{n}`; `session_id` the
//! session; `trace_id` the conversation; `agent_id` the speaker's id, [`speaker_id`] (its name
//! with each run of white space turned into `_`; an Entity of type `agent` through the projection's
//! agent mention); `parent_event_id` the `reply_to`; `occurred_at` the
//! timestamp; `payload` `{"text", "speaker"}` (the speaker's name as given) plus the attributes (stage 2 reads `text` as the
//! telling text); `entities` the names in the text ([`extract_entities`], role `object`), where
//! the known speakers are every speaker of the same conversation in the input (so a greeting
//! names the other person before they have spoken), and a speaker's name becomes its id, so a
//! speaker named in the text is the entity of the turns they spoke.
//!
//! Records depend only on the input, so importing it again finds every record stored
//! (duplicates). Appending messages to a file and importing it again is safe, unless a speaker who
//! joins only in the new lines was named earlier: that earlier turn's record changes (the name
//! becomes the agent) and is refused as a conflict. Import the new lines alone in that case.

mod extract;
mod locomo;

use std::collections::{BTreeMap, BTreeSet};

use chrono::DateTime;
use ctxgraph_ontology::{Limits, ValidationErrors, Violation};
use serde_json::{Map, Value, json};

use crate::engine::Engine;
use crate::error::Error;
use crate::ingest::{IngestOptions, IngestProgress, IngestReport, Rejection};

pub use extract::{Extracted, MAX_EXTRACTED, extract_entities};
pub use locomo::{
    LocomoConversation, LocomoError, LocomoQuestion, locomo_conversations, normalize_evidence,
};

/// The event type of a conversation turn (declared in the core schema as `cg:Message`).
pub const MESSAGE_EVENT_TYPE: &str = "observation.message";

const MESSAGE_FIELDS: &[&str] =
    &["speaker", "text", "timestamp", "session", "conversation", "id", "reply_to", "attributes"];
/// Payload keys a message sets itself.
const RESERVED_ATTRIBUTES: &[&str] = &["text", "speaker"];

/// One conversation message, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who said it (an id).
    pub speaker: String,
    /// What was said.
    pub text: String,
    /// RFC 3339 with an offset, as written.
    pub timestamp: String,
    /// The session (an id).
    pub session: String,
    /// The conversation (an id), when given.
    pub conversation: Option<String>,
    /// The message id, when given.
    pub id: Option<String>,
    /// The id of the message this one answers.
    pub reply_to: Option<String>,
    /// Extra payload fields.
    pub attributes: Map<String, Value>,
}

impl Message {
    /// Parse one line of the message format, reporting every violation.
    pub fn parse(line: &str, limits: &Limits) -> Result<Message, ValidationErrors> {
        let value: Value = serde_json::from_str(line).map_err(|e| {
            ValidationErrors::from(vec![Violation::with_text(
                "$",
                Some(line),
                "json.syntax",
                format!("not valid JSON: {e}"),
            )])
        })?;
        Message::from_value(value, limits)
    }

    /// Check an already-parsed JSON message, reporting every violation.
    pub fn from_value(value: Value, limits: &Limits) -> Result<Message, ValidationErrors> {
        let Value::Object(obj) = value else {
            return Err(vec![Violation::new(
                "$",
                Some(&value),
                "json.type",
                "a message must be a JSON object",
            )]
            .into());
        };
        let mut out = Vec::new();
        for (k, v) in &obj {
            if !MESSAGE_FIELDS.contains(&k.as_str()) {
                out.push(Violation::new(
                    format!("$.{k}"),
                    Some(v),
                    "message.unknown_field",
                    format!("unknown field; allowed: {}", MESSAGE_FIELDS.join(", ")),
                ));
            }
        }
        let speaker = speaker_field(&obj, limits, &mut out);
        let text = string_field(&obj, "text", true, &mut out).map(str::to_owned);
        let timestamp = string_field(&obj, "timestamp", true, &mut out).and_then(|t| {
            match DateTime::parse_from_rfc3339(t) {
                Ok(dt) if dt.timestamp_nanos_opt().is_some() => Some(t.to_owned()),
                Ok(_) => {
                    out.push(Violation::for_str(
                        "$.timestamp",
                        t,
                        "message.timestamp_range",
                        "must lie between the years 1677 and 2262",
                    ));
                    None
                }
                Err(e) => {
                    out.push(Violation::for_str(
                        "$.timestamp",
                        t,
                        "message.timestamp_format",
                        format!(
                            "must be an RFC 3339 timestamp with an offset, e.g. 2026-11-20T09:15:02Z ({e})"
                        ),
                    ));
                    None
                }
            }
        });
        let session = id_field(&obj, "session", true, limits, &mut out);
        let conversation = id_field(&obj, "conversation", false, limits, &mut out);
        let id = id_field(&obj, "id", false, limits, &mut out);
        let reply_to = id_field(&obj, "reply_to", false, limits, &mut out);
        let attributes = match obj.get("attributes") {
            None | Some(Value::Null) => Some(Map::new()),
            Some(Value::Object(m)) => {
                for key in RESERVED_ATTRIBUTES {
                    if let Some(v) = m.get(*key) {
                        out.push(Violation::new(
                            format!("$.attributes.{key}"),
                            Some(v),
                            "message.reserved_attribute",
                            format!("`{key}` is set by the message itself; rename the attribute"),
                        ));
                    }
                }
                // The attributes become the payload's fields: the payload's depth is theirs.
                let depth = depth(&Value::Object(m.clone()));
                if depth > limits.max_payload_depth {
                    out.push(Violation::with_text(
                        "$.attributes",
                        Some(&format!("depth {depth}")),
                        "limits.payload_depth",
                        format!(
                            "attribute nesting exceeds the limit of {}",
                            limits.max_payload_depth
                        ),
                    ));
                }
                Some(m.clone())
            }
            Some(other) => {
                out.push(Violation::new(
                    "$.attributes",
                    Some(other),
                    "message.type",
                    "must be a JSON object",
                ));
                None
            }
        };
        if !out.is_empty() {
            return Err(out.into());
        }
        match (speaker, text, timestamp, session, attributes) {
            (Some(speaker), Some(text), Some(timestamp), Some(session), Some(attributes)) => {
                Ok(Message {
                    speaker,
                    text,
                    timestamp,
                    session,
                    conversation,
                    id,
                    reply_to,
                    attributes,
                })
            }
            // Every missing part pushed a violation above.
            _ => {
                Err(vec![Violation::with_text("$", None, "message.invalid", "invalid message")]
                    .into())
            }
        }
    }

    /// The message in the message format (what [`Message::parse`] reads back).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("speaker".into(), self.speaker.clone().into());
        m.insert("text".into(), self.text.clone().into());
        m.insert("timestamp".into(), self.timestamp.clone().into());
        m.insert("session".into(), self.session.clone().into());
        let optional =
            [("conversation", &self.conversation), ("id", &self.id), ("reply_to", &self.reply_to)];
        for (k, v) in optional {
            if let Some(v) = v {
                m.insert(k.into(), v.clone().into());
            }
        }
        if !self.attributes.is_empty() {
            m.insert("attributes".into(), Value::Object(self.attributes.clone()));
        }
        Value::Object(m)
    }

    /// The conversation: `conversation`, or the session when none is given.
    pub fn conversation_id(&self) -> &str {
        self.conversation.as_deref().unwrap_or(&self.session)
    }

    /// The event id: `id`, or `{session}:{position}`.
    pub fn event_id(&self, position: u64) -> String {
        match &self.id {
            Some(id) => id.clone(),
            None => format!("{}:{position}", self.session),
        }
    }
}

fn string_field<'v>(
    obj: &'v Map<String, Value>,
    field: &str,
    required: bool,
    out: &mut Vec<Violation>,
) -> Option<&'v str> {
    match obj.get(field) {
        None | Some(Value::Null) => {
            if required {
                out.push(Violation::new(
                    format!("$.{field}"),
                    None,
                    "message.required_field",
                    "required field is missing",
                ));
            }
            None
        }
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            out.push(Violation::new(
                format!("$.{field}"),
                Some(other),
                "message.type",
                "must be a string",
            ));
            None
        }
    }
}

fn id_field(
    obj: &Map<String, Value>,
    field: &str,
    required: bool,
    limits: &Limits,
    out: &mut Vec<Violation>,
) -> Option<String> {
    let s = string_field(obj, field, required, out)?;
    if is_id(s, limits) {
        Some(s.to_owned())
    } else {
        out.push(Violation::for_str(
            format!("$.{field}"),
            s,
            "message.id_format",
            format!(
                "ids are 1 to {} bytes with no whitespace or control characters",
                limits.max_id_bytes
            ),
        ));
        None
    }
}

/// The speaker: a name, kept as written; its id ([`speaker_id`]) must be an id.
fn speaker_field(
    obj: &Map<String, Value>,
    limits: &Limits,
    out: &mut Vec<Violation>,
) -> Option<String> {
    let s = string_field(obj, "speaker", true, out)?;
    if is_id(&speaker_id(s), limits) && !s.chars().any(char::is_control) {
        Some(s.to_owned())
    } else {
        out.push(Violation::for_str(
            "$.speaker",
            s,
            "message.id_format",
            format!(
                "a speaker is a name of 1 to {} bytes with no control characters",
                limits.max_id_bytes
            ),
        ));
        None
    }
}

/// The id of a speaker named `name`: the name with each run of white space turned into `_` and
/// the ends trimmed (`Melanie Smith` → `Melanie_Smith`), as the agent's id in event records.
pub(crate) fn speaker_id(name: &str) -> String {
    name.split_whitespace().collect::<Vec<_>>().join("_")
}

/// The record validator's id rule.
pub(crate) fn is_id(s: &str, limits: &Limits) -> bool {
    !s.is_empty()
        && s.len() <= limits.max_id_bytes
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 0,
    }
}

/// What an event record of a conversation turn is made of.
pub(crate) struct Turn<'a> {
    pub(crate) event_id: &'a str,
    pub(crate) occurred_at: &'a str,
    pub(crate) session_id: &'a str,
    pub(crate) trace_id: &'a str,
    pub(crate) speaker: &'a str,
    pub(crate) reply_to: Option<&'a str>,
    pub(crate) text: &'a str,
    /// Payload fields besides `text` and `speaker`.
    pub(crate) extra: Map<String, Value>,
}

impl Turn<'_> {
    /// The event record, entities extracted from the text with these speakers known.
    pub(crate) fn record(self, known_speakers: &[&str]) -> Value {
        let mut payload = self.extra;
        payload.insert("text".into(), self.text.into());
        payload.insert("speaker".into(), self.speaker.into());
        let mut record = json!({
            "event_id": self.event_id,
            "event_type": MESSAGE_EVENT_TYPE,
            "occurred_at": self.occurred_at,
            "session_id": self.session_id,
            "agent_id": speaker_id(self.speaker),
            "trace_id": self.trace_id,
            "payload": payload,
        });
        if let Some(parent) = self.reply_to {
            record["parent_event_id"] = parent.into();
        }
        let entities: Vec<Value> = extract_entities(self.text, known_speakers)
            .into_iter()
            .map(|e| {
                // A speaker named in the text is the agent whose id is their name's id form.
                let name = if e.entity_type == "agent" { speaker_id(&e.name) } else { e.name };
                json!({"name": name, "entity_type": e.entity_type, "role": "object"})
            })
            .collect();
        if !entities.is_empty() {
            record["entities"] = Value::Array(entities);
        }
        record
    }
}

/// The event record of a message at this 1-based position in its session (see the module docs).
pub fn message_to_record(message: &Message, position: u64, known_speakers: &[&str]) -> Value {
    let event_id = message.event_id(position);
    Turn {
        event_id: &event_id,
        occurred_at: &message.timestamp,
        session_id: &message.session,
        trace_id: message.conversation_id(),
        speaker: &message.speaker,
        reply_to: message.reply_to.as_deref(),
        text: &message.text,
        extra: message.attributes.clone(),
    }
    .record(known_speakers)
}

/// Event records built from an input, each with the input line it came from, and the lines
/// refused while building them; [`Engine::import`] ingests it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportBatch {
    /// `(line, event record)`, in input order.
    pub records: Vec<(u64, Value)>,
    /// Refused lines, in line order.
    pub rejections: Vec<Rejection>,
}

impl ImportBatch {
    /// Records numbered 1, 2, … (a LoCoMo conversation's turns, say).
    pub fn from_records(records: impl IntoIterator<Item = Value>) -> ImportBatch {
        ImportBatch { records: (1..).zip(records).collect(), rejections: Vec::new() }
    }
}

/// A message line after the first pass.
enum Parsed {
    Message { line: u64, position: u64, message: Message },
    Refused(Rejection),
}

/// Turn conversation JSONL into event records, refusing bad lines with every reason (see the
/// module docs for the format and the mapping).
pub fn parse_messages(input: &[u8], limits: &Limits) -> ImportBatch {
    let mut positions: BTreeMap<String, u64> = BTreeMap::new();
    let mut speakers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut parsed = Vec::new();
    // Lines end at `\n`; a final newline does not start another line.
    let body = input.strip_suffix(b"\n").unwrap_or(input);
    let lines = (!input.is_empty()).then(|| body.split(|&b| b == b'\n'));
    for (line, bytes) in (1u64..).zip(lines.into_iter().flatten()) {
        let refuse = |v: Violation, id: Option<String>| {
            Parsed::Refused(Rejection { line, id, code: v.rule, violations: vec![v] })
        };
        if bytes.len() > limits.max_record_bytes {
            let v = Violation::with_text(
                "$",
                Some(&format!("{} bytes", bytes.len())),
                "limits.record_bytes",
                format!("message exceeds the limit of {} bytes", limits.max_record_bytes),
            );
            parsed.push(refuse(v, None));
            continue;
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t.trim(),
            Err(e) => {
                let v = Violation::with_text(
                    "$",
                    None,
                    "json.encoding",
                    format!("line is not UTF-8: {e}"),
                );
                parsed.push(refuse(v, None));
                continue;
            }
        };
        if text.is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                let v = Violation::with_text(
                    "$",
                    Some(text),
                    "json.syntax",
                    format!("not valid JSON: {e}"),
                );
                parsed.push(refuse(v, None));
                continue;
            }
        };
        // Every line naming a session takes a position in it, refused or not.
        let position = value.get("session").and_then(Value::as_str).map(|s| {
            let n = positions.entry(s.to_owned()).or_insert(0);
            *n += 1;
            *n
        });
        let id = value.get("id").and_then(Value::as_str).map(str::to_owned).or_else(|| {
            let session = value.get("session").and_then(Value::as_str)?;
            Some(format!("{session}:{}", position?))
        });
        match Message::from_value(value, limits) {
            Ok(message) => {
                speakers
                    .entry(message.conversation_id().to_owned())
                    .or_default()
                    .insert(message.speaker.clone());
                let position = position.unwrap_or_default();
                parsed.push(Parsed::Message { line, position, message });
            }
            Err(errors) => {
                let code = errors.code();
                parsed.push(Parsed::Refused(Rejection {
                    line,
                    id,
                    code,
                    violations: errors.violations,
                }));
            }
        }
    }
    let mut batch = ImportBatch::default();
    for item in parsed {
        let (line, position, message) = match item {
            Parsed::Refused(r) => {
                batch.rejections.push(r);
                continue;
            }
            Parsed::Message { line, position, message } => (line, position, message),
        };
        let event_id = message.event_id(position);
        let mut out = Vec::new();
        if !is_id(&event_id, limits) {
            out.push(Violation::for_str(
                "$.session",
                &message.session,
                "message.id_format",
                format!(
                    "the event id `{{session}}:{position}` would exceed {} bytes; give the message an `id`",
                    limits.max_id_bytes
                ),
            ));
        }
        if message.reply_to.as_deref() == Some(event_id.as_str()) {
            out.push(Violation::for_str(
                "$.reply_to",
                &event_id,
                "message.self_reply",
                "a message cannot reply to itself",
            ));
        }
        if !out.is_empty() {
            let errors = ValidationErrors::from(out);
            batch.rejections.push(Rejection {
                line,
                id: Some(event_id),
                code: errors.code(),
                violations: errors.violations,
            });
            continue;
        }
        let known: Vec<&str> = speakers
            .get(message.conversation_id())
            .map(|s| s.iter().map(String::as_str).collect())
            .unwrap_or_default();
        batch.records.push((line, message_to_record(&message, position, &known)));
    }
    batch
}

impl Engine {
    /// Ingest a batch of event records built from an input (conversation messages, LoCoMo
    /// turns): each record is validated, appended and projected like a line of
    /// [`Engine::ingest_jsonl`], and the report counts the batch's refused lines too, every
    /// rejection under its input line.
    ///
    /// With `strict`, the records from the first refused line on are not written.
    /// `progress` is called after every durable batch; its `bytes` count the records' JSON.
    pub fn import(
        &mut self,
        batch: &ImportBatch,
        options: &IngestOptions,
        progress: &mut dyn FnMut(&IngestProgress),
    ) -> Result<IngestReport, Error> {
        let first_refused = batch.rejections.iter().map(|r| r.line).min();
        let stop_at = if options.strict { first_refused } else { None };
        let records: Vec<&(u64, Value)> =
            batch.records.iter().filter(|(line, _)| stop_at.is_none_or(|s| *line < s)).collect();
        let mut jsonl = String::new();
        for (_, record) in &records {
            jsonl.push_str(&record.to_string());
            jsonl.push('\n');
        }
        let mut report = self.ingest_jsonl(jsonl.as_bytes(), options, progress)?;
        // The generated text has one record per line: give each rejection its input line.
        for r in &mut report.rejections {
            let index = usize::try_from(r.line).unwrap_or(usize::MAX).wrapping_sub(1);
            if let Some((line, _)) = records.get(index) {
                r.line = *line;
            }
        }
        let refused: Vec<Rejection> = match stop_at {
            // A record before the first refused line stopped the run: the refusal is not reached.
            Some(_) if report.stopped => Vec::new(),
            Some(s) => batch.rejections.iter().filter(|r| r.line == s).take(1).cloned().collect(),
            None => batch.rejections.clone(),
        };
        let n = refused.len() as u64;
        report.progress.lines += n;
        report.progress.rejected += n;
        report.stopped |= stop_at.is_some() && n > 0;
        report.rejections.extend(refused);
        report.rejections.sort_by_key(|r| r.line);
        report.rejections.truncate(options.keep_rejections);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(input: &str) -> ImportBatch {
        parse_messages(input.as_bytes(), &Limits::default())
    }

    fn rules(r: &Rejection) -> Vec<(String, &'static str)> {
        r.violations.iter().map(|v| (v.path.clone(), v.rule)).collect()
    }

    const HI: &str = r#"{"speaker":"Caroline","text":"Hey Melanie! I went to Paris.","timestamp":"2023-05-08T13:56:00Z","session":"s1"}"#;
    const BACK: &str = r#"{"speaker":"Melanie","text":"Welcome back, Caroline!","timestamp":"2023-05-08T13:57:00+02:00","session":"s1","conversation":"c1","id":"m2","reply_to":"s1:1","attributes":{"mood":"happy","tags":["a"]}}"#;

    #[test]
    fn a_message_becomes_an_event_record() {
        let b = batch(&format!("{HI}\n\n{BACK}\n"));
        assert!(b.rejections.is_empty(), "{:?}", b.rejections);
        assert_eq!(b.records.len(), 2);
        let (line, first) = &b.records[0];
        assert_eq!(*line, 1);
        assert_eq!(
            first,
            &json!({
                "event_id": "s1:1", "event_type": "observation.message",
                "occurred_at": "2023-05-08T13:56:00Z", "session_id": "s1", "agent_id": "Caroline",
                "trace_id": "s1",
                "payload": {"text": "Hey Melanie! I went to Paris.", "speaker": "Caroline"},
                // Melanie speaks in another conversation (c1), so here she is a concept.
                "entities": [
                    {"name": "Melanie", "entity_type": "concept", "role": "object"},
                    {"name": "Paris", "entity_type": "concept", "role": "object"},
                ],
            })
        );
        let (line, second) = &b.records[1];
        assert_eq!(*line, 3);
        assert_eq!(second["event_id"], "m2");
        assert_eq!(second["trace_id"], "c1");
        assert_eq!(second["parent_event_id"], "s1:1");
        assert_eq!(second["payload"]["mood"], "happy");
        assert_eq!(second["payload"]["speaker"], "Melanie");
        // Conversation c1 has one speaker; s1 (the first message's conversation) has another.
        assert_eq!(
            second["entities"],
            json!([{"name": "Caroline", "entity_type": "concept", "role": "object"}])
        );
    }

    #[test]
    fn speakers_of_the_conversation_are_known_before_they_speak() {
        let later = HI.replace(
            "Caroline\",\"text\":\"Hey Melanie! I went to Paris.",
            "Melanie\",\"text\":\"Hi",
        );
        let b = batch(&format!("{HI}\n{later}\n"));
        assert_eq!(
            b.records[0].1["entities"],
            json!([
                {"name": "Melanie", "entity_type": "agent", "role": "object"},
                {"name": "Paris", "entity_type": "concept", "role": "object"},
            ])
        );
        assert_eq!(b.records[1].1["event_id"], "s1:2");
    }

    #[test]
    fn a_speaker_is_a_display_name_with_an_id_form() {
        let hi = HI.replace("\"Caroline\"", "\"Caroline  Smith\"");
        let back = r#"{"speaker":"Melanie","text":"Thanks, Caroline Smith!","timestamp":"2023-05-08T13:57:00Z","session":"s1"}"#;
        let b = batch(&format!("{hi}\n{back}\n"));
        assert!(b.rejections.is_empty(), "{:?}", b.rejections.len());
        let first = &b.records[0].1;
        assert_eq!(first["agent_id"], "Caroline_Smith");
        assert_eq!(first["payload"]["speaker"], "Caroline  Smith");
        // Named in the text, the speaker is the agent of their own turns.
        assert_eq!(
            b.records[1].1["entities"],
            json!([{"name": "Caroline_Smith", "entity_type": "agent", "role": "object"}])
        );
    }

    #[test]
    fn every_bad_line_is_refused_with_every_reason() {
        let input = [
            HI,
            "{not json",
            r#"[1, 2]"#,
            r#"{"speaker":"  ","text":7,"timestamp":"yesterday","session":"s1","colour":"red","attributes":{"text":"x"}}"#,
            r#"{"text":"hi"}"#,
            r#"{"speaker":"a","text":"","timestamp":"2023-05-08T13:56:00Z","session":"s1","reply_to":"s1:1"}"#,
            r#"{"speaker":"a","text":"","timestamp":"2023-05-08T13:56:00Z","session":"s1","attributes":[]}"#,
            HI,
        ]
        .join("\n");
        let b = batch(&input);
        let lines: Vec<u64> = b.records.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [1, 6, 8]);
        // Refused lines naming the session still take their positions.
        let ids: Vec<&Value> = b.records.iter().map(|(_, r)| &r["event_id"]).collect();
        assert_eq!(ids, ["s1:1", "s1:3", "s1:5"]);
        let got: Vec<_> =
            b.rejections.iter().map(|r| (r.line, r.id.as_deref(), rules(r))).collect();
        let p = |s: &str| s.to_owned();
        assert_eq!(
            got,
            [
                (2, None, vec![(p("$"), "json.syntax")]),
                (3, None, vec![(p("$"), "json.type")]),
                (
                    4,
                    Some("s1:2"),
                    vec![
                        (p("$.colour"), "message.unknown_field"),
                        (p("$.speaker"), "message.id_format"),
                        (p("$.text"), "message.type"),
                        (p("$.timestamp"), "message.timestamp_format"),
                        (p("$.attributes.text"), "message.reserved_attribute"),
                    ]
                ),
                (
                    5,
                    None,
                    vec![
                        (p("$.speaker"), "message.required_field"),
                        (p("$.timestamp"), "message.required_field"),
                        (p("$.session"), "message.required_field"),
                    ]
                ),
                (7, Some("s1:4"), vec![(p("$.attributes"), "message.type")]),
            ]
        );
        assert_eq!(b.rejections[2].code, "message.unknown_field");
    }

    #[test]
    fn a_message_cannot_reply_to_itself() {
        let line = r#"{"speaker":"a","text":"","timestamp":"2023-05-08T13:56:00Z","session":"s1","reply_to":"s1:1"}"#;
        let b = batch(line);
        assert!(b.records.is_empty());
        assert_eq!(rules(&b.rejections[0]), [("$.reply_to".to_owned(), "message.self_reply")]);
    }

    #[test]
    fn oversized_and_non_utf8_lines_are_refused() {
        let limits = Limits { max_record_bytes: 64, ..Limits::default() };
        let mut input = HI.as_bytes().to_vec();
        input.extend_from_slice(b"\n\xff\xfe\n");
        let b = parse_messages(&input, &limits);
        assert!(b.records.is_empty());
        let codes: Vec<&str> = b.rejections.iter().map(|r| r.code).collect();
        assert_eq!(codes, ["limits.record_bytes", "json.encoding"]);
        assert!(parse_messages(b"", &limits).rejections.is_empty());
        assert!(parse_messages(b"\n\n  \n", &limits).records.is_empty());
    }

    #[test]
    fn a_message_prints_back_to_itself() {
        let m = Message::parse(BACK, &Limits::default()).unwrap();
        let again = Message::parse(&m.to_json().to_string(), &Limits::default()).unwrap();
        assert_eq!(again, m);
        assert_eq!(m.conversation_id(), "c1");
        assert_eq!(m.event_id(9), "m2");
    }
}
