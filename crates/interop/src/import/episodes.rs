//! Episodes as temporal knowledge-graph memories keep them: a JSON list (or `{"episodes":
//! [...]}`) of `{name, content (or episode_body), source, source_description, reference_time
//! (or valid_at, created_at), group_id, uuid}`.
//!
//! Mapping: each episode is an event at its reference time, `observation.message` when its
//! source is `message` and `observation.input` otherwise (`text`, `json`); id its `uuid`, else
//! `episode:<digest of group, name, content and time>`; session and trace its `group_id`
//! (default `episodes`); agent the speaker of a message written `Speaker: text`, else
//! `episodes`; the content (a JSON content as its text) as the payload's `text`, with the name,
//! source and source description beside it.

use ctxgraph_ontology::Schema;
use serde_json::{Value, json};

use super::{Imported, content_id, id_part, text};

/// The default session and agent.
const DEFAULT: &str = "episodes";

/// Read the document's text.
pub fn read(_schema: &Schema, input: &str) -> Imported {
    let mut out = Imported::default();
    let shape = "a list of episodes or {\"episodes\": [...]}";
    for (n, obj) in out.json_objects(input, &["episodes"], shape, "an episode") {
        let obj = &obj;
        let Some(name) = text(obj, "name") else {
            out.refuse(
                n,
                "$.name",
                "import.required_field",
                "an episode needs a non-empty `name`".into(),
            );
            continue;
        };
        let content = match obj.get("content").or_else(|| obj.get("episode_body")) {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(v @ (Value::Object(_) | Value::Array(_))) => v.to_string(),
            _ => {
                out.refuse(
                    n,
                    "$.content",
                    "import.required_field",
                    "an episode needs its `content` (or `episode_body`)".into(),
                );
                continue;
            }
        };
        let raw_time =
            ["reference_time", "valid_at", "created_at"].iter().find_map(|k| text(obj, k));
        let Some(occurred_at) = out.item_time(n, "$.reference_time", raw_time) else { continue };
        let source = text(obj, "source").unwrap_or("text").to_lowercase();
        let group = text(obj, "group_id").and_then(id_part).unwrap_or_else(|| DEFAULT.into());
        let event_id = match text(obj, "uuid").and_then(id_part) {
            Some(id) => id,
            None => content_id("episode", &[&group, name, &content, &occurred_at]),
        };
        let speaker = (source == "message").then(|| speaker(&content)).flatten();
        let mut payload = json!({"text": content, "name": name, "source": source});
        if let Some(d) = text(obj, "source_description") {
            payload["source_description"] = d.into();
        }
        if let Some(s) = &speaker {
            payload["speaker"] = s.as_str().into();
        }
        let record = json!({
            "event_id": event_id,
            "event_type": if source == "message" { "observation.message" } else { "observation.input" },
            "occurred_at": occurred_at,
            "session_id": group,
            "trace_id": group,
            "agent_id": speaker.unwrap_or_else(|| DEFAULT.into()),
            "payload": payload,
        });
        out.events.push((n, record));
    }
    out
}

/// The speaker of a message written `Speaker: text`, as an id (at most 64 bytes before the colon).
fn speaker(content: &str) -> Option<String> {
    let (head, rest) = content.split_once(':')?;
    let head = head.trim();
    (!head.is_empty() && head.len() <= 64 && !head.contains('\n') && !rest.trim().is_empty())
        .then(|| id_part(head))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn episodes_become_events_at_their_reference_time() {
        let schema = Schema::core().unwrap();
        let input = r#"{"episodes": [
          {"name": "standup", "content": "Alice: the billing migration is blocked on the schema review", "source": "message",
           "source_description": "team chat", "reference_time": "2025-03-04T09:30:00Z", "group_id": "team-a"},
          {"name": "spec", "episode_body": {"service": "billing", "owner": "Alice"}, "source": "json", "reference_time": "2025-03-04T10:00:00+01:00"},
          {"name": "no time", "content": "x"}
        ]}"#;
        let got = read(&schema, input);
        assert_eq!(got.events.len(), 2);
        let (a, b) = (&got.events[0].1, &got.events[1].1);
        assert_eq!(
            (a["event_type"].as_str(), a["agent_id"].as_str(), a["session_id"].as_str()),
            (Some("observation.message"), Some("Alice"), Some("team-a"))
        );
        assert_eq!(b["occurred_at"], "2025-03-04T09:00:00.000Z");
        assert_eq!(b["payload"]["text"], r#"{"owner":"Alice","service":"billing"}"#);
        assert_eq!(got.refused.len(), 1);
        assert_eq!(got.refused[0].code, "import.time");
        assert_eq!(read(&schema, input).events, got.events, "ids and times come from the input");
    }
}
