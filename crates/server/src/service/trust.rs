//! The trust operations: forgetting and its audit (admins only), decision receipts, and OTLP
//! traces in.

use ctxgraph::{ForgetKind, ForgetTarget, IngestOutcome, Principal, ReceiptQuery, RecordKind};
use serde_json::Value;

use super::{MAX_PAGE, Service};
use crate::error::{ServiceError, ViolationDto};
use crate::wire::{
    ForgetRequest, ForgetResponse, ForgottenDto, ForgottenList, IngestRequest, ItemResult,
    ReceiptList, ReceiptListQuery, ReceiptsRequest,
};

/// What an OTLP export came to: the response body (in the request's encoding) and the spans
/// taken and refused.
pub struct TracesOutcome {
    /// The `ExportTraceServiceResponse`, with partial success when spans were refused.
    pub body: Vec<u8>,
    /// Spans that became new or duplicate events.
    pub accepted: usize,
    /// Spans refused (by the mapping or by validation).
    pub refused: usize,
}

fn require_admin(who: &Principal, what: &str) -> Result<(), ServiceError> {
    if who.is_admin() {
        Ok(())
    } else {
        Err(ServiceError::forbidden(format!(
            "principal {:?} may not {what}: it needs the admin role",
            who.name()
        )))
    }
}

impl Service {
    /// Forget a target for good; admins only.
    pub async fn forget(
        &self,
        who: &Principal,
        req: ForgetRequest,
    ) -> Result<ForgetResponse, ServiceError> {
        require_admin(who, "forget")?;
        let kind = ForgetKind::parse(req.kind.trim()).ok_or_else(|| {
            ServiceError::bad_request(
                "request.forget_kind",
                format!("kind {:?} is not one of event, session, entity, memory", req.kind),
            )
        })?;
        let target = ForgetTarget { kind, id: req.id };
        let by = who.name().to_owned();
        let report = self
            .write(who, move |engine| Ok(engine.forget(&target, &by, req.reason.as_deref())?))
            .await?;
        Ok(ForgetResponse {
            forget_id: report.forget_id,
            position: report.position,
            redacted: report.redacted,
        })
    }

    /// The forget audit, without content; admins only.
    pub async fn forgotten(&self, who: &Principal) -> Result<ForgottenList, ServiceError> {
        require_admin(who, "read the forget audit")?;
        self.read(who, |e, who| {
            let list = e.reader(who)?.forgotten()?;
            Ok(ForgottenList { forgotten: list.iter().map(ForgottenDto::from).collect() })
        })
        .await
    }

    /// Record decision receipts; one result per receipt.
    pub async fn add_receipts(
        &self,
        who: &Principal,
        req: ReceiptsRequest,
    ) -> Result<crate::wire::IngestResponse, ServiceError> {
        let items = req.receipts.into_vec();
        if items.len() > super::MAX_BATCH {
            return Err(ServiceError::bad_request(
                "request.batch_too_large",
                format!(
                    "{} receipts in one request: send at most {}",
                    items.len(),
                    super::MAX_BATCH
                ),
            ));
        }
        self.write(who, move |engine| {
            let mut results = Vec::with_capacity(items.len());
            let mut valid = Vec::new();
            let mut slots = Vec::new();
            for (index, mut item) in items.into_iter().enumerate() {
                if let Value::Object(o) = &mut item {
                    o.entry("record_type").or_insert_with(|| "receipt".into());
                }
                let given = item.get("id").and_then(Value::as_str).map(str::to_owned);
                let mut result = ItemResult {
                    index,
                    id: given,
                    status: "rejected".into(),
                    position: None,
                    code: None,
                    violations: Vec::new(),
                };
                match engine.validate(&item.to_string()) {
                    Ok(r) if r.kind() == RecordKind::Receipt => {
                        result.id = Some(r.id().to_owned());
                        slots.push(results.len());
                        valid.push(r);
                    }
                    Ok(_) => {
                        result.code = Some("request.record_type".into());
                    }
                    Err(e) => {
                        result.code = Some(e.code().to_owned());
                        result.violations = e.violations.iter().map(ViolationDto::from).collect();
                    }
                }
                results.push(result);
            }
            let outcomes = engine.add_receipts(&valid)?;
            for (slot, outcome) in slots.into_iter().zip(outcomes) {
                let item = &mut results[slot];
                match outcome {
                    Ok(IngestOutcome::New(p)) => {
                        item.status = "accepted".into();
                        item.position = Some(p);
                    }
                    Ok(IngestOutcome::Duplicate(p)) => {
                        item.status = "duplicate".into();
                        item.position = Some(p);
                    }
                    Err(e) => {
                        let e = ServiceError::from(e);
                        item.code = Some(e.code);
                        item.violations = e.violations;
                    }
                }
            }
            let count = |s: &str| results.iter().filter(|r| r.status == s).count() as u64;
            Ok(crate::wire::IngestResponse {
                accepted: count("accepted"),
                duplicates: count("duplicate"),
                rejected: count("rejected"),
                results,
            })
        })
        .await
    }

    /// Receipts the principal may see (each hidden when it cites an event hidden from it).
    pub async fn receipts(
        &self,
        who: &Principal,
        q: ReceiptListQuery,
    ) -> Result<ReceiptList, ServiceError> {
        let time = |t: Option<String>, field: &str| -> Result<Option<String>, ServiceError> {
            t.map(|t| {
                ctxgraph::parse_time(&t).ok_or_else(|| {
                    ServiceError::bad_request(
                        "request.time_format",
                        format!("{field} {t:?} is not an RFC 3339 time or a YYYY-MM-DD date"),
                    )
                })
            })
            .transpose()
        };
        let policy = match q.policy.as_deref() {
            None => None,
            Some(p) => Some(ctxgraph::policy_filter(p).ok_or_else(|| {
                ServiceError::bad_request(
                    "request.policy_filter",
                    format!("policy {p:?}: the result after `=` is neither allow nor deny"),
                )
            })?),
        };
        let query = ReceiptQuery {
            task: q.task,
            actor: q.actor,
            since: time(q.since, "since")?,
            until: time(q.until, "until")?,
            policy,
            limit: q.limit.unwrap_or(100).clamp(1, MAX_PAGE),
        };
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let list = snap.receipts(&query)?;
            Ok(ReceiptList { receipts: list.iter().map(ctxgraph::ReceiptView::to_json).collect() })
        })
        .await
    }

    /// Ingest an OTLP/HTTP trace export: every GenAI span becomes an event (see
    /// `ctxgraph_otlp`); refused spans are counted in the response's partial success.
    pub async fn traces(
        &self,
        who: &Principal,
        body: Vec<u8>,
        encoding: ctxgraph_otlp::Encoding,
    ) -> Result<TracesOutcome, ServiceError> {
        crate::service::require_write(who)?;
        let conversion = {
            let tenant = self.tenant(who)?;
            self.blocking(move || {
                tenant.read(super::reader_pool::Lane::Heavy, |e| {
                    ctxgraph_otlp::convert_request(&body, encoding, e.schema())
                        .map_err(|err| ServiceError::bad_request(err.code(), err.to_string()))
                })
            })
            .await?
        };
        let mut refused = conversion.refused.len();
        let mut message: Vec<String> =
            conversion.refused.iter().take(3).map(|(n, e)| format!("span {n}: {e}")).collect();
        let records = conversion.into_records();
        let response = self.ingest(who, IngestRequest { events: records }).await?;
        for r in response.results.iter().filter(|r| r.status == "rejected") {
            refused += 1;
            if message.len() < 3 {
                message.push(format!(
                    "event {}: {}",
                    r.id.as_deref().unwrap_or("?"),
                    r.code.as_deref().unwrap_or("rejected")
                ));
            }
        }
        let accepted = (response.accepted + response.duplicates) as usize;
        Ok(TracesOutcome {
            body: ctxgraph_otlp::response_body(encoding, refused, &message.join("; ")),
            accepted,
            refused,
        })
    }
}
