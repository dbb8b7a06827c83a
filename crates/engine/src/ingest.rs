//! JSONL ingestion: read records line by line, validate each, append and project in durable
//! batches, and report accepted, duplicate and rejected lines with their reasons.

use std::io::BufRead;

use std::sync::mpsc::{Receiver, Sender, SyncSender};

use ctxgraph_ontology::{
    Limits, RecordBody, Schema, ValidRecord, ValidationErrors, Violation, validate,
};
use ctxgraph_store::WalCopier;

use crate::backend::Backend;
use crate::engine::{Engine, Projection, schema_source};
use crate::error::Error;

/// Result of appending one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngestOutcome {
    /// Appended at this log position.
    New(u64),
    /// Already stored, identical, at this position: nothing written.
    Duplicate(u64),
}

/// How to ingest.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Stop at the first bad line; nothing of it is written (earlier lines are).
    pub strict: bool,
    /// Records per durable transaction. Larger batches amortise the fsync.
    pub batch_size: usize,
    /// Project inline (default) or defer to a later catch-up.
    pub projection: Projection,
    /// How many rejections to keep with their reasons (all are counted).
    pub keep_rejections: usize,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            strict: false,
            batch_size: 2_000,
            projection: Projection::Inline,
            keep_rejections: 1_000,
        }
    }
}

/// Progress so far, reported after every batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IngestProgress {
    /// Input bytes consumed.
    pub bytes: u64,
    /// Lines read.
    pub lines: u64,
    /// New records acknowledged (durable).
    pub accepted: u64,
    /// Lines that repeated a stored record.
    pub duplicates: u64,
    /// Lines refused.
    pub rejected: u64,
    /// Log position of the last new record acknowledged (durable); 0 before the first.
    pub last_position: u64,
}

/// One refused line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// 1-based line number.
    pub line: u64,
    /// The record id, when it could be read.
    pub id: Option<String>,
    /// Stable code of the (first) rule broken.
    pub code: &'static str,
    /// Every violation; for a conflict, one describing it.
    pub violations: Vec<Violation>,
}

/// What an ingestion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngestReport {
    /// Counters.
    pub progress: IngestProgress,
    /// New records (same as `progress.accepted`).
    pub accepted: u64,
    /// Kept rejections, in line order (at most `keep_rejections`).
    pub rejections: Vec<Rejection>,
    /// Whether `strict` stopped the run at a bad line.
    pub stopped: bool,
    /// Log positions of the first and last new record.
    pub positions: Option<(u64, u64)>,
}

impl IngestReport {
    /// Count (and keep, within the limit) a refused line; true when strict mode must stop here.
    fn refuse(&mut self, options: &IngestOptions, rejection: Rejection) -> bool {
        self.progress.rejected += 1;
        if self.rejections.len() < options.keep_rejections {
            self.rejections.push(rejection);
        }
        self.stopped |= options.strict;
        options.strict
    }

    fn accept(&mut self, position: u64) {
        self.progress.accepted += 1;
        self.progress.last_position = position;
        self.accepted += 1;
        self.positions = Some(match self.positions {
            None => (position, position),
            Some((first, _)) => (first, position),
        });
    }
}

/// Validated records waiting for their transaction, with the input line of each.
#[derive(Default)]
struct Batch {
    lines: Vec<u64>,
    records: Vec<ValidRecord>,
}

/// Lines handed to the validating thread at a time.
const CHUNK_LINES: usize = 512;
/// Chunks in flight between the reader and the validating thread.
const CHUNKS_IN_FLIGHT: usize = 2;

/// A line as read: its physical number, its full length, and at most `max + 1` of its bytes.
struct RawLine {
    line: u64,
    consumed: usize,
    bytes: Vec<u8>,
}

/// A line after validation, ready to be written or refused.
#[allow(
    clippy::large_enum_variant,
    reason = "items live briefly in one chunk's vector; boxing would allocate once per line"
)]
enum Item {
    /// Only white space.
    Blank { consumed: usize },
    /// Refused before validation (too long, not UTF-8).
    Refused { line: u64, consumed: usize, violation: Violation },
    /// Validated (or not), with what the writer needs to report or apply it.
    Record {
        line: u64,
        consumed: usize,
        validated: Result<ValidRecord, ValidationErrors>,
        /// The module text when the line is a schema record (new, or already in force).
        schema_source: Option<String>,
        /// The id, when a refused line has one.
        id: Option<String>,
    },
}

/// What the writer is done with, sent back to the validating thread, which allocated it: the
/// records of a committed batch, freed there (a twentieth of the writer's time), their vector
/// sent back empty for the next batch, and the emptied vectors of validated chunks, filled
/// again. The large vectors go round instead of being freed and allocated again, since each
/// such call makes the allocator gather every small block freed since the last one.
enum Spent {
    Records(Vec<ValidRecord>),
    Items(Vec<Item>),
}

/// The writer's ends of the channels to the threads beside it.
struct Pipes<'a> {
    chunks: &'a SyncSender<Vec<RawLine>>,
    items: &'a Receiver<Vec<Item>>,
    spent: Sender<Spent>,
    /// Batch vectors emptied by the validating thread.
    emptied: Receiver<Vec<ValidRecord>>,
    /// The write-ahead log's copies, on the embedded store.
    wal: Option<&'a WalCopier>,
}

/// Validate chunks of lines in order, on the second core. Keeps its own copy of the schema,
/// extended by each schema module it validates, so later lines see the module as the writer
/// will have applied it. Between chunks it takes back what the writer is done with.
fn validate_lines(
    mut schema: Schema,
    limits: Limits,
    chunks: Receiver<Vec<RawLine>>,
    items: SyncSender<Vec<Item>>,
    spent: Receiver<Spent>,
    emptied: Sender<Vec<ValidRecord>>,
) {
    let mut free: Vec<Vec<Item>> = Vec::new();
    for chunk in chunks {
        let mut out = free.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK_LINES));
        out.extend(chunk.into_iter().map(|raw| classify(&mut schema, &limits, raw)));
        if items.send(out).is_err() {
            return;
        }
        while let Ok(done) = spent.try_recv() {
            match done {
                Spent::Records(mut records) => {
                    records.clear();
                    // The writer has hung up only when it is done.
                    let _ = emptied.send(records);
                }
                Spent::Items(items) if free.len() <= CHUNKS_IN_FLIGHT => free.push(items),
                Spent::Items(items) => drop(items),
            }
        }
    }
}

fn classify(schema: &mut Schema, limits: &Limits, raw: RawLine) -> Item {
    let RawLine { line, consumed, bytes } = raw;
    if consumed > limits.max_record_bytes {
        let v = Violation::with_text(
            "$",
            Some(&format!("{consumed} bytes")),
            "limits.record_bytes",
            format!("record exceeds the limit of {} bytes", limits.max_record_bytes),
        );
        return Item::Refused { line, consumed, violation: v };
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t.trim(),
        Err(e) => {
            let v =
                Violation::with_text("$", None, "json.encoding", format!("line is not UTF-8: {e}"));
            return Item::Refused { line, consumed, violation: v };
        }
    };
    if text.is_empty() {
        return Item::Blank { consumed };
    }
    let validated = validate(schema, limits, text);
    let (source, id) = match &validated {
        Ok(record) => match record.body() {
            RecordBody::Schema(s) => {
                if let Ok(extended) = schema.extend(&s.source) {
                    *schema = extended;
                }
                (Some(s.source.clone()), None)
            }
            RecordBody::Event(_)
            | RecordBody::Edge(_)
            | RecordBody::EntityDecision(_)
            | RecordBody::Memory(_)
            | RecordBody::MemoryOutcome(_)
            | RecordBody::MemoryLink(_)
            | RecordBody::MemoryLinkVote(_)
            | RecordBody::Slots(_)
            | RecordBody::Fact(_)
            | RecordBody::FactRetraction(_)
            | RecordBody::Document(_)
            | RecordBody::Forget(_)
            | RecordBody::Redacted(_)
            | RecordBody::Receipt(_)
            | RecordBody::Access(_) => (None, None),
        },
        // A module already in force: re-ingesting it (a backup, say) is a duplicate, not an error.
        Err(e) if e.code() == "schema.duplicate_module" => (schema_source(text), None),
        Err(_) => (None, id_in(text)),
    };
    Item::Record { line, consumed, validated, schema_source: source, id }
}

/// The validating thread hung up: it can only have panicked, so the caller gets an error.
fn validator_stopped() -> Error {
    Error::Input(std::io::Error::other("the validating thread stopped"))
}

/// The record id of a refused line, when it has one.
fn id_in(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    ["event_id", "edge_id", "module"].iter().find_map(|k| v.get(k)?.as_str().map(str::to_owned))
}

impl Engine {
    /// Ingest newline-delimited JSON records from `reader`.
    ///
    /// Blank lines are skipped. A bad line never changes the store. `progress` is called after
    /// every durable batch. Lines are validated on a second thread while the previous ones are
    /// written, so parsing overlaps with the single writer; a line read ahead of a strict stop is
    /// never written. On the embedded store the write-ahead log is copied into the file on a
    /// thread of its own meanwhile ([`WalCopier`]), which the writer's commits would otherwise
    /// stop to do.
    pub fn ingest_jsonl(
        &mut self,
        mut reader: impl BufRead,
        options: &IngestOptions,
        progress: &mut dyn FnMut(&IngestProgress),
    ) -> Result<IngestReport, Error> {
        let (schema, limits) = (self.schema.clone(), self.options().limits);
        let copier = match &self.backend {
            Backend::Embedded(store) => {
                store.set_auto_checkpoint(false)?;
                Some(WalCopier::new("ctxgraph-wal"))
            }
            Backend::Remote(_) => None,
        };
        let result = std::thread::scope(|scope| {
            let (chunk_tx, chunk_rx) = std::sync::mpsc::sync_channel(CHUNKS_IN_FLIGHT);
            let (item_tx, item_rx) = std::sync::mpsc::sync_channel(CHUNKS_IN_FLIGHT);
            let (spent_tx, spent_rx) = std::sync::mpsc::channel();
            let (emptied_tx, emptied_rx) = std::sync::mpsc::channel();
            scope.spawn(move || {
                validate_lines(schema, limits, chunk_rx, item_tx, spent_rx, emptied_tx);
            });
            let mut pipes = Pipes {
                chunks: &chunk_tx,
                items: &item_rx,
                spent: spent_tx,
                emptied: emptied_rx,
                wal: copier.as_ref(),
            };
            let result = self.write_validated(
                &mut reader,
                limits.max_record_bytes,
                &mut pipes,
                options,
                progress,
            );
            // Closing the channels ends the other threads, whatever the outcome.
            drop(pipes);
            drop(chunk_tx);
            result
        });
        let Some(copier) = copier else { return result };
        copier.wait();
        let restored = self.backend.embedded("ingesting")?.set_auto_checkpoint(true);
        let report = result?;
        restored?;
        Ok(report)
    }

    fn write_validated(
        &mut self,
        reader: &mut impl BufRead,
        max: usize,
        pipes: &mut Pipes<'_>,
        options: &IngestOptions,
        progress: &mut dyn FnMut(&IngestProgress),
    ) -> Result<IngestReport, Error> {
        let mut report = IngestReport::default();
        let mut batch = Batch::default();
        let mut buf = Vec::new();
        let mut physical = 0u64;
        let (mut reading, mut in_flight) = (true, 0usize);
        'lines: loop {
            while reading && in_flight < CHUNKS_IN_FLIGHT {
                let mut chunk = Vec::with_capacity(CHUNK_LINES);
                while chunk.len() < CHUNK_LINES {
                    let Some(consumed) = read_bounded_line(reader, &mut buf, max)? else {
                        reading = false;
                        break;
                    };
                    physical += 1;
                    chunk.push(RawLine { line: physical, consumed, bytes: buf.clone() });
                }
                if chunk.is_empty() {
                    break;
                }
                pipes.chunks.send(chunk).map_err(|_| validator_stopped())?;
                in_flight += 1;
            }
            if in_flight == 0 {
                break;
            }
            let mut validated = pipes.items.recv().map_err(|_| validator_stopped())?;
            in_flight -= 1;
            let mut drained = validated.drain(..);
            for item in drained.by_ref() {
                let (line, consumed, validated, schema_source, id) = match item {
                    Item::Blank { consumed } => {
                        report.progress.bytes += consumed as u64;
                        continue;
                    }
                    Item::Refused { line, consumed, violation } => {
                        report.progress.bytes += consumed as u64;
                        report.progress.lines += 1;
                        let r = Rejection {
                            line,
                            id: None,
                            code: violation.rule,
                            violations: vec![violation],
                        };
                        if report.refuse(options, r) {
                            break 'lines;
                        }
                        continue;
                    }
                    Item::Record { line, consumed, validated, schema_source, id } => {
                        (line, consumed, validated, schema_source, id)
                    }
                };
                report.progress.bytes += consumed as u64;
                report.progress.lines += 1;
                // Schema modules change what later lines may say, so they are applied at once.
                if let Some(source) = schema_source {
                    self.flush(&mut batch, pipes, options, &mut report, progress)?;
                    match self.add_schema_module(&source) {
                        Ok(IngestOutcome::New(p)) => report.accept(p),
                        Ok(IngestOutcome::Duplicate(_)) => report.progress.duplicates += 1,
                        Err(e) if e.is_user_error() => {
                            let v = Violation::with_text("$.source", None, e.code(), e.to_string());
                            let id = validated.as_ref().ok().map(|r| r.id().to_owned());
                            if report.refuse(
                                options,
                                Rejection { line, id, code: v.rule, violations: vec![v] },
                            ) {
                                break 'lines;
                            }
                        }
                        Err(e) => return Err(e),
                    }
                    continue;
                }
                match validated {
                    Ok(record) => {
                        batch.lines.push(line);
                        batch.records.push(record);
                        if batch.records.len() >= options.batch_size.max(1)
                            && !self.flush(&mut batch, pipes, options, &mut report, progress)?
                        {
                            break 'lines;
                        }
                    }
                    Err(errors) => {
                        let code = errors.code();
                        if report.refuse(
                            options,
                            Rejection { line, id, code, violations: errors.violations },
                        ) {
                            break 'lines;
                        }
                    }
                }
            }
            drop(drained);
            // The validating thread may be gone after an error; then the vector is freed here.
            let _ = pipes.spent.send(Spent::Items(validated));
        }
        // Lines before a strict stop are acknowledged; the bad line and those after are not.
        self.flush(&mut batch, pipes, options, &mut report, progress)?;
        Ok(report)
    }

    /// Commit the batch; false when strict mode hit a conflict and ingestion must stop.
    fn flush(
        &mut self,
        batch: &mut Batch,
        pipes: &mut Pipes<'_>,
        options: &IngestOptions,
        report: &mut IngestReport,
        progress: &mut dyn FnMut(&IngestProgress),
    ) -> Result<bool, Error> {
        if batch.records.is_empty() {
            return Ok(true);
        }
        let outcomes = self.ingest_batch(&batch.records, options.projection, options.strict)?;
        let mut keep_going = true;
        for ((line, record), outcome) in batch.lines.iter().zip(&batch.records).zip(outcomes) {
            match outcome {
                Ok(IngestOutcome::New(p)) => report.accept(p),
                Ok(IngestOutcome::Duplicate(_)) => report.progress.duplicates += 1,
                Err(e) => {
                    let v = Violation::with_text("$", Some(record.id()), e.code(), e.to_string());
                    if report.refuse(
                        options,
                        Rejection {
                            line: *line,
                            id: Some(record.id().to_owned()),
                            code: v.rule,
                            violations: vec![v],
                        },
                    ) {
                        keep_going = false;
                    }
                }
            }
        }
        batch.lines.clear();
        let spare =
            pipes.emptied.try_recv().unwrap_or_else(|_| Vec::with_capacity(batch.lines.capacity()));
        let records = std::mem::replace(&mut batch.records, spare);
        // The validating thread may be gone after an error; then the records are freed here.
        let _ = pipes.spent.send(Spent::Records(records));
        progress(&report.progress);
        // After the batch is reported: it is durable whatever becomes of the copy.
        if let Some(copier) = pipes.wal {
            copier.after_commit(self.backend.embedded("ingesting")?)?;
        }
        Ok(keep_going)
    }
}

/// Read one line into `buf`, keeping at most `max + 1` bytes of it (the rest is consumed and
/// counted, not stored, so a huge line cannot exhaust memory). Returns the line's full length
/// without its newline, or `None` at end of input.
fn read_bounded_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<usize>> {
    buf.clear();
    let mut total = 0usize;
    let mut any = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(any.then_some(total));
        }
        any = true;
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        let room = (max + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        total += chunk.len();
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(total));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_lines_keep_a_prefix_and_count_everything() {
        let input = b"short\nthis line is long\n\nlast";
        let mut r = &input[..];
        let mut buf = Vec::new();
        assert_eq!(read_bounded_line(&mut r, &mut buf, 8).unwrap(), Some(5));
        assert_eq!(buf, b"short");
        assert_eq!(read_bounded_line(&mut r, &mut buf, 8).unwrap(), Some(17));
        assert_eq!(buf, b"this line");
        assert_eq!(read_bounded_line(&mut r, &mut buf, 8).unwrap(), Some(0));
        assert_eq!(read_bounded_line(&mut r, &mut buf, 8).unwrap(), Some(4));
        assert_eq!(read_bounded_line(&mut r, &mut buf, 8).unwrap(), None);
    }
}
