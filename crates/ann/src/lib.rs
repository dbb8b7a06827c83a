//! ctxgraph's approximate-nearest-neighbour vector index: an inverted file (IVF) of int8 codes.
//!
//! Pure algorithms, no I/O: the store persists [`Centroids::to_bytes`] and one
//! [`encode_list`] blob per list, and hands blobs back as [`ListView`]s.
//!
//! # Why an inverted file, rebuilt from scratch
//!
//! Graph indexes (HNSW) answer queries well but took minutes to build over 100k vectors on a
//! 2-core machine and update in place in ways that do not fit one blob per key. An inverted file
//! trains `lists ≈ √n` centroids by spherical k-means ([`train`]), puts every vector in the list
//! of its nearest centroid ([`assign`]), and stores each member as an int8 code ([`quantize`]),
//! a quarter of the f32 size; members with identical codes and scale (near-duplicate texts,
//! common in agent traces) are stored once per list as a group, which a search scores once. The
//! `consolidate` stage rebuilds it deterministically: the same vectors give the same centroids,
//! lists and blobs, whatever the thread count.
//!
//! # Searching
//!
//! ```
//! use ctxgraph_ann::{
//!     ListView, SearchParams, TrainConfig, assign, encode_lists, exact_top_k, scan, train,
//! };
//!
//! // Four unit vectors in 2-d, ids 10..14.
//! let dim = 2;
//! let ids = [10, 11, 12, 13];
//! let vectors = [1.0, 0.0, 0.8, 0.6, 0.0, 1.0, -0.6, 0.8];
//! let cfg = TrainConfig { lists: 2, ..TrainConfig::for_count(ids.len()) };
//! let centroids = train(&vectors, dim, &cfg)?;
//! let lists = assign(&centroids, &vectors, cfg.threads)?;
//!
//! // One blob per list, as the store keeps them.
//! let blobs = encode_lists(&ids, &vectors, &centroids, &lists, cfg.threads)?;
//!
//! // A query: probe the nearest lists, scan their codes, re-rank the candidates exactly.
//! let query = [0.6, 0.8];
//! let params = SearchParams::default();
//! let views = centroids
//!     .probe(&query, params.nprobe)
//!     .into_iter()
//!     .map(|l| ListView::parse(dim, &blobs[l as usize]))
//!     .collect::<Result<Vec<_>, _>>()?;
//! let candidates = scan(&query, &views, params.candidates)?;
//! // The store fetches the candidates' f32 vectors; here row `id - 10`.
//! let cand_ids: Vec<i64> = candidates.iter().map(|c| c.0).collect();
//! let cand_vectors: Vec<f32> = cand_ids
//!     .iter()
//!     .flat_map(|&id| vectors[(id as usize - 10) * dim..][..dim].to_vec())
//!     .collect();
//! let top = exact_top_k(&query, &cand_ids, &cand_vectors, 2)?;
//! assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), [11, 12]);
//! # Ok::<(), ctxgraph_ann::Error>(())
//! ```
//!
//! # Determinism and threads
//!
//! [`train`], [`assign`] and [`similarity_join`] take a thread count and split work with
//! `std::thread::scope`; each result is computed the same way whichever thread computes it, and
//! results are put together in input order, so the output is bit-identical for any thread count.
//! Dot products have a fixed summation order ([`dot_f32`]).
//!
//! # Measured
//!
//! `cargo run --release -p ctxgraph-ann --example recall -- --vectors 1000000` embeds synthetic
//! event texts with the built-in model and prints build time, memory, query time and recall@10
//! against exact search; [`SearchParams::DEFAULT`] and [`TrainConfig::for_count`] come from it.
//! On 2 shared cores:
//!
//! | vectors   | lists | train  | assign | query (`nprobe` 32) | recall@10 events / snippets | join    |
//! |-----------|-------|--------|--------|---------------------|-----------------------------|---------|
//! | 100,000   | 316   | 0.85 s | 0.34 s | 0.5 ms              | 1.000 / 0.995               | 0.84 s  |
//! | 1,000,000 | 1,000 | 4.5 s  | 5.3 s  | 1.6 ms              | 1.000 / 0.970               | 15.5 s  |

mod blob;
mod centroids;
mod error;
mod join;
mod list;
mod nearest;
mod parallel;
mod quant;
mod search;
mod simd;
mod train;

#[cfg(test)]
mod tests;

pub use centroids::Centroids;
pub use error::Error;
pub use join::{JoinConfig, similarity_join};
pub use list::{
    CheckedList, ListView, ListsBuilder, append_to_list, encode_list, encode_lists, without_members,
};
pub use parallel::map_items;
pub use quant::{dot_f32, dot_i8, dot_i8_bytes, quantize};
pub use search::{RECALL_TIE_EPSILON, SearchParams, exact_top_k, recall_at_k, scan};
pub use train::{TrainConfig, assign, sample_rows, train, train_sampled};
