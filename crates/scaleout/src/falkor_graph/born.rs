//! Edges between nodes a fold page creates, written by the query that creates the nodes.
//!
//! An edge query finds each end by an index lookup of its key, and most of a page's edges of
//! one event to another (its session's order, its cause) join two events the same page
//! creates. The query creating a label's nodes collects their internal ids in row order
//! (`WITH collect(id(n)) AS ids`), and each edge between two of them is then sought by id
//! from its ends' positions in the rows, one `CALL` subquery per edge type: no lookup at all.

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::EdgeKey;
use ctxgraph_store::StoreError;
use falkordb::FalkorValue;

use super::bulk::created_node;
use super::bulk::{NetChanges, ROWS_PER_QUERY};
use super::{Write, name};

/// The parameter names of a query's edge lists, one per edge type it carries: an edge of a
/// further type goes in a query of its own.
const EDGE_LISTS: [&str; 8] = ["e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7"];

/// The positions, in their label's creation rows, of the nodes a batch creates, for the
/// labels whose nodes one query creates (at most [`ROWS_PER_QUERY`] of them).
pub(super) struct Born<'a> {
    at: BTreeMap<&'a str, BTreeMap<&'a str, i64>>,
}

impl<'a> Born<'a> {
    /// The created nodes of `changes`, numbered in the order `merged_writes` sends their rows.
    pub(super) fn new(changes: &NetChanges<'a>) -> Born<'a> {
        let mut at: BTreeMap<&'a str, BTreeMap<&'a str, i64>> = BTreeMap::new();
        for (key, node, new, _) in &changes.nodes {
            if *new && node.is_some() {
                let of_label = at.entry(key.label.as_str()).or_default();
                let position = of_label.len() as i64;
                of_label.insert(key.id.as_str(), position);
            }
        }
        at.retain(|_, ids| ids.len() <= ROWS_PER_QUERY);
        Born { at }
    }

    /// The positions of an edge's ends, when both are nodes of one label that one query
    /// creates.
    pub(super) fn ends(&self, key: &EdgeKey) -> Option<(i64, i64)> {
        if key.from.label != key.to.label {
            return None;
        }
        let ids = self.at.get(key.from.label.as_str())?;
        Some((*ids.get(key.from.id.as_str())?, *ids.get(key.to.id.as_str())?))
    }
}

/// Edges between nodes of one label that one query creates, by edge type, as rows of
/// `[from position, to position, qualifier, properties]`.
#[derive(Default)]
pub(super) struct Among<'a> {
    by_type: BTreeMap<&'a str, Vec<FalkorValue>>,
}

impl<'a> Among<'a> {
    /// Whether the query can carry an edge of type `ty` (it carries at most
    /// [`EDGE_LISTS`]`.len()` types).
    pub(super) fn has_room(&self, ty: &str) -> bool {
        self.by_type.contains_key(ty) || self.by_type.len() < EDGE_LISTS.len()
    }

    /// An edge of type `ty` from the node at position `from` to the one at `to`.
    pub(super) fn push(&mut self, ty: &'a str, (from, to): (i64, i64), q: &str, props: String) {
        self.by_type.entry(ty).or_default().push(FalkorValue::Array(vec![
            FalkorValue::I64(from),
            FalkorValue::I64(to),
            FalkorValue::String(q.to_owned()),
            FalkorValue::String(props),
        ]));
    }
}

/// The query creating the nodes `rows` of label `label` (one query's worth) and then the
/// edges `among` them.
pub(super) fn create_with_edges(
    label: &str,
    rows: Vec<FalkorValue>,
    among: Among<'_>,
) -> Result<Write, StoreError> {
    let mut query = format!(
        "UNWIND $rows AS r CREATE {} WITH collect(id(n)) AS ids",
        created_node("n", label)?
    );
    let mut params = vec![("rows", FalkorValue::Array(rows))];
    for ((ty, edges), param) in among.by_type.into_iter().zip(EDGE_LISTS) {
        let ty = name(ty, "edge type")?;
        // A seek needs the id as a plain variable (`id(a) = i`, not `id(a) = ids[e[0]]`).
        query.push_str(&format!(
            " CALL {{ WITH ids UNWIND ${param} AS e WITH ids[e[0]] AS i, ids[e[1]] AS j, e \
             MATCH (a) WHERE id(a) = i MATCH (b) WHERE id(b) = j \
             CREATE (a)-[:{ty} {{q: e[2], props: e[3]}}]->(b) }}"
        ));
        params.push((param, FalkorValue::Array(edges)));
    }
    Ok(Write { query, params })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgraph_ontology::graph::{Node, NodeKey};

    fn key(label: &str, id: &str) -> NodeKey {
        NodeKey { label: label.to_owned(), id: id.to_owned() }
    }

    fn edge(from: &NodeKey, to: &NodeKey) -> EdgeKey {
        EdgeKey {
            edge_type: "FOLLOWS".to_owned(),
            from: from.clone(),
            to: to.clone(),
            qualifier: String::new(),
        }
    }

    #[test]
    fn only_edges_between_two_created_nodes_of_one_label_are_numbered() {
        let (e1, e2, old, x) =
            (key("Event", "e1"), key("Event", "e2"), key("Event", "e0"), key("Entity", "x"));
        let node = |k: &NodeKey| Node { key: k.clone(), props: Default::default() };
        let (n1, n2, n0, nx) = (node(&e1), node(&e2), node(&old), node(&x));
        let changes = NetChanges {
            nodes: vec![
                (&e1, Some(&n1), true, 1),
                (&old, Some(&n0), false, 0),
                (&x, Some(&nx), true, 2),
                (&e2, Some(&n2), true, 3),
            ],
            ..NetChanges::default()
        };
        let born = Born::new(&changes);
        assert_eq!(born.ends(&edge(&e2, &e1)), Some((1, 0)));
        assert_eq!(born.ends(&edge(&e2, &old)), None, "a node the graph has is not created");
        assert_eq!(born.ends(&edge(&e1, &x)), None, "ends of two labels");
    }

    #[test]
    fn a_query_carries_at_most_its_edge_lists_and_one_call_per_type() {
        let mut among = Among::default();
        for ty in ["A", "B", "C", "D", "E", "F", "G", "H"] {
            assert!(among.has_room(ty));
            among.push(ty, (1, 0), "", "{}".to_owned());
        }
        assert!(among.has_room("A"), "a type it carries");
        assert!(!among.has_room("I"), "a ninth type goes in a query of its own");
        let write = create_with_edges("Event", vec![], among).unwrap();
        assert_eq!(write.query.matches(" CALL { WITH ids UNWIND $e").count(), 8);
        assert_eq!(write.params.len(), 9);
        assert!(write.query.starts_with("UNWIND $rows AS r CREATE (n:`Event` {"));
        assert!(
            create_with_edges("Event", vec![], {
                let mut a = Among::default();
                a.push("bad type", (0, 0), "", String::new());
                a
            })
            .is_err()
        );
    }
}
