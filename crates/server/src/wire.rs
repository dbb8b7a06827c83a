//! Wire shapes: the request and response types shared by the HTTP API and the MCP tools, and
//! the hand-written conversions from engine types (engine types are not `Serialize`).
//!
//! Requests are forgiving in spelling and strict in content: fields accept the aliases a caller
//! (or an LLM) is likely to use (`entity`/`name`/`subject`, `question`/`query`), and a field the
//! request does not know is refused (`request.unknown_field`, naming it), never ignored: a
//! misspelt constraint would otherwise widen the answer without a word. Responses are strict:
//! fixed field names, no free-form blobs except the properties of a node, which are the
//! schema-checked properties of the graph.

use ctxgraph::{
    ContextPack, Edge, Evolution, FactEntity, FactView, Impact, Intent, Item, MemoryContext,
    MemoryView, Node, NodeKey, OutcomeView, RecallQuery, ResolvedEntity, Rollup, TimelineEntry,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::{ErrorClass, ServiceError, ViolationDto};

// ---------------------------------------------------------------------------------------------
// Parsers of untrusted input (fuzzed: `fuzz/fuzz_targets/http_batch.rs`, `mcp_arguments.rs`).

/// A request type: a JSON body, MCP tool arguments or query parameters. Every one refuses the
/// fields it does not know (`#[serde(deny_unknown_fields)]`).
pub trait WireRequest: DeserializeOwned + JsonSchema {
    /// What the request is called in error messages, e.g. `recall request`.
    const NAME: &'static str;
}

macro_rules! wire_requests {
    ($($ty:ty => $name:literal),* $(,)?) => {
        $(impl WireRequest for $ty {
            const NAME: &'static str = $name;
        })*
    };
}

wire_requests! {
    IngestRequest => "ingest request",
    IngestEventArgs => "ingest_event arguments",
    PageQuery => "page query",
    NodeQuery => "node query",
    NeighborsQuery => "neighbors query",
    RecallRequest => "recall request",
    SearchRequest => "search request",
    RecordFactRequest => "fact request",
    RetractFactRequest => "retract request",
    RecallEntityRequest => "entity recall request",
    SaveMemoryRequest => "memory request",
    OutcomeRequest => "outcome request",
    LinkRequest => "link request",
    EvolutionRequest => "evolution request",
    AsOfQuery => "as-of query",
    MemorySearchRequest => "memory search request",
    RollupRequest => "rollup request",
    MemoryListQuery => "memory list query",
    ForgetRequest => "forget request",
    ReceiptsRequest => "receipts request",
    ReceiptListQuery => "receipt list query",
}

mod explore;
mod tools;
pub use explore::*;
pub use tools::*;

/// The field serde names in an "unknown field" error message (`unknown field `tag`, expected
/// ...`), if the message is one. Only the message's start counts: a wrong-typed value quoted
/// later in another message may hold the same words.
fn unknown_field_in(message: &str) -> Option<&str> {
    const QUERY: &str = "Failed to deserialize query string: ";
    const START: &str = "unknown field `";
    let message = message.strip_prefix(QUERY).map_or(message, |rest| {
        // A query string's rejection names the parameter first: "limt: unknown field `limt`".
        rest.split_once(": ").filter(|(_, m)| m.starts_with(START)).map_or(rest, |(_, m)| m)
    });
    let rest = message.strip_prefix(START)?;
    // serde ends the name with "`, expected ..." or "`, there are no fields"; a name may itself
    // hold a backtick, so the end is the first of those.
    let end = ["`, expected", "`, there are no fields"]
        .iter()
        .filter_map(|end| rest.find(end))
        .min()
        .or_else(|| rest.find('`'))?;
    Some(&rest[..end])
}

/// The fields `T` knows, by their canonical names, as its JSON schema lists them.
fn known_fields<T: JsonSchema>() -> Vec<String> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// `request.unknown_field` (HTTP 400, an MCP tool error): the field, the request and the fields
/// it knows.
pub fn unknown_field<T: WireRequest>(field: &str) -> ServiceError {
    let field: String = field.chars().take(100).collect();
    let expected =
        known_fields::<T>().iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let message = format!("unknown field `{field}` in {}; expected one of {expected}", T::NAME);
    let mut e = ServiceError::bad_request("request.unknown_field", message.clone());
    e.violations.push(ViolationDto {
        path: format!("$.{field}"),
        value: None,
        rule: "request.unknown_field".to_owned(),
        message,
    });
    e
}

/// A serde error (or a rejection's text holding one) about an unknown field of `T` as
/// [`unknown_field`], if it is one.
pub fn unknown_field_error<T: WireRequest>(message: &str) -> Option<ServiceError> {
    unknown_field_in(message).map(unknown_field::<T>)
}

/// Parse a JSON request body: not JSON is `request.malformed_json` (HTTP 400), a field the
/// request does not know is `request.unknown_field` (HTTP 400), JSON of the wrong shape (a
/// missing field, a wrong type) is `request.invalid_body` (HTTP 422).
///
/// A key repeated in one object, or an integer beyond 64 bits, is refused too (HTTP 422, the
/// code `json.duplicate_key` or `json.integer_range`, a violation per finding naming its path in
/// the body): the parser would keep the last key or a float silently.
pub fn parse_body<T: WireRequest>(bytes: &[u8]) -> Result<T, ServiceError> {
    let parsed = parse_body_lenient::<T>(bytes)?;
    // Parsed, so the bytes are well-formed JSON text, which the scan needs.
    let forgiven = std::str::from_utf8(bytes).map(ctxgraph::strict_json).unwrap_or_default();
    if let Some(first) = forgiven.first() {
        let mut e = ServiceError::new(
            ErrorClass::Invalid,
            first.rule,
            format!("the {} is refused: {} at {}", T::NAME, first.message, first.path),
        );
        e.violations = forgiven.iter().map(ViolationDto::from).collect();
        return Err(e);
    }
    Ok(parsed)
}

fn parse_body_lenient<T: WireRequest>(bytes: &[u8]) -> Result<T, ServiceError> {
    serde_json::from_slice(bytes).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => unknown_field_error::<T>(&e.to_string())
            .unwrap_or_else(|| {
                ServiceError::new(
                    ErrorClass::Invalid,
                    "request.invalid_body",
                    format!("the body does not fit the {}: {e}", T::NAME),
                )
            }),
        serde_json::error::Category::Syntax
        | serde_json::error::Category::Eof
        | serde_json::error::Category::Io => ServiceError::bad_request(
            "request.malformed_json",
            format!("the body is not JSON: {e}"),
        ),
    })
}

/// Parse MCP tool arguments (absent, or a JSON object) into a request: a field the request does
/// not know is `request.unknown_field`; anything else, a missing field or a wrong type is
/// `mcp.invalid_arguments`, naming the field and the rule.
pub fn parse_arguments<T: WireRequest>(raw: &Value) -> Result<T, ServiceError> {
    let raw = match raw {
        Value::Null => Value::Object(serde_json::Map::new()),
        Value::Object(_) => raw.clone(),
        other @ (Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_)) => {
            return Err(ServiceError::bad_request(
                "mcp.invalid_arguments",
                format!("arguments must be a JSON object, not {other}"),
            ));
        }
    };
    serde_json::from_value(raw).map_err(|e| {
        unknown_field_error::<T>(&e.to_string()).unwrap_or_else(|| {
            ServiceError::bad_request("mcp.invalid_arguments", format!("invalid arguments: {e}"))
        })
    })
}

// ---------------------------------------------------------------------------------------------
// Requests.

/// A batch of event records (`POST /v1/events`, tool `ingest_event` takes one).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IngestRequest {
    /// Event records, each a JSON object in the event envelope (`event_id`, `event_type`,
    /// `occurred_at`, `session_id`, `agent_id`, ... plus optional scope and PII fields). Each
    /// gets its own result; a refused one does not stop the others.
    #[serde(alias = "records")]
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<Value>,
}

/// Record one event (tool `ingest_event`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IngestEventArgs {
    /// The event record: a JSON object with at least `event_id`, `event_type` (e.g.
    /// `tool.execute`, `message.user`), `occurred_at` (RFC 3339), `session_id` and `agent_id`;
    /// optional `parent_event_id`, `trace_id`, `tool_name`, `status`, `payload`, `entities`,
    /// `scope` (`{audience, allow_roles, deny_roles, tags, location, time_range}`) and `pii`
    /// (`{pii_cleared, pending_review, pii_redacted}`).
    #[serde(alias = "record")]
    pub event: Value,
}

/// Page through a session's events.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// Most items on this page (default 100, at most 1000).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page; absent for the first page.
    pub cursor: Option<String>,
}

/// Most items a recall returns.
pub const MAX_RECALL_K: usize = 100;

/// A question for the recall pipeline (`POST /v1/recall`, tool `recall`, and `ctxgraph recall`,
/// whose flags have the same names with `-` for `_`): the question, its constraints and options.
/// Every field but `question` may be absent.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallRequest {
    /// The question, in words: what the agent needs context for.
    #[serde(alias = "query", alias = "q", alias = "text")]
    pub question: String,
    /// How many items to return: 1 to 100, default 10.
    #[serde(default, alias = "limit", alias = "top_k")]
    pub k: Option<usize>,
    /// The intent, which sets the edges expansion follows: `why`, `when`, `who_what` (also
    /// `who`, `what`), `related`, `overview` or `lookup`; classified from the question when
    /// absent.
    #[serde(default)]
    pub intent: Option<String>,
    /// Only events at or after this time (RFC 3339 with offset); other nodes are not time-bound.
    #[serde(default)]
    pub since: Option<String>,
    /// Only events at or before this time (RFC 3339 with offset).
    #[serde(default)]
    pub until: Option<String>,
    /// Only events of this session.
    #[serde(default, alias = "session_id")]
    pub session: Option<String>,
    /// Only events of this trace (a run, a conversation).
    #[serde(default, alias = "trace_id")]
    pub trace: Option<String>,
    /// Only events by this agent.
    #[serde(default, alias = "agent_id")]
    pub agent: Option<String>,
    /// Only events and memories with at least one of these scope tags; empty or absent: any.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only events and memories whose scope location is this path or below it (`lab` matches
    /// `lab/arm-bench`).
    #[serde(default)]
    pub location: Option<String>,
    /// Only items with these node labels, e.g. `["Event", "Memory"]` (expansion still walks
    /// through the others); empty or absent: every label.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Only paths whose least confidence is at least this, in [0, 1]; default 0.
    #[serde(default)]
    pub min_confidence: Option<f64>,
    /// Keep the most valuable items whose text fits this many tokens (about 4 characters each);
    /// `trimmed` counts the items left out.
    #[serde(default)]
    pub budget_tokens: Option<usize>,
    /// Diversify the items by maximal marginal relevance with this λ in [0, 1] (1: no
    /// diversity); off when absent.
    #[serde(default)]
    pub diversity: Option<f64>,
    /// The time salience is measured at (RFC 3339 with offset); the newest candidate's time
    /// when absent.
    #[serde(default)]
    pub as_of: Option<String>,
}

impl RecallRequest {
    /// The engine's query for this request, every value checked; errors name the field as the
    /// JSON request spells it.
    pub fn to_query(&self) -> Result<RecallQuery, ServiceError> {
        self.to_query_named(str::to_owned)
    }

    /// [`RecallRequest::to_query`] with errors naming each field as `name` spells it (the CLI
    /// names its flags). The one place a recall request's fields get their meaning, so every
    /// interface asks the same question.
    pub fn to_query_named(
        &self,
        name: impl Fn(&str) -> String,
    ) -> Result<RecallQuery, ServiceError> {
        if self.question.trim().is_empty() {
            return Err(ServiceError::bad_request(
                "request.empty_question",
                format!("{} is empty: ask something", name("question")),
            ));
        }
        let mut q = RecallQuery::new(self.question.clone());
        q.k = match self.k {
            None => q.k,
            Some(k @ 1..=MAX_RECALL_K) => k,
            Some(k) => {
                return Err(ServiceError::bad_request(
                    "request.k_range",
                    format!("{} {k} is out of range: ask for 1 to {MAX_RECALL_K} items", name("k")),
                ));
            }
        };
        q.intent = match &self.intent {
            None => None,
            Some(intent) => Some(Intent::parse(intent).ok_or_else(|| {
                ServiceError::bad_request(
                    "request.intent",
                    format!(
                        "{} `{intent}` is not an intent: use why, when, who_what, related, overview or lookup",
                        name("intent")
                    ),
                )
            })?),
        };
        let time = |field: &str, t: &Option<String>| {
            t.as_deref()
                .map(|t| {
                    chrono::DateTime::parse_from_rfc3339(t).map_err(|e| {
                        ServiceError::bad_request(
                            "request.time_format",
                            format!(
                                "{} `{t}` is not an RFC 3339 time with offset: {e}",
                                name(field)
                            ),
                        )
                    })
                })
                .transpose()
        };
        q.since = time("since", &self.since)?;
        q.until = time("until", &self.until)?;
        q.as_of = time("as_of", &self.as_of)?;
        q.session = self.session.clone();
        q.trace = self.trace.clone();
        q.agent = self.agent.clone();
        q.tags = self.tags.clone();
        q.location = self.location.clone();
        q.labels = (!self.labels.is_empty()).then(|| self.labels.clone());
        if let Some(c) = self.min_confidence {
            if !(0.0..=1.0).contains(&c) {
                return Err(ServiceError::bad_request(
                    "request.confidence_range",
                    format!("{} {c} is outside [0, 1]", name("min_confidence")),
                ));
            }
            q.min_confidence = c;
        }
        q.budget_tokens = self.budget_tokens;
        if let Some(d) = self.diversity
            && !(0.0..=1.0).contains(&d)
        {
            return Err(ServiceError::bad_request(
                "request.diversity_range",
                format!("{} {d} is out of range: λ must be within [0, 1]", name("diversity")),
            ));
        }
        q.diversity = self.diversity;
        Ok(q)
    }
}

/// Full-text search (`POST /v1/search`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// Words to look for.
    #[serde(alias = "question", alias = "q", alias = "text")]
    pub query: String,
    /// Most hits (default 20, at most 200).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// A claim (`POST /v1/facts`, tool `record_fact`): subject, predicate, object.
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordFactRequest {
    /// What the claim is about: a name, an alias, a near spelling or an entity id.
    #[serde(alias = "entity", alias = "name")]
    pub subject: String,
    /// The subject's type (`person`, `project`, `decision`, `concept`, `source`, or a type of
    /// the schema); needed to create the entity when nothing matches.
    #[serde(default, alias = "subject_entity_type", alias = "type")]
    pub subject_type: Option<String>,
    /// A controlled predicate: `mentioned_in`, `decided_in`, `reports_to`, `depends_on`,
    /// `resolved_by`, `blocked_by`, `tagged`, `belongs_to`, `also_known_as` (an alias, a name as
    /// object) (case, `-` and spaces forgiven).
    #[serde(alias = "relation", alias = "verb")]
    pub predicate: String,
    /// The object: an entity name for an entity predicate, a value for a literal one, a slot
    /// value as `{"slot": "genre", "value": "drama"}` or a declared type as `{"type": "Film"}`.
    #[serde(alias = "target", alias = "value")]
    #[schema(value_type = Object)]
    pub object: Value,
    /// The object's type, when it is an entity to create.
    #[serde(default, alias = "object_entity_type")]
    pub object_type: Option<String>,
    /// Where the claim comes from, stored verbatim, never fetched.
    #[serde(default, alias = "provenance")]
    pub source: Option<String>,
    /// In [0, 1]; 1.0 when absent. Lower it for inferred claims.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Start of validity (RFC 3339 or YYYY-MM-DD).
    #[serde(default)]
    pub valid_from: Option<String>,
    /// End of validity, exclusive.
    #[serde(default)]
    pub valid_to: Option<String>,
    /// The id of the document sentence the claim was read from (`{document id}/tN`, as
    /// `show_document` lists them): the fact then cites it. The sentence must exist.
    #[serde(default, alias = "sentence", alias = "sentence_id", alias = "cite")]
    pub cites: Option<String>,
}

/// Retract a fact (`POST /v1/facts/{fact_id}/retract`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetractFactRequest {
    /// Why it no longer holds.
    #[serde(default)]
    pub reason: Option<String>,
    /// From when it no longer holds (RFC 3339); now when absent.
    #[serde(default)]
    pub at: Option<String>,
}

/// An entity and the facts about it (`POST /v1/entities/recall`, tool `recall_entity`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallEntityRequest {
    /// The entity: a name, an alias, a near spelling or an entity id.
    #[serde(alias = "name", alias = "subject", alias = "entity_id", alias = "id")]
    pub entity: String,
    /// Its type, to tell apart entities of the same name.
    #[serde(default, alias = "type")]
    pub entity_type: Option<String>,
    /// Facts true at this time (RFC 3339 or YYYY-MM-DD); now when absent.
    #[serde(default)]
    pub as_of: Option<String>,
}

/// A memory to save (`POST /v1/memories`, tool `save_memory`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveMemoryRequest {
    /// `decision`, `checkpoint`, `insight` or `context`.
    #[serde(default = "default_kind", alias = "type", alias = "memory_type")]
    pub kind: String,
    /// The memory itself, in words.
    #[serde(alias = "text", alias = "memory", alias = "decision")]
    pub content: String,
    /// The topic it belongs to (decisions on one topic form its evolution chain).
    #[serde(default, alias = "subject")]
    pub topic: Option<String>,
    /// Why.
    #[serde(default, alias = "rationale", alias = "why")]
    pub reasoning: Option<String>,
    /// In [0, 1].
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Its id; derived from the content when absent.
    #[serde(default, alias = "id")]
    pub memory_id: Option<String>,
    /// The memory this one replaces.
    #[serde(default)]
    pub supersedes: Option<String>,
    /// Memories (decisions) this one implements.
    #[serde(default)]
    pub implements: Vec<String>,
    /// The session it was made in.
    #[serde(default, alias = "session")]
    pub session_id: Option<String>,
    /// When (RFC 3339); now when absent.
    #[serde(default, alias = "at")]
    pub created_at: Option<String>,
    /// false: link it to nothing automatically (temporal, same topic, semantic), now or when the
    /// links are rebuilt; explicit links (supersedes, implements) are kept. true when absent.
    #[serde(default)]
    pub auto_link: Option<bool>,
    /// Who made it: `user` (a person; the default), `llm` (an agent, such as the caller of a
    /// tool, deciding on its own) or `system`. Kept with the record and its links.
    #[serde(default, alias = "creator", alias = "author")]
    pub created_by: Option<String>,
}

fn default_kind() -> String {
    "decision".to_owned()
}

/// The outcome of a memory (`POST /v1/memories/{id}/outcome`, tool `evolve_outcome`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeRequest {
    /// The memory (usually a decision) the outcome is about; taken from the path over HTTP.
    #[serde(default, alias = "memory", alias = "id", alias = "decision_id")]
    pub memory_id: Option<String>,
    /// `success`, `failed` or `partial`.
    #[serde(alias = "result", alias = "status")]
    pub outcome: String,
    /// Why, in words; none when absent.
    #[serde(default, alias = "why", alias = "notes")]
    pub reason: String,
    /// Who made it: `user` (a person; the default), `llm` (an agent, such as the caller of a
    /// tool, deciding on its own) or `system`. Kept with the record and its links.
    #[serde(default, alias = "creator", alias = "author")]
    pub created_by: Option<String>,
    /// When (RFC 3339); now when absent.
    #[serde(default)]
    pub at: Option<String>,
}

/// An explicit link between memories (`POST /v1/memories/links`, tool `link_memories`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkRequest {
    /// The memory the link starts at.
    #[serde(alias = "source", alias = "from_id")]
    pub from: String,
    /// The memory the link points to.
    #[serde(alias = "target", alias = "to_id")]
    pub to: String,
    /// `supersedes`, `implements`, `outcome_of`, `relates_to` or `temporal`.
    #[serde(default = "default_link", alias = "type", alias = "relation")]
    pub link_type: String,
    /// In [0, 1]; 1.0 when absent.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Why the memories are linked.
    #[serde(default)]
    pub reason: Option<String>,
    /// Who made it: `user` (a person; the default), `llm` (an agent, such as the caller of a
    /// tool, deciding on its own) or `system`. Kept with the record and its links.
    #[serde(default, alias = "creator", alias = "author")]
    pub created_by: Option<String>,
}

fn default_link() -> String {
    "relates_to".to_owned()
}

/// A topic's decision chain (tool `evolution`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvolutionRequest {
    /// The topic, as the decisions name it.
    #[serde(alias = "subject", alias = "name")]
    pub topic: String,
    /// Link confidences decayed to this time (RFC 3339 or YYYY-MM-DD); now when absent.
    #[serde(default)]
    pub as_of: Option<String>,
}

/// What depends on a memory (`GET /v1/memories/{id}/impact`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AsOfQuery {
    /// Link confidences decayed to this time (RFC 3339 or YYYY-MM-DD); now when absent.
    pub as_of: Option<String>,
}

/// Contextual search over memories (`POST /v1/memories/search`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySearchRequest {
    /// The question about decisions.
    #[serde(alias = "question", alias = "q", alias = "text")]
    pub query: String,
    /// The memory the caller is looking at (its connected memories are boosted).
    #[serde(default)]
    pub context: Option<String>,
    /// Most hits (default 20, at most 200).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// A window for the rollup (tool `weekly_rollup`, `GET /v1/memories/rollup`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RollupRequest {
    /// Start (RFC 3339 or YYYY-MM-DD); seven days before `until` when absent.
    #[serde(default, alias = "from", alias = "start")]
    pub since: Option<String>,
    /// End (RFC 3339 or YYYY-MM-DD); now when absent.
    #[serde(default, alias = "to", alias = "end")]
    pub until: Option<String>,
}

/// List memories (`GET /v1/memories`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct MemoryListQuery {
    /// Only this kind.
    pub kind: Option<String>,
    /// Only this topic.
    pub topic: Option<String>,
    /// Most items on this page (default 100, at most 1000).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Responses.

/// A graph node: label, id and its schema-checked properties.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct NodeDto {
    /// Node type, e.g. `Event`, `Entity`, `Memory`.
    pub label: String,
    /// Id, unique within the label.
    pub id: String,
    /// Properties.
    #[schema(value_type = Object)]
    pub properties: Value,
}

/// Moves the node's strings and values: a recall's pack is converted once, and copying its
/// items' properties (an event's payload) through a serializer was a tenth of a request.
impl From<Node> for NodeDto {
    fn from(n: Node) -> Self {
        NodeDto {
            label: n.key.label,
            id: n.key.id,
            properties: Value::Object(n.props.into_iter().collect()),
        }
    }
}

impl From<&Node> for NodeDto {
    fn from(n: &Node) -> Self {
        NodeDto::from(n.clone())
    }
}

/// A node's label and id.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct KeyDto {
    /// Node type.
    pub label: String,
    /// Id.
    pub id: String,
}

impl From<NodeKey> for KeyDto {
    fn from(k: NodeKey) -> Self {
        KeyDto { label: k.label, id: k.id }
    }
}

impl From<&NodeKey> for KeyDto {
    fn from(k: &NodeKey) -> Self {
        KeyDto::from(k.clone())
    }
}

/// A graph edge.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct EdgeDto {
    /// Edge type, e.g. `CAUSED_BY`.
    #[serde(rename = "type")]
    pub edge_type: String,
    /// Start node.
    pub from: KeyDto,
    /// End node.
    pub to: KeyDto,
    /// Properties.
    #[schema(value_type = Object)]
    pub properties: Value,
}

impl From<&Edge> for EdgeDto {
    fn from(e: &Edge) -> Self {
        EdgeDto {
            edge_type: e.key.edge_type.clone(),
            from: (&e.key.from).into(),
            to: (&e.key.to).into(),
            properties: serde_json::to_value(&e.props).unwrap_or(Value::Null),
        }
    }
}

/// The result of one record of a batch.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ItemResult {
    /// Index in the batch.
    pub index: usize,
    /// The record id, when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `accepted` (new), `duplicate` (already stored, identical) or `rejected`.
    pub status: String,
    /// Log position (accepted and duplicate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
    /// Stable code of the first broken rule (rejected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Every broken rule (rejected).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<ViolationDto>,
}

/// What a batch ingest did; every accepted record is durable when this is returned.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct IngestResponse {
    /// New records.
    pub accepted: u64,
    /// Records already stored.
    pub duplicates: u64,
    /// Records refused.
    pub rejected: u64,
    /// One result per record, in order.
    pub results: Vec<ItemResult>,
}

/// One event of a session timeline.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct TimelineItem {
    /// The event.
    pub event: NodeDto,
    /// Visible events it was caused by.
    pub caused_by: Vec<String>,
    /// A parent it names that is not in the log (yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_parent: Option<String>,
}

impl From<&TimelineEntry> for TimelineItem {
    fn from(t: &TimelineEntry) -> Self {
        TimelineItem {
            event: (&t.event).into(),
            caused_by: t.caused_by.clone(),
            missing_parent: t.missing_parent.clone(),
        }
    }
}

/// A page of a session's events, in time order.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct TimelinePage {
    /// The session.
    pub session_id: String,
    /// Events on this page.
    pub events: Vec<TimelineItem>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One step of the path that brought a recall item in.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct StepDto {
    /// Edge type.
    pub edge_type: String,
    /// Whether the step followed the edge's direction.
    pub forward: bool,
    /// The edge's qualifier (e.g. a role), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualifier: Option<String>,
    /// The node reached.
    pub to: KeyDto,
}

/// The factors of an item's score: `score = relevance × path_weight × confidence × salience ×
/// focus × matched`.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct FactorsDto {
    /// Relevance of the item, or of the seed it was reached from, in (0, 1].
    pub relevance: f64,
    /// Product of the path's step weights (1 for a seed).
    pub path_weight: f64,
    /// The least confidence on the path.
    pub confidence: f64,
    /// Salience after decay.
    pub salience: f64,
    /// 1, or less for an event by an actor or at a time other than the question names, and
    /// for a summary when the question asks for no overview.
    pub focus: f64,
    /// An expanded item's own match to the question (1 to 1.25; 1 for a direct hit).
    pub matched: f64,
}

/// Where a pack item came from.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ProvenanceDto {
    /// Log position of the record behind it (events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_position: Option<u64>,
    /// When that record was acknowledged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<String>,
    /// Who produced it: an event's agent; `ctxgraph` for derived nodes.
    pub created_by: String,
    /// The source its payload names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// One item of a context pack with its score, the path that found it and its provenance.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct PackItem {
    /// The node.
    pub node: NodeDto,
    /// Final score, the product of the factors.
    pub score: f64,
    /// The factors of the score.
    pub factors: FactorsDto,
    /// Which prefilters found the seed (`vector`, `bm25`, `context`, `entity`, `dated`,
    /// `anchor`, `scope`).
    pub found_by: Vec<String>,
    /// The seed the item was reached from.
    pub seed: KeyDto,
    /// The path from the seed.
    pub path: Vec<StepDto>,
    /// Where it came from.
    pub provenance: ProvenanceDto,
    /// Estimated tokens.
    pub tokens: usize,
}

impl From<Item> for PackItem {
    fn from(i: Item) -> Self {
        let f = &i.factors;
        let p = i.provenance;
        PackItem {
            node: i.node.into(),
            score: i.score,
            factors: FactorsDto {
                relevance: f.relevance,
                path_weight: f.path_weight,
                confidence: f.confidence,
                salience: f.salience,
                focus: f.focus,
                matched: f.matched,
            },
            found_by: i.found_by.iter().map(|s| (*s).to_owned()).collect(),
            seed: i.seed.into(),
            path: i
                .path
                .into_iter()
                .map(|s| StepDto {
                    edge_type: s.edge_type,
                    forward: s.forward,
                    qualifier: (!s.qualifier.is_empty()).then_some(s.qualifier),
                    to: s.to.into(),
                })
                .collect(),
            provenance: ProvenanceDto {
                log_position: p.log_position,
                recorded_at: p.recorded_at,
                created_by: p.created_by,
                source: p.source,
            },
            tokens: i.tokens,
        }
    }
}

/// Something a pack item refers to that is not known.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct UnknownDto {
    /// What is missing, e.g. `missing_parent`.
    pub kind: String,
    /// The item that refers to it.
    pub item: KeyDto,
    /// What it refers to.
    pub missing: KeyDto,
}

/// An edge among a pack's items.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct PackEdgeDto {
    /// The edge.
    #[serde(flatten)]
    pub edge: EdgeDto,
    /// Its confidence (its `confidence` or `score` property, else 1).
    pub confidence: f64,
    /// `record` (written by a record), `derived` (session order) or `inferred` (consolidation,
    /// entity resolution).
    pub provenance: String,
    /// Log position of the record behind a `record` edge, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_position: Option<u64>,
}

/// What the engine understood of the question.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ContextStateDto {
    /// Structural cues that fired (`failure`, `after`, `before`, `request`, `involved`).
    pub cues: Vec<String>,
    /// Nodes the question names by id.
    pub anchors: Vec<KeyDto>,
    /// Entities the question names.
    pub named: Vec<KeyDto>,
    /// Constraints in force (the caller's, and a session the question names).
    #[schema(value_type = Object)]
    pub constraints: std::collections::BTreeMap<String, String>,
    /// Earliest and latest event time among the items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_span: Option<Vec<String>>,
}

/// Wall-clock time of each phase of the recall, in microseconds (they differ from call to call).
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct TimingsDto {
    /// Embedding the question.
    pub embed: u64,
    /// The vector-index prefilter list.
    pub vector: u64,
    /// The BM25 prefilter list.
    pub bm25: u64,
    /// Entity lookup and the entity prefilter list.
    pub entity: u64,
    /// Fusion and graph expansion.
    pub expand: u64,
    /// Re-ranking and stitching.
    pub stitch: u64,
}

/// The context pack: the items an agent needs for a question, with provenance and unknowns.
/// `ctxgraph recall --json`, `POST /v1/recall` and the tool `recall` return this same shape.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ContextPackDto {
    /// The question.
    pub query: String,
    /// The intent used.
    pub intent: String,
    /// Whether the intent was classified (not given).
    pub intent_classified: bool,
    /// Items, best first.
    pub items: Vec<PackItem>,
    /// Edges between the items, with their confidence and provenance.
    pub edges: Vec<PackEdgeDto>,
    /// What the items refer to but is not known.
    pub unknowns: Vec<UnknownDto>,
    /// What the pack answers: cues, anchors, named entities, constraints, time span.
    pub state: ContextStateDto,
    /// Candidates considered.
    pub candidates: usize,
    /// Items left out to fit the token budget.
    pub trimmed: usize,
    /// Where the time went.
    pub timings_us: TimingsDto,
}

/// The pack on the wire: the one conversion every interface uses (CLI `--json`, HTTP, MCP).
/// It takes the pack by value and moves its items (the bulk of it) rather than copy them.
impl From<ContextPack> for ContextPackDto {
    fn from(p: ContextPack) -> Self {
        let t = &p.timings;
        ContextPackDto {
            intent: p.intent.name().to_owned(),
            intent_classified: p.intent_classified,
            items: p.items.into_iter().map(PackItem::from).collect(),
            edges: p
                .edges
                .iter()
                .map(|e| PackEdgeDto {
                    edge: (&e.edge).into(),
                    confidence: e.confidence,
                    provenance: e.provenance.to_owned(),
                    log_position: e.log_position,
                })
                .collect(),
            state: ContextStateDto {
                cues: p.state.cues.iter().map(|c| (*c).to_owned()).collect(),
                anchors: p.state.anchors.iter().map(KeyDto::from).collect(),
                named: p.state.named.iter().map(KeyDto::from).collect(),
                constraints: p.state.constraints.iter().cloned().collect(),
                time_span: p.state.time_span.clone().map(|(a, b)| vec![a, b]),
            },
            unknowns: p
                .unknowns
                .iter()
                .map(|u| UnknownDto {
                    kind: u.kind.to_owned(),
                    item: (&u.item).into(),
                    missing: (&u.missing).into(),
                })
                .collect(),
            candidates: p.candidates,
            trimmed: p.trimmed,
            timings_us: TimingsDto {
                embed: t.embed_us,
                vector: t.vector_us,
                bm25: t.bm25_us,
                entity: t.entity_us,
                expand: t.expand_us,
                stitch: t.stitch_us,
            },
            query: p.query,
        }
    }
}

/// A full-text hit.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct SearchHit {
    /// The node.
    pub node: NodeDto,
    /// BM25 score.
    pub score: f64,
}

/// Full-text hits, best first.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct SearchResponse {
    /// Hits.
    pub hits: Vec<SearchHit>,
}

/// An entity end of a fact.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct FactEntityDto {
    /// Entity id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Entity type.
    pub entity_type: String,
}

impl From<&FactEntity> for FactEntityDto {
    fn from(e: &FactEntity) -> Self {
        FactEntityDto { id: e.id.clone(), name: e.name.clone(), entity_type: e.entity_type.clone() }
    }
}

/// A cited sentence.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct CitationDto {
    /// Sentence id.
    pub sentence_id: String,
    /// How well it supports the claim.
    pub support: f64,
    /// The sentence.
    pub text: String,
}

/// A fact with what supports it.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct FactDto {
    /// Fact id.
    pub fact_id: String,
    /// Subject.
    pub subject: FactEntityDto,
    /// Predicate.
    pub predicate: String,
    /// Entity object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<FactEntityDto>,
    /// Literal object.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub literal: Option<Value>,
    /// Slot-value object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_slot: Option<tools::PreferArg>,
    /// Type object (the type's id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_type: Option<String>,
    /// Merged confidence of the claims.
    pub confidence: f64,
    /// Number of claims.
    pub claims: u64,
    /// Sources, verbatim.
    pub sources: Vec<String>,
    /// Cited sentences.
    pub citations: Vec<CitationDto>,
    /// Validity start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// Validity end, exclusive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
    /// Retracted from this time on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retracted_at: Option<String>,
    /// Whether it holds at the time asked.
    pub active: bool,
    /// Facts it contradicts.
    pub contradicted_by: Vec<String>,
}

impl From<&FactView> for FactDto {
    fn from(f: &FactView) -> Self {
        FactDto {
            fact_id: f.fact_id.clone(),
            subject: (&f.subject).into(),
            predicate: f.predicate.clone(),
            object: f.object.as_ref().map(FactEntityDto::from),
            literal: f.literal.clone(),
            object_slot: f
                .object_slot
                .as_ref()
                .map(|(slot, value)| tools::PreferArg { slot: slot.clone(), value: value.clone() }),
            object_type: f.object_type.clone(),
            confidence: f.confidence,
            claims: f.claims,
            sources: f.sources.clone(),
            citations: f
                .citations
                .iter()
                .map(|(id, support, text)| CitationDto {
                    sentence_id: id.clone(),
                    support: *support,
                    text: text.clone(),
                })
                .collect(),
            valid_from: f.valid_from.clone(),
            valid_to: f.valid_to.clone(),
            retracted_at: f.retracted_at.clone(),
            active: f.active,
            contradicted_by: f.contradicted_by.clone(),
        }
    }
}

/// How a name was matched to an entity.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ResolvedDto {
    /// Entity id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// How it matched: `id`, `exact`, `alias`, `fuzzy`, `embedding` or `created`.
    pub via: String,
}

impl From<&ResolvedEntity> for ResolvedDto {
    fn from(e: &ResolvedEntity) -> Self {
        ResolvedDto { id: e.id.clone(), name: e.name.clone(), via: e.via.clone() }
    }
}

/// What recording a claim did.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct FactRecorded {
    /// `accepted` or `duplicate`.
    pub status: String,
    /// Log position.
    pub position: u64,
    /// The fact the claim supports.
    pub fact_id: String,
    /// The claim's record id.
    pub claim_id: String,
    /// How the subject resolved.
    pub subject: ResolvedDto,
    /// How the object resolved (entity objects).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<ResolvedDto>,
    /// The fact after merging the claim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fact: Option<FactDto>,
}

/// What a write of one record did.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct Written {
    /// The record id (memory, outcome, link or retraction).
    pub id: String,
    /// `accepted` or `duplicate`.
    pub status: String,
    /// Log position.
    pub position: u64,
}

/// An entity and the facts about it.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct EntityFacts {
    /// The entity.
    pub entity: NodeDto,
    /// How the caller's name matched it.
    pub via: String,
    /// Facts about it (as subject or object), true ones first.
    pub facts: Vec<FactDto>,
}

/// A memory.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct MemoryDto {
    /// Id.
    pub id: String,
    /// `decision`, `checkpoint`, `insight` or `context`.
    pub kind: String,
    /// Topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// The memory.
    pub content: String,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Confidence.
    pub confidence: f64,
    /// Who saved it.
    pub created_by: String,
    /// Session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// When (RFC 3339).
    pub created_at: String,
    /// Latest outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Why, for the latest outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_reason: Option<String>,
}

impl From<&MemoryView> for MemoryDto {
    fn from(m: &MemoryView) -> Self {
        MemoryDto {
            id: m.id.clone(),
            kind: m.kind.clone(),
            topic: m.topic.clone(),
            content: m.content.clone(),
            reasoning: m.reasoning.clone(),
            confidence: m.confidence,
            created_by: m.created_by.clone(),
            session_id: m.session_id.clone(),
            created_at: m.created_at.clone(),
            outcome: m.outcome.clone(),
            outcome_reason: m.outcome_reason.clone(),
        }
    }
}

/// A page of memories, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct MemoryPage {
    /// Memories on this page.
    pub memories: Vec<MemoryDto>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// An outcome.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct OutcomeDto {
    /// Outcome id.
    pub id: String,
    /// The memory.
    pub memory_id: String,
    /// `success`, `failed` or `partial`.
    pub outcome: String,
    /// Why.
    pub reason: String,
    /// When.
    pub at: String,
}

impl From<&OutcomeView> for OutcomeDto {
    fn from(o: &OutcomeView) -> Self {
        OutcomeDto {
            id: o.id.clone(),
            memory_id: o.memory_id.clone(),
            outcome: o.outcome.clone(),
            reason: o.reason.clone(),
            at: o.at.clone(),
        }
    }
}

/// One decision of an evolution chain.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct EvolutionStepDto {
    /// The decision.
    pub memory: MemoryDto,
    /// Its outcomes.
    pub outcomes: Vec<OutcomeDto>,
    /// Memories implementing it.
    pub implemented_by: Vec<String>,
    /// Confidence of the link from the previous (newer) step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes_confidence: Option<f64>,
    /// How it was reached from the previous step: `supersedes`, `relates_to` (the topic's next
    /// older decision, linked) or `same_topic` (the topic's next older decision, not linked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Whether that link was made explicitly, not by an automatic rule or topic order.
    pub explicit: bool,
}

/// A topic's decisions, newest first, along supersedes links.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct EvolutionDto {
    /// The topic.
    pub topic: String,
    /// The chain.
    pub steps: Vec<EvolutionStepDto>,
    /// In words: the decision in force and what it replaced.
    pub summary: String,
}

impl From<&Evolution> for EvolutionDto {
    fn from(e: &Evolution) -> Self {
        EvolutionDto {
            topic: e.topic.clone(),
            steps: e
                .steps
                .iter()
                .map(|s| EvolutionStepDto {
                    memory: (&s.memory).into(),
                    outcomes: s.outcomes.iter().map(OutcomeDto::from).collect(),
                    implemented_by: s.implemented_by.clone(),
                    supersedes_confidence: s.link_confidence,
                    via: s.via.map(str::to_owned),
                    explicit: s.explicit,
                })
                .collect(),
            summary: tools::evolution_summary(e),
        }
    }
}

/// A memory reached by an impact walk.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ImpactItemDto {
    /// The memory.
    pub memory: MemoryDto,
    /// The link type followed.
    pub via: String,
    /// The memory it was reached from.
    pub from: String,
    /// Depth.
    pub depth: usize,
    /// Effective link confidence.
    pub confidence: f64,
}

/// What depends on a memory.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ImpactDto {
    /// The start.
    pub start: MemoryDto,
    /// Memories reached.
    pub items: Vec<ImpactItemDto>,
    /// Outcomes of the start and the items.
    pub outcomes: Vec<OutcomeDto>,
    /// Memories that supersede the start.
    pub superseded_by: Vec<MemoryDto>,
    /// In words.
    pub summary: String,
}

impl From<&Impact> for ImpactDto {
    fn from(i: &Impact) -> Self {
        ImpactDto {
            start: (&i.start).into(),
            items: i
                .items
                .iter()
                .map(|x| ImpactItemDto {
                    memory: (&x.memory).into(),
                    via: x.via.to_string(),
                    from: x.from.clone(),
                    depth: x.depth,
                    confidence: x.confidence,
                })
                .collect(),
            outcomes: i.outcomes.iter().map(OutcomeDto::from).collect(),
            superseded_by: i.superseded_by.iter().map(MemoryDto::from).collect(),
            summary: tools::impact_summary(i),
        }
    }
}

/// A memory search hit.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct MemoryHitDto {
    /// The memory.
    pub memory: MemoryDto,
    /// Final score.
    pub score: f64,
    /// Cosine similarity to the question.
    pub similarity: f64,
    /// Lexical match score.
    pub lexical: f64,
    /// Whether it is connected to the context memory.
    pub connected: bool,
}

/// Memories relevant to a question, with the evolution of the decision it is most about.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct MemoryContextDto {
    /// Hits, best first.
    pub hits: Vec<MemoryHitDto>,
    /// The evolution chain of the top decision's topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evolution: Option<EvolutionDto>,
    /// What depends on the decisions along it.
    pub evidence: Vec<ImpactDto>,
    /// Their outcomes.
    pub outcomes: Vec<OutcomeDto>,
    /// In words: the best match, the evolution behind it and its evidence.
    pub summary: String,
}

impl From<&MemoryContext> for MemoryContextDto {
    fn from(c: &MemoryContext) -> Self {
        MemoryContextDto {
            hits: c
                .hits
                .iter()
                .map(|h| MemoryHitDto {
                    memory: (&h.memory).into(),
                    score: h.score,
                    similarity: h.similarity,
                    lexical: h.lexical,
                    connected: h.connected,
                })
                .collect(),
            evolution: c.evolution.as_ref().map(EvolutionDto::from),
            evidence: c.evidence.iter().map(ImpactDto::from).collect(),
            outcomes: c.outcomes.iter().map(OutcomeDto::from).collect(),
            summary: tools::memory_context_summary(c),
        }
    }
}

/// A decision blocked by its latest outcome.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct BlockedDto {
    /// The memory.
    pub memory: MemoryDto,
    /// The outcome that blocks it.
    pub outcome: OutcomeDto,
}

/// A suggested next step.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct NextActionDto {
    /// What to do, e.g. `record_outcome`, `supersede`.
    pub action: String,
    /// The memory it is about (for `unblock`, the blocking fact's id).
    pub memory_id: String,
    /// In words.
    pub text: String,
}

/// The week's decisions, outcomes, open and blocked items and next actions.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct RollupDto {
    /// Window start.
    pub since: String,
    /// Window end.
    pub until: String,
    /// Decisions made in the window.
    pub decisions: Vec<MemoryDto>,
    /// Outcomes recorded in the window.
    pub outcomes: Vec<OutcomeDto>,
    /// Decisions without an outcome.
    pub open: Vec<MemoryDto>,
    /// Decisions whose latest outcome failed.
    pub blocked: Vec<BlockedDto>,
    /// `blocked_by` facts true at the end of the window.
    pub blocked_by: Vec<FactDto>,
    /// Suggested next steps.
    pub next_actions: Vec<NextActionDto>,
    /// In words.
    pub summary: String,
}

impl From<&Rollup> for RollupDto {
    fn from(r: &Rollup) -> Self {
        let at = |ns: i64| chrono::DateTime::from_timestamp_nanos(ns).to_rfc3339();
        RollupDto {
            since: at(r.since_ns),
            until: at(r.until_ns),
            decisions: r.decisions.iter().map(MemoryDto::from).collect(),
            outcomes: r.outcomes.iter().map(OutcomeDto::from).collect(),
            open: r.open.iter().map(MemoryDto::from).collect(),
            blocked: r
                .blocked
                .iter()
                .map(|b| BlockedDto { memory: (&b.memory).into(), outcome: (&b.outcome).into() })
                .collect(),
            blocked_by: r.blocked_by.iter().map(FactDto::from).collect(),
            next_actions: r
                .next_actions
                .iter()
                .map(|a| NextActionDto {
                    action: a.action.to_string(),
                    memory_id: a.memory_id.clone(),
                    text: a.text.clone(),
                })
                .collect(),
            summary: tools::rollup_summary(r),
        }
    }
}

/// What the principal may count in its tenant.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct StatsDto {
    /// The tenant.
    pub tenant: String,
    /// Visible events.
    pub events: u64,
    /// Visible memories.
    pub memories: u64,
    /// Whether saved memories are linked automatically in this tenant's store (off by the
    /// server's `--no-auto-link` or the store's own setting, `ctxgraph memory auto-link off`).
    pub auto_link: bool,
}

/// A principal (never its key).
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct PrincipalDto {
    /// Name.
    pub name: String,
    /// Tenant.
    pub tenant: String,
    /// Roles.
    pub roles: Vec<String>,
    /// When it was added.
    pub created_at: String,
}

/// Every principal of the registry.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct PrincipalList {
    /// Principals, by name.
    pub principals: Vec<PrincipalDto>,
}

/// Forget an event, a session, an entity or a memory (`POST /v1/forget`, tool `forget`; admins
/// only). The content leaves the store for good; the audit keeps what, when, by whom and why.
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetRequest {
    /// `event`, `session`, `entity` or `memory`.
    #[serde(alias = "target_kind", alias = "type")]
    pub kind: String,
    /// The id of the event, session, entity (`{type}:{name}`) or memory.
    #[serde(alias = "target", alias = "target_id", alias = "event_id", alias = "session_id")]
    pub id: String,
    /// Why (kept in the audit; do not repeat the forgotten content here).
    #[serde(default, alias = "why")]
    pub reason: Option<String>,
}

/// What a forget did.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ForgetResponse {
    /// The forget record's id (in the audit).
    pub forget_id: String,
    /// Its log position.
    pub position: u64,
    /// Log records whose content was removed.
    pub redacted: u64,
}

/// One entry of the forget audit, without the content.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ForgottenDto {
    /// The forget record's id.
    pub forget_id: String,
    /// Its log position.
    pub position: u64,
    /// `event`, `session`, `entity` or `memory`.
    pub kind: String,
    /// The forgotten target's id.
    pub target_id: String,
    /// The principal who forgot it.
    pub by: String,
    /// Why, if given.
    pub reason: Option<String>,
    /// When (RFC 3339).
    pub at: String,
    /// Log records redacted.
    pub redacted: u64,
}

impl From<&ctxgraph::Forgotten> for ForgottenDto {
    fn from(entry: &ctxgraph::Forgotten) -> Self {
        let f = &entry.record;
        ForgottenDto {
            forget_id: f.forget_id.clone(),
            position: entry.position,
            kind: f.kind.as_str().to_owned(),
            target_id: f.target_id.clone(),
            by: f.by.clone(),
            reason: f.reason.clone(),
            at: f.at.clone(),
            redacted: f.redacted,
        }
    }
}

/// The forget audit (`GET /v1/forgotten`; admins only).
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ForgottenList {
    /// Oldest first.
    pub forgotten: Vec<ForgottenDto>,
}

/// Decision receipts to record (`POST /v1/receipts`, tool `record_receipt`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiptsRequest {
    /// Receipts in the receipt layout: `task`, `actor`, `approvals`, `referenced_inputs`
    /// (`events`, `entities`, `documents`, `configs`, `spans`), `policies_checked`
    /// (`[{id, result: allow|deny}]`), `exceptions` (`[{id, justification}]`), `action`,
    /// `outcome` (`{status, notes, follow_ups}`), `timestamps` (`{requested, committed}`).
    /// Cited events and entities must exist.
    #[serde(alias = "receipt")]
    #[schema(value_type = Vec<Object>)]
    pub receipts: OneOrMany,
}

/// One JSON object or a list of them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    /// A list.
    Many(Vec<Value>),
    /// One.
    One(Value),
}

impl OneOrMany {
    /// The items as a list.
    pub fn into_vec(self) -> Vec<Value> {
        match self {
            OneOrMany::Many(v) => v,
            OneOrMany::One(v) => vec![v],
        }
    }
}

/// Which receipts to list (`GET /v1/receipts`, tool `list_receipts`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ReceiptListQuery {
    /// Only this task.
    #[serde(default)]
    pub task: Option<String>,
    /// Only this actor.
    #[serde(default)]
    pub actor: Option<String>,
    /// Only receipts committed at or after this time (RFC 3339 or a date).
    #[serde(default)]
    pub since: Option<String>,
    /// Only receipts committed before this time.
    #[serde(default)]
    pub until: Option<String>,
    /// Only receipts that checked this policy: `ID` or `ID=allow|deny`.
    #[serde(default)]
    pub policy: Option<String>,
    /// Most receipts (default 100, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Receipts, newest committed first.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct ReceiptList {
    /// Each in the receipt layout with its `receipt_id` and log `position`.
    #[schema(value_type = Vec<Object>)]
    pub receipts: Vec<Value>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_unknown_field_is_refused_naming_it_and_the_known_ones() {
        let e = parse_body::<RecallRequest>(br#"{"question": "why", "tag": "prod"}"#).unwrap_err();
        assert_eq!((e.code.as_str(), e.class), ("request.unknown_field", ErrorClass::BadRequest));
        assert!(
            e.message.starts_with("unknown field `tag` in recall request; expected one of "),
            "{}",
            e.message
        );
        assert!(e.message.contains("`tags`") && e.message.contains("`as_of`"), "{}", e.message);
        assert_eq!(e.violations[0].path, "$.tag");
        let e = parse_arguments::<RecallRequest>(&json!({"question": "why", "tag": "prod"}))
            .unwrap_err();
        assert_eq!(e.code, "request.unknown_field");
        assert!(e.message.starts_with("unknown field `tag` in recall request"), "{}", e.message);
        // Every request type refuses them, bodies, arguments and query parameters alike.
        let e = parse_body::<IngestRequest>(br#"{"events": [], "dry_run": true}"#).unwrap_err();
        assert!(e.message.starts_with("unknown field `dry_run` in ingest request"), "{e}");
        let e = parse_arguments::<RollupRequest>(&json!({"week": 3})).unwrap_err();
        assert_eq!(e.code, "request.unknown_field");
        // Aliases are known fields; a missing field is still a shape error.
        let ok: RecallRequest = parse_body(br#"{"query": "why", "session_id": "s1"}"#).unwrap();
        assert_eq!(ok.session.as_deref(), Some("s1"));
        let e = parse_body::<RecallRequest>(br#"{"k": 3}"#).unwrap_err();
        assert_eq!(e.code, "request.invalid_body");
    }

    #[test]
    fn the_field_name_is_read_from_serde_messages() {
        assert_eq!(
            unknown_field_in("unknown field `tag`, expected one of `a`, `b` at line 1 column 6"),
            Some("tag")
        );
        assert_eq!(unknown_field_in("unknown field `a`b`, there are no fields"), Some("a`b"));
        assert_eq!(
            unknown_field_in(
                "Failed to deserialize query string: x: unknown field `x`, expected `y`"
            ),
            Some("x")
        );
        assert_eq!(unknown_field_in("missing field `question`"), None);
        // A value that reads like the message is not a field.
        let e = parse_body::<RecallRequest>(
            br#"{"question": "x", "k": "unknown field `k`, expected"}"#,
        )
        .unwrap_err();
        assert_eq!(e.code, "request.invalid_body", "{}", e.message);
    }

    #[test]
    fn a_recall_request_becomes_the_engine_query_with_every_constraint() {
        let req: RecallRequest = parse_body(
            br#"{"question": "why did it fail", "k": 5, "intent": "who", "since": "2026-11-16T00:00:00Z",
                "until": "2026-11-17T00:00:00+01:00", "session": "s1", "trace": "t1", "agent": "a1",
                "tags": ["prod"], "location": "lab", "labels": ["Event"], "min_confidence": 0.5,
                "budget_tokens": 300, "diversity": 0.7, "as_of": "2026-11-18T00:00:00Z"}"#,
        )
        .unwrap();
        let q = req.to_query().unwrap();
        assert_eq!((q.text.as_str(), q.k, q.intent), ("why did it fail", 5, Some(Intent::WhoWhat)));
        assert_eq!(q.since.map(|t| t.to_rfc3339()).as_deref(), Some("2026-11-16T00:00:00+00:00"));
        assert_eq!(q.until.map(|t| t.to_rfc3339()).as_deref(), Some("2026-11-17T00:00:00+01:00"));
        assert_eq!(q.as_of.map(|t| t.to_rfc3339()).as_deref(), Some("2026-11-18T00:00:00+00:00"));
        assert_eq!(
            (q.session.as_deref(), q.trace.as_deref(), q.agent.as_deref()),
            (Some("s1"), Some("t1"), Some("a1"))
        );
        assert_eq!((q.tags, q.location.as_deref()), (vec!["prod".to_owned()], Some("lab")));
        assert_eq!(q.labels, Some(vec!["Event".to_owned()]));
        assert_eq!((q.min_confidence, q.budget_tokens, q.diversity), (0.5, Some(300), Some(0.7)));
        // Absent fields are the engine's defaults.
        let q =
            RecallRequest { question: "x".into(), ..RecallRequest::default() }.to_query().unwrap();
        assert_eq!((q.k, q.labels, q.min_confidence), (10, None, 0.0));
    }

    #[test]
    fn bad_recall_values_name_the_field_the_rule_and_the_value() {
        let bad = |req: Value| {
            serde_json::from_value::<RecallRequest>(req).unwrap().to_query().unwrap_err()
        };
        let cases = [
            (json!({"question": " "}), "request.empty_question", "question is empty"),
            (json!({"question": "x", "k": 0}), "request.k_range", "k 0 is out of range"),
            (json!({"question": "x", "k": 101}), "request.k_range", "k 101 is out of range"),
            (json!({"question": "x", "intent": "because"}), "request.intent", "intent `because`"),
            (json!({"question": "x", "since": "monday"}), "request.time_format", "since `monday`"),
            (json!({"question": "x", "as_of": "2026"}), "request.time_format", "as_of `2026`"),
            (
                json!({"question": "x", "min_confidence": 1.5}),
                "request.confidence_range",
                "min_confidence 1.5",
            ),
            (json!({"question": "x", "diversity": -1}), "request.diversity_range", "diversity -1"),
        ];
        for (req, code, message) in cases {
            let e = bad(req.clone());
            assert_eq!(e.code, code, "{req}");
            assert!(e.message.starts_with(message), "{req}: {}", e.message);
        }
        // The CLI names its flags.
        let req = RecallRequest {
            question: "x".into(),
            budget_tokens: Some(1),
            min_confidence: Some(2.0),
            ..RecallRequest::default()
        };
        let e = req.to_query_named(|f| format!("--{}", f.replace('_', "-"))).unwrap_err();
        assert!(e.message.starts_with("--min-confidence 2 is outside"), "{}", e.message);
    }
}
