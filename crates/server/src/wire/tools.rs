//! Wire shapes of the knowledge tools: memory impact and link votes, documents, types, slots,
//! checklists, goals and entity resolution; and the short readable `summary` every answer of
//! theirs carries (and the memory answers of `wire.rs`), so that an agent reads the story in
//! one sentence before the JSON.

use ctxgraph::{
    Action, Candidate, CheckReport, Checklist, DocumentView, Evolution, Goal, Impact,
    MemoryContext, NextReport, Rollup, SlotFill, SlotSpec, TypeInfo,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::WireRequest;

wire_requests! {
    ImpactRequest => "impact request",
    UnlinkRequest => "unlink request",
    DocumentRequest => "document request",
    DocumentShowRequest => "document show request",
    TypeRequest => "type request",
    InstanceRequest => "instance request",
    ListQuery => "list query",
    SlotRequest => "slot request",
    EntitySlotsRequest => "entity slots request",
    ChecklistRequest => "checklist request",
    CheckRequest => "checklist check request",
    NextQuestionRequest => "next question request",
    GoalRequest => "goal request",
    GoalListQuery => "goal list query",
    CandidatesQuery => "candidates query",
    EntityDecisionRequest => "entity decision request",
}

// ---------------------------------------------------------------------------------------------
// Requests.

/// What depends on a memory (tool `memory_impact`; `GET /v1/memories/{id}/impact`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImpactRequest {
    /// The memory to start from (usually a decision).
    #[serde(alias = "id", alias = "memory", alias = "decision_id")]
    pub memory_id: String,
    /// Link confidences decayed to this time (RFC 3339 or YYYY-MM-DD); now when absent.
    #[serde(default)]
    pub as_of: Option<String>,
}

/// Delete or down-vote an explicit or automatic link between two memories (`POST
/// /v1/memories/links/vote`, tool `unlink_memories`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnlinkRequest {
    /// The memory the link starts at (as `memory_links` of the memory shows it).
    #[serde(alias = "source", alias = "from_id")]
    pub from: String,
    /// The memory the link points to.
    #[serde(alias = "target", alias = "to_id")]
    pub to: String,
    /// `supersedes`, `implements`, `outcome_of`, `relates_to` or `temporal`.
    #[serde(alias = "type", alias = "relation")]
    pub link_type: String,
    /// `delete` (the default: the link leaves every traversal) or `downvote` (each down-vote
    /// halves its confidence).
    #[serde(default = "default_vote")]
    pub vote: String,
    /// Why, in words.
    #[serde(default)]
    pub reason: Option<String>,
    /// Who votes: `user` (a person; the default), `llm` (an agent on its own) or `system`.
    #[serde(default, alias = "creator", alias = "author")]
    pub created_by: Option<String>,
}

fn default_vote() -> String {
    "delete".to_owned()
}

/// A source document to ingest (`POST /v1/documents`, tool `add_document`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentRequest {
    /// Where it came from (a URL, a path, a name): stored verbatim, never fetched. The same URL
    /// with the same text again is a duplicate; with other text, the next version.
    #[serde(alias = "source", alias = "name")]
    pub url: String,
    /// The text.
    #[serde(alias = "content", alias = "body")]
    pub text: String,
    /// `markdown` (headings, lists, code fences) or `text` (blank-line paragraphs); from the
    /// URL's extension when absent (`.md` and `.markdown` are markdown).
    #[serde(default)]
    pub format: Option<String>,
    /// A title; the first level-1 heading when absent.
    #[serde(default)]
    pub title: Option<String>,
    /// Also turn capitalised names and acronyms into `concept` entities the sentences mention.
    #[serde(default)]
    pub extract: bool,
}

/// A document to show (`POST /v1/documents/show`, tool `show_document`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentShowRequest {
    /// A document id, or a URL (its latest version).
    #[serde(alias = "document_id", alias = "url", alias = "document")]
    pub id: String,
}

/// A type to declare (`POST /v1/types`, tool `define_type`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeRequest {
    /// The type's name, e.g. Film (compared case-insensitively).
    #[serde(alias = "type", alias = "type_name")]
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
}

/// An entity made an instance of a declared type (`POST /v1/types/instances`, tool
/// `add_instance`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstanceRequest {
    /// The entity: an id such as `concept:alien`, or a bare name only one entity type has; with
    /// `entity_type`, a name (created when missing).
    #[serde(alias = "name", alias = "entity_id")]
    pub entity: String,
    /// Create the entity with this entity type (concept, person, project, ...) when missing.
    #[serde(default)]
    pub entity_type: Option<String>,
    /// The declared type's name.
    #[serde(alias = "type", alias = "type_name")]
    pub type_name: String,
}

/// A listing with no filter (`GET /v1/types`, `GET /v1/checklists`; tools `list_types`,
/// `list_checklists`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Most items (default 100, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One observed slot value of an entity (`POST /v1/slots`, tool `set_slot`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SlotRequest {
    /// The entity: an id such as `concept:alien`, or a bare name only one entity type has; with
    /// `entity_type`, a name (created when missing).
    #[serde(alias = "name", alias = "entity_id")]
    pub entity: String,
    /// Create the entity with this entity type when missing.
    #[serde(default)]
    pub entity_type: Option<String>,
    /// The slot label, e.g. genre.
    #[serde(alias = "label", alias = "attribute")]
    pub slot: String,
    /// The value, e.g. drama.
    pub value: String,
    /// In [0, 1]; 1.0 when absent. The slot keeps the highest confidence recorded.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Where the value comes from (kept verbatim, never fetched).
    #[serde(default)]
    pub source: Option<String>,
}

/// An entity whose slots and types to read (`POST /v1/slots/of`, tool `entity_slots`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntitySlotsRequest {
    /// The entity: an id such as `concept:alien`, or a bare name only one entity type has.
    #[serde(alias = "name", alias = "entity_id", alias = "id")]
    pub entity: String,
}

/// One slot spec of a checklist.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SlotSpecArg {
    /// Its name, unique in the checklist, e.g. genre.
    pub name: String,
    /// Slot labels (HAS_SLOT) or type names (INSTANCE_OF) that satisfy it; `[name]` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_labels: Option<Vec<String>>,
    /// `HAS_SLOT` (the default: a slot value) or `INSTANCE_OF` (a type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    /// Whether the checklist is incomplete without it (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// `one` (the default) or `many` distinct values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cardinality: Option<String>,
    /// What asking about it costs, in units of one question (default 1): `next_question`
    /// ranks by information gain per unit of cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// A checklist to define (`POST /v1/checklists`, tool `define_checklist`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChecklistRequest {
    /// Its name, e.g. IdentifyFilm. A checklist is immutable: defining it again differently is
    /// refused (`log.conflict`).
    pub name: String,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its slot specs, in order (1 to 256).
    #[serde(alias = "specs")]
    pub slots: Vec<SlotSpecArg>,
}

/// A checklist checked against one entity (`POST /v1/checklists/check`, tool
/// `check_checklist`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// The checklist's name.
    #[serde(alias = "name")]
    pub checklist: String,
    /// The entity: an id such as `concept:alien`, or a bare name only one entity type has.
    #[serde(alias = "entity_id")]
    pub entity: String,
}

/// Which slot to ask about next to tell candidates apart (`POST /v1/checklists/next`, tool
/// `next_question`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NextQuestionRequest {
    /// The checklist's name.
    #[serde(alias = "name")]
    pub checklist: String,
    /// The candidate entities (ids or bare names), each once.
    #[serde(alias = "entities")]
    pub candidates: Vec<String>,
    /// Answers already known, by slot spec name (e.g. {"genre": "drama"}): candidates whose
    /// value contradicts one are ruled out first (a candidate without a value is kept), then
    /// the next question is chosen among the rest.
    #[serde(default, alias = "answers")]
    pub known: std::collections::BTreeMap<String, String>,
    /// Only this user's goals bias the prior (an id such as `user:alice`, or a user's name);
    /// absent: every goal that influences the checklist.
    #[serde(default)]
    pub user: Option<String>,
    /// What a search of the graph costs, in units of one question (default 0.25): searching
    /// first is recommended when its expected gain per cost beats asking.
    #[serde(default)]
    pub search_cost: Option<f64>,
    /// Look for the answers in the graph's facts and events (default true).
    #[serde(default)]
    pub search: Option<bool>,
}

/// A user's goal (`POST /v1/goals`, tool `add_goal`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalRequest {
    /// The goal, e.g. "watch the AFI top 100".
    #[serde(alias = "goal")]
    pub name: String,
    /// The user: an id such as `user:alice`, or a user's name.
    pub user: String,
    /// Create the user entity when it does not exist.
    #[serde(default)]
    pub create_user: bool,
    /// Names of the checklists it influences (each must be defined).
    #[serde(default)]
    pub influences: Vec<String>,
    /// What it means.
    #[serde(default)]
    pub description: Option<String>,
    /// Its time horizon in words, e.g. "this year".
    #[serde(default)]
    pub horizon: Option<String>,
    /// Its priority, 0 the highest.
    #[serde(default)]
    pub priority: Option<u64>,
    /// Slot values it favours among candidates, e.g. [{"slot": "genre", "value": "drama"}]:
    /// a candidate holding one is more likely in `next_question` of a checklist it influences.
    #[serde(default)]
    pub prefers: Vec<PreferArg>,
}

/// A slot value a goal favours.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreferArg {
    /// The slot label, e.g. genre.
    pub slot: String,
    /// The value, e.g. drama.
    pub value: String,
}

/// Goals of one user or all (`GET /v1/goals`, tool `list_goals`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct GoalListQuery {
    /// Only this user's goals (an id such as `user:alice`, or a user's name).
    #[serde(default)]
    pub user: Option<String>,
}

/// Entity-resolution pairs (`GET /v1/entities/candidates`, tool `entity_candidates`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CandidatesQuery {
    /// `candidate` (the default: undecided), `merged`, `rejected` or `all`.
    #[serde(default)]
    pub status: Option<String>,
    /// Most pairs (default 50, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// A decision on a pair of entities (`POST /v1/entities/merge` and `/reject`, tools
/// `merge_entities` and `reject_entities`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityDecisionRequest {
    /// The first entity: an id such as `person:alice smith`, or a bare name only one entity type
    /// has.
    #[serde(alias = "entity_a", alias = "first")]
    pub a: String,
    /// The second entity, likewise.
    #[serde(alias = "entity_b", alias = "second")]
    pub b: String,
    /// Why, in words (kept in the log and shown in the pair's justification).
    #[serde(default)]
    pub reason: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Responses.

/// A record written by a knowledge tool.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct Recorded {
    /// `accepted` (new) or `duplicate` (already recorded, nothing written).
    pub status: String,
    /// Log position.
    pub position: u64,
    /// What was recorded, in words.
    pub summary: String,
}

/// A document ingested.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct DocumentAdded {
    /// `accepted` or `duplicate`.
    pub status: String,
    /// Log position.
    pub position: u64,
    /// The document (version) id.
    pub document_id: String,
    /// Version under its URL, from 1.
    pub version: u64,
    /// The version it replaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// Sentences (each citable as `{document_id}/tN`).
    pub sentences: usize,
    /// Entity mentions recorded.
    pub mentions: usize,
    /// In words.
    pub summary: String,
}

/// A sentence of a document.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct SentenceDto {
    /// Its id: what a fact cites (`record_fact` with `cites`).
    pub sentence_id: String,
    /// Its text.
    pub text: String,
    /// Entity ids it mentions.
    pub mentions: Vec<String>,
}

/// A section of a document.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct SectionDto {
    /// Heading.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Heading level (0: untitled).
    pub level: u64,
    /// Paragraphs, each its sentences.
    pub paragraphs: Vec<Vec<SentenceDto>>,
}

/// A document version with its sections and sentences.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct DocumentDto {
    /// The version's id.
    pub document_id: String,
    /// The source, verbatim.
    pub url: String,
    /// Version under the URL.
    pub version: u64,
    /// Title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `markdown` or `text`.
    pub format: String,
    /// When it was ingested.
    pub ingested_at: String,
    /// The version it replaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// The version that replaces it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Its sections.
    pub sections: Vec<SectionDto>,
    /// In words.
    pub summary: String,
}

impl From<&DocumentView> for DocumentDto {
    fn from(d: &DocumentView) -> Self {
        let s = &d.summary;
        let title = s.title.as_deref().map_or_else(String::new, |t| format!(" \"{t}\""));
        DocumentDto {
            document_id: s.document_id.clone(),
            url: s.url.clone(),
            version: s.version,
            title: s.title.clone(),
            format: s.format.clone(),
            ingested_at: s.ingested_at.clone(),
            previous: s.previous.clone(),
            next: s.next.clone(),
            sections: d
                .sections
                .iter()
                .map(|sec| SectionDto {
                    title: sec.title.clone(),
                    level: sec.level,
                    paragraphs: sec
                        .paragraphs
                        .iter()
                        .map(|p| {
                            p.iter()
                                .map(|t| SentenceDto {
                                    sentence_id: t.sentence_id.clone(),
                                    text: t.text.clone(),
                                    mentions: t
                                        .mentions
                                        .iter()
                                        .map(|m| m.entity_id.clone())
                                        .collect(),
                                })
                                .collect()
                        })
                        .collect(),
                })
                .collect(),
            summary: format!(
                "document {}{title} from {} (version {}{}): {} sections, {} sentences; cite a sentence by its sentence_id",
                s.document_id,
                s.url,
                s.version,
                if s.next.is_some() { ", replaced by a later version" } else { "" },
                s.sections,
                s.sentences
            ),
        }
    }
}

/// A declared type.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct TypeDto {
    /// Normalised name.
    pub id: String,
    /// Name as declared.
    pub name: String,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Entity ids of its instances.
    pub instances: Vec<String>,
}

impl From<&TypeInfo> for TypeDto {
    fn from(t: &TypeInfo) -> Self {
        TypeDto {
            id: t.id.clone(),
            name: t.name.clone(),
            description: t.description.clone(),
            instances: t.instances.clone(),
        }
    }
}

/// The declared types.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct TypeList {
    /// Types, by name.
    pub types: Vec<TypeDto>,
    /// In words.
    pub summary: String,
}

/// One value of a slot.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct SlotFillDto {
    /// Normalised slot label (`type` for an instance-of answer).
    pub slot: String,
    /// The value as shown.
    pub value: String,
    /// Highest confidence recorded (none for a type).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Every source recorded.
    pub sources: Vec<String>,
}

impl From<&SlotFill> for SlotFillDto {
    fn from(f: &SlotFill) -> Self {
        SlotFillDto {
            slot: f.slot.clone(),
            value: f.value.clone(),
            confidence: f.confidence,
            sources: f.sources.clone(),
        }
    }
}

/// An entity's slot values and types.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct EntitySlots {
    /// The entity id.
    pub entity: String,
    /// Names of the types it is an instance of.
    pub types: Vec<String>,
    /// Its slot values, by slot then value.
    pub slots: Vec<SlotFillDto>,
    /// In words.
    pub summary: String,
}

/// One slot spec as stored.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct SlotSpecDto {
    /// Normalised name.
    pub name: String,
    /// Labels or type names that satisfy it.
    pub expect_labels: Vec<String>,
    /// `HAS_SLOT` or `INSTANCE_OF`.
    pub relation: String,
    /// Whether the checklist is incomplete without it.
    pub required: bool,
    /// `one` or `many`.
    pub cardinality: String,
    /// What asking about it costs, in units of one question.
    pub cost: f64,
}

impl From<&SlotSpec> for SlotSpecDto {
    fn from(s: &SlotSpec) -> Self {
        SlotSpecDto {
            name: s.name.clone(),
            expect_labels: s.expect_labels.clone(),
            relation: s.relation.as_str().to_owned(),
            required: s.required,
            cardinality: s.cardinality.as_str().to_owned(),
            cost: s.cost,
        }
    }
}

/// A checklist as stored.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ChecklistDto {
    /// Normalised name.
    pub id: String,
    /// Name as defined.
    pub name: String,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its specs, in order.
    pub slots: Vec<SlotSpecDto>,
}

impl From<&Checklist> for ChecklistDto {
    fn from(c: &Checklist) -> Self {
        ChecklistDto {
            id: c.id.clone(),
            name: c.name.clone(),
            description: c.description.clone(),
            slots: c.specs.iter().map(SlotSpecDto::from).collect(),
        }
    }
}

/// The defined checklists.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ChecklistList {
    /// Checklists, by name.
    pub checklists: Vec<ChecklistDto>,
    /// In words.
    pub summary: String,
}

/// One spec of a checklist check.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct SpecCheckDto {
    /// The spec.
    pub spec: SlotSpecDto,
    /// `satisfied`, `missing` or `too_many`.
    pub status: String,
    /// The entity's values for it.
    pub values: Vec<SlotFillDto>,
}

/// A checklist checked against an entity.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct CheckDto {
    /// The checklist id.
    pub checklist: String,
    /// The entity id.
    pub entity: String,
    /// Whether no required spec is missing and no cardinality is broken.
    pub complete: bool,
    /// Per spec, in the checklist's order.
    pub specs: Vec<SpecCheckDto>,
    /// In words.
    pub summary: String,
}

impl From<&CheckReport> for CheckDto {
    fn from(r: &CheckReport) -> Self {
        let named = |status: ctxgraph::SpecStatus, required: Option<bool>| -> Vec<&str> {
            r.specs
                .iter()
                .filter(|s| s.status == status && required.is_none_or(|q| q == s.spec.required))
                .map(|s| s.spec.name.as_str())
                .collect()
        };
        let missing = named(ctxgraph::SpecStatus::Missing, Some(true));
        let optional = named(ctxgraph::SpecStatus::Missing, Some(false));
        let too_many = named(ctxgraph::SpecStatus::TooMany, None);
        let mut summary = if r.complete() {
            format!("{} satisfies checklist {}", r.entity, r.checklist)
        } else {
            format!("{} does not yet satisfy checklist {}", r.entity, r.checklist)
        };
        if !missing.is_empty() {
            summary.push_str(&format!("; required and missing: {}", missing.join(", ")));
        }
        if !too_many.is_empty() {
            summary.push_str(&format!("; more values than allowed: {}", too_many.join(", ")));
        }
        if !optional.is_empty() {
            summary.push_str(&format!("; optional and missing: {}", optional.join(", ")));
        }
        CheckDto {
            checklist: r.checklist.clone(),
            entity: r.entity.clone(),
            complete: r.complete(),
            specs: r
                .specs
                .iter()
                .map(|s| SpecCheckDto {
                    spec: (&s.spec).into(),
                    status: s.status.as_str().to_owned(),
                    values: s.values.iter().map(SlotFillDto::from).collect(),
                })
                .collect(),
            summary,
        }
    }
}

/// Candidates that give one answer.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct AnswerGroupDto {
    /// The answer; absent for candidates without a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Candidate entity ids.
    pub candidates: Vec<String>,
    /// How likely this answer is under the prior; absent for the candidates without a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
}

/// Facts and events that mention a spec's answers.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct SearchLeadDto {
    /// Per answer with evidence, the ids of the facts and events that mention it.
    pub found: Vec<EvidenceDto>,
    /// Probability that the answer is among those found.
    pub p_found: f64,
    /// Expected gain of searching first, in bits (gain × p_found).
    pub gain: f64,
    /// Bits per unit of cost (gain × p_found / search_cost).
    pub gain_per_cost: f64,
}

/// An answer and the facts and events that mention it.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct EvidenceDto {
    /// The answer.
    pub answer: String,
    /// Ids of the facts and events mentioning it.
    pub nodes: Vec<String>,
}

/// The expected information gain of asking about one spec.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct SlotGainDto {
    /// The spec.
    pub spec: SlotSpecDto,
    /// Expected information gain, in bits.
    pub gain: f64,
    /// The cost of asking, in units of one question.
    pub cost: f64,
    /// Gain per unit of cost: what the ranking orders by.
    pub gain_per_cost: f64,
    /// The candidates by answer, then those without a value.
    pub groups: Vec<AnswerGroupDto>,
    /// Candidates with no value for it.
    pub unknown: usize,
    /// What the graph holds of its answers; absent when nothing mentions them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchLeadDto>,
}

/// A goal that biased the prior.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct GoalBiasDto {
    /// The goal id.
    pub goal: String,
    /// Its name.
    pub name: String,
    /// How much it multiplies a favoured candidate's weight (1 + 1 / (1 + priority)).
    pub boost: f64,
    /// The candidates holding a value it prefers.
    pub favoured: Vec<String>,
}

/// The action to take next.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct RecommendationDto {
    /// `ask` (the user) or `search` (the graph, for the answers in `query`).
    pub action: String,
    /// The slot spec.
    pub slot: String,
    /// Bits per unit of cost of the action.
    pub gain_per_cost: f64,
    /// What to search for; empty for a question.
    pub query: Vec<String>,
}

/// A candidate a known answer ruled out.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct RuledOutDto {
    /// The candidate entity id.
    pub candidate: String,
    /// The spec whose known answer it contradicts.
    pub spec: String,
}

/// The slot to ask about next and every spec's gain.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct NextQuestionDto {
    /// The checklist id.
    pub checklist: String,
    /// The candidate entity ids still in play (after the known answers).
    pub candidates: Vec<String>,
    /// Candidates the known answers ruled out, each with the spec that did.
    pub ruled_out: Vec<RuledOutDto>,
    /// Each candidate's prior probability, in the order of `candidates` (equal without goals).
    pub prior: Vec<f64>,
    /// The goals that biased the prior.
    pub goals: Vec<GoalBiasDto>,
    /// Uncertainty before asking, in bits (the prior's entropy; log2 of the candidate count
    /// without goals).
    pub entropy: f64,
    /// What a search of the graph costs, in units of one question.
    pub search_cost: f64,
    /// The spec to ask about (best gain per cost); absent when no spec splits the candidates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ask: Option<String>,
    /// Ask or search first, and about what; absent when no spec splits the candidates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<RecommendationDto>,
    /// Every spec, best first.
    pub ranking: Vec<SlotGainDto>,
    /// In words.
    pub summary: String,
}

impl NextQuestionDto {
    /// The answer for a report over the candidates left after `ruled_out`.
    pub fn new(r: &NextReport, ruled_out: &[(String, String)]) -> Self {
        let mut dto = NextQuestionDto::from(r);
        dto.ruled_out = ruled_out
            .iter()
            .map(|(c, s)| RuledOutDto { candidate: c.clone(), spec: s.clone() })
            .collect();
        if !ruled_out.is_empty() {
            dto.summary = format!(
                "{} ruled out by the known answers; {}",
                plural(ruled_out.len(), "candidate", "candidates"),
                dto.summary
            );
        }
        dto
    }
}

impl From<&NextReport> for NextQuestionDto {
    fn from(r: &NextReport) -> Self {
        let recommendation = r.recommendation();
        let mut summary = match (r.best(), &recommendation) {
            (Some(b), Some(rec)) => {
                let ask = format!(
                    "ask about {}: its answers split the {} candidates into {} groups, an expected gain of {:.3} of {:.3} bits at cost {}{}",
                    b.spec.name,
                    r.candidates.len(),
                    b.groups.len(),
                    b.gain,
                    r.entropy,
                    b.cost,
                    if b.unknown > 0 {
                        format!(" ({} candidates have no value for it)", b.unknown)
                    } else {
                        String::new()
                    }
                );
                match rec.action {
                    Action::Ask => ask,
                    Action::Search => {
                        let found = r
                            .ranking
                            .iter()
                            .find(|g| g.spec.name == rec.slot)
                            .and_then(|g| g.search.as_ref())
                            .map(|l| {
                                l.found
                                    .iter()
                                    .map(|(a, nodes)| format!("{a} in {}", nodes.join(", ")))
                                    .collect::<Vec<_>>()
                                    .join("; ")
                            })
                            .unwrap_or_default();
                        format!(
                            "search the graph first for the {} ({found}): a search is worth {:.3} bits per unit of cost against {:.3} for asking; if it does not settle it, {ask}",
                            rec.slot, rec.gain_per_cost, b.gain_per_cost,
                        )
                    }
                }
            }
            _ => format!(
                "no slot of checklist {} tells the {} candidates apart: every answer is the same",
                r.checklist,
                r.candidates.len()
            ),
        };
        if !r.goals.is_empty() {
            let goals: Vec<String> = r
                .goals
                .iter()
                .map(|g| {
                    format!(
                        "goal {:?} (x{}) favours {}",
                        g.goal.name,
                        g.boost,
                        g.favoured.join(", ")
                    )
                })
                .collect();
            summary = format!("{summary}; the prior is biased: {}", goals.join("; "));
        }
        NextQuestionDto {
            checklist: r.checklist.clone(),
            candidates: r.candidates.clone(),
            ruled_out: Vec::new(),
            prior: r.prior.clone(),
            goals: r
                .goals
                .iter()
                .map(|g| GoalBiasDto {
                    goal: g.goal.id.clone(),
                    name: g.goal.name.clone(),
                    boost: g.boost,
                    favoured: g.favoured.clone(),
                })
                .collect(),
            entropy: r.entropy,
            search_cost: r.search_cost,
            ask: r.best().map(|b| b.spec.name.clone()),
            recommendation: recommendation.map(|rec| RecommendationDto {
                action: rec.action.as_str().to_owned(),
                slot: rec.slot,
                gain_per_cost: rec.gain_per_cost,
                query: rec.query,
            }),
            ranking: r
                .ranking
                .iter()
                .map(|g| SlotGainDto {
                    spec: (&g.spec).into(),
                    gain: g.gain,
                    cost: g.cost,
                    gain_per_cost: g.gain_per_cost,
                    groups: g
                        .groups
                        .iter()
                        .map(|a| AnswerGroupDto {
                            answer: a.answer.clone(),
                            candidates: a.candidates.clone(),
                            probability: a.probability,
                        })
                        .collect(),
                    unknown: g.unknown,
                    search: g.search.as_ref().map(|l| SearchLeadDto {
                        found: l
                            .found
                            .iter()
                            .map(|(answer, nodes)| EvidenceDto {
                                answer: answer.clone(),
                                nodes: nodes.clone(),
                            })
                            .collect(),
                        p_found: l.p_found,
                        gain: l.gain,
                        gain_per_cost: l.gain_per_cost,
                    }),
                })
                .collect(),
            summary,
        }
    }
}

/// A goal as stored.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct GoalDto {
    /// `{user id}|{normalised name}`.
    pub id: String,
    /// Name.
    pub name: String,
    /// The user's entity id.
    pub user_id: String,
    /// What it means.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Horizon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub horizon: Option<String>,
    /// Priority, 0 the highest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u64>,
    /// Ids of the checklists it influences.
    pub influences: Vec<String>,
    /// Slot values it favours among candidates.
    pub prefers: Vec<PreferArg>,
}

impl From<&Goal> for GoalDto {
    fn from(g: &Goal) -> Self {
        GoalDto {
            id: g.id.clone(),
            name: g.name.clone(),
            user_id: g.user_id.clone(),
            description: g.description.clone(),
            horizon: g.horizon.clone(),
            priority: g.priority,
            influences: g.influences.clone(),
            prefers: g
                .prefers
                .iter()
                .map(|(slot, value)| PreferArg { slot: slot.clone(), value: value.clone() })
                .collect(),
        }
    }
}

/// Goals.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct GoalList {
    /// Goals.
    pub goals: Vec<GoalDto>,
    /// In words.
    pub summary: String,
}

/// An entity of a resolution pair.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct CandidateEntityDto {
    /// Entity id.
    pub id: String,
    /// Name as first seen.
    pub name: String,
    /// Entity type.
    pub entity_type: String,
}

/// A pair of entities that may be one thing.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct CandidateDto {
    /// The entity whose id sorts first.
    pub a: CandidateEntityDto,
    /// The other.
    pub b: CandidateEntityDto,
    /// The rules' confidence (1.0 merged, 0.0 rejected).
    pub confidence: f64,
    /// Which rules fired, or who decided why.
    pub justification: String,
    /// `candidate`, `merged` or `rejected`.
    pub status: String,
}

impl From<&Candidate> for CandidateDto {
    fn from(c: &Candidate) -> Self {
        let e = |x: &ctxgraph::CandidateEntity| CandidateEntityDto {
            id: x.id.clone(),
            name: x.name.clone(),
            entity_type: x.entity_type.clone(),
        };
        CandidateDto {
            a: e(&c.a),
            b: e(&c.b),
            confidence: c.confidence,
            justification: c.justification.clone(),
            status: c.status.as_str().to_owned(),
        }
    }
}

/// Entity-resolution pairs, best first.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct CandidateList {
    /// Pairs.
    pub pairs: Vec<CandidateDto>,
    /// In words.
    pub summary: String,
}

// ---------------------------------------------------------------------------------------------
// Summaries of the memory answers (`wire.rs` puts them in its DTOs).

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn quote(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("\"{}…\"", &text[..i]),
        None => format!("\"{text}\""),
    }
}

/// An evolution chain in one sentence: what is decided now and what it replaced, with outcomes.
pub(crate) fn evolution_summary(e: &Evolution) -> String {
    let Some(first) = e.steps.first() else {
        return format!("no decision on topic {}", e.topic);
    };
    let mut out = format!(
        "on {}, the decision in force is {} ({})",
        e.topic,
        quote(&first.memory.content),
        first.memory.id
    );
    for step in &e.steps[1..] {
        out.push_str(&format!(
            "; it replaced {} ({})",
            quote(&step.memory.content),
            step.memory.id
        ));
        if let Some(o) = step.outcomes.last() {
            out.push_str(&format!(", which ended {}", o.outcome));
            if !o.reason.is_empty() {
                out.push_str(&format!(": {}", o.reason));
            }
        }
    }
    out
}

/// An impact analysis in one sentence.
pub(crate) fn impact_summary(i: &Impact) -> String {
    let mut out = format!(
        "{} {} is followed by {}",
        i.start.id,
        quote(&i.start.content),
        plural(i.items.len(), "memory", "memories")
    );
    if !i.outcomes.is_empty() {
        let list: Vec<String> =
            i.outcomes.iter().map(|o| format!("{} {}", o.memory_id, o.outcome)).collect();
        out.push_str(&format!("; outcomes: {}", list.join(", ")));
    }
    if !i.superseded_by.is_empty() {
        let ids: Vec<&str> = i.superseded_by.iter().map(|m| m.id.as_str()).collect();
        out.push_str(&format!("; superseded by {}", ids.join(", ")));
    }
    out
}

/// A memory search's story: the best match, the evolution behind it, the evidence.
pub(crate) fn memory_context_summary(c: &MemoryContext) -> String {
    let Some(best) = c.hits.first() else {
        return "no memory matches the question".to_owned();
    };
    let mut out = format!(
        "best match {} ({}): {}",
        best.memory.id,
        best.memory.kind,
        quote(&best.memory.content)
    );
    if let Some(e) = &c.evolution {
        out.push_str(&format!(". {}", evolution_summary(e)));
    }
    let evidence: usize = c.evidence.iter().map(|i| i.items.len()).sum();
    if evidence > 0 {
        out.push_str(&format!(". {} behind it", plural(evidence, "memory", "memories")));
    }
    out.push_str(&format!(" ({} in all)", plural(c.hits.len(), "match", "matches")));
    out
}

/// A rollup in one sentence.
pub(crate) fn rollup_summary(r: &Rollup) -> String {
    let mut out = format!(
        "{} made, {} recorded, {} open, {} blocked",
        plural(r.decisions.len(), "decision", "decisions"),
        plural(r.outcomes.len(), "outcome", "outcomes"),
        r.open.len(),
        r.blocked.len() + r.blocked_by.len()
    );
    if let Some(a) = r.next_actions.first() {
        out.push_str(&format!("; next: {}", a.text));
    }
    out
}
