//! Index builds off the writer: a build prepared from a snapshot and installed later leaves the
//! store as an in-place build at the snapshot would, and a removal committed in between makes
//! the install drop the build rather than name what was removed.

use std::collections::BTreeMap;
use std::path::Path;

use ctxgraph::{
    Engine, EngineOptions, ForgetKind, ForgetTarget, IndexParts, IngestOptions, NodeKey, OpenMode,
    SearchParams,
};
use ctxgraph_store::{Embedded, GraphReader};

use super::{engine, trace};

const BOTH: IndexParts = IndexParts { vectors: true, text: true };

/// The indexes as stored: centroids, every list, the vectors outside the index, the lexical
/// index's build and every term's postings.
#[derive(Debug, PartialEq)]
struct Indexes {
    centroids: Option<Vec<u8>>,
    lists: Vec<Option<Vec<u8>>>,
    unindexed: Vec<i64>,
    counts: (u64, u64),
    text_build: Option<(i64, u64, u64)>,
    postings: BTreeMap<String, Vec<u8>>,
}

fn indexes(path: &Path) -> Indexes {
    let store = Embedded::open(path, OpenMode::MustExist).unwrap();
    let r = store.begin_read().unwrap();
    let mut lists: Vec<Option<Vec<u8>>> = (0..4_096).map(|l| r.ann_list(l).unwrap()).collect();
    while lists.last().is_some_and(Option::is_none) {
        lists.pop();
    }
    let mut unindexed = Vec::new();
    r.scan_unindexed_vectors(&mut |nid, _| unindexed.push(nid)).unwrap();
    let mut terms = std::collections::BTreeSet::new();
    r.scan_text_index(&mut |term, _| {
        terms.insert(term.to_owned());
        true
    })
    .unwrap();
    let postings = terms
        .into_iter()
        .filter_map(|t| Some((t.clone(), r.text_postings(&t).unwrap()?)))
        .collect();
    Indexes {
        centroids: r.ann_centroids().unwrap(),
        lists,
        unindexed,
        counts: r.vector_counts().unwrap(),
        text_build: r.text_index_build().unwrap().map(|b| (b.through, b.docs, b.avg_len.to_bits())),
        postings,
    }
}

/// Members of every stored list.
fn listed(dim: usize, ix: &Indexes) -> Vec<i64> {
    let mut ids: Vec<i64> = ix
        .lists
        .iter()
        .flatten()
        .flat_map(|b| {
            ctxgraph_ann::ListView::parse(dim, b)
                .unwrap()
                .iter()
                .map(|(id, ..)| id)
                .collect::<Vec<_>>()
        })
        .collect();
    ids.sort_unstable();
    ids
}

fn load(e: &mut Engine, jsonl: &str) {
    e.ingest_jsonl(jsonl.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
}

fn lines(all: &str, skip: usize, take: usize) -> String {
    all.lines().skip(skip).take(take).map(|l| format!("{l}\n")).collect()
}

/// A second engine on `e`'s store, as a server's reader.
fn reader_of(dir: &Path) -> Engine {
    Engine::open(&dir.join("t.ctxg"), OpenMode::MustExist, EngineOptions::default()).unwrap()
}

/// What searches answer: the nearest events to a few events' vectors, and a few full-text
/// searches.
fn answers(e: &Engine) -> Vec<Vec<(String, u64)>> {
    let r = e.owner_reader().unwrap();
    let mut out = Vec::new();
    for id in ["evt-000010", "evt-000333", "evt-000650"] {
        let q = r.vector(&NodeKey::new("Event", id)).unwrap().unwrap();
        let hits = r.nearest(&q, 10, SearchParams::default()).unwrap();
        out.push(hits.into_iter().map(|(n, s)| (n.key.id, u64::from(s.to_bits()))).collect());
    }
    for q in ["failed timeout", "deploy checkout latency"] {
        let hits = r.search(q, 10).unwrap();
        out.push(hits.into_iter().map(|(n, s)| (n.key.id, s.to_bits())).collect());
    }
    out
}

#[test]
fn an_installed_build_equals_an_in_place_build_at_its_snapshot() {
    let all = trace(700);
    // In place: build at 600 events, then 100 more.
    let (in_place_dir, mut in_place) = engine();
    load(&mut in_place, &lines(&all, 0, 600));
    assert!(in_place.index_vectors().unwrap() >= 600);
    in_place.index_text().unwrap();
    load(&mut in_place, &lines(&all, 600, 100));

    // Off the writer: prepared from a reader's snapshot at 600, installed after 100 more.
    let (dir, mut writer) = engine();
    load(&mut writer, &lines(&all, 0, 600));
    let prepared = reader_of(dir.path()).prepare_indexes(BOTH).unwrap();
    load(&mut writer, &lines(&all, 600, 100));
    let report = writer.install_indexes(prepared).unwrap();
    assert_eq!(report.stale, IndexParts::default(), "{report:?}");
    assert!(report.vectors.unwrap() >= 600 && report.text.unwrap().docs >= 600, "{report:?}");

    let (built, expected) =
        (indexes(&dir.path().join("t.ctxg")), indexes(&in_place_dir.path().join("t.ctxg")));
    assert!(built.centroids.is_some() && !built.postings.is_empty());
    assert!(built.unindexed.len() >= 100, "the vectors written after the snapshot wait outside");
    assert_eq!(built, expected);
    assert_eq!(answers(&writer), answers(&in_place));
}

#[test]
fn a_forget_between_snapshot_and_install_drops_the_build_and_leaves_no_trace() {
    let (dir, mut e) = engine();
    let path = dir.path().join("t.ctxg");
    let all = trace(700);
    load(&mut e, &lines(&all, 0, 500));
    e.consolidate().unwrap();
    load(&mut e, &lines(&all, 500, 200));
    let victim = NodeKey::new("Event", "evt-000650");
    let query = e.owner_reader().unwrap().vector(&victim).unwrap().unwrap();

    let prepared = reader_of(dir.path()).prepare_indexes(BOTH).unwrap();
    assert!(prepared.vectors_indexed() >= 700, "the snapshot holds the victim's vector");
    let target = ForgetTarget { kind: ForgetKind::Event, id: victim.id.clone() };
    e.forget(&target, "ops", None).unwrap();
    let after_forget = indexes(&path);
    let report = e.install_indexes(prepared).unwrap();
    assert_eq!(report.stale, BOTH, "{report:?}");
    assert_eq!((report.vectors, report.text), (None, None));
    // The indexes are those the forget left, which name no removed vector.
    let now = indexes(&path);
    assert_eq!(now, after_forget);
    let dim = query.len();
    assert_eq!(listed(dim, &now).len() as u64, now.counts.0 - now.counts.1);
    let r = e.owner_reader().unwrap();
    let hits = r.nearest(&query, 20, SearchParams::default()).unwrap();
    assert!(hits.iter().all(|(n, _)| n.key != victim));
    drop(r);

    // Built again from a snapshot after the forget: installed, and equal to an in-place build.
    let prepared = reader_of(dir.path()).prepare_indexes(BOTH).unwrap();
    let report = e.install_indexes(prepared).unwrap();
    assert_eq!(report.stale, IndexParts::default());
    let installed = indexes(&path);
    assert_eq!(listed(dim, &installed).len() as u64, installed.counts.0);
    e.index_vectors().unwrap();
    e.index_text().unwrap();
    assert_eq!(indexes(&path), installed);
}

#[test]
fn a_build_of_one_part_leaves_the_other_and_an_index_rebuilt_since_wins() {
    let (dir, mut e) = engine();
    let path = dir.path().join("t.ctxg");
    load(&mut e, &trace(300));
    let vectors_only = IndexParts { vectors: true, text: false };
    let prepared = reader_of(dir.path()).prepare_indexes(vectors_only).unwrap();
    let report = e.install_indexes(prepared).unwrap();
    assert_eq!((report.vectors.is_some(), report.text), (true, None));
    assert!(indexes(&path).text_build.is_none(), "the lexical index was not asked for");

    // An in-place build between snapshot and install: the older build is dropped.
    let prepared = reader_of(dir.path()).prepare_indexes(BOTH).unwrap();
    e.index_vectors().unwrap();
    let before = indexes(&path);
    let report = e.install_indexes(prepared).unwrap();
    assert_eq!(report.stale, vectors_only);
    assert!(report.text.is_some());
    assert_eq!(indexes(&path).centroids, before.centroids);
}

#[test]
fn a_build_of_another_store_is_refused() {
    let (dir, mut e) = engine();
    load(&mut e, &trace(50));
    let prepared = reader_of(dir.path()).prepare_indexes(BOTH).unwrap();
    let (_other_dir, mut other) = engine();
    let err = other.install_indexes(prepared).unwrap_err();
    assert_eq!(err.code(), "index.other_store");
    assert!(err.to_string().contains("t.ctxg"), "{err}");
}
