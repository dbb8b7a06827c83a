//! The graph read by the engine ([`GraphReader`]) on FalkorDB: every answer the embedded store
//! gives for the same folded log, in the same order, each method one query (one round trip,
//! whose latency a recall pays for every read however small the query).
//!
//! The embedded store lists a node's edges in index order: by type, then by the far endpoint's
//! integer node id, then by qualifier. Here the node id is the node's creation number (`seq`,
//! see the module above), which the fold gives in the embedded store's order, so a query that
//! sorts by it returns the same list.
//!
//! Stage 2's vectors, full-text documents and lexical index are read in `stage2.rs`, stage 3's
//! vector index in `stage3.rs`. Retention does not run on this backend yet: there is no archive
//! mark, and those methods answer as the embedded store answers for a store without them.

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_store::{
    Archived, EdgeGroup, GraphCounts, GraphReader, ManyAnswer, ManyRead, ProjectionGraph,
    SessionSlot, StoreError, StoredVector, TextIndexBuild, heaviest_of, props_from,
};
use falkordb::FalkorValue;

use super::{FalkorGraph, TRACED, count, int, int_at, name, odd, raw_remote, s, text_at};

/// One item of a group as read: the far endpoint, the edge's qualifier and the properties
/// carried (JSON text, of the edge or of the far endpoint).
pub(super) type Item = (NodeKey, String, String);

/// What a group query returns of each far endpoint besides its key.
#[derive(Clone, Copy)]
enum Carry {
    /// The edge's properties.
    EdgeProps,
    /// The far endpoint's properties.
    NodeProps,
}

impl FalkorGraph {
    /// Every group of a node's edges (one type, one direction), outgoing first and by type,
    /// each with its first `limit` items in index order (the far endpoint's creation number,
    /// then qualifier) and its degree counted up to `limit + 1`: one query, both directions.
    fn groups(
        &self,
        key: &NodeKey,
        limit: usize,
        carry: Carry,
    ) -> Result<Vec<EdgeGroup<Item>>, StoreError> {
        let label = name(&key.label, "label")?;
        let props = match carry {
            Carry::EdgeProps => "p[1].props",
            Carry::NodeProps => "p[0].props",
        };
        let start = format!("MATCH (n:{label} {{id: $id}})");
        let side = |out: bool| group_side(&start, false, out, props);
        let rows = self.run_read(
            &format!("{} UNION ALL {}", side(true), side(false)),
            &[("id", s(&key.id)), ("limit", int(count(limit)))],
        )?;
        let mut groups =
            rows.iter().map(|r| self.group_at(r, 0, limit)).collect::<Result<Vec<_>, _>>()?;
        sort_groups(&mut groups);
        Ok(groups)
    }

    /// The group whose columns start at `at` in `row` (`out`, edge type, degree, items), as
    /// [`FalkorGraph::groups`] reads it.
    pub(super) fn group_at(
        &self,
        row: &[FalkorValue],
        at: usize,
        limit: usize,
    ) -> Result<EdgeGroup<Item>, StoreError> {
        let out = bool_at(row, at, &self.url)?;
        let edge_type = text_at(row, at + 1, &self.url)?;
        let degree = usize::try_from(int_at(row, at + 2, &self.url)?).unwrap_or(0);
        let Some(FalkorValue::Array(items)) = row.get(at + 3) else {
            return Err(odd(&self.url, "a list of a group's edges"));
        };
        let items = items
            .iter()
            .map(|item| {
                let FalkorValue::Array(cols) = item else {
                    return Err(odd(&self.url, "an edge of a group"));
                };
                let far = NodeKey {
                    label: text_at(cols, 0, &self.url)?,
                    id: text_at(cols, 1, &self.url)?,
                };
                Ok((far, text_at(cols, 2, &self.url)?, text_at(cols, 3, &self.url)?))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(EdgeGroup { out, edge_type, degree: degree.min(limit.saturating_add(1)), edges: items })
    }

    /// Refuse a graph folded by a build that gave nodes no creation numbers (a checkpoint with
    /// no counter beside it: every fold page since sets both): its reads would list a node's
    /// edges in another order than the embedded store's.
    pub(crate) fn check_layout(&self) -> Result<(), StoreError> {
        let (checkpoint, seq, layout): (Option<u64>, Option<i64>, Option<u64>) = redis::cmd("MGET")
            .arg(&self.checkpoint)
            .arg(&self.seq)
            .arg(self.layout_key())
            .query(&mut *self.raw.borrow_mut())
            .map_err(|e| raw_remote(&self.url, &e))?;
        self.note_layout(layout);
        self.layout(checkpoint, seq)
    }

    /// [`FalkorGraph::check_layout`] of a checkpoint and a creation counter already read.
    pub(crate) fn layout(
        &self,
        checkpoint: Option<u64>,
        seq: Option<i64>,
    ) -> Result<(), StoreError> {
        if checkpoint.is_some_and(|c| c > 0) && seq.is_none() {
            return Err(StoreError::Corruption(format!(
                "{}: graph `{}` was folded by an earlier ctxgraph that gave its nodes no \
                 creation numbers (key `{}` is missing), so its reads would not come in the \
                 embedded store's order; delete the graph and its checkpoint `{}`, then fold \
                 the log again with `ctxgraph worker --once` (rule: graph.layout)",
                self.url, self.name, self.seq, self.checkpoint
            )));
        }
        Ok(())
    }
}

/// An edge of a group read with [`Carry::EdgeProps`], as the edge of `key` it is.
pub(super) fn group_edge(
    key: &NodeKey,
    edge_type: &str,
    out: bool,
    (far, qualifier, props): Item,
) -> Result<Edge, StoreError> {
    let (from, to) = if out { (key.clone(), far) } else { (far, key.clone()) };
    Ok(Edge {
        key: EdgeKey { from, edge_type: edge_type.to_owned(), to, qualifier },
        props: props_from(&props)?,
    })
}

/// `props` cut down to the properties among `names`.
fn named(mut props: Properties, names: &[&str]) -> Properties {
    props.retain(|k, _| names.contains(&k.as_str()));
    props
}

pub(super) fn bool_at(
    row: &[FalkorValue],
    i: usize,
    url: &crate::url::StoreUrl,
) -> Result<bool, StoreError> {
    match row.get(i) {
        Some(FalkorValue::Bool(b)) => Ok(*b),
        _ => Err(odd(url, "a boolean where one was expected")),
    }
}

/// The graph as the engine reads it. Answers equal the embedded store's for the same folded
/// log, lists in the same order (the conformance suite compares them); the vector, full-text
/// and archive reads answer for a graph that has none of them (stages 2 and 3 do not run on
/// this backend yet).
impl GraphReader for FalkorGraph {
    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        ProjectionGraph::node(self, key)
    }

    fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        ProjectionGraph::node_exists(self, key)
    }

    fn node_props_named(
        &self,
        key: &NodeKey,
        names: &[&str],
    ) -> Result<Option<Properties>, StoreError> {
        Ok(ProjectionGraph::node(self, key)?.map(|n| named(n.props, names)))
    }

    fn existing_ids(&self, label: &str, ids: &[String]) -> Result<Vec<String>, StoreError> {
        FalkorGraph::existing_ids(self, label, ids)
    }

    fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError> {
        ProjectionGraph::edge(self, key)
    }

    fn edges_of(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, StoreError> {
        ProjectionGraph::edges_of(self, key, edge_type, direction)
    }

    fn nodes_by_label(
        &self,
        label: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>, StoreError> {
        FalkorGraph::nodes_by_label(self, label, after, limit)
    }

    fn edges_by_type(
        &self,
        edge_type: &str,
        after: Option<&EdgeKey>,
        limit: usize,
    ) -> Result<Vec<Edge>, StoreError> {
        let ty = name(edge_type, "edge type")?;
        let columns = "RETURN labels(a)[0], a.id, labels(b)[0], b.id, r.q, r.props \
                       ORDER BY a.seq, b.seq, r.q LIMIT $limit";
        // Pages in the embedded store's order: source, target (creation numbers), qualifier.
        let rows = match after {
            None => self.run_read(
                &format!("MATCH (a)-[r:{ty}]->(b) {columns}"),
                &[("limit", int(count(limit)))],
            )?,
            Some(k) => {
                let (from, to) = (name(&k.from.label, "label")?, name(&k.to.label, "label")?);
                // No rows when either end of `after` is gone, as the embedded store answers.
                self.run_read(
                    &format!(
                        "MATCH (x:{from} {{id: $from}}), (y:{to} {{id: $to}}) \
                         WITH x.seq AS fs, y.seq AS ts \
                         MATCH (a)-[r:{ty}]->(b) \
                         WHERE a.seq > fs OR (a.seq = fs AND (b.seq > ts OR (b.seq = ts AND r.q > $q))) \
                         {columns}"
                    ),
                    &[
                        ("from", s(&k.from.id)),
                        ("to", s(&k.to.id)),
                        ("q", s(&k.qualifier)),
                        ("limit", int(count(limit))),
                    ],
                )?
            }
        };
        rows.iter()
            .map(|r| {
                let t = |i: usize| text_at(r, i, &self.url);
                Ok(Edge {
                    key: EdgeKey {
                        from: NodeKey { label: t(0)?, id: t(1)? },
                        edge_type: edge_type.to_owned(),
                        to: NodeKey { label: t(2)?, id: t(3)? },
                        qualifier: t(4)?,
                    },
                    props: props_from(&t(5)?)?,
                })
            })
            .collect()
    }

    fn sessions(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>, StoreError> {
        FalkorGraph::sessions(self, after, limit)
    }

    fn session_events(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<SessionSlot>, StoreError> {
        ProjectionGraph::session_events(self, session_id, limit)
    }

    fn edges_limited(
        &self,
        key: &NodeKey,
        edge_type: &str,
        out: bool,
        limit: usize,
    ) -> Result<Vec<Edge>, StoreError> {
        let (label, ty) = (name(&key.label, "label")?, name(edge_type, "edge type")?);
        let pattern = if out { format!("-[r:{ty}]->") } else { format!("<-[r:{ty}]-") };
        let rows = self.run_read(
            &format!(
                "MATCH (n:{label} {{id: $id}}){pattern}(m) \
                 RETURN labels(m)[0], m.id, r.q, r.props ORDER BY m.seq, r.q LIMIT $limit"
            ),
            &[("id", s(&key.id)), ("limit", int(count(limit)))],
        )?;
        rows.iter()
            .map(|r| {
                let t = |i: usize| text_at(r, i, &self.url);
                group_edge(key, edge_type, out, (NodeKey { label: t(0)?, id: t(1)? }, t(2)?, t(3)?))
            })
            .collect()
    }

    fn trace_events(&self, trace_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let label = name(TRACED, "label")?;
        let rows = self.run_read(
            &format!("MATCH (n:{label} {{trace: $trace}}) RETURN n.id ORDER BY n.seq LIMIT $limit"),
            &[("trace", s(trace_id)), ("limit", int(count(limit)))],
        )?;
        rows.iter().map(|r| text_at(r, 0, &self.url)).collect()
    }

    fn session_tail(&self, session_id: &str) -> Result<Option<SessionSlot>, StoreError> {
        ProjectionGraph::session_tail(self, session_id)
    }

    fn session_neighbors(
        &self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError> {
        ProjectionGraph::session_neighbors(self, session_id, slot)
    }

    fn pending_for(&self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        ProjectionGraph::pending_for(self, key)
    }

    fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, StoreError> {
        ProjectionGraph::pending_edges(self)
    }

    fn counts(&self) -> Result<GraphCounts, StoreError> {
        FalkorGraph::counts(self)
    }

    fn projected_through(&self) -> Result<u64, StoreError> {
        FalkorGraph::projected_through(self)
    }

    fn enriched_through(&self) -> Result<u64, StoreError> {
        self.counter(&self.enriched)
    }

    fn embedding_model(&self) -> Result<Option<(String, usize)>, StoreError> {
        self.stage2_embedding_model()
    }

    fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.setting_value(key)
    }

    fn vector(&self, key: &NodeKey) -> Result<Option<Vec<f32>>, StoreError> {
        self.stage2_vector(key)
    }

    fn vector_list(&self, key: &NodeKey) -> Result<Option<(i64, Option<u32>)>, StoreError> {
        self.stage3_vector_list(key)
    }

    fn heaviest_edges(
        &self,
        key: &NodeKey,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
    ) -> Result<Vec<(f64, Edge, bool)>, StoreError> {
        let groups = self.groups(key, limit, Carry::EdgeProps)?;
        heaviest_of(groups_by_type(groups), weight, limit)
            .into_iter()
            .map(|(w, (edge_type, item), out)| {
                Ok((w, group_edge(key, &edge_type, out, item)?, out))
            })
            .collect()
    }

    fn edge_groups(&self, key: &NodeKey, limit: usize) -> Result<Vec<EdgeGroup>, StoreError> {
        Ok(self.edge_groups_of(std::slice::from_ref(key), limit)?.pop().unwrap_or_default())
    }

    fn graph_generation(&self) -> Result<u64, StoreError> {
        self.generation_seen()
    }

    /// The graph generation: every commit that writes a node moves it, stage 2's included
    /// (`stage2.rs`), in the same transaction as its writes.
    fn node_generation(&self) -> Result<Option<u64>, StoreError> {
        self.generation_seen().map(Some)
    }

    fn heaviest_neighbours(
        &self,
        key: &NodeKey,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
        names: &[&str],
    ) -> Result<Vec<(NodeKey, Properties)>, StoreError> {
        let groups = self.groups(key, limit, Carry::NodeProps)?;
        heaviest_of(groups, weight, limit)
            .into_iter()
            .map(|(_, (far, _, props), _)| Ok((far, named(props_from(&props)?, names))))
            .collect()
    }

    fn text_terms(&self, text: &str) -> Result<Vec<String>, StoreError> {
        self.stage2_text_terms(text)
    }

    fn search_text(
        &self,
        words: &[String],
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, f64)>, StoreError> {
        self.stage2_search_text(words, after, limit)
    }

    fn text_docs_after(&self, after: i64) -> Result<(u64, Option<i64>), StoreError> {
        self.stage2_text_docs_after(after)
    }

    fn scan_text_index(&self, visit: &mut dyn FnMut(&str, i64) -> bool) -> Result<(), StoreError> {
        self.stage2_scan_text_index(visit)
    }

    fn text_generation(&self) -> Result<u64, StoreError> {
        self.stage2_counter("text_generation")
    }

    fn enrichment_epoch(&self) -> Result<u64, StoreError> {
        self.stage2_counter(super::stage2::EPOCH)
    }

    fn text_index_build(&self) -> Result<Option<TextIndexBuild>, StoreError> {
        self.stage2_text_index_build()
    }

    fn text_postings(&self, term: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.stage2_text_postings(term)
    }

    fn node_keys(&self, nids: &[i64]) -> Result<Vec<(i64, NodeKey)>, StoreError> {
        // A node's id here is its creation number, which stage 2's vectors and full-text
        // documents are keyed by; stage 2 keeps their keys by number too.
        self.stage2_node_keys(nids)
    }

    fn vectors_page(&self, after: i64, limit: usize) -> Result<Vec<StoredVector>, StoreError> {
        self.stage2_vectors_page(after, limit)
    }

    fn scan_unindexed_vectors(&self, visit: &mut dyn FnMut(i64, &[f32])) -> Result<(), StoreError> {
        self.stage3_scan_unindexed(visit)
    }

    fn vector_counts(&self) -> Result<(u64, u64), StoreError> {
        self.stage3_vector_counts()
    }

    fn scan_vectors_of(
        &self,
        nids: &[i64],
        visit: &mut dyn FnMut(i64, &[f32]),
    ) -> Result<(), StoreError> {
        self.stage2_scan_vectors_of(nids, visit)
    }

    fn ann_generation(&self) -> Result<u64, StoreError> {
        self.stage3_ann_generation()
    }

    fn vector_generation(&self) -> Result<u64, StoreError> {
        self.stage2_counter("vector_generation")
    }

    fn ann_centroids(&self) -> Result<Option<Vec<u8>>, StoreError> {
        self.stage3_ann_centroids()
    }

    fn ann_list(&self, list: u32) -> Result<Option<Vec<u8>>, StoreError> {
        self.stage3_ann_list(list)
    }

    fn is_archived(&self, key: &NodeKey) -> Result<bool, StoreError> {
        self.archive_mark_exists(key)
    }

    fn archived(&self, after: Option<&NodeKey>, limit: usize) -> Result<Vec<Archived>, StoreError> {
        self.archive_marks_after(after, limit)
    }

    // Reads of many keys, one query each (`many.rs`).

    fn nodes(&self, keys: &[NodeKey]) -> Result<Vec<Option<Node>>, StoreError> {
        self.nodes_many(keys)
    }

    fn nodes_exist(&self, keys: &[NodeKey]) -> Result<Vec<bool>, StoreError> {
        self.nodes_exist_many(keys)
    }

    fn edges_of_many(
        &self,
        keys: &[NodeKey],
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Vec<Edge>>, StoreError> {
        self.edges_of_many_keys(keys, edge_type, direction)
    }

    fn existing_ids_by_label(
        &self,
        labels: &[&str],
        ids: &[String],
    ) -> Result<Vec<Vec<String>>, StoreError> {
        self.existing_ids_labels(labels, ids)
    }

    fn session_events_many(
        &self,
        session_ids: &[String],
        limit: usize,
    ) -> Result<Vec<Vec<SessionSlot>>, StoreError> {
        self.session_events_of(session_ids, limit)
    }

    fn trace_events_many(
        &self,
        trace_ids: &[String],
        limit: usize,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        self.trace_events_of(trace_ids, limit)
    }

    fn edges_limited_many(
        &self,
        reads: &[(NodeKey, &str)],
        out: bool,
        limit: usize,
    ) -> Result<Vec<Vec<Edge>>, StoreError> {
        self.run_plan(Self::plan_edges_limited(reads, out, limit)?)?.into_edges()
    }

    fn batch_reads_pay(&self) -> bool {
        true
    }

    fn native_nearest(
        &self,
        query: &[f32],
        want: usize,
        scan_up_to: u64,
    ) -> Result<Option<Vec<i64>>, StoreError> {
        FalkorGraph::native_nearest(self, query, want, scan_up_to)
    }

    fn read_together(&self, reads: &[ManyRead<'_>]) -> Result<Vec<ManyAnswer>, StoreError> {
        self.read_many_together(reads)
    }

    fn edge_groups_many(
        &self,
        keys: &[NodeKey],
        limit: usize,
    ) -> Result<Vec<Vec<EdgeGroup>>, StoreError> {
        self.edge_groups_of(keys, limit)
    }
}

/// One direction of a node's edge groups as a query part: `start` matches the node `n` (with
/// `placed`, from a row `k` of keys whose place `k[0]` is returned first, as `i`). The far
/// endpoints and edges are collected as references in index order (the far endpoint's
/// creation number, then qualifier); only the first `$limit` of each group are read out, with
/// `props` (`p[1].props`: the edge's, `p[0].props`: the far endpoint's).
pub(super) fn group_side(start: &str, placed: bool, out: bool, props: &str) -> String {
    let pattern = if out { "(n)-[r]->(m)" } else { "(n)<-[r]-(m)" };
    let (bind, lead) = if placed { ("k[0] AS i, ", "i, ") } else { ("", "") };
    format!(
        "{start} MATCH {pattern} \
         WITH {bind}type(r) AS t, r, m ORDER BY {lead}t, m.seq, r.q \
         WITH {lead}t, collect([m, r]) AS es \
         RETURN {lead}{out} AS out, t, size(es) AS degree, \
         [p IN es[0..$limit] | [labels(p[0])[0], p[0].id, p[1].q, {props}]] AS items"
    )
}

/// A group of `key`'s edges read with their far ends' keys, as edges.
pub(super) fn edge_group(key: &NodeKey, g: EdgeGroup<Item>) -> Result<EdgeGroup, StoreError> {
    let edges = g
        .edges
        .into_iter()
        .map(|item| group_edge(key, &g.edge_type, g.out, item))
        .collect::<Result<Vec<Edge>, StoreError>>()?;
    Ok(EdgeGroup { out: g.out, edge_type: g.edge_type, degree: g.degree, edges })
}

/// A node's groups in the order the reads list them: outgoing first, then by edge type.
pub(super) fn sort_groups<T>(groups: &mut [EdgeGroup<T>]) {
    groups.sort_by(|a, b| b.out.cmp(&a.out).then_with(|| a.edge_type.cmp(&b.edge_type)));
}

/// Groups whose items carry their edge type too (the heaviest edges are built from items of
/// several groups).
fn groups_by_type(groups: Vec<EdgeGroup<Item>>) -> Vec<EdgeGroup<(String, Item)>> {
    groups
        .into_iter()
        .map(|g| EdgeGroup {
            out: g.out,
            edges: g.edges.into_iter().map(|item| (g.edge_type.clone(), item)).collect(),
            edge_type: g.edge_type,
            degree: g.degree,
        })
        .collect()
}
