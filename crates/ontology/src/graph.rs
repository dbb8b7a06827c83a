//! The property-graph data model: nodes and edges with typed keys and JSON-valued properties.

use std::collections::BTreeMap;
use std::fmt;

/// Property values are JSON values; the schema says which shapes each property may take.
pub type Properties = BTreeMap<String, serde_json::Value>;

/// The identity of a node: its type (label) and its key value.
///
/// Keys are scoped by label, so an Event and an Entity may share an id string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeKey {
    /// Node type, e.g. `Event`.
    pub label: String,
    /// Value of the node type's key property, e.g. the `event_id`.
    pub id: String,
}

impl NodeKey {
    /// A key for `label` and `id`.
    pub fn new(label: impl Into<String>, id: impl Into<String>) -> Self {
        NodeKey { label: label.into(), id: id.into() }
    }
}

impl fmt::Display for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.label, self.id)
    }
}

/// A node: key plus properties (the key property is included in `props`).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Identity.
    pub key: NodeKey,
    /// Properties, including the key property.
    pub props: Properties,
}

/// The identity of an edge: type, endpoints and a qualifier.
///
/// The qualifier holds the values of the edge type's identity properties (for example the REFERENCES
/// `role`), so an event can reference one entity in two roles with two distinct edges.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EdgeKey {
    /// Edge type, e.g. `CAUSED_BY`.
    pub edge_type: String,
    /// Source node.
    pub from: NodeKey,
    /// Target node.
    pub to: NodeKey,
    /// Identity-property values joined with `,`; empty when the type has none.
    pub qualifier: String,
}

impl fmt::Display for EdgeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.qualifier.is_empty() {
            write!(f, "{} -{}-> {}", self.from, self.edge_type, self.to)
        } else {
            write!(f, "{} -{}({})-> {}", self.from, self.edge_type, self.qualifier, self.to)
        }
    }
}

/// An edge: key plus properties.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// Identity.
    pub key: EdgeKey,
    /// Properties (identity properties included).
    pub props: Properties,
}

/// Which edges of a node to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Edges whose source is the node.
    Out,
    /// Edges whose target is the node.
    In,
    /// Both.
    Both,
}

impl Direction {
    /// Whether edges on the `outgoing` side of a node (the node their source) are followed.
    pub fn includes(self, outgoing: bool) -> bool {
        match self {
            Direction::Out => outgoing,
            Direction::In => !outgoing,
            Direction::Both => true,
        }
    }
}
