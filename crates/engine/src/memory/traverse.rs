//! The traversals of seed 003 on a [`Snapshot`]: a topic's decision evolution chain and a
//! memory's impact. Both are expansions with fixed edge sets, bounded in depth and size.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ctxgraph_ontology::graph::{Direction, Edge, NodeKey};
use ctxgraph_projection::{MEMORY, OUTCOME, TOPIC, topic_id};
use serde_json::Value;

use super::{MemoryOptions, MemoryView, OutcomeView, is_automatic, votes_of, votes_on};
use crate::error::Error;
use crate::view::Snapshot;

/// How a traversal reads links.
#[derive(Debug, Clone, PartialEq)]
pub struct TraversalOptions {
    /// Link settings: decay, pruning, down-votes.
    pub links: MemoryOptions,
    /// The time at which link confidences are decayed, in nanoseconds since the epoch; `None`:
    /// now.
    pub as_of_ns: Option<i64>,
    /// Deepest evolution chain followed (10, seed 003).
    pub max_evolution_depth: usize,
    /// Deepest impact expansion (5, seed 003).
    pub max_impact_depth: usize,
    /// Impact follows memories saved at most this long after the start (1 week, seed 003).
    pub impact_window_ms: i64,
    /// Most memories an impact analysis returns.
    pub max_impact_items: usize,
}

impl Default for TraversalOptions {
    fn default() -> Self {
        TraversalOptions {
            links: MemoryOptions::default(),
            as_of_ns: None,
            max_evolution_depth: 10,
            max_impact_depth: 5,
            impact_window_ms: 7 * 24 * 3_600_000,
            max_impact_items: 200,
        }
    }
}

impl TraversalOptions {
    pub(crate) fn as_of(&self) -> i64 {
        self.as_of_ns
            .unwrap_or_else(|| chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX))
    }
}

/// One decision of an evolution chain.
#[derive(Debug, Clone, PartialEq)]
pub struct EvolutionStep {
    /// The decision.
    pub memory: MemoryView,
    /// Its outcomes, oldest first.
    pub outcomes: Vec<OutcomeView>,
    /// Ids of the memories that implement it (live IMPLEMENTS links into it), in id order.
    pub implemented_by: Vec<String>,
    /// The effective confidence of the link from the previous (newer) step to this one; `None`
    /// for the first step and for a step reached by topic order alone.
    pub link_confidence: Option<f64>,
    /// How this step was reached from the previous one: `supersedes` (a SUPERSEDES link),
    /// `relates_to` (the topic's next older decision, with a RELATES_TO link between the two) or
    /// `same_topic` (the topic's next older decision, with no link); `None` for the first step.
    pub via: Option<&'static str>,
    /// Whether that link was made explicitly (a `supersedes` or an explicit link record), not by
    /// an automatic rule or by topic order alone.
    pub explicit: bool,
}

/// A topic's decision evolution chain: the newest decision back through SUPERSEDES, then the
/// topic's older decisions in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Evolution {
    /// The topic as first written.
    pub topic: String,
    /// Newest first: `steps[0]` is the decision in force, each next step the one it superseded.
    pub steps: Vec<EvolutionStep>,
}

/// A memory reached by impact analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct ImpactItem {
    /// The memory.
    pub memory: MemoryView,
    /// The edge type that reached it: IMPLEMENTS, OUTCOME_OF or TEMPORAL.
    pub via: String,
    /// The memory it was reached from.
    pub from: String,
    /// Hops from the start.
    pub depth: usize,
    /// The effective confidence of the link that reached it.
    pub confidence: f64,
}

/// What happened after a memory: seed 003's impact analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct Impact {
    /// The start.
    pub start: MemoryView,
    /// Memories reached, in the order found (breadth first; within a node: IMPLEMENTS, OUTCOME_OF,
    /// TEMPORAL, then id).
    pub items: Vec<ImpactItem>,
    /// Outcomes recorded on the start or any memory reached, oldest first.
    pub outcomes: Vec<OutcomeView>,
    /// Memories that supersede the start.
    pub superseded_by: Vec<MemoryView>,
}

impl Snapshot<'_> {
    /// Every memory, oldest first (by `created_at`, then id).
    pub(crate) fn memories(&self) -> Result<Vec<MemoryView>, Error> {
        super::all_memories(&*self.read)
    }

    /// A memory by id.
    pub(crate) fn memory(&self, id: &str) -> Result<Option<MemoryView>, Error> {
        Ok(self.read.node(&NodeKey::new(MEMORY, id))?.as_ref().and_then(MemoryView::from_node))
    }

    /// The outcomes of a memory, oldest first.
    pub(crate) fn outcomes_of(&self, id: &str) -> Result<Vec<OutcomeView>, Error> {
        let mut out = Vec::new();
        for e in self.read.edges_of(&NodeKey::new(MEMORY, id), Some("OUTCOME_OF"), Direction::In)? {
            if e.key.from.label != OUTCOME {
                continue;
            }
            if let Some(o) = self.read.node(&e.key.from)?.as_ref().and_then(OutcomeView::from_node)
            {
                out.push(o);
            }
        }
        out.sort_by(|a, b| (a.at_ns, &a.id).cmp(&(b.at_ns, &b.id)));
        Ok(out)
    }

    /// Links of `edge_type` at `key` in `direction` that survive votes, decay and pruning, with
    /// their effective confidence.
    fn live_links(
        &self,
        key: &NodeKey,
        edge_type: &str,
        direction: Direction,
        votes: &BTreeMap<(String, String, String), Edge>,
        options: &TraversalOptions,
        as_of: i64,
    ) -> Result<Vec<(Edge, f64)>, Error> {
        let mut out = Vec::new();
        for e in self.read.edges_of(key, Some(edge_type), direction)? {
            let vote =
                votes.get(&(e.key.from.id.clone(), e.key.to.id.clone(), edge_type.to_owned()));
            if let Some(c) = options.links.effective(&e, vote, as_of) {
                out.push((e, c));
            }
        }
        Ok(out)
    }

    /// The decision evolution chain of a topic ("why did we decide X?"): the topic's newest
    /// decision, then back one decision per step (at most `max_evolution_depth` steps, never
    /// revisiting a memory), each step with its outcomes and the memories implementing it.
    /// A step goes back through the strongest live SUPERSEDES link when there is one; otherwise to
    /// the next older decision on the step's topic (a decision saved without `supersedes` still
    /// belongs to the chain), marked `relates_to` when a live RELATES_TO link joins the two and
    /// `same_topic` when none does. Each step says whether its link was explicit. `None` when
    /// the topic has no decision. Only memories `keep` accepts are steps or reached: the chain
    /// starts at the newest such decision and a link to another memory passes as no link.
    pub(crate) fn evolution(
        &self,
        topic: &str,
        options: &TraversalOptions,
        keep: &mut dyn FnMut(&str) -> Result<bool, Error>,
    ) -> Result<Option<Evolution>, Error> {
        let Some(node) = self.read.node(&NodeKey::new(TOPIC, topic_id(topic)))? else {
            return Ok(None);
        };
        let name = node.props.get("name").and_then(Value::as_str).unwrap_or(topic).to_owned();
        let Some(latest) = node.props.get("latest_decision").and_then(Value::as_str) else {
            return Ok(None);
        };
        let start = if keep(latest)? {
            Some(latest.to_owned())
        } else {
            self.newest_on_topic(&node.key, None, &BTreeSet::new(), keep)?
        };
        match start {
            Some(start) => self.evolution_from(&start, name, options, keep),
            None => Ok(None),
        }
    }

    /// The evolution chain that starts at a decision and goes back through SUPERSEDES and topic
    /// order (see [`Snapshot::evolution`]).
    pub(crate) fn evolution_from(
        &self,
        start: &str,
        topic: String,
        options: &TraversalOptions,
        keep: &mut dyn FnMut(&str) -> Result<bool, Error>,
    ) -> Result<Option<Evolution>, Error> {
        let as_of = options.as_of();
        let Some(mut current) = self.memory(start)? else { return Ok(None) };
        let mut steps = Vec::new();
        let mut seen = BTreeSet::new();
        let mut link_confidence = None;
        let mut via = None;
        let mut explicit = false;
        loop {
            seen.insert(current.id.clone());
            let key = NodeKey::new(MEMORY, &current.id);
            let votes = votes_on(&*self.read, &current)?;
            let mut implemented_by = Vec::new();
            for (e, _) in
                self.live_links(&key, "IMPLEMENTS", Direction::In, &votes, options, as_of)?
            {
                if keep(&e.key.from.id)? {
                    implemented_by.push(e.key.from.id);
                }
            }
            implemented_by.sort();
            implemented_by.dedup();
            // The node names its latest outcome: no outcome there, none to read.
            let outcomes =
                if current.outcome.is_some() { self.outcomes_of(&current.id)? } else { Vec::new() };
            let mut candidates = Vec::new();
            for (e, c) in
                self.live_links(&key, "SUPERSEDES", Direction::Out, &votes, options, as_of)?
            {
                if !seen.contains(&e.key.to.id) && keep(&e.key.to.id)? {
                    candidates.push((e, c));
                }
            }
            let superseded = candidates.into_iter().max_by(|(a, ca), (b, cb)| {
                ca.total_cmp(cb).then_with(|| b.key.to.id.cmp(&a.key.to.id))
            });
            let next = match superseded {
                Some((edge, c)) => {
                    Some((edge.key.to.id.clone(), Some(c), "supersedes", !is_automatic(&edge)))
                }
                None => match self.older_on_topic(&current, &seen, keep)? {
                    Some(older) => {
                        let link = self
                            .live_links(
                                &key,
                                "RELATES_TO",
                                Direction::Both,
                                &votes,
                                options,
                                as_of,
                            )?
                            .into_iter()
                            .filter(|(e, _)| e.key.from.id == older || e.key.to.id == older)
                            .max_by(|(_, a), (_, b)| a.total_cmp(b));
                        match link {
                            Some((edge, c)) => {
                                Some((older, Some(c), "relates_to", !is_automatic(&edge)))
                            }
                            None => Some((older, None, "same_topic", false)),
                        }
                    }
                    None => None,
                },
            };
            steps.push(EvolutionStep {
                memory: current,
                outcomes,
                implemented_by,
                link_confidence,
                via,
                explicit,
            });
            let Some((id, c, how, made_explicitly)) = next else { break };
            if steps.len() >= options.max_evolution_depth {
                break;
            }
            let Some(m) = self.memory(&id)? else { break };
            current = m;
            link_confidence = c;
            via = Some(how);
            explicit = made_explicitly;
        }
        Ok(Some(Evolution { topic, steps }))
    }

    /// The newest decision on `m`'s topic saved before it (by `created_at`, then id) that is
    /// not in `seen` and that `keep` accepts.
    fn older_on_topic(
        &self,
        m: &MemoryView,
        seen: &BTreeSet<String>,
        keep: &mut dyn FnMut(&str) -> Result<bool, Error>,
    ) -> Result<Option<String>, Error> {
        let Some(topic) = &m.topic else { return Ok(None) };
        let tkey = NodeKey::new(TOPIC, topic_id(topic));
        self.newest_on_topic(&tkey, Some((m.created_at_ns, &m.id)), seen, keep)
    }

    /// The newest decision about the topic `tkey` (by `created_at`, then id), before `before`
    /// when given, not in `seen` and accepted by `keep`.
    fn newest_on_topic(
        &self,
        tkey: &NodeKey,
        before: Option<(i64, &String)>,
        seen: &BTreeSet<String>,
        keep: &mut dyn FnMut(&str) -> Result<bool, Error>,
    ) -> Result<Option<String>, Error> {
        let mut best: Option<MemoryView> = None;
        for e in self.read.edges_of(tkey, Some("ABOUT"), Direction::In)? {
            if e.key.from.label != MEMORY || seen.contains(&e.key.from.id) {
                continue;
            }
            let Some(o) = self.memory(&e.key.from.id)? else { continue };
            let earlier = before.is_none_or(|b| (o.created_at_ns, &o.id) < b);
            let newer =
                best.as_ref().is_none_or(|b| (o.created_at_ns, &o.id) > (b.created_at_ns, &b.id));
            if o.kind == "decision" && earlier && newer && keep(&o.id)? {
                best = Some(o);
            }
        }
        Ok(best.map(|b| b.id))
    }

    /// What happened after a memory ("what happened after we tried Y?"): breadth first through
    /// the memories implementing it, the memories and outcomes that are OUTCOME_OF it, and the
    /// TEMPORAL links out of it, only to memories saved within `impact_window_ms` after the start,
    /// at most `max_impact_depth` hops and `max_impact_items` memories. `None` for an unknown
    /// memory.
    pub(crate) fn impact(
        &self,
        id: &str,
        options: &TraversalOptions,
    ) -> Result<Option<Impact>, Error> {
        let as_of = options.as_of();
        let Some(start) = self.memory(id)? else { return Ok(None) };
        let (mut items, mut outcomes) = self.impact_walk(&start, options, as_of)?;
        if items.is_empty() {
            // Nothing live: the links that decayed below the pruning threshold are the only
            // evidence there is. They are shown at their decayed confidence, one hop out, rather
            // than dropped (an automatic link from the session of a decision would otherwise
            // vanish from its evidence days later).
            let mut faded = options.clone();
            faded.links.prune_below = 0.0;
            faded.max_impact_depth = 1;
            (items, outcomes) = self.impact_walk(&start, &faded, as_of)?;
        }
        let mut superseded_by = Vec::new();
        let key = NodeKey::new(MEMORY, &start.id);
        let votes = votes_on(&*self.read, &start)?;
        for (e, _) in self.live_links(&key, "SUPERSEDES", Direction::In, &votes, options, as_of)? {
            if let Some(m) = self.memory(&e.key.from.id)? {
                superseded_by.push(m);
            }
        }
        Ok(Some(Impact { start, items, outcomes, superseded_by }))
    }

    /// The breadth-first walk of [`Snapshot::impact`]: the memories reached and the outcomes
    /// of the start and of them, oldest first.
    fn impact_walk(
        &self,
        start: &MemoryView,
        options: &TraversalOptions,
        as_of: i64,
    ) -> Result<(Vec<ImpactItem>, Vec<OutcomeView>), Error> {
        let until =
            start.created_at_ns.saturating_add(options.impact_window_ms.saturating_mul(1_000_000));
        let mut items = Vec::new();
        let mut outcomes =
            if start.outcome.is_some() { self.outcomes_of(&start.id)? } else { Vec::new() };
        let mut seen = BTreeSet::from([start.id.clone()]);
        let mut queue = VecDeque::from([(start.clone(), 0usize)]);
        while let Some((here, depth)) = queue.pop_front() {
            let at = here.id.clone();
            if depth >= options.max_impact_depth {
                continue;
            }
            let key = NodeKey::new(MEMORY, &at);
            let votes = votes_on(&*self.read, &here)?;
            let mut next = Vec::new();
            for (edge_type, direction) in [
                ("IMPLEMENTS", Direction::In),
                ("OUTCOME_OF", Direction::In),
                ("TEMPORAL", Direction::Out),
            ] {
                let mut links =
                    self.live_links(&key, edge_type, direction, &votes, options, as_of)?;
                links.sort_by(|(a, _), (b, _)| a.key.cmp(&b.key));
                for (e, c) in links {
                    let other = if direction == Direction::In { &e.key.from } else { &e.key.to };
                    if other.label != MEMORY {
                        continue;
                    }
                    next.push((edge_type, other.id.clone(), c));
                }
            }
            for (via, other, confidence) in next {
                if items.len() >= options.max_impact_items || !seen.insert(other.clone()) {
                    continue;
                }
                let Some(m) = self.memory(&other)? else { continue };
                if m.created_at_ns > until || m.created_at_ns < start.created_at_ns {
                    continue;
                }
                if m.outcome.is_some() {
                    outcomes.extend(self.outcomes_of(&m.id)?);
                }
                queue.push_back((m.clone(), depth + 1));
                items.push(ImpactItem {
                    memory: m,
                    via: via.to_owned(),
                    from: at.clone(),
                    depth: depth + 1,
                    confidence,
                });
            }
        }
        outcomes.sort_by(|a, b| (a.at_ns, &a.id).cmp(&(b.at_ns, &b.id)));
        Ok((items, outcomes))
    }

    /// The live links of a memory in both directions (every memory link type), with their
    /// effective confidence, strongest first.
    pub(crate) fn memory_links(
        &self,
        id: &str,
        options: &TraversalOptions,
    ) -> Result<Vec<(Edge, f64)>, Error> {
        let as_of = options.as_of();
        let key = NodeKey::new(MEMORY, id);
        let votes = votes_of(&*self.read, &key)?;
        let mut out = Vec::new();
        for t in LINK_TYPES {
            out.extend(self.live_links(&key, t, Direction::Both, &votes, options, as_of)?);
        }
        out.sort_by(|(a, ca), (b, cb)| cb.total_cmp(ca).then_with(|| a.key.cmp(&b.key)));
        Ok(out)
    }
}

/// The edge types of memory links.
pub(crate) const LINK_TYPES: [&str; 5] =
    ["SUPERSEDES", "IMPLEMENTS", "OUTCOME_OF", "RELATES_TO", "TEMPORAL"];
