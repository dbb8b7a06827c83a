//! Projection of a decision receipt (seed 004): a `DecisionReceipt` node with typed edges to its
//! task (`FOR_TASK`), actor (`ACTED_BY`), approvers (`APPROVED_BY`), the events and entities it
//! used (`USED_INPUT`), the policies checked (`CHECKED_POLICY`, carrying the result) and the
//! exceptions invoked (`INVOKED_EXCEPTION`, carrying the justification).
//!
//! Tasks, actors, policies and exceptions are shared nodes keyed by their ids, so receipts of one
//! task, actor or policy meet there. Referenced documents, configs and spans are not graph nodes:
//! they stay on the receipt as `other_inputs`. Every value comes from the record.

use ctxgraph_ontology::ReceiptRecord;
use ctxgraph_ontology::graph::{Edge, Node, NodeKey, Properties};
use serde_json::{Value, json};

use crate::{ProjectionError, Writer};

/// Node label of a receipt.
pub const RECEIPT: &str = "DecisionReceipt";

/// Write a shared node keyed by `key_prop` unless it exists.
fn shared(
    w: &mut Writer<'_>,
    label: &str,
    key_prop: &str,
    id: &str,
) -> Result<NodeKey, ProjectionError> {
    let key = NodeKey::new(label, id);
    if !w.graph().node_exists(&key)? {
        let mut p = Properties::new();
        p.insert(key_prop.into(), id.into());
        w.put_node(&Node { key: key.clone(), props: p }, true)?;
    }
    Ok(key)
}

fn edge(
    w: &mut Writer<'_>,
    edge_type: &str,
    from: &NodeKey,
    to: NodeKey,
    props: Properties,
) -> Edge {
    Edge { key: w.schema().edge_key(edge_type, from.clone(), to, &props), props }
}

pub(crate) fn project_receipt(
    w: &mut Writer<'_>,
    position: u64,
    r: &ReceiptRecord,
) -> Result<(), ProjectionError> {
    let key = NodeKey::new(RECEIPT, &r.receipt_id);
    let mut p = Properties::new();
    p.insert("receipt_id".into(), r.receipt_id.clone().into());
    p.insert("task".into(), r.task.clone().into());
    p.insert("actor".into(), r.actor.clone().into());
    p.insert("action".into(), r.action.clone().into());
    p.insert("status".into(), r.outcome.status.clone().into());
    if let Some(n) = &r.outcome.notes {
        p.insert("notes".into(), n.clone().into());
    }
    if !r.outcome.follow_ups.is_empty() {
        p.insert("follow_ups".into(), r.outcome.follow_ups.clone().into());
    }
    let i = &r.inputs;
    if !(i.documents.is_empty() && i.configs.is_empty() && i.spans.is_empty()) {
        p.insert(
            "other_inputs".into(),
            json!({"documents": i.documents, "configs": i.configs, "spans": i.spans}),
        );
    }
    if let Some(t) = &r.requested_at {
        p.insert("requested_at".into(), t.clone().into());
    }
    p.insert("committed_at".into(), r.committed_at.clone().into());
    p.insert("global_position".into(), position.into());
    w.put_node(&Node { key: key.clone(), props: p }, true)?;

    let task = shared(w, "Task", "task_id", &r.task)?;
    let e = edge(w, "FOR_TASK", &key, task, Properties::new());
    w.edge_with_known_ends(e, [true, true])?;
    let actor = shared(w, "Actor", "actor_id", &r.actor)?;
    let e = edge(w, "ACTED_BY", &key, actor, Properties::new());
    w.edge_with_known_ends(e, [true, true])?;
    for a in &r.approvals {
        let approver = shared(w, "Actor", "actor_id", a)?;
        let e = edge(w, "APPROVED_BY", &key, approver, Properties::new());
        w.edge_with_known_ends(e, [true, true])?;
    }
    for (label, ids) in [("Event", &i.events), ("Entity", &i.entities)] {
        for id in ids {
            let e = edge(w, "USED_INPUT", &key, NodeKey::new(label, id), Properties::new());
            w.edge_with_known_ends(e, [true, false])?;
        }
    }
    for c in &r.policies {
        let policy = shared(w, "Policy", "policy_id", &c.id)?;
        let mut props = Properties::new();
        props.insert("result".into(), Value::String(c.result.clone()));
        let e = edge(w, "CHECKED_POLICY", &key, policy, props);
        w.edge_with_known_ends(e, [true, true])?;
    }
    for x in &r.exceptions {
        let exception = shared(w, "PolicyException", "exception_id", &x.id)?;
        let mut props = Properties::new();
        props.insert("justification".into(), Value::String(x.justification.clone()));
        let e = edge(w, "INVOKED_EXCEPTION", &key, exception, props);
        w.edge_with_known_ends(e, [true, true])?;
    }
    Ok(())
}
