//! `ctxgraph recall`: the context pack for a question, with the path that brought each item in.

use std::io::Write;

use ctxgraph::{ContextPack, EngineOptions, Item, Node, OpenMode, RecallQuery};
use ctxgraph_server::wire::{ContextPackDto, RecallRequest};
use serde_json::Value;

use crate::Outcome;
use crate::args::{Cli, RecallArgs};
use crate::output::{count, describe_entity, describe_event, print_json, shorten, when};

pub(crate) fn run(cli: &Cli, args: &RecallArgs) -> anyhow::Result<Outcome> {
    // Before the store is opened: an oversized question costs nothing.
    ctxgraph::QuestionLimits::default().check("question", &args.question)?;
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let query = query(args)?;
    let who = crate::access::principal(cli)?;
    let pack = engine.recall_as(&query, &who)?;
    if cli.json {
        print_json(&pack_json(&pack)?)?;
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

/// The question as the wire's recall request, so that the CLI, `POST /v1/recall` and the MCP
/// tool give every field the same meaning (one conversion, `RecallRequest::to_query_named`).
fn query(args: &RecallArgs) -> anyhow::Result<RecallQuery> {
    let request = RecallRequest {
        question: args.question.clone(),
        k: Some(args.k),
        intent: args.intent.clone(),
        since: args.since.clone(),
        until: args.until.clone(),
        session: args.session.clone(),
        trace: args.trace.clone(),
        agent: args.agent.clone(),
        tags: args.tags.clone(),
        location: args.location.clone(),
        labels: args.label.clone(),
        min_confidence: Some(args.min_confidence),
        budget_tokens: args.budget_tokens,
        diversity: args.diversity,
        as_of: args.as_of.clone(),
    };
    // Errors name the flags (`min_confidence` is `--min-confidence`); the question is positional.
    request
        .to_query_named(|field| match field {
            "question" => "the question".to_owned(),
            flag => format!("--{}", flag.replace('_', "-")),
        })
        .map_err(|e| anyhow::anyhow!(e.message))
}

/// The pack as JSON: the wire's shape, the same as the HTTP and MCP interfaces return.
pub(crate) fn pack_json(pack: &ContextPack) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(ContextPackDto::from(pack.clone()))?)
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
        _ => crate::output::describe_node(node),
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
    if pack.items.is_empty() {
        writeln!(
            out,
            "Nothing found for \"{}\" (intent {}, {how}; {}): try other words, fewer constraints, or `ctxgraph search`.",
            pack.query,
            pack.intent.name(),
            count(pack.candidates as u64, "candidate", "candidates")
        )?;
    } else {
        writeln!(
            out,
            "{} for \"{}\" (intent {}, {how}; {})",
            count(pack.items.len() as u64, "item", "items"),
            pack.query,
            pack.intent.name(),
            count(pack.candidates as u64, "candidate", "candidates")
        )?;
    }
    // What the engine understood: cues, what the question names, the constraints in force.
    let st = &pack.state;
    let mut understood = Vec::new();
    if !st.cues.is_empty() {
        understood.push(format!("cues {}", st.cues.join(", ")));
    }
    let names: Vec<String> = st.anchors.iter().chain(&st.named).map(ToString::to_string).collect();
    if !names.is_empty() {
        understood.push(format!("names {}", names.join(", ")));
    }
    if !st.constraints.is_empty() {
        let c: Vec<String> = st.constraints.iter().map(|(k, v)| format!("{k}={v}")).collect();
        understood.push(format!("within {}", c.join(", ")));
    }
    if let Some((first, last)) = &st.time_span {
        understood.push(format!("spanning {} .. {}", when(first), when(last)));
    }
    if !understood.is_empty() {
        writeln!(out, "{}", understood.join("; "))?;
    }
    for (i, item) in pack.items.iter().enumerate() {
        let f = &item.factors;
        // When it happened (or was written), in the output's one time zone.
        let at = ["occurred_at", "created_at", "committed_at", "at"]
            .iter()
            .find_map(|k| item.node.props.get(*k).and_then(Value::as_str))
            .map(|t| format!("{}  ", when(t)))
            .unwrap_or_default();
        writeln!(
            out,
            "\n{:>2}. {:.3}  {at}{}",
            i + 1,
            item.score,
            shorten(&describe(&item.node), 100)
        )?;
        if item.path.is_empty() {
            writeln!(out, "    found by {}: {}", item.found_by.join(" + "), item.node.key)?;
        } else {
            writeln!(out, "    via {}", path_line(item))?;
        }
        // `; log position 79, by data-agent, from org chart`: who and what source, when known.
        let provenance_line = |position: u64| {
            let p = &item.provenance;
            let mut line = format!("; log position {position}");
            if !p.created_by.is_empty() {
                line.push_str(&format!(", by {}", p.created_by));
            }
            if let Some(source) = &p.source {
                line.push_str(&format!(", from {source}"));
            }
            line
        };
        let matched =
            if f.matched == 1.0 { String::new() } else { format!(" × match {:.2}", f.matched) };
        writeln!(
            out,
            "    relevance {:.2} × path {:.2} × confidence {:.2} × salience {:.2} × focus {:.2}{matched}{}",
            f.relevance,
            f.path_weight,
            f.confidence,
            f.salience,
            f.focus,
            item.provenance.log_position.map(provenance_line).unwrap_or_default()
        )?;
    }
    if !pack.unknowns.is_empty() {
        writeln!(out, "\nunknowns:")?;
        // One line per missing node, naming the items it concerns (an entity unexplained for
        // every item is said once).
        let mut grouped: Vec<(&str, String, Vec<String>)> = Vec::new();
        for u in &pack.unknowns {
            let missing = u.missing.to_string();
            match grouped.iter_mut().find(|(k, m, _)| *k == u.kind && *m == missing) {
                Some((_, _, items)) => items.push(u.item.to_string()),
                None => grouped.push((u.kind, missing, vec![u.item.to_string()])),
            }
        }
        for (kind, missing, items) in &grouped {
            let shown: Vec<&str> = items.iter().take(3).map(String::as_str).collect();
            let more = items.len().saturating_sub(3);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            writeln!(
                out,
                "  {}: {missing} (for {}{more})",
                kind.replace('_', " "),
                shown.join(", ")
            )?;
        }
    }
    if pack.trimmed > 0 {
        writeln!(
            out,
            "\n{} left out to fit the token budget",
            count(pack.trimmed as u64, "item", "items")
        )?;
    }
    Ok(())
}
