-- Format 3: the lexical index. One BM25 posting list per full-text term (a blob of
-- `(node id, term frequency, document length)`), built from the full-text index by
-- consolidation so that ranking costs a few nanoseconds per posting instead of a call of
-- FTS5's bm25() per matching row. Its statistics (`text_built_through`, the highest node id it
-- covers; `text_docs`; `text_avg_len`) and `text_generation` live in meta. Derived data: the
-- next build fills it, and until then searches use the full-text index alone.
CREATE TABLE text_postings (
    term     TEXT PRIMARY KEY,
    postings BLOB NOT NULL
) WITHOUT ROWID;
