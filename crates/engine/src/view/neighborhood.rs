//! A node's neighbourhood as a principal sees it, one edge type and direction at a time and a
//! page at a time, so that a hub (an entity referenced by a hundred thousand events) costs a
//! page, not its degree: the edge groups a node has, each counted up to a cap, and a page of
//! one group's edges with the node at their other end. An edge whose other end is hidden is
//! not returned, not counted and does not shorten a page.

use ctxgraph_ontology::graph::{Edge, Node, NodeKey};

use super::Reader;
use crate::error::Error;
use crate::recall::Provenance;

/// One group of a node's edges: a type and a direction, with how many of them the principal
/// may see, counted up to a cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeGroup {
    /// The edge type, e.g. `CAUSED_BY`.
    pub edge_type: String,
    /// Whether the edges leave the node (`true`) or arrive at it.
    pub out: bool,
    /// Visible edges of the group, at most the cap.
    pub count: usize,
    /// Whether there are more than `count`.
    pub more: bool,
}

/// One edge of a neighbourhood page with the node at its other end.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbor {
    /// The edge.
    pub edge: Edge,
    /// The node at its other end, as the principal may see it.
    pub node: Node,
}

impl Reader<'_> {
    /// Where a visible node came from (log position, acknowledgement time, author, source), as
    /// recall's items give it; `None` for a hidden or absent node.
    pub fn provenance(&self, key: &NodeKey) -> Result<Option<Provenance>, Error> {
        match self.node(key)? {
            Some(node) => Ok(Some(self.snap.provenance(&node)?.0)),
            None => Ok(None),
        }
    }

    /// The edge types and directions a visible node has edges of (only the types the schema
    /// allows at its label on that side), each with its visible edges counted up to `cap`;
    /// nothing for a hidden or absent node.
    pub fn edge_groups(&self, key: &NodeKey, cap: usize) -> Result<Vec<EdgeGroup>, Error> {
        if self.node(key)?.is_none() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (name, def) in self.snap.schema.edge_types() {
            for leaving in [true, false] {
                let fits = def
                    .endpoints
                    .iter()
                    .any(|(from, to)| if leaving { from == &key.label } else { to == &key.label });
                if !fits {
                    continue;
                }
                let seen = self.neighbors(key, name, leaving, 0, cap.saturating_add(1))?;
                if seen.is_empty() {
                    continue;
                }
                out.push(EdgeGroup {
                    edge_type: name.clone(),
                    out: leaving,
                    count: seen.len().min(cap),
                    more: seen.len() > cap,
                });
            }
        }
        Ok(out)
    }

    /// A page of a visible node's edges of `edge_type` leaving it (`out`) or arriving at it,
    /// in the store's index order, whose other end the principal may see: the visible ones
    /// after the first `offset`, at most `limit`, each with its other end. Nothing for a hidden
    /// or absent node. The store's read stops at what the page needs, however many edges the
    /// node has.
    pub fn neighbors(
        &self,
        key: &NodeKey,
        edge_type: &str,
        out: bool,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Neighbor>, Error> {
        if limit == 0 || self.node(key)?.is_none() {
            return Ok(Vec::new());
        }
        let want = offset.saturating_add(limit);
        // Read more rows each round until `want` visible edges are found or the node has no
        // more: the store reads from the start each time, so rounds grow geometrically.
        let mut read = want;
        loop {
            let edges = self.snap.read.edges_limited(key, edge_type, out, read)?;
            let exhausted = edges.len() < read;
            let mut found = Vec::new();
            for edge in edges {
                let other = if out { &edge.key.to } else { &edge.key.from };
                if let Some(node) = self.node(other)? {
                    found.push(Neighbor { edge, node });
                    if found.len() == want {
                        break;
                    }
                }
            }
            if exhausted || found.len() == want {
                return Ok(found.into_iter().skip(offset).collect());
            }
            read = read.saturating_mul(2);
        }
    }
}
