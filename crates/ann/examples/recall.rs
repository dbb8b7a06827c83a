//! Measures the vector index on realistic vectors: build time, memory, query time and recall@10
//! against exact search for several `nprobe`, and the similarity join.
//!
//! ```text
//! cargo run --release -p ctxgraph-ann --example recall -- --vectors 1000000
//! ```
//!
//! The vectors are the built-in model's embeddings of the stage-2 enrichment texts of a
//! synthetic trace. Two query sets, both held out of the index: whole event texts (every
//! `(n + q) / q`-th event; the column "unseen" restricts them to texts that do not also occur
//! verbatim in the index), and 4-word snippets from the middle of those texts, which stand for
//! short search queries and sit far from any centroid.
//!
//! Options: `--vectors N` (100000), `--queries Q` (200), `--seed S` (42), `--nprobe A,B,..`
//! (1,2,4,8,16,32), `--candidates A,B,..` (from `SearchParams::DEFAULT`), `--threads T` (all
//! cores), `--no-join`.

#[path = "support/corpus.rs"]
mod corpus;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use corpus::BoxError;
use ctxgraph_ann::{
    Centroids, JoinConfig, ListView, SearchParams, TrainConfig, assign, encode_lists, exact_top_k,
    recall_at_k, scan, similarity_join, train,
};

/// Neighbours asked for per query.
const K: usize = 10;
/// Words in a snippet query.
const SNIPPET_WORDS: usize = 4;

struct Args {
    vectors: usize,
    queries: usize,
    seed: u64,
    nprobe: Vec<usize>,
    candidates: Vec<usize>,
    threads: usize,
    join: bool,
}

fn parse_args() -> Result<Args, BoxError> {
    let mut args = Args {
        vectors: 100_000,
        queries: 200,
        seed: 42,
        nprobe: vec![1, 2, 4, 8, 16, 32],
        candidates: vec![SearchParams::DEFAULT.candidates],
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        join: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--no-join" {
            args.join = false;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--vectors" => args.vectors = value.parse()?,
            "--queries" => args.queries = value.parse()?,
            "--seed" => args.seed = value.parse()?,
            "--candidates" => {
                args.candidates = value.split(',').map(str::parse).collect::<Result<_, _>>()?
            }
            "--threads" => args.threads = value.parse()?,
            "--nprobe" => {
                args.nprobe = value.split(',').map(str::parse).collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(args)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The index as the store would hold it.
struct Index<'a> {
    dim: usize,
    vectors: &'a [f32],
    centroids: Centroids,
    blobs: Vec<Vec<u8>>,
}

/// Recall and cost of one query set at one `nprobe`.
struct Stats {
    recall: f64,
    worst: f64,
    scanned: f64,
    ms: f64,
    /// Mean recall over the queries flagged in `subset`, and how many there were.
    subset: (f64, usize),
}

fn measure(
    index: &Index<'_>,
    queries: &[f32],
    truth: &[Vec<(i64, f32)>],
    subset: &[bool],
    nprobe: usize,
    candidates: usize,
) -> Result<Stats, BoxError> {
    let dim = index.dim;
    let (mut recall, mut worst, mut scanned, mut sub) = (0.0, 1.0f64, 0usize, (0.0, 0usize));
    let t = Instant::now();
    for ((q, truth), &flag) in queries.chunks_exact(dim).zip(truth).zip(subset) {
        let views: Vec<ListView<'_>> = index
            .centroids
            .probe(q, nprobe)
            .iter()
            .map(|&l| ListView::parse(dim, &index.blobs[l as usize]))
            .collect::<Result<_, _>>()?;
        scanned += views.iter().map(ListView::len).sum::<usize>();
        let found = scan(q, &views, candidates)?;
        // The store's part: fetch the candidates' f32 vectors and re-rank exactly.
        let ids: Vec<i64> = found.iter().map(|c| c.0).collect();
        let vectors: Vec<f32> = ids
            .iter()
            .flat_map(|&id| index.vectors[id as usize * dim..][..dim].iter().copied())
            .collect();
        let found = exact_top_k(q, &ids, &vectors, K)?;
        let r = recall_at_k(truth, &found, K);
        if r < 0.5 && std::env::var_os("ANN_DEBUG").is_some() {
            eprintln!("nprobe {nprobe} recall {r}\n truth {truth:?}\n found {found:?}");
        }
        recall += r;
        worst = worst.min(r);
        if flag {
            sub = (sub.0 + r, sub.1 + 1);
        }
    }
    let nq = truth.len().max(1) as f64;
    Ok(Stats {
        recall: recall / nq,
        worst,
        scanned: scanned as f64 / nq,
        ms: t.elapsed().as_secs_f64() * 1e3 / nq,
        subset: (sub.0 / sub.1.max(1) as f64, sub.1),
    })
}

fn main() -> Result<(), BoxError> {
    let args = parse_args()?;
    let t = Instant::now();
    let texts = corpus::texts(args.vectors + args.queries, args.seed)?;
    let t_texts = t.elapsed();
    let t = Instant::now();
    let (all, dim) = corpus::embed(&texts)?;
    let t_embed = t.elapsed();
    let c = corpus::split(all, dim, args.vectors, args.queries);
    let n = c.ids.len();
    let (unseen, distinct, snippets) = {
        let (indexed, held_out) = corpus::split_texts(&texts, args.vectors, args.queries);
        let distinct: HashSet<&str> = indexed.iter().copied().collect();
        let unseen: Vec<bool> = held_out.iter().map(|t| !distinct.contains(t)).collect();
        let snippets: Vec<String> = held_out
            .iter()
            .map(|t| {
                let words: Vec<&str> = t.split_whitespace().collect();
                let from = words.len().saturating_sub(SNIPPET_WORDS) / 2;
                words[from..(from + SNIPPET_WORDS).min(words.len())].join(" ")
            })
            .collect();
        (unseen, distinct.len(), snippets)
    };
    drop(texts);
    let (snippet_vectors, _) = corpus::embed(&snippets)?;
    println!("{n} vectors of {dim} dimensions, seed {}, {} threads", args.seed, args.threads);
    println!("trace + enrichment text: {}, embedding: {}", secs(t_texts), secs(t_embed));
    println!(
        "distinct texts: {distinct} of {n} ({:.1}%); held-out event texts not in the index: {} of {}",
        100.0 * distinct as f64 / n as f64,
        unseen.iter().filter(|&&u| u).count(),
        unseen.len()
    );

    let cfg = TrainConfig { threads: args.threads, ..TrainConfig::for_count(n) };
    let t = Instant::now();
    let centroids = train(&c.vectors, dim, &cfg)?;
    let t_train = t.elapsed();
    let t = Instant::now();
    let assignment = assign(&centroids, &c.vectors, args.threads)?;
    let t_assign = t.elapsed();
    let t = Instant::now();
    let blobs = encode_lists(&c.ids, &c.vectors, &centroids, &assignment, args.threads)?;
    let t_encode = t.elapsed();
    let lists = centroids.len();
    let mut sizes: Vec<usize> =
        blobs.iter().map(|b| ListView::parse(dim, b).map_or(0, |v| v.len())).collect();
    sizes.sort_unstable();
    let imbalance =
        sizes.iter().map(|&s| (s * s) as f64).sum::<f64>() * lists as f64 / (n as f64 * n as f64);
    let code_bytes: usize = blobs.iter().map(Vec::len).sum();
    println!(
        "lists {lists} (asked {}), k-means sample {} rows, {} iterations",
        cfg.lists,
        (cfg.lists * cfg.sample_per_list).min(n),
        cfg.iterations,
    );
    println!(
        "build: train {}, assign {}, encode {}; list sizes min {} median {} max {}, imbalance {imbalance:.2}",
        secs(t_train),
        secs(t_assign),
        secs(t_encode),
        sizes.first().unwrap_or(&0),
        sizes.get(sizes.len() / 2).unwrap_or(&0),
        sizes.last().unwrap_or(&0),
    );
    println!(
        "memory: list blobs {:.1} MB ({} bytes a vector), centroids {:.1} MB; f32 vectors {:.1} MB",
        code_bytes as f64 / 1e6,
        dim + 12,
        centroids.to_bytes().len() as f64 / 1e6,
        (n * dim * 4) as f64 / 1e6
    );

    let index = Index { dim, vectors: &c.vectors, centroids, blobs };
    let t = Instant::now();
    let truth = |queries: &[f32]| -> Result<Vec<Vec<(i64, f32)>>, BoxError> {
        Ok(queries
            .chunks_exact(dim)
            .map(|q| exact_top_k(q, &c.ids, &c.vectors, K))
            .collect::<Result<_, _>>()?)
    };
    let event_truth = truth(&c.queries)?;
    let snippet_truth = truth(&snippet_vectors)?;
    let exact_ms =
        t.elapsed().as_secs_f64() * 1e3 / (event_truth.len() + snippet_truth.len()).max(1) as f64;
    println!("exact search (ground truth): {exact_ms:.1} ms a query");

    println!(
        "\n| nprobe | candidates | scanned | event query ms | event recall@10 | (min) | unseen-text recall@10 | snippet query ms | snippet recall@10 | (min) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let all = vec![false; snippet_truth.len()];
    for (&nprobe, &candidates) in
        args.nprobe.iter().flat_map(|p| args.candidates.iter().map(move |c| (p, c)))
    {
        let e = measure(&index, &c.queries, &event_truth, &unseen, nprobe, candidates)?;
        let s = measure(&index, &snippet_vectors, &snippet_truth, &all, nprobe, candidates)?;
        println!(
            "| {nprobe} | {candidates} | {:.0} | {:.2} | {:.4} | {:.1} | {:.4} ({} q) | {:.2} | {:.4} | {:.1} |",
            e.scanned, e.ms, e.recall, e.worst, e.subset.0, e.subset.1, s.ms, s.recall, s.worst
        );
    }

    if args.join {
        let cfg = JoinConfig { threads: args.threads, ..JoinConfig::default() };
        let t = Instant::now();
        let pairs = similarity_join(&c.ids, &c.vectors, dim, &index.centroids, &assignment, &cfg)?;
        println!(
            "\njoin (k {}, threshold {}, probes {}): {}, {} pairs, {:.2} pairs a vector",
            cfg.k,
            cfg.threshold,
            cfg.probes,
            secs(t.elapsed()),
            pairs.len(),
            pairs.len() as f64 / n as f64
        );
    }
    Ok(())
}
