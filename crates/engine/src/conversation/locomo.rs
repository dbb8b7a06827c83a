//! LoCoMo conversations as event records, with their questions kept apart for evaluation.
//!
//! LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
//! ACL 2024) is licensed CC BY-NC 4.0: ctxgraph reads it for tests and benchmarks only,
//! non-commercially, and ships none of it (the test fixtures are hand-made in its format).
//!
//! # Format
//! A JSON list (or one object) of conversations `{sample_id, conversation, qa, …}`.
//! `conversation` holds `speaker_a`, `speaker_b`, and for each session `n` a list `session_n` of
//! turns `{speaker, dia_id, text, img_url?, blip_caption?, query?}` and its start time
//! `session_n_date_time` ("1:56 pm on 8 May, 2023"). Only `sample_id`, `conversation` and the
//! `question`, `evidence` and `category` of each `qa` item are read: answers and the annotations
//! (`event_summary`, `observation`, `session_summary`) are skipped by the parser, so they cannot
//! reach a record or the index.
//!
//! # Mapping
//! Each turn is one event record ([`super::MESSAGE_EVENT_TYPE`]): `event_id`
//! `{sample_id}:{dia_id}`; `session_id` `{sample_id}:S{n}`; `trace_id` the `sample_id`;
//! `agent_id` the speaker; `occurred_at` the session's start (read as UTC) plus the turn's index
//! in the session in seconds, so the order of the turns is kept; `payload` `{text, speaker,
//! dia_id}` plus `image_caption`, the `blip_caption` of a shared photo (what the image shows is
//! part of the conversation); `entities` from the text, `speaker_a` and `speaker_b` known.
//! Sessions are read in the order of `n`; a `session_n_date_time` without a `session_n` list is
//! ignored.

use std::collections::BTreeSet;

use chrono::{NaiveDateTime, TimeDelta};
use ctxgraph_ontology::{Limits, ValidationErrors, Violation};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Turn, is_id};

/// One LoCoMo conversation: its turns as event records and its questions.
#[derive(Debug, Clone, PartialEq)]
pub struct LocomoConversation {
    /// The conversation's id, e.g. `conv-26`.
    pub sample_id: String,
    /// `speaker_a` and `speaker_b`.
    pub speakers: [String; 2],
    /// Sessions with at least one turn.
    pub sessions: usize,
    /// The event records of the turns, session by session, in turn order.
    pub records: Vec<Value>,
    /// The `qa` list, in order (a question's index is its `qa_index`); never ingested.
    pub questions: Vec<LocomoQuestion>,
}

/// A LoCoMo question, without its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocomoQuestion {
    /// The question.
    pub question: String,
    /// The turn ids (`D3:5`) that support the answer: normalised by [`normalize_evidence`],
    /// without ids the conversation does not have, each once, in order.
    pub evidence: Vec<String>,
    /// 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
    pub category: u8,
}

/// Why a LoCoMo file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocomoError {
    /// Not JSON, or not of LoCoMo's shape (a missing or mistyped field), with line and column
    /// (user error).
    #[error("not a LoCoMo file: {0}")]
    Json(#[from] serde_json::Error),
    /// LoCoMo's shape, but values that cannot become records (user error).
    #[error("invalid LoCoMo conversation: {0}")]
    Invalid(ValidationErrors),
}

impl LocomoError {
    /// Stable machine code: `locomo.json`, or the first violation's rule.
    pub fn code(&self) -> &'static str {
        match self {
            LocomoError::Json(_) => "locomo.json",
            LocomoError::Invalid(e) => e.code(),
        }
    }
}

#[derive(Deserialize)]
struct RawSample {
    sample_id: String,
    conversation: Map<String, Value>,
    #[serde(default)]
    qa: Vec<RawQuestion>,
}

#[derive(Deserialize)]
struct RawQuestion {
    question: String,
    #[serde(default)]
    evidence: Vec<String>,
    category: u8,
}

#[derive(Deserialize)]
struct RawTurn {
    speaker: String,
    dia_id: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

/// Read a LoCoMo file: every conversation's turns as event records, and its questions apart.
/// Every value that cannot become a record is reported at once.
pub fn locomo_conversations(json: &str) -> Result<Vec<LocomoConversation>, LocomoError> {
    // A list or one object: peek, since an untagged enum's error would hide the line and column.
    let samples = if json.trim_start().starts_with('{') {
        vec![serde_json::from_str::<RawSample>(json)?]
    } else {
        serde_json::from_str::<Vec<RawSample>>(json)?
    };
    let limits = Limits::default();
    let mut out = Vec::with_capacity(samples.len());
    let mut violations = Vec::new();
    let mut ids = BTreeSet::new();
    for (i, sample) in samples.into_iter().enumerate() {
        let path = format!("$[{i}]");
        if !is_id(&sample.sample_id, &limits) {
            violations.push(Violation::for_str(
                format!("{path}.sample_id"),
                &sample.sample_id,
                "locomo.id_format",
                "a sample_id is 1 to 256 bytes with no whitespace or control characters",
            ));
        } else if !ids.insert(sample.sample_id.clone()) {
            violations.push(Violation::for_str(
                format!("{path}.sample_id"),
                &sample.sample_id,
                "locomo.duplicate_sample",
                "sample ids are unique in a file",
            ));
        }
        if let Some(c) = conversation(sample, &path, &limits, &mut violations) {
            out.push(c);
        }
    }
    if violations.is_empty() { Ok(out) } else { Err(LocomoError::Invalid(violations.into())) }
}

fn speaker(conv: &Map<String, Value>, key: &str, path: &str, out: &mut Vec<Violation>) -> String {
    match conv.get(key) {
        Some(Value::String(s)) => s.clone(),
        other => {
            out.push(Violation::new(
                format!("{path}.conversation.{key}"),
                other,
                "locomo.speaker",
                "must be the speaker's name (a string)",
            ));
            String::new()
        }
    }
}

/// The session numbers of a conversation map (`session_n` keys), in order.
fn session_numbers(conv: &Map<String, Value>) -> Vec<u32> {
    let mut numbers: Vec<u32> = conv
        .keys()
        .filter_map(|k| k.strip_prefix("session_"))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|n| n.parse().ok())
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    numbers
}

fn conversation(
    sample: RawSample,
    path: &str,
    limits: &Limits,
    out: &mut Vec<Violation>,
) -> Option<LocomoConversation> {
    let RawSample { sample_id, mut conversation, qa } = sample;
    let before = out.len();
    let speakers = [
        speaker(&conversation, "speaker_a", path, out),
        speaker(&conversation, "speaker_b", path, out),
    ];
    let known = [speakers[0].as_str(), speakers[1].as_str()];
    let mut records = Vec::new();
    let mut turn_ids = BTreeSet::new();
    let mut sessions = 0;
    for n in session_numbers(&conversation) {
        let at = format!("{path}.conversation.session_{n}");
        let turns: Vec<RawTurn> = match conversation.remove(&format!("session_{n}")) {
            Some(v) => match serde_json::from_value(v) {
                Ok(t) => t,
                Err(e) => {
                    out.push(Violation::with_text(
                        at,
                        None,
                        "locomo.turns",
                        format!("must be a list of turns {{speaker, dia_id, text}}: {e}"),
                    ));
                    continue;
                }
            },
            None => continue,
        };
        if turns.is_empty() {
            continue;
        }
        sessions += 1;
        let date_key = format!("session_{n}_date_time");
        let start = match conversation.get(&date_key) {
            Some(Value::String(s)) => match session_start(s) {
                // The last turn's time must be representable too.
                Some(t) if in_range(t) && turn_time(t, turns.len()).is_some_and(in_range) => {
                    Some(t)
                }
                Some(_) => {
                    out.push(Violation::for_str(
                        format!("{path}.conversation.{date_key}"),
                        s,
                        "locomo.date_range",
                        "must lie between the years 1677 and 2262",
                    ));
                    None
                }
                None => {
                    out.push(Violation::for_str(
                        format!("{path}.conversation.{date_key}"),
                        s,
                        "locomo.date_format",
                        "must read like `1:56 pm on 8 May, 2023`",
                    ));
                    None
                }
            },
            other => {
                out.push(Violation::new(
                    format!("{path}.conversation.{date_key}"),
                    other,
                    "locomo.missing_date",
                    "every session needs its start time",
                ));
                None
            }
        };
        let session_id = format!("{sample_id}:S{n}");
        for (index, turn) in turns.into_iter().enumerate() {
            let turn_path = format!("{at}[{index}]");
            let event_id = format!("{sample_id}:{}", turn.dia_id);
            if !is_id(&event_id, limits) {
                out.push(Violation::for_str(
                    format!("{turn_path}.dia_id"),
                    &turn.dia_id,
                    "locomo.id_format",
                    "a dia_id has no whitespace, and `{sample_id}:{dia_id}` is at most 256 bytes",
                ));
            } else if !turn_ids.insert(turn.dia_id.clone()) {
                out.push(Violation::for_str(
                    format!("{turn_path}.dia_id"),
                    &turn.dia_id,
                    "locomo.duplicate_turn",
                    "turn ids are unique in a conversation",
                ));
            }
            if !is_id(&turn.speaker, limits) {
                out.push(Violation::for_str(
                    format!("{turn_path}.speaker"),
                    &turn.speaker,
                    "locomo.id_format",
                    "a speaker is a name without whitespace (it becomes the agent id)",
                ));
            }
            let Some(start) = start else { continue };
            let Some(at) = turn_time(start, index) else { continue };
            let occurred_at = at.format("%Y-%m-%dT%H:%M:%SZ").to_string();
            let mut extra = Map::new();
            extra.insert("dia_id".into(), turn.dia_id.clone().into());
            if let Some(caption) = turn.blip_caption {
                extra.insert("image_caption".into(), caption.into());
            }
            let record = Turn {
                event_id: &event_id,
                occurred_at: &occurred_at,
                session_id: &session_id,
                trace_id: &sample_id,
                speaker: &turn.speaker,
                reply_to: None,
                text: &turn.text,
                extra,
            }
            .record(&known);
            records.push(record);
        }
    }
    if out.len() > before {
        return None;
    }
    let questions = qa
        .into_iter()
        .map(|q| {
            let mut evidence: Vec<String> = Vec::new();
            for id in q.evidence.iter().flat_map(|raw| normalize_evidence(raw)) {
                if turn_ids.contains(&id) && !evidence.contains(&id) {
                    evidence.push(id);
                }
            }
            LocomoQuestion { question: q.question, evidence, category: q.category }
        })
        .collect();
    Some(LocomoConversation { sample_id, speakers, sessions, records, questions })
}

/// The time of the turn at this index of a session: the start plus the index in seconds.
fn turn_time(start: NaiveDateTime, index: usize) -> Option<NaiveDateTime> {
    let seconds = i64::try_from(index).ok()?;
    start.checked_add_signed(TimeDelta::try_seconds(seconds)?)
}

/// Whether event times can hold this instant (nanoseconds since 1970 in an `i64`).
fn in_range(t: NaiveDateTime) -> bool {
    t.and_utc().timestamp_nanos_opt().is_some()
}

/// A session start such as `1:56 pm on 8 May, 2023`, read as UTC.
fn session_start(text: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text.trim(), "%I:%M %p on %d %B, %Y").ok()
}

/// Split and normalise one LoCoMo evidence string into turn ids, as the reference evaluator
/// (`eval_retrieval.py`) does: tokens are separated by `;`, `,` or white space, and a token
/// `D<s>:<t>` or `D:<s>:<t>` (ASCII digits) becomes `D<s>:<t>` without leading zeros
/// (`D:11:26` → `D11:26`, `D30:05` → `D30:5`, `D8:6; D9:17` → `D8:6`, `D9:17`); any other token is
/// kept as written (and dropped by [`locomo_conversations`] as no turn of the conversation).
pub fn normalize_evidence(raw: &str) -> Vec<String> {
    raw.trim()
        .split(|c: char| c == ';' || c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|token| turn_id(token).unwrap_or_else(|| token.to_owned()))
        .collect()
}

fn turn_id(token: &str) -> Option<String> {
    let rest = token.strip_prefix('D')?;
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    let (session, turn) = rest.split_once(':')?;
    let number = |s: &str| -> Option<u128> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Leading zeros go; a number too long for u128 keeps its digits.
        let trimmed = s.trim_start_matches('0');
        if trimmed.is_empty() { Some(0) } else { trimmed.parse().ok() }
    };
    Some(format!("D{}:{}", number(session)?, number(turn)?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn evidence_is_normalised_like_the_reference_evaluator() {
        assert_eq!(normalize_evidence("D1:3"), ["D1:3"]);
        assert_eq!(normalize_evidence("D:11:26"), ["D11:26"]);
        assert_eq!(normalize_evidence("D30:05"), ["D30:5"]);
        assert_eq!(normalize_evidence("D8:6; D9:17"), ["D8:6", "D9:17"]);
        assert_eq!(normalize_evidence(" D1:3,D2:4 "), ["D1:3", "D2:4"]);
        assert_eq!(normalize_evidence("D"), ["D"]);
        assert_eq!(normalize_evidence("D01:00"), ["D1:0"]);
        assert_eq!(normalize_evidence("D1:2:3"), ["D1:2:3"]);
        assert_eq!(normalize_evidence("d1:3"), ["d1:3"]);
        assert!(normalize_evidence(" ; ").is_empty());
    }

    #[test]
    fn session_dates_read_as_utc() {
        let t = |s: &str| session_start(s).map(|d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string());
        assert_eq!(t("1:56 pm on 8 May, 2023").as_deref(), Some("2023-05-08T13:56:00Z"));
        assert_eq!(t("12:48 am on 1 February, 2023").as_deref(), Some("2023-02-01T00:48:00Z"));
        assert_eq!(t("12:05 pm on 3 July, 2023").as_deref(), Some("2023-07-03T12:05:00Z"));
        assert_eq!(t("13:56 pm on 8 May, 2023"), None);
        assert_eq!(t("8 May 2023"), None);
    }

    fn sample() -> Value {
        json!([{
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann", "speaker_b": "Bo",
                "session_2_date_time": "9:00 am on 2 May, 2023",
                "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Back from Oslo."}],
                "session_1_date_time": "11:59 pm on 1 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo!"},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "Look at this",
                     "img_url": ["https://example.invalid/x.jpg"], "blip_caption": "a photo of a cat",
                     "query": "cat"}
                ],
                "session_3_date_time": "1:00 pm on 3 May, 2023"
            },
            "qa": [
                {"question": "Where was Bo?", "answer": "SECRET-ANSWER", "evidence": ["D2:01", "D9:9"], "category": 4},
                {"question": "Pet?", "adversarial_answer": "SECRET-ADVERSARIAL", "evidence": ["D:1:2; D1:2"], "category": 5}
            ],
            "event_summary": {"x": "SECRET-SUMMARY"},
            "observation": {"x": [["SECRET-OBSERVATION", "D1:1"]]},
            "session_summary": {"session_1_summary": "SECRET-SESSION"}
        }])
    }

    #[test]
    fn turns_become_records_in_session_order_and_questions_stay_apart() {
        let convs = locomo_conversations(&sample().to_string()).unwrap();
        let [c] = convs.as_slice() else { panic!("{convs:?}") };
        assert_eq!(c.sample_id, "conv-x");
        assert_eq!(c.speakers, ["Ann".to_owned(), "Bo".to_owned()]);
        assert_eq!(c.sessions, 2);
        assert_eq!(
            c.records,
            [
                json!({"event_id": "conv-x:D1:1", "event_type": "observation.message",
                    "occurred_at": "2023-05-01T23:59:00Z", "session_id": "conv-x:S1",
                    "agent_id": "Ann", "trace_id": "conv-x",
                    "payload": {"text": "Hi Bo!", "speaker": "Ann", "dia_id": "D1:1"},
                    "entities": [{"name": "Bo", "entity_type": "agent", "role": "object"}]}),
                json!({"event_id": "conv-x:D1:2", "event_type": "observation.message",
                    "occurred_at": "2023-05-01T23:59:01Z", "session_id": "conv-x:S1",
                    "agent_id": "Bo", "trace_id": "conv-x",
                    "payload": {"text": "Look at this", "speaker": "Bo", "dia_id": "D1:2",
                        "image_caption": "a photo of a cat"}}),
                json!({"event_id": "conv-x:D2:1", "event_type": "observation.message",
                    "occurred_at": "2023-05-02T09:00:00Z", "session_id": "conv-x:S2",
                    "agent_id": "Bo", "trace_id": "conv-x",
                    "payload": {"text": "Back from Oslo.", "speaker": "Bo", "dia_id": "D2:1"},
                    "entities": [{"name": "Oslo", "entity_type": "concept", "role": "object"}]}),
            ]
        );
        assert_eq!(
            c.questions,
            [
                LocomoQuestion {
                    question: "Where was Bo?".into(),
                    evidence: vec!["D2:1".into()],
                    category: 4
                },
                LocomoQuestion {
                    question: "Pet?".into(),
                    evidence: vec!["D1:2".into()],
                    category: 5
                },
            ]
        );
        let text = serde_json::to_string(&c.records).unwrap();
        assert!(!text.contains("SECRET"), "{text}");
        // One object instead of a list reads the same.
        let one = sample()[0].to_string();
        assert_eq!(locomo_conversations(&one).unwrap(), convs);
    }

    #[test]
    fn bad_values_are_all_reported() {
        let mut s = sample();
        s[0]["conversation"]["session_1_date_time"] = json!("yesterday");
        s[0]["conversation"]["session_2"][0]["speaker"] = json!("Bo Jr");
        s[0]["conversation"]["session_2_date_time"] = json!("9:00 am on 2 May, 1492");
        s[0]["conversation"]["session_4"] =
            json!([{"speaker": "Ann", "dia_id": "D2:1", "text": "x"}]);
        let Err(LocomoError::Invalid(e)) = locomo_conversations(&s.to_string()) else {
            panic!("accepted")
        };
        let got: Vec<(&str, &str)> =
            e.violations.iter().map(|v| (v.path.as_str(), v.rule)).collect();
        assert_eq!(
            got,
            [
                ("$[0].conversation.session_1_date_time", "locomo.date_format"),
                ("$[0].conversation.session_2_date_time", "locomo.date_range"),
                ("$[0].conversation.session_2[0].speaker", "locomo.id_format"),
                ("$[0].conversation.session_4_date_time", "locomo.missing_date"),
                ("$[0].conversation.session_4[0].dia_id", "locomo.duplicate_turn"),
            ]
        );
    }

    #[test]
    fn shape_errors_name_line_and_column() {
        let e = locomo_conversations("[{\"sample_id\": 3}]").unwrap_err();
        assert_eq!(e.code(), "locomo.json");
        assert!(e.to_string().contains("line 1"), "{e}");
        assert!(locomo_conversations("not json").is_err());
        assert_eq!(locomo_conversations("[]").unwrap(), []);
    }
}
