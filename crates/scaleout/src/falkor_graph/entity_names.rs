//! Entities looked up by name: every Entity node holds its id's name part ([`name_part`]) as
//! an indexed property `name`, so recall's
//! question of which candidate entity ids exist (the question's word runs, each under every
//! entity type: hundreds of ids) is sent as its distinct names, a few dozen, and the ids found
//! are filtered to the candidates, in their order: the answer of the id lookup, with a tenth of
//! its parameter text.
//!
//! A graph folded before the property existed has entities without it. The graph's layout
//! version says which it is: `ctxgraph:{NAME}:layout` is set to [`NAMED_LAYOUT`] by the
//! transaction of a fold's first page (the graph is empty before it, so every entity is folded
//! with its name) and by a reset of the projection (which empties the graph); a graph without
//! it is read by ids, as before, until `reproject` rebuilds it. A connection learns the layout
//! when it connects and with every read view's state keys, and keeps it once learnt; a
//! connection a store opens for its pool later starts with what the store's others learnt
//! (`ScaleOutStore::take`), since its first read is planned before its view's state keys arrive.

use ctxgraph_store::{ManyAnswer, StoreError};
use falkordb::FalkorValue;

use super::together::{Plan, Query};
use super::{FalkorGraph, NAMED, s, text_at};

/// The layout version of a graph whose Entity nodes all hold their `name`.
pub(crate) const NAMED_LAYOUT: u64 = 2;

/// What an entity id holds after its type: the normalised name that
/// [`ctxgraph_ontology::entity_id`] puts after the first `:` (the whole id when it has none).
/// A function of the id alone, so equal ids have equal name parts whatever a type's own
/// characters, and a lookup by name parts filtered to the ids asked finds every one of them.
pub(crate) fn name_part(id: &str) -> &str {
    id.split_once(':').map_or(id, |(_, name)| name)
}

impl FalkorGraph {
    /// The command that records this graph's layout as [`NAMED_LAYOUT`], for a transaction
    /// that leaves every Entity node named (a fold from an empty graph, a reset).
    pub(crate) fn named_layout_cmd(&self) -> redis::Cmd {
        let mut cmd = redis::cmd("SET");
        cmd.arg(&self.layout).arg(NAMED_LAYOUT);
        cmd
    }

    /// Take note of the layout version read from the store (`None`: unset, an older layout).
    pub(crate) fn note_layout(&self, version: Option<u64>) {
        if version.is_some_and(|v| v >= NAMED_LAYOUT) {
            self.entity_names.set(true);
        }
    }

    /// The layout key, read with the state keys and the layout check.
    pub(crate) fn layout_key(&self) -> &str {
        &self.layout
    }

    /// Whether entities are looked up by name here (the graph was seen in the named layout).
    pub(crate) fn names_entities(&self) -> bool {
        self.entity_names.get()
    }

    /// [`FalkorGraph::plan_existing_ids`], entities by name when the layout allows.
    pub(super) fn plan_existing<'a>(
        &self,
        label: &str,
        ids: &'a [String],
    ) -> Result<Plan<'a>, StoreError> {
        if label == NAMED && self.names_entities() {
            return Ok(Self::plan_entity_ids_by_name(ids));
        }
        Self::plan_existing_ids(label, ids)
    }

    /// Which of the entity `ids` exist, in the order given (an id given twice answers
    /// twice), looked up by their distinct name parts through the `name` index: the answer
    /// of [`FalkorGraph::plan_existing_ids`] for the label Entity on a graph in the named
    /// layout.
    pub(super) fn plan_entity_ids_by_name(ids: &[String]) -> Plan<'_> {
        if ids.is_empty() {
            return Plan::new(Vec::new(), |_, _| Ok(ManyAnswer::Ids(Vec::new())));
        }
        let mut names: Vec<&str> = ids.iter().map(|id| name_part(id)).collect();
        names.sort_unstable();
        names.dedup();
        let query = Query {
            text: format!("MATCH (n:{NAMED}) WHERE n.name IN $names RETURN n.id"),
            params: vec![(
                "names".to_owned(),
                FalkorValue::Array(names.into_iter().map(s).collect()),
            )],
        };
        Plan::new(vec![query], move |g, replies| {
            let found: std::collections::BTreeSet<String> = replies
                .iter()
                .flatten()
                .map(|r| text_at(r, 0, &g.url))
                .collect::<Result<_, StoreError>>()?;
            Ok(ManyAnswer::Ids(ids.iter().filter(|id| found.contains(*id)).cloned().collect()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::name_part;
    use ctxgraph_ontology::entity_id;

    #[test]
    fn the_name_part_is_what_follows_the_type() {
        assert_eq!(name_part(&entity_id("tool", "Read File")), "read file");
        assert_eq!(name_part(&entity_id("resource", "src/a:b.rs")), "src/a:b.rs");
        assert_eq!(name_part(&entity_id("user", "")), "");
        assert_eq!(name_part("no-type"), "no-type");
    }
}
