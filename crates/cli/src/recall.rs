//! `ctxgraph recall`: the context pack for a question, with the path that brought each item in.

use std::io::Write;

use ctxgraph::{ContextPack, EngineOptions, Intent, Item, Node, OpenMode, RecallQuery, Step};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, RecallArgs};
use crate::output::{
    describe_entity, describe_event, edge_json, key_json, node_json, print_json, shorten,
};

pub(crate) fn run(cli: &Cli, args: &RecallArgs) -> anyhow::Result<Outcome> {
    // Before the store is opened: an oversized question costs nothing.
    ctxgraph::QuestionLimits::default().check("question", &args.question)?;
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let query = query(args)?;
    let who = crate::access::principal(cli)?;
    let pack = engine.recall_scoped(&query, &who)?;
    if cli.json {
        print_json(&pack_json(&pack))?;
    } else {
        print_pack(&pack)?;
    }
    // The answer is out: counting the reads towards salience is secondary, so a failed write
    // (a read-only file, a busy writer) is only reported.
    if let Err(e) = engine.flush_access() {
        eprintln!("warning: the reads of this recall were not recorded (access_count): {e}");
    }
    Ok(if pack.items.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

fn query(args: &RecallArgs) -> anyhow::Result<RecallQuery> {
    let time = |flag: &str, t: &Option<String>| -> anyhow::Result<_> {
        t.as_deref()
            .map(|t| {
                chrono::DateTime::parse_from_rfc3339(t).map_err(|e| {
                    anyhow::anyhow!("{flag} `{t}` is not an RFC 3339 time with offset: {e}")
                })
            })
            .transpose()
    };
    let intent = match &args.intent {
        None => None,
        Some(name) => Some(Intent::parse(name).ok_or_else(|| {
            anyhow::anyhow!(
                "--intent `{name}` is not an intent: use why, when, who_what, related, overview or lookup"
            )
        })?),
    };
    if let Some(d) = args.diversity
        && !(0.0..=1.0).contains(&d)
    {
        anyhow::bail!("--diversity {d} is out of range: λ must be within [0, 1]");
    }
    let mut q = RecallQuery::new(args.question.clone());
    q.k = args.k;
    q.intent = intent;
    q.since = time("--since", &args.since)?;
    q.until = time("--until", &args.until)?;
    q.session = args.session.clone();
    q.agent = args.agent.clone();
    q.tags = args.tags.clone();
    q.location = args.location.clone();
    q.trace = args.trace.clone();
    q.budget_tokens = args.budget_tokens;
    q.diversity = args.diversity;
    q.min_confidence = args.min_confidence;
    if !args.label.is_empty() {
        q.labels = Some(args.label.clone());
    }
    Ok(q)
}

fn step_json(step: &Step) -> Value {
    json!({"edge_type": step.edge_type, "forward": step.forward,
        "qualifier": (!step.qualifier.is_empty()).then_some(&step.qualifier), "to": key_json(&step.to)})
}

fn item_json(item: &Item) -> Value {
    let f = &item.factors;
    let p = &item.provenance;
    json!({
        "node": node_json(&item.node),
        "score": item.score,
        "factors": {"relevance": f.relevance, "path_weight": f.path_weight,
            "confidence": f.confidence, "salience": f.salience, "focus": f.focus},
        "found_by": item.found_by,
        "seed": key_json(&item.seed),
        "path": item.path.iter().map(step_json).collect::<Vec<_>>(),
        "provenance": {"log_position": p.log_position, "recorded_at": p.recorded_at,
            "created_by": p.created_by, "source": p.source},
        "tokens": item.tokens,
    })
}

/// The pack as JSON (shared with the HTTP and MCP interfaces' shapes).
pub(crate) fn pack_json(pack: &ContextPack) -> Value {
    json!({
        "query": pack.query,
        "intent": pack.intent.name(),
        "intent_classified": pack.intent_classified,
        "items": pack.items.iter().map(item_json).collect::<Vec<_>>(),
        "edges": pack.edges.iter().map(edge_json).collect::<Vec<_>>(),
        "unknowns": pack.unknowns.iter().map(|u| json!({"kind": u.kind, "item": key_json(&u.item),
            "missing": key_json(&u.missing)})).collect::<Vec<_>>(),
        "candidates": pack.candidates,
        "trimmed": pack.trimmed,
        "timings_us": {"embed": pack.timings.embed_us, "vector": pack.timings.vector_us,
            "bm25": pack.timings.bm25_us, "entity": pack.timings.entity_us,
            "expand": pack.timings.expand_us, "stitch": pack.timings.stitch_us},
    })
}

fn describe(node: &Node) -> String {
    match node.key.label.as_str() {
        "Event" => describe_event(node),
        "Entity" => describe_entity(node),
        "Outcome" => crate::memory::describe_outcome(node),
        "Topic" => format!(
            "topic {}",
            node.props.get("name").and_then(Value::as_str).unwrap_or(&node.key.id)
        ),
        "DecisionReceipt" => {
            let text = |k: &str| node.props.get(k).and_then(Value::as_str).unwrap_or_default();
            format!(
                "receipt {}: {} by {}, {} ({})",
                text("task"),
                text("action"),
                text("actor"),
                text("status"),
                text("committed_at")
            )
        }
        "Task" | "Actor" | "Policy" | "PolicyException" => {
            format!("{} {}", node.key.label.to_ascii_lowercase(), node.key.id)
        }
        _ => node.props.get("content").and_then(Value::as_str).unwrap_or_default().to_owned(),
    }
}

/// `event A ─CAUSED_BY→ event B ─REFERENCES(instrument)→ tool X`
fn path_line(item: &Item) -> String {
    let mut line = item.seed.to_string();
    for step in &item.path {
        let label = if step.qualifier.is_empty() {
            step.edge_type.clone()
        } else {
            format!("{}({})", step.edge_type, step.qualifier)
        };
        if step.forward {
            line.push_str(&format!(" ─{label}→ {}", step.to));
        } else {
            line.push_str(&format!(" ←{label}─ {}", step.to));
        }
    }
    line
}

fn print_pack(pack: &ContextPack) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let how = if pack.intent_classified { "classified" } else { "given" };
    writeln!(
        out,
        "{} items for \"{}\" (intent {}, {how}; {} candidates)",
        pack.items.len(),
        pack.query,
        pack.intent.name(),
        pack.candidates
    )?;
    for (i, item) in pack.items.iter().enumerate() {
        let f = &item.factors;
        writeln!(
            out,
            "\n{:>2}. {:.3}  {}",
            i + 1,
            item.score,
            shorten(&describe(&item.node), 100)
        )?;
        if item.path.is_empty() {
            writeln!(out, "    found by {}: {}", item.found_by.join(" + "), item.node.key)?;
        } else {
            writeln!(out, "    via {}", path_line(item))?;
        }
        writeln!(
            out,
            "    relevance {:.2} × path {:.2} × confidence {:.2} × salience {:.2} × focus {:.2}{}",
            f.relevance,
            f.path_weight,
            f.confidence,
            f.salience,
            f.focus,
            item.provenance
                .log_position
                .map(|p| format!("; log position {p}, by {}", item.provenance.created_by))
                .unwrap_or_default()
        )?;
    }
    if !pack.unknowns.is_empty() {
        writeln!(out, "\nunknowns:")?;
        for u in &pack.unknowns {
            writeln!(out, "  {}: {} (for {})", u.kind.replace('_', " "), u.missing, u.item)?;
        }
    }
    if pack.trimmed > 0 {
        writeln!(out, "\n{} items left out to fit the token budget", pack.trimmed)?;
    }
    Ok(())
}
