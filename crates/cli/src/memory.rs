//! `ctxgraph memory save|outcome|link|unlink|show|list|search|relink`, `evolution`, `impact` and
//! `rollup`: decision memory (seed 003) and its weekly rollup (seed 002).

use std::io::Write;

use anyhow::{Context, bail};
use ctxgraph::{
    EngineOptions, Evolution, Impact, IngestOutcome, LinkLookup, MemorySearchOptions, MemoryView,
    OpenMode, OutcomeView, Rollup, RollupOptions, TraversalOptions,
};
use serde_json::{Map, Value, json};

use crate::Outcome;
use crate::args::{Cli, MemoryCommand, MemorySaveArgs};
use crate::output::{print_json, shorten, table, when, when_ns};

pub(crate) fn run(cli: &Cli, cmd: &MemoryCommand) -> anyhow::Result<Outcome> {
    match cmd {
        MemoryCommand::Save(args) => save(cli, args),
        MemoryCommand::Outcome { memory, outcome, reason, created_by, at, id } => {
            let mut r = Map::new();
            r.insert("record_type".into(), "memory_outcome".into());
            r.insert("memory_id".into(), memory.as_str().into());
            r.insert("outcome".into(), outcome.as_str().into());
            r.insert("reason".into(), reason.as_str().into());
            r.insert("created_by".into(), created_by.as_str().into());
            r.insert("at".into(), time_arg(at.as_deref())?.into());
            if let Some(id) = id {
                r.insert("outcome_id".into(), id.as_str().into());
            }
            write(cli, Value::Object(r), "outcome")
        }
        MemoryCommand::Link {
            from,
            to,
            link_type,
            confidence,
            reason,
            created_by,
            metadata,
            at,
        } => {
            let mut r = Map::new();
            r.insert("record_type".into(), "memory_link".into());
            r.insert("from".into(), from.as_str().into());
            r.insert("to".into(), to.as_str().into());
            r.insert("link_type".into(), link_type.as_str().into());
            r.insert("confidence".into(), (*confidence).into());
            r.insert("created_by".into(), created_by.as_str().into());
            r.insert("created_at".into(), time_arg(at.as_deref())?.into());
            if let Some(reason) = reason {
                r.insert("reason".into(), reason.as_str().into());
            }
            if let Some(m) = metadata {
                let v: Value = serde_json::from_str(m).context("--metadata is not JSON")?;
                r.insert("metadata".into(), v);
            }
            write(cli, Value::Object(r), "link")
        }
        MemoryCommand::Unlink { from, to, link_type, downvote, reason, at } => {
            let mut r = Map::new();
            r.insert("record_type".into(), "memory_link_vote".into());
            r.insert("from".into(), from.as_str().into());
            r.insert("to".into(), to.as_str().into());
            r.insert("link_type".into(), link_type.as_str().into());
            r.insert("vote".into(), if *downvote { "downvote" } else { "delete" }.into());
            r.insert("created_at".into(), time_arg(at.as_deref())?.into());
            if let Some(reason) = reason {
                r.insert("reason".into(), reason.as_str().into());
            }
            let record = Value::Object(r);
            unlink_target(cli, &record, from, to, link_type)?;
            write(cli, record, "vote")
        }
        MemoryCommand::Show { id, as_of } => show(cli, id, as_of.as_deref()),
        MemoryCommand::List { kind, topic, limit } => {
            list(cli, kind.as_deref(), topic.as_deref(), *limit)
        }
        MemoryCommand::Search { query, context, limit, as_of } => {
            search(cli, query, context.clone(), *limit, as_of.as_deref())
        }
        MemoryCommand::Relink => relink(cli),
        MemoryCommand::AutoLink { state } => auto_link(cli, state.as_deref()),
    }
}

/// A time argument as RFC 3339: the text itself, a date (midnight UTC), or now when absent.
fn time_arg(arg: Option<&str>) -> anyhow::Result<String> {
    Ok(match arg {
        None => chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        Some(t) => chrono::DateTime::from_timestamp_nanos(time_ns(t)?)
            .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
    })
}

/// A time argument (RFC 3339 or YYYY-MM-DD, midnight UTC) in ns since the epoch.
pub(crate) fn time_ns(t: &str) -> anyhow::Result<i64> {
    let parsed = chrono::DateTime::parse_from_rfc3339(t).map(|d| d.to_utc()).or_else(|_| {
        chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d")
            .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
    });
    parsed.ok().and_then(|d| d.timestamp_nanos_opt()).with_context(|| {
        format!("`{t}` is not a time: write RFC 3339 (2026-11-20T09:00:00Z) or a date (2026-11-20)")
    })
}

/// A duration such as `7d`, `12h`, `90m` or `30s`, in milliseconds.
fn duration_ms(text: &str) -> anyhow::Result<i64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: i64 = n.parse().with_context(|| format!("`{text}` is not a duration such as 7d"))?;
    let per = match unit {
        "d" => 86_400_000,
        "h" => 3_600_000,
        "m" => 60_000,
        "s" => 1_000,
        _ => bail!("`{text}` is not a duration: a number and d, h, m or s, such as 7d"),
    };
    Ok(n.saturating_mul(per))
}

fn traversal(as_of: Option<&str>) -> anyhow::Result<TraversalOptions> {
    Ok(TraversalOptions {
        as_of_ns: as_of.map(time_ns).transpose()?,
        ..TraversalOptions::default()
    })
}

fn save(cli: &Cli, a: &MemorySaveArgs) -> anyhow::Result<Outcome> {
    let mut r = Map::new();
    r.insert("record_type".into(), "memory".into());
    r.insert("kind".into(), a.kind.as_str().into());
    r.insert("content".into(), a.content.as_str().into());
    r.insert("created_by".into(), a.created_by.as_str().into());
    r.insert("created_at".into(), time_arg(a.at.as_deref())?.into());
    for (k, v) in [
        ("memory_id", &a.id),
        ("topic", &a.topic),
        ("reasoning", &a.reasoning),
        ("supersedes", &a.supersedes),
        ("session_id", &a.session),
    ] {
        if let Some(v) = v {
            r.insert(k.into(), v.as_str().into());
        }
    }
    if !a.implements.is_empty() {
        r.insert("implements".into(), a.implements.clone().into());
    }
    if let Some(c) = a.confidence {
        r.insert("confidence".into(), c.into());
    }
    if a.no_auto_link {
        r.insert("auto_link".into(), false.into());
    }
    write(cli, Value::Object(r), "memory")
}

/// Validate and write one memory record; print its id and whether it was new.
/// Refuse a vote on a link that does not exist (or was deleted): it would change nothing, and
/// saying "done" would hide a mistyped id or direction. An invalid record or unknown memories are
/// left to the write, which names them with their rules.
fn unlink_target(
    cli: &Cli,
    record: &Value,
    from: &str,
    to: &str,
    link_type: &str,
) -> anyhow::Result<()> {
    let engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    if engine.validate(&record.to_string()).is_err() {
        return Ok(());
    }
    let who = crate::access::principal(cli)?;
    let snap = engine.reader(&who)?;
    let why = match snap.memory_link(from, to, link_type)? {
        LinkLookup::Found | LinkLookup::UnknownMemory => return Ok(()),
        LinkLookup::Deleted => ": it was deleted".to_owned(),
        LinkLookup::Reversed => format!("; there is one from {to} to {from}: swap them"),
        LinkLookup::Missing => String::new(),
    };
    anyhow::bail!(
        "refused vote: no {link_type} link from {from} to {to}{why} (rule: memory.unknown_link)"
    )
}

fn write(cli: &Cli, record: Value, what: &str) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    // The error's own text holds every violation; a context chain would print them twice.
    let valid = engine
        .validate(&record.to_string())
        .map_err(|e| anyhow::anyhow!("refused {what}: {}", ctxgraph::Error::Validation(e)))?;
    let id = valid.id().to_owned();
    let outcome = engine
        .save_memories(std::slice::from_ref(&valid))?
        .pop()
        .context("saving reported no outcome")?
        .map_err(|e| anyhow::anyhow!("refused {what}: {e}"))?;
    let (status, position) = match outcome {
        IngestOutcome::New(p) => ("new", p),
        IngestOutcome::Duplicate(p) => ("duplicate", p),
    };
    if cli.json {
        print_json(
            &json!({"id": id, "kind": valid.kind().as_str(), "status": status, "position": position}),
        )?;
    } else {
        writeln!(std::io::stdout().lock(), "{id} ({what}, {status}, log position {position})")?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn memory_json(m: &MemoryView) -> Value {
    json!({
        "id": m.id, "kind": m.kind, "topic": m.topic, "content": m.content,
        "reasoning": m.reasoning, "confidence": m.confidence, "created_by": m.created_by,
        "session_id": m.session_id, "created_at": m.created_at, "outcome": m.outcome,
        "outcome_reason": m.outcome_reason,
    })
}

fn outcome_json(o: &OutcomeView) -> Value {
    json!({"id": o.id, "memory_id": o.memory_id, "outcome": o.outcome, "reason": o.reason, "at": o.at})
}

fn evolution_json(e: &Evolution) -> Value {
    json!({
        "topic": e.topic,
        "steps": e.steps.iter().map(|s| json!({
            "memory": memory_json(&s.memory),
            "outcomes": s.outcomes.iter().map(outcome_json).collect::<Vec<_>>(),
            "implemented_by": s.implemented_by,
            "supersedes_confidence": s.link_confidence,
            "via": s.via, "explicit": s.explicit,
        })).collect::<Vec<_>>(),
    })
}

fn impact_json(i: &Impact) -> Value {
    json!({
        "start": memory_json(&i.start),
        "items": i.items.iter().map(|x| json!({
            "memory": memory_json(&x.memory), "via": x.via, "from": x.from, "depth": x.depth,
            "confidence": x.confidence,
        })).collect::<Vec<_>>(),
        "outcomes": i.outcomes.iter().map(outcome_json).collect::<Vec<_>>(),
        "superseded_by": i.superseded_by.iter().map(memory_json).collect::<Vec<_>>(),
    })
}

/// An Outcome node in one line: `FAILED for memory_1: the reason`.
pub(crate) fn describe_outcome(node: &ctxgraph::Node) -> String {
    let s = |k: &str| node.props.get(k).and_then(Value::as_str).unwrap_or_default();
    format!("{} for {}: {}", s("outcome").to_uppercase(), s("memory_id"), s("reason"))
}

/// An outcome as the listings print it: `FAILED at <time>: <reason>`.
fn outcome_line(o: &ctxgraph::OutcomeView) -> String {
    format!("{} at {}: {}", o.outcome.to_uppercase(), when(&o.at), o.reason)
}

fn one_line(m: &MemoryView) -> String {
    let mut s =
        format!("{}  {}  {}  {}", m.id, m.kind, when(&m.created_at), shorten(&m.content, 70));
    if let Some(r) = &m.reasoning {
        s.push_str(&format!(" — {}", shorten(r, 50)));
    }
    s
}

fn print_evolution(out: &mut impl Write, e: &Evolution) -> std::io::Result<()> {
    writeln!(out, "evolution of {} (newest first):", e.topic)?;
    for (i, s) in e.steps.iter().enumerate() {
        let made = if s.explicit { "explicit" } else { "automatic" };
        match (s.via, s.link_confidence) {
            (Some("supersedes"), Some(c)) => {
                writeln!(out, "    ↑ superseded by the decision above ({made}, confidence {c:.2})")?
            }
            (Some(via), Some(c)) => writeln!(
                out,
                "    ↑ older decision on the topic, {via} the one above ({made}, confidence {c:.2})"
            )?,
            (Some(_), None) => {
                writeln!(out, "    ↑ older decision on the topic, not linked to the one above")?
            }
            (None, _) => {}
        }
        writeln!(out, "  {}. {}", i + 1, one_line(&s.memory))?;
        for o in &s.outcomes {
            writeln!(out, "       outcome {}", outcome_line(o))?;
        }
        if !s.implemented_by.is_empty() {
            writeln!(out, "       implemented by {}", s.implemented_by.join(", "))?;
        }
    }
    Ok(())
}

fn print_impact(out: &mut impl Write, i: &Impact) -> std::io::Result<()> {
    writeln!(out, "impact of {}", one_line(&i.start))?;
    if i.items.is_empty() {
        writeln!(out, "  nothing reached within the window")?;
    }
    for x in &i.items {
        writeln!(
            out,
            "  {}← {} from {} ({:.2}): {}",
            "  ".repeat(x.depth.saturating_sub(1)),
            x.via,
            x.from,
            x.confidence,
            one_line(&x.memory)
        )?;
    }
    for o in &i.outcomes {
        writeln!(out, "  outcome of {}: {}", o.memory_id, outcome_line(o))?;
    }
    for m in &i.superseded_by {
        writeln!(out, "  superseded by {}", one_line(m))?;
    }
    Ok(())
}

fn show(cli: &Cli, id: &str, as_of: Option<&str>) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let t = traversal(as_of)?;
    let snap = crate::reader(cli, &engine)?;
    let Some(m) = snap.memory(id)? else {
        eprintln!("no memory `{id}` (see `ctxgraph memory list`)");
        return Ok(Outcome::NotFound);
    };
    let outcomes = snap.outcomes_of(id)?;
    let links = snap.memory_links(id, &t)?;
    if cli.json {
        print_json(&json!({
            "memory": memory_json(&m),
            "outcomes": outcomes.iter().map(outcome_json).collect::<Vec<_>>(),
            "links": links.iter().map(|(e, c)| {
                let mut v = crate::output::edge_json(e);
                v["effective_confidence"] = json!(c);
                v
            }).collect::<Vec<_>>(),
        }))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", one_line(&m))?;
    if let Some(t) = &m.topic {
        writeln!(out, "  topic: {t}")?;
    }
    writeln!(out, "  confidence {:.2}, saved by {}", m.confidence, m.created_by)?;
    for o in &outcomes {
        writeln!(out, "  outcome {}", outcome_line(o))?;
    }
    if !links.is_empty() {
        let mut tb = table(&["link", "from", "to", "rule", "by", "confidence"]);
        for (e, c) in &links {
            let s = |k: &str| e.props.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            tb.add_row(vec![
                e.key.edge_type.clone(),
                e.key.from.id.clone(),
                e.key.to.id.clone(),
                s("rule"),
                ctxgraph::link_maker(e).to_owned(),
                format!("{c:.2}"),
            ]);
        }
        writeln!(out, "{tb}")?;
    }
    Ok(Outcome::Done)
}

fn list(
    cli: &Cli,
    kind: Option<&str>,
    topic: Option<&str>,
    limit: usize,
) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let want_topic = topic.map(ctxgraph::normalize_name);
    let who = crate::access::principal(cli)?;
    let mut all = engine.reader(&who)?.memories()?;
    all.retain(|m| {
        kind.is_none_or(|k| m.kind == k.to_lowercase())
            && want_topic.as_ref().is_none_or(|t| {
                m.topic.as_deref().map(ctxgraph::normalize_name).as_ref() == Some(t)
            })
    });
    all.reverse();
    all.truncate(limit);
    if cli.json {
        print_json(&Value::Array(all.iter().map(memory_json).collect()))?;
    } else {
        let mut t = table(&["id", "kind", "topic", "created_at", "outcome", "content"]);
        for m in &all {
            t.add_row(vec![
                m.id.clone(),
                m.kind.clone(),
                m.topic.clone().unwrap_or_default(),
                when(&m.created_at),
                m.outcome.clone().unwrap_or_default(),
                shorten(&m.content, 60),
            ]);
        }
        if all.is_empty() {
            writeln!(std::io::stdout().lock(), "no memories (`ctxgraph memory save` saves one)")?;
        } else {
            writeln!(std::io::stdout().lock(), "{t}")?;
        }
    }
    Ok(if all.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

fn search(
    cli: &Cli,
    query: &str,
    context: Option<String>,
    limit: usize,
    as_of: Option<&str>,
) -> anyhow::Result<Outcome> {
    ctxgraph::QuestionLimits::default().check("query", query)?;
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let options = MemorySearchOptions {
        limit,
        context,
        traversal: traversal(as_of)?,
        ..MemorySearchOptions::default()
    };
    let who = crate::access::principal(cli)?;
    let vector = engine.embed_query(query)?;
    let ctx = engine.reader(&who)?.memory_context(query, &vector, &options)?;
    if cli.json {
        print_json(&json!({
            "query": query,
            "hits": ctx.hits.iter().map(|h| json!({
                "memory": memory_json(&h.memory), "score": h.score, "similarity": h.similarity,
                "lexical": h.lexical, "connected": h.connected,
            })).collect::<Vec<_>>(),
            "evolution": ctx.evolution.as_ref().map(evolution_json),
            "evidence": ctx.evidence.iter().map(impact_json).collect::<Vec<_>>(),
            "outcomes": ctx.outcomes.iter().map(outcome_json).collect::<Vec<_>>(),
        }))?;
    } else {
        let mut out = std::io::stdout().lock();
        if ctx.hits.is_empty() {
            writeln!(out, "no memory matches `{query}`")?;
        }
        if let Some(e) = &ctx.evolution {
            print_evolution(&mut out, e)?;
        }
        let evidence: Vec<_> = ctx.evidence.iter().flat_map(|i| &i.items).collect();
        if !evidence.is_empty() {
            writeln!(out, "evidence:")?;
            for x in evidence {
                writeln!(
                    out,
                    "  {} ← {} from {} ({:.2})",
                    one_line(&x.memory),
                    x.via,
                    x.from,
                    x.confidence
                )?;
            }
        }
        if !ctx.hits.is_empty() {
            let mut t = table(&["score", "id", "kind", "connected", "content"]);
            for h in &ctx.hits {
                t.add_row(vec![
                    format!("{:.3}", h.score),
                    h.memory.id.clone(),
                    h.memory.kind.clone(),
                    if h.connected { "yes" } else { "" }.to_owned(),
                    shorten(&h.memory.content, 60),
                ]);
            }
            writeln!(out, "matches:\n{t}")?;
        }
    }
    Ok(if ctx.hits.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

fn relink(cli: &Cli) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let r = engine.link_memories()?;
    if cli.json {
        print_json(&json!({"memories": r.memories, "temporal": r.temporal,
            "same_topic": r.same_topic, "semantic": r.semantic}))?;
    } else {
        writeln!(
            std::io::stdout().lock(),
            "{} memories indexed; {} automatic links ({} temporal, {} same topic, {} semantic)",
            r.memories,
            r.total(),
            r.temporal,
            r.same_topic,
            r.semantic
        )?;
    }
    Ok(Outcome::Done)
}

/// `memory auto-link [on|off]`: the store's setting, shown or switched (links rebuilt).
fn auto_link(cli: &Cli, state: Option<&str>) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let report = match state {
        Some(s) => Some(engine.set_auto_link(s == "on")?),
        None => None,
    };
    let on = !engine.auto_link_stored_off()?;
    let word = if on { "on" } else { "off" };
    if cli.json {
        print_json(&json!({
            "auto_link": on,
            "automatic_links": report.as_ref().map(|r| r.total()),
        }))?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "automatic memory links: {word} for this store")?;
        if let Some(r) = report {
            writeln!(out, "links rebuilt: {} automatic links now", r.total())?;
        }
    }
    Ok(Outcome::Done)
}

pub(crate) fn evolution(cli: &Cli, topic: &str, as_of: Option<&str>) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let who = crate::access::principal(cli)?;
    let Some(e) = engine.reader(&who)?.evolution(topic, &traversal(as_of)?)? else {
        eprintln!("no decision on topic `{topic}`");
        return Ok(Outcome::NotFound);
    };
    if cli.json {
        print_json(&evolution_json(&e))?;
    } else {
        print_evolution(&mut std::io::stdout().lock(), &e)?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn impact(
    cli: &Cli,
    memory: &str,
    window: &str,
    as_of: Option<&str>,
) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let t = TraversalOptions { impact_window_ms: duration_ms(window)?, ..traversal(as_of)? };
    let who = crate::access::principal(cli)?;
    let Some(i) = engine.reader(&who)?.impact(memory, &t)? else {
        eprintln!("no memory `{memory}` (see `ctxgraph memory list`)");
        return Ok(Outcome::NotFound);
    };
    if cli.json {
        print_json(&impact_json(&i))?;
    } else {
        print_impact(&mut std::io::stdout().lock(), &i)?;
    }
    Ok(Outcome::Done)
}

fn rollup_json(r: &Rollup) -> Value {
    let at = |ns: i64| chrono::DateTime::from_timestamp_nanos(ns).to_rfc3339();
    json!({
        "since": at(r.since_ns), "until": at(r.until_ns),
        "decisions": r.decisions.iter().map(memory_json).collect::<Vec<_>>(),
        "outcomes": r.outcomes.iter().map(outcome_json).collect::<Vec<_>>(),
        "open": r.open.iter().map(memory_json).collect::<Vec<_>>(),
        "blocked": r.blocked.iter().map(|b| json!({
            "memory": memory_json(&b.memory), "outcome": outcome_json(&b.outcome),
        })).collect::<Vec<_>>(),
        "blocked_by": r.blocked_by.iter().map(|f| json!({
            "fact_id": f.fact_id, "subject": f.subject.id,
            "object": f.object.as_ref().map(|o| o.id.clone()), "literal": f.literal,
            "confidence": f.confidence, "sources": f.sources,
        })).collect::<Vec<_>>(),
        "next_actions": r.next_actions.iter().map(|a| json!({
            "action": a.action, "memory_id": a.memory_id, "text": a.text,
        })).collect::<Vec<_>>(),
    })
}

pub(crate) fn rollup(
    cli: &Cli,
    since: Option<&str>,
    until: Option<&str>,
) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let until = match until {
        Some(t) => time_ns(t)?,
        None => chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX),
    };
    let since = match since {
        Some(t) => time_ns(t)?,
        None => until.saturating_sub(7 * 86_400_000_000_000),
    };
    if since >= until {
        bail!("--since must be before --until");
    }
    let who = crate::access::principal(cli)?;
    let r = engine.reader(&who)?.rollup(since, until, &RollupOptions::default())?;
    if cli.json {
        print_json(&rollup_json(&r))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "rollup from {} to {}", when_ns(since), when_ns(until))?;
    writeln!(out, "decisions made ({}):", r.decisions.len())?;
    for m in &r.decisions {
        writeln!(out, "  {}", one_line(m))?;
    }
    writeln!(out, "outcomes ({}):", r.outcomes.len())?;
    for o in &r.outcomes {
        writeln!(out, "  {} {}", o.memory_id, outcome_line(o))?;
    }
    writeln!(out, "open ({}):", r.open.len())?;
    for m in &r.open {
        writeln!(out, "  {}", one_line(m))?;
    }
    writeln!(out, "blocked ({}):", r.blocked.len())?;
    for b in &r.blocked {
        writeln!(
            out,
            "  {} ({}: {})",
            one_line(&b.memory),
            b.outcome.outcome.to_uppercase(),
            b.outcome.reason
        )?;
    }
    writeln!(out, "blocked by ({}):", r.blocked_by.len())?;
    for f in &r.blocked_by {
        let by = match (&f.object, &f.literal) {
            (Some(o), _) => o.id.clone(),
            (None, Some(v)) => v.to_string(),
            (None, None) => String::new(),
        };
        writeln!(out, "  {} blocked by {by} (confidence {:.2})", f.subject.id, f.confidence)?;
    }
    writeln!(out, "next actions ({}):", r.next_actions.len())?;
    for a in &r.next_actions {
        writeln!(out, "  [{}] {}", a.action, a.text)?;
    }
    Ok(Outcome::Done)
}
