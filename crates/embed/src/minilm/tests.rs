//! Tests of the MiniLM embedder: the loader's error paths (always), and, when
//! `CTXGRAPH_MINILM_DIR` names a directory filled by `crates/embed/models/fetch-minilm.sh`,
//! identity, unit norm, determinism, batching and agreement with PyTorch (`reference.json`,
//! written by `crates/embed/models/minilm_reference.py`).

use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

use serde::Deserialize;

use super::{BATCH_TEXTS, MAX_TOKENS, MiniLmEmbedder, fingerprint};
use crate::{EmbedError, Embedder};

/// Largest difference allowed between a component (or checksum, or cosine) computed here and
/// the PyTorch reference.
const GOLDEN_TOLERANCE: f64 = 1e-4;

/// The upstream model, loaded once for all tests, or `None` (with a note on stderr, printed
/// once and past the test harness's capture) when `CTXGRAPH_MINILM_DIR` is unset.
fn model() -> Option<&'static MiniLmEmbedder> {
    static MODEL: OnceLock<Option<MiniLmEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let Some(dir) = std::env::var_os("CTXGRAPH_MINILM_DIR") else {
                let _ = writeln!(
                    std::io::stderr(),
                    "note: MiniLM tests skipped: set CTXGRAPH_MINILM_DIR to a directory filled by \
                     crates/embed/models/fetch-minilm.sh"
                );
                return None;
            };
            Some(MiniLmEmbedder::load(Path::new(&dir)).expect("CTXGRAPH_MINILM_DIR loads"))
        })
        .as_ref()
}

#[derive(Deserialize)]
struct Reference {
    model_safetensors_sha256: String,
    max_seq_length: usize,
    texts: Vec<ReferenceText>,
    pairs: Vec<ReferencePair>,
}

#[derive(Deserialize)]
struct ReferenceText {
    text: String,
    tokens: usize,
    head: Vec<f64>,
    sum: f64,
    weighted_sum: f64,
}

#[derive(Deserialize)]
struct ReferencePair {
    a: String,
    b: String,
    cosine: f64,
}

fn reference() -> Reference {
    serde_json::from_str(include_str!("reference.json")).unwrap()
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
}

fn max_difference(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0.0, f32::max)
}

/// Texts of many lengths, as an agent's events would be, for the batching tests.
fn varied_texts() -> Vec<String> {
    let mut texts: Vec<String> = reference().texts.into_iter().map(|t| t.text).collect();
    for i in 0..60 {
        let words = ["retry", "the", "payment", "service", "timed", "out", "after", "30s"];
        let n = 1 + (i * 7) % 40;
        texts.push((0..n).map(|j| words[(i + j) % words.len()]).collect::<Vec<_>>().join(" "));
    }
    texts
}

#[test]
fn identity_and_dimension() {
    let Some(m) = model() else { return };
    assert_eq!(m.dimension(), 384);
    assert_eq!(MiniLmEmbedder::DIMENSION, 384);
    assert_eq!(m.model_id(), MiniLmEmbedder::UPSTREAM_MODEL_ID, "the upstream files");
    assert!(format!("{m:?}").contains(MiniLmEmbedder::UPSTREAM_MODEL_ID));
    assert!(m.embed(&[]).unwrap().is_empty());
    let v = m.embed(&["hello world"]).unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].len(), 384);
}

#[test]
fn unit_norm() {
    let Some(m) = model() else { return };
    let texts = varied_texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for (text, v) in texts.iter().zip(m.embed(&texts).unwrap()) {
        assert!((dot(&v, &v).sqrt() - 1.0).abs() < 1e-5, "{text:?} has norm {}", dot(&v, &v));
    }
}

#[test]
fn deterministic() {
    let Some(m) = model() else { return };
    let texts = varied_texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let first = m.embed(&texts).unwrap();
    assert_eq!(first, m.embed(&texts).unwrap(), "same batch, bit-identical vectors");
}

#[test]
fn batch_equals_one_by_one() {
    let Some(m) = model() else { return };
    let texts = varied_texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    assert!(texts.len() > BATCH_TEXTS, "several forward passes");
    let batched = m.embed(&texts).unwrap();
    let single: Vec<Vec<f32>> = texts.iter().map(|t| m.embed(&[t]).unwrap().remove(0)).collect();
    let worst = max_difference(&batched, &single);
    eprintln!("batched vs one by one: largest component difference {worst:e}");
    assert!(worst < 1e-6, "largest component difference {worst:e}");
    // Reversed input order: the same vectors, in the caller's order.
    let reversed: Vec<&str> = texts.iter().rev().copied().collect();
    let mut back = m.embed(&reversed).unwrap();
    back.reverse();
    assert!(max_difference(&batched, &back) < 1e-6);
}

#[test]
fn golden_values_match_pytorch() {
    let Some(m) = model() else { return };
    let reference = reference();
    assert_eq!(reference.max_seq_length, MAX_TOKENS);
    assert_eq!(
        reference.model_safetensors_sha256,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    );
    let texts: Vec<&str> = reference.texts.iter().map(|t| t.text.as_str()).collect();
    let counts = m.token_counts(&texts);
    let vectors = m.embed(&texts).unwrap();
    let mut worst = 0.0f64;
    for ((r, count), v) in reference.texts.iter().zip(counts).zip(&vectors) {
        assert_eq!(count, r.tokens, "word pieces of {:?}", r.text);
        let sum: f64 = v.iter().map(|&x| f64::from(x)).sum();
        let weighted: f64 = v
            .iter()
            .enumerate()
            .map(|(i, &x)| f64::from(x) * (i + 1) as f64 / v.len() as f64)
            .sum();
        let diffs = r
            .head
            .iter()
            .zip(v)
            .map(|(want, &got)| (want - f64::from(got)).abs())
            .chain([(r.sum - sum).abs(), (r.weighted_sum - weighted).abs()]);
        for d in diffs {
            assert!(d < GOLDEN_TOLERANCE, "{:?}: difference {d:e} from PyTorch", r.text);
            worst = worst.max(d);
        }
    }
    for pair in &reference.pairs {
        let a = m.embed(&[&pair.a]).unwrap().remove(0);
        let b = m.embed(&[&pair.b]).unwrap().remove(0);
        let d = (dot(&a, &b) - pair.cosine).abs();
        assert!(d < GOLDEN_TOLERANCE, "{:?} / {:?}: cosine off by {d:e}", pair.a, pair.b);
        worst = worst.max(d);
    }
    eprintln!("largest difference from PyTorch: {worst:e}");
}

#[test]
fn paraphrases_are_closer_than_unrelated_texts() {
    let Some(m) = model() else { return };
    let v = m
        .embed(&["the database query timed out", "the SQL call hit a timeout", "my cat likes fish"])
        .unwrap();
    assert!(dot(&v[0], &v[1]) > 0.6);
    assert!(dot(&v[0], &v[2]) < 0.2);
}

#[test]
fn object_safe_and_shareable() {
    let Some(m) = model() else { return };
    let shared: std::sync::Arc<dyn Embedder> = std::sync::Arc::new(
        MiniLmEmbedder::load(std::env::var_os("CTXGRAPH_MINILM_DIR").unwrap()).unwrap(),
    );
    let other = std::sync::Arc::clone(&shared);
    let from_thread =
        std::thread::spawn(move || other.embed(&["the cache is cold"]).unwrap()).join().unwrap();
    assert_eq!(from_thread, m.embed(&["the cache is cold"]).unwrap());
}

// The loader's error paths, on small hand-made files: no weights needed.

/// A `config.json` of the MiniLM architecture with a vocabulary of `vocab_size`.
fn config(vocab_size: usize) -> String {
    format!(
        r#"{{"model_type": "bert", "vocab_size": {vocab_size}, "hidden_size": 384,
            "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
            "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 2,
            "layer_norm_eps": 1e-12, "position_embedding_type": "absolute"}}"#
    )
}

/// A WordPiece `tokenizer.json` of five tokens, in the upstream's shape.
const TINY_TOKENIZER: &str = r###"{
  "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                 "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
  "decoder": null,
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "hello": 4}}
}"###;

/// A directory holding the given files.
fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    dir
}

fn load_error(files: &[(&str, &[u8])]) -> EmbedError {
    let dir = dir_with(files);
    MiniLmEmbedder::load(dir.path()).expect_err("the load fails")
}

fn assert_format_error(e: &EmbedError, file: &str, needle: &str) {
    assert_eq!(e.code(), "embed.model_format", "{e}");
    let EmbedError::ModelFormat { file: f, message } = e else { panic!("unexpected {e:?}") };
    assert_eq!(f, file, "{e}");
    assert!(message.contains(needle), "{message:?} lacks {needle:?}");
}

#[test]
fn missing_files_are_named() {
    let config = config(5);
    for (files, missing) in [
        (vec![], "config.json"),
        (vec![("config.json", config.as_bytes())], "tokenizer.json"),
        (
            vec![("config.json", config.as_bytes()), ("tokenizer.json", TINY_TOKENIZER.as_bytes())],
            "model.safetensors",
        ),
    ] {
        let e = load_error(&files);
        assert_eq!(e.code(), "embed.io");
        let EmbedError::Io { path, .. } = &e else { panic!("unexpected {e:?}") };
        assert_eq!(path.file_name().unwrap(), missing);
        assert!(e.to_string().contains(missing), "{e}");
    }
}

#[test]
fn bad_files_are_named() {
    let good = config(5);
    let tok = TINY_TOKENIZER.as_bytes();
    let weights = b"not safetensors".as_slice();
    let with_config = |c: &str| {
        load_error(&[
            ("config.json", c.as_bytes()),
            ("tokenizer.json", tok),
            ("model.safetensors", weights),
        ])
    };
    assert_format_error(&with_config("{"), "config.json", "EOF");
    assert_format_error(&with_config(&good.replace("384", "768")), "config.json", "hidden_size");
    assert_format_error(
        &with_config(&good.replace("\"bert\"", "\"roberta\"")),
        "config.json",
        "model_type",
    );
    assert_format_error(
        &with_config(&good.replace("\"gelu\"", "\"relu\"")),
        "config.json",
        "hidden_act",
    );
    assert_format_error(
        &with_config(&good.replace("512", "128")),
        "config.json",
        "max_position_embeddings",
    );

    let with_tokenizer = |t: &[u8]| {
        load_error(&[
            ("config.json", good.as_bytes()),
            ("tokenizer.json", t),
            ("model.safetensors", weights),
        ])
    };
    assert_format_error(&with_tokenizer(b"[]"), "tokenizer.json", "");
    let e = load_error(&[
        ("config.json", config(30522).as_bytes()),
        ("tokenizer.json", tok),
        ("model.safetensors", weights),
    ]);
    assert_format_error(&e, "tokenizer.json", "vocab_size 30522");

    // Past config and tokenizer: the weights.
    let e = with_tokenizer(tok);
    assert_format_error(&e, "model.safetensors", "");
    let empty = safetensors_header("{}");
    let e = load_error(&[
        ("config.json", good.as_bytes()),
        ("tokenizer.json", tok),
        ("model.safetensors", &empty),
    ]);
    assert_format_error(&e, "model.safetensors", "word_embeddings");
}

/// A safetensors file holding only `header`.
fn safetensors_header(header: &str) -> Vec<u8> {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes
}

#[test]
fn fingerprint_tells_files_apart() {
    assert_ne!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"a", b"bc"]));
    assert_ne!(fingerprint(&[b"ab"]), fingerprint(&[b"ba"]));
    // FNV-1a 64 of the empty string, then of the length 0 as eight zero bytes.
    let mut expected: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..8 {
        expected = expected.wrapping_mul(0x0000_0100_0000_01b3);
    }
    assert_eq!(fingerprint(&[b""]), expected);
}
