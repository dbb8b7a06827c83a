//! Prometheus metrics: records ingested, projection lag per tenant (and, on a scale-out store,
//! the projection group's pending entries and the consolidation lag), recall latency, records
//! per group commit, requests by route and status. Exposed as text at `/metrics`.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};

use crate::wire::IngestResponse;

/// The server's metrics. Cheap to clone; clones share the counters.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    records: IntCounterVec,
    lag: IntGaugeVec,
    enrich_lag: IntGaugeVec,
    consolidate_lag: IntGaugeVec,
    pending: IntGaugeVec,
    recall: Histogram,
    groups: Histogram,
    requests: IntCounterVec,
    index_upkeep: HistogramVec,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh metrics in their own registry.
    #[allow(
        clippy::expect_used,
        reason = "constant names, help texts and labels; the tests build them"
    )]
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let records = IntCounterVec::new(
            Opts::new("ctxgraph_records_ingested_total", "Records ingested, by tenant and result."),
            &["tenant", "status"],
        )
        .expect("constant metric options are valid");
        let lag = IntGaugeVec::new(
            Opts::new(
                "ctxgraph_projection_lag_records",
                "Records in the log not yet folded into the graph, by tenant.",
            ),
            &["tenant"],
        )
        .expect("constant metric options are valid");
        let enrich_lag = IntGaugeVec::new(
            Opts::new(
                "ctxgraph_enrichment_lag_records",
                "Records in the graph not yet enriched (keywords, embeddings, text index), by tenant.",
            ),
            &["tenant"],
        )
        .expect("constant metric options are valid");
        let consolidate_lag = IntGaugeVec::new(
            Opts::new(
                "ctxgraph_consolidation_lag_records",
                "Records enriched and not yet consolidated (summaries, vector index, similarity edges), by tenant (scale-out stores).",
            ),
            &["tenant"],
        )
        .expect("constant metric options are valid");
        let pending = IntGaugeVec::new(
            Opts::new(
                "ctxgraph_projection_pending_entries",
                "Log entries a projection worker took and has not acknowledged, by tenant (scale-out stores).",
            ),
            &["tenant"],
        )
        .expect("constant metric options are valid");
        let recall = Histogram::with_opts(
            HistogramOpts::new(
                "ctxgraph_recall_seconds",
                "Recall latency (embedding the question included).",
            )
            .buckets(vec![0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5]),
        )
        .expect("constant metric options are valid");
        let groups = Histogram::with_opts(
            HistogramOpts::new(
                "ctxgraph_write_group_records",
                "Records committed together by one group commit of queued ingests.",
            )
            .buckets(vec![1.0, 10.0, 50.0, 100.0, 500.0, 1000.0, 5000.0, 10000.0]),
        )
        .expect("constant metric options are valid");
        let requests = IntCounterVec::new(
            Opts::new("ctxgraph_http_requests_total", "HTTP requests, by route and status."),
            &["route", "status"],
        )
        .expect("constant metric options are valid");
        let index_upkeep = HistogramVec::new(
            HistogramOpts::new(
                "ctxgraph_index_writer_seconds",
                "Time the writer spent on index upkeep, by outcome: installing a build made off the writer (installed), dropping one a removal overtook (stale), rebuilding in place (in_place), or failing (failed).",
            )
            .buckets(vec![0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0]),
            &["outcome"],
        )
        .expect("constant metric options are valid");
        // Every outcome from the start, so a scrape tells "none yet" from "not reported".
        for outcome in ["installed", "stale", "in_place", "failed"] {
            index_upkeep.with_label_values(&[outcome]);
        }
        for c in [
            Box::new(records.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(lag.clone()),
            Box::new(enrich_lag.clone()),
            Box::new(consolidate_lag.clone()),
            Box::new(pending.clone()),
            Box::new(recall.clone()),
            Box::new(groups.clone()),
            Box::new(requests.clone()),
            Box::new(index_upkeep.clone()),
        ] {
            let _ = registry.register(c);
        }
        Metrics {
            registry,
            records,
            lag,
            enrich_lag,
            consolidate_lag,
            pending,
            recall,
            groups,
            requests,
            index_upkeep,
        }
    }

    /// One index upkeep step on the writer (see the `outcome` labels) and how long it held it.
    pub fn index_upkeep(&self, outcome: &str, held: std::time::Duration) {
        self.index_upkeep.with_label_values(&[outcome]).observe(held.as_secs_f64());
    }

    /// Count the records of an ingest by result.
    pub fn ingested(&self, tenant: &str, r: &IngestResponse) {
        for (status, n) in
            [("accepted", r.accepted), ("duplicate", r.duplicates), ("rejected", r.rejected)]
        {
            self.records.with_label_values(&[tenant, status]).inc_by(n);
        }
    }

    /// The tenant's projection and enrichment lags after a write.
    pub fn lags(&self, tenant: &str, (projection, enrichment): (u64, u64)) {
        self.lag.with_label_values(&[tenant]).set(i64::try_from(projection).unwrap_or(i64::MAX));
        self.enrich_lag
            .with_label_values(&[tenant])
            .set(i64::try_from(enrichment).unwrap_or(i64::MAX));
    }

    /// A scale-out tenant's consolidation lag: stage 2's checkpoint less the one the last
    /// consolidation covered, read when the metrics are.
    pub fn consolidation_lag(&self, tenant: &str, lag: u64) {
        self.consolidate_lag
            .with_label_values(&[tenant])
            .set(i64::try_from(lag).unwrap_or(i64::MAX));
    }

    /// A scale-out tenant's projection group's pending entries (`None` before a worker joined
    /// the group: the gauge is left out), read when the metrics are.
    pub fn pending(&self, tenant: &str, pending: Option<u64>) {
        if let Some(pending) = pending {
            self.pending
                .with_label_values(&[tenant])
                .set(i64::try_from(pending).unwrap_or(i64::MAX));
        }
    }

    /// One recall's latency.
    pub fn recall_seconds(&self, seconds: f64) {
        self.recall.observe(seconds);
    }

    /// One group commit of `records` records.
    pub fn write_group(&self, records: usize) {
        self.groups.observe(records as f64);
    }

    /// One HTTP request.
    pub fn request(&self, route: &str, status: u16) {
        self.requests.with_label_values(&[route, &status.to_string()]).inc();
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        let _ = prometheus::TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }
}
