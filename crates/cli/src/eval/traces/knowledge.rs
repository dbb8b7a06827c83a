//! Decision memories and facts written alongside the trace, derived from its structure, through
//! the engine's normal write API (`Engine::save_memories`, `Engine::record_fact`).
//!
//! A decision is what an agent did after a failed tool call: retried it (and how the retry went)
//! or went on without it. A fact is a relation the trace shows: a tool depends on the service it
//! calls, a resource belongs to the service that holds it. Only a sample is written, a few times
//! more than the questions asked about them, so the others compete with the answers.

use std::collections::BTreeMap;

use anyhow::Context;
use ctxgraph::{Engine, EntityInput, FactInput, IngestOutcome, ObjectInput, ValidRecord};
use ctxgraph_ontology::{FactObject, Limits, ResolvedEntity, Schema, fact_id, validate_value};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use serde_json::json;

use super::trace::{Referenced, Trace, TraceEvent};

/// Memories (and fact subjects) written per question asked about them.
const WRITTEN_PER_ASKED: usize = 4;
/// Most facts a subject may have to be asked about (all must fit in the top 10).
pub(crate) const MAX_FACTS_PER_SUBJECT: usize = 5;

/// A decision memory about one session's first failed tool call.
#[derive(Debug, Clone)]
pub(crate) struct Decision {
    pub(crate) session: String,
    pub(crate) agent: String,
    pub(crate) tool: String,
    pub(crate) service: String,
    /// The failed call.
    pub(crate) failed: String,
    /// The validated `memory` record; its id is the Memory node's.
    pub(crate) record: ValidRecord,
}

/// One claim: subject, predicate, object, from the first event that shows it.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub(crate) subject: Referenced,
    pub(crate) predicate: &'static str,
    pub(crate) object: Referenced,
    /// The event it was read from.
    pub(crate) source: String,
    pub(crate) at: String,
    /// The Fact node's id.
    pub(crate) fact_id: String,
}

/// What is written besides the trace.
#[derive(Debug, Default)]
pub(crate) struct Knowledge {
    pub(crate) decisions: Vec<Decision>,
    /// Subject entity id → its claims; every subject written has all its claims here.
    pub(crate) facts: BTreeMap<String, Vec<Claim>>,
}

/// Derive the decisions and facts to write from the trace, sampled by `seed`.
pub(crate) fn plan(trace: &Trace, seed: u64, per_family: usize) -> anyhow::Result<Knowledge> {
    let schema = Schema::core().context("loading the core schema")?;
    let written = per_family.saturating_mul(WRITTEN_PER_ASKED);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x6b6e_6f77_6c65_6467);

    let mut sessions: Vec<&TraceEvent> = trace
        .sessions
        .keys()
        .filter_map(|s| trace.session(s).find(|e| e.failed() && e.tool.is_some()))
        .filter(|e| e.named("service").next().is_some())
        .collect();
    sessions.shuffle(&mut rng);
    let mut decisions = Vec::new();
    for failed in sessions.into_iter().take(written) {
        decisions.push(decision(trace, &schema, failed)?);
    }

    let mut claims: BTreeMap<String, Vec<Claim>> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for e in &trace.events {
        let tools = e.named("tool");
        let pairs =
            tools.flat_map(|t| e.named("service").map(move |s| (t, "depends_on", s))).chain(
                e.named("resource")
                    .flat_map(|r| e.named("service").map(move |s| (r, "belongs_to", s))),
            );
        for (subject, predicate, object) in pairs {
            if !seen.insert((subject.id.clone(), predicate, object.id.clone())) {
                continue;
            }
            let resolved = |r: &Referenced| ResolvedEntity {
                id: r.id.clone(),
                name: r.name.clone(),
                via: "id".into(),
            };
            claims.entry(subject.id.clone()).or_default().push(Claim {
                fact_id: fact_id(&subject.id, predicate, &FactObject::Entity(resolved(object))),
                subject: subject.clone(),
                predicate,
                object: object.clone(),
                source: format!("trace event {}", e.id),
                at: e.occurred_at.clone(),
            });
        }
    }
    let mut subjects: Vec<String> = claims
        .iter()
        .filter(|(_, c)| c.len() <= MAX_FACTS_PER_SUBJECT)
        .map(|(s, _)| s.clone())
        .collect();
    subjects.shuffle(&mut rng);
    subjects.truncate(written);
    let facts = subjects.into_iter().filter_map(|s| claims.remove_entry(&s)).collect();
    Ok(Knowledge { decisions, facts })
}

/// The decision after `failed`: a retry of the same tool among its consequences, or none.
fn decision(trace: &Trace, schema: &Schema, failed: &TraceEvent) -> anyhow::Result<Decision> {
    let tool = failed.tool.clone().unwrap_or_default();
    let service = failed.named("service").next().map(|s| s.name.clone()).unwrap_or_default();
    let retry = trace
        .children(&failed.id)
        .find(|c| c.event_type == failed.event_type && c.tool.as_deref() == Some(&tool));
    let (content, at) = match retry {
        Some(r) => {
            let went = if r.failed() { "failed again" } else { "went through" };
            (
                format!(
                    "{} decided to retry {tool} against {service} after it failed in {}; the retry {went}",
                    failed.agent, failed.session
                ),
                r.occurred_at.clone(),
            )
        }
        None => (
            format!(
                "{} decided not to retry {tool} against {service} after it failed in {} and went on without it",
                failed.agent, failed.session
            ),
            failed.occurred_at.clone(),
        ),
    };
    let error = failed.error.as_deref().unwrap_or("no error message");
    let record = json!({
        "record_type": "memory",
        "kind": "decision",
        "topic": format!("{service} failures"),
        "content": content,
        "reasoning": format!("the {tool} call {} failed: {error}", failed.id),
        "created_by": "system",
        "session_id": failed.session,
        "created_at": at,
    });
    let record = validate_value(schema, &Limits::default(), record)
        .map_err(|e| anyhow::anyhow!("the decision about {} is not valid: {e}", failed.id))?;
    Ok(Decision {
        session: failed.session.clone(),
        agent: failed.agent.clone(),
        tool,
        service,
        failed: failed.id.clone(),
        record,
    })
}

/// Write the decisions and facts and return how many records were new (none when a store of an
/// earlier run with the same seed and size is reused). Fails when the engine gives a node another
/// id than planned, since the questions' ground truth would then be wrong.
pub(crate) fn write(engine: &mut Engine, knowledge: &Knowledge) -> anyhow::Result<usize> {
    let records: Vec<ValidRecord> = knowledge.decisions.iter().map(|d| d.record.clone()).collect();
    let mut new = 0;
    for (d, outcome) in knowledge.decisions.iter().zip(engine.save_memories(&records)?) {
        let outcome = outcome.with_context(|| format!("saving the decision about {}", d.failed))?;
        new += usize::from(matches!(outcome, IngestOutcome::New(_)));
    }
    for claim in knowledge.facts.values().flatten() {
        let entity = |r: &Referenced| EntityInput::typed(&r.id, &r.entity_type);
        let mut input = FactInput::new(
            entity(&claim.subject),
            claim.predicate,
            ObjectInput::Entity(entity(&claim.object)),
        );
        input.source = Some(claim.source.clone());
        input.asserted_at = Some(claim.at.clone());
        let done = engine
            .record_fact(&input)
            .with_context(|| format!("recording the fact {}", claim.fact_id))?;
        if done.fact_id != claim.fact_id {
            anyhow::bail!("the fact {} was recorded as {}", claim.fact_id, done.fact_id);
        }
        new += usize::from(matches!(done.outcome, IngestOutcome::New(_)));
    }
    Ok(new)
}
