//! Fuzzes the readers of other memory tools' exports (`ctxgraph_interop::import`: MCP memory JSONL, episodes, memory-layer JSON, Markdown notes) on arbitrary bytes; checks they never panic, are deterministic, and give every refused item a code and a reason.
#![no_main]

use ctxgraph_fuzz::schema;
use ctxgraph_interop::import::{Imported, episodes, markdown, mcp_memory, mem0};
use libfuzzer_sys::fuzz_target;

fn check(name: &str, read: impl Fn() -> Imported) {
    let got = read();
    assert_eq!(read(), got, "{name} is not deterministic");
    for r in &got.refused {
        assert!(!r.code.is_empty() && !r.message.is_empty(), "{name}: a refusal without a reason");
    }
    for (_, record) in &got.events {
        let id = record["event_id"].as_str().unwrap_or("");
        assert!(!id.is_empty() && !id.chars().any(char::is_whitespace), "{name}: event id {id:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let s = schema();
    check("mcp-memory", || mcp_memory::read(s, &text, "2025-01-01T00:00:00Z"));
    check("episodes", || episodes::read(s, &text));
    check("mem0", || mem0::read(s, &text));
    let files =
        vec![("note.md".to_owned(), text.to_string()), ("b/other.md".to_owned(), text.to_string())];
    check("markdown", || markdown::read(s, &files));
});
