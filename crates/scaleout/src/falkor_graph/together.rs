//! Reads sent together: each read of many keys (`many.rs`) is planned as its queries and the
//! way their rows answer it, so that several reads that do not depend on each other go to the
//! server as one pipeline (`GRAPH.RO_QUERY` commands sent back to back, replies read in order):
//! one round trip instead of one per read ([`GraphReader::read_together`]).
//!
//! A read view whose state keys (`state.rs`) are not read yet sends their read on the plain
//! connection before the pipeline and takes its reply after: every recall reads them (the
//! embedding model, the generations), and this way their round trip overlaps the graph's.
//!
//! The pipeline's queries are merged into one query where their shapes allow (`merged.rs`).
//!
//! [`GraphReader::read_together`]: ctxgraph_store::GraphReader::read_together

use ctxgraph_store::{ManyAnswer, ManyRead, StoreError};
use falkordb::FalkorValue;

use super::{FalkorGraph, remote};

/// The rows of one query.
pub(super) type Rows = Vec<Vec<FalkorValue>>;

/// One query of a plan: its text and its parameters.
pub(super) struct Query {
    pub(super) text: String,
    pub(super) params: Vec<(String, FalkorValue)>,
}

/// How a plan's replies (the rows of each of its queries, in order) answer its read.
type Answer<'a> = Box<dyn FnOnce(&FalkorGraph, Vec<Rows>) -> Result<ManyAnswer, StoreError> + 'a>;

/// A read of many keys as the queries to send and the way their rows answer it.
pub(super) struct Plan<'a> {
    queries: Vec<Query>,
    answer: Answer<'a>,
}

impl<'a> Plan<'a> {
    /// A plan of `queries` (none: the answer needs no query) answered by `answer`.
    pub(super) fn new(
        queries: Vec<Query>,
        answer: impl FnOnce(&FalkorGraph, Vec<Rows>) -> Result<ManyAnswer, StoreError> + 'a,
    ) -> Plan<'a> {
        Plan { queries, answer: Box::new(answer) }
    }
}

/// The rows of every query, each row's place column (the first) moved on by its query's
/// start in the caller's list (queries over chunks of the keys number places within a chunk).
pub(super) fn placed_rows(replies: Vec<Rows>, starts: &[usize]) -> Rows {
    let mut out = Vec::new();
    for (rows, start) in replies.into_iter().zip(starts) {
        for mut row in rows {
            if let Some(FalkorValue::I64(p)) = row.first_mut() {
                *p += i64::try_from(*start).unwrap_or(i64::MAX);
            }
            out.push(row);
        }
    }
    out
}

impl FalkorGraph {
    /// A read of many keys as a plan.
    fn plan<'a>(&self, read: &ManyRead<'a>) -> Result<Plan<'a>, StoreError> {
        match *read {
            ManyRead::Nodes(keys) => Self::plan_nodes(keys),
            ManyRead::NodesExist(keys) => Self::plan_nodes_exist(keys),
            ManyRead::EdgesOf { keys, edge_type, direction } => {
                Self::plan_edges_of(keys, edge_type, direction)
            }
            ManyRead::ExistingIds { label, ids } => self.plan_existing(label, ids),
            ManyRead::ExistingIdsByLabel { labels, ids } => {
                Self::plan_existing_ids_by_label(labels, ids)
            }
            ManyRead::SessionEvents { ids, limit } => Ok(Self::plan_session_events(ids, limit)),
            ManyRead::TraceEvents { ids, limit } => Self::plan_trace_events(ids, limit),
            ManyRead::EdgesLimited { reads, out, limit } => {
                Self::plan_edges_limited(reads, out, limit)
            }
            ManyRead::EdgeGroups { keys, limit } => Self::plan_edge_groups(keys, limit),
        }
    }

    /// Run one plan.
    pub(super) fn run_plan(&self, plan: Plan<'_>) -> Result<ManyAnswer, StoreError> {
        let mut answers = self.run_plans(vec![plan])?;
        answers.pop().ok_or_else(|| StoreError::Corruption("a read planned no answer".into()))
    }

    /// Run `plans`, every query of every plan in one pipeline (a single query is sent alone);
    /// their answers, in order.
    pub(super) fn run_plans(&self, plans: Vec<Plan<'_>>) -> Result<Vec<ManyAnswer>, StoreError> {
        let mut queries = Vec::new();
        let mut answers = Vec::with_capacity(plans.len());
        let mut counts = Vec::with_capacity(plans.len());
        for plan in plans {
            counts.push(plan.queries.len());
            queries.extend(plan.queries);
            answers.push(plan.answer);
        }
        // The state keys' read, sent now and answered after the graph's (see the module docs).
        let state = if queries.is_empty() { None } else { self.send_state()? };
        let replies = self.one_query(&queries);
        if let Some(pending) = state {
            self.receive_state(pending)?;
        }
        let mut replies = replies?.into_iter();
        let mut out = Vec::with_capacity(answers.len());
        for (answer, n) in answers.into_iter().zip(counts) {
            out.push(answer(self, replies.by_ref().take(n).collect())?);
        }
        Ok(out)
    }

    /// The rows of each of `queries`, read-only, sent as one query when they merge
    /// (`merged.rs`: FalkorDB's cost per query is paid once), else in one pipeline.
    pub(super) fn one_query(&self, queries: &[Query]) -> Result<Vec<Rows>, StoreError> {
        if queries.len() < 2 {
            return self.pipelined(queries);
        }
        let Some(merged) = super::merged::merge(queries) else {
            return self.pipelined(queries);
        };
        let rows = self.pipelined(std::slice::from_ref(&merged.query))?;
        super::merged::deal(rows.into_iter().next().unwrap_or_default(), &merged.widths)
            .ok_or_else(|| super::odd(&self.url, "a row of reads merged as one query"))
    }

    /// The rows of each of `queries`, read-only, sent in one pipeline (no graph, no rows): on
    /// the graph's own connection (`wire.rs`), or through the client crate when a reply holds
    /// a kind of value that connection's reader leaves to it.
    pub(super) fn pipelined(&self, queries: &[Query]) -> Result<Vec<Rows>, StoreError> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        let texts = queries
            .iter()
            .map(|q| {
                super::wire::query_text(&q.text, q.params.iter().map(|(k, v)| (k.as_str(), v)))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| remote(&self.url, &e))?;
        if let Some(rows) = self.wire_reads(&texts)? {
            return Ok(rows);
        }
        if let [one] = queries {
            let params: Vec<(&str, FalkorValue)> =
                one.params.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            return Ok(vec![self.execute_in_crate(&one.text, &params, true)?]);
        }
        let mut graph = self.graph.borrow_mut();
        let mut batch = graph.batch();
        for q in queries {
            let query = batch.ro_query(q.text.as_str());
            for (k, v) in &q.params {
                query.with_param(k, v.clone());
            }
        }
        let results = batch.execute().map_err(|e| remote(&self.url, &e))?;
        results
            .into_iter()
            .map(|result| match result {
                Ok(result) => {
                    Ok(result.data.into_iter().map(falkordb::Row::into_values).collect::<Rows>())
                }
                Err(e) if super::no_graph(&e.to_string()) => Ok(Vec::new()),
                Err(e) => Err(remote(&self.url, &e)),
            })
            .collect()
    }

    /// [`GraphReader::read_together`](ctxgraph_store::GraphReader::read_together): every
    /// read's queries in one pipeline.
    pub(crate) fn read_many_together(
        &self,
        reads: &[ManyRead<'_>],
    ) -> Result<Vec<ManyAnswer>, StoreError> {
        let plans = reads.iter().map(|read| self.plan(read)).collect::<Result<Vec<_>, _>>()?;
        self.run_plans(plans)
    }
}
