//! A tenant's writer queue: group commit.
//!
//! Every write of a tenant is a [`Job`] in its queue. One writer task drains the queue on the
//! blocking pool (started when a job arrives at an empty queue, ended when the queue is empty,
//! so an idle tenant holds no thread): it takes every ingest queued at that moment, validates
//! each caller's records on its own, appends and projects all of them in one transaction (one
//! fsync), enriches them, and only then answers each caller, so an acknowledgement still means
//! durable and readable. Other writes (facts, memories, forgets) run one at a time between
//! groups, in arrival order, and so does the install of an index built off the writer. Index
//! upkeep (starting a build) and WAL checkpoints run after the answers are sent.
//!
//! One caller cannot fail another: its records that fail validation are rejected in its own
//! results, a conflict is a per-record outcome, and when the group's transaction fails as a
//! whole for any reason but a busy store, each caller's records are written again in a
//! transaction of their own, so the error reaches only the callers it belongs to. A store
//! locked by another process past the busy timeout fails the group with the retryable
//! `store.busy` (503 with `Retry-After`).
//!
//! A caller that gave up (deadline passed, client gone) before its job started is answered
//! `request.deadline` and nothing of it is written.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ctxgraph::{Engine, Projection, ValidRecord};
use serde_json::Value;
use tokio::sync::oneshot;

use super::{Tenant, as_request, given_up_error, lock, schema_record, status_of};
use crate::error::{ServiceError, ViolationDto};
use crate::metrics::Metrics;
use crate::wire::{IngestResponse, ItemResult};

/// Most records one group commits together: a larger backlog is taken in several groups, so
/// a group's transaction stays bounded (one request may still bring up to
/// [`super::MAX_BATCH`] on its own).
const MAX_GROUP_RECORDS: usize = 10_000;

/// The answer to one ingest request.
pub(super) type IngestReply = oneshot::Sender<Result<IngestResponse, ServiceError>>;

/// A write waiting for the tenant's writer.
pub(super) enum Job {
    /// An ingest request's records, committed in a group with the other ingests queued.
    Ingest {
        /// The records as sent.
        events: Vec<Value>,
        /// Cleared when the request is given up.
        wanted: Arc<AtomicBool>,
        /// Where the answer goes.
        reply: IngestReply,
    },
    /// Any other write, run on its own; it answers its caller itself.
    Run {
        /// Cleared when the request is given up.
        wanted: Arc<AtomicBool>,
        /// The write.
        work: Box<dyn FnOnce(&Tenant) + Send>,
    },
}

/// Jobs waiting, and whether a writer task is draining them.
#[derive(Default)]
pub(super) struct WriteQueue {
    jobs: VecDeque<Job>,
    draining: bool,
}

/// One ingest job of a group, validated.
struct Caller {
    reply: IngestReply,
    /// One result per record sent; accepted ones are completed after the append.
    results: Vec<ItemResult>,
    /// For each of its valid records (in order), its index in `results`.
    slots: Vec<usize>,
    /// Its valid records' range in the group's records.
    range: Range<usize>,
}

impl Tenant {
    /// Queue `job`, starting a writer task when none is draining the queue.
    pub(super) fn submit(self: &Arc<Self>, job: Job, metrics: &Metrics) {
        let mut q = lock(&self.queue);
        q.jobs.push_back(job);
        if !q.draining {
            q.draining = true;
            let tenant = Arc::clone(self);
            let metrics = metrics.clone();
            let name = tenant.name.clone();
            super::priority::spawn_writer(&name, move || tenant.drain(&metrics));
        }
    }

    /// The writer task: run groups until the queue is empty.
    fn drain(self: &Arc<Self>, metrics: &Metrics) {
        loop {
            let group = {
                let mut q = lock(&self.queue);
                let group = next_group(&mut q.jobs);
                if group.is_empty() {
                    q.draining = false;
                    return;
                }
                group
            };
            // A panic in one group answers its callers with an error (their reply channels
            // close) and must not leave the queue without a writer.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.run_group(group, metrics);
            }));
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.maintain(metrics);
            }));
        }
    }

    fn run_group(&self, group: Vec<Job>, metrics: &Metrics) {
        let mut ingests = Vec::new();
        for job in group {
            match job {
                Job::Run { wanted, work } => {
                    if wanted.load(Ordering::Acquire) {
                        as_request(wanted, || work(self));
                    }
                    // A given-up job's work is dropped unrun, and with it its reply channel:
                    // its caller has already been answered.
                }
                Job::Ingest { events, wanted, reply } => {
                    if wanted.load(Ordering::Acquire) {
                        ingests.push((events, reply));
                    } else {
                        let _ = reply.send(Err(given_up_error()));
                    }
                }
            }
        }
        if !ingests.is_empty() {
            self.ingest_group(ingests, metrics);
        }
    }

    /// Validate each caller's records, append and project them all in one transaction, enrich
    /// them, then answer every caller.
    fn ingest_group(&self, jobs: Vec<(Vec<Value>, IngestReply)>, metrics: &Metrics) {
        let mut w = lock(&self.writer);
        // A module written through another server of a scale-out store: validate with it.
        if self.schema_changed_elsewhere() {
            self.schema_written(&mut w);
        }
        let mut records = Vec::new();
        let mut callers = Vec::with_capacity(jobs.len());
        for (events, reply) in jobs {
            let (results, slots, valid) = validate(&w, &events);
            let start = records.len();
            records.extend(valid);
            callers.push(Caller { reply, results, slots, range: start..records.len() });
        }
        metrics.write_group(records.len());
        let schema_changed = records.iter().any(schema_record);
        let outcomes: Vec<Result<Vec<_>, ServiceError>> =
            match w.ingest_batch(&records, Projection::Inline, false) {
                Ok(all) => {
                    // One outcome per record, in order: split them back by caller.
                    let mut rest = all.into_iter();
                    callers
                        .iter()
                        .map(|c| Ok(rest.by_ref().take(c.range.len()).collect()))
                        .collect()
                }
                Err(e) => {
                    let e = ServiceError::from(e);
                    if callers.len() == 1 || e.code == "store.busy" {
                        // Nothing to isolate, or the store is locked elsewhere: every caller
                        // gets the (retryable) error; retrying alone would wait again.
                        callers.iter().map(|_| Err(e.clone())).collect()
                    } else {
                        // Each caller on its own, so the error reaches only its own.
                        callers
                            .iter()
                            .map(|c| {
                                w.ingest_batch(&records[c.range.clone()], Projection::Inline, false)
                                    .map_err(ServiceError::from)
                            })
                            .collect()
                    }
                }
            };
        if schema_changed {
            self.schema_written(&mut w);
        }
        super::settle(&mut w);
        drop(w);
        for (caller, outcome) in callers.into_iter().zip(outcomes) {
            let Caller { reply, results, slots, .. } = caller;
            let answer = outcome.map(|outcomes| response(results, &slots, outcomes));
            if let Ok(r) = &answer {
                metrics.ingested(&self.name, r);
            }
            let _ = reply.send(answer);
        }
    }

    /// After a schema module was written: the writer reopens to validate with it, and readers
    /// opened before are dropped rather than reused.
    fn schema_written(&self, w: &mut Engine) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        if let Ok(fresh) = self.open_engine(true) {
            *w = fresh;
        }
    }
}

/// The next jobs to run: a write that is not an ingest alone, or the ingests at the front of
/// the queue up to [`MAX_GROUP_RECORDS`] records (at least one).
fn next_group(jobs: &mut VecDeque<Job>) -> Vec<Job> {
    let mut group = Vec::new();
    let mut records = 0;
    while let Some(job) = jobs.front() {
        let n = match job {
            Job::Run { .. } if group.is_empty() => {
                group.extend(jobs.pop_front());
                return group;
            }
            Job::Run { .. } => return group,
            Job::Ingest { events, .. } => events.len(),
        };
        if !group.is_empty() && records + n > MAX_GROUP_RECORDS {
            return group;
        }
        records += n;
        group.extend(jobs.pop_front());
    }
    group
}

/// One caller's records validated: a result per record (rejections complete, the others to be
/// completed by the append), the result slot of each valid record, and the valid records.
fn validate(engine: &Engine, events: &[Value]) -> (Vec<ItemResult>, Vec<usize>, Vec<ValidRecord>) {
    let mut results = Vec::with_capacity(events.len());
    let mut slots = Vec::new();
    let mut valid = Vec::new();
    for (index, record) in events.iter().enumerate() {
        match engine.validate(&record.to_string()) {
            Ok(r) => {
                slots.push(results.len());
                results.push(ItemResult {
                    index,
                    id: Some(r.id().to_owned()),
                    status: String::new(),
                    position: None,
                    code: None,
                    violations: Vec::new(),
                });
                valid.push(r);
            }
            Err(e) => results.push(ItemResult {
                index,
                id: record
                    .get("event_id")
                    .or_else(|| record.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                status: "rejected".into(),
                position: None,
                code: Some(e.code().to_owned()),
                violations: e.violations.iter().map(ViolationDto::from).collect(),
            }),
        }
    }
    (results, slots, valid)
}

/// A caller's response: its `results`, completed with the outcomes of its valid records (the
/// record of each outcome is in the result at its slot).
fn response(
    mut results: Vec<ItemResult>,
    slots: &[usize],
    outcomes: Vec<Result<ctxgraph::IngestOutcome, ctxgraph::Error>>,
) -> IngestResponse {
    for (slot, outcome) in slots.iter().zip(outcomes) {
        let item = &mut results[*slot];
        match outcome {
            Ok(o) => {
                let (status, position) = status_of(o);
                item.status = status.into();
                item.position = Some(position);
            }
            Err(e) => {
                let e = ServiceError::from(e);
                item.status = "rejected".into();
                item.code = Some(e.code);
                item.violations = e.violations;
            }
        }
    }
    let count = |s: &str| results.iter().filter(|r| r.status == s).count() as u64;
    IngestResponse {
        accepted: count("accepted"),
        duplicates: count("duplicate"),
        rejected: count("rejected"),
        results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::Service;
    use crate::wire::IngestRequest;
    use ctxgraph::{EngineOptions, Principal};
    use serde_json::json;

    fn event(id: &str, tool: &str) -> Value {
        json!({"event_id": id, "event_type": "tool.execute",
            "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s", "agent_id": "a",
            "trace_id": "t", "tool_name": tool, "status": "completed"})
    }

    /// Ingests queued while no writer task runs are committed as one group when it starts; a
    /// caller's invalid or conflicting record is rejected in its own results, and the others'
    /// records are all acknowledged, durable and readable.
    #[test]
    fn queued_ingests_commit_as_one_group_and_a_conflict_stays_with_its_caller() {
        let dir = tempfile::TempDir::new().unwrap();
        let service = Service::open(dir.path(), EngineOptions::default()).unwrap();
        let who = Principal::new("w", "acme", ["writer".to_owned()]).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let first = rt
            .block_on(service.ingest(&who, IngestRequest { events: vec![event("e0", "deploy")] }));
        assert_eq!(first.unwrap().accepted, 1);
        let tenant = service.tenant(&who).unwrap();
        // Once the first write's task has ended, as if a writer task were busy: the jobs below
        // wait in the queue.
        loop {
            let mut q = lock(&tenant.queue);
            if !q.draining {
                q.draining = true;
                break;
            }
            drop(q);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let callers: Vec<Vec<Value>> = vec![
            // e0 again with other content: a conflict, for this caller only.
            vec![event("e0", "rollback"), event("a1", "build")],
            vec![event("b1", "build"), event("b2", "test")],
            vec![event("c1", "build"), json!({"event_id": "c2"})],
            // The same record as another caller of the group: a duplicate.
            vec![event("b1", "build"), event("d1", "test")],
        ];
        let tasks: Vec<_> = callers
            .into_iter()
            .enumerate()
            .map(|(i, events)| {
                let (service, who) = (service.clone(), who.clone());
                let task =
                    rt.spawn(async move { service.ingest(&who, IngestRequest { events }).await });
                // In order: wait until this caller's job is queued before sending the next.
                while lock(&tenant.queue).jobs.len() <= i {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                task
            })
            .collect();
        tenant.drain(service.metrics());
        let answers: Vec<IngestResponse> =
            tasks.into_iter().map(|t| rt.block_on(t).unwrap().unwrap()).collect();
        let statuses: Vec<Vec<(&str, Option<&str>)>> = answers
            .iter()
            .map(|a| a.results.iter().map(|r| (r.status.as_str(), r.code.as_deref())).collect())
            .collect();
        assert_eq!(
            statuses,
            [
                vec![("rejected", Some("log.conflict")), ("accepted", None)],
                vec![("accepted", None), ("accepted", None)],
                vec![("accepted", None), ("rejected", Some("envelope.required_field"))],
                vec![("duplicate", None), ("accepted", None)],
            ]
        );
        let metrics = service.metrics().render();
        assert!(metrics.contains("ctxgraph_write_group_records_count 2"), "{metrics}");
        // One group of the 7 valid records after the first write's 1.
        assert!(metrics.contains("ctxgraph_write_group_records_sum 8"), "{metrics}");
        let reader = Arc::clone(&tenant);
        let seen = rt
            .block_on(async move {
                tokio::task::spawn_blocking(move || {
                    reader.read(crate::service::reader_pool::Lane::Heavy, |e| {
                        let scoped = e.reader(&Principal::local())?;
                        let mut seen = Vec::new();
                        for id in ["a1", "b1", "b2", "c1", "d1"] {
                            seen.push(scoped.event(id)?.is_some());
                        }
                        Ok(seen)
                    })
                })
                .await
            })
            .unwrap()
            .unwrap();
        assert_eq!(seen, [true; 5]);
    }

    fn ingest(n: usize) -> Job {
        let (reply, _) = oneshot::channel();
        Job::Ingest { events: vec![Value::Null; n], wanted: Arc::new(AtomicBool::new(true)), reply }
    }

    fn run() -> Job {
        Job::Run { wanted: Arc::new(AtomicBool::new(true)), work: Box::new(|_| {}) }
    }

    fn shape(group: &[Job]) -> Vec<usize> {
        group
            .iter()
            .map(|j| match j {
                Job::Ingest { events, .. } => events.len(),
                Job::Run { .. } => 0,
            })
            .collect()
    }

    #[test]
    fn groups_take_the_queued_ingests_up_to_the_bound_and_other_writes_alone() {
        let mut q: VecDeque<Job> = [
            ingest(10),
            ingest(20),
            run(),
            ingest(MAX_GROUP_RECORDS - 5),
            ingest(5),
            ingest(1),
            ingest(MAX_GROUP_RECORDS + 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(shape(&next_group(&mut q)), [10, 20]);
        assert_eq!(shape(&next_group(&mut q)), [0]);
        assert_eq!(shape(&next_group(&mut q)), [MAX_GROUP_RECORDS - 5, 5]);
        assert_eq!(shape(&next_group(&mut q)), [1]);
        // A request larger than the bound is a group of its own.
        assert_eq!(shape(&next_group(&mut q)), [MAX_GROUP_RECORDS + 1]);
        assert!(next_group(&mut q).is_empty());
    }
}
