//! The graph as a principal sees it: nodes, edges, views, causal walks and nearest
//! neighbours with what it may not see taken out at the source. An edge is shown only when
//! both ends are; a walk does not continue through a hidden node; a page is refilled, so a
//! listing never comes back short because something in it was hidden.

use ctxgraph_ann::SearchParams;
use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey};

use super::{Reader, View};
use crate::error::Error;

/// Rows read per page while refilling a filtered listing.
const PAGE: usize = 256;

impl Reader<'_> {
    /// Every visible node with this id, whatever its type (ids are unique per type only).
    pub fn find(&self, id: &str) -> Result<Vec<Node>, Error> {
        let mut out = Vec::new();
        for n in self.snap.find(id)? {
            if let Some(n) = self.shown(n)? {
                out.push(n);
            }
        }
        Ok(out)
    }

    /// Edges touching a visible node, optionally of one type, whose other end is visible too;
    /// nothing for a hidden node.
    pub fn edges(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, Error> {
        let edges = self.snap.edges(key, edge_type, direction)?;
        if self.who.is_owner() {
            return Ok(edges);
        }
        if self.node(key)?.is_none() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for e in edges {
            let other = if &e.key.from == key { &e.key.to } else { &e.key.from };
            if self.node(other)?.is_some() {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// Visible nodes of a type in id order, after `after`, at most `limit`.
    pub fn nodes(
        &self,
        label: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>, Error> {
        if self.who.is_owner() {
            return self.snap.nodes(label, after, limit);
        }
        refill(
            limit,
            after.map(str::to_owned),
            |c| self.snap.nodes(label, c.map(String::as_str), PAGE),
            |n| n.key.id.clone(),
            |n| self.shown(n),
        )
    }

    /// Visible events in id order, after `after`, at most `limit`.
    pub fn events(&self, after: Option<&str>, limit: usize) -> Result<Vec<Node>, Error> {
        self.nodes("Event", after, limit)
    }

    /// Edges of one type whose ends are both visible, in key order, after `after`, at most
    /// `limit`.
    pub fn edges_of_type(
        &self,
        edge_type: &str,
        after: Option<&EdgeKey>,
        limit: usize,
    ) -> Result<Vec<Edge>, Error> {
        if self.who.is_owner() {
            return self.snap.edges_of_type(edge_type, after, limit);
        }
        refill(
            limit,
            after.cloned(),
            |c| self.snap.edges_of_type(edge_type, c, PAGE),
            |e| e.key.clone(),
            |e| {
                let both = self.node(&e.key.from)?.is_some() && self.node(&e.key.to)?.is_some();
                Ok(both.then_some(e))
            },
        )
    }

    /// The edges of a view (see [`View`]) the principal may see, as [`Reader::edges_of_type`].
    pub fn view(
        &self,
        view: View,
        after: Option<&EdgeKey>,
        limit: usize,
    ) -> Result<Vec<Edge>, Error> {
        self.edges_of_type(view.edge_type(), after, limit)
    }

    /// Everything a visible event caused, breadth first with depth, at most `limit` events;
    /// the walk does not continue through a hidden event.
    pub fn effects(&self, event_id: &str, limit: usize) -> Result<Vec<(usize, Node)>, Error> {
        if self.event(event_id)?.is_none() {
            return Ok(Vec::new());
        }
        self.snap.effects_where(event_id, limit, &mut |n| self.may_see(n))
    }

    /// A visible node's embedding, once enriched.
    pub fn vector(&self, key: &NodeKey) -> Result<Option<Vec<f32>>, Error> {
        if self.node(key)?.is_none() {
            return Ok(None);
        }
        self.snap.vector(key)
    }

    /// The `k` visible nodes whose embeddings are nearest `query`, best first (see the
    /// vector index); `query` must have the store's embedding dimension.
    pub fn nearest(
        &self,
        query: &[f32],
        k: usize,
        options: SearchParams,
    ) -> Result<Vec<(Node, f32)>, Error> {
        let mut want = k;
        loop {
            let hits = self.snap.nearest(query, want, options)?;
            let exhausted = hits.len() < want;
            let mut out = Vec::new();
            for (n, score) in hits {
                if let Some(n) = self.shown(n)? {
                    out.push((n, score));
                    if out.len() == k {
                        return Ok(out);
                    }
                }
            }
            if exhausted || want >= k.saturating_mul(64) {
                return Ok(out);
            }
            want = want.saturating_mul(4);
        }
    }
}

/// Up to `limit` items of a listing read a page at a time after `cursor`, each as `keep` shows
/// it (or drops it), so a page is never short because something in it was hidden.
fn refill<T, C>(
    limit: usize,
    mut cursor: Option<C>,
    mut page: impl FnMut(Option<&C>) -> Result<Vec<T>, Error>,
    key: impl Fn(&T) -> C,
    mut keep: impl FnMut(T) -> Result<Option<T>, Error>,
) -> Result<Vec<T>, Error> {
    let mut out = Vec::new();
    while out.len() < limit {
        let items = page(cursor.as_ref())?;
        let Some(last) = items.last() else { break };
        cursor = Some(key(last));
        for item in items {
            if let Some(item) = keep(item)? {
                out.push(item);
                if out.len() == limit {
                    break;
                }
            }
        }
    }
    Ok(out)
}
