//! Folding a log into a graph from the graph's checkpoint: what a projection worker does with
//! each batch, and how a lost graph is rebuilt from the log.

use ctxgraph_ontology::{RecordKind, Schema, SchemaError, ValidRecord};
use ctxgraph_projection::{ProjectionError, project};
use ctxgraph_store::{LogEntry, LogReader, ProjectionGraph, StoreError};

use std::collections::BTreeSet;
use std::time::Duration;

use crate::batch::BatchFold;
use crate::consumer::{GroupState, LogConsumer};
use crate::falkor_graph::FalkorGraph;
use crate::reads::PageReads;

/// Records folded per transaction: a page's graph writes and its checkpoint are applied together.
/// A page pays a fixed part of the server's time (its log read, read-ahead queries, watch and
/// one query per label and edge type): 1,000 records a page cost the server a tenth less per
/// record than 500, and 2,000 no less than 1,000, while a larger transaction holds the
/// server's command thread longer.
const FOLD_PAGE: usize = 1_000;

/// Why a fold stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FoldError {
    /// The log or the graph failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The projection refused what a record made.
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    /// A stored record does not decode: the log was damaged or written by something else.
    #[error("log position {position} does not decode: {reason}")]
    Corruption {
        /// Where.
        position: u64,
        /// Why.
        reason: String,
    },
}

/// The schema in force after every schema module in `log`: the core schema extended by each
/// module in log order (what the embedded engine loads when it opens a store).
pub fn load_schema(log: &dyn LogReader) -> Result<Schema, FoldError> {
    let mut schema = Schema::core().map_err(|e| corrupt(0, &e))?;
    for entry in log.read_kind(RecordKind::Schema)? {
        let source = schema_source(&entry.body).ok_or_else(|| FoldError::Corruption {
            position: entry.position,
            reason: "schema record has no source".into(),
        })?;
        schema = schema.extend(&source).map_err(|e| corrupt(entry.position, &e))?;
    }
    Ok(schema)
}

/// Fold up to `max` records past the graph's checkpoint into `graph`, a page of records at a
/// time, each page's graph writes and the move of the checkpoint past it applied as one
/// transaction ([`BatchFold`]); returns how many were folded. Schema records change what later records may
/// say, not the graph: load the schema with [`load_schema`] first, and call
/// [`FalkorGraph::ensure_schema`] with it; a module `schema` lacks (written since) is taken up
/// from its record on for the rest of this fold, so call both again after a fold that met one.
///
/// A fold that stops (an error, a crash, a worker killed) leaves every page either applied with
/// its checkpoint or not applied at all, so calling again folds each record exactly once; and
/// of two folds of the same graph running at once, a page commits only if the checkpoint did
/// not move since it began (the other fold's page is dropped and folded again after it).
pub fn catch_up(
    schema: &Schema,
    log: &dyn LogReader,
    graph: &FalkorGraph,
    max: usize,
) -> Result<u64, FoldError> {
    Ok(fold_pages(schema, log, graph, max, None)?.folded)
}

/// What [`fold_pages`] did.
#[derive(Debug, Clone, Copy)]
struct Folded {
    /// Records folded.
    folded: u64,
    /// A checkpoint the graph had reached when the fold ended (it may be further by now:
    /// another fold's commit).
    through: u64,
}

/// [`catch_up`], with the first page's log read sent with its watch when the checkpoint is
/// expected at `expected` (where the caller's last fold left it): read from the wrong place
/// (another fold moved it), the page is dropped and read again.
fn fold_pages(
    schema: &Schema,
    log: &dyn LogReader,
    graph: &FalkorGraph,
    max: usize,
    mut expected: Option<u64>,
) -> Result<Folded, FoldError> {
    let mut folded = 0u64;
    let mut through = 0u64;
    // A schema module written after `schema` was loaded (a worker running while a module is
    // added) governs the records after it: it is taken up where the fold meets it.
    let mut current = std::borrow::Cow::Borrowed(schema);
    // The next page's batch, begun with the previous commit, and the log page read while
    // that commit ran (from where the commit moved the checkpoint to).
    let mut begun: Option<(BatchFold<'_>, Ahead)> = None;
    while (folded as usize) < max {
        let want = (max - folded as usize).min(FOLD_PAGE);
        let (mut batch, ahead) = match begun.take() {
            Some((batch, ahead)) => {
                let page = ahead.take(batch.start(), want)?;
                (batch, page)
            }
            None => match expected.take() {
                Some(from) => {
                    let mut read = None;
                    let batch = BatchFold::begin_meanwhile(graph, &mut || {
                        read = Some(log.read_from(from + 1, want));
                    })?;
                    let page = Ahead { from, entries: read }.take(batch.start(), want)?;
                    (batch, page)
                }
                None => (BatchFold::new(graph)?, None),
            },
        };
        through = through.max(batch.start());
        let mut entries = match ahead {
            Some(entries) => entries,
            None => log.read_from(batch.start() + 1, want)?,
        };
        // Decode the page first, so that what it will read from the graph is read ahead. A
        // page ends at a schema module the schema lacks: the records after it are decoded and
        // projected under it, from the next page on.
        let mut records = Vec::with_capacity(entries.len());
        let mut reads = PageReads::default();
        let mut module = None;
        for (i, entry) in entries.iter().enumerate() {
            if entry.kind == RecordKind::Schema {
                if !current.modules().contains(&entry.id) {
                    let source =
                        schema_source(&entry.body).ok_or_else(|| FoldError::Corruption {
                            position: entry.position,
                            reason: "schema record has no source".into(),
                        })?;
                    module =
                        Some(current.extend(&source).map_err(|e| corrupt(entry.position, &e))?);
                    entries.truncate(i + 1);
                    break;
                }
                continue;
            }
            let record = decode(&current, entry)?;
            reads.add(&record);
            records.push((entry.position, record));
        }
        let Some(last) = entries.last().map(|e| e.position) else { break };
        batch.prefetch(&reads.nodes, &reads.sessions)?;
        for (position, record) in &records {
            project(&current, &mut batch, *position, record)?;
        }
        if let Some(next) = module {
            current = std::borrow::Cow::Owned(next);
        }
        let page = entries.len() as u64;
        // A page another fold committed first is not counted: the fold goes on from where
        // that one left the checkpoint.
        let left = max - (folded as usize).saturating_add(entries.len()).min(max);
        if left == 0 {
            if batch.commit(last)? {
                folded += page;
                through = last;
            }
            continue;
        }
        // More to fold: the next page begins with this commit (its watch in the same
        // pipeline), and its log page is read while the server applies this one.
        let next_want = left.min(FOLD_PAGE);
        let mut read = None;
        let (committed, next) = batch
            .commit_and_begin(last, &mut || read = Some(log.read_from(last + 1, next_want)))?;
        if committed {
            folded += page;
        }
        begun = Some((next, Ahead { from: last, entries: read }));
    }
    Ok(Folded { folded, through })
}

/// A log page read ahead of its batch: the records after checkpoint `from`, or why they could
/// not be read.
struct Ahead {
    from: u64,
    entries: Option<Result<Vec<LogEntry>, StoreError>>,
}

impl Ahead {
    /// The page, if it is the one a batch begun at checkpoint `start` wanting `want` records
    /// folds: read from the same checkpoint, and not longer than wanted. A page read from
    /// another checkpoint (another fold's commit moved it first) is dropped, to be read again.
    fn take(self, start: u64, want: usize) -> Result<Option<Vec<LogEntry>>, StoreError> {
        match self.entries {
            Some(Ok(mut entries)) if self.from == start => {
                entries.truncate(want);
                Ok(Some(entries))
            }
            // A read that failed fails the fold, whichever checkpoint it was read from.
            Some(Err(e)) => Err(e),
            _ => Ok(None),
        }
    }
}

/// A stored record, validated again under the schema in force where it stands.
fn decode(schema: &Schema, entry: &LogEntry) -> Result<ValidRecord, FoldError> {
    ctxgraph_ontology::validate_stored(schema, &entry.body)
        .map_err(|e| FoldError::Corruption { position: entry.position, reason: e.to_string() })
}

/// Fold one record into `graph` (schema records change nothing there).
pub fn fold_one(
    schema: &Schema,
    graph: &mut dyn ProjectionGraph,
    entry: &LogEntry,
) -> Result<(), FoldError> {
    if entry.kind == RecordKind::Schema {
        return Ok(());
    }
    let record = decode(schema, entry)?;
    project(schema, graph, entry.position, &record)?;
    Ok(())
}

fn corrupt(position: u64, e: &SchemaError) -> FoldError {
    FoldError::Corruption { position, reason: e.to_string() }
}

/// The module text of a stored schema record.
fn schema_source(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    if value.get("record_type")?.as_str()? != "schema" {
        return None;
    }
    value.get("source")?.as_str().map(str::to_owned)
}

/// The consumer group of the projection (stage 1) on a store's stream: what `ctxgraph worker`
/// joins and `ctxgraph stats` reports.
pub const PROJECTION_GROUP: &str = "projection";

/// How many stream entries a worker takes per read.
const WORKER_READ: usize = 1_000;

/// A projection worker of one store: a consumer of the store's stream in the projection's
/// group, folding the log into the graph and acknowledging what the graph's checkpoint covers.
///
/// The stream says what is new and who took it; the fold itself always runs from the graph's
/// checkpoint ([`catch_up`]), so entries claimed from a dead worker, or delivered twice, are
/// folded once.
#[derive(Debug)]
pub struct Worker {
    consumer: LogConsumer,
    /// How long another worker's entries must sit unacknowledged before this one takes them.
    claim_after: Duration,
    /// Entries taken and not yet covered by the checkpoint.
    unacked: BTreeSet<u64>,
    /// The most records one round folds.
    fold_limit: usize,
    /// Where the last round left the graph's checkpoint: the next round reads the log from
    /// there while it watches the checkpoint.
    through: Option<u64>,
}

impl Worker {
    /// A worker reading with `consumer`, taking over other workers' entries idle for
    /// `claim_after`.
    pub fn new(consumer: LogConsumer, claim_after: Duration) -> Worker {
        Worker {
            consumer,
            claim_after,
            unacked: BTreeSet::new(),
            fold_limit: usize::MAX,
            through: None,
        }
    }

    /// Fold at most `limit` records per round (at least one page's worth is still committed
    /// whole): a worker with a long way to go then returns between rounds, where it can
    /// report progress and stop when asked.
    #[must_use]
    pub fn with_fold_limit(mut self, limit: usize) -> Worker {
        self.fold_limit = limit.max(1);
        self
    }

    /// One round: take the entries of dead workers and new entries (waiting up to `block` for
    /// one), fold the log into `graph` up to its head (or the round's limit,
    /// [`Worker::with_fold_limit`]), and acknowledge every entry the graph's
    /// checkpoint now covers; returns how many records were folded.
    pub fn step(
        &mut self,
        schema: &Schema,
        log: &dyn LogReader,
        graph: &FalkorGraph,
        block: Option<Duration>,
    ) -> Result<u64, FoldError> {
        // Nothing in hand and a wait allowed: wait for new entries only if no dead worker's
        // are there. Otherwise the claim and the read are asked for now and taken after the
        // fold (which runs from the checkpoint, whatever they deliver).
        let asked = !(block.is_some() && self.unacked.is_empty());
        if asked {
            self.consumer.ask_claim_idle_and_next(self.claim_after, WORKER_READ)?;
        } else {
            let claimed = self.consumer.claim_idle(self.claim_after, WORKER_READ)?;
            self.unacked.extend(claimed);
            let wait = if self.unacked.is_empty() { block } else { None };
            self.unacked.extend(self.consumer.next(WORKER_READ, wait)?);
        }
        let Folded { folded, through } =
            fold_pages(schema, log, graph, self.fold_limit, self.through)?;
        self.through = Some(through);
        if asked {
            let (claimed, new) = self.consumer.take_claimed_and_next()?;
            self.unacked.extend(claimed);
            self.unacked.extend(new);
        }
        let done: Vec<u64> = self.unacked.iter().copied().filter(|p| *p <= through).collect();
        // Its reply is read before the consumer's next command (a failure is returned there).
        self.consumer.ack_later(&done)?;
        for p in done {
            self.unacked.remove(&p);
        }
        Ok(folded)
    }

    /// The projection group's pending entries and lag (for `stats` and metrics).
    pub fn state(&mut self) -> Result<GroupState, FoldError> {
        Ok(self.consumer.state()?)
    }
}
