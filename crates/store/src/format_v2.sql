-- ctxgraph embedded store, format version 2: the vector index and the retention archive.
-- See docs/storage-format.md.

-- The inverted list a vector was filed under when the index was last built; NULL = written since
-- (searched exactly until the next build).
ALTER TABLE vectors ADD COLUMN list INTEGER;
CREATE INDEX vectors_unindexed ON vectors (nid) WHERE list IS NULL;
-- One row per inverted list of the IVF vector index: its members packed in one blob (node ids,
-- int8 codes). The centroids are in meta under `ann_centroids`.
CREATE TABLE ann_lists (
    list    INTEGER PRIMARY KEY,
    members BLOB NOT NULL
);
-- Nodes that retention moved out of the graph. Their records stay in the log; reprojection
-- leaves them out again unless asked to bring them back.
CREATE TABLE archived (
    label       TEXT NOT NULL,
    id          TEXT NOT NULL,
    archived_at TEXT NOT NULL,
    PRIMARY KEY (label, id)
) WITHOUT ROWID;
-- The full-text index stems English words (porter over unicode61): "researched" finds
-- "research". FTS5 cannot change a tokenizer in place, so the index is rebuilt: stage 2 starts
-- over (its results are a function of the log and the model; the next enrichment recomputes
-- the same values and fills the new index).
DROP TABLE text_index;
CREATE VIRTUAL TABLE text_index USING fts5(
    body, content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
DELETE FROM vectors;
UPDATE meta SET value = 0 WHERE key = 'enriched_through';
