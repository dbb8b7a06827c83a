//! Projection of entity decisions: the decided `SAME_AS` edge of a pair.

use ctxgraph_ontology::graph::{Edge, NodeKey, Properties};
use ctxgraph_ontology::{EntityDecision, EntityDecisionRecord, Schema};

/// The `SAME_AS` edge a decision leaves: from `entity_a` (the id that sorts first) to `entity_b`,
/// the same key entity resolution gives a candidate for the pair, so the decision replaces it.
///
/// Merged: confidence 1.0, justification `merged: <reason> (log position N)`; rejected:
/// confidence 0.0, `rejected: …`. The `decision` property tells both from candidates.
pub(crate) fn decided_edge(schema: &Schema, position: u64, d: &EntityDecisionRecord) -> Edge {
    let (decision, confidence) = match d.decision {
        EntityDecision::Merge => ("merged", 1.0),
        EntityDecision::Reject => ("rejected", 0.0),
    };
    let mut justification = decision.to_owned();
    if let Some(by) = &d.decided_by {
        justification.push_str(&format!(" by {by}"));
    }
    if let Some(reason) = d.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        justification.push_str(&format!(": {reason}"));
    }
    justification.push_str(&format!(" (log position {position})"));
    let mut props = Properties::new();
    props.insert("confidence".into(), confidence.into());
    props.insert("justification".into(), justification.into());
    props.insert("decision".into(), decision.into());
    let key = schema.edge_key(
        "SAME_AS",
        NodeKey::new("Entity", &d.entity_a),
        NodeKey::new("Entity", &d.entity_b),
        &props,
    );
    Edge { key, props }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgraph_ontology::{Limits, RecordBody, validate};
    use serde_json::json;

    fn edge(record: serde_json::Value, position: u64) -> Edge {
        let schema = Schema::core().unwrap();
        let r = validate(&schema, &Limits::default(), &record.to_string()).unwrap();
        let RecordBody::EntityDecision(d) = r.body() else { panic!("not a decision") };
        let edge = decided_edge(&schema, position, d);
        assert!(schema.check_edge(&edge).is_empty(), "{:?}", schema.check_edge(&edge));
        edge
    }

    #[test]
    fn merge_and_reject_are_decided_same_as_edges_in_canonical_direction() {
        let merged = edge(
            json!({"record_type": "entity_decision", "decision": "merge", "entity_a": "tool:b",
                "entity_b": "tool:a", "reason": "same tool", "decided_by": "alice"}),
            7,
        );
        assert_eq!(merged.key.from, NodeKey::new("Entity", "tool:a"));
        assert_eq!(merged.key.to, NodeKey::new("Entity", "tool:b"));
        assert_eq!(merged.props["confidence"], json!(1.0));
        assert_eq!(merged.props["decision"], json!("merged"));
        assert_eq!(
            merged.props["justification"],
            json!("merged by alice: same tool (log position 7)")
        );
        let rejected = edge(
            json!({"record_type": "entity_decision", "decision": "reject", "entity_a": "tool:a",
                "entity_b": "tool:b"}),
            9,
        );
        assert_eq!(rejected.key, merged.key, "one edge per pair: the later decision replaces it");
        assert_eq!(rejected.props["confidence"], json!(0.0));
        assert_eq!(rejected.props["justification"], json!("rejected (log position 9)"));
    }
}
