//! Retrieval: `recall(question) -> ContextPack`, the one pipeline behind every read interface.
//!
//! 1. **Prefilter.** Up to four ranked lists: the nearest embeddings (vector index); BM25 over
//!    the full-text index (the question without stop words and without the names of the actors
//!    it names), re-scored with context support (`context.rs`: a turn gains from the turns
//!    before and after it); events that reference an entity named in the question; and, when
//!    the question names dates (`dates.rs`), the BM25 ranking read four times deeper and kept
//!    to events in those periods. Actors are the named entities of type agent or user. Fused by
//!    reciprocal rank fusion (`fuse.rs`) into a relevance in (0, 1] (the best candidate has 1).
//!    The default weights (vector 0.3, BM25 1, entity 0.3, dated 1) and `k` = 10 were measured
//!    on conversational evidence retrieval, where the built-in static embedding ranks worse
//!    than BM25.
//! 2. **Intent.** Rule-based (`intent.rs`), or given by the caller.
//! 3. **Expansion.** From the best `seeds` candidates, a bounded best-first walk over the graph
//!    (at most `depth` steps; the heaviest `fanout` edges of a node are read and followed),
//!    each step weighted by the intent's
//!    weight for its edge type and direction and damped by `hop_decay`. Entities mentioned by
//!    more than `hub_mentions` events (a speaker, a busy agent) are returned but not walked
//!    through: they connect everything and so explain nothing. Every constraint (time window,
//!    session, trace, agent, minimum confidence) and the caller's [`Visibility`] is checked
//!    before a node is used, so nothing filtered out is returned, counted or walked through.
//!    A node reached by expansion is read (and checked) only when it is expanded or ranked.
//! 4. **Re-rank.** `score = relevance × path_weight × confidence × salience × focus`, every
//!    factor in the output: relevance of the candidate itself, or of the seed it was reached from;
//!    path_weight the product of step weights and decays (1 for a direct hit); confidence the
//!    least confidence on the path (SAME_AS, RELATED_TO, SIMILAR_TO scores); salience
//!    `1 − α + α·e^(−t/S)` (retention's decay, weighted by `salience_weight` = α, so recency
//!    breaks ties without burying old facts); focus `other_actor` (½) for an event by another
//!    actor than the ones the question names, times `other_time` (½) for an event outside every
//!    period it names, else 1. Optional diversity (maximal marginal relevance).
//! 5. **Stitch.** The best `k` items (of the asked labels) with the path that brought each in,
//!    the edges among them, provenance (log position, acknowledgement time, agent, source) and
//!    explicit unknowns (a parent that never arrived, a referenced entity that no item explains);
//!    a token budget keeps the most valuable items that fit.

mod anchors;
mod context;
mod cues;
mod dates;
mod fuse;
mod intent;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::rc::Rc;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset};
use ctxgraph_ontology::graph::{Direction, Edge, Node, NodeKey};
use ctxgraph_ontology::{RecordKind, entity_id, normalize_name};
use ctxgraph_projection::is_stop_word;
use ctxgraph_store::ManyRead;

use serde_json::Value;

pub use context::ContextWeights;
use cues::Cues;
pub use intent::{Intent, classify};

use crate::error::Error;
use crate::retention::{occurred_at, salience};
use crate::view::{Snapshot, answered};

/// Entity types of actors: who does or says something (an event's `agent_id`).
const ACTOR_TYPES: &[&str] = &["agent", "user"];
/// How much deeper than the BM25 list the dated list reads the BM25 ranking.
const DATED_DEPTH: usize = 4;
/// Longest name (in words) looked up in a question.
const MAX_NAME_WORDS: usize = 4;
/// BM25 hits read to find the session a question about a run's failures or request means
/// (see `session_of_best_hit`).
const INFER_HITS: usize = 10;
/// Most events of a scope session read for the scope list (bounded work on a huge session).
const SCOPE_EVENTS: usize = 500;
/// The roles of a fact's entities whose facts the knowledge list reads (in-edges of an entity).
const KNOWLEDGE_ROLES: [&str; 2] = ["SUBJECT", "OBJECT"];
/// Most edges of a node read to find an admitted event it is connected to (see `witnessed`).
const WITNESS_EDGES: usize = 64;
/// Most candidates the re-rank reads ahead in one batch, on a store whose reads are round trips,
/// beyond those it will certainly look at.
const READ_AHEAD: usize = 32;
/// Focus of a summary when the question does not ask for an overview: a summary is context
/// for the events it summarises, not an answer that outranks them.
const SUMMARY_FOCUS: f64 = 0.5;
/// Most an expanded item's own match to the question adds to its score (see [`Factors::matched`]).
const MATCH_BONUS: f64 = 0.25;
/// The names of the prefilter lists, in the order of [`RecallParams::list_weights`].
const LISTS: [&str; 7] = ["vector", "bm25", "entity", "dated", "anchor", "scope", "knowledge"];

/// Tunables of the pipeline, with documented defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecallParams {
    /// Candidates taken from each prefilter list.
    pub prefilter: usize,
    /// Candidates expansion starts from.
    pub seeds: usize,
    /// Most steps from a seed.
    pub depth: usize,
    /// Most edges followed from one node (the heaviest first).
    pub fanout: usize,
    /// Most nodes expanded (their edges followed), best reached first.
    pub expansions: usize,
    /// Entities mentioned by more events than this are not walked through.
    pub hub_mentions: i64,
    /// The `k` of reciprocal rank fusion.
    pub rrf_k: f64,
    /// Weights of the vector, BM25, entity, dated, anchor, scope and knowledge lists in the
    /// fusion.
    pub list_weights: [f64; 7],
    /// Factor per step beyond the first.
    pub hop_decay: f64,
    /// Weight α of salience in the score (0: ignore age).
    pub salience_weight: f64,
    /// Context support of the BM25 list (`context.rs`).
    pub context: ContextWeights,
    /// Focus of an event by another actor than the ones the question names (1: no focus).
    pub other_actor: f64,
    /// Focus of an event outside every period (day, month, year) the question names.
    pub other_time: f64,
}

impl Default for RecallParams {
    fn default() -> Self {
        RecallParams {
            prefilter: 50,
            seeds: 20,
            depth: 2,
            fanout: 16,
            expansions: 16,
            hub_mentions: 50,
            rrf_k: 10.0,
            list_weights: [0.3, 1.0, 0.3, 1.0, 3.0, 2.0, 2.0],
            hop_decay: 0.7,
            salience_weight: 0.2,
            context: ContextWeights::default(),
            other_actor: 0.5,
            other_time: 0.5,
        }
    }
}

/// A question and its constraints.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallQuery {
    /// The question or task, in words.
    pub text: String,
    /// Items to return.
    pub k: usize,
    /// The intent; `None`: classified from the text.
    pub intent: Option<Intent>,
    /// Only events at or after this time (other nodes are not time-bound).
    pub since: Option<DateTime<FixedOffset>>,
    /// Only events at or before this time.
    pub until: Option<DateTime<FixedOffset>>,
    /// Only events of this session.
    pub session: Option<String>,
    /// Only events of this trace (a conversation, a run).
    pub trace: Option<String>,
    /// Only events by this agent.
    pub agent: Option<String>,
    /// Only events and memories tagged (scope `tags`) with at least one of these; empty: any.
    pub tags: Vec<String>,
    /// Only events and memories whose scope `location` is this path or below it
    /// (`lab` matches `lab/arm-bench`).
    pub location: Option<String>,
    /// Only paths whose least confidence is at least this.
    pub min_confidence: f64,
    /// Node labels returned (`None`: all); expansion still walks through the others.
    pub labels: Option<Vec<String>>,
    /// Keep the most valuable items whose text fits this many tokens (about 4 characters each).
    pub budget_tokens: Option<usize>,
    /// Maximal marginal relevance λ in (0, 1] (1: no diversity); `None`: off.
    pub diversity: Option<f64>,
    /// The "as of" time of salience; `None`: the newest candidate's time.
    pub as_of: Option<DateTime<FixedOffset>>,
    /// Tunables.
    pub params: RecallParams,
}

impl RecallQuery {
    /// A question with default settings: 10 items, every label, no constraint.
    pub fn new(text: impl Into<String>) -> RecallQuery {
        RecallQuery {
            text: text.into(),
            k: 10,
            intent: None,
            since: None,
            until: None,
            session: None,
            trace: None,
            agent: None,
            tags: Vec::new(),
            location: None,
            min_confidence: 0.0,
            labels: None,
            budget_tokens: None,
            diversity: None,
            as_of: None,
            params: RecallParams::default(),
        }
    }
}

/// One step of the path that brought an item in.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The edge type.
    pub edge_type: String,
    /// Whether the step went along the edge's direction.
    pub forward: bool,
    /// The edge's qualifier (e.g. a REFERENCES role), if any.
    pub qualifier: String,
    /// The node the step reached.
    pub to: NodeKey,
}

/// Where an item came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Provenance {
    /// The log position of the record behind it: an event's, a fact's latest claim, a memory's
    /// or receipt's record, a sentence's document; `None` for derived nodes.
    pub log_position: Option<u64>,
    /// When that record was acknowledged.
    pub recorded_at: Option<String>,
    /// Who produced it: an event's agent, a memory's or receipt's author; `ctxgraph` for derived
    /// nodes; empty when the record names no one.
    pub created_by: String,
    /// The source it names: an event payload's `source`, a fact claim's `source`, a document's
    /// URL.
    pub source: Option<String>,
}

/// The factors of an item's score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Factors {
    /// Relevance of the item, or of the seed it was reached from, in (0, 1].
    pub relevance: f64,
    /// Product of the step weights and decays (1 for a direct hit).
    pub path_weight: f64,
    /// The least confidence on the path (1 when nothing on it is uncertain).
    pub confidence: f64,
    /// `1 − α + α·e^(−t/S)`.
    pub salience: f64,
    /// `other_actor` for an event by another actor than the ones the question names, times
    /// `other_time` for an event outside every period (day, month, year) it names, times
    /// `SUMMARY_FOCUS` (½) for a summary when the question asks for no overview; else 1.
    pub focus: f64,
    /// An expanded item's own match to the question: `1 + ¼ × m`, where `m` is the share of the
    /// question's content words in its text, capped so that `path_weight × matched ≤ 1` (an item
    /// never outranks the seed it was reached from); 1 for a direct hit, whose relevance is its
    /// match.
    pub matched: f64,
}

/// One item of a context pack.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The node, properties included (an event's payload hydrated).
    pub node: Node,
    /// The score, the product of the factors (after diversity, if asked).
    pub score: f64,
    /// The factors.
    pub factors: Factors,
    /// The prefilter lists it was found by (`vector`, `bm25`, `context`, `entity`, `dated`,
    /// `anchor`, `scope`, `knowledge`), empty if expanded (`context`: raised into the BM25 list
    /// by a neighbouring turn; `dated`: a BM25 hit in a period the question names; `anchor`: named
    /// by id in the question; `scope`: an event of the session in scope that fits the question's
    /// cues; `knowledge`: a fact about an entity the question names, or a decision memory for a
    /// decision question).
    pub found_by: Vec<&'static str>,
    /// The seed the path starts at (itself for a direct hit).
    pub seed: NodeKey,
    /// The steps from the seed (empty for a direct hit).
    pub path: Vec<Step>,
    /// Provenance.
    pub provenance: Provenance,
    /// Estimated tokens of its text.
    pub tokens: usize,
}

/// Something the pack knows it does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// What kind: `missing_parent` (a causal parent never arrived), `unexplained_entity` (a
    /// referenced entity that no item is about).
    pub kind: &'static str,
    /// The item it concerns.
    pub item: NodeKey,
    /// The missing or unexplained node.
    pub missing: NodeKey,
}

/// The answer of [`crate::Engine::recall`].
#[derive(Debug, Clone, PartialEq)]
pub struct ContextPack {
    /// The question.
    pub query: String,
    /// The intent used.
    pub intent: Intent,
    /// Whether the intent was classified (`false`: given by the caller).
    pub intent_classified: bool,
    /// Ranked items, best first.
    pub items: Vec<Item>,
    /// The edges among the items, with their confidence and provenance.
    pub edges: Vec<PackEdge>,
    /// What is known to be missing.
    pub unknowns: Vec<Unknown>,
    /// What the pack answers: intent, cues, anchors, constraints in force, time span.
    pub state: ContextState,
    /// Nodes the recall read and the constraints admitted (prefilter hits, expanded nodes,
    /// named entities and the ranked nodes it had to look at).
    pub candidates: usize,
    /// Items dropped to fit the token budget.
    pub trimmed: usize,
    /// Where the time went.
    pub timings: Timings,
}

/// An edge of a context pack.
#[derive(Debug, Clone, PartialEq)]
pub struct PackEdge {
    /// The edge, properties included.
    pub edge: Edge,
    /// Its confidence: its `confidence` or `score` property (SAME_AS, RELATED_TO, SIMILAR_TO,
    /// memory links), else 1.
    pub confidence: f64,
    /// Where it comes from: `record` (written by a record: an event's references and causal
    /// parent, an explicit edge), `derived` (session order, folded from the records' times) or
    /// `inferred` (by consolidation or entity resolution: similarity, summaries, candidates).
    pub provenance: &'static str,
    /// The log position of the record behind a `record` edge (its source event's), if known.
    pub log_position: Option<u64>,
}

/// The state a context pack answers in: what the engine understood of the question.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextState {
    /// The structural cues that fired (`failure`, `after`, `before`, `request`, `involved`).
    pub cues: Vec<&'static str>,
    /// Nodes the question names by id, found and admitted.
    pub anchors: Vec<NodeKey>,
    /// Entities the question names, found and admitted.
    pub named: Vec<NodeKey>,
    /// Constraints in force, as `(name, value)`: the caller's, and a session the question names
    /// (`session`, when the caller gave none).
    pub constraints: Vec<(String, String)>,
    /// The earliest and latest event time among the items.
    pub time_span: Option<(String, String)>,
}

/// Wall-clock time of each phase of one recall, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// Embedding the question (0 when the caller passed the vector).
    pub embed_us: u64,
    /// The anchors and the vector-index prefilter list, on the recall's own thread (the
    /// search's setup, the wait for its probe on a helper thread, the re-rank).
    pub vector_us: u64,
    /// The BM25 prefilter list and the lists that follow it (scope, knowledge), on the recall's
    /// own thread (the terms and lists read, the wait for the merge on a helper thread).
    pub bm25_us: u64,
    /// Entity lookup and the entity prefilter list.
    pub entity_us: u64,
    /// Fusion and graph expansion.
    pub expand_us: u64,
    /// Re-ranking and stitching (payloads, provenance, edges among items, unknowns).
    pub stitch_us: u64,
}

/// Microseconds since `start`, and restart the clock.
fn lap(start: &mut std::time::Instant) -> u64 {
    let now = std::time::Instant::now();
    let us = u64::try_from(now.duration_since(*start).as_micros()).unwrap_or(u64::MAX);
    *start = now;
    us
}

/// What the scope list reads: the sessions in scope (and whether they were inferred from a hit
/// rather than named or given), what the question names, and its cues.
#[derive(Clone, Copy)]
struct Scope<'q> {
    sessions: &'q [String],
    traces: &'q [String],
    inferred: bool,
    named: &'q [NodeKey],
    actors: &'q BTreeSet<String>,
    cues: Cues,
}

/// A score ordered by `total_cmp`, for the expansion queue.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score(f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A node under consideration.
struct Cand {
    /// The node once read and admitted: prefilter hits are read at once, nodes reached by
    /// expansion only when expanded or ranked near the top (most are neither).
    node: Option<Arc<Node>>,
    /// Own relevance from the prefilter (0 if only expanded).
    direct: f64,
    found_by: Vec<&'static str>,
    /// Best way in: relevance of the seed × path weight, the seed, the steps, the confidence.
    reach: f64,
    relevance: f64,
    path_weight: f64,
    confidence: f64,
    seed: NodeKey,
    path: Vec<Step>,
}

impl Cand {
    fn direct(node: Arc<Node>, relevance: f64, found_by: Vec<&'static str>) -> Cand {
        let seed = node.key.clone();
        Cand {
            node: Some(node),
            direct: relevance,
            found_by,
            reach: relevance,
            relevance,
            path_weight: 1.0,
            confidence: 1.0,
            seed,
            path: Vec::new(),
        }
    }
}

/// A candidate scored by the re-rank, its node still shared: an [`Item`] once it is kept.
struct Scored {
    node: Arc<Node>,
    score: f64,
    factors: Factors,
    found_by: Vec<&'static str>,
    seed: NodeKey,
    path: Vec<Step>,
    tokens: usize,
}

impl Scored {
    /// The item, its node copied out unless nothing else shares it.
    fn into_item(self) -> Item {
        Item {
            node: Arc::unwrap_or_clone(self.node),
            score: self.score,
            factors: self.factors,
            found_by: self.found_by,
            seed: self.seed,
            path: self.path,
            provenance: Provenance {
                log_position: None,
                recorded_at: None,
                created_by: String::new(),
                source: None,
            },
            tokens: self.tokens,
        }
    }
}

/// The lookups recall makes, with a cache of nodes and of the constraint verdict.
struct Lookups<'s, 'a> {
    snap: &'s Snapshot<'a>,
    query: &'s RecallQuery,
    who: &'s crate::view::Reader<'a>,
    /// Nodes read, `None` when not admitted; shared with the candidates that hold them (a
    /// node is read and decoded once, never copied).
    seen: BTreeMap<NodeKey, Option<Arc<Node>>>,
    /// The entities the events of the session in scope reference, with those events, read
    /// once when an entity must be placed in that session.
    session_refs: Option<BTreeMap<NodeKey, Vec<NodeKey>>>,
    /// Nodes an expansion step reached from an admitted event: that event is their witness.
    walked_from: BTreeSet<NodeKey>,
    /// Nodes read ahead by [`Lookups::prefetch`] and not yet taken by
    /// [`Lookups::admissible_shared`] (`None`: no such node).
    fetched: BTreeMap<NodeKey, Option<Arc<Node>>>,
    /// The first `SCOPE_EVENTS` events of the sessions read so far (the session constraint's
    /// witnesses and the scope list read the same session).
    slots: BTreeMap<String, Rc<Vec<NodeKey>>>,
    /// The REFERENCES out of events read so far (witnesses, the scope list and the session of
    /// the best hit read the same events' references).
    refs: BTreeMap<NodeKey, Vec<Edge>>,
    /// The knowledge list's read (each `(entity, role)`, the limit, the edges), made with the
    /// entity list's reads.
    knowledge: Option<KnowledgeRead>,
}

/// A read of the in-edges of entities in fact roles: each `(entity, role)` asked, the limit,
/// and each one's edges.
type KnowledgeRead = (Vec<(NodeKey, &'static str)>, usize, Vec<Vec<Edge>>);

impl Lookups<'_, '_> {
    /// The first `SCOPE_EVENTS` events of `session` in time order, read once per recall.
    fn session_slots(&mut self, session: &str) -> Result<Rc<Vec<NodeKey>>, Error> {
        if let Some(events) = self.slots.get(session) {
            return Ok(Rc::clone(events));
        }
        let events: Vec<NodeKey> = self
            .snap
            .read
            .session_events(session, SCOPE_EVENTS)?
            .into_iter()
            .map(|slot| NodeKey::new("Event", slot.event_id))
            .collect();
        let events = Rc::new(events);
        self.slots.insert(session.to_owned(), Rc::clone(&events));
        Ok(events)
    }

    /// Read the REFERENCES out of the events of `keys` not read yet, in one batched read
    /// (then [`Lookups::references_of`] answers).
    fn read_references(&mut self, keys: &[NodeKey]) -> Result<(), Error> {
        let unread: Vec<NodeKey> = keys
            .iter()
            .filter(|k| !self.refs.contains_key(*k))
            .cloned()
            .collect::<BTreeSet<NodeKey>>()
            .into_iter()
            .collect();
        let read = self.snap.edges_many(&unread, Some("REFERENCES"), Direction::Out)?;
        self.refs.extend(unread.into_iter().zip(read));
        Ok(())
    }

    /// The REFERENCES out of `key`, read by [`Lookups::read_references`] (none when not read).
    fn references_of(&self, key: &NodeKey) -> &[Edge] {
        self.refs.get(key).map_or(&[], Vec::as_slice)
    }

    /// Read ahead, in one batched read, the nodes of `keys` that the caller is about to check
    /// with [`Lookups::admissible`] (and not read yet): on a store whose reads are round trips
    /// this is one instead of one per node. Callers pass only keys they will check, so the
    /// embedded store, whose batched read is the loop of single reads, reads what it read
    /// before; the checks themselves still run one by one, in the caller's order.
    fn prefetch<'k>(&mut self, keys: impl IntoIterator<Item = &'k NodeKey>) -> Result<(), Error> {
        let missing = self.unread(keys);
        if missing.is_empty() {
            return Ok(());
        }
        let nodes = self.snap.nodes_shared(&missing)?;
        self.fetched.extend(missing.into_iter().zip(nodes));
        Ok(())
    }

    /// [`Lookups::prefetch`] of the likeliest next expansions, with the edge groups (their
    /// first `limit` edges each) of `expand` that the edge cache does not hold in the same
    /// read, into the cache: the caller names nodes that can be expanded without reading them
    /// first (an event is never a hub; an entity is, when its node says so).
    fn prefetch_expanding<'k>(
        &mut self,
        keys: impl IntoIterator<Item = &'k NodeKey>,
        expand: &[NodeKey],
        limit: usize,
    ) -> Result<(), Error> {
        let missing = self.unread(keys);
        let nodes = self.snap.nodes_and_edge_groups(&missing, expand, limit)?;
        self.fetched.extend(missing.into_iter().zip(nodes));
        Ok(())
    }

    /// Keep the nodes a search read with its hits as read ahead (as [`Lookups::prefetch`]
    /// keeps them; one read already, or read ahead, stays), and give the hits by key.
    fn read_with<S>(&mut self, hits: Vec<(Arc<Node>, S)>) -> Vec<(NodeKey, S)> {
        hits.into_iter()
            .map(|(node, score)| {
                let key = node.key.clone();
                if !self.seen.contains_key(&key) && !self.fetched.contains_key(&key) {
                    self.fetched.insert(key.clone(), Some(node));
                }
                (key, score)
            })
            .collect()
    }

    /// The node of `key` if it was read or read ahead already (admitted or not; nothing is
    /// read and nothing is checked).
    fn read_already(&self, key: &NodeKey) -> Option<&Node> {
        match self.seen.get(key) {
            Some(Some(node)) => Some(node),
            _ => self.fetched.get(key).and_then(Option::as_deref),
        }
    }

    /// The keys of `keys` neither read nor read ahead yet, each once, in order: what
    /// [`Lookups::prefetch`] would read.
    fn unread<'k>(&self, keys: impl IntoIterator<Item = &'k NodeKey>) -> Vec<NodeKey> {
        let mut wanted: BTreeSet<&NodeKey> = BTreeSet::new();
        let mut missing: Vec<NodeKey> = Vec::new();
        for key in keys {
            if !self.seen.contains_key(key) && !self.fetched.contains_key(key) && wanted.insert(key)
            {
                missing.push(key.clone());
            }
        }
        missing
    }

    /// The node if it exists and passes every constraint (borrowed from the cache: most
    /// callers only ask whether it does).
    fn admissible(&mut self, key: &NodeKey) -> Result<Option<&Node>, Error> {
        Ok(self.admissible_shared(key)?.map(|n| &**n))
    }

    /// [`Lookups::admissible`], as the shared node a candidate keeps.
    fn admissible_shared(&mut self, key: &NodeKey) -> Result<Option<&Arc<Node>>, Error> {
        if !self.seen.contains_key(key) {
            // Unhydrated: payloads are read for the returned items only.
            let read = match self.fetched.remove(key) {
                Some(read) => read,
                None => self.snap.nodes_shared(std::slice::from_ref(key))?.pop().flatten(),
            };
            let node = match read {
                Some(n) if self.admits(&n)? => Some(n),
                _ => None,
            };
            self.seen.insert(key.clone(), node);
        }
        Ok(self.seen.get(key).and_then(Option::as_ref))
    }

    /// Whether `node` passes the caller's visibility and every constraint of the query.
    ///
    /// A node with a `confidence` of its own (a fact, a memory, a slot value) below the minimum
    /// confidence is left out.
    ///
    /// Each kind answers the constraints it carries itself: an event its session, trace, agent,
    /// time and scope; a session summary its session and time range; a day summary its day (it
    /// spans sessions, so it answers no session, trace, agent, tag or location constraint); a
    /// memory its session, creation time and scope. What a node does not carry (an entity's
    /// session, a fact's agent, a session summary's tags) it must show through an admitted event
    /// it is connected to ([`Lookups::witnessed`]).
    fn admits(&mut self, node: &Node) -> Result<bool, Error> {
        if !self.who.may_see(node)? {
            return Ok(false);
        }
        let q = self.query;
        // A node with a confidence of its own (a fact, a memory, a slot value) answers the
        // minimum confidence itself, as a path does with the confidences of its edges.
        if node
            .props
            .get("confidence")
            .and_then(Value::as_f64)
            .is_some_and(|c| c < q.min_confidence)
        {
            return Ok(false);
        }
        if !q.constrains_events() {
            return Ok(true);
        }
        let text = |p: &str| node.props.get(p).and_then(Value::as_str);
        let eq = |p: &str, want: &Option<String>| want.as_ref().is_none_or(|w| text(p) == Some(w));
        match node.key.label.as_str() {
            "Event" => {
                let placed = eq("session_id", &q.session)
                    && eq("trace_id", &q.trace)
                    && eq("agent_id", &q.agent);
                if !(placed && in_scope(node, q)) {
                    return Ok(false);
                }
                if q.since.is_some() || q.until.is_some() {
                    let Some(at) = text("occurred_at").and_then(parse_time) else {
                        return Ok(false);
                    };
                    return Ok(q.in_window(at, at));
                }
                Ok(true)
            }
            "Summary" => {
                let range = node.props.get("time_range").and_then(Value::as_array);
                let at = |i: usize| range.and_then(|r| r.get(i)).and_then(Value::as_str);
                if q.since.is_some() || q.until.is_some() {
                    let (Some(first), Some(last)) =
                        (at(0).and_then(parse_time), at(1).and_then(parse_time))
                    else {
                        return Ok(false);
                    };
                    if !q.in_window(first, last) {
                        return Ok(false);
                    }
                }
                if text("scope") != Some("session") {
                    // A day summary spans sessions, agents and scopes.
                    return Ok(q.session.is_none()
                        && q.trace.is_none()
                        && q.agent.is_none()
                        && q.tags.is_empty()
                        && q.location.is_none());
                }
                if q.session.as_ref().is_some_and(|s| text("scope_id") != Some(s.as_str())) {
                    return Ok(false);
                }
                if q.trace.is_some()
                    || q.agent.is_some()
                    || !q.tags.is_empty()
                    || q.location.is_some()
                {
                    return self.witnessed(node);
                }
                Ok(true)
            }
            "Memory" => {
                if !in_scope(node, q) || !eq("session_id", &q.session) {
                    return Ok(false);
                }
                if q.since.is_some() || q.until.is_some() {
                    let Some(at) = text("created_at").and_then(parse_time) else {
                        return Ok(false);
                    };
                    if !q.in_window(at, at) {
                        return Ok(false);
                    }
                }
                // A memory names no trace or agent of its own.
                Ok(q.trace.is_none() && q.agent.is_none())
            }
            _ => self.witnessed(node),
        }
    }

    /// Whether `node` is connected to an admitted event: expansion reached it from one, one of
    /// its first `WITNESS_EDGES` edges that tie its kind to events (an entity's REFERENCES, a
    /// summary's SUMMARIZES, a receipt's USED_INPUT; any edge for other kinds, which are not
    /// busy) reaches one, or, for an entity under a session constraint, an admitted event of
    /// that session references it (a busy entity's first edges may all belong to other
    /// sessions).
    fn witnessed(&mut self, node: &Node) -> Result<bool, Error> {
        if self.walked_from.remove(&node.key) {
            return Ok(true);
        }
        if node.key.label == "Entity" && self.query.session.is_some() {
            if self.session_refs.is_none() {
                let mut refs: BTreeMap<NodeKey, Vec<NodeKey>> = BTreeMap::new();
                if let Some(session) = &self.query.session {
                    let events = self.session_slots(session)?;
                    self.read_references(&events)?;
                    for key in events.iter() {
                        for edge in self.references_of(key) {
                            refs.entry(edge.key.to.clone()).or_default().push(key.clone());
                        }
                    }
                }
                self.session_refs = Some(refs);
            }
            let events = self
                .session_refs
                .as_ref()
                .and_then(|r| r.get(&node.key))
                .cloned()
                .unwrap_or_default();
            for event in events {
                if self.admissible(&event)?.is_some() {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        // The edges that tie each kind to events, each read by a seek that stops at the bound
        // (a busy entity has hundreds of thousands of REFERENCES).
        let ties: &[(&str, bool)] = match node.key.label.as_str() {
            "Entity" => &[("REFERENCES", false)],
            "Summary" => &[("SUMMARIZES", true)],
            "DecisionReceipt" => &[("USED_INPUT", true)],
            _ => &[],
        };
        let mut edges = Vec::new();
        for (edge_type, out) in ties {
            edges.extend(
                self.snap
                    .read
                    .edges_limited(&node.key, edge_type, *out, WITNESS_EDGES)?
                    .into_iter()
                    .map(|e| (e, *out)),
            );
        }
        if ties.is_empty() {
            let any = |_: &str, _: bool| 1.0;
            for (_, edge, forward) in
                self.snap.read.heaviest_edges(&node.key, &any, WITNESS_EDGES)?
            {
                edges.push((edge, forward));
            }
        }
        for (edge, forward) in edges {
            let other = if forward { edge.key.to } else { edge.key.from };
            if other.label == "Event" && self.admissible(&other)?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn parse_time(text: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(text).ok()
}

impl RecallQuery {
    /// Whether any constraint limits which events may be used (and so which other nodes, through
    /// the events they are connected to).
    pub fn constrains_events(&self) -> bool {
        self.since.is_some()
            || self.until.is_some()
            || self.session.is_some()
            || self.trace.is_some()
            || self.agent.is_some()
            || !self.tags.is_empty()
            || self.location.is_some()
    }

    /// Whether the span `[first, last]` overlaps the query's time window.
    fn in_window(&self, first: DateTime<FixedOffset>, last: DateTime<FixedOffset>) -> bool {
        !(self.since.is_some_and(|s| last < s) || self.until.is_some_and(|u| first > u))
    }

    /// The constraints in force, as `(name, value)` pairs, for the pack's context state.
    fn constraint_list(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut put = |name: &str, value: Option<String>| {
            if let Some(v) = value {
                out.push((name.to_owned(), v));
            }
        };
        put("since", self.since.map(|t| t.to_rfc3339()));
        put("until", self.until.map(|t| t.to_rfc3339()));
        put("session", self.session.clone());
        put("trace", self.trace.clone());
        put("agent", self.agent.clone());
        put("tags", (!self.tags.is_empty()).then(|| self.tags.join(",")));
        put("location", self.location.clone());
        put("min_confidence", (self.min_confidence > 0.0).then(|| self.min_confidence.to_string()));
        put("labels", self.labels.as_ref().map(|l| l.join(",")));
        out
    }
}

/// The tag and location constraints of `q` on a node's scope.
fn in_scope(node: &Node, q: &RecallQuery) -> bool {
    if !q.tags.is_empty() {
        let tags = node.props.get("scope_tags").and_then(Value::as_array);
        let tagged = tags.is_some_and(|t| {
            t.iter().filter_map(Value::as_str).any(|tag| q.tags.iter().any(|w| w == tag))
        });
        if !tagged {
            return false;
        }
    }
    if let Some(want) = &q.location {
        let want = want.trim_end_matches('/');
        let at = node.props.get("scope_location").and_then(Value::as_str).unwrap_or("");
        let below =
            at.strip_prefix(want).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if !below {
            return false;
        }
    }
    true
}

impl Snapshot<'_> {
    /// Recall with a query embedding computed by the caller (see [`crate::Engine::recall`]).
    pub(crate) fn recall_with(
        &self,
        query: &RecallQuery,
        query_vector: &[f32],
        who: &crate::view::Reader<'_>,
        search: ctxgraph_ann::SearchParams,
    ) -> Result<ContextPack, Error> {
        let p = query.params;
        let (intent, intent_classified) = match query.intent {
            Some(i) => (i, false),
            None => (classify(&query.text), true),
        };
        let mut timings = Timings::default();
        let mut clock = std::time::Instant::now();
        // The vector search depends on the question's vector alone: its probe and scan run in
        // memory on a helper thread while this one reads the anchors, the entities and the
        // BM25 terms from the store (the prefilter's verdicts do not depend on the order the
        // lists are checked in: nothing has been walked yet).
        let overlap = crate::helper::Overlap::enter(self.helpers);
        let nearest = if query_vector.is_empty() {
            None
        } else {
            Some(self.start_nearest(query_vector, p.prefilter, search, overlap.helpers())?)
        };
        // What the question names exactly; a session it names acts as the session constraint
        // unless the caller gave one. Of the entities it may name, the BM25 words depend on the
        // actors alone: on a store whose reads are local, only the actors are looked up before
        // the BM25 merge starts, the others after (a store whose reads are round trips looks
        // them all up with the anchors, in one).
        let entity_ids = self.named_entity_ids(&query.text);
        let (entity_ids, later_ids): (Vec<String>, Vec<String>) = if self.read.batch_reads_pay() {
            (entity_ids, Vec::new())
        } else {
            entity_ids.into_iter().partition(|id| is_actor_id(id))
        };
        let mut anchors = self.anchors(&query.text, who, &entity_ids, SCOPE_EVENTS)?;
        drop(entity_ids);
        let mut cues = Cues::of(&query.text);
        if anchors.is_empty() {
            // "after" and "before" say which way to walk from something named.
            cues.after = false;
            cues.before = false;
        }
        let scoped_query;
        let named_session = match (&query.session, anchors.sessions.as_slice()) {
            (None, [session]) => Some(session.clone()),
            _ => None,
        };
        let named_trace = match (&query.trace, anchors.traces.as_slice()) {
            (None, [trace]) => Some(trace.clone()),
            _ => None,
        };
        let query = if named_session.is_some() || named_trace.is_some() {
            scoped_query = RecallQuery {
                session: named_session.or_else(|| query.session.clone()),
                trace: named_trace.or_else(|| query.trace.clone()),
                ..query.clone()
            };
            &scoped_query
        } else {
            query
        };
        let mut r = Lookups {
            snap: self,
            query,
            who,
            seen: BTreeMap::new(),
            session_refs: None,
            walked_from: BTreeSet::new(),
            // What the anchors read is not read again.
            fetched: std::mem::take(&mut anchors.read),
            // A session's events the anchors read as deep as the scope list reads them.
            slots: std::mem::take(&mut anchors.runs)
                .into_iter()
                .map(|(session, run)| (session, Rc::new(run)))
                .collect(),
            refs: std::mem::take(&mut anchors.refs),
            knowledge: None,
        };

        // 1. Prefilter: ranked lists of admissible nodes.
        timings.vector_us = lap(&mut clock);
        let mut entities = std::mem::take(&mut anchors.entities);
        // The actors the question names: their events are in focus, and their names, which
        // occur in nearly every turn they speak, are no evidence for BM25. (The entity list
        // below finds the same ones among the entities it admits.)
        let mut actors: BTreeSet<String> = BTreeSet::new();
        for id in entities.iter().filter(|id| is_actor_id(id)) {
            let key = NodeKey::new("Entity", id.as_str());
            if r.admissible(&key)?.is_some()
                && let Some((_, name)) = id.split_once(':')
            {
                actors.insert(name.to_owned());
            }
        }
        timings.entity_us = lap(&mut clock);
        let periods = dates::named_periods(&query.text);
        let actor_words: BTreeSet<String> = actors.iter().flat_map(|a| content_words(a)).collect();
        let words: Vec<String> = content_words(&query.text)
            .into_iter()
            .filter(|w| !actor_words.contains(w) && !anchors.words.contains(w))
            .collect();
        // The BM25 merge runs in memory on a helper thread while this one finishes the vector
        // search (its exact re-rank reads the store).
        let bm25_search = if words.is_empty() {
            None
        } else {
            let limit = if periods.is_empty() { p.prefilter } else { p.prefilter * DATED_DEPTH };
            Some(self.start_search(&words.join(" "), limit, overlap.helpers())?)
        };
        timings.bm25_us = lap(&mut clock);
        // What the BM25 words do not depend on, read while the merge runs.
        let mut anchor_list = Vec::new();
        r.prefetch(&anchors.nodes)?;
        for key in &anchors.nodes {
            if r.admissible(key)?.is_some() {
                anchor_list.push(key.clone());
            }
        }
        timings.vector_us += lap(&mut clock);
        if !later_ids.is_empty() {
            entities.extend(self.read.existing_ids("Entity", &later_ids)?);
        }
        drop(later_ids);
        let (entity_list, named) = self.entity_matches(&mut r, entities, p, cues)?;
        timings.entity_us += lap(&mut clock);
        let mut vector_list = Vec::new();
        if let Some(nearest) = nearest {
            let nearest = r.read_with(self.finish_nearest(nearest)?);
            for (key, _) in nearest {
                if r.admissible(&key)?.is_some() {
                    vector_list.push(key);
                }
            }
        }
        timings.vector_us += lap(&mut clock);
        let mut bm25_hits = Vec::new();
        // The BM25 hits in the periods the question names, read deeper than the BM25 list.
        let mut dated_list = Vec::new();
        if let Some(bm25_search) = bm25_search {
            let found = r.read_with(self.finish_search(bm25_search)?);
            for (key, score) in found {
                let Some(node) = r.admissible(&key)? else { continue };
                if dated_list.len() < p.prefilter && in_periods(node, &periods) {
                    dated_list.push(key.clone());
                }
                if bm25_hits.len() < p.prefilter {
                    bm25_hits.push((key, score));
                }
            }
        }
        let mut bm25_list = Vec::new();
        let mut context_list = BTreeSet::new();
        if p.context.is_off() {
            bm25_list = bm25_hits.into_iter().map(|(k, _)| k).collect();
        } else {
            let supported = context::support(&bm25_hits, p.context, |i| {
                let key = &bm25_hits[i].0;
                if key.label != "Event" {
                    return Ok(context::Neighbours::none());
                }
                // FOLLOWS points from an event to the one before it: both ways in one read,
                // or from the edges expansion keeps when they are there whole (a node not kept
                // yet is not read whole for this). As `(whether the other event comes before,
                // the other event)`.
                let adjacent = self.adjacent_cached(key, p.fanout)?;
                let whole = |out| adjacent.as_ref().and_then(|a| a.all_of("FOLLOWS", out));
                let follows: Vec<(bool, NodeKey)> = match (whole(true), whole(false)) {
                    (Some(out), Some(into)) => out
                        .into_iter()
                        .map(|e| (true, e.far.clone()))
                        .chain(into.into_iter().map(|e| (e.far == *key, e.far.clone())))
                        .collect(),
                    _ => self
                        .edges(key, Some("FOLLOWS"), Direction::Both)?
                        .into_iter()
                        .map(|e| {
                            let before = e.key.from == *key;
                            (before, if before { e.key.to } else { e.key.from })
                        })
                        .collect(),
                };
                let mut n = context::Neighbours::none();
                for (before, other) in follows {
                    let slot = if before { &mut n.prev } else { &mut n.next };
                    if slot.is_none() && r.admissible(&other)?.is_some() {
                        *slot = Some(other);
                    }
                }
                Ok::<_, Error>(n)
            })?;
            for (key, _, by_context) in supported.into_iter().take(p.prefilter) {
                if by_context {
                    context_list.insert(key.clone());
                }
                bm25_list.push(key);
            }
        }
        // The runs in scope: the constraints, the sessions and traces the question names, or
        // for a question about a run's failures or request that names who or what took part,
        // the session of the best BM25 hit that involves them.
        let mut sessions: Vec<String> = match &query.session {
            Some(s) => vec![s.clone()],
            None => anchors.sessions.clone(),
        };
        let traces: Vec<String> = match &query.trace {
            Some(t) => vec![t.clone()],
            None => anchors.traces.clone(),
        };
        let inferred = sessions.is_empty()
            && traces.is_empty()
            && (cues.failure || cues.request)
            && !named.is_empty();
        if inferred {
            sessions.extend(self.session_of_best_hit(&mut r, &bm25_list, &named)?);
        }
        let scope = Scope {
            sessions: &sessions,
            traces: &traces,
            inferred,
            named: &named,
            actors: &actors,
            cues,
        };
        let scope_list = self.scope_list(&mut r, &scope, p.prefilter)?;
        if inferred && scope_list.is_empty() {
            // The hit's session holds no answer of the kind asked: it is not the run meant.
            sessions.clear();
        }
        let knowledge_list = self.knowledge_list(
            &mut r,
            &named,
            &sessions,
            cues,
            [&vector_list, &bm25_list],
            p.prefilter,
        )?;
        timings.bm25_us += lap(&mut clock);
        let lists = [
            vector_list,
            bm25_list,
            entity_list,
            dated_list,
            anchor_list,
            scope_list,
            knowledge_list,
        ];
        let fused = fuse::rrf(&lists, &p.list_weights, p.rrf_k);
        // The lists each fused node is in, read in one pass over the lists.
        let mut found: BTreeMap<&NodeKey, Vec<&'static str>> = BTreeMap::new();
        for (name, list) in LISTS.into_iter().zip(&lists) {
            for key in list {
                let by =
                    if name == "bm25" && context_list.contains(key) { "context" } else { name };
                let names = found.entry(key).or_default();
                if names.last() != Some(&by) {
                    names.push(by);
                }
            }
        }
        let top = fused.first().map_or(1.0, |(_, s)| *s);
        let mut cands: BTreeMap<NodeKey, Cand> = BTreeMap::new();
        r.prefetch(fused.iter().map(|(k, _)| k).chain(&named))?;
        for (key, score) in &fused {
            let Some(node) = r.admissible_shared(key)?.cloned() else { continue };
            let found_by = found.remove(key).unwrap_or_default();
            cands.insert(key.clone(), Cand::direct(node, score / top, found_by));
        }
        for key in &named {
            if let Some(node) = r.admissible_shared(key)?.cloned() {
                cands.entry(key.clone()).or_insert_with(|| Cand::direct(node, 0.0, vec!["entity"]));
            }
        }

        // 3. Expansion: best-first from the seeds, at most `expansions` nodes expanded.
        let mut open: BTreeSet<(Score, NodeKey)> = cands
            .iter()
            .filter(|(_, c)| c.direct > 0.0)
            .map(|(k, c)| (Score(c.direct), k.clone()))
            .collect();
        while open.len() > p.seeds {
            open.pop_first();
        }
        let step_weight = |edge_type: &str, out: bool| {
            cues.edge_weight(edge_type, out).unwrap_or_else(|| intent.edge_weight(edge_type, out))
        };
        let mut expanded = 0;
        let speculate = self.read.batch_reads_pay();
        while expanded < p.expansions {
            let Some((Score(reach), from)) = open.pop_last() else { break };
            let Some(c) = cands.get_mut(&from) else { continue };
            // A stale entry (the node was reached better since) or the depth limit.
            if c.reach > reach || c.path.len() >= p.depth {
                continue;
            }
            // Whether a node could be expanded after this one: within the depth limit, and an
            // event (never a hub) or read already and no hub.
            let expandable = |cands: &BTreeMap<NodeKey, Cand>, r: &Lookups<'_, '_>, k: &NodeKey| {
                cands.get(k).is_some_and(|c| c.path.len() < p.depth)
                    && (k.label == "Event"
                        || r.read_already(k).is_some_and(|n| !is_hub(n, p.hub_mentions)))
            };
            if c.node.is_none() {
                if speculate {
                    // The best of the queue are the likeliest next expansions: on a store
                    // whose reads are round trips, read them with this one, and the edge
                    // groups of those that could be expanded in the same read.
                    let next = open.iter().rev().map(|(_, k)| k);
                    let unread: Vec<&NodeKey> = std::iter::once(&from)
                        .chain(next.clone().filter(|k| {
                            cands
                                .get(*k)
                                .is_some_and(|c| c.node.is_none() && c.path.len() < p.depth)
                        }))
                        .take(p.expansions - expanded)
                        .collect();
                    let expand: Vec<NodeKey> = std::iter::once(&from)
                        .chain(next)
                        .filter(|k| expandable(&cands, &r, k))
                        .take(p.expansions - expanded + 1)
                        .cloned()
                        .collect();
                    r.prefetch_expanding(unread, &expand, p.fanout)?;
                }
                let Some(c) = cands.get_mut(&from) else { continue };
                c.node = r.admissible_shared(&from)?.cloned();
            }
            let Some(c) = cands.get_mut(&from) else { continue };
            // Not admitted (never walked through, never returned), or a hub.
            let Some(node) = &c.node else { continue };
            if is_hub(node, p.hub_mentions) {
                continue;
            }
            let from_event = node.key.label == "Event";
            expanded += 1;
            let decay = if c.path.is_empty() { 1.0 } else { p.hop_decay };
            let (relevance, weight, confidence, seed, path) =
                (c.relevance, c.path_weight, c.confidence, c.seed.clone(), c.path.clone());
            if speculate && self.adjacent_cached(&from, p.fanout)?.is_none() {
                // On a store whose reads are round trips, the edges of the likeliest next
                // expansions come with this one's: those of the best of the queue whose node
                // is read already and is no hub (a hub is never expanded; its edges are many).
                let next = open.iter().rev().map(|(_, k)| k).filter(|k| expandable(&cands, &r, k));
                let keys: Vec<NodeKey> = std::iter::once(&from)
                    .chain(next)
                    .take(p.expansions - expanded + 1)
                    .cloned()
                    .collect();
                self.prefetch_adjacent(&keys, p.fanout)?;
            }
            let adjacent = self.adjacent(&from, p.fanout)?;
            for (w, edge_type, forward, edge) in adjacent.heaviest(&step_weight, p.fanout) {
                // Borrowed until the step is taken: most steps reach a node already reached
                // better and copy nothing.
                let to = &edge.far;
                let confidence = confidence.min(edge.confidence);
                if confidence < query.min_confidence {
                    continue;
                }
                let via = reach * w * decay;
                if cands.get(to).is_some_and(|c| c.reach >= via) {
                    continue;
                }
                // An admitted event is the witness of what it connects to (see `witnessed`).
                if from_event && !matches!(to.label.as_str(), "Event" | "Summary" | "Memory") {
                    if r.seen.get(to).is_some_and(Option::is_none) {
                        r.seen.remove(to);
                    }
                    if !r.seen.contains_key(to) {
                        r.walked_from.insert(to.clone());
                    }
                }
                // Known not admitted: not reached through either.
                if r.seen.get(to).is_some_and(Option::is_none) {
                    continue;
                }
                let mut steps = path.clone();
                steps.push(Step {
                    edge_type: edge_type.to_owned(),
                    forward,
                    qualifier: edge.qualifier.clone(),
                    to: to.clone(),
                });
                let path_weight = weight * w * decay;
                match cands.entry(to.clone()) {
                    std::collections::btree_map::Entry::Vacant(v) => {
                        v.insert(Cand {
                            node: None,
                            direct: 0.0,
                            found_by: Vec::new(),
                            reach: via,
                            relevance,
                            path_weight,
                            confidence,
                            seed: seed.clone(),
                            path: steps,
                        });
                    }
                    std::collections::btree_map::Entry::Occupied(mut o) => {
                        let entry = o.get_mut();
                        entry.reach = via;
                        entry.relevance = relevance;
                        entry.path_weight = path_weight;
                        entry.confidence = confidence;
                        entry.seed = seed.clone();
                        entry.path = steps;
                    }
                }
                open.insert((Score(via), to.clone()));
            }
        }

        timings.expand_us = lap(&mut clock);

        // 4. Re-rank: candidates in order of the best score they could have (salience ≤ 1,
        // match ≤ 1¼), each read and admitted when its turn comes, until no unread one can beat
        // the k-th.
        let as_of = match query.as_of {
            Some(t) => Some(t),
            None => cands.values().filter_map(|c| c.node.as_deref().and_then(occurred_at)).max(),
        };
        let want = match query.diversity {
            Some(_) => query.k.saturating_mul(3).max(30),
            None => query.k,
        };
        let summary_focus = if intent == Intent::Overview { 1.0 } else { SUMMARY_FOCUS };
        let match_words: BTreeSet<&str> = words.iter().map(String::as_str).collect();
        let mut order: Vec<(f64, NodeKey)> = cands
            .iter()
            .filter(|(_, c)| c.reach > 0.0)
            .filter(|(k, _)| query.labels.as_ref().is_none_or(|l| l.contains(&k.label)))
            .map(|(k, c)| {
                let most = if c.path.is_empty() { 1.0 } else { 1.0 + MATCH_BONUS };
                (c.relevance * c.path_weight * c.confidence * most, k.clone())
            })
            .collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut best: BinaryHeap<Reverse<Score>> = BinaryHeap::new();
        let mut scored: Vec<Scored> = Vec::new();
        let mut read_ahead = false;
        for (at, (bound, key)) in order.iter().enumerate() {
            if best.len() >= want && best.peek().is_some_and(|Reverse(Score(kth))| *bound < *kth) {
                break;
            }
            let Some(mut c) = cands.remove(key) else { continue };
            if c.node.is_none() {
                // The next `want - best.len()` candidates are looked at whatever they score
                // (the loop stops only once `want` are ranked): read the unread among them
                // in one batch. On a store whose reads are round trips, once `want` are ranked
                // the candidates that can still be looked at are those whose bound reaches the
                // k-th score so far (it only rises): read those too, at most `READ_AHEAD`,
                // rather than one round trip each.
                // Before `want` are ranked, a second read means candidates read ahead were
                // not admitted (a constraint the expansion does not check), and the next may
                // fail as well: on a store whose reads are round trips, read `READ_AHEAD`.
                let sure = want.saturating_sub(best.len()).max(1);
                let sure = if speculate && read_ahead && best.len() < want {
                    sure.max(READ_AHEAD)
                } else {
                    sure
                };
                read_ahead = true;
                let kth = best.peek().map(|Reverse(Score(kth))| *kth);
                let ahead = order.iter().skip(at).enumerate().take_while(|(i, (bound, _))| {
                    *i < sure
                        || (speculate
                            && *i < READ_AHEAD
                            && best.len() >= want
                            && kth.is_some_and(|kth| *bound >= kth))
                });
                let unread: Vec<&NodeKey> = ahead
                    .map(|(_, (_, k))| k)
                    .filter(|k| *k == key || cands.get(*k).is_some_and(|c| c.node.is_none()))
                    .collect();
                r.prefetch(unread)?;
                c.node = r.admissible_shared(key)?.cloned();
            }
            let Some(node) = c.node else { continue };
            let sal = salience_factor(&node, as_of, p.salience_weight);
            // Within the sessions in scope the run is the focus: who acted in it is a criterion
            // of the scope list, not a penalty on the rest of the run.
            let prop = |p: &str| node.props.get(p).and_then(Value::as_str);
            let in_scope_session = node.key.label == "Event"
                && (prop("session_id").is_some_and(|s| sessions.iter().any(|x| x == s))
                    || prop("trace_id").is_some_and(|t| traces.iter().any(|x| x == t)));
            let actor_focus =
                if in_scope_session { 1.0 } else { focus_factor(&node, &actors, p.other_actor) };
            let mut focus = actor_focus * time_focus(&node, &periods, p.other_time);
            if node.key.label == "Summary" {
                focus *= summary_focus;
            }
            // An expanded item may rise by its own match, never above the seed it came from.
            let matched = if c.path.is_empty() {
                1.0
            } else {
                (1.0 + MATCH_BONUS * word_match(&node, &match_words))
                    .min(1.0 / c.path_weight)
                    .max(1.0)
            };
            let score = c.relevance * c.path_weight * c.confidence * sal * focus * matched;
            best.push(Reverse(Score(score)));
            if best.len() > want {
                best.pop();
            }
            scored.push(Scored {
                score,
                factors: Factors {
                    relevance: c.relevance,
                    path_weight: c.path_weight,
                    confidence: c.confidence,
                    salience: sal,
                    focus,
                    matched,
                },
                found_by: c.found_by,
                seed: c.seed,
                path: c.path,
                tokens: tokens(&node),
                node,
            });
        }
        // Nodes read and admitted: every candidate the constraints let through that this
        // recall looked at (nothing filtered out is counted).
        let candidates = r.seen.values().filter(|n| n.is_some()).count();
        scored
            .sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.node.key.cmp(&b.node.key)));
        if query.diversity.is_none() {
            // Only the items kept are copied out of the nodes they share.
            scored.truncate(query.k);
        }
        let mut ranked: Vec<Item> = scored.into_iter().map(Scored::into_item).collect();
        if let Some(lambda) = query.diversity {
            ranked = self.diversify(ranked, lambda, query.k)?;
        }
        ranked.truncate(query.k);

        // 5. Stitch.
        let mut trimmed = 0;
        if let Some(budget) = query.budget_tokens {
            let mut used = 0;
            ranked.retain(|item| {
                let fits = used + item.tokens <= budget;
                if fits {
                    used += item.tokens;
                } else {
                    trimmed += 1;
                }
                fits
            });
        }
        // The events' records and the items' edges in one read each, sent together (a store
        // whose log and graph are two connections overlaps them), then the parents not read
        // yet and the entities an unexplained reference may name, together: a store whose
        // reads are round trips pays two, not four, nor four per item.
        let asked: Vec<(RecordKind, &str)> = ranked
            .iter()
            .filter(|i| i.node.key.label == "Event")
            .map(|i| (RecordKind::Event, i.node.key.id.as_str()))
            .collect();
        // The out-edges of an item the edge cache holds whole (expansion read its edge groups,
        // this recall or an earlier one at this graph generation) are taken from there: often
        // every item's, and the graph is not asked (copying them costs less than reading and
        // decoding them again, even from a local store).
        let by_edge = self.read.batch_reads_pay();
        let mut held: Vec<Option<Vec<Edge>>> = Vec::with_capacity(ranked.len());
        for item in &ranked {
            // Any limit: the outgoing edges are kept only when they were read whole.
            let cached = self.adjacent_cached(&item.node.key, 0)?;
            held.push(cached.and_then(|a| a.out_edges().map(<[Edge]>::to_vec)));
        }
        let keys: Vec<NodeKey> = ranked
            .iter()
            .zip(&held)
            .filter(|(_, held)| held.is_none())
            .map(|(i, _)| i.node.key.clone())
            .collect();
        let mut outgoing = Ok(Vec::new());
        let records = self.read.get_many_meanwhile(&asked, &mut || {
            outgoing = self.edges_many(&keys, None, Direction::Out);
        });
        let mut read = outgoing?.into_iter();
        let outgoing: Vec<Vec<Edge>> =
            held.into_iter().map(|h| h.or_else(|| read.next()).unwrap_or_default()).collect();
        let mut records = records?.into_iter();
        let mut parents = Vec::new();
        for item in &mut ranked {
            let (provenance, parent) = if item.node.key.label == "Event" {
                let entry = records.next().flatten();
                self.hydrate_event(&mut item.node, entry)?
            } else {
                self.provenance(&item.node)?
            };
            item.provenance = provenance;
            if let Some(parent) = parent {
                parents.push((item.node.key.clone(), parent));
            }
        }
        // A parent this recall read and admitted exists; the others are asked in one read. A
        // parent whose read failed counts as missing, as it did when read alone.
        // On a store whose reads are round trips, the items' out-edges in hand answer instead:
        // the projection links an event to the parent its record names by CAUSED_BY whenever
        // both exist (an edge to a parent not in the graph waits, parked, and leaves with a
        // deleted parent), so the edge is there exactly when the parent is.
        let caused: BTreeSet<(&NodeKey, &NodeKey)> = ranked
            .iter()
            .zip(&outgoing)
            .filter(|_| by_edge)
            .flat_map(|(item, edges)| {
                edges
                    .iter()
                    .filter(|e| e.key.edge_type == "CAUSED_BY")
                    .map(move |e| (&item.node.key, &e.key.to))
            })
            .collect();
        let mut absent: BTreeSet<NodeKey> = BTreeSet::new();
        let mut unknown: Vec<NodeKey> = Vec::new();
        for (child, parent) in &parents {
            if r.seen.get(parent).is_some_and(Option::is_some) {
                continue;
            }
            if !by_edge || child.label != "Event" {
                unknown.push(parent.clone());
            } else if !caused.contains(&(child, parent)) {
                absent.insert(parent.clone());
            }
        }
        let positions: BTreeMap<&NodeKey, Option<u64>> =
            ranked.iter().map(|i| (&i.node.key, i.provenance.log_position)).collect();
        // The entities an unexplained reference may name are checked (hub or not) below.
        let named_refs = r.unread(ranked.iter().zip(&outgoing).flat_map(|(item, edges)| {
            edges
                .iter()
                .filter(|e| e.key.edge_type == "REFERENCES" && !positions.contains_key(&e.key.to))
                .map(|e| &e.key.to)
                .filter(|to| item.node.key.label == "Event" && named_in_query(to, &query.text))
        }));
        let exist = self.parents_and_refs(&mut r, &unknown, named_refs)?;
        absent.extend(unknown.into_iter().zip(exist).filter(|(_, e)| !e).map(|(p, _)| p));
        let missing_parents: Vec<(NodeKey, NodeKey)> =
            parents.into_iter().filter(|(_, p)| absent.contains(p)).collect();
        let mut edges = Vec::new();
        let mut unknowns = Vec::new();
        for (item, item_edges) in ranked.iter().zip(outgoing) {
            for edge in item_edges {
                if positions.contains_key(&edge.key.to) {
                    let provenance = edge_provenance(&edge);
                    let log_position = if provenance == "record" {
                        positions.get(&edge.key.from).copied().flatten()
                    } else {
                        None
                    };
                    edges.push(PackEdge {
                        confidence: crate::edge_cache::edge_confidence(&edge),
                        provenance,
                        log_position,
                        edge,
                    });
                } else if edge.key.edge_type == "REFERENCES"
                    && item.node.key.label == "Event"
                    && named_in_query(&edge.key.to, &query.text)
                    // Last: the one test that reads the node.
                    && !is_hub_key(&mut r, &edge.key.to, p.hub_mentions)?
                {
                    unknowns.push(Unknown {
                        kind: "unexplained_entity",
                        item: item.node.key.clone(),
                        missing: edge.key.to.clone(),
                    });
                }
            }
        }
        for (item, missing) in missing_parents {
            unknowns.push(Unknown { kind: "missing_parent", item, missing });
        }
        unknowns.sort_by(|a, b| (a.kind, &a.item, &a.missing).cmp(&(b.kind, &b.item, &b.missing)));
        unknowns.dedup();
        let times: Vec<&str> = ranked
            .iter()
            .filter(|i| i.node.key.label == "Event")
            .filter_map(|i| i.node.props.get("occurred_at").and_then(Value::as_str))
            .collect();
        let span = |pick: fn(&DateTime<FixedOffset>, &DateTime<FixedOffset>) -> bool| {
            times
                .iter()
                .filter_map(|t| parse_time(t).map(|at| (at, *t)))
                .reduce(|a, b| if pick(&b.0, &a.0) { b } else { a })
                .map(|(_, t)| t.to_owned())
        };
        let state = ContextState {
            cues: cues.names(),
            anchors: anchors
                .nodes
                .iter()
                .filter(|k| r.seen.get(*k).is_some_and(Option::is_some))
                .cloned()
                .collect(),
            named: named.clone(),
            constraints: query.constraint_list(),
            time_span: span(|b, a| b < a).zip(span(|b, a| b > a)),
        };
        timings.stitch_us = lap(&mut clock);
        Ok(ContextPack {
            query: query.text.clone(),
            intent,
            intent_classified,
            items: ranked,
            edges,
            unknowns,
            state,
            candidates,
            trimmed,
            timings,
        })
    }

    /// The session a question like "what went wrong when U asked …" is about: that of the best
    /// BM25 hit that is an event of an actor the question names (its agent or user, or a
    /// REFERENCES to them), else of the best of the first `INFER_HITS` hits that references any
    /// entity it names; `None` if no hit does.
    fn session_of_best_hit(
        &self,
        r: &mut Lookups<'_, '_>,
        bm25_list: &[NodeKey],
        named: &[NodeKey],
    ) -> Result<Option<String>, Error> {
        let is_actor = |k: &NodeKey| is_actor_id(&k.id);
        let mut by_thing = None;
        let events: Vec<NodeKey> =
            bm25_list.iter().filter(|k| k.label == "Event").cloned().collect();
        if self.read.batch_reads_pay() {
            // Most of the list is looked at unless an early hit answers: on a store whose reads
            // are round trips, one read of all beats one per hit.
            r.prefetch(&events)?;
            r.read_references(&events)?;
        }
        for (rank, key) in events.iter().enumerate() {
            let Some(session) = r
                .admissible(key)?
                .and_then(|n| n.props.get("session_id"))
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                continue;
            };
            r.read_references(std::slice::from_ref(key))?;
            let hits: Vec<&NodeKey> = r
                .references_of(key)
                .iter()
                .map(|e| &e.key.to)
                .filter(|to| named.contains(to))
                .collect();
            if hits.iter().any(|k| is_actor(k)) {
                return Ok(Some(session));
            }
            if by_thing.is_none() && rank < INFER_HITS && !hits.is_empty() {
                by_thing = Some(session);
            }
        }
        Ok(by_thing)
    }

    /// The knowledge list: what is known about what the question names. Facts whose subject
    /// (then object) is an entity it names; with the decision cue, memories of kind decision,
    /// those of the sessions in scope first, then those among the other lists' hits.
    fn knowledge_list(
        &self,
        r: &mut Lookups<'_, '_>,
        named: &[NodeKey],
        sessions: &[String],
        cues: Cues,
        hits: [&[NodeKey]; 2],
        limit: usize,
    ) -> Result<Vec<NodeKey>, Error> {
        let mut out: Vec<NodeKey> = Vec::new();
        let push = |r: &mut Lookups<'_, '_>, key: NodeKey, out: &mut Vec<NodeKey>| {
            if out.len() < limit && !out.contains(&key) && r.admissible(&key)?.is_some() {
                out.push(key);
            }
            Ok::<_, Error>(())
        };
        if cues.decision {
            let is_decision = |r: &mut Lookups<'_, '_>, key: &NodeKey| -> Result<bool, Error> {
                Ok(key.label == "Memory"
                    && r.admissible(key)?.is_some_and(|m| {
                        m.props.get("kind").and_then(Value::as_str) == Some("decision")
                    }))
            };
            for session in sessions {
                let at = NodeKey::new("MemorySession", session);
                for edge in self.edges(&at, Some("IN_SESSION"), Direction::In)? {
                    if is_decision(r, &edge.key.from)? {
                        push(r, edge.key.from, &mut out)?;
                    }
                }
            }
            for key in hits.iter().flat_map(|l| l.iter()) {
                if is_decision(r, key)? {
                    push(r, key.clone(), &mut out)?;
                }
            }
        }
        // Every (role, entity) read, in one batched read (made with the entity list's when it
        // had these entities and this limit).
        let reads: Vec<(NodeKey, &str)> = KNOWLEDGE_ROLES
            .into_iter()
            .flat_map(|role| named.iter().map(move |entity| (entity.clone(), role)))
            .collect();
        if !reads.is_empty() {
            let read = match r.knowledge.take() {
                Some((asked, read_limit, edges)) if read_limit == limit && asked == reads => edges,
                _ => self.read.edges_limited_many(&reads, false, limit)?,
            };
            for edges in read {
                for edge in edges {
                    push(r, edge.key.from, &mut out)?;
                }
            }
        }
        Ok(out)
    }

    /// The scope list: the events of the runs in scope (the session and trace constraints, the
    /// sessions and traces the question names, or the session inferred by
    /// `session_of_best_hit`; at most `SCOPE_EVENTS` events of each) that fit the
    /// question's structure, best first. An event scores for each criterion it meets among those
    /// the question sets: two points for the kind of answer a cue asks for (`status` failed for
    /// the failure cue; else the session's first `observation.input` for the request cue, which
    /// with the failure cue only says which run is meant), one for being by an actor the
    /// question names and one for referencing another entity it names. With criteria, only
    /// events that score are listed, best first, then in session order; without, the session's
    /// first events in order.
    fn scope_list(
        &self,
        r: &mut Lookups<'_, '_>,
        scope: &Scope<'_>,
        limit: usize,
    ) -> Result<Vec<NodeKey>, Error> {
        let Scope { sessions, traces, inferred, named, actors, cues } = *scope;
        let things: BTreeSet<&NodeKey> = named.iter().filter(|k| !is_actor_id(&k.id)).collect();
        // (is of the kind of answer a cue asks for, points, session order, event)
        let mut scored: Vec<(bool, usize, usize, NodeKey)> = Vec::new();
        let mut order = 0;
        // Each run in scope as its events in time order: a session's from its order, a trace's
        // sorted by their time.
        let mut runs: Vec<Vec<NodeKey>> = Vec::new();
        for session in sessions {
            runs.push(r.session_slots(session)?.to_vec());
        }
        for trace in traces {
            let mut timed = Vec::new();
            let events: Vec<NodeKey> = self
                .read
                .trace_events(trace, SCOPE_EVENTS)?
                .into_iter()
                .map(|id| NodeKey::new("Event", id))
                .collect();
            r.prefetch(&events)?;
            for key in events {
                if let Some(at) = r.admissible(&key)?.and_then(occurred_at) {
                    timed.push((at, key));
                }
            }
            timed.sort();
            runs.push(timed.into_iter().map(|(_, k)| k).collect());
        }
        let asks_request = cues.request && !cues.failure;
        for run in runs {
            // Every event of the run is checked below: read them at once, and the entities
            // the admitted ones reference when the question names things.
            r.prefetch(&run)?;
            let mut admitted = Vec::new();
            for key in &run {
                if r.admissible(key)?.is_some() {
                    admitted.push(key.clone());
                }
            }
            if !things.is_empty() {
                r.read_references(&admitted)?;
            }
            // The request is the run's first input; a run with none was asked by the first event
            // that carries its user.
            let mut request: Option<NodeKey> = None;
            if asks_request {
                let mut by_user = None;
                for key in &run {
                    let Some(node) = r.admissible(key)? else { continue };
                    let text = |p: &str| node.props.get(p).and_then(Value::as_str);
                    if text("event_type") == Some("observation.input") {
                        request = Some(key.clone());
                        break;
                    }
                    if by_user.is_none() && text("user_id").is_some() {
                        by_user = Some(key.clone());
                    }
                }
                request = request.or(by_user);
            }
            for key in run {
                let Some(node) = r.admissible(&key)? else { continue };
                let text = |p: &str| node.props.get(p).and_then(Value::as_str);
                let failed = cues.failure && text("status") == Some("failed");
                let answer = failed || request.as_ref() == Some(&key);
                let mut points = 2 * usize::from(answer);
                if !actors.is_empty()
                    && text("agent_id").is_some_and(|a| actors.contains(&normalize_name(a)))
                {
                    points += 1;
                }
                if r.references_of(&key).iter().any(|e| things.contains(&e.key.to)) {
                    points += 1;
                }
                order += 1;
                scored.push((answer, points, order, key));
            }
        }
        let criteria = usize::from(cues.failure)
            + usize::from(!actors.is_empty())
            + usize::from(asks_request)
            + usize::from(!things.is_empty());
        // With a cue that names the kind of answer, the events of that kind are the answer: the
        // others only matched a name. A session found from a hit, not named, contributes only
        // answers.
        if inferred || scored.iter().any(|(answer, ..)| *answer) {
            scored.retain(|(answer, ..)| *answer);
        } else if criteria > 0 {
            scored.retain(|(_, points, ..)| *points > 0);
        }
        scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        scored.truncate(limit);
        Ok(scored.into_iter().map(|(.., k)| k).collect())
    }

    /// The ids an entity named in the question would have: its word n-grams (up to
    /// `MAX_NAME_WORDS`, single stop words left out) and its id-like tokens, each as
    /// `{type}:{name}` of every declared entity type (extensions' included). Most name no
    /// entity; [`Snapshot::anchors`] looks them all up in one read.
    fn named_entity_ids(&self, text: &str) -> Vec<String> {
        let words: Vec<&str> = text
            .split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '\'')))
            .map(|w| w.trim_matches(|c: char| matches!(c, '.' | '\'')))
            .map(|w| w.strip_suffix("'s").unwrap_or(w))
            .filter(|w| !w.is_empty())
            .collect();
        let entity_types: Vec<&str> = self
            .schema
            .enum_def("entity_type")
            .map(|e| e.values.iter().map(|v| v.name.as_str()).collect())
            .unwrap_or_default();
        let mut ids = Vec::new();
        for n in 1..=MAX_NAME_WORDS.min(words.len()) {
            for gram in words.windows(n) {
                if n == 1 && is_stop_word(&gram[0].to_lowercase()) {
                    continue;
                }
                let name = gram.join(" ");
                if normalize_name(&name).is_empty() {
                    continue;
                }
                for entity_type in &entity_types {
                    ids.push(entity_id(entity_type, &name));
                }
            }
        }
        // A name written as one token with separators (a path, a dotted tool name) is not a
        // run of words: look it up whole.
        for token in anchors::id_tokens(text) {
            for entity_type in &entity_types {
                ids.push(entity_id(entity_type, token));
            }
        }
        ids
    }

    /// Entities named in the question (`found`: the ids of [`Snapshot::named_entity_ids`]
    /// that exist), and the events that reference the specific ones (mentioned by at most
    /// `hub_mentions` events), ranked by how many named entities they reference, then (with
    /// the failure cue) failed first, then by recency.
    fn entity_matches(
        &self,
        r: &mut Lookups<'_, '_>,
        found: Vec<String>,
        p: RecallParams,
        cues: Cues,
    ) -> Result<(Vec<NodeKey>, Vec<NodeKey>), Error> {
        let mut named = BTreeSet::new();
        let found: Vec<NodeKey> = found.into_iter().map(|id| NodeKey::new("Entity", id)).collect();
        r.prefetch(&found)?;
        for key in found {
            if r.admissible(&key)?.is_some() {
                named.insert(key);
            }
        }
        let mut hits: BTreeMap<NodeKey, (usize, bool, String)> = BTreeMap::new();
        let mut specific = Vec::new();
        for entity in &named {
            if !is_hub_key(r, entity, p.hub_mentions)? {
                specific.push(entity.clone());
            }
        }
        // The events that reference the specific entities, and the knowledge list's facts
        // about every named one (`knowledge_list` reads nothing else of the entities): reads
        // that depend only on the entities, sent together.
        let roles: Vec<(NodeKey, &'static str)> = KNOWLEDGE_ROLES
            .into_iter()
            .flat_map(|role| named.iter().map(move |entity| (entity.clone(), role)))
            .collect();
        let mut reads = Vec::new();
        if !specific.is_empty() {
            reads.push(ManyRead::EdgesOf {
                keys: &specific,
                edge_type: Some("REFERENCES"),
                direction: Direction::In,
            });
        }
        if !roles.is_empty() {
            reads.push(ManyRead::EdgesLimited { reads: &roles, out: false, limit: p.prefilter });
        }
        let mut answers = self.read.read_together(&reads)?.into_iter();
        let referencing = if specific.is_empty() {
            Vec::new()
        } else {
            answered(answers.next())?.into_edges()?
        };
        if !roles.is_empty() {
            let edges = answered(answers.next())?.into_edges()?;
            r.knowledge = Some((roles, p.prefilter, edges));
        }
        r.prefetch(referencing.iter().flatten().map(|e| &e.key.from))?;
        for edges in referencing {
            for edge in edges {
                let Some(event) = r.admissible(&edge.key.from)? else { continue };
                let prop = |p: &str| event.props.get(p).and_then(Value::as_str);
                let failed = cues.failure && prop("status") == Some("failed");
                let at = prop("occurred_at").unwrap_or("");
                let e = hits.entry(edge.key.from.clone()).or_insert((0, failed, at.to_owned()));
                e.0 += 1;
            }
        }
        let mut list: Vec<(NodeKey, (usize, bool, String))> = hits.into_iter().collect();
        list.sort_by(|a, b| {
            (b.1.0, b.1.1).cmp(&(a.1.0, a.1.1)).then_with(|| b.1.2.cmp(&a.1.2)).then(a.0.cmp(&b.0))
        });
        list.truncate(p.prefilter);
        Ok((list.into_iter().map(|(k, _)| k).collect(), named.into_iter().collect()))
    }

    /// Maximal marginal relevance over the items' embeddings: each pick maximises
    /// `λ·score − (1 − λ)·max cosine to the picks so far`.
    fn diversify(&self, items: Vec<Item>, lambda: f64, k: usize) -> Result<Vec<Item>, Error> {
        let lambda = lambda.clamp(0.0, 1.0);
        let vectors: Vec<Option<Vec<f32>>> =
            items.iter().map(|i| self.vector(&i.node.key)).collect::<Result<_, _>>()?;
        let mut left: Vec<usize> = (0..items.len()).collect();
        let mut picked: Vec<usize> = Vec::new();
        while picked.len() < k && !left.is_empty() {
            let value = |i: usize| {
                let sim = picked
                    .iter()
                    .filter_map(|&j| match (&vectors[i], &vectors[j]) {
                        (Some(a), Some(b)) => Some(f64::from(ctxgraph_ann::dot_f32(a, b))),
                        _ => None,
                    })
                    .fold(0.0, f64::max);
                lambda * items[i].score - (1.0 - lambda) * sim
            };
            let (pos, _) = left
                .iter()
                .enumerate()
                .map(|(pos, &i)| (pos, value(i)))
                .fold((0, f64::NEG_INFINITY), |best, x| if x.1 > best.1 { x } else { best });
            picked.push(left.remove(pos));
        }
        let mut slots: Vec<Option<Item>> = items.into_iter().map(Some).collect();
        Ok(picked
            .into_iter()
            .filter_map(|i| slots[i].take())
            .map(|mut item| {
                item.score *= lambda;
                item
            })
            .collect())
    }

    /// Whether each of the parents `unknown` exists (a parent whose read failed counts as
    /// missing), and the nodes `refs` read ahead into `r`: two reads sent together, or, when
    /// that fails, made apart as they were before they went together.
    fn parents_and_refs(
        &self,
        r: &mut Lookups<'_, '_>,
        unknown: &[NodeKey],
        refs: Vec<NodeKey>,
    ) -> Result<Vec<bool>, Error> {
        let mut others = Vec::new();
        if !unknown.is_empty() {
            others.push(ManyRead::NodesExist(unknown));
        }
        let together = self.nodes_with(&refs, &others).and_then(|(nodes, answers)| {
            let exist = if unknown.is_empty() {
                Vec::new()
            } else {
                answered(answers.into_iter().next())?.into_exist()?
            };
            Ok((exist, nodes))
        });
        match together {
            Ok((exist, nodes)) => {
                r.fetched.extend(refs.into_iter().zip(nodes));
                Ok(exist)
            }
            Err(_) => {
                let exist = if unknown.is_empty() {
                    Vec::new()
                } else {
                    self.read.nodes_exist(unknown).unwrap_or_else(|_| vec![false; unknown.len()])
                };
                r.prefetch(&refs)?;
                Ok(exist)
            }
        }
    }

    /// [`ctxgraph_store::GraphReader::edges_of_many`]: the edges of many nodes in one batched
    /// read (nothing read for no nodes).
    fn edges_many(
        &self,
        keys: &[NodeKey],
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Vec<Edge>>, Error> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self.read.edges_of_many(keys, edge_type, direction)?)
    }

    /// [`Snapshot::hydrate`] then [`Snapshot::provenance`] of the event `node`, given its log
    /// record `entry` (read with the other items' records), decoding the record once for both.
    fn hydrate_event(
        &self,
        node: &mut Node,
        entry: Option<ctxgraph_store::LogEntry>,
    ) -> Result<(Provenance, Option<NodeKey>), Error> {
        let body: Option<Result<Value, serde_json::Error>> =
            entry.as_ref().map(|e| serde_json::from_str(&e.body));
        if !node.props.contains_key("payload")
            && let (Some(entry), Some(body)) = (&entry, &body)
        {
            crate::view::put_payload(node, entry, body.as_ref())?;
        }
        let parent =
            body.as_ref().and_then(|b| b.as_ref().ok()).and_then(crate::view::record_parent);
        Ok((event_provenance(node, entry), parent))
    }

    /// Provenance of a node, and for an event the causal parent its record names.
    ///
    /// A fact's is its latest claim (`global_position`) with that claim's `source` (else the
    /// first of the fact's sources); a memory's and a receipt's their record, with their author;
    /// a sentence's and a document's the document record, with its URL as the source. Nodes no
    /// record stands behind (summaries, entities, slot values) are derived: `ctxgraph`.
    pub(crate) fn provenance(&self, node: &Node) -> Result<(Provenance, Option<NodeKey>), Error> {
        if node.key.label != "Event" {
            let text = |p: &str| node.props.get(p).and_then(Value::as_str).map(str::to_owned);
            let entry = match node.key.label.as_str() {
                "Fact" => match node.props.get("global_position").and_then(Value::as_u64) {
                    Some(at) => self
                        .read
                        .read_from(at, 1)?
                        .into_iter()
                        .find(|e| e.position == at && e.kind == RecordKind::Fact),
                    None => None,
                },
                "Memory" => self.read.get(RecordKind::Memory, &node.key.id)?,
                "DecisionReceipt" => self.read.get(RecordKind::Receipt, &node.key.id)?,
                "Document" => self.read.get(RecordKind::Document, &node.key.id)?,
                "Sentence" => match text("document_id") {
                    Some(doc) => self.read.get(RecordKind::Document, &doc)?,
                    None => None,
                },
                _ => None,
            };
            let Some(entry) = entry else {
                let derived = Provenance {
                    log_position: None,
                    recorded_at: None,
                    created_by: "ctxgraph".into(),
                    source: None,
                };
                return Ok((derived, None));
            };
            let body: Value = serde_json::from_str(&entry.body).unwrap_or(Value::Null);
            let field = |p: &str| body.get(p).and_then(Value::as_str).map(str::to_owned);
            let first_source = || {
                node.props
                    .get("sources")
                    .and_then(Value::as_array)
                    .and_then(|s| s.first())
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            let (created_by, source) = match node.key.label.as_str() {
                "Fact" => (String::new(), field("source").or_else(first_source)),
                "Memory" => (text("created_by").unwrap_or_default(), field("source")),
                "DecisionReceipt" => (text("actor").unwrap_or_default(), None),
                _ => (String::new(), field("url")),
            };
            let provenance = Provenance {
                log_position: Some(entry.position),
                recorded_at: Some(entry.recorded_at),
                created_by,
                source,
            };
            return Ok((provenance, None));
        }
        let entry = self.read.get(RecordKind::Event, &node.key.id)?;
        let parent = entry
            .as_ref()
            .and_then(|e| crate::view::record_parent(&serde_json::from_str(&e.body).ok()?));
        Ok((event_provenance(node, entry), parent))
    }
}

/// An event's provenance from its record's log entry (if any) and its properties.
fn event_provenance(node: &Node, entry: Option<ctxgraph_store::LogEntry>) -> Provenance {
    let text = |p: &str| node.props.get(p).and_then(Value::as_str).map(str::to_owned);
    Provenance {
        log_position: entry.as_ref().map(|e| e.position),
        recorded_at: entry.map(|e| e.recorded_at),
        created_by: text("agent_id").unwrap_or_default(),
        source: node
            .props
            .get("payload")
            .and_then(|p| p.get("source"))
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}

/// Lower-case words of the question that carry content (no stop words, no one-letter words):
/// what recall gives BM25.
pub fn content_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() > 1 && !is_stop_word(w))
        .collect()
}

/// Whether an entity id (`{type}:{name}`) names an actor.
fn is_actor_id(id: &str) -> bool {
    id.split_once(':').is_some_and(|(entity_type, _)| ACTOR_TYPES.contains(&entity_type))
}

fn is_hub(node: &Node, hub_mentions: i64) -> bool {
    node.key.label == "Entity"
        && node.props.get("mention_count").and_then(Value::as_i64).unwrap_or(0) > hub_mentions
}

fn is_hub_key(r: &mut Lookups<'_, '_>, key: &NodeKey, hub_mentions: i64) -> Result<bool, Error> {
    Ok(r.admissible(key)?.is_some_and(|n| is_hub(n, hub_mentions)))
}

/// Whether an entity's name occurs in the question (so a pack that cannot explain it says so).
fn named_in_query(entity: &NodeKey, question: &str) -> bool {
    let name = entity.id.split_once(':').map_or(entity.id.as_str(), |(_, n)| n);
    !name.is_empty() && normalize_name(question).contains(name)
}

/// Where an edge comes from (see [`PackEdge::provenance`]).
fn edge_provenance(edge: &Edge) -> &'static str {
    let inferred = edge.props.get("inferred").and_then(Value::as_bool) == Some(true)
        || edge.props.get("mechanism").and_then(Value::as_str) == Some("inferred");
    match edge.key.edge_type.as_str() {
        _ if inferred => "inferred",
        "SIMILAR_TO" | "SUMMARIZES" | "RELATED_TO" => "inferred",
        "FOLLOWS" => "derived",
        _ => "record",
    }
}

/// The share of `words` (the question's BM25 words) that occur among the words of a node's
/// text (an event's summary, a summary's or memory's content, an entity's name): how well an
/// expanded item matches the question on its own.
fn word_match(node: &Node, words: &BTreeSet<&str>) -> f64 {
    if words.is_empty() {
        return 0.0;
    }
    let mut own = BTreeSet::new();
    for prop in ["summary", "content", "name", "text"] {
        if let Some(text) = node.props.get(prop).and_then(Value::as_str) {
            own.extend(content_words(text));
        }
    }
    let hits = words.iter().filter(|w| own.contains(**w)).count();
    hits as f64 / words.len() as f64
}

/// `other_actor` for an event whose agent or user is not among the `actors` the question names;
/// 1 when it names none, and for every other node.
fn focus_factor(node: &Node, actors: &BTreeSet<String>, other_actor: f64) -> f64 {
    if actors.is_empty() || node.key.label != "Event" {
        return 1.0;
    }
    let by = |p: &str| {
        node.props
            .get(p)
            .and_then(Value::as_str)
            .is_some_and(|a| actors.contains(&normalize_name(a)))
    };
    if by("agent_id") || by("user_id") { 1.0 } else { other_actor }
}

/// For an event with a time, whether it happened in one of `periods`; `None` for every other
/// node.
fn in_any_period(node: &Node, periods: &[dates::Period]) -> Option<bool> {
    if node.key.label != "Event" {
        return None;
    }
    occurred_at(node).map(|at| periods.iter().any(|p| p.contains(at)))
}

/// Whether `node` is an event that happened in one of `periods` (none when there are none).
fn in_periods(node: &Node, periods: &[dates::Period]) -> bool {
    in_any_period(node, periods) == Some(true)
}

/// `other_time` for an event that happened outside every period the question names; 1 when it
/// names none, and for every other node (an event without a time included).
fn time_focus(node: &Node, periods: &[dates::Period], other_time: f64) -> f64 {
    let outside = !periods.is_empty() && in_any_period(node, periods) == Some(false);
    if outside { other_time } else { 1.0 }
}

fn salience_factor(node: &Node, as_of: Option<DateTime<FixedOffset>>, alpha: f64) -> f64 {
    let (Some(at), Some(as_of)) = (occurred_at(node), as_of) else { return 1.0 };
    let age_days = (as_of - at).num_seconds() as f64 / 86_400.0;
    let int = |p: &str| node.props.get(p).and_then(Value::as_i64);
    let s =
        salience(age_days, int("importance_score").unwrap_or(5), int("access_count").unwrap_or(0));
    1.0 - alpha + alpha * s
}

/// About four characters per token, over the text an agent would be shown.
fn tokens(node: &Node) -> usize {
    let text = |p: &str| node.props.get(p).and_then(Value::as_str).map_or(0, str::len);
    let payload = node
        .props
        .get("payload")
        .and_then(|p| p.get("text"))
        .and_then(Value::as_str)
        .map_or(0, str::len);
    // A fact's words are its subject, predicate and object; a sentence's and a slot value's
    // their text and value; a receipt's its action and notes.
    let knowledge = match node.key.label.as_str() {
        "Fact" => crate::indexed::fact_text(node).map_or(0, |t| t.len()),
        _ => text("text") + text("value") + text("action") + text("notes"),
    };
    let chars = text("summary").max(payload) + text("content") + text("name") + knowledge + 16;
    chars.div_ceil(4)
}

impl crate::Engine {
    /// Recall for the store's owner ([`crate::Principal::local`]), who may see everything.
    ///
    /// The events returned are noted in the engine's [`crate::AccessTracker`] (in memory); they
    /// count towards salience once [`crate::Engine::flush_access`] writes them.
    pub fn recall(&self, query: &RecallQuery) -> Result<ContextPack, Error> {
        self.recall_as(query, &crate::Principal::local())
    }

    /// Recall as `who`, through its [`crate::Reader`] as every interface reads; notes the
    /// events returned like [`crate::Engine::recall`].
    pub fn recall_as(
        &self,
        query: &RecallQuery,
        who: &crate::Principal,
    ) -> Result<ContextPack, Error> {
        let mut clock = std::time::Instant::now();
        let vector =
            if query.text.trim().is_empty() { Vec::new() } else { self.embed_query(&query.text)? };
        let embed_us = lap(&mut clock);
        let mut pack = self.reader(who)?.recall(query, &vector, self.options().search)?;
        pack.timings.embed_us = embed_us;
        self.access.note_pack(&pack);
        Ok(pack)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(label: &str, props: Value) -> Node {
        let props = props.as_object().cloned().unwrap_or_default().into_iter().collect();
        Node { key: NodeKey::new(label, "x"), props }
    }

    #[test]
    fn focus_falls_on_events_by_other_actors_and_at_other_times() {
        let event =
            |agent: &str, at: &str| node("Event", json!({"agent_id": agent, "occurred_at": at}));
        let may = dates::named_periods("in May 2023");
        let actors: BTreeSet<String> = ["caroline".to_owned()].into();
        let by_caroline_in_may = event("Caroline", "2023-05-08T13:56:00Z");
        let by_melanie_in_june = event("Melanie", "2023-06-08T13:56:00Z");
        assert_eq!(focus_factor(&by_caroline_in_may, &actors, 0.5), 1.0);
        assert_eq!(focus_factor(&by_melanie_in_june, &actors, 0.5), 0.5);
        assert_eq!(focus_factor(&by_melanie_in_june, &BTreeSet::new(), 0.5), 1.0);
        assert_eq!(time_focus(&by_caroline_in_may, &may, 0.5), 1.0);
        assert_eq!(time_focus(&by_melanie_in_june, &may, 0.5), 0.5);
        assert_eq!(time_focus(&by_melanie_in_june, &[], 0.5), 1.0);
        assert!(in_periods(&by_caroline_in_may, &may) && !in_periods(&by_melanie_in_june, &may));
    }

    #[test]
    fn nodes_without_an_event_time_are_never_dated_and_never_out_of_focus() {
        let may = dates::named_periods("in May 2023");
        let entity = node("Entity", json!({"name": "Caroline"}));
        let undated = node("Event", json!({"agent_id": "Caroline"}));
        for n in [&entity, &undated] {
            assert!(!in_periods(n, &may), "only events in the period are dated");
            assert_eq!(time_focus(n, &may, 0.5), 1.0);
        }
        assert_eq!(focus_factor(&entity, &["caroline".to_owned()].into(), 0.5), 1.0);
    }
}
