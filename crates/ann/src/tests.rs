//! Property tests against brute force, determinism across thread counts, and a recall check on
//! realistic vectors.

use proptest::prelude::*;

use crate::*;

#[path = "../examples/support/corpus.rs"]
mod corpus;

/// splitmix64: a tiny deterministic generator for test data (the crate's unit tests use it too).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub(crate) fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// `n` unit vectors around `clusters` random centres, `spread` apart from them; every fifth row
/// repeats an earlier row, as near-duplicate texts do.
fn clustered(seed: u64, n: usize, dim: usize, clusters: usize, spread: f32) -> Vec<f32> {
    let mut rng = Rng(seed);
    let centres: Vec<f32> = (0..clusters.max(1) * dim).map(|_| rng.unit()).collect();
    let mut out: Vec<f32> = Vec::with_capacity(n * dim);
    for i in 0..n {
        if i % 5 == 4 {
            let j = (rng.next() as usize) % i;
            out.extend_from_within(j * dim..(j + 1) * dim);
            continue;
        }
        let c = (rng.next() as usize) % clusters.max(1);
        let start = out.len();
        out.extend((0..dim).map(|d| centres[c * dim + d] + spread * rng.unit()));
        crate::quant::normalize(&mut out[start..]);
    }
    out
}

/// Distinct ids in no particular order, negative ones included.
fn ids(n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| (i * 7919) % 10_007 - 5_000).collect()
}

/// The int8 score of rows `i` and `j`, computed independently of the crate's packing.
fn code_score(vectors: &[f32], dim: usize, i: usize, j: usize) -> f32 {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let sa = quantize(&vectors[i * dim..(i + 1) * dim], &mut a);
    let sb = quantize(&vectors[j * dim..(j + 1) * dim], &mut b);
    sa * sb * dot_i8(&a, &b) as f32
}

/// The join by brute force: every vector's top `k` over all others.
fn naive_join(
    ids: &[i64],
    vectors: &[f32],
    dim: usize,
    k: usize,
    threshold: f32,
) -> Vec<(i64, i64, f32)> {
    let n = ids.len();
    let mut pairs = Vec::new();
    for i in 0..n {
        let mut scored: Vec<(f32, i64)> = (0..n)
            .filter(|&j| j != i)
            .map(|j| (code_score(vectors, dim, i, j), ids[j]))
            .filter(|&(s, _)| s >= threshold)
            .collect();
        scored.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
        pairs.extend(scored.into_iter().take(k).map(|(s, o)| (ids[i].max(o), ids[i].min(o), s)));
    }
    pairs.sort_by_key(|p| (p.0, p.1));
    pairs.dedup_by(|x, y| (x.0, x.1) == (y.0, y.1));
    pairs
}

fn train_cfg(lists: usize, threads: usize) -> TrainConfig {
    TrainConfig { lists, sample_per_list: 16, iterations: 6, threads }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn full_probe_scan_then_rerank_equals_exact(
        seed in any::<u64>(), n in 1usize..160, dim in 1usize..40, lists in 1usize..9, k in 1usize..12,
    ) {
        let vectors = clustered(seed, n, dim, 4, 0.5);
        let ids = ids(n);
        let centroids = train(&vectors, dim, &train_cfg(lists, 2))?;
        let assignment = assign(&centroids, &vectors, 2)?;
        let blobs = encode_lists(&ids, &vectors, &centroids, &assignment, 2)?;
        let query = clustered(seed ^ 1, 1, dim, 1, 0.0);
        let probed = centroids.probe(&query, centroids.len());
        prop_assert_eq!(probed.len(), centroids.len());
        let views: Vec<ListView<'_>> =
            probed.iter().map(|&l| ListView::parse(dim, &blobs[l as usize])).collect::<Result<_, _>>()?;
        let candidates = scan(&query, &views, n)?;
        prop_assert_eq!(candidates.len(), n);
        let cand_ids: Vec<i64> = candidates.iter().map(|c| c.0).collect();
        let cand_vectors: Vec<f32> = cand_ids
            .iter()
            .flat_map(|id| {
                let row = ids.iter().position(|x| x == id).unwrap();
                vectors[row * dim..(row + 1) * dim].to_vec()
            })
            .collect();
        let found = exact_top_k(&query, &cand_ids, &cand_vectors, k)?;
        let truth = exact_top_k(&query, &ids, &vectors, k)?;
        prop_assert_eq!(&found, &truth);
        prop_assert_eq!(recall_at_k(&truth, &found, k), 1.0);
    }

    #[test]
    fn a_scan_of_grouped_duplicates_equals_scoring_every_member(
        seed in any::<u64>(), n in 1usize..200, dim in 1usize..24, distinct in 1usize..6,
        lists in 1usize..5, candidates in 0usize..40,
    ) {
        // Few distinct vectors, each repeated under many ids: big groups, many ties.
        let base = clustered(seed, distinct, dim, 2, 0.5);
        let vectors: Vec<f32> = (0..n)
            .flat_map(|i| {
                let row = (i * 7 + i / 3) % distinct;
                base[row * dim..(row + 1) * dim].to_vec()
            })
            .collect();
        let ids = ids(n);
        let centroids = train(&vectors, dim, &train_cfg(lists, 2))?;
        let assignment = assign(&centroids, &vectors, 2)?;
        let blobs = encode_lists(&ids, &vectors, &centroids, &assignment, 2)?;
        let query = clustered(seed ^ 5, 1, dim, 1, 0.0);
        let views: Vec<ListView<'_>> =
            blobs.iter().map(|b| ListView::parse(dim, b)).collect::<Result<_, _>>()?;
        prop_assert!(views.iter().map(ListView::groups_len).sum::<usize>() <= distinct);
        // Every member scored on its own, ties to the lower id.
        let mut qcodes = Vec::new();
        let qscale = quantize(&query, &mut qcodes);
        let mut every: Vec<(i64, f32)> = (0..n)
            .map(|i| {
                let mut codes = Vec::new();
                let scale = quantize(&vectors[i * dim..(i + 1) * dim], &mut codes);
                (ids[i], qscale * scale * dot_i8(&qcodes, &codes) as f32)
            })
            .collect();
        every.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        every.truncate(candidates);
        prop_assert_eq!(scan(&query, &views, candidates)?, every);
    }

    #[test]
    fn builds_are_identical_for_any_thread_count_and_run(
        seed in any::<u64>(), n in 1usize..300, dim in 1usize..24, lists in 1usize..12,
    ) {
        let vectors = clustered(seed, n, dim, 6, 0.3);
        let ids = ids(n);
        let join = |threads| JoinConfig { k: 3, threshold: 0.8, probes: 2, threads };
        let build = |threads: usize| -> Result<_, Error> {
            let c = train(&vectors, dim, &train_cfg(lists, threads))?;
            let a = assign(&c, &vectors, threads)?;
            let blobs = encode_lists(&ids, &vectors, &c, &a, threads)?;
            let pairs = similarity_join(&ids, &vectors, dim, &c, &a, &join(threads))?;
            Ok((c.to_bytes(), a, blobs, pairs))
        };
        let one = build(1)?;
        prop_assert_eq!(&one, &build(1)?);
        prop_assert_eq!(&one, &build(2)?);
        prop_assert_eq!(&one, &build(3)?);
    }

    #[test]
    fn a_build_streamed_in_pages_equals_the_build_over_every_row(
        seed in any::<u64>(), n in 1usize..300, dim in 1usize..24, lists in 1usize..12,
        page in 1usize..80, threads in 1usize..4,
    ) {
        let vectors = clustered(seed, n, dim, 6, 0.3);
        let ids = ids(n);
        let cfg = train_cfg(lists, threads);
        let c = train(&vectors, dim, &cfg)?;
        let a = assign(&c, &vectors, threads)?;
        let blobs = encode_lists(&ids, &vectors, &c, &a, threads)?;

        let mut sample = Vec::new();
        for row in sample_rows(n, &cfg) {
            sample.extend_from_slice(&vectors[row * dim..(row + 1) * dim]);
        }
        let streamed = train_sampled(sample, dim, &cfg)?;
        prop_assert_eq!(streamed.to_bytes(), c.to_bytes());
        let mut builder = ListsBuilder::new(&streamed);
        let mut assigned = Vec::new();
        for start in (0..n).step_by(page) {
            let end = (start + page).min(n);
            assigned.extend(builder.push(&ids[start..end], &vectors[start * dim..end * dim], threads)?);
        }
        prop_assert_eq!(assigned, a);
        prop_assert_eq!(builder.finish(), blobs);
    }

    #[test]
    fn join_matches_brute_force_when_probing_every_list(
        seed in any::<u64>(), n in 1usize..120, dim in 2usize..24, lists in 1usize..8,
        k in 1usize..6, threshold in 0.3f32..0.99,
    ) {
        let vectors = clustered(seed, n, dim, 3, 0.4);
        let ids = ids(n);
        let c = train(&vectors, dim, &train_cfg(lists, 2))?;
        let a = assign(&c, &vectors, 2)?;
        let cfg = JoinConfig { k, threshold, probes: c.len(), threads: 2 };
        let pairs = similarity_join(&ids, &vectors, dim, &c, &a, &cfg)?;
        prop_assert_eq!(pairs, naive_join(&ids, &vectors, dim, k, threshold));
    }

    #[test]
    fn join_pairs_are_well_formed(
        seed in any::<u64>(), n in 1usize..400, dim in 2usize..24, lists in 1usize..20,
        k in 1usize..6, threshold in 0.3f32..0.99, probes in 1usize..4,
    ) {
        let vectors = clustered(seed, n, dim, 5, 0.4);
        let ids = ids(n);
        let c = train(&vectors, dim, &train_cfg(lists, 2))?;
        let a = assign(&c, &vectors, 2)?;
        let cfg = JoinConfig { k, threshold, probes, threads: 2 };
        let pairs = similarity_join(&ids, &vectors, dim, &c, &a, &cfg)?;
        prop_assert!(pairs.len() <= k * n);
        prop_assert!(pairs.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
        for &(x, y, s) in &pairs {
            prop_assert!(x > y);
            prop_assert!(s >= threshold);
            let (i, j) = (ids.iter().position(|&v| v == x).unwrap(), ids.iter().position(|&v| v == y).unwrap());
            prop_assert_eq!(s, code_score(&vectors, dim, i, j));
        }
    }
}

#[test]
fn assign_with_many_lists_is_the_exact_nearest_and_thread_independent() {
    let (n, dim) = (4_000, 24);
    let vectors = clustered(9, n, dim, 150, 0.15);
    let cfg = TrainConfig { lists: 120, sample_per_list: 20, iterations: 4, threads: 1 };
    let c = train(&vectors, dim, &cfg).unwrap();
    assert_eq!(c.len(), 120);
    assert_eq!(c, train(&vectors, dim, &TrainConfig { threads: 2, ..cfg.clone() }).unwrap());
    let a = assign(&c, &vectors, 2).unwrap();
    assert_eq!(a, assign(&c, &vectors, 1).unwrap());
    for (i, v) in vectors.chunks_exact(dim).enumerate() {
        let exact = (0..c.len() as u32)
            .map(|l| (dot_f32(v, c.get(l).unwrap()), l))
            .fold((f32::NEG_INFINITY, 0), |b, x| if x.0 > b.0 { x } else { b });
        assert_eq!(a[i], exact.1, "row {i}");
    }
}

#[test]
fn join_refuses_mismatched_input() {
    let vectors = clustered(1, 10, 4, 2, 0.1);
    let ids = ids(10);
    let c = train(&vectors, 4, &train_cfg(2, 1)).unwrap();
    let a = assign(&c, &vectors, 1).unwrap();
    let cfg = JoinConfig::default();
    assert!(matches!(
        similarity_join(&ids[..9], &vectors, 4, &c, &a, &cfg),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        similarity_join(&ids, &vectors, 4, &c, &a[..9], &cfg),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        similarity_join(&ids, &vectors[..38], 4, &c, &a, &cfg),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        similarity_join(&ids, &vectors, 2, &c, &a, &cfg),
        Err(Error::Dimension { .. })
    ));
    let bad: Vec<u32> = a.iter().map(|_| 99).collect();
    assert!(matches!(similarity_join(&ids, &vectors, 4, &c, &bad, &cfg), Err(Error::Shape { .. })));
    let none = JoinConfig { k: 0, ..cfg };
    assert!(similarity_join(&ids, &vectors, 4, &c, &a, &none).unwrap().is_empty());
}

#[test]
fn scan_refuses_a_query_of_the_wrong_dimension() {
    let blob = encode_list(3, &[(1, 0.1, &[1, 2, 3][..])]);
    let view = ListView::parse(3, &blob).unwrap();
    assert_eq!(scan(&[1.0, 0.0], &[view], 5), Err(Error::Dimension { expected: 3, got: 2 }));
    assert_eq!(scan(&[1.0, 0.0, 0.0], &[view], 5).unwrap().len(), 1);
}

/// A real quality check: recall@10 of the default parameters against exact search, on vectors
/// the built-in model makes of synthetic event texts: held-out event texts, and 4-word snippets
/// of them as short search queries.
#[test]
fn default_parameters_reach_recall_at_10_on_realistic_vectors() {
    const K: usize = 10;
    let (n, q) = (5_000, 100);
    let texts = corpus::texts(n + q, 42).unwrap();
    let (_, held_out) = corpus::split_texts(&texts, n, q);
    let snippets: Vec<String> = held_out
        .iter()
        .map(|t| {
            let words: Vec<&str> = t.split_whitespace().collect();
            let from = words.len().saturating_sub(4) / 2;
            words[from..(from + 4).min(words.len())].join(" ")
        })
        .collect();
    let (all, dim) = corpus::embed(&texts).unwrap();
    let c = corpus::split(all, dim, n, q);
    let (snippet_vectors, _) = corpus::embed(&snippets).unwrap();

    let cfg = TrainConfig::for_count(n);
    let centroids = train(&c.vectors, dim, &cfg).unwrap();
    let assignment = assign(&centroids, &c.vectors, cfg.threads).unwrap();
    let blobs = encode_lists(&c.ids, &c.vectors, &centroids, &assignment, cfg.threads).unwrap();
    let params = SearchParams::default();
    for (what, queries) in [("event texts", &c.queries), ("snippets", &snippet_vectors)] {
        let mut total = 0.0;
        for query in queries.chunks_exact(dim) {
            let views: Vec<ListView<'_>> = centroids
                .probe(query, params.nprobe)
                .iter()
                .map(|&l| ListView::parse(dim, &blobs[l as usize]).unwrap())
                .collect();
            let candidates = scan(query, &views, params.candidates).unwrap();
            let ids: Vec<i64> = candidates.iter().map(|c| c.0).collect();
            let vectors: Vec<f32> =
                ids.iter().flat_map(|&id| c.vectors[id as usize * dim..][..dim].to_vec()).collect();
            let found = exact_top_k(query, &ids, &vectors, K).unwrap();
            let truth = exact_top_k(query, &c.ids, &c.vectors, K).unwrap();
            total += recall_at_k(&truth, &found, K);
        }
        let recall = total / q as f64;
        assert!(recall >= 0.95, "recall@10 of {what} = {recall:.4}");
    }
}
