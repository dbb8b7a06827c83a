//! Ingestion on a remote store: the records are checked as on the embedded store, against the
//! graph its projection workers have folded and the log records they have not folded yet, then
//! appended to its log; the workers fold them later.

use ctxgraph_ontology::{RecordKind, Schema, ValidRecord};
use ctxgraph_store::{Appended, RemoteStore, StoreError};

use crate::engine::decode;
use crate::error::Error;
use crate::graph_checks::{self, Earlier};
use crate::ingest::IngestOutcome;

/// Log records read at a time from the unfolded tail.
const TAIL_PAGE: usize = 2_000;

/// [`crate::Engine::ingest_batch`] on a remote store: one outcome per record, in order (none
/// for the records after the first refusal with `stop_on_conflict`).
pub(crate) fn ingest(
    store: &dyn RemoteStore,
    schema: &Schema,
    records: &[ValidRecord],
    stop_on_conflict: bool,
) -> Result<Vec<Result<IngestOutcome, Error>>, Error> {
    let recorded_at = crate::knowledge::now();
    let read = store.begin_read()?;
    let decides = graph_checks::decides(records);
    let mut earlier = Earlier::default();
    if decides {
        // The embedded store folds its lagging graph before these checks; here the workers
        // fold, so what they have not folded yet is read from the log instead.
        let mut from = read.projected_through()?.saturating_add(1);
        let head = read.head()?;
        while from <= head {
            let page = read.read_from(from, TAIL_PAGE)?;
            let Some(last) = page.last() else { break };
            from = last.position.saturating_add(1);
            for entry in page.iter().filter(|e| e.kind != RecordKind::Schema) {
                earlier.note(decode(schema, entry)?.body());
            }
        }
    }
    let mut outcomes: Vec<Result<IngestOutcome, Error>> = Vec::with_capacity(records.len());
    // Records that passed their checks, waiting to be appended, with their outcome's place.
    let mut accepted: Vec<(usize, &ValidRecord)> = Vec::with_capacity(records.len());
    for record in records {
        if let Some(refused) = graph_checks::check(&*read, record, false, decides, &mut earlier)? {
            outcomes.push(Err(refused));
            if stop_on_conflict {
                break;
            }
            continue;
        }
        if stop_on_conflict {
            // A conflict must stop the batch before the next record is written, and an append
            // batch writes every record it is given: one record at a time.
            let outcome = append(store, &[record], &recorded_at)?.pop().ok_or_else(no_outcome)?;
            let stop = outcome.is_err();
            outcomes.push(outcome);
            if stop {
                break;
            }
            continue;
        }
        accepted.push((outcomes.len(), record));
        // Filled in once the batch is appended.
        outcomes.push(Ok(IngestOutcome::Duplicate(0)));
    }
    drop(read);
    if !accepted.is_empty() {
        let batch: Vec<&ValidRecord> = accepted.iter().map(|(_, r)| *r).collect();
        let appended = append(store, &batch, &recorded_at)?;
        if appended.len() != batch.len() {
            return Err(Error::Store(StoreError::Remote {
                backend: "remote",
                detail: format!(
                    "{}: an append of {} records reported {} outcomes",
                    store.location(),
                    batch.len(),
                    appended.len()
                ),
            }));
        }
        for ((at, _), outcome) in accepted.into_iter().zip(appended) {
            outcomes[at] = outcome;
        }
    }
    Ok(outcomes)
}

/// Append `records` and turn each store outcome into an ingest outcome (a conflict is the
/// record's error; any other failure, the batch's).
fn append(
    store: &dyn RemoteStore,
    records: &[&ValidRecord],
    recorded_at: &str,
) -> Result<Vec<Result<IngestOutcome, Error>>, Error> {
    store
        .append_batch(records, recorded_at)?
        .into_iter()
        .map(|outcome| match outcome {
            Ok(Appended::New(position)) => Ok(Ok(IngestOutcome::New(position))),
            Ok(Appended::Duplicate(position)) => Ok(Ok(IngestOutcome::Duplicate(position))),
            Err(e @ StoreError::Conflict { .. }) => Ok(Err(Error::Store(e))),
            Err(e) => Err(Error::Store(e)),
        })
        .collect()
}

fn no_outcome() -> Error {
    Error::Corruption { position: 0, reason: "appending a record reported no outcome".into() }
}
