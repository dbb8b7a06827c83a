//! The projection folds the same log into the embedded graph and into FalkorDB, and the two
//! graphs are equal: nodes with their properties, edges, session order and parked edges.

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::{Direction, Edge, Node, NodeKey};
use ctxgraph_ontology::{Limits, RecordKind, Schema, ValidRecord, validate};
use ctxgraph_projection::project;
use std::time::Duration;

use ctxgraph_scaleout::{
    BatchFold, ConsumerName, FalkorGraph, GroupState, LogConsumer, RedisLog, Worker, catch_up,
    fold_one, load_schema,
};
use ctxgraph_store::{
    Embedded, GraphReader, Log, LogReader, OpenMode, ProjectionGraph, SessionSlot,
};
use ctxgraph_synth::{TraceConfig, trace};
use serde_json::json;

use crate::graph_harness::FalkorBackend;
use crate::harness::RedisBackend;

/// Everything a graph holds that the projection writes, in a comparable form.
#[derive(Debug, PartialEq)]
struct Dump {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    sessions: Vec<(String, Vec<SessionSlot>)>,
    pending: Vec<(NodeKey, Edge)>,
}

/// The synthetic trace's events, a stretch of them delivered late (so events arrive out of
/// order within their sessions), and explicit edges, one of them to an event not yet written.
fn records(schema: &Schema) -> Vec<ValidRecord> {
    let config = TraceConfig { events: 120, ..TraceConfig::default() };
    let mut events: Vec<serde_json::Value> = trace(&config).collect();
    events[40..60].reverse();
    let late = events.remove(30);
    let mut texts: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    let first = events[0]["event_id"].as_str().unwrap().to_owned();
    let late_id = late["event_id"].as_str().unwrap().to_owned();
    texts.push(
        json!({"record_type": "edge", "edge_id": "x-waits", "edge_type": "CAUSED_BY",
               "from": {"label": "Event", "id": late_id}, "to": {"label": "Event", "id": first},
               "properties": {"mechanism": "inferred"}})
        .to_string(),
    );
    texts.push(
        json!({"record_type": "edge", "edge_id": "x-never", "edge_type": "CAUSED_BY",
               "from": {"label": "Event", "id": "never-written"}, "to": {"label": "Event", "id": first},
               "properties": {"mechanism": "inferred"}})
        .to_string(),
    );
    texts.push(late.to_string());
    texts
        .iter()
        .map(|t| validate(schema, &Limits::default(), t).unwrap_or_else(|e| panic!("{t}: {e}")))
        .collect()
}

/// Fold `records` at log positions from `first`.
pub(crate) fn fold(
    schema: &Schema,
    graph: &mut dyn ProjectionGraph,
    records: &[ValidRecord],
    first: u64,
) {
    for (i, r) in records.iter().enumerate() {
        project(schema, graph, first + i as u64, r).unwrap();
    }
}

/// A dump read through the operations both backends have: nodes label by label, each node's
/// outgoing edges, each session's order, the parked edges.
fn dump(
    schema: &Schema,
    g: &dyn ProjectionGraph,
    nodes_of: &mut dyn FnMut(&str) -> Vec<Node>,
    sessions: &[String],
) -> Dump {
    let mut nodes = Vec::new();
    for label in schema.node_types().keys() {
        nodes.extend(nodes_of(label));
    }
    let mut edges = Vec::new();
    for n in &nodes {
        edges.extend(g.edges_of(&n.key, None, Direction::Out).unwrap());
    }
    let sessions =
        sessions.iter().map(|s| (s.clone(), g.session_events(s, usize::MAX).unwrap())).collect();
    Dump { nodes, edges, sessions, pending: g.pending_edges().unwrap() }
}

/// The records folded into a new embedded store in one write transaction, dumped.
fn embedded_fold(
    schema: &Schema,
    records: &[ValidRecord],
    first: u64,
    sessions: &[String],
) -> (Dump, ctxgraph_store::GraphCounts) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut store = Embedded::open(&dir.path().join("g.ctxg"), OpenMode::CreateIfMissing).unwrap();
    let mut w = store.begin_write().unwrap();
    fold(schema, &mut w, records, first);
    let dumped =
        dump(schema, &w, &mut |label| w.nodes_by_label(label, None, usize::MAX).unwrap(), sessions);
    assert_eq!(GraphReader::sessions(&w, None, usize::MAX).unwrap(), sessions);
    let counts = w.counts().unwrap();
    w.commit().unwrap();
    (dumped, counts)
}

/// The session ids the records name, in order.
fn sessions_of(records: &[ValidRecord]) -> Vec<String> {
    let ids: BTreeSet<String> = records
        .iter()
        .filter_map(|r| {
            let v: serde_json::Value = serde_json::from_str(r.canonical()).ok()?;
            v.get("session_id")?.as_str().map(str::to_owned)
        })
        .collect();
    ids.into_iter().collect()
}

fn falkor_dump(schema: &Schema, g: &FalkorGraph, sessions: &[String]) -> Dump {
    dump(schema, g, &mut |label| g.nodes_by_label(label, None, usize::MAX).unwrap(), sessions)
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn the_same_log_projects_to_the_same_graph_on_both_backends() {
    let schema = Schema::core().unwrap();
    let records = records(&schema);
    let sessions = sessions_of(&records);
    assert!(sessions.len() > 3, "the trace spans several sessions");

    let (embedded, embedded_counts) = embedded_fold(&schema, &records, 1, &sessions);

    let mut falkor = FalkorBackend::new();
    fold(&schema, &mut falkor.graph, &records, 1);
    let g = &falkor.graph;
    let server = falkor_dump(&schema, g, &sessions);
    assert_eq!(g.sessions(None, usize::MAX).unwrap(), sessions);

    // The fold did something worth comparing.
    assert!(embedded.nodes.len() > 120, "{}", embedded.nodes.len());
    assert!(embedded.edges.iter().any(|e| e.key.edge_type == "FOLLOWS"));
    assert!(embedded.edges.iter().any(|e| e.key.edge_type == "REFERENCES"));
    assert!(embedded.edges.iter().any(|e| e.key.edge_type == "CAUSED_BY"));
    assert_eq!(embedded.pending.len(), 1, "the edge to an event never written waits");
    same(&embedded, &server);
    assert_eq!(embedded_counts, g.counts().unwrap());
}

/// Equal dumps, or the first difference (a whole dump is too long to read).
fn same(a: &Dump, b: &Dump) {
    for (x, y) in a.nodes.iter().zip(&b.nodes) {
        assert_eq!(x, y);
    }
    assert_eq!(a.nodes.len(), b.nodes.len());
    for (x, y) in a.edges.iter().zip(&b.edges) {
        assert_eq!(x, y);
    }
    assert_eq!(a.edges.len(), b.edges.len());
    assert_eq!(a.sessions, b.sessions);
    assert_eq!(a.pending, b.pending);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn folding_the_redis_log_in_steps_equals_the_embedded_fold_and_a_rebuild() {
    let mut log = RedisBackend::new();
    // A schema module first: the fold loads it from the log and passes its record over.
    let module = "module = \"tickets\"\n[node_types.Ticket]\nkey = \"ticket_id\"\nproperties = { ticket_id = { type = \"string\", required = true } }\n";
    let (module_record, _) = ValidRecord::schema_module(&Schema::core().unwrap(), module).unwrap();
    let schema_in_log = {
        log.log().append(&module_record, "t").unwrap();
        load_schema(log.log()).unwrap()
    };
    assert!(schema_in_log.node_type("Ticket").is_some());
    let records = records(&schema_in_log);
    let sessions = sessions_of(&records);
    let out = log.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    assert!(out.iter().all(Result::is_ok));
    let head = log.log().head().unwrap();
    assert_eq!(head, records.len() as u64 + 1);

    let mut falkor = FalkorBackend::new();
    falkor.graph.ensure_schema(&schema_in_log).unwrap();
    // In steps of 37 records, as a worker folds batch after batch.
    let mut steps = 0;
    while catch_up(&schema_in_log, log.log(), &falkor.graph, 37).unwrap() > 0 {
        steps += 1;
    }
    assert_eq!(steps, head.div_ceil(37));
    assert_eq!(falkor.graph.projected_through().unwrap(), head);
    let stepwise = falkor_dump(&schema_in_log, &falkor.graph, &sessions);
    // The records sit at positions 2.. (the schema module is at 1).
    let (embedded, _) = embedded_fold(&schema_in_log, &records, 2, &sessions);
    same(&stepwise, &embedded);

    // The graph lost: rebuilt from the log, it is the same graph.
    falkor.graph.clear_graph().unwrap();
    assert_eq!(falkor.graph.projected_through().unwrap(), 0);
    let folded = catch_up(&schema_in_log, log.log(), &falkor.graph, usize::MAX).unwrap();
    assert_eq!(folded, head);
    same(&falkor_dump(&schema_in_log, &falkor.graph, &sessions), &stepwise);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn edges_between_nodes_the_graph_has_are_merged_grouped_by_a_shared_end_as_the_embedded_fold() {
    let schema = Schema::core().unwrap();
    let mut records = records(&schema);
    let sessions = sessions_of(&records);
    let events = records.len();
    let ids: Vec<String> = records
        .iter()
        .filter_map(|r| {
            let v: serde_json::Value = serde_json::from_str(r.canonical()).ok()?;
            v.get("event_id")?.as_str().map(str::to_owned)
        })
        .collect();
    // Edges whose ends the graph has when their page folds, so the commit merges them: one
    // event's edges to several (one source shared), several events' edges to one (one target
    // shared), and one edge alone, with properties to tell the copies apart.
    let mut edge = |id: String, from: &str, to: &str| {
        let text = json!({"record_type": "edge", "edge_id": id, "edge_type": "CAUSED_BY",
            "from": {"label": "Event", "id": from}, "to": {"label": "Event", "id": to},
            "properties": {"mechanism": "inferred"}})
        .to_string();
        records.push(validate(&schema, &Limits::default(), &text).unwrap());
    };
    for (i, to) in ids[10..16].iter().enumerate() {
        edge(format!("fan-out-{i}"), &ids[90], to);
    }
    for (i, from) in ids[60..66].iter().enumerate() {
        edge(format!("fan-in-{i}"), from, &ids[5]);
    }
    edge("alone".into(), &ids[70], &ids[71]);

    let mut log = RedisBackend::new();
    log.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let falkor = FalkorBackend::new();
    // The events first, then the edges in a page of their own.
    assert_eq!(catch_up(&schema, log.log(), &falkor.graph, events).unwrap(), events as u64);
    assert_eq!(
        catch_up(&schema, log.log(), &falkor.graph, usize::MAX).unwrap(),
        (records.len() - events) as u64
    );
    let (embedded, embedded_counts) = embedded_fold(&schema, &records, 1, &sessions);
    let fan_out = embedded
        .edges
        .iter()
        .filter(|e| e.key.edge_type == "CAUSED_BY" && e.key.from.id == ids[90])
        .count();
    assert!(fan_out >= 6, "the fan-out edges are in the graph ({fan_out})");
    same(&falkor_dump(&schema, &falkor.graph, &sessions), &embedded);
    assert_eq!(falkor.graph.counts().unwrap(), embedded_counts);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_worker_killed_before_its_batch_commits_leaves_nothing_and_each_record_is_folded_once() {
    let schema = Schema::core().unwrap();
    let records = records(&schema);
    let sessions = sessions_of(&records);
    let mut log = RedisBackend::new();
    log.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let head = log.log().head().unwrap();
    let mut falkor = FalkorBackend::new();

    // A first worker folds 40 records and commits.
    assert_eq!(catch_up(&schema, log.log(), &falkor.graph, 40).unwrap(), 40);
    let committed = falkor_dump(&schema, &falkor.graph, &sessions);
    // A second folds the next 60 into its batch and is killed before committing.
    let mut doomed = BatchFold::new(&falkor.graph).unwrap();
    assert_eq!(doomed.start(), 40);
    for entry in log.log().read_from(41, 60).unwrap() {
        fold_one(&schema, &mut doomed, &entry).unwrap();
    }
    assert!(doomed.len() > 60, "the batch held the writes of 60 records");
    drop(doomed);
    same(&falkor_dump(&schema, &falkor.graph, &sessions), &committed);
    assert_eq!(falkor.graph.projected_through().unwrap(), 40);

    // Its replacement folds from the checkpoint: every record once, the same graph as a fold
    // in one go.
    assert_eq!(catch_up(&schema, log.log(), &falkor.graph, usize::MAX).unwrap(), head - 40);
    assert_eq!(catch_up(&schema, log.log(), &falkor.graph, usize::MAX).unwrap(), 0);
    let (embedded, embedded_counts) = embedded_fold(&schema, &records, 1, &sessions);
    same(&falkor_dump(&schema, &falkor.graph, &sessions), &embedded);
    assert_eq!(falkor.graph.counts().unwrap(), embedded_counts);

    // The whole log in one batch (every read answered from the batch's own writes) is the
    // same graph too.
    falkor.graph.clear_graph().unwrap();
    let mut one = BatchFold::new(&falkor.graph).unwrap();
    for entry in log.log().read_from(1, usize::MAX).unwrap() {
        fold_one(&schema, &mut one, &entry).unwrap();
    }
    assert!(one.commit(head).unwrap());
    same(&falkor_dump(&schema, &falkor.graph, &sessions), &embedded);
    assert_eq!(falkor.graph.projected_through().unwrap(), head);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn of_two_workers_folding_the_same_records_only_the_first_commits() {
    let schema = Schema::core().unwrap();
    let records = records(&schema);
    let sessions = sessions_of(&records);
    let mut log = RedisBackend::new();
    log.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let falkor = FalkorBackend::new();
    let other = FalkorGraph::connect(falkor.url(), &schema).unwrap();

    // Both start from checkpoint 0 and fold the first 50 records.
    let mut first = BatchFold::new(&falkor.graph).unwrap();
    let mut second = BatchFold::new(&other).unwrap();
    for entry in log.log().read_from(1, 50).unwrap() {
        fold_one(&schema, &mut first, &entry).unwrap();
        fold_one(&schema, &mut second, &entry).unwrap();
    }
    assert!(first.commit(50).unwrap());
    assert!(!second.commit(50).unwrap(), "the checkpoint moved: nothing of the second applied");
    assert_eq!(other.projected_through().unwrap(), 50);

    // The second worker goes on from where the first left off.
    let head = log.log().head().unwrap();
    assert_eq!(catch_up(&schema, log.log(), &other, usize::MAX).unwrap(), head - 50);
    let (embedded, embedded_counts) = embedded_fold(&schema, &records, 1, &sessions);
    same(&falkor_dump(&schema, &falkor.graph, &sessions), &embedded);
    assert_eq!(falkor.graph.counts().unwrap(), embedded_counts, "no record counted twice");
}

/// A log that answers pages of at most 40 records, records where each read began, and runs
/// `after_first` (a rival fold of the same graph) once it has answered its first read.
struct Pages<'a> {
    log: &'a RedisLog,
    reads: std::cell::RefCell<Vec<u64>>,
    after_first: std::cell::RefCell<Option<Box<dyn FnOnce() + 'a>>>,
}

impl<'a> Pages<'a> {
    fn new(log: &'a RedisLog, after_first: Option<Box<dyn FnOnce() + 'a>>) -> Self {
        Pages {
            log,
            reads: std::cell::RefCell::new(Vec::new()),
            after_first: std::cell::RefCell::new(after_first),
        }
    }
}

impl LogReader for Pages<'_> {
    fn head(&self) -> Result<u64, ctxgraph_store::StoreError> {
        self.log.head()
    }
    fn get(
        &self,
        kind: RecordKind,
        id: &str,
    ) -> Result<Option<ctxgraph_store::LogEntry>, ctxgraph_store::StoreError> {
        self.log.get(kind, id)
    }
    fn read_from(
        &self,
        from: u64,
        limit: usize,
    ) -> Result<Vec<ctxgraph_store::LogEntry>, ctxgraph_store::StoreError> {
        let page = self.log.read_from(from, limit.min(40))?;
        self.reads.borrow_mut().push(from);
        let rival = self.after_first.borrow_mut().take();
        if let Some(rival) = rival {
            rival();
        }
        Ok(page)
    }
    fn read_kind(
        &self,
        kind: RecordKind,
    ) -> Result<Vec<ctxgraph_store::LogEntry>, ctxgraph_store::StoreError> {
        self.log.read_kind(kind)
    }
}

/// Where each read of a fold from checkpoint `from` to `head` in pages of 40 begins, every
/// page's successor read while it commits: the last read, past the head, finds the log's end.
fn page_starts(from: u64, head: u64) -> Vec<u64> {
    let mut starts: Vec<u64> = (from + 1..=head).step_by(40).collect();
    starts.push(head + 1);
    starts
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_page_read_during_a_commit_another_fold_beat_is_dropped_and_read_again() {
    let schema = Schema::core().unwrap();
    let records = records(&schema);
    let sessions = sessions_of(&records);
    let mut log = RedisBackend::new();
    log.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let head = log.log().head().unwrap();
    assert!(head > 120, "several pages of 40");
    let log: &RedisLog = log.log();
    let falkor = FalkorBackend::new();
    let rival = FalkorGraph::connect(falkor.url(), &schema).unwrap();
    // The rival folds the first 25 records once the fold has read its first page.
    let reader = Pages::new(
        log,
        Some(Box::new(|| assert_eq!(catch_up(&schema, log, &rival, 25).unwrap(), 25))),
    );

    // The first page (1-40) loses to the rival's commit through 25; the page read from 41
    // during that commit is dropped, and the fold goes on from 26, each page read while the
    // one before it commits.
    assert_eq!(catch_up(&schema, &reader, &falkor.graph, usize::MAX).unwrap(), head - 25);
    let reads = reader.reads.borrow().clone();
    assert_eq!(reads[..2], [1, 41], "{reads:?}");
    assert_eq!(reads[2..], page_starts(25, head), "{reads:?}");
    assert_eq!(falkor.graph.projected_through().unwrap(), head);
    let (embedded, counts) = embedded_fold(&schema, &records, 1, &sessions);
    same(&falkor_dump(&schema, &falkor.graph, &sessions), &embedded);
    assert_eq!(falkor.graph.counts().unwrap(), counts, "no record folded twice");
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_workers_round_reads_from_where_its_last_left_the_checkpoint_or_again_if_it_moved() {
    let schema = Schema::core().unwrap();
    let records = records(&schema);
    let sessions = sessions_of(&records);
    let (first, rest) = records.split_at(60);
    let mut log = RedisBackend::new();
    let url = log.url().clone();
    let falkor = FalkorBackend::new();
    let rival = FalkorGraph::connect(falkor.url(), &schema).unwrap();
    let group = ConsumerName::parse("project").unwrap();
    let consumer = LogConsumer::join(&url, &group, &ConsumerName::parse("w").unwrap()).unwrap();
    let mut worker = Worker::new(consumer, Duration::from_secs(3600));

    // A round of `worker` through a log answering pages of 40: what it folded and where
    // each of its reads began.
    let mut round = |log: &RedisLog| {
        let reader = Pages::new(log, None);
        let folded = worker.step(&schema, &reader, &falkor.graph, None).unwrap();
        let reads = reader.reads.borrow().clone();
        (folded, reads)
    };
    log.log().append_batch(&first.iter().collect::<Vec<_>>(), "t").unwrap();
    assert_eq!(round(log.log()), (60, page_starts(0, 60)));

    // Nothing moved the checkpoint since: the next round's first read, sent with its watch,
    // is from where the last round left it, and is used.
    log.log().append_batch(&rest[..30].iter().collect::<Vec<_>>(), "t").unwrap();
    assert_eq!(round(log.log()), (30, page_starts(60, 90)));

    // Another fold moved it: the read from 91 is dropped and the round reads from 111.
    log.log().append_batch(&rest[30..].iter().collect::<Vec<_>>(), "t").unwrap();
    let head = log.log().head().unwrap();
    assert_eq!(catch_up(&schema, log.log(), &rival, 20).unwrap(), 20);
    let (folded, reads) = round(log.log());
    assert_eq!(folded, head - 110);
    assert_eq!(reads[0], 91, "{reads:?}");
    assert_eq!(reads[1..], page_starts(110, head), "{reads:?}");
    assert_eq!(worker.state().unwrap(), GroupState { pending: 0, lag: 0, delivered_through: head });

    let (embedded, counts) = embedded_fold(&schema, &records, 1, &sessions);
    same(&falkor_dump(&schema, &falkor.graph, &sessions), &embedded);
    assert_eq!(falkor.graph.counts().unwrap(), counts, "no record folded twice");
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn workers_fold_the_stream_and_a_replacement_takes_over_a_dead_workers_entries() {
    let schema = Schema::core().unwrap();
    let records = records(&schema);
    let sessions = sessions_of(&records);
    let (first_half, second_half) = records.split_at(60);
    let mut log = RedisBackend::new();
    let falkor = FalkorBackend::new();
    let url = log.url().clone();
    let group = ConsumerName::parse("project").unwrap();
    let join =
        |name: &str| LogConsumer::join(&url, &group, &ConsumerName::parse(name).unwrap()).unwrap();

    let mut a = Worker::new(join("worker-a"), Duration::from_secs(3600));
    log.log().append_batch(&first_half.iter().collect::<Vec<_>>(), "t").unwrap();
    assert_eq!(a.step(&schema, log.log(), &falkor.graph, None).unwrap(), 60);
    assert_eq!(a.state().unwrap(), GroupState { pending: 0, lag: 0, delivered_through: 60 });

    // More records; worker-a reads them and dies before folding.
    log.log().append_batch(&second_half.iter().collect::<Vec<_>>(), "t").unwrap();
    let head = log.log().head().unwrap();
    let mut dying = join("worker-a");
    assert_eq!(dying.next(1_000, None).unwrap().len() as u64, head - 60);
    drop(dying);
    drop(a);
    let mut b = Worker::new(join("worker-b"), Duration::ZERO);
    assert_eq!(b.state().unwrap().pending, head - 60, "the dead worker's entries wait");
    assert_eq!(b.step(&schema, log.log(), &falkor.graph, None).unwrap(), head - 60);
    assert_eq!(b.state().unwrap(), GroupState { pending: 0, lag: 0, delivered_through: head });
    assert_eq!(b.step(&schema, log.log(), &falkor.graph, None).unwrap(), 0, "nothing twice");

    let (embedded, counts) = embedded_fold(&schema, &records, 1, &sessions);
    same(&falkor_dump(&schema, &falkor.graph, &sessions), &embedded);
    assert_eq!(falkor.graph.counts().unwrap(), counts);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_log_migrated_from_the_embedded_store_is_the_same_log_and_folds_to_the_same_graph() {
    let schema = Schema::core().unwrap();
    let records = records(&schema);
    let sessions = sessions_of(&records);
    // An embedded log with a redacted record and a renamed one, as a forget leaves it.
    let dir = tempfile::TempDir::new().unwrap();
    let mut store = Embedded::open(&dir.path().join("g.ctxg"), OpenMode::CreateIfMissing).unwrap();
    let mut w = store.begin_write().unwrap();
    for r in &records {
        w.append(r, "2026-11-20T10:00:00Z").unwrap();
    }
    let tombstone = |id: &str| {
        json!({"forget_id": "f1", "id": id, "kind": "event", "record_type": "redacted"}).to_string()
    };
    assert!(w.redact(5, &tombstone(&w.read_from(5, 1).unwrap()[0].id)).unwrap());
    assert!(w.redact_as(7, "redacted-7", &tombstone("redacted-7")).unwrap());
    let entries = w.read_from(1, usize::MAX).unwrap();
    w.commit().unwrap();

    let mut log = RedisBackend::new();
    assert_eq!(log.log().import(&entries).unwrap(), entries.len() as u64);
    assert_eq!(log.log().read_from(1, usize::MAX).unwrap(), entries, "the same log, byte for byte");
    assert_eq!(log.log().get(RecordKind::Event, "redacted-7").unwrap().unwrap().position, 7);
    // A second copy would not land at the next position.
    let err = log.log().import(&entries[..1]).unwrap_err();
    assert!(err.to_string().contains("cannot be copied after head"), "{err}");
    // Nor would an id taken in the target.
    let mut other = RedisBackend::new();
    let mut twice = entries[1].clone();
    twice.id = entries[0].id.clone();
    let err = other.log().import(&[entries[0].clone(), twice]).unwrap_err();
    assert_eq!(err.code(), "log.conflict", "{err}");
    assert_eq!(other.log().head().unwrap(), 1, "the first entry was copied, the clash was not");

    // Folded, the migrated log gives the graph the embedded log gives.
    let falkor = FalkorBackend::new();
    catch_up(&schema, log.log(), &falkor.graph, usize::MAX).unwrap();
    let mut w = store.begin_write().unwrap();
    for entry in &entries {
        fold_one(&schema, &mut w, entry).unwrap();
    }
    let embedded = dump(
        &schema,
        &w,
        &mut |label| w.nodes_by_label(label, None, usize::MAX).unwrap(),
        &sessions,
    );
    drop(w);
    same(&falkor_dump(&schema, &falkor.graph, &sessions), &embedded);
}
