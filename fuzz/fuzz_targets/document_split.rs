//! Fuzzes `ctxgraph_ontology::split_document` on arbitrary text (the first byte picks Markdown or plain text); checks it never panics, is deterministic, yields trimmed non-empty sentences whose words all occur in the input, counts consistently, and that a document record of the text validates with one mention per sentence.
#![no_main]

use ctxgraph_fuzz::schema;
use ctxgraph_ontology::{DocumentFormat, Limits, content_hash, split_document, validate_value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((first, rest)) = data.split_first() else { return };
    let format = if first % 2 == 0 { DocumentFormat::Markdown } else { DocumentFormat::Text };
    let text = String::from_utf8_lossy(rest);

    let tree = split_document(format, &text);
    assert_eq!(tree, split_document(format, &text), "not deterministic (input: {text:?})");
    let sentences = tree.sentences();
    assert_eq!(sentences.len(), tree.sentence_count());
    let mut last = (0, 0);
    for (section, paragraph, sentence) in &sentences {
        assert!(!sentence.is_empty(), "empty sentence (input: {text:?})");
        assert_eq!(*sentence, sentence.trim_end(), "untrimmed sentence (input: {text:?})");
        assert!((*section, *paragraph) >= last, "orders go back (input: {text:?})");
        last = (*section, *paragraph);
        for word in sentence.split_whitespace() {
            assert!(text.contains(word), "word {word:?} not in the input {text:?}");
        }
    }
    for s in &tree.sections {
        assert!(s.level <= 6);
        assert!(s.title.is_some() || !s.paragraphs.is_empty(), "empty untitled section");
    }

    // A document record of this text validates, with a mention on every sentence.
    let mentions: Vec<_> = (0..sentences.len())
        .map(|i| serde_json::json!({"sentence": i, "entity": {"id": "concept:x", "name": "X", "via": "name"}, "confidence": 1.0}))
        .collect();
    let record = serde_json::json!({
        "record_type": "document", "url": "fuzz", "format": format.as_str(), "text": text,
        "content_hash": content_hash(&text), "version": 1, "ingested_at": "2026-01-01",
        "mentions": mentions,
    });
    let limits = Limits { max_record_bytes: usize::MAX, ..Limits::default() };
    if let Err(e) = validate_value(schema(), &limits, record) {
        panic!("a document record of the text does not validate: {e} (input: {text:?})");
    }
});
