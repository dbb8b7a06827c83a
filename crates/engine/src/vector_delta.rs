//! The vectors outside the vector index, held in memory by the engines of one store (a
//! server's tenant) and scored there instead of read from the store.
//!
//! Every search scores every vector outside the index exactly. The searches' shared copy of
//! them (`vector_index::IndexCache`) is tagged with the vector generation, which every write
//! moves, so on a store being written the next search read them all again (up to 16,384
//! rows, megabytes, from a page cache the commit emptied). The writer's store tells the shared
//! [`VectorDelta`] of every committed change to them (`ctxgraph_store::VectorSink`: vectors
//! written with their values, deleted, filed into the index by a build), which keeps each in a
//! slot with the versions (vector generations) it was visible between. A search whose
//! snapshot's vector generation the delta covers scores the slots visible at it: the vectors
//! the store scan gives, with the same values, so the same scores. It follows the writer's
//! commits from the first one it is told of, and serves searches once a commit finds outside
//! the index exactly the vectors it holds (at once on a new store; on a store opened with
//! vectors outside the index, after the next build files them). A change it cannot follow (a
//! whole label deleted, the index dropped, a write through another connection, more vectors
//! than it keeps) starts it over from the next commit, and meanwhile searches read the store
//! as before. Same shape as the text delta (`text_delta`).

use std::collections::BTreeMap;

use ctxgraph_store::{VectorCommit, VectorSink};

use crate::delta_follow::{Following, Follows, Span};
use crate::text_delta::compaction_due;

/// Most vectors outside the index a delta holds (a megabyte per thousand at 256 dimensions):
/// twice what the server lets wait outside it ([`crate::MAX_CACHED_UNINDEXED`]), since writes
/// go on while a build runs. Past it, the delta lets go until a build brings them back under.
pub(crate) const MAX_DELTA_VECTORS: usize = 2 * crate::vector_index::MAX_CACHED_UNINDEXED;

/// The vectors outside the index of one store, shared by its engines (`Engine::set_index_caches`).
#[derive(Default)]
pub(crate) struct VectorDelta(Following<Followed>);

/// The vectors outside the index that the commits up to its span's version (a vector
/// generation) wrote, since the first commit followed, each visible from the version that
/// wrote it to the one that took it out.
struct Followed {
    /// The vector generations it answers for.
    span: Span,
    /// The vectors' dimension (0 before the first).
    dim: usize,
    /// Per slot: the nid, the version it became visible at, and the one it stopped at
    /// (`u64::MAX` while live); the values are `data[slot * dim..]`.
    slots: Vec<(i64, u64, u64)>,
    data: Vec<f32>,
    /// The live slot of each nid.
    live: BTreeMap<i64, usize>,
}

impl VectorDelta {
    /// Score every vector outside the index at vector generation `version` with
    /// `score(nid, vector)`, in no particular order; `false` (nothing scored) when the delta
    /// does not hold exactly that snapshot's vectors of `dim` dimensions.
    pub(crate) fn score(
        &self,
        version: u64,
        dim: usize,
        score: &mut dyn FnMut(i64, &[f32]),
    ) -> bool {
        let held = self.0.read();
        let Some(a) = held.as_ref().filter(|a| a.span.covers(version)) else { return false };
        if a.dim != dim && !a.slots.is_empty() {
            return false;
        }
        for (slot, &(nid, from, to)) in a.slots.iter().enumerate() {
            if (from..to).contains(&version) {
                score(nid, &a.data[slot * dim..(slot + 1) * dim]);
            }
        }
        true
    }
}

impl VectorSink for VectorDelta {
    fn wants_count(&self) -> bool {
        !self.0.serving()
    }

    fn committed(&self, commit: VectorCommit) {
        self.0.committed(commit);
    }
}

impl Follows for Followed {
    type Commit = VectorCommit;

    fn span(&self) -> &Span {
        &self.span
    }

    fn span_mut(&mut self) -> &mut Span {
        &mut self.span
    }

    fn held(&self) -> usize {
        self.live.len()
    }

    /// Moved over `commit`; `None` when it cannot hold what the commit wrote.
    fn follow(mut self, commit: &VectorCommit) -> Option<Followed> {
        for &nid in &commit.gone {
            self.remove(nid, commit.after);
        }
        for (nid, vector) in &commit.vectors {
            if !self.push(*nid, commit.after, vector) {
                return None;
            }
        }
        if compaction_due(self.slots.len(), self.live.len()) {
            self.compact(commit.after);
        }
        Some(self)
    }

    /// The vectors `commit` wrote outside the index, followed from there (complete once a commit
    /// counts them as all); `None` when it cannot hold them.
    fn start(commit: &VectorCommit) -> Option<Followed> {
        let mut a = Followed {
            span: Span::at(commit.after),
            dim: 0,
            slots: Vec::new(),
            data: Vec::new(),
            live: BTreeMap::new(),
        };
        for (nid, vector) in &commit.vectors {
            if !a.push(*nid, commit.after, vector) {
                return None;
            }
        }
        Some(a)
    }
}

impl Followed {
    /// Add `vector` as `nid`'s, visible from `version`; `false` when it cannot be held (another
    /// dimension, or more than [`MAX_DELTA_VECTORS`]).
    fn push(&mut self, nid: i64, version: u64, vector: &[f32]) -> bool {
        if self.slots.is_empty() {
            self.dim = vector.len();
        }
        if vector.len() != self.dim || self.live.len() >= MAX_DELTA_VECTORS {
            return false;
        }
        self.live.insert(nid, self.slots.len());
        self.slots.push((nid, version, u64::MAX));
        self.data.extend_from_slice(vector);
        true
    }

    /// Take `nid`'s vector out (if held) from `version` on.
    fn remove(&mut self, nid: i64, version: u64) {
        if let Some(slot) = self.live.remove(&nid) {
            self.slots[slot].2 = version;
        }
    }

    /// Keep only the live slots (versions before `at` can no longer be answered).
    fn compact(&mut self, at: u64) {
        let dim = self.dim;
        let mut data = Vec::with_capacity(self.live.len() * dim);
        let mut slots = Vec::with_capacity(self.live.len());
        for (nid, slot) in &mut self.live {
            let (_, from, to) = self.slots[*slot];
            data.extend_from_slice(&self.data[*slot * dim..(*slot + 1) * dim]);
            *slot = slots.len();
            slots.push((*nid, from, to));
        }
        self.slots = slots;
        self.data = data;
        self.span.floor = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(before: u64, vectors: &[(i64, f32)], outside: Option<u64>) -> VectorCommit {
        VectorCommit {
            before,
            after: before + 1,
            removed: false,
            gone: Vec::new(),
            vectors: vectors.iter().map(|&(nid, x)| (nid, vec![x, 1.0])).collect(),
            outside,
        }
    }

    /// What the delta scores at `version`, by nid (`None`: not held).
    fn seen(d: &VectorDelta, version: u64) -> Option<Vec<(i64, f32)>> {
        let mut out = Vec::new();
        d.score(version, 2, &mut |nid, v| out.push((nid, v[0]))).then(|| {
            out.sort_by_key(|p| p.0);
            out
        })
    }

    #[test]
    fn serves_once_a_commit_counts_all_it_holds() {
        let d = VectorDelta::default();
        // A vector outside the index that it was never told of: it follows, but cannot serve.
        d.committed(commit(0, &[(1, 1.0)], Some(2)));
        assert_eq!(seen(&d, 1), None);
        assert!(d.wants_count());
        // A build files the unknown one (and vector 1): what is left outside is known.
        let mut build = commit(1, &[(3, 3.0)], Some(1));
        build.gone = vec![1, 2];
        d.committed(build);
        assert!(!d.wants_count());
        assert_eq!(seen(&d, 2), Some(vec![(3, 3.0)]));
        assert_eq!(seen(&d, 1), None, "older than its completion");
        // Replaced, then deleted: an older snapshot still sees what it saw.
        let mut replaced = commit(2, &[(3, 4.0)], None);
        replaced.gone = vec![3];
        d.committed(replaced);
        let mut deleted = commit(3, &[(5, 5.0)], None);
        deleted.gone = vec![3];
        d.committed(deleted);
        assert_eq!(seen(&d, 2), Some(vec![(3, 3.0)]));
        assert_eq!(seen(&d, 3), Some(vec![(3, 4.0)]));
        assert_eq!(seen(&d, 4), Some(vec![(5, 5.0)]));
        assert_eq!(seen(&d, 5), None, "newer than its head");
        // A gap (a write it was not told of) starts it over.
        d.committed(commit(5, &[(6, 6.0)], None));
        assert_eq!(seen(&d, 6), None);
        assert!(d.wants_count());
    }

    #[test]
    fn an_unlisted_change_lets_go() {
        let d = VectorDelta::default();
        d.committed(commit(0, &[(1, 1.0)], Some(1)));
        assert_eq!(seen(&d, 1), Some(vec![(1, 1.0)]));
        let mut dropped = commit(1, &[], Some(5));
        dropped.removed = true;
        d.committed(dropped);
        assert_eq!(seen(&d, 2), None);
        assert_eq!(seen(&d, 1), None);
        // The next commit starts over, complete when it wrote all there is.
        d.committed(commit(2, &[(7, 7.0)], Some(1)));
        assert_eq!(seen(&d, 3), Some(vec![(7, 7.0)]));
    }

    #[test]
    fn rewriting_one_vector_again_and_again_stays_bounded() {
        let d = VectorDelta::default();
        d.committed(commit(0, &[(1, 1.0)], Some(1)));
        let rewrites = crate::text_delta::MIN_DEAD_BEFORE_COMPACTION as u64 + 10;
        for v in 1..=rewrites {
            let mut c = commit(v, &[(1, v as f32)], None);
            c.gone = vec![1];
            d.committed(c);
        }
        let head = rewrites + 1;
        assert_eq!(seen(&d, head), Some(vec![(1, rewrites as f32)]));
        assert_eq!(seen(&d, 2), None, "older than its compaction");
        let held = d.0.read();
        assert!(held.as_ref().unwrap().slots.len() < 100);
    }

    /// What a batch of writes does to the vectors, then how the batch's transaction ends.
    #[derive(Debug, Clone)]
    enum Write {
        New(u8),
        Replace(usize, u8),
        Delete(usize),
    }

    #[derive(Debug, Clone, Copy)]
    enum Build {
        None,
        /// Rebuilt in place (the index dropped and built again in the writer's transaction).
        InPlace,
        /// Built from a snapshot before the batch's writes, installed after them (a server's
        /// build off the writer).
        Install,
    }

    fn write() -> impl proptest::strategy::Strategy<Value = Write> {
        use proptest::prelude::*;
        prop_oneof![
            3 => any::<u8>().prop_map(Write::New),
            1 => (0usize..64, any::<u8>()).prop_map(|(i, s)| Write::Replace(i, s)),
            1 => (0usize..64).prop_map(Write::Delete),
        ]
    }

    fn build() -> impl proptest::strategy::Strategy<Value = Build> {
        use proptest::prelude::*;
        prop_oneof![3 => Just(Build::None), 1 => Just(Build::InPlace), 1 => Just(Build::Install)]
    }

    const DIM: usize = 8;

    /// A vector of `DIM` dimensions from a seed (ties between vectors are common).
    fn vector(seed: u8) -> Vec<f32> {
        (0..DIM).map(|d| f32::from((seed >> (d % 4)) & 3) - 1.5 + d as f32 * 0.125).collect()
    }

    /// Vectors by nid, in nid order.
    type Vectors = Vec<(i64, Vec<f32>)>;

    /// Every vector outside the index, from the delta (`None`: not held) and from the store.
    fn both(d: &VectorDelta, read: &dyn ctxgraph_store::GraphReader) -> (Option<Vectors>, Vectors) {
        let version = read.vector_generation().unwrap();
        let mut held = Vec::new();
        let served = d.score(version, DIM, &mut |nid, v| held.push((nid, v.to_vec())));
        held.sort_by_key(|p| p.0);
        let mut scanned = Vec::new();
        read.scan_unindexed_vectors(&mut |nid, v| scanned.push((nid, v.to_vec()))).unwrap();
        (served.then_some(held), scanned)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// The vectors outside the index that the shared delta holds are those the store scan
        /// gives, with the same values (so the same scores and the same search results), at the
        /// head and at an older snapshot, whatever the writes, replacements, deletions and
        /// builds; and it serves every snapshot but the one right after an in-place rebuild.
        #[test]
        fn the_delta_holds_what_the_store_scan_gives(
            batches in proptest::collection::vec(
                (proptest::collection::vec(write(), 0..8), build()), 1..8,
            ),
            queries in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..4),
        ) {
            use ctxgraph_ann::SearchParams;
            use ctxgraph_ontology::graph::{Node, NodeKey, Properties};
            use ctxgraph_store::{Embedded, GraphStore, OpenMode};

            use crate::vector_index::{self, IndexCache};

            let dir = tempfile::TempDir::new().unwrap();
            let path = dir.path().join("v.ctxg");
            let mut store = Embedded::open(&path, OpenMode::CreateIfMissing).unwrap();
            let other = Embedded::open(&path, OpenMode::MustExist).unwrap();
            let shared = IndexCache::default();
            let delta = shared.delta();
            let sink: std::sync::Arc<dyn VectorSink> = delta.clone();
            store.set_vector_sink(Some(sink));
            let mut w = store.begin_write().unwrap();
            w.set_embedding_model("test", DIM).unwrap();
            w.commit().unwrap();
            let mut keys: Vec<(NodeKey, bool)> = Vec::new();
            // Whether the delta should serve the head: from the first write on, but not after a
            // change it cannot follow (the index dropped) while a vector outside the index
            // that it was not told of (`unknown`) stays there.
            let mut serving = false;
            let mut unknown = std::collections::BTreeSet::new();
            for (writes, build) in &batches {
                let mut moved = !matches!(build, Build::None);
                // An older snapshot, read again after the batch commits.
                let old = other.begin_read().unwrap();
                let (old_held, old_scanned) = both(&delta, &old);
                let snapshot = match build {
                    Build::Install => vector_index::build(&old, 1).unwrap(),
                    Build::None | Build::InPlace => None,
                };
                let mut w = store.begin_write().unwrap();
                let mut rewritten = Vec::new();
                for write in writes {
                    match write {
                        Write::New(seed) => {
                            let key = NodeKey::new("Event", format!("e{}", keys.len()));
                            w.put_node(&Node { key: key.clone(), props: Properties::new() })
                                .unwrap();
                            w.put_vector(&key, &vector(*seed)).unwrap();
                            keys.push((key, true));
                            moved = true;
                        }
                        Write::Replace(i, seed) if !keys.is_empty() => {
                            let n = keys.len();
                            if let (key, true) = &keys[i % n] {
                                w.put_vector(key, &vector(*seed)).unwrap();
                                rewritten.extend(w.node_nid(key).unwrap());
                                moved = true;
                            }
                        }
                        Write::Delete(i) if !keys.is_empty() => {
                            let n = keys.len();
                            if let (key, live @ true) = &mut keys[i % n] {
                                w.delete_node(key).unwrap();
                                *live = false;
                                moved = true;
                            }
                        }
                        Write::Replace(..) | Write::Delete(_) => {}
                    }
                }
                let reset = matches!(build, Build::InPlace)
                    || matches!(build, Build::Install) && snapshot.is_none();
                match build {
                    Build::None => {}
                    Build::InPlace => {
                        vector_index::rebuild(&mut w, 1).unwrap();
                    }
                    Build::Install => vector_index::store_refiled(&mut w, snapshot.as_ref()).unwrap(),
                }
                w.commit().unwrap();
                let (held, scanned) = both(&delta, &old);
                proptest::prop_assert_eq!(&scanned, &old_scanned, "a snapshot does not move");
                if let Some(held) = held {
                    proptest::prop_assert_eq!(held, scanned, "an older snapshot");
                }
                drop(old);
                if let Some(held) = old_held {
                    proptest::prop_assert_eq!(held, old_scanned);
                }
                let read = other.begin_read().unwrap();
                let (held, scanned) = both(&delta, &read);
                let outside: std::collections::BTreeSet<i64> = scanned.iter().map(|p| p.0).collect();
                if reset {
                    serving = false;
                    unknown = outside;
                } else if moved {
                    unknown.retain(|nid| outside.contains(nid) && !rewritten.contains(nid));
                    serving |= unknown.is_empty();
                }
                match held {
                    Some(held) => proptest::prop_assert_eq!(held, scanned),
                    None => proptest::prop_assert!(!serving, "the delta follows every write"),
                }
                for &q in &queries {
                    let query = vector(q);
                    let params = SearchParams { nprobe: 2, candidates: 8 };
                    let from_delta = vector_index::nearest(&read, &shared, &query, 6, params).unwrap();
                    let fresh = IndexCache::default();
                    let from_store = vector_index::nearest(&read, &fresh, &query, 6, params).unwrap();
                    proptest::prop_assert_eq!(from_delta, from_store);
                }
            }
        }
    }

    #[test]
    fn more_vectors_than_it_keeps_let_go() {
        let d = VectorDelta::default();
        let many: Vec<(i64, f32)> = (0..=MAX_DELTA_VECTORS as i64).map(|n| (n, 0.0)).collect();
        d.committed(commit(0, &many[..10], Some(10)));
        assert!(seen(&d, 1).is_some());
        d.committed(commit(1, &many[10..], None));
        assert_eq!(seen(&d, 2), None);
        assert!(d.wants_count());
    }
}
