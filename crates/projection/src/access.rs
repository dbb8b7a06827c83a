//! Projection of an `access` record: each event it names counts the batch's reads.
//!
//! `access_count` is the sum of the counts and `last_accessed_at` the latest time (compared as
//! instants; equal instants written differently keep the smaller text), so batches fold in any
//! order to the same node. An event that is not in the graph (never arrived, forgotten, archived)
//! is skipped: a batch only names events a reader was shown, which the log holds before it, and a
//! forgotten or archived event has nothing left to rank.

use ctxgraph_ontology::AccessRecord;
use ctxgraph_ontology::graph::NodeKey;
use serde_json::Value;

use crate::forget::instant;
use crate::{ProjectionError, Writer};

pub(crate) fn project_access(w: &mut Writer<'_>, a: &AccessRecord) -> Result<(), ProjectionError> {
    for entry in &a.events {
        let key = NodeKey::new("Event", &entry.event_id);
        let Some(mut node) = w.graph().node(&key)? else { continue };
        let before = node.props.get("access_count").and_then(Value::as_i64).unwrap_or(0);
        let count = i64::try_from(entry.count).unwrap_or(i64::MAX);
        node.props.insert("access_count".into(), before.saturating_add(count).into());
        let later = match node.props.get("last_accessed_at").and_then(Value::as_str) {
            None => true,
            Some(old) => {
                let old_ns = instant(old);
                entry.last_accessed_ns > old_ns
                    || (entry.last_accessed_ns == old_ns && entry.last_accessed_at.as_str() < old)
            }
        };
        if later {
            node.props.insert("last_accessed_at".into(), entry.last_accessed_at.clone().into());
        }
        w.put_node(&node, false)?;
    }
    Ok(())
}
