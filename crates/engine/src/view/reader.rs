//! [`Reader`]: a snapshot read by one principal, the only way reads leave the engine.
//!
//! Each method runs the snapshot's read and applies the principal's policy before anything
//! leaves: a hidden node is not returned, not counted, and not walked through (a chain stops
//! before it, an impact walk does not continue from it, recall's expansion checks it before
//! use). Derived nodes (summaries, entities, receipts) are decided from their sources
//! (`derived.rs`), by [`Reader::may_see`] and [`Reader::shown`], which every read here uses.
//! A hidden node reads as an absent one: a visible event whose parent is hidden reports the
//! parent as missing, exactly as a graph without the hidden records would.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_ontology::graph::{Direction, Node, NodeKey};
use ctxgraph_projection::RECEIPT;

use crate::access::Principal;
use crate::error::Error;
use crate::knowledge::FactView;
use crate::memory::{
    Evolution, Impact, MemoryContext, MemoryHit, MemorySearchOptions, MemoryView, Rollup,
    RollupOptions, TraversalOptions,
};
use crate::recall::{ContextPack, RecallQuery};
use crate::view::{Snapshot, TimelineEntry};

/// A consistent snapshot of the store read by one principal: made by
/// [`crate::Engine::reader`], dropped at the end of a request.
pub struct Reader<'a> {
    pub(super) snap: Snap<'a>,
    pub(super) who: Principal,
    /// Verdicts on derived nodes (summaries, entities) already decided from their sources, for
    /// the life of this reader (one request): a day summary shares its sessions' summaries, and
    /// recall asks about one entity many times.
    pub(super) verdicts: RefCell<BTreeMap<NodeKey, bool>>,
}

/// What a principal may count: only what it may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VisibleCounts {
    /// Events it may see.
    pub events: u64,
    /// Memories it may see.
    pub memories: u64,
}

/// A reader's snapshot: its own, or the one of the reader it was made from (one connection
/// holds one read transaction at a time).
pub(super) enum Snap<'a> {
    Own(Snapshot<'a>),
    Shared(&'a Snapshot<'a>),
}

impl<'a> std::ops::Deref for Snap<'a> {
    type Target = Snapshot<'a>;

    fn deref(&self) -> &Snapshot<'a> {
        match self {
            Snap::Own(s) => s,
            Snap::Shared(s) => s,
        }
    }
}

impl<'a> Reader<'a> {
    /// `snap` as `who` sees it.
    pub(crate) fn new(snap: Snapshot<'a>, who: Principal) -> Reader<'a> {
        Reader { snap: Snap::Own(snap), who, verdicts: RefCell::new(BTreeMap::new()) }
    }

    /// The same snapshot as `who` sees it: to compare what two principals see at one moment
    /// (an engine's connection holds one read transaction at a time, so a second
    /// [`crate::Engine::reader`] must wait until this one is dropped).
    pub fn as_principal<'r>(&'r self, who: &Principal) -> Reader<'r> {
        Reader { snap: Snap::Shared(&self.snap), who: who.clone(), verdicts: RefCell::default() }
    }
}

impl Reader<'_> {
    /// Who is reading.
    pub fn principal(&self) -> &Principal {
        &self.who
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
            ctxgraph_projection::TOPIC
            | ctxgraph_projection::MEMORY_SESSION
            | ctxgraph_projection::OUTCOME => self.memory_group_visible(&node.key),
            "Task" | "Actor" | "Policy" | "PolicyException" => self.receipt_part_visible(&node.key),
            _ => Ok(true),
        }
    }

    /// `node` as the principal may see it, or `None` when it may not: [`Reader::may_see`], and
    /// an entity's counts and times left out when a record they fold is hidden. Every node an
    /// interface returns passes here.
    pub fn shown(&self, node: Node) -> Result<Option<Node>, Error> {
        if !self.may_see(&node)? {
            return Ok(None);
        }
        self.redact(node).map(Some)
    }

    /// A node, if it exists and the principal may see it (as [`Reader::shown`] shows it).
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

    /// A session's events in time order, only those visible. A cause that is hidden reads as
    /// one not in the log: the event's own record names its parent, so the id is no secret,
    /// and the answer is the one a graph without the hidden records gives.
    pub fn timeline(&self, session_id: &str, limit: usize) -> Result<Vec<TimelineEntry>, Error> {
        if self.who.is_owner() {
            return self.snap.timeline(session_id, limit);
        }
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
                } else if entry.missing_parent.is_none() {
                    entry.missing_parent = Some(c);
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

    /// The causal chain up from a visible event, ending before the first hidden event, which
    /// is then reported as the parent not in the log (as a graph without it would).
    pub fn causes(&self, event_id: &str) -> Result<(Vec<Node>, Option<String>), Error> {
        if self.event(event_id)?.is_none() {
            return Ok((Vec::new(), None));
        }
        let (chain, missing) = self.snap.causes(event_id)?;
        let mut out = Vec::new();
        for n in chain {
            if !self.may_see(&n)? {
                return Ok((out, Some(n.key.id)));
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
    /// returned as [`Reader::shown`] shows them.
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

    /// The evolution chain of a topic over the visible memories: it starts at the topic's
    /// newest visible decision, and a link to a hidden memory passes as no link (the chain goes
    /// on by topic order), as in a store without the hidden records. `None` when no decision on
    /// the topic is visible.
    pub fn evolution(
        &self,
        topic: &str,
        options: &TraversalOptions,
    ) -> Result<Option<Evolution>, Error> {
        self.snap.evolution(topic, options, &mut |id| self.memory_visible(id))
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

    /// Contextual memory search over the visible memories only: a hidden memory is neither
    /// scored, nor chosen as the context, nor walked through, and the limit counts visible
    /// hits.
    pub fn search_memories(
        &self,
        query: &str,
        query_vector: &[f32],
        options: &MemorySearchOptions,
    ) -> Result<Vec<MemoryHit>, Error> {
        self.snap.search_memories(query, query_vector, options, &mut |id| self.memory_visible(id))
    }

    /// The context of a question about decisions, built from visible memories only: the hits,
    /// the decision chosen from them and its chain over visible memories, the evidence walked
    /// from the chain's steps without passing a hidden memory, and the steps' outcomes.
    pub fn memory_context(
        &self,
        query: &str,
        query_vector: &[f32],
        options: &MemorySearchOptions,
    ) -> Result<MemoryContext, Error> {
        let ctx = self
            .snap
            .memory_context(query, query_vector, options, &mut |id| self.memory_visible(id))?;
        if self.who.is_owner() {
            return Ok(ctx);
        }
        let mut evidence = Vec::new();
        for imp in ctx.evidence {
            if let Some(i) = self.impact(&imp.start.id, &options.traversal)? {
                evidence.push(i);
            }
        }
        let steps: BTreeSet<&str> = ctx
            .evolution
            .iter()
            .flat_map(|e| e.steps.iter().map(|s| s.memory.id.as_str()))
            .collect();
        let outcomes =
            ctx.outcomes.into_iter().filter(|o| steps.contains(o.memory_id.as_str())).collect();
        Ok(MemoryContext { hits: ctx.hits, evolution: ctx.evolution, evidence, outcomes })
    }

    /// The weekly rollup over the visible memories only: a hidden memory is not listed,
    /// counted, nor taken to supersede a visible one.
    pub fn rollup(
        &self,
        since_ns: i64,
        until_ns: i64,
        options: &RollupOptions,
    ) -> Result<Rollup, Error> {
        self.snap.rollup(since_ns, until_ns, options, &mut |id| self.memory_visible(id))
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
            if let Some(n) = self.scope_of(&e.key.to)?
                && self.who.allows(&n).is_err()
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Counts of what the principal may see.
    pub fn stats(&self) -> Result<VisibleCounts, Error> {
        let mut stats = VisibleCounts::default();
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
