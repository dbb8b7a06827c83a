//! [`GraphReader::edge_groups_many`]: the edge groups of many nodes in one query, for recall's
//! expansion, which reads the likeliest next expansions with the one in hand on a store whose
//! reads are round trips. Each node's answer equals [`GraphReader::edge_groups`]'s (the
//! conformance suite compares them).
//!
//! The edges come as plain rows, grouped, ordered and cut on this side: FalkorDB's sort and
//! collection of each group cost more than sending the few edges an expanded node has (143 µs
//! of internal execution against 87 µs for three events' 21 edges). So that a hub's thousands
//! of edges are never sent, each part of the query stops at [`PLAIN_EDGES_PER_NODE`] rows per
//! node asked; a part that reaches it is read again by groups, sorted and cut by the server.
//!
//! [`GraphReader::edge_groups_many`]: ctxgraph_store::GraphReader::edge_groups_many
//! [`GraphReader::edge_groups`]: ctxgraph_store::GraphReader::edge_groups

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_store::{EdgeGroup, ManyAnswer, StoreError};

use super::many::place;
use super::read::{Item, bool_at, edge_group, group_side, sort_groups};
use super::together::{Plan, Rows, placed_rows};
use super::{FalkorGraph, count, int, int_at, text_at};

/// The plain rows a read of edge groups takes per node asked, at most, in each part (one
/// label's nodes, one direction): past it the read is made again by groups.
const PLAIN_EDGES_PER_NODE: usize = 64;

/// One edge of a plain row: its group's direction and type, and the far endpoint's creation
/// number and the qualifier it is ordered by, with the item.
type PlainEdge = (i64, Item);

impl FalkorGraph {
    /// The edge groups of each of `keys` with their first `limit` edges each, in order: one
    /// query of a `UNION ALL` part per label and direction.
    pub(crate) fn edge_groups_of(
        &self,
        keys: &[NodeKey],
        limit: usize,
    ) -> Result<Vec<Vec<EdgeGroup>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.run_plan(Self::plan_edge_groups(keys, limit)?)?.into_groups()
    }

    /// [`FalkorGraph::edge_groups_of`] as a plan, to be sent with other reads
    /// ([`ManyRead::EdgeGroups`](ctxgraph_store::ManyRead::EdgeGroups)).
    pub(super) fn plan_edge_groups(keys: &[NodeKey], limit: usize) -> Result<Plan<'_>, StoreError> {
        let cap = keys.len().saturating_mul(PLAIN_EDGES_PER_NODE);
        let side = |label: &str, k: &str, out: bool| {
            let pattern = if out { "(n)-[r]->(m)" } else { "(n)<-[r]-(m)" };
            format!(
                "UNWIND ${k} AS k MATCH (n:{label} {{id: k[1]}}) MATCH {pattern} \
                 RETURN k[0] AS i, {out} AS out, type(r) AS t, labels(m)[0] AS l, m.id AS m, \
                 m.seq AS seq, r.q AS q, r.props AS p LIMIT $cap"
            )
        };
        let (mut queries, starts) = Self::per_label(keys, &|label, k| {
            format!("{} UNION ALL {}", side(label, k, true), side(label, k, false))
        })?;
        for q in &mut queries {
            q.params.push(("cap".to_owned(), int(count(cap))));
        }
        Ok(Plan::new(queries, move |g: &FalkorGraph, replies| {
            let rows = placed_rows(replies, &starts);
            let groups = match g.plain_groups(keys, &rows, limit, cap)? {
                Some(groups) => groups,
                None => g.sorted_groups_of(keys, limit)?,
            };
            Ok(ManyAnswer::Groups(groups))
        }))
    }

    /// The groups of `keys` from the plain rows of [`FalkorGraph::plan_edge_groups`]; `None`
    /// when a part of the query stopped at `cap` rows (some node has more edges than were sent).
    fn plain_groups(
        &self,
        keys: &[NodeKey],
        rows: &Rows,
        limit: usize,
        cap: usize,
    ) -> Result<Option<Vec<Vec<EdgeGroup>>>, StoreError> {
        let url = &self.url;
        let mut per_part: BTreeMap<(&str, bool), usize> = BTreeMap::new();
        let mut found: Vec<BTreeMap<(bool, String), Vec<PlainEdge>>> =
            vec![BTreeMap::new(); keys.len()];
        for r in rows {
            let i = place(r, keys.len(), url)?;
            let out = bool_at(r, 1, url)?;
            let far = NodeKey { label: text_at(r, 3, url)?, id: text_at(r, 4, url)? };
            let item = (far, text_at(r, 6, url)?, text_at(r, 7, url)?);
            *per_part.entry((keys[i].label.as_str(), out)).or_default() += 1;
            found[i]
                .entry((out, text_at(r, 2, url)?))
                .or_default()
                .push((int_at(r, 5, url)?, item));
        }
        if per_part.values().any(|&n| n >= cap) {
            return Ok(None);
        }
        keys.iter()
            .zip(found)
            .map(|(key, by_group)| {
                let mut groups: Vec<EdgeGroup<Item>> = by_group
                    .into_iter()
                    .map(|((out, edge_type), mut edges)| {
                        // The grouped read's order: the far endpoint's creation number, then
                        // the qualifier.
                        edges.sort_by(|(a, x), (b, y)| a.cmp(b).then_with(|| x.1.cmp(&y.1)));
                        let degree = edges.len().min(limit.saturating_add(1));
                        edges.truncate(limit);
                        let edges = edges.into_iter().map(|(_, item)| item).collect();
                        EdgeGroup { out, edge_type, degree, edges }
                    })
                    .collect();
                sort_groups(&mut groups);
                groups.into_iter().map(|g| edge_group(key, g)).collect()
            })
            .collect::<Result<Vec<_>, StoreError>>()
            .map(Some)
    }

    /// The edge groups of each of `keys`, each group sorted and cut to its first `limit` edges
    /// by the server: what a read of plain rows falls back to.
    fn sorted_groups_of(
        &self,
        keys: &[NodeKey],
        limit: usize,
    ) -> Result<Vec<Vec<EdgeGroup>>, StoreError> {
        // As the single read (`read.rs`, `groups`), with each row's key place in front.
        let side = |label: &str, k: &str, out: bool| {
            let start = format!("UNWIND ${k} AS k MATCH (n:{label} {{id: k[1]}})");
            group_side(&start, true, out, "p[1].props")
        };
        let (mut queries, starts) = Self::per_label(keys, &|label, k| {
            format!("{} UNION ALL {}", side(label, k, true), side(label, k, false))
        })?;
        for q in &mut queries {
            q.params.push(("limit".to_owned(), int(count(limit))));
        }
        let rows = placed_rows(self.one_query(&queries)?, &starts);
        let mut groups: Vec<Vec<EdgeGroup<Item>>> = vec![Vec::new(); keys.len()];
        for r in &rows {
            let i = place(r, keys.len(), &self.url)?;
            groups[i].push(self.group_at(r, 1, limit)?);
        }
        keys.iter()
            .zip(groups)
            .map(|(key, mut groups)| {
                sort_groups(&mut groups);
                groups.into_iter().map(|g| edge_group(key, g)).collect()
            })
            .collect()
    }
}
