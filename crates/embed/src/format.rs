//! The on-disk model format: `config.json`, `vocab.txt` and `embeddings.bin`, byte by byte in
//! `crates/embed/model/README.md`.

use std::borrow::Cow;

use serde::Deserialize;

use crate::EmbedError;
use crate::tokenizer::{AddedToken, TokenizerOptions};

/// `embeddings.bin` starts with these 8 bytes.
pub(crate) const MAGIC: &[u8; 8] = b"CTXGEMB\0";
/// The one format version this crate reads.
pub(crate) const FORMAT_VERSION: u32 = 1;
/// Little-endian float32, row-major.
pub(crate) const DTYPE_F32: u32 = 0;
/// Signed int8, row-major, after one little-endian float32 scale per row.
pub(crate) const DTYPE_I8_ROW_SCALED: u32 = 1;
/// The header's length in bytes.
pub(crate) const HEADER_LEN: usize = 32;

const CONFIG: &str = "config.json";
const EMBEDDINGS: &str = "embeddings.bin";

/// `config.json`: what the vectors are and how text becomes tokens.
#[derive(Debug, Deserialize)]
pub(crate) struct Config {
    format: String,
    format_version: u32,
    pub(crate) model_id: String,
    pub(crate) dimension: usize,
    pooling: String,
    pub(crate) normalize: bool,
    max_chars: usize,
    max_tokens: usize,
    tokenizer: TokenizerConfig,
}

#[derive(Debug, Deserialize)]
struct TokenizerConfig {
    kind: String,
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
    continuing_subword_prefix: String,
    max_input_chars_per_word: usize,
    added_tokens: Vec<AddedTokenConfig>,
}

#[derive(Debug, Deserialize)]
struct AddedTokenConfig {
    content: String,
    row: Option<u32>,
}

impl Config {
    /// Parses and checks `config.json`.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Self, EmbedError> {
        let config: Self = serde_json::from_slice(bytes)
            .map_err(|e| EmbedError::format(CONFIG, format!("invalid JSON: {e}")))?;
        let err = |message: String| Err(EmbedError::format(CONFIG, message));
        if config.format != "ctxgraph-static-embedding" {
            return err(format!("format {:?} is not ctxgraph-static-embedding", config.format));
        }
        if config.format_version != FORMAT_VERSION {
            return err(format!(
                "format_version {} is not {FORMAT_VERSION}",
                config.format_version
            ));
        }
        if config.model_id.is_empty() {
            return err("empty model_id".into());
        }
        if config.pooling != "mean" {
            return err(format!("pooling {:?} is not supported (only \"mean\")", config.pooling));
        }
        if config.max_chars == 0 || config.max_tokens == 0 {
            return err("max_chars and max_tokens must be positive".into());
        }
        let t = &config.tokenizer;
        if t.kind != "bert-wordpiece" {
            return err(format!("tokenizer kind {:?} is not supported", t.kind));
        }
        // The character tables implement the BERT normaliser with every step on.
        if !(t.clean_text && t.handle_chinese_chars && t.strip_accents && t.lowercase) {
            return err("only the BERT normaliser with every step enabled is supported".into());
        }
        if t.added_tokens.iter().any(|a| a.content.is_empty()) {
            return err("an added token is empty".into());
        }
        Ok(config)
    }

    /// The tokenizer's options.
    pub(crate) fn tokenizer_options(&self) -> TokenizerOptions {
        let t = &self.tokenizer;
        TokenizerOptions {
            continuing_subword_prefix: t.continuing_subword_prefix.clone(),
            max_input_chars_per_word: t.max_input_chars_per_word,
            max_chars: self.max_chars,
            max_tokens: self.max_tokens,
            added_tokens: t
                .added_tokens
                .iter()
                .map(|a| AddedToken { content: a.content.as_str().into(), row: a.row })
                .collect(),
        }
    }
}

/// The embedding matrix, one row per vocabulary entry.
pub(crate) struct Matrix {
    rows: usize,
    dims: usize,
    data: MatrixData,
}

enum MatrixData {
    /// `rows * dims` int8 values at `bytes[offset..]`, row `r` scaled by `scales[r]`.
    I8 { scales: Vec<f32>, bytes: Cow<'static, [u8]>, offset: usize },
    /// `rows * dims` floats.
    F32(Vec<f32>),
}

impl Matrix {
    /// Parses and checks `embeddings.bin`.
    pub(crate) fn parse(bytes: Cow<'static, [u8]>) -> Result<Self, EmbedError> {
        let err = |message: String| EmbedError::format(EMBEDDINGS, message);
        let header =
            bytes.get(..HEADER_LEN).ok_or_else(|| err("shorter than its header".into()))?;
        let (magic, fields) = header.split_at(8);
        if magic != MAGIC {
            return Err(err("bad magic number (not a ctxgraph embedding matrix)".into()));
        }
        let field = |i: usize| le_u32(fields.get(i * 4..i * 4 + 4).unwrap_or_default());
        let (version, rows, dims, dtype) = (field(0), field(1), field(2), field(3));
        if version != FORMAT_VERSION {
            return Err(err(format!("version {version} is not {FORMAT_VERSION}")));
        }
        if fields.get(16..24).is_none_or(|reserved| reserved.iter().any(|&b| b != 0)) {
            return Err(err("reserved header bytes are not zero".into()));
        }
        let rows = usize::try_from(rows).map_err(|_| err("too many rows".into()))?;
        let dims = usize::try_from(dims).map_err(|_| err("too many dimensions".into()))?;
        if rows == 0 || dims == 0 {
            return Err(err("no rows or no dimensions".into()));
        }
        let cells = rows.checked_mul(dims).ok_or_else(|| err("size overflows".into()))?;
        let size = |per_row: usize, per_cell: usize| {
            rows.checked_mul(per_row)
                .and_then(|a| cells.checked_mul(per_cell).and_then(|b| a.checked_add(b)))
                .and_then(|body| body.checked_add(HEADER_LEN))
                .ok_or_else(|| err("size overflows".into()))
        };
        let data = match dtype {
            DTYPE_I8_ROW_SCALED => {
                expect_len(&bytes, size(4, 1)?)?;
                let offset = HEADER_LEN + rows * 4;
                let scales = floats(bytes.get(HEADER_LEN..offset).unwrap_or_default());
                if scales.iter().any(|s| !s.is_finite()) {
                    return Err(err("a row scale is not finite".into()));
                }
                MatrixData::I8 { scales, bytes, offset }
            }
            DTYPE_F32 => {
                expect_len(&bytes, size(0, 4)?)?;
                let values = floats(bytes.get(HEADER_LEN..).unwrap_or_default());
                if values.iter().any(|v| !v.is_finite()) {
                    return Err(err("a value is not finite".into()));
                }
                MatrixData::F32(values)
            }
            other => return Err(err(format!("unknown dtype {other}"))),
        };
        Ok(Self { rows, dims, data })
    }

    /// The number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns.
    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// Adds row `row` (dequantised) to `acc`, which is `dims` long. Rows are checked against
    /// the vocabulary at load time, so an out-of-range row cannot occur; it would add nothing.
    pub(crate) fn add_row(&self, row: u32, acc: &mut [f32]) {
        let row = row as usize;
        let start = row * self.dims;
        match &self.data {
            MatrixData::I8 { scales, bytes, offset } => {
                let (Some(&scale), Some(values)) =
                    (scales.get(row), bytes.get(offset + start..offset + start + self.dims))
                else {
                    return;
                };
                for (a, &q) in acc.iter_mut().zip(values) {
                    *a += f32::from(q as i8) * scale;
                }
            }
            MatrixData::F32(values) => {
                let Some(values) = values.get(start..start + self.dims) else {
                    return;
                };
                for (a, &v) in acc.iter_mut().zip(values) {
                    *a += v;
                }
            }
        }
    }
}

fn expect_len(bytes: &[u8], expected: usize) -> Result<(), EmbedError> {
    if bytes.len() == expected {
        Ok(())
    } else {
        Err(EmbedError::format(
            EMBEDDINGS,
            format!("{} bytes, the header implies {expected}", bytes.len()),
        ))
    }
}

fn le_u32(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    for (w, b) in word.iter_mut().zip(bytes) {
        *w = *b;
    }
    u32::from_le_bytes(word)
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_bits(le_u32(c))).collect()
}
