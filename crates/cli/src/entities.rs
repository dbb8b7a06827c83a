//! `ctxgraph entities candidates|merge|reject|resolve`: entity resolution tiers 2 and 3 and the
//! human decisions that settle a pair.

use std::io::Write;

use anyhow::Context;
use ctxgraph::{
    Candidate, CandidateEntity, CandidateStatus, EngineOptions, EntityDecision, IngestOutcome,
    NodeKey, OpenMode, ResolveConfig, entity_id,
};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{CandidateStatusArg, Cli, DecisionArgs, EntitiesCommand};
use crate::output::{print_json, shorten, table};

pub(crate) fn run(cli: &Cli, cmd: &EntitiesCommand) -> anyhow::Result<Outcome> {
    match cmd {
        EntitiesCommand::Candidates { limit, status } => candidates(cli, *limit, *status),
        EntitiesCommand::Merge(args) => decide(cli, EntityDecision::Merge, args),
        EntitiesCommand::Reject(args) => decide(cli, EntityDecision::Reject, args),
        EntitiesCommand::Resolve { max_per_entity, min_cosine } => {
            resolve(cli, *max_per_entity, *min_cosine)
        }
    }
}

fn entity_json(e: &CandidateEntity) -> Value {
    json!({"id": e.id, "name": e.name, "entity_type": e.entity_type})
}

fn candidate_json(c: &Candidate) -> Value {
    json!({
        "a": entity_json(&c.a), "b": entity_json(&c.b), "confidence": c.confidence,
        "justification": c.justification, "status": c.status.as_str(),
    })
}

fn candidates(cli: &Cli, limit: usize, status: CandidateStatusArg) -> anyhow::Result<Outcome> {
    let status = match status {
        CandidateStatusArg::Candidate => Some(CandidateStatus::Candidate),
        CandidateStatusArg::Merged => Some(CandidateStatus::Merged),
        CandidateStatusArg::Rejected => Some(CandidateStatus::Rejected),
        CandidateStatusArg::All => None,
    };
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let list = crate::reader(cli, &engine)?.entity_candidates(status, limit)?;
    if cli.json {
        print_json(&Value::Array(list.iter().map(candidate_json).collect()))?;
    } else {
        let mut out = std::io::stdout().lock();
        if list.is_empty() {
            let which = status.map_or("", CandidateStatus::as_str);
            writeln!(
                out,
                "no {which} SAME_AS pairs (`ctxgraph entities resolve` proposes candidates)"
            )?;
        } else {
            let mut t = table(&["confidence", "status", "entity a", "entity b", "justification"]);
            for c in &list {
                t.add_row(vec![
                    format!("{:.3}", c.confidence),
                    c.status.as_str().to_owned(),
                    c.a.id.clone(),
                    c.b.id.clone(),
                    shorten(&c.justification, 90),
                ]);
            }
            writeln!(out, "{t}")?;
        }
    }
    Ok(if list.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

/// The entities `arg` names that the reader may see: for `type:name`, that one entity (in any
/// spelling); for a bare name, the entity of that name of each entity type that has one.
pub(crate) fn entities_named(
    snap: &ctxgraph::Reader<'_>,
    arg: &str,
) -> anyhow::Result<Vec<ctxgraph::Node>> {
    let schema = snap.schema();
    let ids: Vec<String> = match schema.entity_type_of(arg) {
        Some(t) => vec![entity_id(t, &arg[t.len() + 1..])],
        None => schema
            .enum_def("entity_type")
            .map(|e| e.values.iter().map(|v| entity_id(&v.name, arg)).collect())
            .unwrap_or_default(),
    };
    let mut found = Vec::new();
    for id in ids {
        if let Some(n) = snap.node(&NodeKey::new("Entity", &id))? {
            found.push(n);
        }
    }
    Ok(found)
}

/// The error for a name several entities have, listing their ids.
pub(crate) fn several_named(arg: &str, ids: &[&str]) -> anyhow::Error {
    anyhow::anyhow!(
        "`{arg}` names {} entities: {}; give one of these ids",
        ids.len(),
        ids.join(", ")
    )
}

/// The entity id an argument names: an id (`tool:Read_File` is normalised to `tool:read_file`),
/// or a bare name that exactly one entity type has an entity of.
pub(crate) fn entity_arg(snap: &ctxgraph::Reader<'_>, arg: &str) -> anyhow::Result<String> {
    if let Some(t) = snap.schema().entity_type_of(arg) {
        return Ok(entity_id(t, &arg[t.len() + 1..]));
    }
    match entities_named(snap, arg)?.as_slice() {
        [] => anyhow::bail!(
            "no entity named `{arg}` in any entity type; give an id such as tool:read_file (`ctxgraph search` finds entities by name)"
        ),
        [one] => Ok(one.key.id.clone()),
        several => {
            Err(several_named(arg, &several.iter().map(|n| n.key.id.as_str()).collect::<Vec<_>>()))
        }
    }
}

fn decide(cli: &Cli, decision: EntityDecision, args: &DecisionArgs) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let (a, b) = {
        let reader = crate::reader(cli, &engine)?;
        let a = entity_arg(&reader, &args.a).with_context(|| format!("entity `{}`", args.a))?;
        let b = entity_arg(&reader, &args.b).with_context(|| format!("entity `{}`", args.b))?;
        (a, b)
    };
    let verb = decision.as_str();
    let outcome = engine
        .decide_entities(decision, &a, &b, args.reason.as_deref(), args.by.as_deref())
        .with_context(|| format!("recording `{verb} {a} {b}`"))?;
    let (new, position) = match outcome {
        IngestOutcome::New(p) => (true, p),
        IngestOutcome::Duplicate(p) => (false, p),
    };
    let done = match decision {
        EntityDecision::Merge => "merged",
        EntityDecision::Reject => "rejected",
    };
    if cli.json {
        // The pair as recorded: the id that sorts first is entity_a.
        let (lo, hi) = if a <= b { (&a, &b) } else { (&b, &a) };
        print_json(&json!({
            "decision": verb, "entity_a": lo, "entity_b": hi, "new": new, "position": position,
        }))?;
    } else if new {
        writeln!(std::io::stdout(), "{done} {a} and {b} (log position {position})")?;
    } else {
        writeln!(
            std::io::stdout(),
            "{a} and {b} were already {done} that way (log position {position}); nothing written"
        )?;
    }
    Ok(Outcome::Done)
}

fn resolve(cli: &Cli, max_per_entity: usize, min_cosine: f32) -> anyhow::Result<Outcome> {
    anyhow::ensure!(
        (0.0..=1.0).contains(&min_cosine),
        "--min-cosine {min_cosine}: must lie in [0, 1]"
    );
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let cfg = ResolveConfig {
        min_name_cosine: min_cosine,
        max_candidates_per_entity: max_per_entity,
        ..ResolveConfig::default()
    };
    let started = std::time::Instant::now();
    let r = engine.resolve_entities(&cfg)?;
    let secs = started.elapsed().as_secs_f64();
    if cli.json {
        print_json(&json!({
            "entities": r.entities, "compared": r.compared, "same_as": r.same_as,
            "related_to": r.related_to, "over_limit": r.over_limit, "decided": r.decided,
            "removed": r.removed, "seconds": secs,
        }))?;
    } else {
        writeln!(
            std::io::stdout(),
            "{} entities, {} pairs compared: {} SAME_AS candidates, {} RELATED_TO edges, {} decided pairs kept, in {secs:.2}s",
            r.entities,
            r.compared,
            r.same_as,
            r.related_to,
            r.decided
        )?;
    }
    Ok(Outcome::Done)
}
