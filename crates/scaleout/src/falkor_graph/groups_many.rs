//! [`GraphReader::edge_groups_many`]: the edge groups of many nodes in one query, for recall's
//! expansion, which reads the likeliest next expansions with the one in hand on a store whose
//! reads are round trips. Each node's answer equals [`GraphReader::edge_groups`]'s (the
//! conformance suite compares them).
//!
//! [`GraphReader::edge_groups_many`]: ctxgraph_store::GraphReader::edge_groups_many
//! [`GraphReader::edge_groups`]: ctxgraph_store::GraphReader::edge_groups

use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_store::{EdgeGroup, ManyAnswer, StoreError};

use super::many::place;
use super::read::{edge_group, group_side, sort_groups};
use super::together::{Plan, placed_rows};
use super::{FalkorGraph, count, int};

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
        Ok(Plan::new(queries, move |g: &FalkorGraph, replies| {
            let rows = placed_rows(replies, &starts);
            let mut groups: Vec<Vec<EdgeGroup<super::read::Item>>> = vec![Vec::new(); keys.len()];
            for r in &rows {
                let i = place(r, keys.len(), &g.url)?;
                groups[i].push(g.group_at(r, 1, limit)?);
            }
            let groups = keys
                .iter()
                .zip(groups)
                .map(|(key, mut groups)| {
                    sort_groups(&mut groups);
                    groups.into_iter().map(|g| edge_group(key, g)).collect()
                })
                .collect::<Result<Vec<Vec<EdgeGroup>>, StoreError>>()?;
            Ok(ManyAnswer::Groups(groups))
        }))
    }
}
