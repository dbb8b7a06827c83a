//! Wire shapes of the explorer's reads: a node with its provenance and edge groups
//! (`GET /v1/nodes/{id}`), a page of its neighbours (`GET /v1/nodes/{id}/neighbors`), who a key
//! reads as (`GET /v1/whoami`), and the store's own figures and retention tiers for its owner
//! (`GET /v1/stats/store`, `GET /v1/stats/retention`).

use ctxgraph::{EdgeGroup, Neighbor, Provenance, Stats, TierCounts};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{EdgeDto, NodeDto, ProvenanceDto};

/// Which nodes of an id to show (`GET /v1/nodes/{id}`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct NodeQuery {
    /// Only the node of this type (ids are unique per type only); every type when absent.
    pub label: Option<String>,
}

/// A page of one group of a node's edges (`GET /v1/nodes/{id}/neighbors`).
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct NeighborsQuery {
    /// The node's type, e.g. `Event`, `Entity`.
    pub label: String,
    /// The edge type, e.g. `CAUSED_BY`.
    pub edge_type: String,
    /// `out` (edges leaving the node) or `in` (edges arriving at it).
    pub direction: String,
    /// Most neighbours on this page (default 50, at most 200).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page; absent for the first page.
    pub cursor: Option<String>,
}

/// One group of a node's edges: a type and a direction, counted up to a cap.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct EdgeGroupDto {
    /// Edge type.
    #[serde(rename = "type")]
    pub edge_type: String,
    /// `out` or `in`.
    pub direction: String,
    /// Visible edges of the group, at most the cap.
    pub count: usize,
    /// Whether there are more than `count`.
    pub more: bool,
}

impl From<&EdgeGroup> for EdgeGroupDto {
    fn from(g: &EdgeGroup) -> Self {
        EdgeGroupDto {
            edge_type: g.edge_type.clone(),
            direction: direction_name(g.out).to_owned(),
            count: g.count,
            more: g.more,
        }
    }
}

/// `out` or `in`.
pub fn direction_name(out: bool) -> &'static str {
    if out { "out" } else { "in" }
}

/// A node with where it came from and the groups of its edges.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct NodeDetailDto {
    /// The node.
    pub node: NodeDto,
    /// Where it came from.
    pub provenance: ProvenanceDto,
    /// Its edges by type and direction, each counted up to a cap.
    pub edges: Vec<EdgeGroupDto>,
}

impl From<&Provenance> for ProvenanceDto {
    fn from(p: &Provenance) -> Self {
        ProvenanceDto {
            log_position: p.log_position,
            recorded_at: p.recorded_at.clone(),
            created_by: p.created_by.clone(),
            source: p.source.clone(),
        }
    }
}

/// The visible nodes of an id.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct NodeList {
    /// One per type that has a visible node of the id.
    pub nodes: Vec<NodeDetailDto>,
}

/// One neighbour: the edge and the node at its other end.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct NeighborDto {
    /// The edge.
    pub edge: EdgeDto,
    /// The node at its other end.
    pub node: NodeDto,
}

impl From<&Neighbor> for NeighborDto {
    fn from(n: &Neighbor) -> Self {
        NeighborDto { edge: (&n.edge).into(), node: (&n.node).into() }
    }
}

/// A page of a node's neighbours over one edge type and direction.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct NeighborPage {
    /// Neighbours on this page, in the store's order.
    pub neighbors: Vec<NeighborDto>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A count by name (a node label or an edge type).
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct CountDto {
    /// The label or type.
    pub name: String,
    /// How many.
    pub count: u64,
}

/// The store's own figures, for its owner only (they read past the access policy).
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct StoreStatsDto {
    /// Records in the log.
    pub log_length: u64,
    /// Records appended but not yet projected into the graph.
    pub projection_lag: u64,
    /// Records projected but not yet enriched.
    pub enrichment_lag: u64,
    /// Nodes per type.
    pub nodes: Vec<CountDto>,
    /// Edges per type.
    pub edges: Vec<CountDto>,
    /// Edges waiting for an endpoint not in the log yet.
    pub pending_edges: u64,
    /// Stored embeddings.
    pub vectors: u64,
    /// Embeddings not in the vector index yet.
    pub unindexed_vectors: u64,
    /// Full-text documents.
    pub text_documents: u64,
    /// Full-text documents not in the lexical index yet.
    pub text_documents_outside_lexical_index: u64,
    /// Bytes on disk (database and write-ahead log).
    pub bytes_on_disk: u64,
    /// On-disk format version.
    pub format_version: u32,
}

impl StoreStatsDto {
    /// The figures of `s`.
    pub fn new(s: &Stats) -> Self {
        let counts = |v: &[(String, u64)]| {
            v.iter().map(|(name, count)| CountDto { name: name.clone(), count: *count }).collect()
        };
        StoreStatsDto {
            log_length: s.log_length,
            projection_lag: s.projection_lag(),
            enrichment_lag: s.enrichment_lag(),
            nodes: counts(&s.nodes),
            edges: counts(&s.edges),
            pending_edges: s.pending_edges,
            vectors: s.vectors.0,
            unindexed_vectors: s.vectors.1,
            text_documents: s.text_docs.0,
            text_documents_outside_lexical_index: s.text_docs.1,
            bytes_on_disk: s.bytes_on_disk,
            format_version: s.format_version,
        }
    }
}

/// Events per retention tier now, under the default tiers (hot under a day, warm under a week,
/// cold under 30 days, older due for the archive), for the store's owner only.
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct RetentionDto {
    /// The time ages are measured at (the newest event's), if the graph has events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Events younger than a day.
    pub hot: u64,
    /// Events younger than a week.
    pub warm: u64,
    /// Events younger than 30 days.
    pub cold: u64,
    /// Older events, due to leave the graph at the next retention pass.
    pub archive: u64,
    /// Events earlier passes took out of the graph (kept in the log).
    pub archived: u64,
}

impl From<&TierCounts> for RetentionDto {
    fn from(t: &TierCounts) -> Self {
        let [hot, warm, cold, archive] = t.tiers;
        RetentionDto { as_of: t.as_of.clone(), hot, warm, cold, archive, archived: t.archived }
    }
}

/// Who a key reads as (never the key).
#[derive(Debug, Clone, Serialize, JsonSchema, ToSchema)]
pub struct WhoAmI {
    /// The principal's name.
    pub name: String,
    /// Its tenant.
    pub tenant: String,
    /// Its roles, sorted.
    pub roles: Vec<String>,
    /// Whether it is the store's owner (`ctxgraph ui` without `--as`): it alone may read the
    /// store's own figures and retention tiers.
    pub owner: bool,
}
