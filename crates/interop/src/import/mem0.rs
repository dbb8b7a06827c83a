//! A memory-layer export: a JSON list (or `{"results": [...]}`, `{"memories": [...]}`) of
//! `{id, memory, user_id, agent_id, run_id, created_at, updated_at, metadata, categories}`.
//!
//! Mapping: each memory is an `observation.input` event at its `created_at` (else
//! `updated_at`); id `mem0:<id>:<digest of text and update time>`, so an updated memory is a new
//! event beside the old one; session and trace its `run_id`, else `mem0:<user_id>`, else
//! `mem0:<agent_id>`, else `mem0`; agent its `agent_id` (default `mem0`), user its `user_id`;
//! the memory as the payload's `text` with its metadata, categories and update time. Each is
//! also a memory of kind `context` with the same id, created by `llm` (a memory layer extracts
//! its memories with a model) at the same time, in the same session, its first category as the
//! topic.

use ctxgraph_ontology::Schema;
use serde_json::{Value, json};

use super::{Imported, content_id, id_part, text};

/// Prefix of ids and default agent and session.
const SOURCE: &str = "mem0";

/// Read the document's text.
pub fn read(_schema: &Schema, input: &str) -> Imported {
    let mut out = Imported::default();
    let shape = "a list of memories, {\"results\": [...]} or {\"memories\": [...]}";
    for (n, obj) in out.json_objects(input, &["results", "memories"], shape, "a memory") {
        let obj = &obj;
        let Some(memory) = text(obj, "memory").or_else(|| text(obj, "text")) else {
            out.refuse(
                n,
                "$.memory",
                "import.required_field",
                "a memory needs a non-empty `memory`".into(),
            );
            continue;
        };
        let raw_time = text(obj, "created_at").or_else(|| text(obj, "updated_at"));
        let Some(occurred_at) = out.item_time(n, "$.created_at", raw_time) else { continue };
        let updated = text(obj, "updated_at").unwrap_or("");
        let user = text(obj, "user_id").and_then(id_part);
        let agent = text(obj, "agent_id").and_then(id_part);
        let digest = content_id(SOURCE, &[memory, updated]);
        let event_id = match text(obj, "id").and_then(id_part) {
            Some(id) => format!("{SOURCE}:{id}:{}", &digest[SOURCE.len() + 1..]),
            None => digest,
        };
        let session =
            text(obj, "run_id").and_then(id_part).unwrap_or_else(|| match (&user, &agent) {
                (Some(u), _) => format!("{SOURCE}:{u}"),
                (None, Some(a)) => format!("{SOURCE}:{a}"),
                (None, None) => SOURCE.to_owned(),
            });
        let mut payload = json!({"text": memory, "source": SOURCE});
        for key in ["metadata", "categories"] {
            if let Some(v) = obj.get(key).filter(|v| !v.is_null()) {
                payload[key] = v.clone();
            }
        }
        if !updated.is_empty() {
            payload["updated_at"] = updated.into();
        }
        let mut record = json!({
            "event_id": event_id,
            "event_type": "observation.input",
            "occurred_at": occurred_at,
            "session_id": session,
            "trace_id": session,
            "agent_id": agent.unwrap_or_else(|| SOURCE.into()),
            "payload": payload,
        });
        if let Some(u) = user {
            record["user_id"] = u.into();
        }
        let mut memory = json!({
            "record_type": "memory",
            "memory_id": event_id,
            "kind": "context",
            "content": memory,
            "created_by": "llm",
            "session_id": session,
            "created_at": occurred_at,
        });
        let topic = obj.get("categories").and_then(Value::as_array).and_then(|c| c.first());
        if let Some(t) = topic.and_then(Value::as_str).filter(|t| !t.trim().is_empty()) {
            memory["topic"] = t.into();
        }
        out.memories.push((n, memory));
        out.events.push((n, record));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_become_events_and_an_update_is_a_new_one() {
        let schema = Schema::core().unwrap();
        let input = r#"{"results": [
          {"id": "m1", "memory": "Prefers vegetarian food", "user_id": "alice", "created_at": "2024-07-20T10:00:00-07:00",
           "updated_at": null, "metadata": {"channel": "chat"}, "categories": ["food"]},
          {"id": "m1", "memory": "Prefers vegan food", "user_id": "alice", "created_at": "2024-07-20T10:00:00-07:00",
           "updated_at": "2024-08-01T00:00:00Z"},
          {"id": "m2", "memory": "", "created_at": "2024-07-20T10:00:00Z"}
        ]}"#;
        let got = read(&schema, input);
        assert_eq!(got.events.len(), 2);
        let (a, b) = (&got.events[0].1, &got.events[1].1);
        assert_eq!(
            (a["session_id"].as_str(), a["user_id"].as_str(), a["agent_id"].as_str()),
            (Some("mem0:alice"), Some("alice"), Some("mem0"))
        );
        assert_eq!(a["occurred_at"], "2024-07-20T17:00:00.000Z");
        assert_ne!(a["event_id"], b["event_id"]);
        assert!(a["event_id"].as_str().unwrap().starts_with("mem0:m1:"));
        assert_eq!(got.refused[0].code, "import.required_field");
        let m = &got.memories[0].1;
        assert_eq!(
            (m["memory_id"].clone(), m["topic"].clone(), m["kind"].clone()),
            (a["event_id"].clone(), json!("food"), json!("context"))
        );
    }
}
