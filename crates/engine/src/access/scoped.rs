//! The choke point: a snapshot seen by one principal.
//!
//! Every interface (HTTP, MCP, the CLI with `--as`) reads through [`Scoped`]. Each method runs
//! the snapshot's read and applies the principal's policy before anything leaves: a hidden node
//! is not returned, not counted, and not walked through (a chain stops before it, an impact walk
//! does not continue from it, recall's expansion checks it before use). Derived nodes (summaries,
//! entities) are decided from their sources (`derived.rs`), by [`Scoped::may_see`] and
//! [`Scoped::shown`], which every read here uses.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_ontology::graph::{Direction, Node, NodeKey};
use ctxgraph_projection::RECEIPT;
use ctxgraph_store::GraphReader;

use super::Principal;
use crate::error::Error;
use crate::knowledge::FactView;
use crate::memory::{
    Evolution, Impact, MemoryContext, MemoryHit, MemorySearchOptions, MemoryView, Rollup,
    RollupOptions, TraversalOptions,
};
use crate::recall::{ContextPack, RecallQuery, Visibility};
use crate::snapshot::{Snapshot, TimelineEntry};

/// A [`Snapshot`] read by one principal.
pub struct Scoped<'s, 'a> {
    pub(super) snap: &'s Snapshot<'a>,
    pub(super) who: &'s Principal,
    /// Verdicts on derived nodes (summaries, entities) already decided from their sources, for
    /// the life of this view (one request): a day summary shares its sessions' summaries, and
    /// recall asks about one entity many times.
    pub(super) verdicts: RefCell<BTreeMap<NodeKey, bool>>,
}

/// What a principal may count: only what it may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScopedStats {
    /// Events it may see.
    pub events: u64,
    /// Memories it may see.
    pub memories: u64,
}

impl<'a> Snapshot<'a> {
    /// This snapshot as `who` sees it: the one place interfaces read through.
    pub fn scoped<'s>(&'s self, who: &'s Principal) -> Scoped<'s, 'a> {
        Scoped { snap: self, who, verdicts: RefCell::new(BTreeMap::new()) }
    }
}

impl Scoped<'_, '_> {
    /// Who is reading.
    pub fn principal(&self) -> &Principal {
        self.who
    }

    /// Whether the principal may see `node`: the policy on the node's own scope, then, for a
    /// node derived from others, on its sources (see `derived.rs`): a summary only when every
    /// event below it is visible (it quotes and counts them), an entity only when a record
    /// naming it is, a decision receipt only when every event it cites is (it names and
    /// summarises its inputs), so a receipt is found by search and recall exactly when the
    /// receipt listing shows it.
    pub fn may_see(&self, node: &Node) -> Result<bool, Error> {
        if self.who.is_owner() {
            return Ok(true);
        }
        if self.who.allows(node).is_err() {
            return Ok(false);
        }
        match node.key.label.as_str() {
            RECEIPT => self.inputs_visible(&node.key),
            "Summary" => self.summary_visible(&node.key),
            "Entity" => self.entity_visible(&node.key),
            _ => Ok(true),
        }
    }

    /// `node` as the principal may see it, or `None` when it may not: [`Scoped::may_see`], and
    /// an entity's counts and times left out when a record they fold is hidden. Every node an
    /// interface returns passes here.
    pub fn shown(&self, node: Node) -> Result<Option<Node>, Error> {
        if !self.may_see(&node)? {
            return Ok(None);
        }
        self.redact(node).map(Some)
    }

    /// A node, if it exists and the principal may see it (as [`Scoped::shown`] shows it).
    pub fn node(&self, key: &NodeKey) -> Result<Option<Node>, Error> {
        match self.snap.node(key)? {
            Some(n) => self.shown(n),
            None => Ok(None),
        }
    }

    /// An event with its payload, if visible.
    pub fn event(&self, event_id: &str) -> Result<Option<Node>, Error> {
        self.node(&NodeKey::new("Event", event_id))
    }

    /// A session's events in time order, only those visible; causes name visible events only.
    pub fn timeline(&self, session_id: &str, limit: usize) -> Result<Vec<TimelineEntry>, Error> {
        let mut out = Vec::new();
        // Read more than asked, since hidden events are dropped; a session is bounded anyway.
        for mut entry in self.snap.timeline(session_id, limit.saturating_mul(4).max(limit))? {
            if !self.may_see(&entry.event)? {
                continue;
            }
            let mut causes = Vec::new();
            for c in entry.caused_by {
                if self.event(&c)?.is_some() {
                    causes.push(c);
                }
            }
            entry.caused_by = causes;
            out.push(entry);
            if out.len() == limit {
                break;
            }
        }
        Ok(out)
    }

    /// The causal chain up from an event, stopping before the first hidden event (which is then
    /// reported as no further cause, not as a missing parent).
    pub fn causes(&self, event_id: &str) -> Result<(Vec<Node>, Option<String>), Error> {
        if self.event(event_id)?.is_none() {
            return Ok((Vec::new(), None));
        }
        let (chain, missing) = self.snap.causes(event_id)?;
        let mut out = Vec::new();
        for n in chain {
            if !self.may_see(&n)? {
                return Ok((out, None));
            }
            out.push(n);
        }
        Ok((out, missing))
    }

    /// Full-text search, visible results only.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<(Node, f64)>, Error> {
        let mut out = Vec::new();
        for (n, score) in self.snap.search(query, limit.saturating_mul(4).max(limit))? {
            if let Some(n) = self.shown(n)? {
                out.push((n, score));
                if out.len() == limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// The recall pipeline, with the principal checked before any node is used; the items
    /// returned as [`Scoped::shown`] shows them.
    pub fn recall(
        &self,
        query: &RecallQuery,
        query_vector: &[f32],
        search: ctxgraph_ann::SearchParams,
    ) -> Result<ContextPack, Error> {
        let mut pack = self.snap.recall_with(query, query_vector, self, search)?;
        pack.items = pack
            .items
            .into_iter()
            .map(|mut item| {
                item.node = self.redact(item.node)?;
                Ok(item)
            })
            .collect::<Result<_, Error>>()?;
        Ok(pack)
    }

    /// The facts about an entity (as subject or object), true at `as_of` (now when `None`).
    ///
    /// Facts, entities and the documents they cite carry no scope (see the `access` module
    /// documentation), so every fact of the tenant is visible; interfaces still read them here so
    /// that the policy stays the one place that decides.
    pub fn facts_about(
        &self,
        entity_id: &str,
        as_of: Option<&str>,
    ) -> Result<Vec<FactView>, Error> {
        self.snap.facts_about(entity_id, as_of)
    }

    /// Every visible memory.
    pub fn memories(&self) -> Result<Vec<MemoryView>, Error> {
        let mut out = Vec::new();
        for m in self.snap.memories()? {
            if self.memory_visible(&m.id)? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// A memory, if visible.
    pub fn memory(&self, id: &str) -> Result<Option<MemoryView>, Error> {
        if !self.memory_visible(id)? {
            return Ok(None);
        }
        self.snap.memory(id)
    }

    /// The outcomes of a visible memory.
    pub fn outcomes_of(&self, id: &str) -> Result<Vec<crate::memory::OutcomeView>, Error> {
        if !self.memory_visible(id)? {
            return Ok(Vec::new());
        }
        self.snap.outcomes_of(id)
    }

    /// The live links of a visible memory whose other end is visible too.
    pub fn memory_links(
        &self,
        id: &str,
        options: &TraversalOptions,
    ) -> Result<Vec<(ctxgraph_ontology::graph::Edge, f64)>, Error> {
        if !self.memory_visible(id)? {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (edge, confidence) in self.snap.memory_links(id, options)? {
            let other = if edge.key.from.id == id { &edge.key.to } else { &edge.key.from };
            if self.node(other)?.is_some() {
                out.push((edge, confidence));
            }
        }
        Ok(out)
    }

    /// The evolution chain of a topic, stopping before the first hidden memory; `None` when the
    /// topic's latest decision is hidden.
    pub fn evolution(
        &self,
        topic: &str,
        options: &TraversalOptions,
    ) -> Result<Option<Evolution>, Error> {
        let Some(mut evo) = self.snap.evolution(topic, options)? else { return Ok(None) };
        let mut kept = Vec::new();
        for mut step in evo.steps {
            if !self.memory_visible(&step.memory.id)? {
                break;
            }
            step.implemented_by = self.visible_ids(step.implemented_by)?;
            kept.push(step);
        }
        if kept.is_empty() {
            return Ok(None);
        }
        evo.steps = kept;
        Ok(Some(evo))
    }

    /// Impact analysis from a visible memory, not continuing through hidden ones.
    pub fn impact(&self, id: &str, options: &TraversalOptions) -> Result<Option<Impact>, Error> {
        if !self.memory_visible(id)? {
            return Ok(None);
        }
        let Some(mut impact) = self.snap.impact(id, options)? else { return Ok(None) };
        impact.items = self.reachable_items(id, impact.items)?;
        let mut superseded = Vec::new();
        for m in impact.superseded_by {
            if self.memory_visible(&m.id)? {
                superseded.push(m);
            }
        }
        impact.superseded_by = superseded;
        Ok(Some(impact))
    }

    /// Contextual memory search, visible hits only.
    pub fn search_memories(
        &self,
        query: &str,
        query_vector: &[f32],
        options: &MemorySearchOptions,
    ) -> Result<Vec<MemoryHit>, Error> {
        let mut out = Vec::new();
        for h in self.snap.search_memories(query, query_vector, options)? {
            if self.memory_visible(&h.memory.id)? {
                out.push(h);
            }
        }
        Ok(out)
    }

    /// The context of a question about decisions, built from visible memories only.
    pub fn memory_context(
        &self,
        query: &str,
        query_vector: &[f32],
        options: &MemorySearchOptions,
    ) -> Result<MemoryContext, Error> {
        let ctx = self.snap.memory_context(query, query_vector, options)?;
        let mut hits = Vec::new();
        for h in ctx.hits {
            if self.memory_visible(&h.memory.id)? {
                hits.push(h);
            }
        }
        let evolution = match ctx.evolution {
            Some(evo) => self.evolution(&evo.topic, &options.traversal)?,
            None => None,
        };
        let mut evidence = Vec::new();
        for imp in ctx.evidence {
            if let Some(i) = self.impact(&imp.start.id, &options.traversal)? {
                evidence.push(i);
            }
        }
        let mut outcomes = Vec::new();
        for o in ctx.outcomes {
            if self.memory_visible(&o.memory_id)? {
                outcomes.push(o);
            }
        }
        Ok(MemoryContext { hits, evolution, evidence, outcomes })
    }

    /// The weekly rollup over visible memories.
    pub fn rollup(
        &self,
        since_ns: i64,
        until_ns: i64,
        options: &RollupOptions,
    ) -> Result<Rollup, Error> {
        let mut r = self.snap.rollup(since_ns, until_ns, options)?;
        r.decisions = self.visible_views(r.decisions)?;
        r.open = self.visible_views(r.open)?;
        let mut outcomes = Vec::new();
        for o in r.outcomes {
            if self.memory_visible(&o.memory_id)? {
                outcomes.push(o);
            }
        }
        r.outcomes = outcomes;
        let mut blocked = Vec::new();
        for b in r.blocked {
            if self.memory_visible(&b.memory.id)? {
                blocked.push(b);
            }
        }
        r.blocked = blocked;
        let mut actions = Vec::new();
        for a in r.next_actions {
            // An `unblock` action names a blocking fact, not a memory.
            let visible = if a.action == "unblock" {
                r.blocked_by.iter().any(|f| f.fact_id == a.memory_id)
            } else {
                self.memory_visible(&a.memory_id)?
            };
            if visible {
                actions.push(a);
            }
        }
        r.next_actions = actions;
        Ok(r)
    }

    /// Decision receipts, each only when the principal may see the receipt node and every
    /// event it cites (a receipt names and summarises its inputs). The limit applies after
    /// filtering.
    pub fn receipts(&self, query: &crate::ReceiptQuery) -> Result<Vec<crate::ReceiptView>, Error> {
        let mut wider = query.clone();
        wider.limit = usize::MAX;
        let mut out = Vec::new();
        for r in self.snap.receipts(&wider)? {
            // 0: no limit, as for the snapshot's listing.
            if query.limit > 0 && out.len() >= query.limit {
                break;
            }
            // `may_see` checks the receipt and every event it cites.
            if self.node(&NodeKey::new(RECEIPT, r.record.receipt_id.clone()))?.is_some() {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// Whether every event a receipt cites (its `USED_INPUT` edges to events) is visible. A
    /// cited event missing from the graph (forgotten, archived) hides nothing: the edge waits
    /// for it and is not read here.
    pub(super) fn inputs_visible(&self, receipt: &NodeKey) -> Result<bool, Error> {
        for e in self.snap.read.edges_of(receipt, Some("USED_INPUT"), Direction::Out)? {
            if e.key.to.label != "Event" {
                continue;
            }
            if let Some(n) = self.snap.read.node(&e.key.to)?
                && self.who.allows(&n).is_err()
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Counts of what the principal may see.
    pub fn stats(&self) -> Result<ScopedStats, Error> {
        let mut stats = ScopedStats::default();
        for (label, count) in [("Event", &mut stats.events), ("Memory", &mut stats.memories)] {
            let mut after: Option<String> = None;
            loop {
                let page = self.snap.read.nodes_by_label(label, after.as_deref(), 1000)?;
                let Some(last) = page.last() else { break };
                after = Some(last.key.id.clone());
                for n in &page {
                    if self.who.allows(n).is_ok() {
                        *count += 1;
                    }
                }
            }
        }
        Ok(stats)
    }

    fn memory_visible(&self, id: &str) -> Result<bool, Error> {
        Ok(self.node(&NodeKey::new("Memory", id))?.is_some())
    }

    fn visible_ids(&self, ids: Vec<String>) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        for id in ids {
            if self.memory_visible(&id)? {
                out.push(id);
            }
        }
        Ok(out)
    }

    fn visible_views(&self, views: Vec<MemoryView>) -> Result<Vec<MemoryView>, Error> {
        let mut out = Vec::new();
        for v in views {
            if self.memory_visible(&v.id)? {
                out.push(v);
            }
        }
        Ok(out)
    }

    /// Impact items in walk order, kept only when visible and reached from the start or from a
    /// kept item: the walk does not continue through a hidden memory.
    fn reachable_items(
        &self,
        start: &str,
        items: Vec<crate::memory::ImpactItem>,
    ) -> Result<Vec<crate::memory::ImpactItem>, Error> {
        let mut reached = BTreeSet::from([start.to_owned()]);
        let mut out = Vec::new();
        for item in items {
            if reached.contains(&item.from) && self.memory_visible(&item.memory.id)? {
                reached.insert(item.memory.id.clone());
                out.push(item);
            }
        }
        Ok(out)
    }
}

impl Visibility for Scoped<'_, '_> {
    fn may_see(&self, node: &Node) -> bool {
        Scoped::may_see(self, node).unwrap_or(false)
    }
}
