-- ctxgraph embedded store, format version 1. See docs/storage-format.md.
CREATE TABLE log (
    position    INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL,
    record_id   TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    body        TEXT NOT NULL,
    UNIQUE (kind, record_id)
);
-- Nodes get a small integer id so edges, which dominate the graph, are keyed by integers.
CREATE TABLE nodes (
    nid   INTEGER PRIMARY KEY,
    label TEXT NOT NULL,
    id    TEXT NOT NULL,
    props TEXT NOT NULL
);
CREATE UNIQUE INDEX nodes_key ON nodes (label, id);
CREATE TABLE edges (
    from_nid  INTEGER NOT NULL,
    edge_type TEXT NOT NULL,
    to_nid    INTEGER NOT NULL,
    qualifier TEXT NOT NULL,
    props     TEXT NOT NULL,
    PRIMARY KEY (from_nid, edge_type, to_nid, qualifier)
) WITHOUT ROWID;
CREATE INDEX edges_in ON edges (to_nid, edge_type, from_nid, qualifier);
CREATE INDEX edges_type ON edges (edge_type, from_nid, to_nid, qualifier);
CREATE TABLE session_order (
    session_id TEXT NOT NULL,
    at_ns      INTEGER NOT NULL,
    event_id   TEXT NOT NULL,
    PRIMARY KEY (session_id, at_ns, event_id)
) WITHOUT ROWID;
-- The latest slot of each session, so in-order arrival finds its predecessor by key.
CREATE TABLE sessions (
    session_id    TEXT PRIMARY KEY,
    last_at_ns    INTEGER NOT NULL,
    last_event_id TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE pending_edges (
    wait_label TEXT NOT NULL,
    wait_id    TEXT NOT NULL,
    from_label TEXT NOT NULL,
    from_id    TEXT NOT NULL,
    edge_type  TEXT NOT NULL,
    to_label   TEXT NOT NULL,
    to_id      TEXT NOT NULL,
    qualifier  TEXT NOT NULL,
    props      TEXT NOT NULL,
    PRIMARY KEY (wait_label, wait_id, from_label, from_id, edge_type, to_label, to_id, qualifier)
) WITHOUT ROWID;
-- Bookkeeping: `projected_through` and `enriched_through` are the last log positions folded
-- into the graph (stage 1) and enriched (stage 2); `embedding_model` and `embedding_dimension`
-- name the model that produced the vectors.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('projected_through', 0), ('enriched_through', 0);
-- One embedding per node, little-endian f32.
CREATE TABLE vectors (
    nid  INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
-- BM25 full-text index over event text and summaries and entity names; rowid = node nid.
CREATE VIRTUAL TABLE text_index USING fts5(
    body, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
);
