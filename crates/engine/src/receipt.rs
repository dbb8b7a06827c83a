//! Decision receipts (seed 004), the engine side: write-time checks, indexing as provenance
//! anchors, and the receipt query.
//!
//! A receipt may cite only events and entities that exist (in the graph, or earlier in its
//! batch): a receipt is evidence, and evidence that points nowhere is refused like a link to a
//! missing memory. Documents, configs and spans are other systems' ids and are kept as given.
//!
//! `Engine::add_receipts` embeds each new receipt's text and indexes it for full-text search, so
//! recall's prefilter can return a receipt as it returns an event or a memory; stage 2 indexes
//! it again when it reaches the record (after a reprojection too), and `consolidate` indexes
//! every receipt still without a vector (see `indexed`). Recall's expansion walks the
//! receipt edges (see `recall/intent.rs`): from a receipt to its inputs, policies and approvers,
//! and from an input back to the receipts that cited it.

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::{Direction, Node, NodeKey};
use ctxgraph_ontology::{ReceiptRecord, RecordBody, RecordKind, ValidRecord, Violation};
use ctxgraph_projection::RECEIPT;
use ctxgraph_store::GraphReader;

use crate::engine::{Engine, decode};
use crate::error::Error;
use crate::ingest::IngestOutcome;
use crate::view::Snapshot;

/// The events and entities a receipt cites that exist neither in the graph nor earlier in its
/// batch (`mentioned`: entity ids, and event ids behind a NUL), as violations.
pub(crate) fn missing_inputs(
    w: &dyn GraphReader,
    r: &ReceiptRecord,
    mentioned: &BTreeSet<String>,
) -> Result<Option<Vec<Violation>>, Error> {
    let mut out = Vec::new();
    for (i, id) in r.inputs.events.iter().enumerate() {
        if !mentioned.contains(&format!("event\u{0}{id}"))
            && !w.node_exists(&NodeKey::new("Event", id))?
        {
            out.push(Violation::for_str(
                format!("$.referenced_inputs.events[{i}]"),
                id,
                "receipt.unknown_input",
                "no such event: a receipt cites events that exist",
            ));
        }
    }
    for (i, id) in r.inputs.entities.iter().enumerate() {
        if !mentioned.contains(id) && !w.node_exists(&NodeKey::new("Entity", id))? {
            out.push(Violation::for_str(
                format!("$.referenced_inputs.entities[{i}]"),
                id,
                "receipt.unknown_input",
                "no such entity: a receipt cites entities that exist",
            ));
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// A policy filter of a receipt query: `ID` (any result) or `ID=allow|deny` (also `allowed`,
/// `pass`, `denied`, `fail`, `blocked`, ...). `None` when the result is neither.
pub fn policy_filter(text: &str) -> Option<(String, Option<String>)> {
    match text.split_once('=') {
        None => Some((text.to_owned(), None)),
        Some((id, result)) => {
            let result = match result.trim().to_ascii_lowercase().as_str() {
                "allow" | "allowed" | "pass" | "passed" => "allow",
                "deny" | "denied" | "fail" | "failed" | "block" | "blocked" => "deny",
                _ => return None,
            };
            Some((id.to_owned(), Some(result.to_owned())))
        }
    }
}

impl ReceiptView {
    /// The receipt in seed 004's layout, with its id and log position: what the CLI prints and
    /// the HTTP API returns.
    pub fn to_json(&self) -> serde_json::Value {
        let r = &self.record;
        serde_json::json!({
            "receipt_id": r.receipt_id,
            "position": self.position,
            "task": r.task,
            "actor": r.actor,
            "approvals": r.approvals,
            "referenced_inputs": {"events": r.inputs.events, "entities": r.inputs.entities,
                "documents": r.inputs.documents, "configs": r.inputs.configs, "spans": r.inputs.spans},
            "policies_checked": r.policies.iter().map(|p| serde_json::json!({"id": p.id, "result": p.result})).collect::<Vec<_>>(),
            "exceptions": r.exceptions.iter().map(|e| serde_json::json!({"id": e.id, "justification": e.justification})).collect::<Vec<_>>(),
            "action": r.action,
            "outcome": {"status": r.outcome.status, "notes": r.outcome.notes, "follow_ups": r.outcome.follow_ups},
            "timestamps": {"requested": r.requested_at, "committed": r.committed_at},
        })
    }
}

impl Engine {
    /// Write receipt records; each new one is embedded and indexed, so retrieval finds it.
    ///
    /// A receipt citing an event or entity that does not exist is refused (a validation error
    /// naming the field, rule `receipt.unknown_input`) and nothing of it is written.
    ///
    /// On a remote store the cited events and entities may be folded or still in the log's
    /// unfolded tail; the receipts are appended in one batch and waited for until folded (at
    /// most [`crate::REMOTE_FOLD_WAIT`]), and stage 2 indexes them.
    pub fn add_receipts(
        &mut self,
        records: &[ValidRecord],
    ) -> Result<Vec<Result<IngestOutcome, Error>>, Error> {
        let outcomes = self.ingest_batch(records, crate::Projection::Inline, false)?;
        if self.is_remote() {
            self.await_fold(outcomes.iter().flatten())?;
            return Ok(outcomes);
        }
        let new: Vec<&RecordBody> = records
            .iter()
            .zip(&outcomes)
            .filter(|(r, o)| {
                matches!((r.body(), o), (RecordBody::Receipt(_), Ok(IngestOutcome::New(_))))
            })
            .map(|(r, _)| r.body())
            .collect();
        self.index_records(&new)?;
        Ok(outcomes)
    }
}

/// Which receipts to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiptQuery {
    /// Only receipts of this task.
    pub task: Option<String>,
    /// Only receipts by this actor.
    pub actor: Option<String>,
    /// Only receipts committed at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only receipts committed at or before this time (RFC 3339).
    pub until: Option<String>,
    /// Only receipts that checked this policy, with this result when given (`allow`, `deny`).
    pub policy: Option<(String, Option<String>)>,
    /// At most this many (0: no limit).
    pub limit: usize,
}

/// A receipt as read back: the stored record with its log position.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiptView {
    /// Log position of the receipt record.
    pub position: u64,
    /// The receipt as validated and stored.
    pub record: ReceiptRecord,
}

fn ns(t: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(t).ok()?.timestamp_nanos_opt()
}

impl Snapshot<'_> {
    /// Receipts matching `query`, newest committed first (then id). A task, actor or policy
    /// narrows the read to that node's receipts; otherwise every receipt is read.
    pub(crate) fn receipts(&self, query: &ReceiptQuery) -> Result<Vec<ReceiptView>, Error> {
        let bound = |t: &Option<String>, what: &str| -> Result<Option<i64>, Error> {
            t.as_deref()
                .map(|t| {
                    ns(t).ok_or_else(|| {
                        Error::Validation(
                            vec![Violation::for_str(
                                what,
                                t,
                                "receipt.query_time",
                                "must be an RFC 3339 timestamp with an offset",
                            )]
                            .into(),
                        )
                    })
                })
                .transpose()
        };
        let (since, until) = (bound(&query.since, "since")?, bound(&query.until, "until")?);
        let hub = match (&query.task, &query.actor, &query.policy) {
            (Some(t), _, _) => Some((NodeKey::new("Task", t), "FOR_TASK")),
            (None, Some(a), _) => Some((NodeKey::new("Actor", a), "ACTED_BY")),
            (None, None, Some((p, _))) => Some((NodeKey::new("Policy", p), "CHECKED_POLICY")),
            (None, None, None) => None,
        };
        let keys: Vec<NodeKey> = match hub {
            Some((hub, edge_type)) => self
                .read
                .edges_of(&hub, Some(edge_type), Direction::In)?
                .into_iter()
                .map(|e| e.key.from)
                .collect(),
            None => {
                let mut keys = Vec::new();
                let mut after: Option<String> = None;
                loop {
                    let page: Vec<Node> =
                        self.read.nodes_by_label(RECEIPT, after.as_deref(), 1000)?;
                    let Some(last) = page.last() else { break };
                    after = Some(last.key.id.clone());
                    keys.extend(page.into_iter().map(|n| n.key));
                }
                keys
            }
        };
        let mut out = Vec::new();
        for key in keys {
            let Some(entry) = self.read.get(RecordKind::Receipt, &key.id)? else { continue };
            let RecordBody::Receipt(r) = decode(self.schema(), &entry)?.body().clone() else {
                continue;
            };
            let at = r.committed_at_ns;
            let keep = query.task.as_ref().is_none_or(|t| *t == r.task)
                && query.actor.as_ref().is_none_or(|a| *a == r.actor)
                && since.is_none_or(|s| at >= s)
                && until.is_none_or(|u| at <= u)
                && query.policy.as_ref().is_none_or(|(id, result)| {
                    r.policies.iter().any(|p| {
                        p.id == *id && result.as_ref().is_none_or(|want| *want == p.result)
                    })
                });
            if keep {
                out.push((at, ReceiptView { position: entry.position, record: r }));
            }
        }
        out.sort_by(|a, b| {
            b.0.cmp(&a.0).then_with(|| a.1.record.receipt_id.cmp(&b.1.record.receipt_id))
        });
        let mut out: Vec<ReceiptView> = out.into_iter().map(|(_, v)| v).collect();
        if query.limit > 0 {
            out.truncate(query.limit);
        }
        Ok(out)
    }
}
