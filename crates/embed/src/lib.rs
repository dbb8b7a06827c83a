//! ctxgraph's text embeddings: the [`Embedder`] interface and the built-in model,
//! [`StaticEmbedder`], which works offline on a fresh clone with no Python and no download.
//!
//! # Why the interface has this shape
//!
//! [`Embedder`] is one blocking, object-safe trait, like the store traits:
//!
//! - **Batch in, vectors out.** `embed(&[&str]) -> Vec<Vec<f32>>` takes many texts at once,
//!   because every real backend is faster per text in batches (a transformer pads a batch into
//!   one matrix product, a remote service takes one request) and ingestion naturally has batches.
//!   The result has one vector per text, in order, so callers zip it with their input.
//! - **Known dimension and model id.** A store that keeps vectors must record which model made
//!   them and how long they are: vectors from different models are not comparable, so changing
//!   the model means re-embedding, and a store refuses to mix them. [`Embedder::model_id`] and
//!   [`Embedder::dimension`] are what it records and checks, without embedding anything.
//! - **Blocking, `Send + Sync`, `&self`.** Embedding is CPU work (or a call the implementor makes
//!   blocking); one shared instance serves many threads, and an async caller moves the call to a
//!   blocking thread. Object safety lets the engine hold a `Box<dyn Embedder>` chosen at run
//!   time (the built-in model, or another backend later).
//! - **Fallible.** Loading a model and remote backends can fail; errors carry stable codes
//!   ([`EmbedError::code`]).
//!
//! # The built-in model
//!
//! [`StaticEmbedder::builtin`] is a static ("bag of token embeddings") model distilled from
//! sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) with model2vec: 256 dimensions, one int8
//! row per WordPiece token. Embedding a text is: BERT tokenisation, a table lookup per token, the
//! mean of the rows, L2 normalisation. The files are compiled into the binary; see
//! `crates/embed/model/README.md` for provenance, the file format, how to rebuild them and the
//! measured quality.
//!
//! ```
//! use ctxgraph_embed::{Embedder, StaticEmbedder};
//!
//! let model = StaticEmbedder::builtin()?;
//! let v = model.embed(&["the database query timed out", "the SQL call hit a timeout"])?;
//! assert_eq!(v.len(), 2);
//! assert_eq!(v[0].len(), model.dimension());
//! let cosine: f32 = v[0].iter().zip(&v[1]).map(|(a, b)| a * b).sum();
//! assert!(cosine > 0.4);
//! # Ok::<(), ctxgraph_embed::EmbedError>(())
//! ```
//!
//! # Other embedders
//!
//! - Feature `http`: `HttpEmbedder`, a client of OpenAI-compatible `/embeddings` endpoints.
//! - Feature `minilm`: `MiniLmEmbedder`, the all-MiniLM-L6-v2 transformer the built-in model was
//!   distilled from, run in-process on the CPU (candle, pure Rust) from the upstream files in a
//!   directory (`crates/embed/models/fetch-minilm.sh DIR` fetches them): clearly better vectors,
//!   at a small fraction of the built-in model's speed.

#![warn(missing_docs)]

mod error;
mod format;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "minilm")]
mod minilm;
mod normalize;
mod static_model;
mod tokenizer;
mod unicode_tables;

#[cfg(test)]
mod tests;

pub use error::EmbedError;
#[cfg(feature = "http")]
pub use http::HttpEmbedder;
#[cfg(feature = "minilm")]
pub use minilm::MiniLmEmbedder;
pub use static_model::StaticEmbedder;

/// Turns texts into fixed-length vectors.
///
/// Implementations are deterministic for a given model (the same text gives the same vector)
/// and return exactly one vector of [`Embedder::dimension`] floats per input text, in input
/// order.
pub trait Embedder: Send + Sync {
    /// Identifies the model (and its version) that produces the vectors. Vectors from two
    /// different ids must not be compared; a store records this id next to its vectors.
    fn model_id(&self) -> &str;

    /// The length of every vector this embedder returns.
    fn dimension(&self) -> usize;

    /// Embeds a batch of texts: one vector per text, in order.
    ///
    /// # Errors
    ///
    /// An [`EmbedError`] if the backend fails; the built-in [`StaticEmbedder`] never does.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}
