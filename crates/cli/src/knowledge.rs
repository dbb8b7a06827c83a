//! `ctxgraph fact add|retract|list|about|contradictions` and `ctxgraph doc add|show|list`: facts
//! with provenance and their source documents.

use std::io::{Read, Write};

use anyhow::Context;
use ctxgraph::{
    DocumentFormat, DocumentInput, DocumentSummary, DocumentView, Engine, EngineOptions,
    EntityInput, FactEntity, FactInput, FactQuery, FactView, IngestOutcome, ObjectInput, OpenMode,
    Resolution, ResolvedEntity, format_for_path, parse_time,
};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, DocCommand, DocFormatArg, FactAddArgs, FactCommand};
use crate::output::{print_json, shorten, table, when};

pub(crate) fn fact(cli: &Cli, cmd: &FactCommand) -> anyhow::Result<Outcome> {
    match cmd {
        FactCommand::Add(args) => add(cli, args),
        FactCommand::Retract { fact_id, reason, at } => {
            retract(cli, fact_id, reason.as_deref(), at.as_deref())
        }
        FactCommand::List { as_of, subject, predicate, all, since } => list(
            cli,
            as_of.as_deref(),
            subject.as_deref(),
            predicate.as_deref(),
            *all,
            since.as_deref(),
        ),
        FactCommand::About { entity, entity_type, as_of } => {
            about(cli, entity, entity_type.as_deref(), as_of.as_deref())
        }
        FactCommand::Contradictions { as_of } => contradictions(cli, as_of.as_deref()),
    }
}

pub(crate) fn doc(cli: &Cli, cmd: &DocCommand) -> anyhow::Result<Outcome> {
    match cmd {
        DocCommand::Add { file, url, format, title, extract } => {
            doc_add(cli, file, url.as_deref(), *format, title.as_deref(), *extract)
        }
        DocCommand::Show { id } => doc_show(cli, id),
        DocCommand::List => doc_list(cli),
    }
}

fn status(outcome: IngestOutcome) -> (&'static str, u64) {
    match outcome {
        IngestOutcome::New(p) => ("new", p),
        IngestOutcome::Duplicate(p) => ("duplicate", p),
    }
}

fn resolved_json(e: &ResolvedEntity) -> Value {
    json!({"id": e.id, "name": e.name, "via": e.via})
}

fn entity_json(e: &FactEntity) -> Value {
    json!({"id": e.id, "name": e.name, "entity_type": e.entity_type})
}

fn fact_json(f: &FactView) -> Value {
    json!({
        "fact_id": f.fact_id,
        "subject": entity_json(&f.subject),
        "predicate": f.predicate,
        "object": f.object.as_ref().map(entity_json),
        "literal": f.literal,
        "object_slot": f.object_slot.as_ref().map(|(slot, value)| json!({"slot": slot, "value": value})),
        "object_type": f.object_type,
        "confidence": f.confidence,
        "claim_confidences": f.claim_confidences,
        "claims": f.claims,
        "sources": f.sources,
        "citations": f.citations.iter().map(|(id, support, text)| {
            json!({"sentence_id": id, "support": support, "text": text})
        }).collect::<Vec<_>>(),
        "valid_from": f.valid_from,
        "valid_to": f.valid_to,
        "retracted_at": f.retracted_at,
        "retraction_reason": f.retraction_reason,
        "first_asserted_at": f.asserted.0,
        "last_asserted_at": f.asserted.1,
        "active": f.active,
        "contradicted_by": f.contradicted_by,
    })
}

fn object_text(f: &FactView) -> String {
    if let Some((slot, value)) = &f.object_slot {
        return format!("{slot}={value}");
    }
    if let Some(t) = &f.object_type {
        return format!("type {t}");
    }
    match (&f.object, &f.literal) {
        (Some(o), _) => o.name.clone(),
        (None, Some(Value::String(s))) => format!("\"{s}\""),
        (None, Some(v)) => v.to_string(),
        (None, None) => String::new(),
    }
}

fn fact_status(f: &FactView) -> String {
    if f.retracted_at.is_some() && !f.active {
        "retracted".into()
    } else if !f.active {
        "not valid".into()
    } else if !f.contradicted_by.is_empty() {
        format!("contradicted ({})", f.contradicted_by.len())
    } else {
        "true".into()
    }
}

fn print_facts(facts: &[FactView]) -> anyhow::Result<()> {
    let mut t = table(&[
        "subject",
        "predicate",
        "object",
        "confidence",
        "claims",
        "sources",
        "status",
        "fact id",
    ]);
    for f in facts {
        t.add_row(vec![
            f.subject.name.clone(),
            f.predicate.clone(),
            object_text(f),
            format!("{:.3}", f.confidence),
            f.claims.to_string(),
            shorten(&f.sources.join("; "), 40),
            fact_status(f),
            f.fact_id.clone(),
        ]);
    }
    writeln!(std::io::stdout().lock(), "{t}")?;
    Ok(())
}

fn time_arg(flag: &str, value: Option<&str>) -> anyhow::Result<Option<String>> {
    value
        .map(|v| {
            parse_time(v).with_context(|| {
                format!("{flag} `{v}`: expected an RFC 3339 timestamp with an offset or a date YYYY-MM-DD")
            })
        })
        .transpose()
}

fn add(cli: &Cli, a: &FactAddArgs) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let object = if let Some(slot) = &a.object_slot {
        ObjectInput::SlotValue { slot: slot.clone(), value: a.object.clone() }
    } else if a.object_is_type {
        ObjectInput::Type(a.object.clone())
    } else if a.literal {
        ObjectInput::Literal(Value::String(a.object.clone()))
    } else if let Some(t) = &a.object_type {
        ObjectInput::Entity(EntityInput::typed(&a.object, t))
    } else {
        ObjectInput::Either(a.object.clone())
    };
    let subject = EntityInput { name: a.subject.clone(), entity_type: a.subject_type.clone() };
    let mut input = FactInput::new(subject, &a.predicate, object);
    input.confidence = a.confidence;
    input.source = a.source.clone();
    input.valid_from = a.valid_from.clone();
    input.valid_to = a.valid_to.clone();
    input.cites = a.cites.clone();
    let claim = format!("{} {} {}", a.subject, a.predicate, a.object);
    let done = engine.record_fact(&input).with_context(|| format!("recording `{claim}`"))?;
    let (state, position) = status(done.outcome);
    let merged = crate::reader(cli, &engine)?
        .facts_about(&done.subject.id, None)?
        .into_iter()
        .find(|f| f.fact_id == done.fact_id);
    if cli.json {
        print_json(&json!({
            "status": state, "position": position, "fact_id": done.fact_id, "claim_id": done.claim_id,
            "subject": resolved_json(&done.subject), "object": done.object.as_ref().map(resolved_json),
            "fact": merged.as_ref().map(fact_json),
        }))?;
    } else {
        let mut out = std::io::stdout().lock();
        let verb = if state == "new" { "recorded" } else { "already recorded" };
        writeln!(out, "{verb} at log position {position}: {}", done.fact_id)?;
        let shown = |e: &ResolvedEntity| format!("{} -> {} (matched by {})", e.name, e.id, e.via);
        writeln!(out, "  subject {}", shown(&done.subject))?;
        if let Some(o) = &done.object {
            writeln!(out, "  object  {}", shown(o))?;
        }
        if let Some(f) = &merged {
            writeln!(
                out,
                "  confidence {:.3} from {} claim(s); status: {}",
                f.confidence,
                f.claims,
                fact_status(f)
            )?;
        }
    }
    Ok(Outcome::Done)
}

fn retract(
    cli: &Cli,
    fact_id: &str,
    reason: Option<&str>,
    at: Option<&str>,
) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let outcome = engine
        .retract_fact(fact_id, reason, at)
        .with_context(|| format!("retracting `{fact_id}`"))?;
    let (state, position) = status(outcome);
    if cli.json {
        print_json(&json!({"status": state, "position": position, "fact_id": fact_id}))?;
    } else {
        let verb = if state == "new" { "retracted" } else { "already retracted" };
        writeln!(std::io::stdout().lock(), "{verb} at log position {position}: {fact_id}")?;
    }
    Ok(Outcome::Done)
}

/// The entity id a forgiving name stands for, `None` when no entity matches it, or an error
/// naming the candidates.
fn entity_arg(
    cli: &Cli,
    engine: &Engine,
    name: &str,
    entity_type: Option<&str>,
) -> anyhow::Result<Option<String>> {
    let input = EntityInput { name: name.to_owned(), entity_type: entity_type.map(str::to_owned) };
    match engine.resolve_entity(&crate::access::principal(cli)?, &input)? {
        Resolution::Resolved(e, _) if e.via != "created" => Ok(Some(e.id)),
        Resolution::Resolved(..) | Resolution::Unknown => Ok(None),
        Resolution::Ambiguous(list) => anyhow::bail!(
            "`{name}` matches several entities: {}; give an id or --type",
            list.iter().map(|c| format!("{} ({})", c.id, c.via)).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn list(
    cli: &Cli,
    as_of: Option<&str>,
    subject: Option<&str>,
    predicate: Option<&str>,
    all: bool,
    since: Option<&str>,
) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let subject = match subject {
        Some(s) => match entity_arg(cli, &engine, s, None)? {
            Some(id) => Some(id),
            None => return no_entity(cli, s),
        },
        None => None,
    };
    let query = FactQuery {
        as_of: time_arg("--as-of", as_of)?,
        subject,
        predicate: predicate.map(ctxgraph::canonical_predicate),
        include_inactive: all,
        since: time_arg("--since", since)?,
    };
    let facts = crate::reader(cli, &engine)?.facts(&query)?;
    if cli.json {
        print_json(&Value::Array(facts.iter().map(fact_json).collect()))?;
    } else if facts.is_empty() {
        writeln!(
            std::io::stdout().lock(),
            "no facts{}",
            if all { "" } else { " true at that time (--all lists every fact)" }
        )?;
    } else {
        print_facts(&facts)?;
    }
    Ok(if facts.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

fn about(
    cli: &Cli,
    name: &str,
    entity_type: Option<&str>,
    as_of: Option<&str>,
) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let Some(id) = entity_arg(cli, &engine, name, entity_type)? else {
        return no_entity(cli, name);
    };
    let as_of = time_arg("--as-of", as_of)?;
    let facts = crate::reader(cli, &engine)?.facts_about(&id, as_of.as_deref())?;
    if cli.json {
        print_json(
            &json!({"entity": id, "facts": facts.iter().map(fact_json).collect::<Vec<_>>()}),
        )?;
    } else if facts.is_empty() {
        writeln!(std::io::stdout().lock(), "no facts about {id}")?;
    } else {
        writeln!(std::io::stdout().lock(), "facts about {id}")?;
        print_facts(&facts)?;
    }
    Ok(if facts.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

/// Nothing is known about a name no entity has: a sentence (or an empty JSON list), exit 1.
fn no_entity(cli: &Cli, name: &str) -> anyhow::Result<Outcome> {
    if cli.json {
        print_json(&json!({"entity": null, "facts": []}))?;
    } else {
        writeln!(
            std::io::stdout().lock(),
            "no entity matches `{name}`, so there are no facts about it (`ctxgraph search` finds entities by name)"
        )?;
    }
    Ok(Outcome::NotFound)
}

fn contradictions(cli: &Cli, as_of: Option<&str>) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let as_of = time_arg("--as-of", as_of)?;
    let found = crate::reader(cli, &engine)?.contradictions(as_of.as_deref())?;
    if cli.json {
        let list = found
            .iter()
            .map(|c| {
                json!({
                    "subject": entity_json(&c.subject), "predicate": c.predicate,
                    "facts": c.facts.iter().map(fact_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        print_json(&Value::Array(list))?;
    } else if found.is_empty() {
        writeln!(std::io::stdout().lock(), "no contradictions")?;
    } else {
        let mut out = std::io::stdout().lock();
        for c in &found {
            writeln!(out, "{} {}: {} competing objects", c.subject.id, c.predicate, c.facts.len())?;
            for f in &c.facts {
                let sources = if f.sources.is_empty() {
                    "no source".to_owned()
                } else {
                    f.sources.join("; ")
                };
                writeln!(out, "  {:.3}  {}  ({sources})", f.confidence, object_text(f))?;
            }
        }
    }
    Ok(if found.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

fn doc_add(
    cli: &Cli,
    file: &std::path::Path,
    url: Option<&str>,
    format: Option<DocFormatArg>,
    title: Option<&str>,
    extract: bool,
) -> anyhow::Result<Outcome> {
    let shown = file.display().to_string();
    let mut text = String::new();
    if shown == "-" {
        std::io::stdin().read_to_string(&mut text).context("reading the document from stdin")?;
    } else {
        let mut f = std::fs::File::open(file).with_context(|| format!("opening {shown}"))?;
        f.read_to_string(&mut text).with_context(|| format!("reading {shown} as UTF-8 text"))?;
    }
    let url = url.unwrap_or(&shown).to_owned();
    let format = match format {
        Some(DocFormatArg::Markdown) => DocumentFormat::Markdown,
        Some(DocFormatArg::Text) => DocumentFormat::Text,
        None => format_for_path(&shown),
    };
    let mut engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let input = DocumentInput {
        url: url.clone(),
        text,
        format,
        title: title.map(str::to_owned),
        extract,
        ingested_at: None,
    };
    let done = engine.add_document(&input).with_context(|| format!("ingesting {shown}"))?;
    let (state, position) = status(done.outcome);
    if cli.json {
        print_json(&json!({
            "status": state, "position": position, "document_id": done.document_id, "url": url,
            "version": done.version, "previous": done.previous, "sentences": done.sentences,
            "mentions": done.mentions,
        }))?;
    } else if state == "new" {
        let prev = done.previous.map(|p| format!(", replacing {p}")).unwrap_or_default();
        writeln!(
            std::io::stdout().lock(),
            "added {} (version {} of {url}{prev}) at log position {position}: {} sentences, {} mentions",
            done.document_id,
            done.version,
            done.sentences,
            done.mentions
        )?;
    } else {
        writeln!(
            std::io::stdout().lock(),
            "already stored: {} (same URL and content)",
            done.document_id
        )?;
    }
    Ok(Outcome::Done)
}

fn summary_json(d: &DocumentSummary) -> Value {
    json!({
        "document_id": d.document_id, "url": d.url, "version": d.version, "title": d.title,
        "format": d.format, "content_hash": d.content_hash, "sections": d.sections,
        "sentences": d.sentences, "ingested_at": d.ingested_at, "previous": d.previous, "next": d.next,
    })
}

fn view_json(v: &DocumentView) -> Value {
    let sections = v
        .sections
        .iter()
        .map(|s| {
            let paragraphs = s
                .paragraphs
                .iter()
                .map(|p| {
                    p.iter()
                        .map(|t| {
                            json!({
                                "sentence_id": t.sentence_id, "order": t.order, "text": t.text,
                                "mentions": t.mentions.iter().map(|m| json!({
                                    "entity_id": m.entity_id, "via": m.via, "confidence": m.confidence,
                                })).collect::<Vec<_>>(),
                            })
                        })
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>();
            json!({"title": s.title, "level": s.level, "paragraphs": paragraphs})
        })
        .collect::<Vec<_>>();
    json!({"document": summary_json(&v.summary), "sections": sections})
}

fn doc_show(cli: &Cli, id: &str) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let Some(view) = crate::reader(cli, &engine)?.document(id)? else {
        if !cli.json {
            writeln!(
                std::io::stdout().lock(),
                "no document with id or URL `{id}` (`ctxgraph doc list`)"
            )?;
        }
        return Ok(Outcome::NotFound);
    };
    if cli.json {
        print_json(&view_json(&view))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    let s = &view.summary;
    writeln!(out, "{} — {} (version {}, {})", s.document_id, s.url, s.version, s.format)?;
    if let Some(t) = &s.title {
        writeln!(out, "title: {t}")?;
    }
    if let Some(p) = &s.previous {
        writeln!(out, "replaces: {p}")?;
    }
    if let Some(n) = &s.next {
        writeln!(out, "replaced by: {n}")?;
    }
    for section in &view.sections {
        let heading = section.title.as_deref().unwrap_or("(untitled)");
        writeln!(out, "\n{} {heading}", "#".repeat(section.level.max(1) as usize))?;
        for p in &section.paragraphs {
            for t in p {
                let id = t.sentence_id.rsplit('/').next().unwrap_or(&t.sentence_id);
                writeln!(out, "  [{id}] {}", shorten(&t.text, 100))?;
                for m in &t.mentions {
                    writeln!(
                        out,
                        "        mentions {} ({} {:.2})",
                        m.entity_id, m.via, m.confidence
                    )?;
                }
            }
            writeln!(out)?;
        }
    }
    writeln!(
        out,
        "cite a sentence as {}/tN (e.g. `fact add ... --cites {}/t0`)",
        s.document_id, s.document_id
    )?;
    Ok(Outcome::Done)
}

fn doc_list(cli: &Cli) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let docs = crate::reader(cli, &engine)?.documents()?;
    if cli.json {
        print_json(&Value::Array(docs.iter().map(summary_json).collect()))?;
    } else if docs.is_empty() {
        writeln!(std::io::stdout().lock(), "no documents (`ctxgraph doc add FILE`)")?;
    } else {
        let mut t = table(&[
            "document id",
            "url",
            "version",
            "title",
            "sentences",
            "ingested at",
            "latest",
        ]);
        for d in &docs {
            t.add_row(vec![
                d.document_id.clone(),
                shorten(&d.url, 50),
                d.version.to_string(),
                d.title.clone().unwrap_or_default(),
                d.sentences.to_string(),
                when(&d.ingested_at),
                if d.next.is_none() { "yes".into() } else { "no".into() },
            ]);
        }
        writeln!(std::io::stdout().lock(), "{t}")?;
    }
    Ok(if docs.is_empty() { Outcome::NotFound } else { Outcome::Done })
}
