//! [`MiniLmEmbedder`]: the sentence-transformers/all-MiniLM-L6-v2 transformer run in-process on
//! the CPU with candle, loaded from the upstream files in a directory (feature `minilm`).
//!
//! The pipeline is sentence-transformers' for this model (its `modules.json`): BERT WordPiece
//! tokenisation with `[CLS]` and `[SEP]`, truncated to 256 word pieces (`max_seq_length`); the
//! 6-layer encoder; the mean of the last hidden states over the attention mask; L2
//! normalisation. The encoder is written out here on candle's tensors rather than taken from
//! `candle-transformers`, which would compile some 120 other models into the build.

use std::fmt;
use std::path::Path;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::{EmbedError, Embedder};

/// The word pieces of a text the encoder sees, `[CLS]` and `[SEP]` included:
/// sentence-transformers' `max_seq_length` for this model. The checkpoint has 512 positions, but
/// the model was trained on 128 and sentence-transformers truncates at 256; so does this crate.
const MAX_TOKENS: usize = 256;

/// Padded word pieces per forward pass. Small passes pay candle's per-operation overhead, large
/// ones spill their activations (1536 floats per word piece in the feed-forward block) out of
/// the cache: on the 2-core CI machine, 1024 and 2048 were within 5% of each other, and 512
/// and 4096 were 10 to 15% slower.
const BATCH_TOKENS: usize = 1024;

/// Texts per forward pass, whatever their length.
const BATCH_TEXTS: usize = 64;

/// The architecture this code implements: MiniLM-L6-H384 (BERT with 6 layers, 384 hidden units,
/// 12 heads, 1536 intermediate units).
const LAYERS: usize = 6;
const HIDDEN: usize = 384;
const HEADS: usize = 12;
const INTERMEDIATE: usize = 1536;

/// sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), a 384-dimensional sentence transformer,
/// run in-process on the CPU: the transformer the built-in [`StaticEmbedder`](crate::StaticEmbedder)
/// was distilled from, with its better vectors, and thousands of times slower.
///
/// [`MiniLmEmbedder::load`] reads `model.safetensors`, `tokenizer.json` and `config.json` from a
/// directory (`crates/embed/models/fetch-minilm.sh DIR` fetches them). A text's vector is the
/// mean of the encoder's last hidden states over its first 256 word pieces, L2-normalised, as
/// sentence-transformers computes it; the crate's tests check it against PyTorch.
///
/// [`Embedder::embed`] sorts a batch by length and runs texts of similar length together, so
/// little work goes to padding; candle uses every core rayon gives it (`RAYON_NUM_THREADS`).
/// The same batch always gives bit-identical vectors; a text embedded in another batch (other
/// padding, other matrix shapes) may differ in the last float digits (measured below 2e-7).
///
/// The model id is `all-MiniLM-L6-v2:mean-t256:` followed by a fingerprint of the three files,
/// so a store refuses vectors from another checkpoint loaded through the same code (a fine-tuned
/// MiniLM, say), as it refuses those of any other model.
pub struct MiniLmEmbedder {
    model_id: String,
    tokenizer: Tokenizer,
    encoder: Encoder,
}

impl MiniLmEmbedder {
    /// The length of every vector.
    pub const DIMENSION: usize = HIDDEN;

    /// The model id of the upstream files that `fetch-minilm.sh` installs (their
    /// `model.safetensors` has SHA-256 `53aa5117…`).
    pub const UPSTREAM_MODEL_ID: &'static str = "all-MiniLM-L6-v2:mean-t256:3d8732105a595444";

    /// Loads the model from a directory holding the upstream `model.safetensors`,
    /// `tokenizer.json` and `config.json` of sentence-transformers/all-MiniLM-L6-v2 (or of
    /// another checkpoint of the same architecture, such as a fine-tuned one).
    ///
    /// # Errors
    ///
    /// `embed.io` naming the file that cannot be read; `embed.model_format` naming the file that
    /// is malformed: a `config.json` for another architecture, a `tokenizer.json` that does not
    /// parse or whose vocabulary differs from the weights', or a `model.safetensors` that does
    /// not parse or lacks a tensor of the right shape.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|source| EmbedError::Io { path, source })
        };
        let config_bytes = read("config.json")?;
        let tokenizer_bytes = read("tokenizer.json")?;
        let weights = read("model.safetensors")?;

        let config = Config::parse(&config_bytes)?;
        let tokenizer = load_tokenizer(&tokenizer_bytes, config.vocab_size)?;
        let model_id = format!(
            "all-MiniLM-L6-v2:mean-t256:{:016x}",
            fingerprint(&[&config_bytes, &tokenizer_bytes, &weights])
        );
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| EmbedError::format("model.safetensors", e.to_string()))?;
        let encoder = Encoder::load(&config, vb)
            .map_err(|e| EmbedError::format("model.safetensors", e.to_string()))?;
        Ok(Self { model_id, tokenizer, encoder })
    }

    /// The number of word pieces the encoder sees for each text (`[CLS]` and `[SEP]` included,
    /// after truncation), for tests.
    #[cfg(test)]
    pub(crate) fn token_counts(&self, texts: &[&str]) -> Vec<usize> {
        self.tokenizer
            .encode_batch(texts.to_vec(), true)
            .map(|e| e.iter().map(|e| e.get_ids().len()).collect())
            .unwrap_or_default()
    }

    /// Embeds texts of similar length in one forward pass.
    fn embed_batch(&self, ids: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let length = ids.iter().map(|i| i.len()).max().unwrap_or(0);
        let mut flat_ids = Vec::with_capacity(ids.len() * length);
        let mut mask = Vec::with_capacity(ids.len() * length);
        for text in ids {
            flat_ids.extend_from_slice(text);
            flat_ids.resize(flat_ids.len() + length - text.len(), 0);
            mask.extend(std::iter::repeat_n(1.0f32, text.len()));
            mask.resize(mask.len() + length - text.len(), 0.0);
        }
        let ids = Tensor::from_vec(flat_ids, (ids.len(), length), &Device::Cpu)?;
        let mask = Tensor::from_vec(mask, (ids.dim(0)?, length), &Device::Cpu)?;
        let hidden = self.encoder.forward(&ids, &mask)?;
        // Mean pooling over the attention mask, then L2 normalisation (sentence-transformers'
        // `Pooling` and `Normalize` modules, with their clamps).
        let summed = hidden.broadcast_mul(&mask.unsqueeze(2)?)?.sum(1)?;
        let counts = mask.sum_keepdim(1)?.clamp(1e-9, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f32::MAX)?;
        mean.broadcast_div(&norms)?.to_vec2::<f32>()
    }
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        HIDDEN
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::backend(format!("tokenizing: {e}")))?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        // Shortest first, so each pass pads its texts to a similar length.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let mut out = vec![Vec::new(); ids.len()];
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            while end < order.len()
                && end - start < BATCH_TEXTS
                && (end - start + 1) * ids[order[end]].len() <= BATCH_TOKENS
            {
                end += 1;
            }
            let batch: Vec<&[u32]> = order[start..end].iter().map(|&i| ids[i]).collect();
            let vectors = self
                .embed_batch(&batch)
                .map_err(|e| EmbedError::backend(format!("MiniLM forward pass: {e}")))?;
            for (&i, vector) in order[start..end].iter().zip(vectors) {
                out[i] = vector;
            }
            start = end;
        }
        Ok(out)
    }
}

impl fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("model_id", &self.model_id)
            .field("dimension", &HIDDEN)
            .field("max_tokens", &MAX_TOKENS)
            .finish_non_exhaustive()
    }
}

/// The fields of the upstream `config.json` (Hugging Face `BertConfig`) this code reads.
#[derive(Deserialize)]
struct Config {
    model_type: String,
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    hidden_act: String,
    max_position_embeddings: usize,
    type_vocab_size: usize,
    layer_norm_eps: f64,
    #[serde(default = "absolute")]
    position_embedding_type: String,
}

fn absolute() -> String {
    "absolute".to_owned()
}

impl Config {
    fn parse(bytes: &[u8]) -> Result<Self, EmbedError> {
        let config: Config = serde_json::from_slice(bytes)
            .map_err(|e| EmbedError::format("config.json", e.to_string()))?;
        let wrong = |what: &str, got: &dyn fmt::Display, want: &dyn fmt::Display| {
            Err(EmbedError::format(
                "config.json",
                format!("{what} is {got}; the MiniLM embedder implements {want}"),
            ))
        };
        if config.model_type != "bert" {
            return wrong("model_type", &config.model_type, &"bert");
        }
        if config.hidden_act != "gelu" {
            return wrong("hidden_act", &config.hidden_act, &"gelu");
        }
        if config.position_embedding_type != "absolute" {
            return wrong("position_embedding_type", &config.position_embedding_type, &"absolute");
        }
        for (what, got, want) in [
            ("num_hidden_layers", config.num_hidden_layers, LAYERS),
            ("hidden_size", config.hidden_size, HIDDEN),
            ("num_attention_heads", config.num_attention_heads, HEADS),
            ("intermediate_size", config.intermediate_size, INTERMEDIATE),
        ] {
            if got != want {
                return wrong(what, &got, &want);
            }
        }
        if config.max_position_embeddings < MAX_TOKENS {
            return wrong("max_position_embeddings", &config.max_position_embeddings, &"≥ 256");
        }
        if config.type_vocab_size == 0 {
            return wrong("type_vocab_size", &0, &"≥ 1");
        }
        Ok(config)
    }
}

/// The upstream tokenizer with sentence-transformers' settings: truncation at [`MAX_TOKENS`] (the
/// file says 128) and no padding (the file pads to 128; batches are padded here).
fn load_tokenizer(bytes: &[u8], vocab_size: usize) -> Result<Tokenizer, EmbedError> {
    let bad = |message: String| EmbedError::format("tokenizer.json", message);
    let mut tokenizer = Tokenizer::from_bytes(bytes).map_err(|e| bad(e.to_string()))?;
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: MAX_TOKENS,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| bad(e.to_string()))?;
    tokenizer.with_padding(None);
    let tokens = tokenizer.get_vocab_size(true);
    if tokens != vocab_size {
        return Err(bad(format!("{tokens} tokens; config.json says vocab_size {vocab_size}")));
    }
    for special in ["[CLS]", "[SEP]"] {
        if tokenizer.token_to_id(special).is_none() {
            return Err(bad(format!("no {special} token")));
        }
    }
    Ok(tokenizer)
}

/// The 64-bit FNV-1a hash of the files, each followed by its length: a cheap fingerprint that
/// tells checkpoints apart in the model id (`fetch-minilm.sh` checks the SHA-256 of the
/// download; this is not a security check).
fn fingerprint(files: &[&[u8]]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in files {
        for &byte in *file {
            hash = (hash ^ u64::from(byte)).wrapping_mul(PRIME);
        }
        for byte in (file.len() as u64).to_le_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(PRIME);
        }
    }
    hash
}

/// The BERT encoder (Hugging Face `BertModel` without its pooler), inference only.
struct Encoder {
    words: Embedding,
    positions: Tensor,
    token_type: Tensor,
    norm: LayerNorm,
    layers: Vec<Layer>,
}

/// One transformer layer: self-attention and the feed-forward block, each followed by a residual
/// connection and layer normalisation (post-norm, as in BERT).
struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    out: Linear,
    out_norm: LayerNorm,
}

impl Encoder {
    fn load(config: &Config, vb: VarBuilder<'_>) -> candle_core::Result<Self> {
        let eps = config.layer_norm_eps;
        let e = vb.pp("embeddings");
        let words = candle_nn::embedding(config.vocab_size, HIDDEN, e.pp("word_embeddings"))?;
        // Only the first MAX_TOKENS positions and token type 0 are ever used.
        let positions = e
            .pp("position_embeddings")
            .get((config.max_position_embeddings, HIDDEN), "weight")?
            .narrow(0, 0, MAX_TOKENS)?
            .contiguous()?;
        let token_type = e
            .pp("token_type_embeddings")
            .get((config.type_vocab_size, HIDDEN), "weight")?
            .narrow(0, 0, 1)?
            .contiguous()?;
        let norm = candle_nn::layer_norm(HIDDEN, eps, e.pp("LayerNorm"))?;
        let layers = (0..LAYERS)
            .map(|i| Layer::load(eps, vb.pp(format!("encoder.layer.{i}"))))
            .collect::<candle_core::Result<_>>()?;
        Ok(Self { words, positions, token_type, norm, layers })
    }

    /// The last hidden states, `(texts × length, HIDDEN)`, of `ids` (`texts × length`, padded
    /// with anything) under `mask` (1.0 for a word piece, 0.0 for padding).
    fn forward(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (texts, length) = ids.dims2()?;
        let x = self
            .words
            .forward(&ids.flatten_all()?)?
            .reshape((texts, length, HIDDEN))?
            .broadcast_add(&self.positions.narrow(0, 0, length)?)?
            .broadcast_add(&self.token_type)?
            .reshape((texts * length, HIDDEN))?;
        let mut x = self.norm.forward(&x)?;
        // Padding gets the most negative float before the softmax, as in Hugging Face's BERT:
        // `(mask - 1) × f32::MAX`, exactly 0 for a word piece.
        let bias = mask
            .affine(f64::from(f32::MAX), -f64::from(f32::MAX))?
            .reshape((texts, 1, 1, length))?;
        for layer in &self.layers {
            x = layer.forward(&x, &bias, texts, length)?;
        }
        x.reshape((texts, length, HIDDEN))
    }
}

impl Layer {
    fn load(eps: f64, vb: VarBuilder<'_>) -> candle_core::Result<Self> {
        let attention = vb.pp("attention");
        let this = attention.pp("self");
        Ok(Self {
            query: candle_nn::linear(HIDDEN, HIDDEN, this.pp("query"))?,
            key: candle_nn::linear(HIDDEN, HIDDEN, this.pp("key"))?,
            value: candle_nn::linear(HIDDEN, HIDDEN, this.pp("value"))?,
            attention_out: candle_nn::linear(HIDDEN, HIDDEN, attention.pp("output.dense"))?,
            attention_norm: candle_nn::layer_norm(HIDDEN, eps, attention.pp("output.LayerNorm"))?,
            intermediate: candle_nn::linear(HIDDEN, INTERMEDIATE, vb.pp("intermediate.dense"))?,
            out: candle_nn::linear(INTERMEDIATE, HIDDEN, vb.pp("output.dense"))?,
            out_norm: candle_nn::layer_norm(HIDDEN, eps, vb.pp("output.LayerNorm"))?,
        })
    }

    /// `x` is `(texts × length, HIDDEN)`; `bias` is `(texts, 1, 1, length)`.
    fn forward(
        &self,
        x: &Tensor,
        bias: &Tensor,
        texts: usize,
        length: usize,
    ) -> candle_core::Result<Tensor> {
        const HEAD: usize = HIDDEN / HEADS;
        let heads =
            |t: Tensor| t.reshape((texts, length, HEADS, HEAD))?.transpose(1, 2)?.contiguous();
        let q = heads(self.query.forward(x)?)?;
        let k = heads(self.key.forward(x)?)?;
        let v = heads(self.value.forward(x)?)?;
        let scores = (q.matmul(&k.t()?)? / (HEAD as f64).sqrt())?.broadcast_add(bias)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let context =
            probs.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((texts * length, HIDDEN))?;
        let a = self.attention_norm.forward(&(self.attention_out.forward(&context)? + x)?)?;
        let h = self.intermediate.forward(&a)?.gelu_erf()?;
        self.out_norm.forward(&(self.out.forward(&h)? + a)?)
    }
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<MiniLmEmbedder>();
    assert!(HIDDEN.is_multiple_of(HEADS));
};

#[cfg(test)]
mod tests;
