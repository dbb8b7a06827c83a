//! Many keys per query: the reads a batch makes before it folds a page (nodes, parked edges and
//! session orders of every key the page names, one query each, sent in one pipeline) and the
//! page's writes as a few
//! `UNWIND $rows AS r …` queries per label or edge type instead of one query per write.
//!
//! A query costs a round trip and FalkorDB's parse and plan of its text; one query over a list
//! pays them once for the list. Every value is still a parameter (the rows are one list
//! parameter of lists); labels and edge types are checked identifiers, as in single queries.

use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_ontology::graph::{Edge, EdgeKey, Node, NodeKey};
use ctxgraph_store::{SessionSlot, StoreError, props_from, props_to};
use falkordb::FalkorValue;

use super::born::{Among, Born, create_with_edges};
use super::together::Query;
use super::{
    FalkorGraph, NAMED, PENDING, PENDING_COLUMNS, SLOT, Write, int, name, name_of, pending_row, s,
    trace_of,
};
use super::{int_at, text_at};

/// The most rows one query carries: bounds the size of a query's text.
pub(super) const ROWS_PER_QUERY: usize = 1_000;

/// A list parameter.
fn list(values: Vec<FalkorValue>) -> FalkorValue {
    FalkorValue::Array(values)
}

/// A node's label and id as a row.
fn key_row(key: &NodeKey) -> FalkorValue {
    list(vec![s(&key.label), s(&key.id)])
}

/// One `UNWIND $rows AS r <body>` write per chunk of `rows`.
fn unwind(out: &mut Vec<Write>, body: &str, rows: Vec<FalkorValue>) {
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<FalkorValue> = rows.by_ref().take(ROWS_PER_QUERY).collect();
        out.push(Write {
            query: format!("UNWIND $rows AS r {body}"),
            params: vec![("rows", list(chunk))],
        });
    }
}

/// What a fold page or a stage-2 chunk reads ahead, answered by [`FalkorGraph::read_ahead`].
#[derive(Debug, Default)]
pub(crate) struct ReadAhead {
    /// The nodes found (the absent ones left out).
    pub(crate) nodes: Vec<Node>,
    /// FalkorDB's internal id of each node of `nodes`, in the same order: a commit watched
    /// from before this read finds the same node under it (see [`NetChanges::ids`]).
    pub(crate) node_ids: Vec<i64>,
    /// The parked edges, with the node each waits for.
    pub(crate) pending: Vec<(NodeKey, Edge)>,
    /// The session slots, with their session.
    pub(crate) slots: Vec<(String, SessionSlot)>,
}

/// Which part of a [`ReadAhead`] a query's rows answer.
enum Part<'a> {
    Nodes(&'a str),
    Pending,
    Slots,
}

impl FalkorGraph {
    /// The nodes of each label among its ids, the edges parked on any of `parked` and every
    /// slot of the sessions `sessions`: one query per label and part (per chunk of keys), all
    /// sent in one pipeline. A fold's page waits for the server once here instead of once a
    /// query, and with two workers on one server each wait can be a whole commit of the
    /// other's.
    pub(crate) fn read_ahead(
        &self,
        nodes: &BTreeMap<&str, Vec<&str>>,
        parked: &[&NodeKey],
        sessions: &[&str],
    ) -> Result<ReadAhead, StoreError> {
        let mut queries = Vec::new();
        let mut parts = Vec::new();
        let ids_param =
            |ids: &[&str]| vec![("ids".to_owned(), list(ids.iter().map(|i| s(i)).collect()))];
        for (label, ids) in nodes {
            let quoted = name(label, "label")?;
            for chunk in ids.chunks(ROWS_PER_QUERY) {
                queries.push(Query {
                    text: format!(
                        "UNWIND $ids AS i MATCH (n:{quoted} {{id: i}}) RETURN n.id, n.props, id(n)"
                    ),
                    params: ids_param(chunk),
                });
                parts.push(Part::Nodes(label));
            }
        }
        for chunk in parked.chunks(ROWS_PER_QUERY) {
            queries.push(Query {
                text: format!(
                    "UNWIND $keys AS k MATCH (p:{PENDING} {{wait_label: k[0], wait_id: k[1]}}) \
                     RETURN {PENDING_COLUMNS}"
                ),
                params: vec![("keys".to_owned(), list(chunk.iter().map(|k| key_row(k)).collect()))],
            });
            parts.push(Part::Pending);
        }
        for chunk in sessions.chunks(ROWS_PER_QUERY) {
            queries.push(Query {
                text: format!(
                    "UNWIND $ids AS i MATCH (x:{SLOT} {{session: i}}) RETURN x.session, x.at, x.event"
                ),
                params: ids_param(chunk),
            });
            parts.push(Part::Slots);
        }
        let mut out = ReadAhead::default();
        for (part, rows) in parts.into_iter().zip(self.pipelined(&queries)?) {
            for r in &rows {
                match part {
                    Part::Nodes(label) => {
                        out.nodes.push(Node {
                            key: NodeKey { label: label.to_owned(), id: text_at(r, 0, &self.url)? },
                            props: props_from(&text_at(r, 1, &self.url)?)?,
                        });
                        out.node_ids.push(int_at(r, 2, &self.url)?);
                    }
                    Part::Pending => out.pending.push(pending_row(r, &self.url)?),
                    Part::Slots => out.slots.push((
                        text_at(r, 0, &self.url)?,
                        SessionSlot {
                            at_ns: int_at(r, 1, &self.url)?,
                            event_id: text_at(r, 2, &self.url)?,
                        },
                    )),
                }
            }
        }
        Ok(out)
    }
}

/// What a batch leaves in the graph, as its final state per key: [`merged_writes`] turns it
/// into queries.
#[derive(Debug, Default)]
pub(crate) struct NetChanges<'a> {
    /// Nodes deleted at some point (their edges in the graph go with them).
    pub(crate) detached: Vec<&'a NodeKey>,
    /// Nodes written (`Some`) or deleted (`None`), whether the graph is known to have no
    /// such node when they are written (then it is created, not merged), and the creation
    /// number a node the graph lacks gets.
    pub(crate) nodes: Vec<(&'a NodeKey, Option<&'a Node>, bool, i64)>,
    /// Edges written (`Some`) or deleted (`None`), and whether an end is known to be a node
    /// the graph does not have when they are written (so neither has the edge).
    pub(crate) edges: Vec<(&'a EdgeKey, Option<&'a Edge>, bool)>,
    /// Session slots the graph lacks and the batch added (`true`), or the graph has and the
    /// batch removed (`false`).
    pub(crate) slots: Vec<(&'a str, &'a SessionSlot, bool)>,
    /// Nodes whose parked edges changed, with every edge now parked on them.
    pub(crate) pending: Vec<(&'a NodeKey, Vec<&'a Edge>)>,
    /// FalkorDB's internal ids of nodes the graph had when the batch began (read after its
    /// watch) and the batch did not delete: an edge end among them is found by id (a seek)
    /// instead of by an index lookup of its key. Every transaction that writes the graph sets
    /// a key the batch watches (the checkpoint, `node_seq` or `enriched_through`), so the
    /// commit either finds each one under its id or applies nothing; a node left out is
    /// looked up by key.
    pub(crate) ids: BTreeMap<&'a NodeKey, i64>,
}

/// The queries that take the graph from where a batch began to where it ended, in an order
/// that makes replaying the batch's writes one by one unnecessary: deletions of nodes (with
/// their edges) first, then of edges, then node upserts, edge upserts (both ends now exist),
/// session slots, and the parked edges of each changed node replaced whole.
pub(crate) fn merged_writes(changes: &NetChanges<'_>) -> Result<Vec<Write>, StoreError> {
    let mut out = Vec::new();

    let mut detached: BTreeMap<&str, Vec<FalkorValue>> = BTreeMap::new();
    for key in &changes.detached {
        detached.entry(&key.label).or_default().push(s(&key.id));
    }
    for (label, rows) in detached {
        let quoted = name(label, "label")?;
        unwind(&mut out, &format!("MATCH (n:{quoted} {{id: r}}) DETACH DELETE n"), rows);
    }

    // Edges by (source label, type, target label): the parts a query names in its text.
    type Side<'k> = (&'k str, &'k str, &'k str);
    let mut deleted: BTreeMap<Side<'_>, Vec<FalkorValue>> = BTreeMap::new();
    // Edges merged (false) or created (true): by side, then by whether the edge is new.
    let mut written: BTreeMap<(Side<'_>, bool), Vec<EdgeRow<'_>>> = BTreeMap::new();
    // Edges between two nodes of one label the batch creates, created with them.
    let born = Born::new(changes);
    let mut among: BTreeMap<&str, Among<'_>> = BTreeMap::new();
    for (k, edge, new) in &changes.edges {
        let side = (k.from.label.as_str(), k.edge_type.as_str(), k.to.label.as_str());
        match edge {
            Some(e) => {
                if *new
                    && let Some(ends) = born.ends(k)
                    && among.get(k.from.label.as_str()).is_none_or(|a| a.has_room(&k.edge_type))
                {
                    let props = props_to(&e.props)?;
                    among.entry(&k.from.label).or_default().push(
                        &k.edge_type,
                        ends,
                        &k.qualifier,
                        props,
                    );
                    continue;
                }
                let row = EdgeRow {
                    from: &k.from.id,
                    to: &k.to.id,
                    from_id: changes.ids.get(&k.from).copied(),
                    to_id: changes.ids.get(&k.to).copied(),
                    q: &k.qualifier,
                    props: props_to(&e.props)?,
                };
                written.entry((side, *new)).or_default().push(row);
            }
            // An edge of a node the graph lacks is not in the graph either.
            None if *new => {}
            None => deleted.entry(side).or_default().push(list(vec![
                s(&k.from.id),
                s(&k.to.id),
                s(&k.qualifier),
            ])),
        }
    }
    for ((from, ty, to), rows) in deleted {
        let (from, ty, to) = (name(from, "label")?, name(ty, "edge type")?, name(to, "label")?);
        unwind(
            &mut out,
            &format!(
                "MATCH (a:{from} {{id: r[0]}})-[e:{ty} {{q: r[2]}}]->(b:{to} {{id: r[1]}}) DELETE e"
            ),
            rows,
        );
    }

    // A node the graph lacks is created: no lookup of an existing one first.
    let mut nodes: BTreeMap<(&str, bool), Vec<FalkorValue>> = BTreeMap::new();
    for (key, node, new, seq) in &changes.nodes {
        // A deleted node is in `detached`, and gone already.
        if let Some(n) = node {
            let mut row = vec![s(&key.id), s(&props_to(&n.props)?), int(*seq), trace_of(n)];
            if key.label == NAMED {
                row.push(name_of(key));
            }
            nodes.entry((&key.label, *new)).or_default().push(list(row));
        }
    }
    for ((label, new), rows) in nodes {
        // Every edge in `among` joins two nodes of these rows (`Born` numbers them).
        if new && let Some(edges) = among.remove(label) {
            out.push(create_with_edges(label, rows, edges)?);
            continue;
        }
        let quoted = name(label, "label")?;
        let set_name = if label == NAMED { ", n.name = r[4]" } else { "" };
        let body = if new {
            format!("CREATE {}", created_node("", label)?)
        } else {
            format!(
                "MERGE (n:{quoted} {{id: r[0]}}) ON CREATE SET n.seq = r[2] \
                 SET n.props = r[1], n.trace = r[3]{set_name}"
            )
        };
        unwind(&mut out, &body, rows);
    }

    for (((from, ty, to), new), rows) in written {
        edge_upserts(&mut out, (from, ty, to), new, rows)?;
    }

    let (mut added, mut removed) = (Vec::new(), Vec::new());
    for (session, slot, present) in &changes.slots {
        let row = list(vec![s(session), int(slot.at_ns), s(&slot.event_id)]);
        if *present { added.push(row) } else { removed.push(row) }
    }
    let slot_key = "session: r[0], at: r[1], event: r[2]";
    unwind(&mut out, &format!("MATCH (x:{SLOT} {{{slot_key}}}) DELETE x"), removed);
    unwind(&mut out, &format!("CREATE (:{SLOT} {{{slot_key}}})"), added);

    let (mut cleared, mut parked) = (Vec::new(), Vec::new());
    for (wait, edges) in &changes.pending {
        cleared.push(key_row(wait));
        for e in edges {
            let k = &e.key;
            parked.push(list(vec![
                s(&wait.label),
                s(&wait.id),
                s(&k.from.label),
                s(&k.from.id),
                s(&k.edge_type),
                s(&k.to.label),
                s(&k.to.id),
                s(&k.qualifier),
                s(&props_to(&e.props)?),
            ]));
        }
    }
    unwind(
        &mut out,
        &format!("MATCH (p:{PENDING} {{wait_label: r[0], wait_id: r[1]}}) DELETE p"),
        cleared,
    );
    unwind(
        &mut out,
        &format!(
            "CREATE (:{PENDING} {{wait_label: r[0], wait_id: r[1], from_label: r[2], \
             from_id: r[3], edge_type: r[4], to_label: r[5], to_id: r[6], q: r[7], props: r[8]}})"
        ),
        parked,
    );
    Ok(out)
}

/// An edge a batch writes, as its query rows carry it.
struct EdgeRow<'a> {
    from: &'a str,
    to: &'a str,
    /// The source's internal id, when known ([`NetChanges::ids`]).
    from_id: Option<i64>,
    /// The target's internal id, when known.
    to_id: Option<i64>,
    q: &'a str,
    props: String,
}

/// Which end of its edges a group of rows is grouped by, when grouping pays.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Grouped {
    /// One row per edge: both ends looked up per edge.
    Not,
    /// One row per source node, with its edges: the source looked up once.
    BySource,
    /// One row per target node, with its edges: the target looked up once.
    ByTarget,
}

/// How to send a group of edges whose ends are all looked up by key. Each end of a row is
/// one index lookup on the server, about half of what an edge costs it; an end shared by at
/// least two edges a row on average is looked up once for all of them (an event's references
/// share their event, a page's references to one busy entity share the entity), the end with
/// fewer distinct nodes first.
fn grouping(rows: &[EdgeRow<'_>]) -> Grouped {
    let sources: BTreeSet<&str> = rows.iter().map(|r| r.from).collect();
    let targets: BTreeSet<&str> = rows.iter().map(|r| r.to).collect();
    let (by, fewest) = if targets.len() < sources.len() {
        (Grouped::ByTarget, targets.len())
    } else {
        (Grouped::BySource, sources.len())
    };
    if rows.len() >= 2 * fewest { by } else { Grouped::Not }
}

/// How a query finds one end of an edge: by an index lookup of its key, or by its internal
/// id (a seek, a small part of a lookup's cost).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Find {
    Key,
    Id,
}

/// The upserts of one group of edges (source label, type, target label), created (`new`) or
/// merged. Edges with an end of known internal id ([`NetChanges::ids`]) are sent grouped by
/// their other end, that end looked up once and each known end sought by id (an event's
/// references to entities the graph had: the event's key once, the entities by id); edges
/// with both ends known are grouped by source, both sought. The rest, both ends by key, as
/// one row per edge or one per shared end ([`grouping`]). How edges are grouped changes the
/// order in which they are created, which no read sees (every read orders a node's edges by
/// their keys).
fn edge_upserts(
    out: &mut Vec<Write>,
    (from, ty, to): (&str, &str, &str),
    new: bool,
    rows: Vec<EdgeRow<'_>>,
) -> Result<(), StoreError> {
    let (from, ty, to) = (name(from, "label")?, name(ty, "edge type")?, name(to, "label")?);
    let write = |q: &str, props: &str| {
        if new {
            format!("CREATE (a)-[:{ty} {{q: {q}, props: {props}}}]->(b)")
        } else {
            format!("MERGE (a)-[e:{ty} {{q: {q}}}]->(b) SET e.props = {props}")
        }
    };
    let ends = Ends { from: &from, to: &to };
    let mut by_key = Vec::new();
    let mut seek_to = Vec::new();
    let mut seek_from = Vec::new();
    let mut seek_both = Vec::new();
    for r in rows {
        match (r.from_id, r.to_id) {
            (None, None) => by_key.push(r),
            (None, Some(_)) => seek_to.push(r),
            (Some(_), None) => seek_from.push(r),
            (Some(_), Some(_)) => seek_both.push(r),
        }
    }
    grouped(out, &ends, (true, Find::Key, Find::Id), seek_to, &write);
    grouped(out, &ends, (false, Find::Key, Find::Id), seek_from, &write);
    grouped(out, &ends, (true, Find::Id, Find::Id), seek_both, &write);
    match grouping(&by_key) {
        Grouped::Not => {
            let rows = by_key
                .into_iter()
                .map(|r| list(vec![s(r.from), s(r.to), s(r.q), FalkorValue::String(r.props)]))
                .collect();
            let ends = format!("MATCH (a:{from} {{id: r[0]}}), (b:{to} {{id: r[1]}})");
            unwind(out, &format!("{ends} {}", write("r[2]", "r[3]")), rows);
        }
        Grouped::BySource => grouped(out, &ends, (true, Find::Key, Find::Key), by_key, &write),
        Grouped::ByTarget => grouped(out, &ends, (false, Find::Key, Find::Key), by_key, &write),
    }
    Ok(())
}

/// The quoted labels of a group's source (`a`) and target (`b`).
struct Ends<'a> {
    from: &'a str,
    to: &'a str,
}

/// One row per shared end with its edges: by source (`by_source`) or by target, the shared
/// end and the other end each found as `find` says. Edges of one shared end keep their order.
fn grouped(
    out: &mut Vec<Write>,
    ends: &Ends<'_>,
    (by_source, shared_find, other_find): (bool, Find, Find),
    rows: Vec<EdgeRow<'_>>,
    write: &dyn Fn(&str, &str) -> String,
) {
    if rows.is_empty() {
        return;
    }
    let end = |id: Option<i64>, key: &str, find: Find| match (find, id) {
        (Find::Id, Some(id)) => int(id),
        _ => s(key),
    };
    // Rows of one shared end, in the order their first edge comes.
    let mut order: Vec<(&str, FalkorValue)> = Vec::new();
    let mut groups: BTreeMap<&str, Vec<FalkorValue>> = BTreeMap::new();
    for r in rows {
        let ((shared, shared_id), (other, other_id)) = if by_source {
            ((r.from, r.from_id), (r.to, r.to_id))
        } else {
            ((r.to, r.to_id), (r.from, r.from_id))
        };
        let group = groups.entry(shared).or_insert_with(|| {
            order.push((shared, end(shared_id, shared, shared_find)));
            Vec::new()
        });
        group.push(list(vec![
            end(other_id, other, other_find),
            s(r.q),
            FalkorValue::String(r.props),
        ]));
    }
    let rows = order
        .into_iter()
        .map(|(key, value)| list(vec![value, list(groups.remove(key).unwrap_or_default())]))
        .collect();
    let (first, second) = if by_source {
        (("a", ends.from), ("b", ends.to))
    } else {
        (("b", ends.to), ("a", ends.from))
    };
    // A seek needs the id as a plain variable: FalkorDB plans `id(n) = r[0]` as a scan of
    // every node, `id(n) = i` as a seek.
    let first_match = match shared_find {
        Find::Key => format!("MATCH ({}:{} {{id: r[0]}})", first.0, first.1),
        Find::Id => format!("WITH r, r[0] AS i MATCH ({}) WHERE id({}) = i", first.0, first.0),
    };
    let second_match = match other_find {
        Find::Key => format!("UNWIND r[1] AS x MATCH ({}:{} {{id: x[0]}})", second.0, second.1),
        Find::Id => format!(
            "UNWIND r[1] AS x WITH {}, x, x[0] AS j MATCH ({}) WHERE id({}) = j",
            first.0, second.0, second.0
        ),
    };
    let body = format!("{first_match} {second_match} {}", write("x[1]", "x[2]"));
    unwind(out, &body, rows);
}

/// The pattern that creates a node of `label` from an `UNWIND` row `r` as [`merged_writes`] writes it
/// (id, props, seq, trace, and an entity's name fifth), bound to `var`. A null `trace` sets no
/// property.
pub(super) fn created_node(var: &str, label: &str) -> Result<String, StoreError> {
    let quoted = name(label, "label")?;
    let named = if label == NAMED { ", name: r[4]" } else { "" };
    Ok(format!("({var}:{quoted} {{id: r[0], props: r[1], seq: r[2], trace: r[3]{named}}})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(from: &'a str, to: &'a str) -> EdgeRow<'a> {
        EdgeRow { from, to, from_id: None, to_id: None, q: "", props: "{}".to_owned() }
    }

    #[test]
    fn edges_are_grouped_by_the_end_they_share_only_when_it_saves_lookups() {
        // An event's references: one source, three targets.
        let fan_out = [row("e1", "a"), row("e1", "b"), row("e1", "c")];
        assert!(grouping(&fan_out) == Grouped::BySource);
        // A page's references to one busy entity: the target is shared.
        let fan_in = [row("e1", "a"), row("e2", "a"), row("e3", "a"), row("e3", "b")];
        assert!(grouping(&fan_in) == Grouped::ByTarget);
        // A session's order: every edge its own source and target.
        let chain = [row("e2", "e1"), row("e3", "e2"), row("e4", "e3")];
        assert!(grouping(&chain) == Grouped::Not);
        assert!(grouping(&[row("e1", "a")]) == Grouped::Not);
    }

    #[test]
    fn grouped_rows_carry_every_edge_once_under_its_shared_end() {
        let mut out = Vec::new();
        let rows = vec![row("e1", "a"), row("e2", "a"), row("e3", "a"), row("e3", "b")];
        edge_upserts(&mut out, ("Event", "REFERENCES", "Entity"), true, rows).unwrap();
        assert_eq!(out.len(), 1);
        assert!(out[0].query.starts_with("UNWIND $rows AS r MATCH (b:`Entity` {id: r[0]})"));
        let FalkorValue::Array(groups) = &out[0].params[0].1 else { panic!("rows are a list") };
        let edges: Vec<String> = groups
            .iter()
            .flat_map(|g| {
                let FalkorValue::Array(g) = g else { panic!("a group is a list") };
                let (FalkorValue::String(to), FalkorValue::Array(edges)) = (&g[0], &g[1]) else {
                    panic!("a group is its end and its edges")
                };
                edges.iter().map(move |e| {
                    let FalkorValue::Array(e) = e else { panic!("an edge is a list") };
                    let FalkorValue::String(from) = &e[0] else { panic!("an id is a string") };
                    format!("{from}->{to}")
                })
            })
            .collect();
        assert_eq!(edges, ["e1->a", "e2->a", "e3->a", "e3->b"]);
    }

    #[test]
    fn edges_to_nodes_of_known_id_are_grouped_by_their_other_end_and_sought_by_id() {
        let known = |from, to, from_id, to_id| EdgeRow { from_id, to_id, ..row(from, to) };
        let rows = vec![
            // An event's references to entities the graph had: the event looked up once.
            known("e1", "a", None, Some(7)),
            known("e1", "b", None, Some(8)),
            // An edge from a node the graph had to a new one: the new one looked up.
            known("e0", "e2", Some(3), None),
            // Both ends known: both sought.
            known("e0", "a", Some(3), Some(7)),
            // Neither known: as before.
            row("e2", "e1"),
        ];
        let mut out = Vec::new();
        edge_upserts(&mut out, ("Event", "REFERENCES", "Entity"), true, rows).unwrap();
        let queries: Vec<&str> = out.iter().map(|w| w.query.as_str()).collect();
        assert_eq!(
            queries,
            [
                "UNWIND $rows AS r MATCH (a:`Event` {id: r[0]}) UNWIND r[1] AS x \
                 WITH a, x, x[0] AS j MATCH (b) WHERE id(b) = j \
                 CREATE (a)-[:`REFERENCES` {q: x[1], props: x[2]}]->(b)",
                "UNWIND $rows AS r MATCH (b:`Entity` {id: r[0]}) UNWIND r[1] AS x \
                 WITH b, x, x[0] AS j MATCH (a) WHERE id(a) = j \
                 CREATE (a)-[:`REFERENCES` {q: x[1], props: x[2]}]->(b)",
                "UNWIND $rows AS r WITH r, r[0] AS i MATCH (a) WHERE id(a) = i UNWIND r[1] AS x \
                 WITH a, x, x[0] AS j MATCH (b) WHERE id(b) = j \
                 CREATE (a)-[:`REFERENCES` {q: x[1], props: x[2]}]->(b)",
                "UNWIND $rows AS r MATCH (a:`Event` {id: r[0]}), (b:`Entity` {id: r[1]}) \
                 CREATE (a)-[:`REFERENCES` {q: r[2], props: r[3]}]->(b)",
            ]
        );
        let FalkorValue::Array(first) = &out[0].params[0].1 else { panic!("rows are a list") };
        assert_eq!(first.len(), 1, "one row for the shared event");
        let FalkorValue::Array(group) = &first[0] else { panic!("a group is a list") };
        let FalkorValue::Array(edges) = &group[1] else { panic!("a group's edges are a list") };
        let ids: Vec<&FalkorValue> = edges
            .iter()
            .map(|e| {
                let FalkorValue::Array(e) = e else { panic!("an edge is a list") };
                &e[0]
            })
            .collect();
        assert_eq!(ids, [&FalkorValue::I64(7), &FalkorValue::I64(8)]);
    }
}
