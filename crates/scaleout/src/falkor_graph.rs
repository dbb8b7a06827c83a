//! The projected graph on FalkorDB: nodes, edges, neighbours by type and direction, session
//! order and the projection checkpoint, every value a query parameter.
//!
//! # Layout (one graph per store, named `ctxgraph:{NAME}:graph`)
//!
//! ```text
//! (:Label {id, props, seq[, trace]})   a node; props is its properties as JSON text, seq its
//!                                       creation number, trace an event's `trace_id`
//! (:Entity {id, props, seq, name})     an entity also holds its id's name part (indexed)
//! (a)-[:TYPE {q, props}]->(b)           an edge; q its qualifier (the fourth part of its key)
//! (:_SessionSlot {session, at, event})  one event's place in its session's order
//! (:_Pending {wait_label, wait_id, from_label, from_id, edge_type, to_label, to_id, q, props})
//!                                       an edge waiting for its endpoint `wait` to exist
//! ctxgraph:{NAME}:projected_through    the projection checkpoint: a plain key beside the
//!                                       graph, so a fold's commit can watch it (see `batch.rs`)
//! ctxgraph:{NAME}:node_seq             the last creation number given to a node
//! ctxgraph:{NAME}:graph_generation     a counter every committed change of the graph bumps
//! ctxgraph:{NAME}:generation_epoch     a number set by the first such commit of the store's life
//!                                       (the clock's nanoseconds), which readers add to the
//!                                       generation: a store dropped and made again, whose
//!                                       counter starts over, never shows a reader's cache a
//!                                       generation of its earlier life
//! ctxgraph:{NAME}:settings             store settings (a hash)
//! ctxgraph:{NAME}:enriched_through     the stage-2 checkpoint (stage 2's other keys: `stage2.rs`)
//! ctxgraph:{NAME}:layout               2 when every Entity node has its `name` (`entity_names.rs`)
//! ```
//!
//! A node's creation number (`seq`) is what the embedded store's integer node id is: it grows
//! with every node created (a node deleted and created again gets a new one), and a fold gives
//! them in the order the projection creates nodes, which is the embedded store's order too. The
//! reads that the embedded store answers in node-id order (a node's edges by the far endpoint,
//! a trace's events, edges by type) order by it, so both backends give the same lists.
//!
//! Cypher cannot take a label or a relationship type as a parameter, so those are checked to be
//! plain identifiers (`[A-Za-z][A-Za-z0-9_]*`, as the schema modules name them) and written in
//! backticks; everything else (ids, qualifiers, properties, session ids, times) is a parameter.
//! Every node label of the schema gets an index and a unique constraint on `id`; the internal
//! labels start with `_`, which no schema label does.
//!
//! Properties are stored as JSON text because FalkorDB property values cannot be maps, and a
//! node's properties are arbitrary JSON; the projection reads them whole, by key.

use std::cell::RefCell;
use std::collections::BTreeSet;

use ctxgraph_ontology::Schema;
use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey};
use ctxgraph_store::{GraphCounts, ProjectionGraph, SessionSlot, StoreError, props_from, props_to};
use falkordb::{
    EntityType, FalkorClientBuilder, FalkorConnectionInfo, FalkorSyncClient, FalkorValue, SyncGraph,
};

use crate::reply::{TIMEOUT, connect, failure};
use crate::url::StoreUrl;

mod archive;
mod born;
mod bulk;
mod entity_names;
mod groups_many;
mod handover;
mod many;
mod merged;
mod native_index;
mod native_text;
mod read;
mod reset;
mod stage2;
mod stage3;
mod state;
mod together;
mod wire;
pub(crate) use bulk::{NetChanges, merged_writes};
pub(crate) use entity_names::NAMED_LAYOUT;
pub use stage2::Stage2Write;
pub use stage3::ConsolidateWrite;

/// The largest `LIMIT` sent (see [`count`]).
const MAX_LIMIT: usize = i32::MAX as usize;

/// The label of session-order entries.
const SLOT: &str = "_SessionSlot";
/// The label of edges waiting for an endpoint.
const PENDING: &str = "_Pending";
/// The label whose nodes carry their `trace_id` as a property of its own (`trace`).
const TRACED: &str = "Event";
/// The label whose nodes carry their id's name part as a property of its own (`name`).
const NAMED: &str = "Entity";

/// The properties of a parked edge that make its key, in the embedded store's key order.
const PENDING_KEY: &str = "wait_label: $wait_label, wait_id: $wait_id, from_label: $from_label, \
     from_id: $from_id, edge_type: $edge_type, to_label: $to_label, to_id: $to_id, q: $q";

/// One store's graph on a FalkorDB server.
pub struct FalkorGraph {
    url: StoreUrl,
    name: String,
    // Kept for the life of the graph handle: the handle's connections belong to it.
    _client: FalkorSyncClient,
    graph: RefCell<SyncGraph>,
    /// The checkpoint's key.
    checkpoint: String,
    /// The key of the last node creation number.
    seq: String,
    /// The key of the graph generation counter.
    generation: String,
    /// The key of the number that tells one life of the store's generation counter from
    /// another ([`FalkorGraph::push_generation`]).
    epoch: String,
    /// The key of the settings hash.
    settings: String,
    /// The key of the stage-2 checkpoint.
    enriched: String,
    /// The key of the graph's layout version (`entity_names.rs`).
    layout: String,
    /// Whether this graph was seen with every Entity node named (`entity_names.rs`): once
    /// seen, it stays so (only a reset empties the graph, and it keeps the layout).
    entity_names: std::cell::Cell<bool>,
    /// A plain connection, for constraints, the checkpoint and transactions.
    raw: RefCell<redis::Connection>,
    /// Node labels that already have their index and constraint.
    indexed: BTreeSet<String>,
    /// A read view's memo of the state keys (`state.rs`); `None` outside a view.
    state: RefCell<Option<state::StateMemo>>,
    /// The connection read queries go on (`wire.rs`).
    wire: RefCell<wire::Wire>,
}

impl std::fmt::Debug for FalkorGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FalkorGraph").field("graph", &self.name).finish_non_exhaustive()
    }
}

/// A query's parameters: names and values.
type Params<'a> = &'a [(&'a str, FalkorValue)];

fn s(v: &str) -> FalkorValue {
    FalkorValue::String(v.to_owned())
}

fn int(v: i64) -> FalkorValue {
    FalkorValue::I64(v)
}

impl FalkorGraph {
    /// Connect to the server of `url` and use its store's graph, creating the index and unique
    /// constraint on `id` for every node label of `schema` (and the bookkeeping labels) that
    /// lacks them.
    pub fn connect(url: &StoreUrl, schema: &Schema) -> Result<FalkorGraph, StoreError> {
        let mut g = FalkorGraph::connect_read(url)?;
        g.ensure_schema(schema)?;
        Ok(g)
    }

    /// Connect to the server of `url` and use its store's graph as it is, creating nothing: a
    /// reader's connection (the writers, [`FalkorGraph::connect`], create the indexes).
    pub fn connect_read(url: &StoreUrl) -> Result<FalkorGraph, StoreError> {
        let info: FalkorConnectionInfo = (url.host(), url.port())
            .try_into()
            .map_err(|e: falkordb::FalkorDBError| remote(url, &e))?;
        let client = FalkorClientBuilder::new()
            .with_connection_info(info)
            .with_num_connections(std::num::NonZeroU8::MIN)
            .with_connect_timeout(Some(TIMEOUT))
            .with_response_timeout(Some(TIMEOUT))
            .build()
            .map_err(|e| remote(url, &e))?;
        let name = format!("{}graph", url.key_prefix());
        let graph = client.select_graph(&name);
        let raw = connect(url).map_err(|e| raw_remote(url, &e))?;
        let prefix = url.key_prefix();
        Ok(FalkorGraph {
            url: url.clone(),
            name,
            _client: client,
            graph: RefCell::new(graph),
            raw: RefCell::new(raw),
            checkpoint: format!("{prefix}projected_through"),
            seq: format!("{prefix}node_seq"),
            generation: format!("{prefix}graph_generation"),
            epoch: format!("{prefix}generation_epoch"),
            settings: format!("{prefix}settings"),
            enriched: format!("{prefix}enriched_through"),
            layout: format!("{prefix}layout"),
            entity_names: std::cell::Cell::new(false),
            indexed: BTreeSet::new(),
            state: RefCell::new(None),
            wire: RefCell::new(wire::Wire::new(url.host(), url.port())),
        })
    }

    /// The graph's name on the server.
    pub fn graph_name(&self) -> &str {
        &self.name
    }

    /// Create the index and unique constraint on `id` of every node label of `schema` that
    /// lacks them (a schema module adds labels: call again after one).
    pub fn ensure_schema(&mut self, schema: &Schema) -> Result<(), StoreError> {
        let mut labels: Vec<&str> = schema.node_types().keys().map(String::as_str).collect();
        labels.extend([SLOT, PENDING]);
        let missing: Vec<&str> =
            labels.into_iter().filter(|l| !self.indexed.contains(*l)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        // (label, field) of every node index.
        let fields: BTreeSet<(String, String)> = self
            .graph
            .borrow_mut()
            .list_indices()
            .map_err(|e| self.fail(&e))?
            .data
            .into_iter()
            .filter(|i| i.entity_type == EntityType::Node)
            .flat_map(|i| {
                let label = i.index_label;
                i.fields.into_iter().map(move |f| (label.clone(), f))
            })
            .collect();
        let indexes: BTreeSet<String> = fields.iter().map(|(l, _)| l.clone()).collect();
        let constrained: BTreeSet<String> = self
            .graph
            .borrow_mut()
            .list_constraints()
            .map_err(|e| self.fail(&e))?
            .data
            .into_iter()
            .filter(|c| c.entity_type == EntityType::Node && c.properties == ["id"])
            .map(|c| c.label)
            .collect();
        for label in missing {
            let quoted = name(label, "label")?;
            if label == SLOT || label == PENDING {
                // Slots are found by session, parked edges by the node they wait for; neither
                // has an id.
                let field = if label == SLOT { "session" } else { "wait_id" };
                if !indexes.contains(label) {
                    unless_raced(
                        self.run(&format!("CREATE INDEX FOR (n:{quoted}) ON (n.{field})"), &[]),
                    )?;
                }
            } else if !constrained.contains(label) {
                if !indexes.contains(label) {
                    unless_raced(
                        self.run(&format!("CREATE INDEX FOR (n:{quoted}) ON (n.id)"), &[]),
                    )?;
                }
                // The constraint needs the index first; FalkorDB builds it in the background.
                unless_raced(self.create_constraint(label))?;
            }
            // A trace's events are found by their trace id (`GraphReader::trace_events`),
            // entities by their name (`entity_names.rs`).
            let own = match label {
                TRACED => Some("trace"),
                NAMED => Some("name"),
                _ => None,
            };
            if let Some(field) = own
                && !fields.contains(&(label.to_owned(), field.to_owned()))
            {
                unless_raced(
                    self.run(&format!("CREATE INDEX FOR (n:{quoted}) ON (n.{field})"), &[]),
                )?;
            }
            self.indexed.insert(label.to_owned());
        }
        Ok(())
    }

    /// `GRAPH.CONSTRAINT CREATE … UNIQUE NODE label PROPERTIES 1 id` over a plain connection.
    fn create_constraint(&self, label: &str) -> Result<(), StoreError> {
        redis::cmd("GRAPH.CONSTRAINT")
            .arg("CREATE")
            .arg(&self.name)
            .arg("UNIQUE")
            .arg("NODE")
            .arg(label)
            .arg("PROPERTIES")
            .arg(1)
            .arg("id")
            .query::<redis::Value>(&mut *self.raw.borrow_mut())
            .map(drop)
            .map_err(|e| raw_remote(&self.url, &e))
    }

    /// Run one query with its parameters and return its rows.
    fn run(&self, query: &str, params: Params<'_>) -> Result<Vec<Vec<FalkorValue>>, StoreError> {
        self.execute_in_crate(query, params, false)
    }

    /// Run one read-only query (`GRAPH.RO_QUERY`: it cannot write, and a read of a store
    /// whose graph does not exist yet creates none) and return its rows; no graph, no rows. It
    /// goes on the graph's own connection (`wire.rs`), or through the client crate when its
    /// reply holds a kind of value that connection's reader leaves to the crate.
    fn run_read(
        &self,
        query: &str,
        params: Params<'_>,
    ) -> Result<Vec<Vec<FalkorValue>>, StoreError> {
        let text = wire::query_text(query, params.iter().map(|(k, v)| (*k, v)))
            .map_err(|e| self.fail(&e))?;
        match self.wire_reads(&[text])? {
            Some(mut rows) => Ok(rows.pop().unwrap_or_default()),
            None => self.execute_in_crate(query, params, true),
        }
    }

    /// One query through the client crate: every write, and a read whose reply holds a kind
    /// of value the graph's own reader leaves to the crate (`wire.rs`).
    fn execute_in_crate(
        &self,
        query: &str,
        params: Params<'_>,
        read_only: bool,
    ) -> Result<Vec<Vec<FalkorValue>>, StoreError> {
        let mut graph = self.graph.borrow_mut();
        let mut q = if read_only { graph.ro_query(query) } else { graph.query(query) };
        for (k, v) in params {
            q = q.with_param(k, v.clone());
        }
        let result = match q.execute() {
            Ok(result) => result,
            Err(e) if read_only && no_graph(&e.to_string()) => return Ok(Vec::new()),
            Err(e) => return Err(remote(&self.url, &e)),
        };
        result
            .data
            .map(|row| row.map(falkordb::Row::into_values).map_err(|e| remote(&self.url, &e)))
            .collect()
    }

    /// Watch the checkpoint and the node creation counter on the plain connection and read
    /// them: the start of a batch ([`FalkorGraph::commit_watched`] applies the batch only if
    /// nobody moved them since). Returns `(checkpoint, last creation number)`; a graph
    /// folded by a build that numbered no nodes is refused (see `check_layout`).
    pub(crate) fn watch_checkpoint(&self) -> Result<(u64, i64), StoreError> {
        self.watch_checkpoint_meanwhile(&mut || {})
    }

    /// Forget a watch (a batch dropped without its commit).
    pub(crate) fn unwatch(&self) {
        if let Ok(mut raw) = self.raw.try_borrow_mut() {
            // A failure leaves a watch that only makes a later commit retry.
            let _ = redis::cmd("UNWATCH").query::<redis::Value>(&mut *raw);
        }
    }

    /// Run `writes` and then the plain commands `extra` (the stage-2 data of deleted nodes
    /// dropped), move the checkpoint to `through`, the node creation counter to `last_seq`
    /// and the graph generation on, as one Redis transaction (`MULTI` … `EXEC`) if neither the
    /// checkpoint nor the counter has moved since [`FalkorGraph::watch_checkpoint`]; whether
    /// it ran. The server applies the block with no other command between its commands and
    /// writes it to its append-only file as one unit, so a crash of this process before `EXEC`
    /// leaves none of it applied, and of two folds of the same records only the first commits.
    /// (A query that fails inside the block does not undo the others: Redis transactions do not
    /// roll back; the error is returned.)
    pub(crate) fn commit_watched(
        &self,
        writes: &[Write],
        extra: Vec<redis::Cmd>,
        through: u64,
        last_seq: i64,
    ) -> Result<bool, StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        self.push_page(&mut pipe, writes, extra, through, last_seq)?;
        self.exec_watched(&pipe, "a query of a batch")
    }

    /// The commands of a batch's transaction, without its `MULTI`/`EXEC`: the checkpoint and
    /// the node counter moved, the generation counted, the graph writes, then `extra`.
    fn push_page(
        &self,
        pipe: &mut redis::Pipeline,
        writes: &[Write],
        extra: Vec<redis::Cmd>,
        through: u64,
        last_seq: i64,
    ) -> Result<(), StoreError> {
        pipe.cmd("SET").arg(&self.checkpoint).arg(through);
        pipe.cmd("SET").arg(&self.seq).arg(last_seq);
        self.push_generation(pipe);
        for w in writes {
            pipe.cmd("GRAPH.QUERY").arg(&self.name).arg(w.with_preamble()?);
        }
        for cmd in extra {
            pipe.add_command(cmd);
        }
        Ok(())
    }

    /// Send a watched `MULTI`/`EXEC` pipeline: `false` when a watched key moved and nothing
    /// ran; an error naming `what` when one of its commands failed (Redis does not roll the
    /// others back).
    pub(crate) fn exec_watched(
        &self,
        pipe: &redis::Pipeline,
        what: &str,
    ) -> Result<bool, StoreError> {
        let reply: redis::Value =
            pipe.query(&mut *self.raw.borrow_mut()).map_err(|e| raw_remote(&self.url, &e))?;
        self.exec_outcome(reply, what)
    }

    /// What an `EXEC`'s `reply` says: `false` when a watched key moved and nothing ran; an
    /// error naming `what` when the transaction or one of its commands failed.
    pub(crate) fn exec_outcome(&self, reply: redis::Value, what: &str) -> Result<bool, StoreError> {
        // Nil: a watched key moved and nothing ran.
        if reply == redis::Value::Nil {
            return Ok(false);
        }
        if let redis::Value::ServerError(e) = reply {
            return Err(self.failed(what, &e));
        }
        let redis::Value::Array(replies) = reply else {
            return Err(StoreError::Corruption(format!(
                "{}: a transaction's reply is not a list",
                self.url
            )));
        };
        for reply in replies {
            if let redis::Value::ServerError(e) = reply {
                return Err(self.failed(what, &e));
            }
        }
        Ok(true)
    }

    /// Take the next node creation number (a write outside a batch).
    fn next_seq(&self) -> Result<i64, StoreError> {
        redis::cmd("INCR")
            .arg(&self.seq)
            .query(&mut *self.raw.borrow_mut())
            .map_err(|e| raw_remote(&self.url, &e))
    }

    /// Move the graph generation on (a write outside a batch).
    fn bump_generation(&self) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        self.push_generation(&mut pipe);
        pipe.query::<redis::Value>(&mut *self.raw.borrow_mut())
            .map(drop)
            .map_err(|e| raw_remote(&self.url, &e))
    }

    /// The commands that move the graph generation on, for a transaction that changes the
    /// graph: the counter counted and, if this life of the store has none yet, its epoch set
    /// (the clock's nanoseconds: a store dropped and made again gets another one).
    pub(crate) fn push_generation(&self, pipe: &mut redis::Pipeline) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        pipe.cmd("SET").arg(&self.epoch).arg(now).arg("NX");
        pipe.cmd("INCR").arg(&self.generation);
    }

    /// The graph generation a reader sees: the counter offset by its epoch (see
    /// [`FalkorGraph::push_generation`]), so two lives of a store do not give one value (their
    /// epochs lie further apart in nanoseconds than a counter climbs), and each commit still
    /// moves it by one.
    pub(crate) fn generation_seen(&self) -> Result<u64, StoreError> {
        let epoch = self.counter(&self.epoch)?;
        Ok(self.counter(&self.generation)?.wrapping_add(epoch))
    }

    /// The rows of each of the read queries `texts` (parameters included, see
    /// [`wire::query_text`]) through the graph's own connection, sent together; `None` when a
    /// reply holds a kind of value left to the client crate.
    fn wire_reads(&self, texts: &[String]) -> Result<Option<Vec<together::Rows>>, StoreError> {
        let answers = self
            .wire
            .borrow_mut()
            .ro_queries(&self.name, texts)
            .map_err(|e| failure("falkordb", &self.url, &e))?;
        let mut out = Vec::with_capacity(answers.len());
        for answer in answers {
            match answer {
                wire::Answer::Rows(rows) => out.push(rows),
                wire::Answer::Refused(e) if no_graph(&e) => out.push(Vec::new()),
                wire::Answer::Refused(e) => return Err(failure("falkordb", &self.url, &e)),
                wire::Answer::Unsupported => return Ok(None),
            }
        }
        Ok(Some(out))
    }

    fn fail(&self, e: &falkordb::FalkorDBError) -> StoreError {
        remote(&self.url, e)
    }

    /// Which of `ids` are ids of nodes of `label`, in the order given.
    pub fn existing_ids(&self, label: &str, ids: &[String]) -> Result<Vec<String>, StoreError> {
        self.run_plan(self.plan_existing(label, ids)?)?.into_ids()
    }

    /// Nodes of a label in id order, after `after` (exclusive), at most `limit`.
    pub fn nodes_by_label(
        &self,
        label: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>, StoreError> {
        let quoted = name(label, "label")?;
        let rows = self.run_read(
            &format!(
                "MATCH (n:{quoted}) WHERE {} > $after RETURN n.id, n.props ORDER BY n.id LIMIT $limit",
                unindexed("n.id")
            ),
            &[("after", s(after.unwrap_or(""))), ("limit", int(count(limit)))],
        )?;
        rows.iter()
            .map(|r| {
                Ok(Node {
                    key: NodeKey { label: label.to_owned(), id: text_at(r, 0, &self.url)? },
                    props: props_from(&text_at(r, 1, &self.url)?)?,
                })
            })
            .collect()
    }

    fn slots(&self, query: &str, params: Params<'_>) -> Result<Vec<SessionSlot>, StoreError> {
        let rows = self.run_read(query, params)?;
        rows.iter()
            .map(|r| {
                Ok(SessionSlot {
                    at_ns: int_at(r, 0, &self.url)?,
                    event_id: text_at(r, 1, &self.url)?,
                })
            })
            .collect()
    }

    /// Session ids in order, after `after` (exclusive), at most `limit`.
    pub fn sessions(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>, StoreError> {
        let rows = self.run_read(
            &format!(
                "MATCH (x:{SLOT}) WHERE {} > $after \
                 RETURN DISTINCT x.session AS session ORDER BY session LIMIT $limit",
                unindexed("x.session")
            ),
            &[("after", s(after.unwrap_or(""))), ("limit", int(count(limit)))],
        )?;
        rows.iter().map(|r| text_at(r, 0, &self.url)).collect()
    }

    /// The last log position folded into the graph; 0 when none.
    pub fn projected_through(&self) -> Result<u64, StoreError> {
        self.counter(&self.checkpoint)
    }

    /// Move the projection checkpoint.
    pub fn set_projected_through(&mut self, position: u64) -> Result<(), StoreError> {
        redis::cmd("SET")
            .arg(&self.checkpoint)
            .arg(position)
            .query::<redis::Value>(&mut *self.raw.borrow_mut())
            .map(drop)
            .map_err(|e| raw_remote(&self.url, &e))
    }

    /// Nodes per label and edges per type, each sorted by name, and the edges waiting for an
    /// endpoint (bookkeeping entries are not counted as nodes).
    pub fn counts(&self) -> Result<GraphCounts, StoreError> {
        // One query: nodes per label (0), edges per type (1), parked edges (2; no row when
        // there are none).
        let rows = self.run_read(
            &format!(
                "MATCH (n) WITH labels(n)[0] AS name WHERE NOT name STARTS WITH '_' \
                 RETURN 0 AS k, name, count(*) AS c \
                 UNION ALL MATCH ()-[r]->() RETURN 1 AS k, type(r) AS name, count(*) AS c \
                 UNION ALL MATCH (p:{PENDING}) RETURN 2 AS k, '' AS name, count(p) AS c"
            ),
            &[],
        )?;
        let mut counts = GraphCounts::default();
        for r in &rows {
            let n = u64::try_from(int_at(r, 2, &self.url)?).unwrap_or(0);
            match int_at(r, 0, &self.url)? {
                0 => counts.nodes.push((text_at(r, 1, &self.url)?, n)),
                1 => counts.edges.push((text_at(r, 1, &self.url)?, n)),
                _ => counts.pending_edges += n,
            }
        }
        counts.nodes.sort();
        counts.edges.sort();
        Ok(counts)
    }

    /// Remove every node, edge and bookkeeping entry (the indexes and constraints stay): the
    /// start of a rebuild from the log.
    pub fn clear_graph(&mut self) -> Result<(), StoreError> {
        self.run("MATCH (n) DETACH DELETE n", &[])?;
        self.bump_generation()?;
        self.set_projected_through(0)
    }
}

/// `created` as success when it failed only because another connection (a worker, `stats`)
/// created the same index or constraint between this one's listing and its creation. FalkorDB
/// answers that with a message, not a code: "Attribute 'id' is already indexed", "Constraint
/// … already exists".
fn unless_raced<T>(created: Result<T, StoreError>) -> Result<(), StoreError> {
    match created {
        Ok(_) => Ok(()),
        Err(StoreError::Remote { detail, .. })
            if detail.contains("already indexed") || detail.contains("already exists") =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

impl ProjectionGraph for FalkorGraph {
    fn put_node(&mut self, node: &Node) -> Result<(), StoreError> {
        // A creation number is taken whether or not the node is new: numbers only need to grow.
        let seq = self.next_seq()?;
        let w = Write::put_node(node, seq)?;
        self.run(&w.query, &w.params)?;
        self.bump_generation()
    }

    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        let label = name(&key.label, "label")?;
        let rows = self.run_read(
            &format!("MATCH (n:{label} {{id: $id}}) RETURN n.props"),
            &[("id", s(&key.id))],
        )?;
        let Some(row) = rows.into_iter().next() else { return Ok(None) };
        let props = props_from(&text_at(&row, 0, &self.url)?)?;
        Ok(Some(Node { key: key.clone(), props }))
    }

    fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        let label = name(&key.label, "label")?;
        let rows = self.run_read(
            &format!("MATCH (n:{label} {{id: $id}}) RETURN n.id LIMIT 1"),
            &[("id", s(&key.id))],
        )?;
        Ok(!rows.is_empty())
    }

    fn delete_node(&mut self, key: &NodeKey) -> Result<bool, StoreError> {
        let w = Write::delete_node(key)?;
        let rows = self.run(&w.query, &w.params)?;
        self.bump_generation()?;
        Ok(first_int(&rows, &self.url)? > 0)
    }

    fn put_edge(&mut self, edge: &Edge) -> Result<(), StoreError> {
        let k = &edge.key;
        let w = Write::put_edge(edge)?;
        let rows = self.run(&w.query, &w.params)?;
        self.bump_generation()?;
        if first_int(&rows, &self.url)? == 0 {
            let missing = if self.node_exists(&k.from)? { &k.to } else { &k.from };
            return Err(StoreError::Corruption(format!(
                "edge endpoint {missing} is not a stored node"
            )));
        }
        Ok(())
    }

    fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError> {
        let (from, to, ty) = (
            name(&key.from.label, "label")?,
            name(&key.to.label, "label")?,
            name(&key.edge_type, "edge type")?,
        );
        let rows = self.run_read(
            &format!(
                "MATCH (a:{from} {{id: $from}})-[r:{ty} {{q: $q}}]->(b:{to} {{id: $to}}) RETURN r.props"
            ),
            &[("from", s(&key.from.id)), ("to", s(&key.to.id)), ("q", s(&key.qualifier))],
        )?;
        let Some(row) = rows.into_iter().next() else { return Ok(None) };
        Ok(Some(Edge { key: key.clone(), props: props_from(&text_at(&row, 0, &self.url)?)? }))
    }

    fn delete_edge(&mut self, key: &EdgeKey) -> Result<bool, StoreError> {
        let w = Write::delete_edge(key)?;
        let rows = self.run(&w.query, &w.params)?;
        self.bump_generation()?;
        Ok(first_int(&rows, &self.url)? > 0)
    }

    fn edges_of(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, StoreError> {
        let label = name(&key.label, "label")?;
        let rel = match edge_type {
            Some(t) => format!("[r:{}]", name(t, "edge type")?),
            None => "[r]".to_owned(),
        };
        // Both directions in one query (one round trip), each side then put in key order.
        let side = |out: bool| {
            let pattern = if out { format!("-{rel}->") } else { format!("<-{rel}-") };
            format!(
                "MATCH (n:{label} {{id: $id}}){pattern}(m) \
                 RETURN {out} AS out, type(r) AS t, labels(m)[0] AS l, m.id AS m, r.q AS q, \
                 r.props AS props"
            )
        };
        let query = match direction {
            Direction::Out => side(true),
            Direction::In => side(false),
            Direction::Both => format!("{} UNION ALL {}", side(true), side(false)),
        };
        let rows = self.run_read(&query, &[("id", s(&key.id))])?;
        let (mut outgoing, mut incoming) = (Vec::new(), Vec::new());
        for r in &rows {
            let out = matches!(r.first(), Some(FalkorValue::Bool(true)));
            let other = NodeKey { label: text_at(r, 2, &self.url)?, id: text_at(r, 3, &self.url)? };
            let (from, to) = if out { (key.clone(), other) } else { (other, key.clone()) };
            let edge = Edge {
                key: EdgeKey {
                    edge_type: text_at(r, 1, &self.url)?,
                    from,
                    to,
                    qualifier: text_at(r, 4, &self.url)?,
                },
                props: props_from(&text_at(r, 5, &self.url)?)?,
            };
            if out { outgoing.push(edge) } else { incoming.push(edge) }
        }
        sort_side(&mut outgoing, true);
        sort_side(&mut incoming, false);
        outgoing.extend(incoming);
        Ok(outgoing)
    }

    fn put_session_slot(&mut self, session_id: &str, slot: &SessionSlot) -> Result<(), StoreError> {
        let w = Write::put_session_slot(session_id, slot);
        self.run(&w.query, &w.params)?;
        Ok(())
    }

    fn delete_session_slot(
        &mut self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(), StoreError> {
        let w = Write::delete_session_slot(session_id, slot);
        self.run(&w.query, &w.params)?;
        Ok(())
    }

    fn session_events(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<SessionSlot>, StoreError> {
        self.slots(
            &format!(
                "MATCH (x:{SLOT} {{session: $session}}) RETURN x.at, x.event ORDER BY x.at, x.event LIMIT $limit"
            ),
            &[("session", s(session_id)), ("limit", int(count(limit)))],
        )
    }

    fn session_tail(&self, session_id: &str) -> Result<Option<SessionSlot>, StoreError> {
        Ok(self
            .slots(
                &format!(
                    "MATCH (x:{SLOT} {{session: $session}}) RETURN x.at, x.event ORDER BY x.at DESC, x.event DESC LIMIT 1"
                ),
                &[("session", s(session_id))],
            )?
            .pop())
    }

    fn session_neighbors(
        &self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError> {
        // Both neighbours in one query: the greatest slot before and the least after.
        let rows = self.run_read(
            &format!(
                "MATCH (x:{SLOT} {{session: $session}}) \
                 WHERE x.at < $at OR (x.at = $at AND x.event < $event) \
                 RETURN false AS after, x.at AS at, x.event AS event \
                 ORDER BY at DESC, event DESC LIMIT 1 \
                 UNION ALL \
                 MATCH (x:{SLOT} {{session: $session}}) \
                 WHERE x.at > $at OR (x.at = $at AND x.event > $event) \
                 RETURN true AS after, x.at AS at, x.event AS event \
                 ORDER BY at, event LIMIT 1"
            ),
            &[("session", s(session_id)), ("at", int(slot.at_ns)), ("event", s(&slot.event_id))],
        )?;
        let (mut before, mut after) = (None, None);
        for r in &rows {
            let found = SessionSlot {
                at_ns: int_at(r, 1, &self.url)?,
                event_id: text_at(r, 2, &self.url)?,
            };
            if matches!(r.first(), Some(FalkorValue::Bool(true))) {
                after = Some(found);
            } else {
                before = Some(found);
            }
        }
        Ok((before, after))
    }

    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> Result<(), StoreError> {
        let w = Write::put_pending(waiting_for, edge)?;
        self.run(&w.query, &w.params)?;
        Ok(())
    }

    fn pending_for(&self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        let rows = self.run_read(
            &format!(
                "MATCH (p:{PENDING} {{wait_label: $label, wait_id: $id}}) RETURN {PENDING_COLUMNS}"
            ),
            &[("label", s(&key.label)), ("id", s(&key.id))],
        )?;
        let mut edges: Vec<(NodeKey, Edge)> =
            rows.iter().map(|r| pending_row(r, &self.url)).collect::<Result<_, _>>()?;
        edges.sort_by(|a, b| pending_order(&a.1.key).cmp(&pending_order(&b.1.key)));
        Ok(edges.into_iter().map(|(_, e)| e).collect())
    }

    fn take_pending(&mut self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        let edges = self.pending_for(key)?;
        if !edges.is_empty() {
            let w = Write::drop_pending(key);
            self.run(&w.query, &w.params)?;
        }
        Ok(edges)
    }

    fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, StoreError> {
        let rows = self.run_read(&format!("MATCH (p:{PENDING}) RETURN {PENDING_COLUMNS}"), &[])?;
        let mut edges: Vec<(NodeKey, Edge)> =
            rows.iter().map(|r| pending_row(r, &self.url)).collect::<Result<_, _>>()?;
        edges.sort_by(|a, b| (&a.0, pending_order(&a.1.key)).cmp(&(&b.0, pending_order(&b.1.key))));
        Ok(edges)
    }
}

/// One graph write: a query and its parameters. Run alone (`FalkorGraph`'s write methods), or
/// with others in one transaction ([`FalkorGraph::commit_watched`]; a batch's writes are
/// merged into `UNWIND` queries first, `bulk.rs`).
#[derive(Debug, Clone)]
pub(crate) struct Write {
    pub(crate) query: String,
    pub(crate) params: Vec<(&'static str, FalkorValue)>,
}

impl Write {
    /// Write `node`, created with creation number `seq` if the graph lacks it.
    pub(crate) fn put_node(node: &Node, seq: i64) -> Result<Write, StoreError> {
        let label = name(&node.key.label, "label")?;
        Ok(Write {
            query: format!(
                "MERGE (n:{label} {{id: $id}}) ON CREATE SET n.seq = $seq \
                 SET n.props = $props, n.trace = $trace, n.name = $name"
            ),
            params: vec![
                ("id", s(&node.key.id)),
                ("seq", int(seq)),
                ("props", s(&props_to(&node.props)?)),
                ("trace", trace_of(node)),
                ("name", name_of(&node.key)),
            ],
        })
    }

    pub(crate) fn delete_node(key: &NodeKey) -> Result<Write, StoreError> {
        let label = name(&key.label, "label")?;
        Ok(Write {
            query: format!("MATCH (n:{label} {{id: $id}}) DETACH DELETE n RETURN count(n)"),
            params: vec![("id", s(&key.id))],
        })
    }

    pub(crate) fn put_edge(edge: &Edge) -> Result<Write, StoreError> {
        let k = &edge.key;
        let (from, to, ty) = (
            name(&k.from.label, "label")?,
            name(&k.to.label, "label")?,
            name(&k.edge_type, "edge type")?,
        );
        Ok(Write {
            query: format!(
                "MATCH (a:{from} {{id: $from}}), (b:{to} {{id: $to}}) \
                 MERGE (a)-[r:{ty} {{q: $q}}]->(b) SET r.props = $props RETURN count(r)"
            ),
            params: vec![
                ("from", s(&k.from.id)),
                ("to", s(&k.to.id)),
                ("q", s(&k.qualifier)),
                ("props", s(&props_to(&edge.props)?)),
            ],
        })
    }

    pub(crate) fn delete_edge(key: &EdgeKey) -> Result<Write, StoreError> {
        let (from, to, ty) = (
            name(&key.from.label, "label")?,
            name(&key.to.label, "label")?,
            name(&key.edge_type, "edge type")?,
        );
        Ok(Write {
            query: format!(
                "MATCH (a:{from} {{id: $from}})-[r:{ty} {{q: $q}}]->(b:{to} {{id: $to}}) DELETE r RETURN count(r)"
            ),
            params: vec![
                ("from", s(&key.from.id)),
                ("to", s(&key.to.id)),
                ("q", s(&key.qualifier)),
            ],
        })
    }

    pub(crate) fn put_session_slot(session_id: &str, slot: &SessionSlot) -> Write {
        Write {
            query: format!("MERGE (:{SLOT} {{session: $session, at: $at, event: $event}})"),
            params: vec![
                ("session", s(session_id)),
                ("at", int(slot.at_ns)),
                ("event", s(&slot.event_id)),
            ],
        }
    }

    pub(crate) fn delete_session_slot(session_id: &str, slot: &SessionSlot) -> Write {
        Write {
            query: format!(
                "MATCH (x:{SLOT} {{session: $session, at: $at, event: $event}}) DELETE x"
            ),
            params: vec![
                ("session", s(session_id)),
                ("at", int(slot.at_ns)),
                ("event", s(&slot.event_id)),
            ],
        }
    }

    pub(crate) fn put_pending(waiting_for: &NodeKey, edge: &Edge) -> Result<Write, StoreError> {
        let mut params = pending_params(waiting_for, &edge.key);
        params.push(("props", s(&props_to(&edge.props)?)));
        Ok(Write {
            query: format!("MERGE (p:{PENDING} {{{PENDING_KEY}}}) SET p.props = $props"),
            params,
        })
    }

    pub(crate) fn drop_pending(key: &NodeKey) -> Write {
        Write {
            query: format!("MATCH (p:{PENDING} {{wait_label: $label, wait_id: $id}}) DELETE p"),
            params: vec![("label", s(&key.label)), ("id", s(&key.id))],
        }
    }

    /// The query text with its parameters in FalkorDB's `CYPHER name=value …` preamble, each
    /// value encoded as a literal by the client library's encoder.
    fn with_preamble(&self) -> Result<String, StoreError> {
        let mut text = String::from("CYPHER");
        for (k, v) in &self.params {
            let literal = falkordb::to_cypher_param(v).map_err(|e| {
                StoreError::Corruption(format!("parameter `{k}` does not encode: {e}"))
            })?;
            text.push_str(&format!(" {k}={literal}"));
        }
        text.push(' ');
        text.push_str(&self.query);
        Ok(text)
    }
}

/// The `trace` property of a node: an event's `trace_id` when it is a string (what the
/// embedded store's trace lookup compares), else null (no property).
pub(crate) fn trace_of(node: &Node) -> FalkorValue {
    match node.props.get("trace_id") {
        Some(serde_json::Value::String(t)) if node.key.label == TRACED => s(t),
        _ => FalkorValue::None,
    }
}

/// The `name` property of a node: an entity's id's name part (`entity_names.rs`, what
/// recall looks entities up by), else null (no property).
pub(crate) fn name_of(key: &NodeKey) -> FalkorValue {
    if key.label == NAMED { s(entity_names::name_part(&key.id)) } else { FalkorValue::None }
}

/// A label or an edge type, checked and quoted for query text (Cypher takes no parameter there).
pub(crate) fn name(text: &str, what: &str) -> Result<String, StoreError> {
    let mut chars = text.chars();
    let plain = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        return Err(StoreError::Corruption(format!(
            "{what} `{text}` is not a plain identifier ([A-Za-z][A-Za-z0-9_]*): the graph backend names labels and edge types in query text"
        )));
    }
    Ok(format!("`{text}`"))
}

/// The columns a parked edge is read back with.
const PENDING_COLUMNS: &str = "p.wait_label, p.wait_id, p.from_label, p.from_id, p.edge_type, \
     p.to_label, p.to_id, p.q, p.props";

fn pending_params(wait: &NodeKey, k: &EdgeKey) -> Vec<(&'static str, FalkorValue)> {
    vec![
        ("wait_label", s(&wait.label)),
        ("wait_id", s(&wait.id)),
        ("from_label", s(&k.from.label)),
        ("from_id", s(&k.from.id)),
        ("edge_type", s(&k.edge_type)),
        ("to_label", s(&k.to.label)),
        ("to_id", s(&k.to.id)),
        ("q", s(&k.qualifier)),
    ]
}

fn pending_row(r: &[FalkorValue], url: &StoreUrl) -> Result<(NodeKey, Edge), StoreError> {
    let t = |i: usize| text_at(r, i, url);
    let wait = NodeKey { label: t(0)?, id: t(1)? };
    let key = EdgeKey {
        from: NodeKey { label: t(2)?, id: t(3)? },
        edge_type: t(4)?,
        to: NodeKey { label: t(5)?, id: t(6)? },
        qualifier: t(7)?,
    };
    Ok((wait, Edge { key, props: props_from(&t(8)?)? }))
}

/// The embedded store's order of parked edges: from, type, to, qualifier.
pub(crate) fn pending_order(k: &EdgeKey) -> (&NodeKey, &str, &NodeKey, &str) {
    (&k.from, &k.edge_type, &k.to, &k.qualifier)
}

/// The embedded store's order of one side of a node's edges: type, far endpoint, qualifier.
pub(crate) fn sort_side(edges: &mut [Edge], outgoing: bool) {
    fn far(e: &Edge, outgoing: bool) -> &NodeKey {
        if outgoing { &e.key.to } else { &e.key.from }
    }
    edges.sort_by(|a, b| {
        (&a.key.edge_type, far(a, outgoing), &a.key.qualifier).cmp(&(
            &b.key.edge_type,
            far(b, outgoing),
            &b.key.qualifier,
        ))
    });
}

/// A string property compared in a range (`>`) without its index: FalkorDB's index orders
/// strings other than byte order (a range over it misses non-ASCII values: `'ü…' > 'r'` finds
/// nothing), while a comparison of the values themselves is byte order, the embedded store's.
/// Wrapping the property in `toString` keeps the planner from answering the range from the
/// index, at the cost of a scan of the label.
fn unindexed(property: &str) -> String {
    format!("toString({property})")
}

/// A `LIMIT` parameter. FalkorDB reads a limit as 32 bits (a limit of 2^32 returns nothing),
/// so a larger one, which callers pass to mean "all", is capped where it still means that.
fn count(limit: usize) -> i64 {
    i64::try_from(limit.min(MAX_LIMIT)).unwrap_or(0)
}

/// Whether a refusal is what FalkorDB answers a read of a key that holds no graph (nothing
/// folded yet): such a read has no rows.
fn no_graph(message: &str) -> bool {
    message.contains("empty key")
}

fn odd(url: &StoreUrl, what: &str) -> StoreError {
    StoreError::Corruption(format!("{url}: a graph reply is not {what}"))
}

fn text_at(row: &[FalkorValue], i: usize, url: &StoreUrl) -> Result<String, StoreError> {
    match row.get(i) {
        Some(FalkorValue::String(t)) => Ok(t.clone()),
        _ => Err(odd(url, "a string where one was expected")),
    }
}

fn int_at(row: &[FalkorValue], i: usize, url: &StoreUrl) -> Result<i64, StoreError> {
    match row.get(i) {
        Some(FalkorValue::I64(n)) => Ok(*n),
        _ => Err(odd(url, "an integer where one was expected")),
    }
}

/// The first column of the first row: a `RETURN count(…)` answer.
fn first_int(rows: &[Vec<FalkorValue>], url: &StoreUrl) -> Result<i64, StoreError> {
    int_at(rows.first().map(Vec::as_slice).unwrap_or_default(), 0, url)
}

fn remote(url: &StoreUrl, e: &falkordb::FalkorDBError) -> StoreError {
    failure("falkordb", url, e)
}

fn raw_remote(url: &StoreUrl, e: &redis::RedisError) -> StoreError {
    failure("falkordb", url, e)
}
