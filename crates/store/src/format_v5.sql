-- Format 5: which inverted list each vector was filed under moves out of the vector's row into a
-- narrow table of its own. A build of the vector index files every vector again; in the row it
-- rewrote every vector (a kilobyte each), so an install wrote the whole vectors table to the
-- write-ahead log. `vector_lists` holds a row per vector (NULL list: written since the build).
CREATE TABLE vector_lists (
    nid  INTEGER PRIMARY KEY,
    list INTEGER
);
INSERT INTO vector_lists (nid, list) SELECT nid, list FROM vectors;
CREATE INDEX vector_lists_unindexed ON vector_lists (nid) WHERE list IS NULL;
DROP INDEX vectors_unindexed;
ALTER TABLE vectors DROP COLUMN list;
