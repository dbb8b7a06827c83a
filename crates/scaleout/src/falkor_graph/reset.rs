//! Starting a store's derived data over: a rebuild of the graph from the log (`reproject`)
//! empties the graph and every stage-2 and stage-3 key and puts every checkpoint back to 0; a
//! change of embedding model (`reembed`) drops stage 2's and stage 3's keys only.
//!
//! Each is one `MULTI`/`EXEC` block. Its `SET`s touch the keys every other transaction of the
//! store watches (the fold's checkpoint, node counter and stage-2 checkpoint; stage 2's and
//! stage 3's checkpoints), so a worker's page, enrichment or consolidation read before the
//! reset applies nothing after it, and starts again from the checkpoints the reset left.

use ctxgraph_store::StoreError;

use super::FalkorGraph;
use super::stage3::{ANN_CENTROIDS, ANN_GENERATION, ANN_LISTS, CONSOLIDATED, VECTOR_LISTS};

/// Stage 2's and stage 3's keys that hold data (not counters): vectors, full-text documents,
/// the node keys by number, the lexical index, the embedding model, the vector index.
const DATA_KEYS: &[&str] = &[
    "vectors",
    "vector_ids",
    "doc_terms",
    "text_ids",
    "node_keys",
    "postings",
    "text_build",
    super::stage2::EMBEDDING,
    VECTOR_LISTS,
    ANN_CENTROIDS,
    ANN_LISTS,
    // FalkorDB's own indexes' markers and the documents' term count: the copies they describe
    // go with the vectors and documents (the `_Vector` and `_Text` nodes, below).
    super::native_index::NATIVE_VECTORS,
    super::native_text::NATIVE_TEXTS,
    super::native_text::TEXT_TOKENS,
];

/// The generations the readers' caches are tagged with: moved on by every reset.
const GENERATIONS: &[&str] = &["vector_generation", "text_generation", ANN_GENERATION];

impl FalkorGraph {
    /// Empty the graph (nodes, edges, session order, parked edges; its indexes and constraints
    /// stay), drop every stage-2 and stage-3 key, and set the projection checkpoint, the node
    /// creation counter, stage 2's checkpoint and `consolidated_through` to 0, in one
    /// transaction: the start of a rebuild from the log, which folds every record again.
    pub fn reset_projection(&self) -> Result<(), StoreError> {
        let mut pipe = self.reset_pipe();
        pipe.cmd("GRAPH.QUERY").arg(&self.name).arg("MATCH (n) DETACH DELETE n");
        pipe.cmd("SET").arg(&self.checkpoint).arg(0);
        pipe.cmd("SET").arg(&self.seq).arg(0);
        self.push_generation(&mut pipe);
        // The graph is empty: every entity folded from here has its name.
        pipe.add_command(self.named_layout_cmd());
        self.run_reset(&pipe, "a reset of the graph")
    }

    /// Drop every vector, full-text document, lexical and vector index key and the embedding
    /// model, and set stage 2's checkpoint and `consolidated_through` to 0, in one transaction:
    /// enrichment then starts again from the first record (the nodes' enriched properties are
    /// written again by it, as on the embedded store).
    pub fn reset_enrichment(&self) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for cmd in self.reset_enrichment_cmds() {
            pipe.add_command(cmd);
        }
        self.run_reset(&pipe, "a reset of the enrichment")
    }

    /// The commands of [`FalkorGraph::reset_enrichment`], for a transaction of the caller's
    /// (a forget of an entity whose rewrites changed indexed text).
    pub(crate) fn reset_enrichment_cmds(&self) -> Vec<redis::Cmd> {
        let mut out = self.reset_cmds();
        // The copies of the vectors and documents under FalkorDB's own indexes go with them
        // (a reset of the projection empties the whole graph).
        for label in [super::native_index::VECTOR_LABEL, super::native_text::TEXT_LABEL] {
            let mut cmd = redis::cmd("GRAPH.QUERY");
            cmd.arg(&self.name).arg(format!("MATCH (n:{label}) DELETE n"));
            out.push(cmd);
        }
        out
    }

    /// The part both resets share: stage 2's and stage 3's data dropped, their checkpoints at
    /// 0, the index generations moved on.
    fn reset_pipe(&self) -> redis::Pipeline {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for cmd in self.reset_cmds() {
            pipe.add_command(cmd);
        }
        pipe
    }

    /// [`FalkorGraph::reset_pipe`]'s commands.
    fn reset_cmds(&self) -> Vec<redis::Cmd> {
        let mut del = redis::cmd("DEL");
        for suffix in DATA_KEYS {
            del.arg(self.stage2_key(suffix));
        }
        let mut out = vec![del];
        // A SET, not a DEL: a DEL of a key that is not there touches nothing a watch sees.
        out.push(redis::cmd("SET").arg(&self.enriched).arg(0).clone());
        out.push(redis::cmd("SET").arg(self.stage2_key(CONSOLIDATED)).arg(0).clone());
        for suffix in GENERATIONS {
            out.push(redis::cmd("INCR").arg(self.stage2_key(suffix)).clone());
        }
        // An enrichment read before the reset is not written after it (its checkpoint, 0,
        // may be the reset's).
        out.push(redis::cmd("INCR").arg(self.stage2_key(super::stage2::EPOCH)).clone());
        out
    }

    /// Send a reset: it watches nothing, so it always runs.
    fn run_reset(&self, pipe: &redis::Pipeline, what: &str) -> Result<(), StoreError> {
        // A watch left on this connection would make the block a conditional one.
        self.unwatch();
        if self.exec_watched(pipe, what)? {
            Ok(())
        } else {
            Err(StoreError::Remote {
                backend: "falkordb",
                detail: format!("{}: {what} was not applied", self.url),
            })
        }
    }
}
