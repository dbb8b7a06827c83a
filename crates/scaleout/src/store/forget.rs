//! A forget on a scale-out store: the log's part is one script ([`RedisLog::forget_append`]);
//! the graph's part is the fold of the forget record, run here through the record if no worker
//! has run it yet; then the graph's query telemetry is dropped and the append-only file is
//! rewritten, so that the queries and commands that carried the forgotten bytes leave the server
//! and the disk.

use ctxgraph_ontology::ValidRecord;
use ctxgraph_projection::ProjectionError;
use ctxgraph_store::{ForgetAppend, ForgetGraphBody, GraphForget, Redaction, StoreError};

use super::ScaleOutStore;
use crate::batch::BatchFold;
use crate::falkor_graph::FalkorGraph;
use crate::fold::{FoldError, catch_up, load_schema};

impl ScaleOutStore {
    /// [`ctxgraph_store::RemoteStore::forget_append`] over a pooled connection.
    pub(super) fn forget_on_log(
        &self,
        record: &ValidRecord,
        recorded_at: &str,
        head: u64,
        redactions: &[Redaction],
    ) -> Result<ForgetAppend, StoreError> {
        let mut conn = self.take()?;
        let out = conn.log.forget_append(record, recorded_at, head, redactions);
        if !matches!(out, Err(StoreError::Remote { .. })) {
            self.give_back(conn);
        }
        out
    }

    /// Fold the graph through `position` with the fold a worker runs ([`catch_up`], which a
    /// worker folding at the same time cannot make apply a page twice); the workers find the
    /// pages folded and acknowledge them.
    pub(super) fn fold_to(&self, position: u64) -> Result<u64, StoreError> {
        let conn = self.take()?;
        // Usually a worker has folded it already: then no writer's connection is needed.
        let mut through = conn.graph.projected_through()?;
        if through >= position {
            self.give_back(conn);
            return Ok(through);
        }
        let schema = load_schema(&conn.log).map_err(|e| self.fold_failed(e))?;
        let graph = FalkorGraph::connect(&self.url, &schema)?;
        while through < position {
            let folded = catch_up(&schema, &conn.log, &graph, usize::MAX)
                .map_err(|e| self.fold_failed(e))?;
            through = graph.projected_through()?;
            if folded == 0 && through < position {
                return Err(StoreError::Corruption(format!(
                    "{}: the graph stays at log position {through} and cannot be folded through {position}",
                    self.url
                )));
            }
        }
        self.give_back(conn);
        Ok(through)
    }

    /// Drop the graph's query telemetry ([`super::telemetry::drop_telemetry`]: the fold's
    /// queries carried the forgotten text there), then [`crate::RedisLog::rewrite_persistence`]
    /// over a pooled connection.
    pub(super) fn rewrite(&self) -> Result<(), StoreError> {
        let mut conn = self.take()?;
        super::telemetry::drop_telemetry(&self.url, conn.graph.graph_name())?;
        conn.log.rewrite_persistence()?;
        self.give_back(conn);
        Ok(())
    }

    /// [`ctxgraph_store::RemoteStore::forget_in_graph`]: `body` over a [`BatchFold`] committed
    /// with the projection checkpoint where it was (as retention's pass is), so a worker that
    /// folds, enriches or consolidates meanwhile makes it apply nothing; a reset of stages 2
    /// and 3, when asked, rides in the same transaction.
    pub(super) fn forget_graph(&self, body: &mut ForgetGraphBody<'_>) -> Result<bool, StoreError> {
        // A connection of its own, which holds the batch's watch. The forget deletes nodes and
        // rewrites existing ones: it needs no label the schema adds.
        let graph = FalkorGraph::connect_read(&self.url)?;
        let mut fold = BatchFold::new(&graph)?;
        let extra = match body(&mut fold)? {
            // Dropped: the batch ends its watch, nothing is written.
            GraphForget::Abort => return Ok(false),
            GraphForget::Apply => Vec::new(),
            GraphForget::ApplyAndResetEnrichment => graph.reset_enrichment_cmds(),
        };
        let through = fold.start();
        fold.commit_with(through, extra)
    }

    fn fold_failed(&self, e: FoldError) -> StoreError {
        match e {
            FoldError::Store(e) | FoldError::Projection(ProjectionError::Store(e)) => e,
            other @ (FoldError::Projection(_) | FoldError::Corruption { .. }) => {
                StoreError::Corruption(format!("{}: folding the forget: {other}", self.url))
            }
        }
    }
}
