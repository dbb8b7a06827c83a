//! Types, slots, checklists and goals (seed 001): writing their records, checking what they
//! reference, and the two questions a checklist answers — what is still missing for an entity
//! (`Snapshot::check_checklist`), and which slot to ask about next to tell candidates apart
//! (`Snapshot::next_slot`).
//!
//! # Existence at write time
//! A record that names an entity by id, a type or a checklist is refused (and nothing is
//! written) when it does not exist in the graph, or earlier in the same batch; an entity named by
//! `{name, entity_type, at}` is created. [`Engine::ingest_batch`] runs the check for every record,
//! so JSONL ingestion obeys it too.
//!
//! # Choosing the next slot: expected information gain
//! The candidates are equally likely (a uniform prior over `n` of them), so the uncertainty
//! about which one is meant is `H(C) = log2 n` bits. Asking about a slot spec partitions the
//! candidates by their answer: the set of their distinct normalised values for the spec (a
//! `one` spec has at most one). A missing value is not an answer: the `u` candidates without a
//! value could turn out to have any of the answers, so none of them is ruled out by one, and they
//! stay in every outcome. Over the `k = n − u` candidates with a value, group `g` holds `n_g` of
//! them; the answer is `g` with probability `n_g / k` and leaves the `n_g + u` candidates
//! consistent with it, `H(C | g) = log2 (n_g + u)` bits, so
//!
//! ```text
//! IG(spec) = H(C) − Σ_g (n_g / k) · H(C | g)
//!          = log2 n − Σ_g (n_g / k) · log2 (n_g + u)
//! ```
//!
//! and 0 when no candidate has a value (`k = 0`). Without unknowns it is the entropy of the
//! partition: 0 when every candidate gives the same answer and log2 n when every answer differs;
//! each unknown candidate lowers it, so a slot whose values are missing is not asked about for
//! the spread of answers that it does not have. The sum runs over the group sizes in ascending order, so equal partitions give
//! bit-identical gains.
//!
//! # Goals bias the prior
//! A user's goal that influences the checklist and prefers slot values (`prefers`) makes the
//! candidates holding one of them more likely: each such goal multiplies a candidate's weight
//! by `1 + 1 / (1 + priority)` (2 for priority 0, the highest, or none; 1.5 for priority 1),
//! and the prior is the weights normalised. With weights the formula above becomes
//!
//! ```text
//! IG(spec) = H(w) − Σ_g (W_g / W_k) · H(w restricted to g ∪ unknown)
//! ```
//!
//! where `H(w)` is the entropy of the normalised weights, `W_g` a group's weight and `W_k` the
//! weight of the candidates with a value; with equal weights it is the formula above,
//! bit for bit. A goal so changes the gains, and so which slot is asked: an answer the goal
//! already makes likely tells less.
//!
//! # Cost, and asking against searching
//! A slot spec carries the cost of asking about it (`cost`, 1 by default). The ranking is by
//! gain per unit of cost; gains per cost within 1e-12 are ties, broken by fewer unknown
//! candidates, then required before optional, then the checklist's own order. The best slot is
//! the first, if its gain is above zero.
//!
//! The answer may already be in the graph: for each answer a spec can have, the caller looks
//! for facts and events that mention it (`evidence`). A search finds the answer when it is one
//! of those, with probability `p_found`, the summed probability of the answers with evidence;
//! searching first is then worth `gain · p_found / search_cost` bits per unit of cost against
//! `gain / cost` for asking, and the recommendation is the best of every spec's two actions
//! (asking wins ties).

use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_ontology::graph::{Direction, Edge, Node, NodeKey};
use ctxgraph_ontology::{
    Cardinality, EntityTarget, RecordBody, RecordKind, SlotSpec, SlotsRecord, SpecRelation,
    ValidRecord, Violation, checklist_from_file, entity_id, normalize_name, validate_value,
};
use ctxgraph_store::GraphReader;
use serde_json::{Map, Value, json};

use crate::engine::{Engine, decode};
use crate::error::Error;
use crate::ingest::IngestOutcome;
use crate::view::Snapshot;

/// Gains closer than this are ties (see the module docs).
const GAIN_TIE: f64 = 1e-12;

/// What a search of the graph costs by default, in units of one question: reading memory is
/// cheaper than interrupting the user.
pub const DEFAULT_SEARCH_COST: f64 = 0.25;

/// Most evidence nodes kept per answer (the search reads this many hits).
pub const EVIDENCE_PER_ANSWER: usize = 5;

/// Most edges of one kind read for one node; far above any real slot or type count.
const MAX_EDGES: usize = 100_000;

/// Nodes read once per question (see `Snapshot::cached`).
type NodeCache = BTreeMap<NodeKey, Option<Node>>;

/// An entity's slot values and its types as (id, name).
type Facts = (Vec<SlotFill>, Vec<(String, String)>);

/// An entity named in a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntityArg {
    /// An existing entity, by id `{entity_type}:{name}` (the name is normalised).
    Id(String),
    /// An entity by name and type: created when missing.
    Named {
        /// The name as written.
        name: String,
        /// Its entity type (aliases accepted).
        entity_type: String,
    },
}

/// A checklist defined through the API (the same fields as a checklist file).
#[derive(Debug, Clone, PartialEq)]
pub struct ChecklistDraft {
    /// Its name, e.g. `IdentifyFilm`.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// Its slot specs, in order.
    pub slots: Vec<SlotSpecDraft>,
}

/// One slot spec of a [`ChecklistDraft`].
#[derive(Debug, Clone, PartialEq)]
pub struct SlotSpecDraft {
    /// Its name, unique in the checklist.
    pub name: String,
    /// Slot labels or type names that satisfy it; empty means `[name]`.
    pub expect_labels: Vec<String>,
    /// Through which relation.
    pub relation: SpecRelation,
    /// Whether the checklist is incomplete without it.
    pub required: bool,
    /// One value or many.
    pub cardinality: Cardinality,
    /// What asking about it costs, in units of one question (1 is the default).
    pub cost: f64,
}

/// A goal added through the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalDraft {
    /// Its name.
    pub name: String,
    /// The user it belongs to (an entity of type `user`).
    pub user: EntityArg,
    /// What it means.
    pub description: Option<String>,
    /// Time horizon in words.
    pub horizon: Option<String>,
    /// Priority, 0 the highest.
    pub priority: Option<u64>,
    /// Names of the checklists it influences (each must be defined).
    pub influences: Vec<String>,
    /// Slot values it favours among candidates, as (slot label, value).
    pub prefers: Vec<(String, String)>,
}

/// A declared type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    /// Normalised name.
    pub id: String,
    /// Name as declared.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Ids of its instances, sorted.
    pub instances: Vec<String>,
}

/// One value an entity has for a slot.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotFill {
    /// Normalised slot label (`type` for an INSTANCE_OF answer).
    pub slot: String,
    /// The value as shown.
    pub value: String,
    /// The normalised value, what comparisons use.
    pub value_key: String,
    /// Highest confidence recorded (none for INSTANCE_OF).
    pub confidence: Option<f64>,
    /// Every source recorded, sorted.
    pub sources: Vec<String>,
}

/// A checklist as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Checklist {
    /// Normalised name.
    pub id: String,
    /// Name as defined.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// Its specs, in order.
    pub specs: Vec<SlotSpec>,
}

/// A goal as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goal {
    /// `{user id}|{normalised name}`.
    pub id: String,
    /// Name.
    pub name: String,
    /// The user's entity id.
    pub user_id: String,
    /// What it means.
    pub description: Option<String>,
    /// Horizon.
    pub horizon: Option<String>,
    /// Priority, 0 the highest.
    pub priority: Option<u64>,
    /// Ids of the checklists it influences, sorted.
    pub influences: Vec<String>,
    /// Slot values it favours, as (normalised slot label, value as written).
    pub prefers: Vec<(String, String)>,
}

impl Goal {
    /// How much it multiplies the prior weight of a candidate holding a value it prefers:
    /// `1 + 1 / (1 + priority)`, 2 for priority 0 or none.
    pub fn boost(&self) -> f64 {
        1.0 + 1.0 / (1.0 + self.priority.unwrap_or(0) as f64)
    }
}

/// A goal of the prior of a `next` question, with the candidates it favours.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalBias {
    /// The goal.
    pub goal: Goal,
    /// Its multiplier (see [`Goal::boost`]).
    pub boost: f64,
    /// Candidates holding one of its preferred values, in the candidates' order.
    pub favoured: Vec<String>,
}

/// What a spec's answers have in the graph: facts and events that mention them.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchLead {
    /// Per answer with evidence: the answer, and the ids of the facts and events mentioning it.
    pub found: Vec<(String, Vec<String>)>,
    /// Probability that the answer is one of those found.
    pub p_found: f64,
    /// Expected gain of searching first, in bits: `gain · p_found`.
    pub gain: f64,
    /// Bits per unit of cost: `gain · p_found / search_cost`.
    pub gain_per_cost: f64,
}

/// Ask the user, or search the graph first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Ask the user about the slot.
    Ask,
    /// Search the graph for the answers found (`SearchLead::found`), then ask if none holds.
    Search,
}

impl Action {
    /// `ask` or `search`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Ask => "ask",
            Action::Search => "search",
        }
    }
}

/// The action `next` recommends.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    /// Ask or search.
    pub action: Action,
    /// The slot spec it is about.
    pub slot: String,
    /// Bits per unit of cost of the action.
    pub gain_per_cost: f64,
    /// What to search for (the answers with evidence), for a search; empty for a question.
    pub query: Vec<String>,
}

/// Where one spec stands for one entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecStatus {
    /// It has a value (and no more than its cardinality allows).
    Satisfied,
    /// It has no value.
    Missing,
    /// A `one` spec with several distinct values.
    TooMany,
}

impl SpecStatus {
    /// `satisfied`, `missing` or `too_many`.
    pub fn as_str(self) -> &'static str {
        match self {
            SpecStatus::Satisfied => "satisfied",
            SpecStatus::Missing => "missing",
            SpecStatus::TooMany => "too_many",
        }
    }
}

/// One spec of a checklist check.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecCheck {
    /// The spec.
    pub spec: SlotSpec,
    /// Its status.
    pub status: SpecStatus,
    /// The entity's values for it, by slot then value.
    pub values: Vec<SlotFill>,
}

/// `checklist check`: every spec of a checklist for one entity.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The checklist.
    pub checklist: String,
    /// The entity id.
    pub entity: String,
    /// Per spec, in the checklist's order.
    pub specs: Vec<SpecCheck>,
}

impl CheckReport {
    /// No required spec missing and no cardinality violated.
    pub fn complete(&self) -> bool {
        self.specs.iter().all(|s| match s.status {
            SpecStatus::Satisfied => true,
            SpecStatus::Missing => !s.spec.required,
            SpecStatus::TooMany => false,
        })
    }
}

/// One group of candidates that give the same answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerGroup {
    /// The answer (distinct values joined by ` | `); `None` for candidates without a value.
    pub answer: Option<String>,
    /// Candidate entity ids, in the order given.
    pub candidates: Vec<String>,
    /// How likely this answer is under the prior (among the answers; `None` for the unknown
    /// group, which is in every outcome).
    pub probability: Option<f64>,
}

/// The expected information gain of asking about one spec.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotGain {
    /// The spec.
    pub spec: SlotSpec,
    /// Expected information gain, in bits.
    pub gain: f64,
    /// The cost of asking (the spec's).
    pub cost: f64,
    /// `gain / cost`: what the ranking orders by.
    pub gain_per_cost: f64,
    /// The partition of the candidates: answered groups by answer, then the unknown group.
    pub groups: Vec<AnswerGroup>,
    /// Candidates with no value for it.
    pub unknown: usize,
    /// Facts and events that mention its answers; `None` when none does.
    pub search: Option<SearchLead>,
}

/// `checklist next`: every spec ranked by expected information gain over the candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct NextReport {
    /// The checklist.
    pub checklist: String,
    /// The candidates (entity ids), as given.
    pub candidates: Vec<String>,
    /// Each candidate's prior probability, in the candidates' order (equal without goals).
    pub prior: Vec<f64>,
    /// The goals that biased the prior (influencing the checklist, preferring a value some
    /// candidate holds).
    pub goals: Vec<GoalBias>,
    /// Uncertainty before asking: the entropy of the prior, in bits (log2 of the candidate
    /// count without goals).
    pub entropy: f64,
    /// What a search of the graph costs, in units of one question.
    pub search_cost: f64,
    /// Specs, best first (see the module docs for the order).
    pub ranking: Vec<SlotGain>,
}

impl NextReport {
    /// The slot to ask about: the best, unless no slot splits the candidates at all.
    pub fn best(&self) -> Option<&SlotGain> {
        self.ranking.first().filter(|g| g.gain > GAIN_TIE)
    }

    /// The action to take: over every spec that splits the candidates, asking (gain per cost)
    /// or searching the graph first (expected gain per search cost), the best; asking wins
    /// ties. `None` when no spec splits the candidates.
    pub fn recommendation(&self) -> Option<Recommendation> {
        let mut best: Option<Recommendation> = None;
        let mut consider = |r: Recommendation| {
            if best.as_ref().is_none_or(|b| r.gain_per_cost > b.gain_per_cost + GAIN_TIE) {
                best = Some(r);
            }
        };
        for g in self.ranking.iter().filter(|g| g.gain > GAIN_TIE) {
            consider(Recommendation {
                action: Action::Ask,
                slot: g.spec.name.clone(),
                gain_per_cost: g.gain_per_cost,
                query: Vec::new(),
            });
            if let Some(lead) = &g.search {
                consider(Recommendation {
                    action: Action::Search,
                    slot: g.spec.name.clone(),
                    gain_per_cost: lead.gain_per_cost,
                    query: lead.found.iter().map(|(answer, _)| answer.clone()).collect(),
                });
            }
        }
        best
    }
}

/// Options of a `next` question beyond the checklist and the candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct NextOptions {
    /// Only this user's goals bias the prior (an entity id); `None`: every goal that
    /// influences the checklist.
    pub user: Option<String>,
    /// What a search of the graph costs, in units of one question (above 0).
    pub search_cost: f64,
    /// Whether to look for the answers in the graph (facts and events) at all.
    pub search: bool,
}

impl Default for NextOptions {
    fn default() -> Self {
        NextOptions { user: None, search_cost: DEFAULT_SEARCH_COST, search: true }
    }
}

/// Expected information gain, in bits, of an answer that splits `n` equally likely candidates
/// into groups of the given sizes: `log2 n − Σ (n_g / n) log2 n_g`. Zero for no candidates.
pub fn information_gain(group_sizes: &[usize]) -> f64 {
    information_gain_with_unknown(group_sizes, 0)
}

/// Expected information gain, in bits, of asking about a slot whose answered candidates form
/// groups of the given sizes while `unknown` candidates have no value (they stay in every
/// outcome, see the module docs): `log2 n − Σ (n_g / k) log2 (n_g + u)`. Zero when no candidate
/// has a value.
pub fn information_gain_with_unknown(group_sizes: &[usize], unknown: usize) -> f64 {
    let groups: Vec<Vec<f64>> = group_sizes.iter().map(|&s| vec![1.0; s]).collect();
    weighted_information_gain(&groups, &vec![1.0; unknown])
}

/// Entropy, in bits, of the distribution the positive `weights` give once normalised; exactly
/// `log2 n` when they are all equal (so an unbiased prior gives the uniform formula bit for bit).
pub fn entropy(weights: &[f64]) -> f64 {
    let Some(&first) = weights.first() else { return 0.0 };
    if weights.iter().all(|&w| w == first) {
        return (weights.len() as f64).log2();
    }
    let total: f64 = weights.iter().sum();
    -weights.iter().filter(|&&w| w > 0.0).map(|&w| (w / total) * (w / total).log2()).sum::<f64>()
}

/// Expected information gain, in bits, of asking about a slot whose answered candidates form
/// `groups` (each a list of prior weights) while the candidates of `unknown` have no value:
/// `H(w) − Σ_g (W_g / W_k) · H(g ∪ unknown)` (see the module docs). Zero when no candidate has a
/// value. The sum runs over the groups by ascending weight, so equal partitions give
/// bit-identical gains.
pub fn weighted_information_gain(groups: &[Vec<f64>], unknown: &[f64]) -> f64 {
    let mut parts: Vec<(f64, f64)> = groups
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| {
            let mut with_unknown = g.clone();
            with_unknown.extend_from_slice(unknown);
            (g.iter().sum::<f64>(), entropy(&with_unknown))
        })
        .collect();
    if parts.is_empty() {
        return 0.0;
    }
    parts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let known: f64 = parts.iter().map(|p| p.0).sum();
    let all: Vec<f64> = groups.iter().flatten().chain(unknown).copied().collect();
    let conditional: f64 = parts.iter().map(|(w, h)| (w / known) * h).sum();
    // Rounding can leave -0.0 or a hair below zero for a single group.
    (entropy(&all) - conditional).max(0.0)
}

fn record_error(violation: Violation) -> Error {
    Error::Validation(vec![violation].into())
}

fn opt(m: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(v) = value {
        m.insert(key.into(), v.into());
    }
}

/// The canonical entity-type names of the schema, longest first (so `a:b` types win).
fn split_entity_id<'a>(types: &'a [String], id: &str) -> Option<(&'a str, String)> {
    types
        .iter()
        .filter(|t| {
            id.len() > t.len() && id.starts_with(t.as_str()) && id[t.len()..].starts_with(':')
        })
        .max_by_key(|t| t.len())
        .map(|t| (t.as_str(), entity_id(t, &id[t.len() + 1..])))
}

impl Engine {
    fn entity_types(&self) -> Vec<String> {
        self.schema
            .enum_def("entity_type")
            .map(|e| e.values.iter().map(|v| v.name.clone()).collect())
            .unwrap_or_default()
    }

    /// The JSON an [`EntityArg`] becomes in a record: an existing entity by id (normalised), a
    /// named one by id when it exists already (so the record does not count as a new mention),
    /// otherwise `{name, entity_type, at}` with `at` now.
    fn entity_json(&self, arg: &EntityArg) -> Result<Value, Error> {
        match arg {
            EntityArg::Id(id) => {
                let types = self.entity_types();
                Ok(match split_entity_id(&types, id) {
                    Some((_, normal)) => Value::String(normal),
                    // Validation names what is wrong with it.
                    None => Value::String(id.clone()),
                })
            }
            EntityArg::Named { name, entity_type } => {
                let canonical = self
                    .schema
                    .enum_def("entity_type")
                    .and_then(|e| e.canonical(entity_type))
                    .map(str::to_owned);
                if let Some(t) = canonical {
                    let id = entity_id(&t, name);
                    if self.snapshot()?.node(&NodeKey::new("Entity", &id))?.is_some() {
                        return Ok(Value::String(id));
                    }
                }
                let at = crate::knowledge::now();
                Ok(json!({"name": name, "entity_type": entity_type, "at": at}))
            }
        }
    }

    /// Validate `value` as a record and write it (checked and projected like any record).
    fn write_record(&mut self, value: Value) -> Result<IngestOutcome, Error> {
        let record = validate_value(&self.schema, &self.options().limits, value)?;
        self.write_valid(record)
    }

    fn write_valid(&mut self, record: ValidRecord) -> Result<IngestOutcome, Error> {
        self.append_one(&record)
    }

    /// Declare a Type (`type` record). Declaring it again identically is a duplicate; with a
    /// different description, a conflict.
    pub fn declare_type(
        &mut self,
        name: &str,
        description: Option<&str>,
    ) -> Result<IngestOutcome, Error> {
        let mut m = Map::new();
        m.insert("record_type".into(), "type".into());
        m.insert("name".into(), name.into());
        opt(&mut m, "description", description);
        self.write_record(Value::Object(m))
    }

    /// Record that an entity is an instance of a declared type (`instance_of` record).
    pub fn add_instance(
        &mut self,
        entity: &EntityArg,
        type_name: &str,
    ) -> Result<IngestOutcome, Error> {
        let m = json!({
            "record_type": "instance_of", "entity": self.entity_json(entity)?, "type": type_name,
        });
        self.write_record(m)
    }

    /// Record one observation of an entity's slot value (`slot` record): the entity's HAS_SLOT
    /// edge keeps the highest confidence ever recorded and every source.
    pub fn set_slot(
        &mut self,
        entity: &EntityArg,
        slot: &str,
        value: &str,
        confidence: Option<f64>,
        source: Option<&str>,
    ) -> Result<IngestOutcome, Error> {
        let mut m = Map::new();
        m.insert("record_type".into(), "slot".into());
        m.insert("entity".into(), self.entity_json(entity)?);
        m.insert("slot".into(), slot.into());
        m.insert("value".into(), value.into());
        if let Some(c) = confidence {
            // A NaN or infinity has no JSON form: report it as the rule it breaks.
            let number = serde_json::Number::from_f64(c).ok_or_else(|| {
                record_error(Violation::with_text(
                    "$.confidence",
                    Some(&c.to_string()),
                    "slots.confidence_range",
                    "confidence must lie in [0, 1]",
                ))
            })?;
            m.insert("confidence".into(), Value::Number(number));
        }
        opt(&mut m, "source", source);
        self.write_record(Value::Object(m))
    }

    /// Define a checklist from a TOML or JSON file's text (see [`checklist_from_file`]).
    pub fn define_checklist_file(&mut self, text: &str) -> Result<IngestOutcome, Error> {
        let record = checklist_from_file(&self.schema, &self.options().limits, text)?;
        self.write_valid(record)
    }

    /// Define a checklist through the API. Defining it again identically is a duplicate;
    /// differently, a conflict (checklists are immutable: give a new one a new name).
    pub fn define_checklist(&mut self, draft: &ChecklistDraft) -> Result<IngestOutcome, Error> {
        // A NaN or infinity has no JSON form (it would read as the default cost): refused here.
        if let Some((i, s)) = draft.slots.iter().enumerate().find(|(_, s)| !s.cost.is_finite()) {
            return Err(record_error(Violation::with_text(
                format!("$.slots[{i}].cost"),
                Some(&s.cost.to_string()),
                "checklist.cost",
                "the cost of asking is a finite number above 0",
            )));
        }
        let slots: Vec<Value> = draft
            .slots
            .iter()
            .map(|s| {
                json!({
                    "name": s.name, "expect_labels": s.expect_labels,
                    "relation": s.relation.as_str(), "required": s.required,
                    "cardinality": s.cardinality.as_str(), "cost": s.cost,
                })
            })
            .collect();
        let mut m = Map::new();
        m.insert("record_type".into(), "checklist".into());
        m.insert("name".into(), draft.name.clone().into());
        opt(&mut m, "description", draft.description.as_deref());
        m.insert("slots".into(), slots.into());
        self.write_record(Value::Object(m))
    }

    /// Add a user's goal (`goal` record) influencing defined checklists. Adding the same goal
    /// again is a duplicate, even when the first write created the user.
    pub fn add_goal(&mut self, draft: &GoalDraft) -> Result<IngestOutcome, Error> {
        let mut m = Map::new();
        m.insert("record_type".into(), "goal".into());
        m.insert("name".into(), draft.name.clone().into());
        m.insert("user".into(), self.entity_json(&draft.user)?);
        opt(&mut m, "description", draft.description.as_deref());
        opt(&mut m, "horizon", draft.horizon.as_deref());
        if let Some(p) = draft.priority {
            m.insert("priority".into(), p.into());
        }
        if !draft.influences.is_empty() {
            m.insert("influences".into(), draft.influences.clone().into());
        }
        if !draft.prefers.is_empty() {
            let prefers: Vec<Value> = draft
                .prefers
                .iter()
                .map(|(slot, value)| json!({"slot": slot, "value": value}))
                .collect();
            m.insert("prefers".into(), prefers.into());
        }
        let record = validate_value(&self.schema, &self.options().limits, Value::Object(m))?;
        if let RecordBody::Slots(SlotsRecord::Goal(goal)) = record.body() {
            let read = self.backend.begin_read()?;
            if let Some(entry) = read.get(RecordKind::Goal, &goal.goal_id)?
                && let RecordBody::Slots(SlotsRecord::Goal(stored)) =
                    decode(&self.schema, &entry)?.body()
                && same_goal(stored, goal)
            {
                return Ok(IngestOutcome::Duplicate(entry.position));
            }
        }
        self.write_valid(record)
    }
}

/// Two goal records that say the same thing, whichever way they named the user.
fn same_goal(a: &ctxgraph_ontology::GoalRecord, b: &ctxgraph_ontology::GoalRecord) -> bool {
    let set =
        |g: &ctxgraph_ontology::GoalRecord| g.influences.iter().cloned().collect::<BTreeSet<_>>();
    let prefers = |g: &ctxgraph_ontology::GoalRecord| {
        g.prefers
            .iter()
            .map(|p| (p.slot.clone(), normalize_name(&p.value)))
            .collect::<BTreeSet<_>>()
    };
    (&a.name, a.user.entity_id(), &a.description, &a.horizon, a.priority, set(a), prefers(a))
        == (&b.name, b.user.entity_id(), &b.description, &b.horizon, b.priority, set(b), prefers(b))
}

/// Nodes a record of this family brings into the graph, for the existence checks of later
/// records in the same batch before it is projected: entity ids and Type/Checklist keys.
pub(crate) fn created(
    record: &SlotsRecord,
    entities: &mut BTreeSet<String>,
    nodes: &mut BTreeSet<NodeKey>,
) {
    if let Some(target @ EntityTarget::Create { .. }) = record.entity() {
        entities.insert(target.entity_id());
    }
    match record {
        SlotsRecord::Type(t) => {
            nodes.insert(NodeKey::new("Type", &t.type_id));
        }
        SlotsRecord::Checklist(c) => {
            nodes.insert(NodeKey::new("Checklist", &c.checklist_id));
        }
        SlotsRecord::InstanceOf(_) | SlotsRecord::Slot(_) | SlotsRecord::Goal(_) => {}
    }
}

/// What a record references that does not exist (in the graph, nor among `entities` and
/// `nodes` created earlier in the batch): one violation each, or `None` when all exist.
pub(crate) fn missing_refs(
    w: &dyn GraphReader,
    record: &SlotsRecord,
    entities: &BTreeSet<String>,
    nodes: &BTreeSet<NodeKey>,
) -> Result<Option<Vec<Violation>>, Error> {
    let mut out = Vec::new();
    let node_known =
        |key: &NodeKey| -> Result<bool, Error> { Ok(nodes.contains(key) || w.node_exists(key)?) };
    if let Some(EntityTarget::Existing { id, .. }) = record.entity()
        && !entities.contains(id)
        && !w.node_exists(&NodeKey::new("Entity", id))?
    {
        let field = if matches!(record, SlotsRecord::Goal(_)) { "$.user" } else { "$.entity" };
        out.push(Violation::for_str(
            field,
            id,
            "slots.unknown_entity",
            "no entity with this id: name an existing entity, or give {name, entity_type, at} (on the command line, --entity-type) to create it",
        ));
    }
    match record {
        SlotsRecord::InstanceOf(i) => {
            if !node_known(&NodeKey::new("Type", &i.type_id))? {
                out.push(Violation::for_str(
                    "$.type",
                    &i.type_id,
                    "slots.unknown_type",
                    "no type with this name is declared: declare it first (`ctxgraph type add NAME`)",
                ));
            }
        }
        SlotsRecord::Goal(g) => {
            for (i, c) in g.influences.iter().enumerate() {
                if !node_known(&NodeKey::new("Checklist", c))? {
                    out.push(Violation::for_str(
                        format!("$.influences[{i}]"),
                        c,
                        "goal.unknown_checklist",
                        "no checklist with this name is defined: define it first (`ctxgraph checklist define FILE`)",
                    ));
                }
            }
        }
        SlotsRecord::Type(_) | SlotsRecord::Slot(_) | SlotsRecord::Checklist(_) => {}
    }
    Ok((!out.is_empty()).then_some(out))
}

fn text(node: &Node, name: &str) -> Option<String> {
    node.props.get(name).and_then(Value::as_str).map(str::to_owned)
}

fn spec_of(node: &Node) -> Option<(u64, SlotSpec)> {
    let labels = node
        .props
        .get("expect_labels")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let spec = SlotSpec {
        name: text(node, "name")?,
        expect_labels: labels,
        relation: SpecRelation::parse(node.props.get("relation")?.as_str()?)?,
        required: node.props.get("required")?.as_bool()?,
        cardinality: Cardinality::parse(node.props.get("cardinality")?.as_str()?)?,
        cost: node.props.get("cost").and_then(Value::as_f64).unwrap_or(1.0),
    };
    Some((node.props.get("position")?.as_u64()?, spec))
}

impl Snapshot<'_> {
    fn out_edges(&self, key: &NodeKey, edge_type: &str) -> Result<Vec<Edge>, Error> {
        Ok(self.read.edges_of(key, Some(edge_type), Direction::Out)?)
    }

    fn all_nodes(&self, label: &str) -> Result<Vec<Node>, Error> {
        let mut out: Vec<Node> = Vec::new();
        loop {
            let after = out.last().map(|n| n.key.id.clone());
            let page = self.read.nodes_by_label(label, after.as_deref(), 1_000)?;
            if page.is_empty() {
                return Ok(out);
            }
            out.extend(page);
        }
    }

    fn unknown(field: &str, value: &str, rule: &'static str, message: String) -> Error {
        record_error(Violation::for_str(field, value, rule, message))
    }

    /// Every declared type with its instances, by id.
    pub(crate) fn types(&self) -> Result<Vec<TypeInfo>, Error> {
        let mut out = Vec::new();
        for node in self.all_nodes("Type")? {
            let mut instances: Vec<String> = self
                .read
                .edges_of(&node.key, Some("INSTANCE_OF"), Direction::In)?
                .into_iter()
                .map(|e| e.key.from.id)
                .collect();
            instances.sort();
            out.push(TypeInfo {
                id: node.key.id.clone(),
                name: text(&node, "name").unwrap_or_else(|| node.key.id.clone()),
                description: text(&node, "description"),
                instances,
            });
        }
        Ok(out)
    }

    /// A node read through `cache`: candidates share their types and slot values, so
    /// `next_slot` reads each once.
    fn cached<'c>(
        &self,
        cache: &'c mut NodeCache,
        key: &NodeKey,
    ) -> Result<Option<&'c Node>, Error> {
        if !cache.contains_key(key) {
            let node = self.read.node(key)?;
            cache.insert(key.clone(), node);
        }
        Ok(cache.get(key).and_then(Option::as_ref))
    }

    /// The types an entity is an instance of, as (id, name), by id.
    pub(crate) fn types_of(&self, entity_id: &str) -> Result<Vec<(String, String)>, Error> {
        Ok(self.slots_and_types(entity_id, &mut NodeCache::new())?.1)
    }

    /// An entity's slot values, by slot then normalised value.
    pub(crate) fn slots_of(&self, entity_id: &str) -> Result<Vec<SlotFill>, Error> {
        Ok(self.slots_and_types(entity_id, &mut NodeCache::new())?.0)
    }

    /// An entity's slot values (by slot, then value) and types (by id), from one read of its
    /// outgoing edges.
    fn slots_and_types(&self, entity_id: &str, cache: &mut NodeCache) -> Result<Facts, Error> {
        let (mut slots, mut types) = (Vec::new(), Vec::new());
        let edges = self.read.edges_of(&NodeKey::new("Entity", entity_id), None, Direction::Out)?;
        for e in edges.into_iter().take(MAX_EDGES) {
            match e.key.edge_type.as_str() {
                "HAS_SLOT" => {
                    let Some(node) = self.cached(cache, &e.key.to)? else { continue };
                    slots.push(SlotFill {
                        slot: text(node, "slot").unwrap_or_default(),
                        value: text(node, "value").unwrap_or_default(),
                        value_key: text(node, "value_key").unwrap_or_default(),
                        confidence: e.props.get("confidence").and_then(Value::as_f64),
                        sources: e
                            .props
                            .get("sources")
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter().filter_map(Value::as_str).map(str::to_owned).collect()
                            })
                            .unwrap_or_default(),
                    });
                }
                "INSTANCE_OF" => {
                    let name = self.cached(cache, &e.key.to)?.and_then(|n| text(n, "name"));
                    types.push((e.key.to.id.clone(), name.unwrap_or_else(|| e.key.to.id.clone())));
                }
                // SAME_AS, RELATED_TO: not slots.
                _ => {}
            }
        }
        slots.sort_by(|a, b| (&a.slot, &a.value_key).cmp(&(&b.slot, &b.value_key)));
        types.sort();
        Ok((slots, types))
    }

    /// Every defined checklist, by id.
    pub(crate) fn checklists(&self) -> Result<Vec<Checklist>, Error> {
        let mut out = Vec::new();
        for node in self.all_nodes("Checklist")? {
            out.push(self.checklist_of(&node)?);
        }
        Ok(out)
    }

    fn checklist_of(&self, node: &Node) -> Result<Checklist, Error> {
        let mut specs = Vec::new();
        for e in self.out_edges(&node.key, "REQUIRES")? {
            if let Some(spec) = self.read.node(&e.key.to)?.as_ref().and_then(spec_of) {
                specs.push(spec);
            }
        }
        specs.sort_by_key(|(position, _)| *position);
        Ok(Checklist {
            id: node.key.id.clone(),
            name: text(node, "name").unwrap_or_else(|| node.key.id.clone()),
            description: text(node, "description"),
            specs: specs.into_iter().map(|(_, s)| s).collect(),
        })
    }

    /// A checklist by name (normalised), or `None`.
    pub(crate) fn checklist(&self, name: &str) -> Result<Option<Checklist>, Error> {
        match self.read.node(&NodeKey::new("Checklist", normalize_name(name)))? {
            Some(node) => Ok(Some(self.checklist_of(&node)?)),
            None => Ok(None),
        }
    }

    fn require_checklist(&self, name: &str) -> Result<Checklist, Error> {
        if let Some(c) = self.checklist(name)? {
            return Ok(c);
        }
        let defined = self.checklists()?.into_iter().map(|c| c.name).collect::<Vec<_>>();
        let defined = if defined.is_empty() { "none".to_owned() } else { defined.join(", ") };
        Err(Self::unknown(
            "checklist",
            name,
            "checklist.unknown",
            format!("no checklist with this name; defined: {defined}"),
        ))
    }

    fn require_entity(&self, field: &str, id: &str) -> Result<(), Error> {
        if self.read.node_exists(&NodeKey::new("Entity", id))? {
            return Ok(());
        }
        Err(Self::unknown(
            field,
            id,
            "slots.unknown_entity",
            "no entity with this id (ids are `{entity_type}:{normalised name}`)".into(),
        ))
    }

    /// Goals, of one user (entity id) or all, by id.
    pub(crate) fn goals(&self, user: Option<&str>) -> Result<Vec<Goal>, Error> {
        let mut out = Vec::new();
        for node in self.all_nodes("Goal")? {
            let user_id = text(&node, "user_id").unwrap_or_default();
            if user.is_some_and(|u| u != user_id) {
                continue;
            }
            let mut influences: Vec<String> =
                self.out_edges(&node.key, "INFLUENCES")?.into_iter().map(|e| e.key.to.id).collect();
            influences.sort();
            let list = |name: &str| -> Vec<String> {
                node.props
                    .get(name)
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default()
            };
            let prefers = list("prefer_slots").into_iter().zip(list("prefer_values")).collect();
            out.push(Goal {
                id: node.key.id.clone(),
                name: text(&node, "name").unwrap_or_default(),
                user_id,
                description: text(&node, "description"),
                horizon: text(&node, "horizon"),
                priority: node.props.get("priority").and_then(Value::as_u64),
                influences,
                prefers,
            });
        }
        Ok(out)
    }

    /// An entity's values for one spec: its HAS_SLOT values with one of the spec's labels, or
    /// the types among the spec's labels it is an instance of.
    fn values_for(
        &self,
        spec: &SlotSpec,
        slots: &[SlotFill],
        types: &[(String, String)],
    ) -> Vec<SlotFill> {
        match spec.relation {
            SpecRelation::HasSlot => {
                slots.iter().filter(|s| spec.expect_labels.contains(&s.slot)).cloned().collect()
            }
            SpecRelation::InstanceOf => types
                .iter()
                .filter(|(id, _)| spec.expect_labels.contains(id))
                .map(|(id, name)| SlotFill {
                    slot: "type".into(),
                    value: name.clone(),
                    value_key: id.clone(),
                    confidence: None,
                    sources: Vec::new(),
                })
                .collect(),
        }
    }

    /// `checklist check`: which specs of the checklist `name` the entity satisfies, which are
    /// missing (required or optional) and which break their cardinality (a `one` spec with
    /// several distinct values). Unknown checklist or entity: an error naming it.
    pub(crate) fn check_checklist(
        &self,
        name: &str,
        entity_id: &str,
    ) -> Result<CheckReport, Error> {
        let checklist = self.require_checklist(name)?;
        self.require_entity("entity", entity_id)?;
        let (slots, types) = self.slots_and_types(entity_id, &mut NodeCache::new())?;
        let specs = checklist
            .specs
            .into_iter()
            .map(|spec| {
                let values = self.values_for(&spec, &slots, &types);
                let distinct: BTreeSet<&str> =
                    values.iter().map(|v| v.value_key.as_str()).collect();
                let status = match (distinct.len(), spec.cardinality) {
                    (0, _) => SpecStatus::Missing,
                    (1, _) | (_, Cardinality::Many) => SpecStatus::Satisfied,
                    (_, Cardinality::One) => SpecStatus::TooMany,
                };
                SpecCheck { spec, status, values }
            })
            .collect();
        Ok(CheckReport { checklist: checklist.id, entity: entity_id.to_owned(), specs })
    }

    /// The identify flow's filter step (filter → ask → confirm → write back): the candidates
    /// consistent with the answers already known (`known`: a spec name of the checklist and its
    /// value), and those ruled out with the spec that ruled each out. A candidate without a value
    /// for a spec is kept: a missing value contradicts nothing.
    #[allow(clippy::type_complexity)]
    pub(crate) fn filter_candidates(
        &self,
        name: &str,
        candidates: &[String],
        known: &[(String, String)],
    ) -> Result<(Vec<String>, Vec<(String, String)>), Error> {
        let checklist = self.require_checklist(name)?;
        let mut wanted = Vec::with_capacity(known.len());
        for (spec_name, value) in known {
            let key = normalize_name(spec_name);
            let Some(spec) = checklist.specs.iter().find(|s| s.name == key) else {
                let specs: Vec<&str> = checklist.specs.iter().map(|s| s.name.as_str()).collect();
                return Err(Self::unknown(
                    "known",
                    spec_name,
                    "checklist.unknown_spec",
                    format!(
                        "checklist {} has no slot spec of this name: its specs are {}",
                        checklist.name,
                        specs.join(", ")
                    ),
                ));
            };
            wanted.push((spec, normalize_name(value)));
        }
        let mut cache = NodeCache::new();
        let (mut kept, mut ruled_out) = (Vec::new(), Vec::new());
        'candidates: for c in candidates {
            let (slots, types) = self.slots_and_types(c, &mut cache)?;
            for (spec, want) in &wanted {
                let values = self.values_for(spec, &slots, &types);
                if !values.is_empty() && !values.iter().any(|v| &v.value_key == want) {
                    ruled_out.push((c.clone(), spec.name.clone()));
                    continue 'candidates;
                }
            }
            kept.push(c.clone());
        }
        Ok((kept, ruled_out))
    }

    /// `checklist next`: the checklist's specs ranked by expected information gain per unit of
    /// cost over the candidates (entity ids, each existing, none twice), under a prior biased by
    /// the `goals` that influence the checklist, with what `evidence` finds of each answer in
    /// the graph (the ids of facts and events mentioning it); see the module docs for the
    /// formulas, the unknown group and the order of ties.
    pub(crate) fn next_slot(
        &self,
        name: &str,
        candidates: &[String],
        goals: &[Goal],
        search_cost: f64,
        evidence: &mut dyn FnMut(&str) -> Result<Vec<String>, Error>,
    ) -> Result<NextReport, Error> {
        let checklist = self.require_checklist(name)?;
        if candidates.is_empty() {
            return Err(Self::unknown(
                "candidates",
                "",
                "checklist.no_candidates",
                "give at least one candidate entity".into(),
            ));
        }
        if !(search_cost.is_finite() && search_cost > 0.0) {
            return Err(Self::unknown(
                "search_cost",
                &search_cost.to_string(),
                "checklist.search_cost",
                "the cost of a search is a number above 0 (1 is one question)".into(),
            ));
        }
        let mut seen = BTreeSet::new();
        let mut known = Vec::with_capacity(candidates.len());
        let mut cache = NodeCache::new();
        for c in candidates {
            if !seen.insert(c.as_str()) {
                return Err(Self::unknown(
                    "candidates",
                    c,
                    "checklist.duplicate_candidate",
                    "each candidate is listed once".into(),
                ));
            }
            let (slots, types) = self.slots_and_types(c, &mut cache)?;
            // An entity with a slot or a type exists: only a bare one needs the lookup.
            if slots.is_empty() && types.is_empty() {
                self.require_entity("candidates", c)?;
            }
            known.push((c.clone(), slots, types));
        }
        // The prior: each goal influencing the checklist multiplies the weight of the
        // candidates holding a value it prefers.
        let mut weight: BTreeMap<&str, f64> =
            candidates.iter().map(|c| (c.as_str(), 1.0)).collect();
        let mut biases = Vec::new();
        for goal in goals.iter().filter(|g| g.influences.contains(&checklist.id)) {
            let favoured: Vec<String> = known
                .iter()
                .filter(|(_, slots, _)| {
                    slots.iter().any(|s| {
                        goal.prefers.iter().any(|(slot, value)| {
                            &s.slot == slot && s.value_key == normalize_name(value)
                        })
                    })
                })
                .map(|(id, _, _)| id.clone())
                .collect();
            if favoured.is_empty() {
                continue;
            }
            let boost = goal.boost();
            for id in &favoured {
                if let Some(w) = weight.get_mut(id.as_str()) {
                    *w *= boost;
                }
            }
            biases.push(GoalBias { goal: goal.clone(), boost, favoured });
        }
        let weights: Vec<f64> = candidates.iter().map(|c| weight[c.as_str()]).collect();
        let total: f64 = weights.iter().sum();
        let mut ranking = Vec::with_capacity(checklist.specs.len());
        for (position, spec) in checklist.specs.into_iter().enumerate() {
            let mut groups: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
            let mut unknown = Vec::new();
            for (id, slots, types) in &known {
                let values = self.values_for(&spec, slots, types);
                // The answer is the set of distinct normalised values (sorted by key).
                let mut answer: BTreeMap<&str, &str> = BTreeMap::new();
                for v in &values {
                    answer.entry(v.value_key.as_str()).or_insert(v.value.as_str());
                }
                if answer.is_empty() {
                    unknown.push(id.clone());
                    continue;
                }
                let key = answer.keys().copied().collect::<Vec<_>>().join("\u{1f}");
                let shown = answer.values().copied().collect::<Vec<_>>().join(" | ");
                groups.entry(key).or_insert_with(|| (shown, Vec::new())).1.push(id.clone());
            }
            let w =
                |ids: &[String]| -> Vec<f64> { ids.iter().map(|c| weight[c.as_str()]).collect() };
            let group_weights: Vec<Vec<f64>> = groups.values().map(|(_, g)| w(g)).collect();
            let gain = weighted_information_gain(&group_weights, &w(&unknown));
            let known_weight: f64 = group_weights.iter().flatten().sum();
            let unknown_count = unknown.len();
            let mut parts: Vec<AnswerGroup> = groups
                .into_values()
                .map(|(shown, candidates)| {
                    let p = w(&candidates).iter().sum::<f64>() / known_weight;
                    AnswerGroup { answer: Some(shown), candidates, probability: Some(p) }
                })
                .collect();
            // Where a search could find the answer: facts and events mentioning one.
            let mut found = Vec::new();
            let mut p_found = 0.0;
            if gain > GAIN_TIE {
                for part in &parts {
                    let Some(answer) = &part.answer else { continue };
                    let hits = evidence(answer)?;
                    if !hits.is_empty() {
                        p_found += part.probability.unwrap_or(0.0);
                        found.push((answer.clone(), hits));
                    }
                }
            }
            let search = (!found.is_empty()).then(|| SearchLead {
                found,
                p_found,
                gain: gain * p_found,
                gain_per_cost: gain * p_found / search_cost,
            });
            if !unknown.is_empty() {
                parts.push(AnswerGroup { answer: None, candidates: unknown, probability: None });
            }
            let cost = spec.cost;
            ranking.push((
                position,
                SlotGain {
                    spec,
                    gain,
                    cost,
                    gain_per_cost: gain / cost,
                    groups: parts,
                    unknown: unknown_count,
                    search,
                },
            ));
        }
        ranking.sort_by(|(pa, a), (pb, b)| {
            let by_value = if (a.gain_per_cost - b.gain_per_cost).abs() <= GAIN_TIE {
                std::cmp::Ordering::Equal
            } else {
                b.gain_per_cost.total_cmp(&a.gain_per_cost)
            };
            by_value
                .then(a.unknown.cmp(&b.unknown))
                .then(b.spec.required.cmp(&a.spec.required))
                .then(pa.cmp(pb))
        });
        Ok(NextReport {
            checklist: checklist.id,
            candidates: candidates.to_vec(),
            prior: weights.iter().map(|w| w / total).collect(),
            goals: biases,
            entropy: entropy(&weights),
            search_cost,
            ranking: ranking.into_iter().map(|(_, g)| g).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn information_gain_of_a_hand_computed_partition() {
        // Four candidates; genre: A, B drama, C comedy, D unknown: groups {2, 1, 1}.
        // IG = log2 4 − (2/4·log2 2 + 1/4·log2 1 + 1/4·log2 1) = 2 − (0.5 + 0 + 0) = 1.5 bits.
        assert_eq!(information_gain(&[2, 1, 1]), 1.5);
        // Era: A, C 1980s and B, D 1990s: {2, 2}: IG = 2 − (0.5·1 + 0.5·1) = 1 bit.
        assert_eq!(information_gain(&[2, 2]), 1.0);
        // Country: all the same: {4}: IG = 2 − 1·2 = 0.
        assert_eq!(information_gain(&[4]), 0.0);
        // Three candidates, all different: IG = log2 3 − 0 = 1.584962500721156 bits.
        assert!((information_gain(&[1, 1, 1]) - 3f64.log2()).abs() < 1e-15);
        assert_eq!(information_gain(&[]), 0.0);
        assert_eq!(information_gain(&[0, 3]), 0.0, "empty groups are not outcomes");
    }

    #[test]
    fn equal_weights_give_the_uniform_gain_and_a_bias_moves_it() {
        // Any equal weight is the uniform prior, bit for bit.
        let g = weighted_information_gain(&[vec![3.0, 3.0], vec![3.0]], &[3.0]);
        assert_eq!(g, information_gain_with_unknown(&[2, 1], 1));
        assert_eq!(entropy(&[2.0, 2.0, 2.0, 2.0]), 2.0);
        // Weights 2, 1 against 1: the answer is the first group with probability 3/4 and
        // leaves H(2/3, 1/3); the second leaves nothing: IG = H(1/2, 1/4, 1/4) − 3/4·H(2/3, 1/3).
        let h3 = -(2.0f64 / 3.0 * (2.0f64 / 3.0).log2() + 1.0 / 3.0 * (1.0f64 / 3.0).log2());
        let expected = 1.5 - 0.75 * h3;
        let g = weighted_information_gain(&[vec![2.0, 1.0], vec![1.0]], &[]);
        assert!((g - expected).abs() < 1e-12, "{g} {expected}");
    }
}
