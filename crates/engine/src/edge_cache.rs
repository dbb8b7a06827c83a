//! The edges recall's expansion follows, kept between recalls.
//!
//! Expansion reads the heaviest edges of every node it expands under weights that change with
//! the question. Reading them from the store costs a lookup of the node, a pass over its edge
//! types, a join per direction or type and the decoding of every edge's properties; recalls
//! of one store expand the same busy nodes again and again. So the first read of a node keeps
//! all its edge groups (one type, one direction) with their first edges, reduced to what
//! expansion uses (the far endpoint, the qualifier, the confidence), and any weighting then
//! picks its heaviest edges from them ([`ctxgraph_store::heaviest_order`], the store's own
//! order). Entries are tagged with the graph generation, which every committed write changes,
//! so a write anywhere empties the cache on the next read that sees it. Memory is bounded by
//! [`MAX_EDGES`]: past it the cache starts over.
//!
//! Access policy is not the cache's business: expansion admits every endpoint it reaches as
//! it did with edges read from the store.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use ctxgraph_ontology::graph::{Edge, NodeKey};
use ctxgraph_store::{EdgeGroup, GraphReader};
use serde_json::Value;

use crate::error::Error;

/// Edges kept at most (summed over nodes), about 150 bytes each.
const MAX_EDGES: usize = 100_000;

/// One edge as expansion sees it from a node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Near {
    /// The other endpoint.
    pub(crate) far: NodeKey,
    /// The edge's qualifier.
    pub(crate) qualifier: String,
    /// The edge's confidence ([`edge_confidence`]).
    pub(crate) confidence: f64,
}

/// A node's edge groups, each with its first `limit` edges.
#[derive(Debug)]
pub(crate) struct Adjacent {
    limit: usize,
    groups: Vec<EdgeGroup<Near>>,
    /// Every outgoing edge whole (properties included), when every outgoing group was read
    /// whole: recall's stitching, which needs its items' out-edges, then reads none.
    out: Option<Vec<Edge>>,
}

impl Adjacent {
    fn read(read: &dyn GraphReader, key: &NodeKey, limit: usize) -> Result<Adjacent, Error> {
        Ok(Adjacent::of(read.edge_groups(key, limit)?, limit))
    }

    /// A node's groups as read with `limit`, reduced to what expansion uses.
    fn of(groups: Vec<EdgeGroup>, limit: usize) -> Adjacent {
        let whole = groups.iter().filter(|g| g.out).all(|g| g.edges.len() >= g.degree);
        let out = whole.then(|| {
            let mut out: Vec<Edge> =
                groups.iter().filter(|g| g.out).flat_map(|g| g.edges.iter().cloned()).collect();
            // `GraphReader::edges_of`'s order, the keys' (by type, far endpoint, then
            // qualifier: every key here has this node as its source).
            out.sort_by(|a, b| a.key.cmp(&b.key));
            out
        });
        let groups = groups
            .into_iter()
            .map(|g| {
                let out = g.out;
                let edges = g.edges.iter().map(|e| near(e, out)).collect();
                EdgeGroup { out, edge_type: g.edge_type, degree: g.degree, edges }
            })
            .collect();
        Adjacent { limit, groups, out }
    }

    /// Every outgoing edge of the node, as `GraphReader::edges_of` with no edge type lists
    /// them; `None` when the node has more than were read.
    pub(crate) fn out_edges(&self) -> Option<&[Edge]> {
        self.out.as_deref()
    }

    /// Every edge of one type in one direction, in the order `GraphReader::edges_of` lists
    /// them (by the far endpoint's key, then qualifier); `None` when the node has more than
    /// were read.
    pub(crate) fn all_of(&self, edge_type: &str, out: bool) -> Option<Vec<&Near>> {
        let mut edges: Vec<&Near> = Vec::new();
        for g in self.groups.iter().filter(|g| g.out == out && g.edge_type == edge_type) {
            if g.edges.len() < g.degree {
                return None;
            }
            edges.extend(&g.edges);
        }
        edges.sort_by(|a, b| (&a.far, &a.qualifier).cmp(&(&b.far, &b.qualifier)));
        Some(edges)
    }

    fn edges(&self) -> usize {
        self.groups.iter().map(|g| g.edges.len()).sum::<usize>()
            + self.out.as_ref().map_or(0, Vec::len)
    }

    /// The `limit` heaviest edges under `weight(edge type, outgoing)` (at most the limit the
    /// node was read with), as `(weight, edge type, outgoing, edge)`: what
    /// `GraphReader::heaviest_edges` returns for the same weights and limit.
    pub(crate) fn heaviest(
        &self,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
    ) -> Vec<(f64, &str, bool, &Near)> {
        let limit = limit.min(self.limit);
        let mut found = Vec::with_capacity(limit);
        for (w, i) in ctxgraph_store::heaviest_order(&self.groups, weight) {
            let group = &self.groups[i];
            for edge in &group.edges {
                if found.len() >= limit {
                    return found;
                }
                found.push((w, group.edge_type.as_str(), group.out, edge));
            }
        }
        found
    }
}

/// The far endpoint, qualifier and confidence of `edge` seen from its `out` side.
fn near(edge: &Edge, out: bool) -> Near {
    let far = if out { &edge.key.to } else { &edge.key.from };
    Near {
        far: far.clone(),
        qualifier: edge.key.qualifier.clone(),
        confidence: edge_confidence(edge),
    }
}

/// An edge's confidence: its `confidence`, else its `score` (SIMILAR_TO), else 1.
pub(crate) fn edge_confidence(edge: &Edge) -> f64 {
    ["confidence", "score"]
        .iter()
        .find_map(|p| edge.props.get(*p).and_then(Value::as_f64))
        .unwrap_or(1.0)
}

/// Nodes' edge groups read so far, tagged with the graph generation they were read at.
#[derive(Default)]
pub(crate) struct EdgeCache(Mutex<Cached>);

#[derive(Default)]
struct Cached {
    generation: u64,
    edges: usize,
    nodes: BTreeMap<NodeKey, Arc<Adjacent>>,
}

impl EdgeCache {
    /// Forget every node read so far.
    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Cached::default();
    }

    /// `key`'s edge groups if the cache holds them with at least their first `limit` edges
    /// each at `generation` (the reader's graph generation); never reads the node's edges.
    pub(crate) fn cached(
        &self,
        generation: u64,
        key: &NodeKey,
        limit: usize,
    ) -> Option<Arc<Adjacent>> {
        let cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.generation != generation {
            return None;
        }
        cache.nodes.get(key).filter(|a| a.limit >= limit).cloned()
    }

    /// `key`'s edge groups with at least their first `limit` edges each, from the cache when
    /// it holds them at `generation` (the graph generation `read` sees), else read (outside
    /// the lock) and kept.
    pub(crate) fn adjacent(
        &self,
        read: &dyn GraphReader,
        generation: u64,
        key: &NodeKey,
        limit: usize,
    ) -> Result<Arc<Adjacent>, Error> {
        {
            let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            cache.at(generation);
            if let Some(hit) = cache.nodes.get(key).filter(|a| a.limit >= limit) {
                return Ok(Arc::clone(hit));
            }
        }
        let adjacent = Arc::new(Adjacent::read(read, key, limit)?);
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        cache.keep(generation, key, &adjacent);
        Ok(adjacent)
    }

    /// Read the edge groups of those of `keys` the cache does not hold at `generation` with
    /// at least `limit` edges each, in one read ([`GraphReader::edge_groups_many`]), and keep
    /// them: for a caller that will probably expand them next, on a store whose every read is
    /// a round trip.
    pub(crate) fn fill(
        &self,
        read: &dyn GraphReader,
        generation: u64,
        keys: &[NodeKey],
        limit: usize,
    ) -> Result<(), Error> {
        let missing = self.missing(generation, keys, limit);
        if missing.is_empty() {
            return Ok(());
        }
        let groups = read.edge_groups_many(&missing, limit)?;
        self.keep_groups(generation, &missing, groups, limit);
        Ok(())
    }

    /// Those of `keys` whose edge groups the cache does not hold at `generation` with at least
    /// `limit` edges each, each once, in order: what [`EdgeCache::fill`] reads, for a caller
    /// that reads them with other reads and gives them to [`EdgeCache::keep_groups`].
    pub(crate) fn missing(&self, generation: u64, keys: &[NodeKey], limit: usize) -> Vec<NodeKey> {
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        cache.at(generation);
        let held = |key: &NodeKey| cache.nodes.get(key).is_some_and(|a| a.limit >= limit);
        let mut wanted = std::collections::BTreeSet::new();
        keys.iter().filter(|k| !held(k) && wanted.insert(*k)).cloned().collect()
    }

    /// Keep `groups`, the edge groups of `keys` read at `generation` with `limit`.
    pub(crate) fn keep_groups(
        &self,
        generation: u64,
        keys: &[NodeKey],
        groups: Vec<Vec<EdgeGroup>>,
        limit: usize,
    ) {
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (key, groups) in keys.iter().zip(groups) {
            cache.keep(generation, key, &Arc::new(Adjacent::of(groups, limit)));
        }
    }
}

impl Cached {
    /// Move the cache to `generation` (the graph generation of the reader that asks), emptied
    /// when it held another.
    fn at(&mut self, generation: u64) {
        if self.generation != generation {
            *self = Cached { generation, ..Cached::default() };
        }
    }

    /// Keep `adjacent` as `key`'s edge groups, read at `generation`; another snapshot may have
    /// moved the cache to another generation meanwhile: what was read is then not kept.
    fn keep(&mut self, generation: u64, key: &NodeKey, adjacent: &Arc<Adjacent>) {
        if self.generation != generation {
            return;
        }
        let edges = adjacent.edges();
        if self.edges + edges > MAX_EDGES {
            self.nodes.clear();
            self.edges = 0;
        }
        if let Some(old) = self.nodes.insert(key.clone(), Arc::clone(adjacent)) {
            self.edges -= old.edges();
        }
        self.edges += edges;
    }
}

#[cfg(test)]
mod tests {
    use ctxgraph_ontology::graph::{Direction, EdgeKey, Node, Properties};
    use ctxgraph_store::{Embedded, GraphStore, OpenMode};

    use super::*;

    fn edge(from: &NodeKey, edge_type: &str, to: &NodeKey, props: Properties) -> Edge {
        let key = EdgeKey {
            from: from.clone(),
            edge_type: edge_type.into(),
            to: to.clone(),
            qualifier: String::new(),
        };
        Edge { key, props }
    }

    #[test]
    fn cached_heaviest_edges_equal_the_stores_and_a_commit_drops_them() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut store =
            Embedded::open(&dir.path().join("t.ctxg"), OpenMode::CreateIfMissing).unwrap();
        let hub = NodeKey::new("Event", "hub");
        let others: Vec<NodeKey> =
            (0..12).map(|i| NodeKey::new("Event", format!("e{i}"))).collect();
        let mut w = store.begin_write().unwrap();
        for key in std::iter::once(&hub).chain(&others) {
            w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
        }
        for (i, other) in others.iter().enumerate() {
            let mut props = Properties::new();
            props.insert("score".into(), serde_json::json!(0.5 + i as f64 / 100.0));
            let edge_type = ["SIMILAR_TO", "FOLLOWS", "CAUSED_BY"][i % 3];
            if i % 2 == 0 {
                w.put_edge(&edge(&hub, edge_type, other, props)).unwrap();
            } else {
                w.put_edge(&edge(other, edge_type, &hub, props)).unwrap();
            }
        }
        w.commit().unwrap();
        let cache = EdgeCache::default();
        type Weight<'a> = &'a dyn Fn(&str, bool) -> f64;
        let weights: [Weight<'_>; 2] = [
            &|t, out| match (t, out) {
                ("SIMILAR_TO", _) => 0.5,
                ("FOLLOWS", false) => 0.9,
                _ => 0.0,
            },
            &|t, _| if t == "CAUSED_BY" { 1.0 } else { 0.2 },
        ];
        for limit in [1, 3, 16] {
            for weight in weights {
                let read = store.begin_read().unwrap();
                let want: Vec<(f64, String, bool, Near)> = read
                    .heaviest_edges(&hub, weight, limit)
                    .unwrap()
                    .into_iter()
                    .map(|(w, e, out)| (w, e.key.edge_type.clone(), out, near(&e, out)))
                    .collect();
                let adjacent =
                    cache.adjacent(&read, read.graph_generation().unwrap(), &hub, 16).unwrap();
                let got: Vec<(f64, String, bool, Near)> = adjacent
                    .heaviest(weight, limit)
                    .into_iter()
                    .map(|(w, t, out, n)| (w, t.to_owned(), out, n.clone()))
                    .collect();
                assert_eq!(got, want, "limit {limit}");
            }
        }
        // Whole groups in the order of `edges_of`; a group read in part is not whole.
        let read = store.begin_read().unwrap();
        for out in [true, false] {
            let direction = if out { Direction::Out } else { Direction::In };
            let want: Vec<Near> = read
                .edges_of(&hub, Some("FOLLOWS"), direction)
                .unwrap()
                .iter()
                .map(|e| near(e, out))
                .collect();
            let got = cache.adjacent(&read, read.graph_generation().unwrap(), &hub, 16).unwrap();
            assert_eq!(
                got.all_of("FOLLOWS", out).unwrap().into_iter().cloned().collect::<Vec<_>>(),
                want
            );
            let part = Adjacent::read(&read, &hub, 1).unwrap();
            assert!(part.all_of("FOLLOWS", out).is_none());
        }
        // Every outgoing edge, properties included, as `edges_of` lists them; none when a
        // group was read in part.
        let got = cache.adjacent(&read, read.graph_generation().unwrap(), &hub, 16).unwrap();
        let want = read.edges_of(&hub, None, Direction::Out).unwrap();
        assert_eq!(want.len(), 6);
        assert_eq!(got.out_edges(), Some(want.as_slice()));
        assert!(Adjacent::read(&read, &hub, 1).unwrap().out_edges().is_none());
        drop(read);
        // A committed write elsewhere: the next read sees another generation and reads again.
        let mut w = store.begin_write().unwrap();
        w.delete_edge(&edge(&hub, "SIMILAR_TO", &others[0], Properties::new()).key).unwrap();
        w.commit().unwrap();
        let read = store.begin_read().unwrap();
        assert!(
            cache.cached(read.graph_generation().unwrap(), &hub, 16).is_none(),
            "another generation"
        );
        let every = |_: &str, _: bool| 1.0;
        let adjacent = cache.adjacent(&read, read.graph_generation().unwrap(), &hub, 16).unwrap();
        assert_eq!(adjacent.heaviest(&every, 16).len(), others.len() - 1);
        assert!(cache.cached(read.graph_generation().unwrap(), &hub, 16).is_some());
        assert!(
            cache.cached(read.graph_generation().unwrap(), &hub, 17).is_none(),
            "read with fewer edges"
        );
    }
}
