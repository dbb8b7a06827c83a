//! `weekly_rollup` (seed 002) over decision memory: for a time window, the decisions made, the
//! outcomes recorded, the open and blocked items at the end of the window and suggested next
//! actions.
//!
//! State is taken as of the window's end (`until`): only memories saved and outcomes recorded
//! before it count, and a memory is superseded when a memory saved before `until` has a live
//! SUPERSEDES link to it.
//! - **open**: decisions not superseded and without an outcome;
//! - **blocked**: memories not superseded whose latest outcome is `failed` or `partial` (nothing
//!   has replaced what did not work);
//! - **blocked by**: facts with the `blocked_by` predicate (seed 002) true at `until`: an entity
//!   (a project, a task) and what blocks it, with the fact's confidence and sources.
//!
//! # Next-action heuristic
//! At most `max_actions` suggestions, each memory at most once, in this order:
//! 1. `supersede`: each blocked item, `failed` before `partial`, oldest outcome first — decide
//!    what replaces it;
//! 2. `unblock`: each `blocked_by` fact, most confident first, then oldest — remove what blocks
//!    the entity;
//! 3. `record_outcome`: each open decision saved at least `stale_days` before `until`, oldest
//!    first — say how it went;
//! 4. `checkpoint`: each other open decision that no memory implements, oldest first — record the
//!    progress made on it.

use ctxgraph_ontology::graph::{Direction, NodeKey};
use ctxgraph_projection::MEMORY;

use super::traverse::TraversalOptions;
use super::{MemoryView, OutcomeView, all_memories, votes_on};
use crate::error::Error;
use crate::view::Snapshot;

/// A blocked item: a memory and the outcome that blocks it.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupItem {
    /// The memory.
    pub memory: MemoryView,
    /// Its latest outcome (`failed` or `partial`).
    pub outcome: OutcomeView,
}

/// A suggested next action.
#[derive(Debug, Clone, PartialEq)]
pub struct NextAction {
    /// `supersede`, `unblock`, `record_outcome` or `checkpoint`.
    pub action: &'static str,
    /// The memory it is about (for `unblock`, the blocking fact's id).
    pub memory_id: String,
    /// What to do, in words.
    pub text: String,
}

/// The rollup of a window.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollup {
    /// Start of the window (inclusive), ns since the epoch.
    pub since_ns: i64,
    /// End of the window (exclusive), ns since the epoch.
    pub until_ns: i64,
    /// Decisions saved in the window, oldest first.
    pub decisions: Vec<MemoryView>,
    /// Outcomes recorded in the window, oldest first.
    pub outcomes: Vec<OutcomeView>,
    /// Open decisions at the end of the window, oldest first.
    pub open: Vec<MemoryView>,
    /// Blocked items at the end of the window, oldest first.
    pub blocked: Vec<RollupItem>,
    /// `blocked_by` facts true at the end of the window, most confident first.
    pub blocked_by: Vec<crate::FactView>,
    /// Suggested next actions (see the module docs).
    pub next_actions: Vec<NextAction>,
}

/// Rollup settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupOptions {
    /// An open decision this old at the end of the window is due an outcome (7 days).
    pub stale_days: i64,
    /// Most suggestions (10).
    pub max_actions: usize,
    /// How links are read.
    pub traversal: TraversalOptions,
}

impl Default for RollupOptions {
    fn default() -> Self {
        RollupOptions { stale_days: 7, max_actions: 10, traversal: TraversalOptions::default() }
    }
}

fn label(m: &MemoryView) -> String {
    match &m.topic {
        Some(t) => format!("`{}` ({t}: {})", m.id, m.content),
        None => format!("`{}` ({})", m.id, m.content),
    }
}

impl Snapshot<'_> {
    /// `blocked_by` facts true at `until_ns`, most confident first, then oldest claim, then id.
    fn blocked_by_facts(&self, until_ns: i64) -> Result<Vec<crate::FactView>, Error> {
        let until = chrono::DateTime::from_timestamp_nanos(until_ns).to_rfc3339();
        let query = crate::FactQuery {
            as_of: crate::parse_time(&until),
            predicate: Some("blocked_by".to_owned()),
            ..crate::FactQuery::default()
        };
        let mut facts = self.facts(&query)?;
        facts.sort_by(|a, b| {
            b.confidence
                .total_cmp(&a.confidence)
                .then_with(|| a.asserted.0.cmp(&b.asserted.0))
                .then_with(|| a.fact_id.cmp(&b.fact_id))
        });
        Ok(facts)
    }

    /// The rollup of `[since_ns, until_ns)` over the memories `keep` accepts; see the module
    /// docs. A memory is superseded only by one that is kept, so a decision whose successor
    /// the caller may not see is still open to it.
    pub(crate) fn rollup(
        &self,
        since_ns: i64,
        until_ns: i64,
        options: &RollupOptions,
        keep: &mut dyn FnMut(&str) -> Result<bool, Error>,
    ) -> Result<Rollup, Error> {
        let t = TraversalOptions { as_of_ns: Some(until_ns), ..options.traversal.clone() };
        let as_of = until_ns;
        let mut r = Rollup {
            since_ns,
            until_ns,
            decisions: Vec::new(),
            outcomes: Vec::new(),
            open: Vec::new(),
            blocked: Vec::new(),
            blocked_by: self.blocked_by_facts(until_ns)?,
            next_actions: Vec::new(),
        };
        let mut unimplemented = Vec::new();
        for m in all_memories(&*self.read)? {
            if m.created_at_ns >= until_ns || !keep(&m.id)? {
                continue;
            }
            if m.kind == "decision" && m.created_at_ns >= since_ns {
                r.decisions.push(m.clone());
            }
            let outcomes: Vec<OutcomeView> =
                if m.outcome.is_some() { self.outcomes_of(&m.id)? } else { Vec::new() }
                    .into_iter()
                    .filter(|o| o.at_ns < until_ns)
                    .collect();
            r.outcomes.extend(outcomes.iter().filter(|o| o.at_ns >= since_ns).cloned());
            let key = NodeKey::new(MEMORY, &m.id);
            let votes = votes_on(&*self.read, &m)?;
            let mut superseded = false;
            for e in self.read.edges_of(&key, Some("SUPERSEDES"), Direction::In)? {
                let vote =
                    votes.get(&(e.key.from.id.clone(), e.key.to.id.clone(), "SUPERSEDES".into()));
                if t.links.effective(&e, vote, as_of).is_none() {
                    continue;
                }
                if keep(&e.key.from.id)?
                    && self.memory(&e.key.from.id)?.is_some_and(|s| s.created_at_ns < until_ns)
                {
                    superseded = true;
                    break;
                }
            }
            if superseded {
                continue;
            }
            match outcomes.last() {
                Some(o) if o.outcome == "failed" || o.outcome == "partial" => {
                    r.blocked.push(RollupItem { memory: m.clone(), outcome: o.clone() })
                }
                Some(_) => {}
                None if m.kind == "decision" => {
                    let implemented = self
                        .read
                        .edges_of(&key, Some("IMPLEMENTS"), Direction::In)?
                        .into_iter()
                        .any(|e| e.key.from.label == MEMORY);
                    if !implemented {
                        unimplemented.push(m.id.clone());
                    }
                    r.open.push(m);
                }
                None => {}
            }
        }
        r.outcomes.sort_by(|a, b| (a.at_ns, &a.id).cmp(&(b.at_ns, &b.id)));
        r.blocked.sort_by(|a, b| {
            (a.outcome.outcome != "failed", a.outcome.at_ns, &a.memory.id).cmp(&(
                b.outcome.outcome != "failed",
                b.outcome.at_ns,
                &b.memory.id,
            ))
        });
        let mut actions = Vec::new();
        for b in &r.blocked {
            actions.push(NextAction {
                action: "supersede",
                memory_id: b.memory.id.clone(),
                text: format!(
                    "decide what replaces {}: its outcome was {} ({})",
                    label(&b.memory),
                    b.outcome.outcome,
                    b.outcome.reason
                ),
            });
        }
        for f in &r.blocked_by {
            let by = match (&f.object, &f.literal) {
                (Some(o), _) => o.name.clone(),
                (None, Some(v)) => v.to_string(),
                (None, None) => String::new(),
            };
            actions.push(NextAction {
                action: "unblock",
                memory_id: f.fact_id.clone(),
                text: format!(
                    "unblock {}: it is blocked by {by} (confidence {:.2})",
                    f.subject.name, f.confidence
                ),
            });
        }
        let stale_ns = options.stale_days.saturating_mul(86_400_000_000_000);
        let mut due = Vec::new();
        for m in &r.open {
            let age = until_ns.saturating_sub(m.created_at_ns);
            if age >= stale_ns {
                due.push(m.id.clone());
                actions.push(NextAction {
                    action: "record_outcome",
                    memory_id: m.id.clone(),
                    text: format!(
                        "record the outcome of {}, open for {} days",
                        label(m),
                        age / 86_400_000_000_000
                    ),
                });
            }
        }
        for m in &r.open {
            if unimplemented.contains(&m.id) && !due.contains(&m.id) {
                actions.push(NextAction {
                    action: "checkpoint",
                    memory_id: m.id.clone(),
                    text: format!("record progress on {}: nothing implements it yet", label(m)),
                });
            }
        }
        actions.truncate(options.max_actions);
        r.next_actions = actions;
        Ok(r)
    }
}
