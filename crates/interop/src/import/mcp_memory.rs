//! The MCP memory server's knowledge graph file (`memory.jsonl`): one JSON object per line,
//! `{"type": "entity", "name", "entityType", "observations": [...]}` or
//! `{"type": "relation", "from", "to", "relationType"}`.
//!
//! Mapping:
//! - each observation of an entity is an `observation.input` event: id
//!   `mcp-memory:<digest of entity name and observation>`, session `mcp-memory:<entity name>`
//!   (its observations in file order, 1 ms apart from the import time `at`, since the file
//!   keeps no times), agent `mcp-memory`, the observation as the payload's `text` with the
//!   entity's name and type, and the entity referenced as its `object`;
//! - each observation is also a fact `entity observation "text"` whose source is that event's
//!   id, so the entity's facts (`fact about`, `recall_entity`) list its observations with where
//!   they come from;
//! - an entity without observations is one event whose text is its name, so it exists;
//! - the entity type maps onto the schema's (`person` is `user`; unknown types are `concept`,
//!   the original kept in the payload);
//! - each relation is a fact `from relationType to`, source `mcp-memory`, with the relation
//!   type as a predicate (lower_snake_case; declared by the caller when the schema lacks it);
//!   an end not declared as an entity in the file is a `concept`.

use std::collections::BTreeMap;

use ctxgraph_ontology::Schema;
use serde_json::{Value, json};

use super::{Claim, Imported, content_id, entity_type, id_part, predicate_name, text, time};

/// The agent and source name of imported observations and relations.
pub const SOURCE: &str = "mcp-memory";
/// The predicate of an observation fact (a string-valued predicate).
pub const OBSERVATION: &str = "observation";

/// Read the file's text; `at` (RFC 3339) is the time given to observations.
pub fn read(schema: &Schema, input: &str, at: &str) -> Imported {
    let mut out = Imported::default();
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut relations = Vec::new();
    for (n, line) in (1_u64..).zip(input.lines()) {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                out.refuse(n, "$", "import.json", format!("not a JSON object: {e}"));
                continue;
            }
        };
        let Some(obj) = value.as_object() else {
            out.refuse(n, "$", "import.json", "not a JSON object".into());
            continue;
        };
        match obj.get("type").and_then(Value::as_str) {
            Some("entity") => {
                let (Some(name), Some(raw_type)) = (text(obj, "name"), text(obj, "entityType"))
                else {
                    out.refuse(
                        n,
                        "$.name",
                        "import.required_field",
                        "an entity needs a non-empty `name` and `entityType`".into(),
                    );
                    continue;
                };
                let observations: Vec<&str> = match obj.get("observations") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
                        .iter()
                        .filter_map(Value::as_str)
                        .filter(|s| !s.trim().is_empty())
                        .collect(),
                    Some(other) => {
                        out.refuse(
                            n,
                            "$.observations",
                            "import.type",
                            format!("{other} is not a list of strings"),
                        );
                        continue;
                    }
                };
                let ty = entity_type(schema, raw_type);
                types.insert(name.to_owned(), ty.clone());
                let Some(session) = id_part(name) else { continue };
                let observed = !observations.is_empty();
                let texts = if observed { observations } else { vec![name] };
                for (i, obs) in (0_i64..).zip(texts) {
                    let Some(occurred_at) = time(at, i) else {
                        out.refuse(
                            n,
                            "at",
                            "import.time",
                            format!("{at:?} is not an RFC 3339 time"),
                        );
                        break;
                    };
                    let session_id = format!("{SOURCE}:{session}");
                    let event_id = content_id(SOURCE, &[name, obs]);
                    if observed {
                        out.uses(schema, OBSERVATION, "literal");
                        out.claims.push(Claim {
                            item: n,
                            subject: name.to_owned(),
                            subject_type: ty.clone(),
                            predicate: OBSERVATION.to_owned(),
                            object: obs.to_owned(),
                            object_type: None,
                            source: event_id.clone(),
                        });
                    }
                    out.events.push((n, json!({
                        "event_id": event_id,
                        "event_type": "observation.input",
                        "occurred_at": occurred_at,
                        "session_id": session_id,
                        "trace_id": session_id,
                        "agent_id": SOURCE,
                        "payload": {"text": obs, "entity": name, "entity_type": raw_type, "source": SOURCE},
                        "entities": [{"name": name, "entity_type": ty, "role": "object"}],
                    })));
                }
            }
            Some("relation") => {
                let (Some(from), Some(to), Some(rel)) =
                    (text(obj, "from"), text(obj, "to"), text(obj, "relationType"))
                else {
                    out.refuse(
                        n,
                        "$",
                        "import.required_field",
                        "a relation needs non-empty `from`, `to` and `relationType`".into(),
                    );
                    continue;
                };
                let Some(predicate) = predicate_name(rel) else {
                    out.refuse(
                        n,
                        "$.relationType",
                        "import.predicate",
                        format!("{rel:?} has no letter or digit to name a predicate"),
                    );
                    continue;
                };
                relations.push((n, from.to_owned(), predicate, to.to_owned()));
            }
            other => out.refuse(
                n,
                "$.type",
                "import.record_type",
                format!(
                    "{} is not `entity` or `relation`",
                    other.map_or("nothing".into(), |t| format!("{t:?}"))
                ),
            ),
        }
    }
    for (item, subject, predicate, object) in relations {
        out.uses(schema, &predicate, "entity");
        let type_of = |name: &str| types.get(name).cloned().unwrap_or_else(|| "concept".into());
        out.claims.push(Claim {
            item,
            subject_type: type_of(&subject),
            object_type: Some(type_of(&object)),
            subject,
            predicate,
            object,
            source: SOURCE.to_owned(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_observations_and_relations() {
        let schema = Schema::core().unwrap();
        let input = r#"{"type":"entity","name":"John_Smith","entityType":"person","observations":["Speaks fluent Spanish","Graduated in 2019"]}
{"type":"entity","name":"Anthropic","entityType":"organization","observations":[]}
{"type":"relation","from":"John_Smith","to":"Anthropic","relationType":"works_at"}
{"type":"relation","from":"John_Smith","to":"Anthropic"}
not json
"#;
        let got = read(&schema, input, "2025-01-01T00:00:00Z");
        assert_eq!(got.events.len(), 3);
        let first = &got.events[0].1;
        assert_eq!(first["payload"]["text"], "Speaks fluent Spanish");
        assert_eq!(first["entities"][0]["entity_type"], "user");
        assert_eq!(got.events[1].1["occurred_at"], "2025-01-01T00:00:00.001Z");
        assert_eq!(got.events[2].1["entities"][0]["entity_type"], "concept");
        // Two observations and one relation.
        assert_eq!(got.claims.len(), 3);
        let obs = &got.claims[0];
        assert_eq!(
            (obs.predicate.as_str(), obs.object.as_str(), obs.object_type.as_ref()),
            ("observation", "Speaks fluent Spanish", None)
        );
        assert_eq!(Some(obs.source.as_str()), first["event_id"].as_str());
        let rel = &got.claims[2];
        assert_eq!((rel.subject_type.as_str(), rel.predicate.as_str()), ("user", "works_at"));
        assert_eq!(got.predicates.get("works_at"), Some(&"entity"));
        assert_eq!(got.predicates.get("observation"), Some(&"literal"));
        let codes: Vec<_> = got.refused.iter().map(|r| (r.item, r.code)).collect();
        assert_eq!(codes, [(4, "import.required_field"), (5, "import.json")]);
        // Ids come from content: the same file at another time gives the same ids.
        let again = read(&schema, input, "2026-01-01T00:00:00Z");
        assert_eq!(again.events[0].1["event_id"], first["event_id"]);
    }
}
