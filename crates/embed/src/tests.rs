//! Unit tests: the built-in model's identity, determinism, edge cases, semantic sanity,
//! agreement with the Python reference, the file format's error paths, and (ignored)
//! exhaustive comparisons and a throughput measurement.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::normalize::normalize_str;
use crate::{EmbedError, Embedder, StaticEmbedder};

const MODEL_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/model");

fn model() -> StaticEmbedder {
    StaticEmbedder::builtin().expect("the built-in model loads")
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    dot(a, b) / (dot(a, a).sqrt() * dot(b, b).sqrt())
}

fn vocab() -> Vec<String> {
    std::fs::read_to_string(Path::new(MODEL_DIR).join("vocab.txt"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn tokens(model: &StaticEmbedder, vocab: &[String], text: &str) -> Vec<String> {
    model.token_rows(text).into_iter().map(|r| vocab[r as usize].clone()).collect()
}

#[test]
fn identity_and_dimension() {
    let m = model();
    assert_eq!(m.model_id(), "ctxgraph-static-minilm-l6-v2-d256-i8-v1");
    assert_eq!(m.dimension(), 256);
    let v = m.embed(&["hello world", "", "a third text"]).unwrap();
    assert_eq!(v.len(), 3);
    assert!(v.iter().all(|x| x.len() == 256));
    assert!((dot(&v[0], &v[0]) - 1.0).abs() < 1e-5, "unit length");
    assert!(m.embed(&[]).unwrap().is_empty());
    assert!(format!("{m:?}").contains("ctxgraph-static-minilm-l6-v2-d256-i8-v1"));
}

#[test]
fn object_safe_and_shareable() {
    let boxed: Box<dyn Embedder> = Box::new(model());
    let shared = std::sync::Arc::new(boxed);
    let other = std::sync::Arc::clone(&shared);
    let from_thread =
        std::thread::spawn(move || other.embed(&["the cache is cold"]).unwrap()).join().unwrap();
    assert_eq!(from_thread, shared.embed(&["the cache is cold"]).unwrap());
}

#[test]
fn deterministic_alone_and_in_any_batch() {
    let m = model();
    let text = "Agent 7 retried the HTTP request (status=503) after 2.5s; café ÉCOLE 数据库";
    let alone = m.embed_one(text);
    let batch = m.embed(&["something else first", text, "and after"]).unwrap();
    let again = StaticEmbedder::builtin().unwrap().embed_one(text);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&alone), bits(&batch[1]));
    assert_eq!(bits(&alone), bits(&again));
}

#[test]
fn texts_without_known_tokens_embed_to_zero() {
    let m = model();
    let long_word = "x".repeat(101);
    for text in ["", "   ", "\t\n\r", "\u{7}\u{200b}", "🦀🦀🦀", "[UNK]", long_word.as_str()]
    {
        let v = m.embed_one(text);
        assert_eq!(v.len(), 256);
        assert!(v.iter().all(|&x| x == 0.0), "{text:?} should embed to zero");
    }
}

#[test]
fn punctuation_is_in_the_vocabulary() {
    let m = model();
    let v = m.embed_one("!!! ??? ... ---");
    assert!((dot(&v, &v) - 1.0).abs() < 1e-5);
    assert_eq!(m.token_rows("...").len(), 3, "each '.' is a word of its own");
}

#[test]
fn paraphrases_score_higher_than_unrelated_texts() {
    let m = model();
    let v = m
        .embed(&[
            "the database query timed out",
            "the SQL call hit a timeout",
            "my cat likes fish",
            "the payment was declined by the bank",
            "the bank rejected the card transaction",
            "the weather will be sunny tomorrow",
        ])
        .unwrap();
    let para = dot(&v[0], &v[1]);
    assert!(para > dot(&v[0], &v[2]) + 0.2, "{para} vs {}", dot(&v[0], &v[2]));
    assert!(para > dot(&v[1], &v[2]) + 0.2);
    let para = dot(&v[3], &v[4]);
    assert!(para > dot(&v[3], &v[5]) + 0.2);
    assert!(para > dot(&v[4], &v[5]) + 0.2);
}

#[test]
fn wordpiece_tokenisation() {
    let m = model();
    let vocab = vocab();
    assert_eq!(tokens(&m, &vocab, "Hello, World!"), ["hello", ",", "world", "!"]);
    assert_eq!(tokens(&m, &vocab, "Café naïve ÉCOLE"), ["cafe", "naive", "ecole"]);
    assert_eq!(tokens(&m, &vocab, "unaffable"), ["una", "##ffa", "##ble"]);
    assert_eq!(tokens(&m, &vocab, "東京タワー"), ["東", "京", "タ", "##ワ", "##ー"]);
    // Added tokens are matched literally in the raw text; [UNK] and unknown words are dropped.
    assert_eq!(tokens(&m, &vocab, "x[PAD]y [UNK] 🦀 z"), ["x", "[PAD]", "y", "z"]);
    assert_eq!(tokens(&m, &vocab, "[pad]"), ["[", "pad", "]"]);
}

#[test]
fn truncation_limits() {
    let m = model();
    // 512 tokens at most, unknown ones counted before they are dropped.
    assert_eq!(m.token_rows(&"word ".repeat(600)).len(), 512);
    assert_eq!(m.token_rows(&"🦀 word ".repeat(300)).len(), 256);
    // 3072 characters at most: 1536 "a " pairs, then the "b"s are never read.
    let text = format!("{}{}", "a ".repeat(1536), "b ".repeat(10));
    assert_eq!(m.token_rows(&text).len(), 512);
    let text = format!("{}{}", "abcdefghijklmnopqrstuvwxyz ".repeat(113), "zebra");
    let rows = m.token_rows(&text);
    let vocab = vocab();
    assert!(rows.iter().all(|&r| vocab[r as usize] != "zebra"));
}

#[test]
fn normaliser_examples() {
    assert_eq!(normalize_str("ÀÉÎõü ΣΑΣ İ ǅ"), "aeiou σασ i ǆ");
    assert_eq!(normalize_str("a\u{0}b\u{fffd}c\td\u{3000}e"), "abc d e");
    assert_eq!(normalize_str("中文"), " 中  文 ");
    assert_eq!(normalize_str("한"), "\u{1112}\u{1161}\u{11ab}");
}

#[derive(Deserialize)]
struct Reference {
    model_id: String,
    entries: Vec<ReferenceEntry>,
}

#[derive(Deserialize)]
struct ReferenceEntry {
    text: String,
    rows: Vec<u32>,
    embedding: Vec<f32>,
}

#[test]
fn agrees_with_the_python_reference() {
    let m = model();
    let reference: Reference =
        serde_json::from_str(include_str!("../model/reference.json")).unwrap();
    assert_eq!(reference.model_id, m.model_id());
    assert!(reference.entries.len() >= 20);
    let (mut min_cos, mut max_abs) = (1.0f32, 0.0f32);
    for entry in &reference.entries {
        assert_eq!(m.token_rows(&entry.text), entry.rows, "tokens of {:?}", entry.text);
        let got = m.embed_one(&entry.text);
        if entry.embedding.iter().all(|&x| x == 0.0) {
            assert!(got.iter().all(|&x| x == 0.0), "{:?} should be zero", entry.text);
            continue;
        }
        let cos = cosine(&got, &entry.embedding);
        assert!(cos >= 0.999, "cosine {cos} for {:?}", entry.text);
        let max_diff =
            got.iter().zip(&entry.embedding).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(max_diff < 1e-5, "max |diff| {max_diff} for {:?}", entry.text);
        min_cos = min_cos.min(cos);
        max_abs = max_abs.max(max_diff);
    }
    eprintln!("reference: min cosine {min_cos}, max |diff| {max_abs}");
}

fn copy_model(to: &Path) {
    for name in ["config.json", "vocab.txt", "embeddings.bin"] {
        std::fs::copy(Path::new(MODEL_DIR).join(name), to.join(name)).unwrap();
    }
}

#[test]
fn from_dir_loads_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    copy_model(dir.path());
    let a = StaticEmbedder::from_dir(dir.path()).unwrap();
    let b = model();
    assert_eq!(a.model_id(), b.model_id());
    assert_eq!(a.embed_one("disk almost full"), b.embed_one("disk almost full"));
}

#[test]
fn from_dir_reads_float32_matrices() {
    // Rewrite the int8 matrix as dtype 0 (float32, dequantised): same vectors.
    let dir = tempfile::tempdir().unwrap();
    copy_model(dir.path());
    let bytes = std::fs::read(dir.path().join("embeddings.bin")).unwrap();
    let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as usize;
    let (rows, dims) = (word(12), word(16));
    let mut out = bytes[..32].to_vec();
    out[20..24].copy_from_slice(&0u32.to_le_bytes());
    for r in 0..rows {
        let scale = f32::from_le_bytes(bytes[32 + r * 4..36 + r * 4].try_into().unwrap());
        for d in 0..dims {
            let q = bytes[32 + rows * 4 + r * dims + d] as i8;
            out.extend_from_slice(&(f32::from(q) * scale).to_le_bytes());
        }
    }
    std::fs::write(dir.path().join("embeddings.bin"), out).unwrap();
    let f = StaticEmbedder::from_dir(dir.path()).unwrap();
    let text = "the queue is growing faster than workers can drain it";
    assert_eq!(f.embed_one(text), model().embed_one(text));
}

fn load_error(dir: &Path) -> EmbedError {
    StaticEmbedder::from_dir(dir).unwrap_err()
}

#[test]
fn malformed_models_are_refused_with_codes() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(load_error(dir.path()).code(), "embed.io");

    copy_model(dir.path());
    let path = |name: &str| dir.path().join(name);
    let original = std::fs::read(path("embeddings.bin")).unwrap();

    let mut bad = original.clone();
    bad[0] = b'X';
    std::fs::write(path("embeddings.bin"), &bad).unwrap();
    let e = load_error(dir.path());
    assert_eq!(e.code(), "embed.model_format");
    assert!(e.to_string().contains("magic"), "{e}");

    std::fs::write(path("embeddings.bin"), &original[..original.len() - 1]).unwrap();
    assert_eq!(load_error(dir.path()).code(), "embed.model_format");

    std::fs::write(path("embeddings.bin"), &original[..10]).unwrap();
    assert_eq!(load_error(dir.path()).code(), "embed.model_format");
    std::fs::write(path("embeddings.bin"), &original).unwrap();

    let vocab = std::fs::read_to_string(path("vocab.txt")).unwrap();
    std::fs::write(path("vocab.txt"), format!("{vocab}qqqextraqqq\n")).unwrap();
    let e = load_error(dir.path());
    assert_eq!(e.code(), "embed.model_format");
    assert!(e.to_string().contains("rows"), "{e}");
    std::fs::write(path("vocab.txt"), &vocab).unwrap();

    let config = std::fs::read_to_string(path("config.json")).unwrap();
    std::fs::write(path("config.json"), config.replace("\"mean\"", "\"max\"")).unwrap();
    assert_eq!(load_error(dir.path()).code(), "embed.model_format");
    std::fs::write(path("config.json"), "{").unwrap();
    assert_eq!(load_error(dir.path()).code(), "embed.model_format");
    std::fs::write(path("config.json"), &config).unwrap();

    assert!(StaticEmbedder::from_dir(dir.path()).is_ok());
}

/// The directory `models/distill.py --dump-dir` wrote, for the exhaustive comparisons.
fn dump_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CTXGRAPH_EMBED_DUMP_DIR").map(PathBuf::from);
    if dir.is_none() {
        eprintln!("set CTXGRAPH_EMBED_DUMP_DIR to the --dump-dir of models/distill.py");
    }
    dir
}

#[test]
#[ignore = "needs the dump of models/distill.py --dump-dir (CTXGRAPH_EMBED_DUMP_DIR)"]
fn normaliser_matches_the_reference_for_every_code_point() {
    let Some(dir) = dump_dir() else { return };
    let text = std::fs::read_to_string(dir.join("normalizer.json")).unwrap();
    let expected: std::collections::HashMap<String, String> = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for cp in 0..=0x10FFFFu32 {
        let Some(c) = char::from_u32(cp) else { continue };
        let want = expected.get(&cp.to_string()).cloned().unwrap_or_else(|| c.to_string());
        assert_eq!(normalize_str(&c.to_string()), want, "U+{cp:04X}");
        checked += 1;
    }
    eprintln!("{checked} code points agree");
}

#[test]
#[ignore = "needs the dump of models/distill.py --dump-dir (CTXGRAPH_EMBED_DUMP_DIR)"]
fn tokens_match_the_reference_on_a_corpus() {
    #[derive(Deserialize)]
    struct Line {
        text: String,
        rows: Vec<u32>,
    }
    let Some(dir) = dump_dir() else { return };
    let m = model();
    let text = std::fs::read_to_string(dir.join("tokens.jsonl")).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let line: Line = serde_json::from_str(line).unwrap();
        assert_eq!(m.token_rows(&line.text), line.rows, "tokens of {:?}", line.text);
        n += 1;
    }
    eprintln!("{n} texts tokenised identically");
}

#[test]
#[ignore = "a measurement: run with --release -- --ignored --nocapture"]
fn throughput() {
    let start = std::time::Instant::now();
    let m = model();
    eprintln!("builtin() loads in {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
    let base = [
        "the database query timed out after 30 seconds",
        "Agent planner called tool web_search with query 'latest release notes'",
        "the deployment failed because the container ran out of memory",
        "user asked to reset their password and the email never arrived",
        "retrying HTTP request to https://api.example.invalid/v1/items (attempt 3 of 5)",
        "the cache hit rate dropped sharply after the release on Thursday",
        "Café résumé: the customer requested a refund for order #4812",
        "disk usage on the server is above ninety percent",
    ];
    let texts: Vec<String> = (0..20_000).map(|i| format!("{} {i}", base[i % base.len()])).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let _ = m.embed(&refs[..1000]).unwrap();
    let start = std::time::Instant::now();
    let out = m.embed(&refs).unwrap();
    let secs = start.elapsed().as_secs_f64();
    let tokens: usize = refs.iter().map(|t| m.token_rows(t).len()).sum();
    eprintln!(
        "{} texts ({:.1} tokens each) in {secs:.3} s: {:.0} texts/s, {:.1} M tokens/s (one thread)",
        out.len(),
        tokens as f64 / refs.len() as f64,
        refs.len() as f64 / secs,
        tokens as f64 / secs / 1e6
    );
}

#[test]
fn builtin_constants_match_the_loaded_model() {
    let model = StaticEmbedder::builtin().unwrap();
    assert_eq!(model.model_id(), StaticEmbedder::BUILTIN_MODEL_ID);
    assert_eq!(model.dimension(), StaticEmbedder::BUILTIN_DIMENSION);
}
