//! The engine's reads of many keys at once ([`GraphReader::nodes`] and its neighbours) as one
//! query each: a recall reads a few dozen nodes, and each read on its own is a round trip.
//!
//! Keys of several labels go in one query of `UNION ALL` parts, one part per label (Cypher
//! takes no label as a parameter): `UNWIND $k0 AS k MATCH (n:Label {id: k[1]}) …`, where `k[0]`
//! is the key's place in the caller's list, so every answer goes back to its place whatever
//! order the server returns rows in, and a key given twice gets its answer twice. Each answer
//! equals the single-key read's (the conformance suite compares them).
//!
//! [`GraphReader::nodes`]: ctxgraph_store::GraphReader::nodes

use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey};
use ctxgraph_store::{ManyAnswer, SessionSlot, StoreError, props_from};
use falkordb::FalkorValue;

use super::together::{Plan, Query, placed_rows};
use super::{FalkorGraph, SLOT, TRACED, count, int, int_at, name, s, sort_side, text_at};

/// The most keys one query carries: bounds the size of a query's text.
const KEYS_PER_QUERY: usize = 1_000;

/// Keys grouped by label, each as `[place, id]`, in label order.
fn by_label(keys: &[NodeKey]) -> BTreeMap<&str, Vec<FalkorValue>> {
    let mut groups: BTreeMap<&str, Vec<FalkorValue>> = BTreeMap::new();
    for (i, key) in keys.iter().enumerate() {
        let place = int(i64::try_from(i).unwrap_or(i64::MAX));
        groups.entry(&key.label).or_default().push(FalkorValue::Array(vec![place, s(&key.id)]));
    }
    groups
}

/// A row's place column as an index into the caller's list.
pub(super) fn place(
    row: &[FalkorValue],
    len: usize,
    url: &crate::url::StoreUrl,
) -> Result<usize, StoreError> {
    usize::try_from(int_at(row, 0, url)?).ok().filter(|i| *i < len).ok_or_else(|| {
        StoreError::Corruption(format!("{url}: a batched read answered for a key it was not asked"))
    })
}

impl FalkorGraph {
    /// `part(label, param)` (a query over the keys of one label, bound to `$param`) for every
    /// label of `keys`, as one `UNION ALL` query per chunk of keys, with the place in `keys` of
    /// each chunk's first key.
    pub(super) fn per_label(
        keys: &[NodeKey],
        part: &dyn Fn(&str, &str) -> String,
    ) -> Result<(Vec<Query>, Vec<usize>), StoreError> {
        let mut queries = Vec::new();
        let mut starts = Vec::new();
        for (start, chunk) in (0..keys.len())
            .step_by(KEYS_PER_QUERY)
            .map(|s| (s, &keys[s..(s + KEYS_PER_QUERY).min(keys.len())]))
        {
            let groups = by_label(chunk);
            let mut parts = Vec::with_capacity(groups.len());
            let mut params = Vec::with_capacity(groups.len());
            for (i, (label, group)) in groups.into_iter().enumerate() {
                let param = format!("k{i}");
                parts.push(part(&name(label, "label")?, &param));
                params.push((param, FalkorValue::Array(group)));
            }
            queries.push(Query { text: parts.join(" UNION ALL "), params });
            starts.push(start);
        }
        Ok((queries, starts))
    }

    /// [`GraphReader::nodes`](ctxgraph_store::GraphReader::nodes): one query.
    pub(crate) fn nodes_many(&self, keys: &[NodeKey]) -> Result<Vec<Option<Node>>, StoreError> {
        self.run_plan(Self::plan_nodes(keys)?)?.into_nodes()
    }

    /// [`FalkorGraph::nodes_many`] as a plan.
    pub(super) fn plan_nodes(keys: &[NodeKey]) -> Result<Plan<'_>, StoreError> {
        let (queries, starts) = Self::per_label(keys, &|label, k| {
            format!(
                "UNWIND ${k} AS k MATCH (n:{label} {{id: k[1]}}) RETURN k[0] AS i, n.props AS p"
            )
        })?;
        Ok(Plan::new(queries, move |g, replies| {
            let mut out: Vec<Option<Node>> = vec![None; keys.len()];
            for r in &placed_rows(replies, &starts) {
                let i = place(r, keys.len(), &g.url)?;
                let props = props_from(&text_at(r, 1, &g.url)?)?;
                out[i] = Some(Node { key: keys[i].clone(), props });
            }
            Ok(ManyAnswer::Nodes(out))
        }))
    }

    /// [`GraphReader::nodes_exist`](ctxgraph_store::GraphReader::nodes_exist): one query.
    pub(crate) fn nodes_exist_many(&self, keys: &[NodeKey]) -> Result<Vec<bool>, StoreError> {
        self.run_plan(Self::plan_nodes_exist(keys)?)?.into_exist()
    }

    /// [`FalkorGraph::nodes_exist_many`] as a plan.
    pub(super) fn plan_nodes_exist(keys: &[NodeKey]) -> Result<Plan<'_>, StoreError> {
        let (queries, starts) = Self::per_label(keys, &|label, k| {
            format!("UNWIND ${k} AS k MATCH (n:{label} {{id: k[1]}}) RETURN k[0] AS i")
        })?;
        Ok(Plan::new(queries, move |g, replies| {
            let mut out = vec![false; keys.len()];
            for r in &placed_rows(replies, &starts) {
                out[place(r, keys.len(), &g.url)?] = true;
            }
            Ok(ManyAnswer::Exist(out))
        }))
    }

    /// [`GraphReader::edges_of_many`](ctxgraph_store::GraphReader::edges_of_many): one query,
    /// each key's edges put in the single read's order (outgoing, then incoming, each side by
    /// type, far endpoint and qualifier).
    pub(crate) fn edges_of_many_keys(
        &self,
        keys: &[NodeKey],
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Vec<Edge>>, StoreError> {
        self.run_plan(Self::plan_edges_of(keys, edge_type, direction)?)?.into_edges()
    }

    /// [`FalkorGraph::edges_of_many_keys`] as a plan.
    pub(super) fn plan_edges_of<'a>(
        keys: &'a [NodeKey],
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Plan<'a>, StoreError> {
        let rel = match edge_type {
            Some(t) => format!("[r:{}]", name(t, "edge type")?),
            None => "[r]".to_owned(),
        };
        let side = |label: &str, k: &str, out: bool| {
            let pattern = if out { format!("-{rel}->") } else { format!("<-{rel}-") };
            format!(
                "UNWIND ${k} AS k MATCH (n:{label} {{id: k[1]}}){pattern}(m) \
                 RETURN k[0] AS i, {out} AS out, type(r) AS t, labels(m)[0] AS l, m.id AS m, \
                 r.q AS q, r.props AS props"
            )
        };
        let (queries, starts) = Self::per_label(keys, &|label, k| match direction {
            Direction::Out => side(label, k, true),
            Direction::In => side(label, k, false),
            Direction::Both => {
                format!("{} UNION ALL {}", side(label, k, true), side(label, k, false))
            }
        })?;
        Ok(Plan::new(queries, move |g, replies| {
            let url = &g.url;
            let mut sides: Vec<(Vec<Edge>, Vec<Edge>)> = vec![(Vec::new(), Vec::new()); keys.len()];
            for r in &placed_rows(replies, &starts) {
                let i = place(r, keys.len(), url)?;
                let out = matches!(r.get(1), Some(FalkorValue::Bool(true)));
                let other = NodeKey { label: text_at(r, 3, url)?, id: text_at(r, 4, url)? };
                let key = keys[i].clone();
                let (from, to) = if out { (key, other) } else { (other, key) };
                let edge = Edge {
                    key: EdgeKey {
                        edge_type: text_at(r, 2, url)?,
                        from,
                        to,
                        qualifier: text_at(r, 5, url)?,
                    },
                    props: props_from(&text_at(r, 6, url)?)?,
                };
                if out { sides[i].0.push(edge) } else { sides[i].1.push(edge) }
            }
            Ok(ManyAnswer::Edges(
                sides
                    .into_iter()
                    .map(|(mut outgoing, mut incoming)| {
                        sort_side(&mut outgoing, true);
                        sort_side(&mut incoming, false);
                        outgoing.extend(incoming);
                        outgoing
                    })
                    .collect(),
            ))
        }))
    }

    /// [`GraphReader::existing_ids`](ctxgraph_store::GraphReader::existing_ids) as a plan: one
    /// query.
    pub(super) fn plan_existing_ids<'a>(
        label: &str,
        ids: &'a [String],
    ) -> Result<Plan<'a>, StoreError> {
        if ids.is_empty() {
            return Ok(Plan::new(Vec::new(), |_, _| Ok(ManyAnswer::Ids(Vec::new()))));
        }
        let quoted = name(label, "label")?;
        let list = FalkorValue::Array(ids.iter().map(|i| s(i)).collect());
        let query = Query {
            text: format!("MATCH (n:{quoted}) WHERE n.id IN $ids RETURN n.id"),
            params: vec![("ids".to_owned(), list)],
        };
        Ok(Plan::new(vec![query], move |g, replies| {
            let found: BTreeSet<String> = replies
                .iter()
                .flatten()
                .map(|r| text_at(r, 0, &g.url))
                .collect::<Result<_, _>>()?;
            Ok(ManyAnswer::Ids(ids.iter().filter(|id| found.contains(*id)).cloned().collect()))
        }))
    }

    /// [`GraphReader::existing_ids_by_label`](ctxgraph_store::GraphReader::existing_ids_by_label):
    /// one query, a `UNION ALL` part per label.
    pub(crate) fn existing_ids_labels(
        &self,
        labels: &[&str],
        ids: &[String],
    ) -> Result<Vec<Vec<String>>, StoreError> {
        self.run_plan(Self::plan_existing_ids_by_label(labels, ids)?)?.into_ids_by_label()
    }

    /// [`FalkorGraph::existing_ids_labels`] as a plan.
    pub(super) fn plan_existing_ids_by_label<'a>(
        labels: &[&str],
        ids: &'a [String],
    ) -> Result<Plan<'a>, StoreError> {
        let count = labels.len();
        if ids.is_empty() || labels.is_empty() {
            return Ok(Plan::new(Vec::new(), move |_, _| {
                Ok(ManyAnswer::IdsByLabel(vec![Vec::new(); count]))
            }));
        }
        let parts = labels
            .iter()
            .enumerate()
            .map(|(i, label)| {
                Ok(format!(
                    "MATCH (n:{}) WHERE n.id IN $ids RETURN {i} AS i, n.id AS id",
                    name(label, "label")?
                ))
            })
            .collect::<Result<Vec<String>, StoreError>>()?;
        let list = FalkorValue::Array(ids.iter().map(|i| s(i)).collect());
        let query =
            Query { text: parts.join(" UNION ALL "), params: vec![("ids".to_owned(), list)] };
        Ok(Plan::new(vec![query], move |g, replies| {
            let mut found: Vec<BTreeSet<String>> = vec![BTreeSet::new(); count];
            for r in replies.iter().flatten() {
                let i = place(r, count, &g.url)?;
                found[i].insert(text_at(r, 1, &g.url)?);
            }
            // As the single read answers: the ids given, in their order, that exist.
            Ok(ManyAnswer::IdsByLabel(
                found
                    .iter()
                    .map(|f| ids.iter().filter(|id| f.contains(*id)).cloned().collect())
                    .collect(),
            ))
        }))
    }

    /// `ids` as `[place, id]` rows, for the reads by session or trace below.
    fn placed(ids: &[String]) -> FalkorValue {
        FalkorValue::Array(
            ids.iter()
                .enumerate()
                .map(|(i, id)| {
                    FalkorValue::Array(vec![int(i64::try_from(i).unwrap_or(i64::MAX)), s(id)])
                })
                .collect(),
        )
    }

    /// The list column of a row of the reads by session or trace.
    fn list_at<'r>(
        &self,
        row: &'r [FalkorValue],
        i: usize,
    ) -> Result<&'r [FalkorValue], StoreError> {
        match row.get(i) {
            Some(FalkorValue::Array(items)) => Ok(items),
            _ => Err(super::odd(&self.url, "a list where one was expected")),
        }
    }

    /// One query per chunk of `ids` as `[place, id]` rows in `$k`, with `$limit`.
    fn per_chunk(ids: &[String], limit: usize, text: &str) -> (Vec<Query>, Vec<usize>) {
        ids.chunks(KEYS_PER_QUERY)
            .enumerate()
            .map(|(n, chunk)| {
                let params = vec![
                    ("k".to_owned(), Self::placed(chunk)),
                    ("limit".to_owned(), int(count(limit))),
                ];
                (Query { text: text.to_owned(), params }, n * KEYS_PER_QUERY)
            })
            .unzip()
    }

    /// [`GraphReader::session_events_many`](ctxgraph_store::GraphReader::session_events_many):
    /// one query, each session's first `limit` slots in time order.
    pub(crate) fn session_events_of(
        &self,
        ids: &[String],
        limit: usize,
    ) -> Result<Vec<Vec<SessionSlot>>, StoreError> {
        self.run_plan(Self::plan_session_events(ids, limit))?.into_slots()
    }

    /// [`FalkorGraph::session_events_of`] as a plan.
    pub(super) fn plan_session_events(ids: &[String], limit: usize) -> Plan<'static> {
        let (queries, starts) = Self::per_chunk(
            ids,
            limit,
            &format!(
                "UNWIND $k AS k MATCH (x:{SLOT} {{session: k[1]}}) \
                 WITH k[0] AS i, x ORDER BY i, x.at, x.event \
                 WITH i, collect([x.at, x.event]) AS slots RETURN i, slots[0..$limit]"
            ),
        );
        let len = ids.len();
        Plan::new(queries, move |g, replies| {
            let mut out = vec![Vec::new(); len];
            for r in &placed_rows(replies, &starts) {
                let i = place(r, len, &g.url)?;
                for slot in g.list_at(r, 1)? {
                    let FalkorValue::Array(cols) = slot else {
                        return Err(super::odd(&g.url, "a session slot"));
                    };
                    out[i].push(SessionSlot {
                        at_ns: int_at(cols, 0, &g.url)?,
                        event_id: text_at(cols, 1, &g.url)?,
                    });
                }
            }
            Ok(ManyAnswer::Slots(out))
        })
    }

    /// [`GraphReader::trace_events_many`](ctxgraph_store::GraphReader::trace_events_many): one
    /// query, each trace's first `limit` events in creation order.
    pub(crate) fn trace_events_of(
        &self,
        ids: &[String],
        limit: usize,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        self.run_plan(Self::plan_trace_events(ids, limit)?)?.into_trace_events()
    }

    /// [`FalkorGraph::trace_events_of`] as a plan.
    pub(super) fn plan_trace_events(
        ids: &[String],
        limit: usize,
    ) -> Result<Plan<'static>, StoreError> {
        let label = name(TRACED, "label")?;
        let (queries, starts) = Self::per_chunk(
            ids,
            limit,
            &format!(
                "UNWIND $k AS k MATCH (n:{label} {{trace: k[1]}}) \
                 WITH k[0] AS i, n ORDER BY i, n.seq \
                 WITH i, collect(n.id) AS ids RETURN i, ids[0..$limit]"
            ),
        );
        let len = ids.len();
        Ok(Plan::new(queries, move |g, replies| {
            let mut out = vec![Vec::new(); len];
            for r in &placed_rows(replies, &starts) {
                let i = place(r, len, &g.url)?;
                for id in g.list_at(r, 1)? {
                    let FalkorValue::String(id) = id else {
                        return Err(super::odd(&g.url, "an event id"));
                    };
                    out[i].push(id.clone());
                }
            }
            Ok(ManyAnswer::TraceEvents(out))
        }))
    }

    /// [`GraphReader::edges_limited_many`](ctxgraph_store::GraphReader::edges_limited_many) as
    /// a plan: the first `limit` edges of each `(node, edge type)` of `reads` in one
    /// direction, in index order (far endpoint's creation number, then qualifier); one query,
    /// a `UNION ALL` part per label and edge type.
    pub(super) fn plan_edges_limited<'a>(
        reads: &'a [(NodeKey, &'a str)],
        out: bool,
        limit: usize,
    ) -> Result<Plan<'a>, StoreError> {
        let mut groups: BTreeMap<(&str, &str), Vec<FalkorValue>> = BTreeMap::new();
        for (i, (key, edge_type)) in reads.iter().enumerate() {
            let place = int(i64::try_from(i).unwrap_or(i64::MAX));
            groups
                .entry((&key.label, edge_type))
                .or_default()
                .push(FalkorValue::Array(vec![place, s(&key.id)]));
        }
        let mut queries = Vec::new();
        if !groups.is_empty() {
            let mut parts = Vec::with_capacity(groups.len());
            let mut params = Vec::with_capacity(groups.len() + 1);
            for (n, ((label, edge_type), group)) in groups.into_iter().enumerate() {
                let (label, ty) = (name(label, "label")?, name(edge_type, "edge type")?);
                let pattern = if out { format!("-[r:{ty}]->") } else { format!("<-[r:{ty}]-") };
                let param = format!("k{n}");
                parts.push(format!(
                    "UNWIND ${param} AS k MATCH (n:{label} {{id: k[1]}}){pattern}(m) \
                     WITH k[0] AS i, r, m ORDER BY i, m.seq, r.q \
                     WITH i, collect([labels(m)[0], m.id, r.q, r.props]) AS es \
                     RETURN i, es[0..$limit] AS es"
                ));
                params.push((param, FalkorValue::Array(group)));
            }
            params.push(("limit".to_owned(), int(count(limit))));
            queries.push(Query { text: parts.join(" UNION ALL "), params });
        }
        Ok(Plan::new(queries, move |g, replies| {
            let mut found = vec![Vec::new(); reads.len()];
            for r in replies.iter().flatten() {
                let i = place(r, reads.len(), &g.url)?;
                let (key, edge_type) = &reads[i];
                for item in g.list_at(r, 1)? {
                    let FalkorValue::Array(cols) = item else {
                        return Err(super::odd(&g.url, "an edge of a limited read"));
                    };
                    let far =
                        NodeKey { label: text_at(cols, 0, &g.url)?, id: text_at(cols, 1, &g.url)? };
                    let item = (far, text_at(cols, 2, &g.url)?, text_at(cols, 3, &g.url)?);
                    found[i].push(super::read::group_edge(key, edge_type, out, item)?);
                }
            }
            Ok(ManyAnswer::Edges(found))
        }))
    }
}
