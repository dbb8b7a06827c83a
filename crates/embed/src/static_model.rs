//! [`StaticEmbedder`]: the built-in static embedding model (token rows, mean, L2 norm).

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use crate::format::{Config, Matrix};
use crate::tokenizer::Tokenizer;
use crate::{EmbedError, Embedder};

const BUILTIN_CONFIG: &[u8] = include_bytes!("../model/config.json");
const BUILTIN_VOCAB: &str = include_str!("../model/vocab.txt");
const BUILTIN_EMBEDDINGS: &[u8] = include_bytes!("../model/embeddings.bin");

/// A static embedding model: every vocabulary token has one vector, and a text's vector is the
/// mean of its tokens' vectors, L2-normalised.
///
/// It reproduces model2vec's `StaticModel.encode` for the same files: BERT WordPiece
/// tokenisation (lowercasing, accent stripping, punctuation and CJK characters as words of their
/// own), the first 3072 characters and first 512 tokens of a text, unknown words dropped.
///
/// A text with no known token (empty, only whitespace or control characters, only unknown
/// symbols such as emoji, or words over 100 characters) embeds to the **zero vector**: it
/// carries no signal, its dot product with every vector is 0, and a caller ranking by cosine
/// should treat it as unrelated to everything. Punctuation is in the vocabulary, so a text of
/// only punctuation gets a (weak, non-zero) vector.
///
/// Embedding is deterministic: the same text gives a bit-identical vector, alone or in any
/// batch, on every run (integer lookups and float additions in a fixed order).
pub struct StaticEmbedder {
    model_id: String,
    normalize: bool,
    tokenizer: Tokenizer,
    matrix: Matrix,
}

impl StaticEmbedder {
    /// The model id of [`StaticEmbedder::builtin`], known without loading the model (a store
    /// compares it with the id it recorded).
    pub const BUILTIN_MODEL_ID: &'static str = "ctxgraph-static-minilm-l6-v2-d256-i8-v1";
    /// The dimension of [`StaticEmbedder::builtin`].
    pub const BUILTIN_DIMENSION: usize = 256;

    /// The built-in model, compiled into the binary (`crates/embed/model`): a 256-dimensional
    /// static model distilled from sentence-transformers/all-MiniLM-L6-v2. Needs no file and no
    /// network.
    ///
    /// # Errors
    ///
    /// Only if the embedded files are corrupt (`embed.model_format`), which the crate's tests
    /// rule out.
    pub fn builtin() -> Result<Self, EmbedError> {
        Self::from_parts(BUILTIN_CONFIG, BUILTIN_VOCAB, Cow::Borrowed(BUILTIN_EMBEDDINGS))
    }

    /// Loads a model in the same format from a directory holding `config.json`, `vocab.txt`
    /// and `embeddings.bin`.
    ///
    /// # Errors
    ///
    /// `embed.io` if a file cannot be read, `embed.model_format` if one is malformed or
    /// inconsistent with the others.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|source| EmbedError::Io { path, source })
        };
        let config = read("config.json")?;
        let vocab = String::from_utf8(read("vocab.txt")?)
            .map_err(|_| EmbedError::format("vocab.txt", "not UTF-8"))?;
        let embeddings = read("embeddings.bin")?;
        Self::from_parts(&config, &vocab, Cow::Owned(embeddings))
    }

    fn from_parts(
        config: &[u8],
        vocab: &str,
        embeddings: Cow<'static, [u8]>,
    ) -> Result<Self, EmbedError> {
        let config = Config::parse(config)?;
        let tokenizer = Tokenizer::new(vocab, config.tokenizer_options())?;
        let matrix = Matrix::parse(embeddings)?;
        if matrix.rows() != tokenizer.len() {
            return Err(EmbedError::format(
                "embeddings.bin",
                format!("{} rows for {} vocabulary tokens", matrix.rows(), tokenizer.len()),
            ));
        }
        if matrix.dims() != config.dimension {
            return Err(EmbedError::format(
                "embeddings.bin",
                format!("{} columns, config.json says {}", matrix.dims(), config.dimension),
            ));
        }
        if let Some(bad) = tokenizer
            .added_tokens()
            .iter()
            .find(|a| a.row.is_some_and(|r| r as usize >= matrix.rows()))
        {
            return Err(EmbedError::format(
                "config.json",
                format!("added token {:?} points past the last row", bad.content),
            ));
        }
        Ok(Self { model_id: config.model_id, normalize: config.normalize, tokenizer, matrix })
    }

    /// Embeds one text. Infallible: the trait's `embed` is this, once per text.
    #[must_use]
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        self.embed_with(text, &mut Scratch::default())
    }

    fn embed_with(&self, text: &str, scratch: &mut Scratch) -> Vec<f32> {
        let mut acc = vec![0.0f32; self.matrix.dims()];
        self.tokenizer.tokenize(text, &mut scratch.word, &mut scratch.rows);
        if scratch.rows.is_empty() {
            return acc;
        }
        for &row in &scratch.rows {
            self.matrix.add_row(row, &mut acc);
        }
        let n = scratch.rows.len() as f32;
        for a in &mut acc {
            *a /= n;
        }
        if self.normalize {
            let norm = acc.iter().map(|a| a * a).sum::<f32>().sqrt();
            if norm > 0.0 {
                for a in &mut acc {
                    *a /= norm;
                }
            }
        }
        acc
    }

    /// The matrix rows of `text`'s tokens (after truncation, unknown words dropped), for tests.
    #[cfg(test)]
    pub(crate) fn token_rows(&self, text: &str) -> Vec<u32> {
        let mut scratch = Scratch::default();
        self.tokenizer.tokenize(text, &mut scratch.word, &mut scratch.rows);
        scratch.rows
    }
}

/// Buffers reused across the texts of a batch, so tokenisation allocates nothing per token.
#[derive(Default)]
struct Scratch {
    word: String,
    rows: Vec<u32>,
}

impl Embedder for StaticEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.matrix.dims()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut scratch = Scratch::default();
        Ok(texts.iter().map(|text| self.embed_with(text, &mut scratch)).collect())
    }
}

impl fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticEmbedder")
            .field("model_id", &self.model_id)
            .field("dimension", &self.matrix.dims())
            .field("vocabulary", &self.matrix.rows())
            .field("normalize", &self.normalize)
            .finish()
    }
}
