//! The engine on a remote store (`Engine::open_remote`): a store whose log the engine appends
//! to and whose graph a separate worker folds. Here the remote store is an embedded file whose
//! appends are not projected, and the worker is `Engine::catch_up` on a second engine of the
//! same file; reads, once folded, and ingestion must equal the embedded engine's.

use crate::validate_all;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ctxgraph::{
    Engine, EngineOptions, EntityInput, Error, FactInput, ForgetKind, ForgetTarget, IngestOptions,
    IngestOutcome, NodeKey, ObjectInput, OpenMode, Projection, RecallQuery, ResolveConfig,
    RetentionOptions, ValidRecord,
};
use ctxgraph_ontology::RecordKind;
use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, Properties};
use ctxgraph_store::{
    Appended, Archived, EdgeGroup, Embedded, GraphCounts, GraphReader, Log, LogEntry, LogReader,
    RemoteStore, SessionSlot, StoreError, StoreRead, StoredVector, TextIndexBuild,
};
use serde_json::json;
use tempfile::TempDir;

use super::{dump, trace};

/// A remote store over one store file: appends are not projected, and every query of a read is
/// its own read transaction, as each query to a server sees the graph at a committed fold.
#[derive(Debug)]
struct FileRemote {
    path: PathBuf,
    reads: Mutex<Embedded>,
    writes: Mutex<Embedded>,
}

impl FileRemote {
    fn open(path: &Path) -> FileRemote {
        FileRemote {
            path: path.to_owned(),
            reads: Mutex::new(Embedded::open(path, OpenMode::CreateIfMissing).unwrap()),
            writes: Mutex::new(Embedded::open(path, OpenMode::CreateIfMissing).unwrap()),
        }
    }
}

impl RemoteStore for FileRemote {
    fn begin_read(&self) -> Result<Box<dyn StoreRead + '_>, StoreError> {
        Ok(Box::new(PerQuery(&self.reads)))
    }

    fn append_batch(
        &self,
        records: &[&ValidRecord],
        recorded_at: &str,
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
        let mut store = self.writes.lock().unwrap();
        let mut w = store.begin_write()?;
        let mut out = Vec::with_capacity(records.len());
        for record in records {
            match w.append(record, recorded_at) {
                Ok(a) => out.push(Ok(a)),
                Err(e @ StoreError::Conflict { .. }) => out.push(Err(e)),
                Err(e) => return Err(e),
            }
        }
        w.commit()?;
        Ok(out)
    }

    fn location(&self) -> String {
        format!("test-remote://{}", self.path.display())
    }
}

/// An engine on a [`FileRemote`] over the store file at `path` (which may be open elsewhere):
/// every read goes the remote way, each query its own read.
pub(crate) fn remote_engine(path: &Path) -> Engine {
    Engine::open_remote(Box::new(FileRemote::open(path)), EngineOptions::default()).unwrap()
}

/// A read whose every query is one read transaction.
struct PerQuery<'a>(&'a Mutex<Embedded>);

impl LogReader for PerQuery<'_> {
    fn head(&self) -> Result<u64, StoreError> {
        self.0.lock().unwrap().begin_read()?.head()
    }
    fn get(&self, kind: RecordKind, id: &str) -> Result<Option<LogEntry>, StoreError> {
        self.0.lock().unwrap().begin_read()?.get(kind, id)
    }
    fn read_from(&self, from: u64, limit: usize) -> Result<Vec<LogEntry>, StoreError> {
        self.0.lock().unwrap().begin_read()?.read_from(from, limit)
    }
    fn read_kind(&self, kind: RecordKind) -> Result<Vec<LogEntry>, StoreError> {
        self.0.lock().unwrap().begin_read()?.read_kind(kind)
    }
}
impl GraphReader for PerQuery<'_> {
    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        self.0.lock().unwrap().begin_read()?.node(key)
    }
    fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        self.0.lock().unwrap().begin_read()?.node_exists(key)
    }
    fn node_props_named(
        &self,
        key: &NodeKey,
        names: &[&str],
    ) -> Result<Option<Properties>, StoreError> {
        self.0.lock().unwrap().begin_read()?.node_props_named(key, names)
    }
    fn existing_ids(&self, label: &str, ids: &[String]) -> Result<Vec<String>, StoreError> {
        self.0.lock().unwrap().begin_read()?.existing_ids(label, ids)
    }
    fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError> {
        self.0.lock().unwrap().begin_read()?.edge(key)
    }
    fn edges_of(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, StoreError> {
        self.0.lock().unwrap().begin_read()?.edges_of(key, edge_type, direction)
    }
    fn nodes_by_label(
        &self,
        label: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>, StoreError> {
        self.0.lock().unwrap().begin_read()?.nodes_by_label(label, after, limit)
    }
    fn edges_by_type(
        &self,
        edge_type: &str,
        after: Option<&EdgeKey>,
        limit: usize,
    ) -> Result<Vec<Edge>, StoreError> {
        self.0.lock().unwrap().begin_read()?.edges_by_type(edge_type, after, limit)
    }
    fn sessions(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>, StoreError> {
        self.0.lock().unwrap().begin_read()?.sessions(after, limit)
    }
    fn session_events(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<SessionSlot>, StoreError> {
        self.0.lock().unwrap().begin_read()?.session_events(session_id, limit)
    }
    fn edges_limited(
        &self,
        key: &NodeKey,
        edge_type: &str,
        out: bool,
        limit: usize,
    ) -> Result<Vec<Edge>, StoreError> {
        self.0.lock().unwrap().begin_read()?.edges_limited(key, edge_type, out, limit)
    }
    fn trace_events(&self, trace_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.0.lock().unwrap().begin_read()?.trace_events(trace_id, limit)
    }
    fn session_tail(&self, session_id: &str) -> Result<Option<SessionSlot>, StoreError> {
        self.0.lock().unwrap().begin_read()?.session_tail(session_id)
    }
    fn session_neighbors(
        &self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError> {
        self.0.lock().unwrap().begin_read()?.session_neighbors(session_id, slot)
    }
    fn pending_for(&self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        self.0.lock().unwrap().begin_read()?.pending_for(key)
    }
    fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, StoreError> {
        self.0.lock().unwrap().begin_read()?.pending_edges()
    }
    fn counts(&self) -> Result<GraphCounts, StoreError> {
        self.0.lock().unwrap().begin_read()?.counts()
    }
    fn projected_through(&self) -> Result<u64, StoreError> {
        self.0.lock().unwrap().begin_read()?.projected_through()
    }
    fn enriched_through(&self) -> Result<u64, StoreError> {
        self.0.lock().unwrap().begin_read()?.enriched_through()
    }
    fn embedding_model(&self) -> Result<Option<(String, usize)>, StoreError> {
        self.0.lock().unwrap().begin_read()?.embedding_model()
    }
    fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.0.lock().unwrap().begin_read()?.setting(key)
    }
    fn vector(&self, key: &NodeKey) -> Result<Option<Vec<f32>>, StoreError> {
        self.0.lock().unwrap().begin_read()?.vector(key)
    }
    fn vector_list(&self, key: &NodeKey) -> Result<Option<(i64, Option<u32>)>, StoreError> {
        self.0.lock().unwrap().begin_read()?.vector_list(key)
    }
    fn heaviest_edges(
        &self,
        key: &NodeKey,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
    ) -> Result<Vec<(f64, Edge, bool)>, StoreError> {
        self.0.lock().unwrap().begin_read()?.heaviest_edges(key, weight, limit)
    }
    fn edge_groups(&self, key: &NodeKey, limit: usize) -> Result<Vec<EdgeGroup>, StoreError> {
        self.0.lock().unwrap().begin_read()?.edge_groups(key, limit)
    }
    fn graph_generation(&self) -> Result<u64, StoreError> {
        self.0.lock().unwrap().begin_read()?.graph_generation()
    }
    fn heaviest_neighbours(
        &self,
        key: &NodeKey,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
        names: &[&str],
    ) -> Result<Vec<(NodeKey, Properties)>, StoreError> {
        self.0.lock().unwrap().begin_read()?.heaviest_neighbours(key, weight, limit, names)
    }
    fn text_terms(&self, text: &str) -> Result<Vec<String>, StoreError> {
        self.0.lock().unwrap().begin_read()?.text_terms(text)
    }
    fn search_text(
        &self,
        words: &[String],
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, f64)>, StoreError> {
        self.0.lock().unwrap().begin_read()?.search_text(words, after, limit)
    }
    fn text_docs_after(&self, after: i64) -> Result<(u64, Option<i64>), StoreError> {
        self.0.lock().unwrap().begin_read()?.text_docs_after(after)
    }
    fn scan_text_index(&self, visit: &mut dyn FnMut(&str, i64) -> bool) -> Result<(), StoreError> {
        self.0.lock().unwrap().begin_read()?.scan_text_index(visit)
    }
    fn text_generation(&self) -> Result<u64, StoreError> {
        self.0.lock().unwrap().begin_read()?.text_generation()
    }
    fn text_index_build(&self) -> Result<Option<TextIndexBuild>, StoreError> {
        self.0.lock().unwrap().begin_read()?.text_index_build()
    }
    fn text_postings(&self, term: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.lock().unwrap().begin_read()?.text_postings(term)
    }
    fn node_keys(&self, nids: &[i64]) -> Result<Vec<(i64, NodeKey)>, StoreError> {
        self.0.lock().unwrap().begin_read()?.node_keys(nids)
    }
    fn vectors_page(&self, after: i64, limit: usize) -> Result<Vec<StoredVector>, StoreError> {
        self.0.lock().unwrap().begin_read()?.vectors_page(after, limit)
    }
    fn scan_unindexed_vectors(&self, visit: &mut dyn FnMut(i64, &[f32])) -> Result<(), StoreError> {
        self.0.lock().unwrap().begin_read()?.scan_unindexed_vectors(visit)
    }
    fn vector_counts(&self) -> Result<(u64, u64), StoreError> {
        self.0.lock().unwrap().begin_read()?.vector_counts()
    }
    fn scan_vectors_of(
        &self,
        nids: &[i64],
        visit: &mut dyn FnMut(i64, &[f32]),
    ) -> Result<(), StoreError> {
        self.0.lock().unwrap().begin_read()?.scan_vectors_of(nids, visit)
    }
    fn ann_generation(&self) -> Result<u64, StoreError> {
        self.0.lock().unwrap().begin_read()?.ann_generation()
    }
    fn vector_generation(&self) -> Result<u64, StoreError> {
        self.0.lock().unwrap().begin_read()?.vector_generation()
    }
    fn ann_centroids(&self) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.lock().unwrap().begin_read()?.ann_centroids()
    }
    fn ann_list(&self, list: u32) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.lock().unwrap().begin_read()?.ann_list(list)
    }
    fn is_archived(&self, key: &NodeKey) -> Result<bool, StoreError> {
        self.0.lock().unwrap().begin_read()?.is_archived(key)
    }
    fn archived(&self, after: Option<&NodeKey>, limit: usize) -> Result<Vec<Archived>, StoreError> {
        self.0.lock().unwrap().begin_read()?.archived(after, limit)
    }
    // Every read here is its own transaction, as on a store whose reads are round trips: recall
    // takes those paths (reads ahead, parents known from the edges in hand) on this store.
    fn batch_reads_pay(&self) -> bool {
        true
    }
    // And it tells a node generation, as the scale-out graph does, so recall keeps the nodes it
    // reads between recalls here too: on this file every commit that writes a node moves the
    // projection's or stage 2's checkpoint or the graph generation (stage 3 and retention
    // change edges with their nodes).
    fn node_generation(&self) -> Result<Option<u64>, StoreError> {
        let store = self.0.lock().unwrap();
        let read = store.begin_read()?;
        let (graph, projected, enriched) =
            (read.graph_generation()?, read.projected_through()?, read.enriched_through()?);
        Ok(Some(graph ^ projected.rotate_left(21) ^ enriched.rotate_left(42)))
    }
}

/// An embedded engine and a remote one on its own file, with the remote file's worker.
struct Pair {
    _dir: TempDir,
    embedded: Engine,
    remote: Engine,
    worker: Engine,
}

fn pair() -> Pair {
    let dir = TempDir::new().unwrap();
    let open = |name: &str| {
        Engine::open(&dir.path().join(name), OpenMode::CreateIfMissing, EngineOptions::default())
            .unwrap()
    };
    let embedded = open("embedded.ctxg");
    let worker = open("remote.ctxg");
    let remote = Engine::open_remote(
        Box::new(FileRemote::open(&dir.path().join("remote.ctxg"))),
        EngineOptions::default(),
    )
    .unwrap();
    Pair { _dir: dir, embedded, remote, worker }
}

impl Pair {
    /// The worker folds what the remote engine appended.
    fn fold(&mut self) {
        self.worker.catch_up(&mut |_, _| {}).unwrap();
    }
}

/// An outcome as compared across backends: the position, or the error's code.
fn outcomes(list: Vec<Result<IngestOutcome, Error>>) -> Vec<Result<IngestOutcome, &'static str>> {
    list.into_iter().map(|o| o.map_err(|e| e.code())).collect()
}

/// The log without acknowledgement times (which differ between two runs).
fn log(engine: &Engine) -> Vec<(u64, RecordKind, String, String)> {
    let entries = engine.owner_reader().unwrap().log(1, usize::MAX >> 2).unwrap();
    entries.into_iter().map(|e| (e.position, e.kind, e.id, e.body)).collect()
}

#[test]
fn reads_on_a_remote_store_equal_the_embedded_ones_once_folded() {
    let mut p = pair();
    // Events whose parent never came, or came: the packs' missing parents must agree.
    let orphans: String = (0..3)
        .map(|i| {
            let parent = if i == 0 { "never-came".to_owned() } else { format!("orphan-{}", i - 1) };
            let line = serde_json::json!({"event_id": format!("orphan-{i}"),
                "event_type": "tool.execute", "tool_name": "deploy", "session_id": "s-orphans",
                "occurred_at": format!("2026-11-20T10:0{i}:00Z"), "agent_id": "a",
                "trace_id": "t-orphans", "parent_event_id": parent, "status": "failed",
                "payload": {"error": "deploy rejected"}});
            format!("{line}\n")
        })
        .collect();
    let jsonl = trace(300) + &orphans;
    let options = IngestOptions::default();
    let a = p.embedded.ingest_jsonl(jsonl.as_bytes(), &options, &mut |_| {}).unwrap();
    let b = p.remote.ingest_jsonl(jsonl.as_bytes(), &options, &mut |_| {}).unwrap();
    assert_eq!((a.accepted, a.positions, a.progress), (b.accepted, b.positions, b.progress));
    let head = a.positions.unwrap().1;
    assert_eq!(log(&p.embedded), log(&p.remote), "the same records at the same positions");

    // Appended, not folded: the remote graph is empty until its worker runs.
    let before = p.remote.owner_reader().unwrap().checkpoints().unwrap();
    assert_eq!((before.log_length, before.projected_through), (head, 0));
    assert_eq!(p.remote.wait_projected(head, std::time::Duration::ZERO).unwrap(), 0);
    p.fold();
    let waited = p.remote.wait_projected(head, std::time::Duration::from_secs(10)).unwrap();
    assert_eq!(waited, head);

    assert_eq!(dump(&p.embedded), dump(&p.remote));
    let (e, r) = (p.embedded.owner_reader().unwrap(), p.remote.owner_reader().unwrap());
    let events = e.nodes("Event", None, 1_000).unwrap();
    assert_eq!(events, r.nodes("Event", None, 1_000).unwrap(), "events with their payloads");
    let mut sessions = std::collections::BTreeSet::new();
    for event in events.iter().step_by(17) {
        assert_eq!(e.node(&event.key).unwrap(), r.node(&event.key).unwrap());
        assert_eq!(e.causes(&event.key.id).unwrap(), r.causes(&event.key.id).unwrap());
        if let Some(s) = event.props.get("session_id").and_then(|s| s.as_str()) {
            sessions.insert(s.to_owned());
        }
    }
    assert!(!sessions.is_empty());
    for s in &sessions {
        let timeline = e.timeline(s, 500).unwrap();
        assert!(!timeline.is_empty());
        assert_eq!(timeline, r.timeline(s, 500).unwrap(), "session {s}");
    }
    // Stage 1 only on both (no text or vector index): recall anchors on what questions name.
    let mut questions = vec![
        "why did the deploy fail".to_owned(),
        "what failed in session s-orphans".to_owned(),
        "why did orphan-1 fail".to_owned(),
    ];
    for entity in e.nodes("Entity", None, 400).unwrap().iter().step_by(23) {
        let name = entity.props.get("name").and_then(|n| n.as_str()).unwrap_or_default();
        questions.push(format!("what happened with {name}"));
    }
    questions.extend(sessions.iter().map(|s| format!("what went wrong in session {s}")));
    drop((e, r));
    let (mut found, mut missing) = (0, 0);
    for question in &questions {
        let q = RecallQuery::new(question.as_str());
        let (mut a, mut b) = (p.embedded.recall(&q).unwrap(), p.remote.recall(&q).unwrap());
        // Times of measurement and of acknowledgement differ between any two runs.
        for pack in [&mut a, &mut b] {
            pack.timings = Default::default();
            for item in &mut pack.items {
                item.provenance.recorded_at = None;
            }
        }
        found += a.items.len();
        missing += a.unknowns.iter().filter(|u| u.kind == "missing_parent").count();
        assert_eq!(a, b, "{question}");
    }
    assert!(found > 0, "the questions found something");
    assert!(missing > 0, "a parent that never came is named");
}

#[test]
fn ingest_on_a_remote_store_checks_as_the_embedded_store_does() {
    let mut p = pair();
    let jsonl = trace(60);
    let options = IngestOptions::default();
    p.embedded.ingest_jsonl(jsonl.as_bytes(), &options, &mut |_| {}).unwrap();
    p.remote.ingest_jsonl(jsonl.as_bytes(), &options, &mut |_| {}).unwrap();
    let entities: Vec<String> = p
        .embedded
        .owner_reader()
        .unwrap()
        .nodes("Entity", None, 2)
        .unwrap()
        .into_iter()
        .map(|n| n.key.id)
        .collect();
    assert_eq!(entities.len(), 2);
    let first: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    let mut changed = first.clone();
    changed["payload"] = json!({"changed": true});
    let mut fresh = first.clone();
    fresh["event_id"] = json!("remote-check-new");
    // Not folded yet on the remote store: its checks see the entities in the unfolded log.
    let lines = [
        json!({"record_type": "entity_decision", "decision": "merge",
               "entity_a": entities[0], "entity_b": entities[1]}),
        json!({"record_type": "entity_decision", "decision": "merge",
               "entity_a": entities[0], "entity_b": "service:no such thing"}),
        changed.clone(),
        first.clone(),
        fresh,
    ];
    let records = validate_all(&p.embedded, &lines);
    let a = outcomes(p.embedded.ingest_batch(&records, Projection::Inline, false).unwrap());
    let b = outcomes(p.remote.ingest_batch(&records, Projection::Inline, false).unwrap());
    assert_eq!(a, b);
    assert!(matches!(a[0], Ok(IngestOutcome::New(_))));
    assert_eq!(a[1], Err("decision.unknown_entity"));
    assert_eq!(a[2], Err("log.conflict"));
    assert!(matches!(a[3], Ok(IngestOutcome::Duplicate(1))));

    // Stopping at the first refusal: the same records get outcomes, the same are written.
    let mut later = first.clone();
    later["event_id"] = json!("remote-check-later");
    let records = validate_all(&p.embedded, &[changed, later]);
    let a = outcomes(p.embedded.ingest_batch(&records, Projection::Inline, true).unwrap());
    let b = outcomes(p.remote.ingest_batch(&records, Projection::Inline, true).unwrap());
    assert_eq!(a, b);
    assert_eq!(a, vec![Err("log.conflict")]);
    assert_eq!(log(&p.embedded), log(&p.remote));

    p.fold();
    assert_eq!(dump(&p.embedded), dump(&p.remote));
}

#[test]
fn writes_that_change_the_graph_in_place_are_refused_on_a_remote_store() {
    let mut p = pair();
    let jsonl = trace(40);
    p.remote.ingest_jsonl(jsonl.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    p.fold();
    let head = log(&p.remote).len();
    let event = p.remote.owner_reader().unwrap().nodes("Event", None, 1).unwrap().remove(0).key;
    let dir = TempDir::new().unwrap();
    let refusals: Vec<(&str, Error)> = vec![
        ("enrich", p.remote.enrich(&mut |_, _| {}).unwrap_err()),
        ("consolidate", p.remote.consolidate().unwrap_err()),
        ("reproject", p.remote.reproject(&mut |_, _| {}).unwrap_err()),
        ("catching up", p.remote.catch_up(&mut |_, _| {}).unwrap_err()),
        ("reembed", p.remote.reembed(&mut |_, _| {}).unwrap_err()),
        (
            "forget",
            p.remote
                .forget(&ForgetTarget { kind: ForgetKind::Event, id: event.id.clone() }, "t", None)
                .unwrap_err(),
        ),
        ("retention", p.remote.apply_retention(&RetentionOptions::default()).unwrap_err()),
        ("resolution", p.remote.resolve_entities(&ResolveConfig::default()).unwrap_err()),
        ("linking", p.remote.link_memories().unwrap_err()),
        ("lexical index", p.remote.index_text().unwrap_err()),
        ("backup", p.remote.backup(&dir.path().join("copy.ctxg")).unwrap_err()),
    ];
    for (what, e) in refusals {
        assert_eq!(e.code(), "db.backend_unsupported", "{what}: {e}");
        assert!(e.to_string().contains("test-remote://"), "{what} names the store: {e}");
        assert!(e.is_user_error());
    }
    assert_eq!(log(&p.remote).len(), head, "nothing was written");
    assert_eq!(p.remote.owner_reader().unwrap().node(&event).unwrap().map(|n| n.key), Some(event));
}

#[test]
fn facts_and_memories_written_on_a_remote_store_read_back_as_on_a_store_file() {
    let mut p = pair();
    let claim = |subject: &str, object: &str, confidence: f64, source: &str| {
        let mut f = FactInput::new(
            EntityInput::typed(subject, "person"),
            "reports_to",
            ObjectInput::Entity(EntityInput::typed(object, "person")),
        );
        f.confidence = Some(confidence);
        f.source = Some(source.into());
        f.asserted_at = Some("2026-11-20T09:00:00Z".into());
        f
    };
    let memory = json!({"record_type": "memory", "memory_id": "m1", "kind": "decision",
        "topic": "storage", "content": "use the embedded store",
        "session_id": "s", "created_at": "2026-11-20T09:00:00Z"})
    .to_string();
    // The second claim names the entities the first created: on the remote store its checks
    // see them only once the worker (a thread folding as it goes) has folded the first.
    let claims = [claim("Alice", "Bob", 0.6, "org chart"), claim("alice", "bob", 0.5, "hr")];
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (remote, worker) = (&mut p.remote, &mut p.worker);
    let written = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                worker.catch_up(&mut |_, _| {}).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        let mut out = Vec::new();
        for c in &claims {
            out.push(remote.record_fact(c).map(|o| (o.outcome, o.fact_id)).map_err(|e| e.code()));
        }
        let record = remote.validate(&memory).unwrap();
        out.extend(
            remote
                .save_memories(&[record])
                .unwrap()
                .into_iter()
                .map(|o| o.map(|o| (o, String::new())).map_err(|e| e.code())),
        );
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        out
    });
    let mut expected = Vec::new();
    for c in &claims {
        expected
            .push(p.embedded.record_fact(c).map(|o| (o.outcome, o.fact_id)).map_err(|e| e.code()));
    }
    let record = p.embedded.validate(&memory).unwrap();
    expected.extend(
        p.embedded
            .save_memories(&[record])
            .unwrap()
            .into_iter()
            .map(|o| o.map(|o| (o, String::new())).map_err(|e| e.code())),
    );
    assert_eq!(written, expected);
    p.fold();
    let facts = |e: &Engine| e.owner_reader().unwrap().facts(&Default::default()).unwrap();
    let (a, b) = (facts(&p.embedded), facts(&p.remote));
    assert_eq!(a.len(), 1, "{a:?}");
    assert!((b[0].confidence - 0.8).abs() < 1e-9, "noisy-or of both claims: {b:?}");
    assert_eq!(a, b);
    assert_eq!(log(&p.embedded), log(&p.remote));
    // An unknown fact is refused the same way on both, and nothing is written.
    let head = log(&p.remote).len();
    let refused =
        |e: &mut Engine| e.retract_fact("user:x|reports_to|user:y", None, None).unwrap_err();
    assert_eq!(refused(&mut p.remote).to_string(), refused(&mut p.embedded).to_string());
    assert_eq!(log(&p.remote).len(), head);
}

mod forget;
