//! `ctxgraph import mcp-memory|episodes|mem0|markdown`: other memory tools' exports in,
//! through the readers of `ctxgraph-interop` and the normal validated write paths (event
//! ingest, facts, documents).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use ctxgraph::{
    DocumentFormat, DocumentInput, Engine, EngineOptions, EntityInput, FactInput, ImportBatch,
    IngestOptions, IngestOutcome, IngestReport, ObjectInput, OpenMode, Rejection, Violation,
};
use ctxgraph_interop::import::{Imported, episodes, markdown, mcp_memory, mem0, predicates_module};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, ImportArgs, ImportCommand};
use crate::output::{print_json, rejection_json};

/// Most notes read from one folder.
const MAX_NOTES: usize = 100_000;

pub(crate) fn run(cli: &Cli, cmd: &ImportCommand) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let (imported, args) = match cmd {
        ImportCommand::McpMemory(a) => {
            let at = match &a.at {
                Some(t) => t.clone(),
                None => chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            };
            (mcp_memory::read(engine.schema(), &read_text(&a.file)?, &at), &a.import)
        }
        ImportCommand::Episodes(a) => {
            (episodes::read(engine.schema(), &read_text(&a.file)?), &a.import)
        }
        ImportCommand::Mem0(a) => (mem0::read(engine.schema(), &read_text(&a.file)?), &a.import),
        ImportCommand::Markdown(a) => (markdown::read(engine.schema(), &notes(&a.dir)?), &a.import),
        ImportCommand::Conversation(_) | ImportCommand::Locomo(_) | ImportCommand::Otlp(_) => {
            bail!("not an import of another memory tool's export")
        }
    };
    apply(cli, engine, &imported, args)
}

fn read_text(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Every Markdown file under `dir`, as (path relative to it with `/`, text).
fn notes(dir: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).with_context(|| format!("reading the folder {}", d.display()))?;
        for entry in entries {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with('.') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let lower = name.to_ascii_lowercase();
            if !(lower.ends_with(".md") || lower.ends_with(".markdown")) {
                continue;
            }
            let rel = path.strip_prefix(dir).unwrap_or(&path);
            let rel: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            out.push((rel.join("/"), read_text(&path)?));
            if out.len() > MAX_NOTES {
                bail!("{} holds more than {MAX_NOTES} notes: import it in parts", dir.display());
            }
        }
    }
    if out.is_empty() {
        bail!("no Markdown notes (.md, .markdown) under {}", dir.display());
    }
    Ok(out)
}

/// Declare the predicates, ingest the events, record the facts, add the documents, report,
/// then enrich.
fn apply(
    cli: &Cli,
    mut engine: Engine,
    imported: &Imported,
    args: &ImportArgs,
) -> anyhow::Result<Outcome> {
    if let Some(whole) = imported.refused.iter().find(|r| r.item == 0) {
        bail!("{} (rule: {})", whole.message, whole.code);
    }
    let started = Instant::now();
    if !imported.predicates.is_empty() {
        engine
            .add_schema_module(&predicates_module(&imported.predicates))
            .context("declaring the imported relation types as predicates")?;
    }
    // An event imported before keeps its record: a source without times (the MCP memory file)
    // would otherwise give the same id another time on every import, a conflict.
    let (mut records, mut before) = (Vec::new(), 0_u64);
    {
        let view = crate::reader(cli, &engine)?;
        for (line, record) in &imported.events {
            let id = record.get("event_id").and_then(Value::as_str).unwrap_or("");
            if view.event(id)?.is_some() {
                before += 1;
            } else {
                records.push((*line, with_names(record)));
            }
        }
    }
    let rejections = imported
        .refused
        .iter()
        .map(|r| Rejection {
            line: r.item,
            id: None,
            code: r.code,
            violations: vec![Violation::with_text(
                r.field.clone(),
                None,
                r.code,
                r.message.clone(),
            )],
        })
        .collect();
    let batch = ImportBatch { records, rejections };
    let mut report = engine.import(&batch, &IngestOptions::default(), &mut |_| {})?;
    report.progress.lines += before;
    report.progress.duplicates += before;

    let (mut facts, mut errors) = ((0_u64, 0_u64), Vec::new());
    for c in &imported.claims {
        let object = match &c.object_type {
            Some(t) => ObjectInput::Entity(EntityInput::typed(&c.object, t)),
            None => ObjectInput::Literal(Value::String(c.object.clone())),
        };
        let mut input =
            FactInput::new(EntityInput::typed(&c.subject, &c.subject_type), &c.predicate, object);
        input.source = Some(c.source.clone());
        match engine.record_fact(&input) {
            Ok(done) => match done.outcome {
                IngestOutcome::New(_) => facts.0 += 1,
                IngestOutcome::Duplicate(_) => facts.1 += 1,
            },
            Err(e) => {
                errors.push(json!({"item": c.item, "code": e.code(), "message": e.to_string()}))
            }
        }
    }
    let mut memories = (0_u64, 0_u64);
    let mut valid = Vec::new();
    for (item, record) in &imported.memories {
        match engine.validate(&record.to_string()) {
            Ok(v) => valid.push(v),
            Err(e) => {
                errors.push(json!({"item": item, "code": e.code(), "message": e.to_string()}))
            }
        }
    }
    if !valid.is_empty() {
        for (outcome, (item, _)) in
            engine.save_memories(&valid)?.into_iter().zip(&imported.memories)
        {
            match outcome {
                Ok(IngestOutcome::New(_)) => memories.0 += 1,
                Ok(IngestOutcome::Duplicate(_)) => memories.1 += 1,
                Err(e) => {
                    errors.push(json!({"item": item, "code": e.code(), "message": e.to_string()}))
                }
            }
        }
    }
    let mut docs = (0_u64, 0_u64);
    for n in &imported.notes {
        let input = DocumentInput {
            url: n.path.clone(),
            text: n.text.clone(),
            format: DocumentFormat::Markdown,
            title: Some(n.title.clone()),
            extract: true,
            ingested_at: None,
        };
        let done = engine
            .add_document(&input)
            .with_context(|| format!("ingesting the note {}", n.path))?;
        match done.outcome {
            IngestOutcome::New(_) => docs.0 += 1,
            IngestOutcome::Duplicate(_) => docs.1 += 1,
        }
    }
    let counts = Counts { facts, memories, docs };
    print_summary(cli, &report, &counts, &errors, started.elapsed().as_secs_f64())?;
    if !args.no_enrich {
        crate::enrich::after_load(&mut engine, cli.json || args.quiet)?;
    }
    let failed = report.progress.rejected > 0 || !errors.is_empty();
    Ok(if failed { Outcome::Failed } else { Outcome::Done })
}

/// An event record that names no entity, with the names its text holds (the same LLM-free
/// extraction as conversation imports), its agent known as a speaker.
fn with_names(record: &Value) -> Value {
    let mut record = record.clone();
    if record.get("entities").is_some() {
        return record;
    }
    let text = record.pointer("/payload/text").and_then(Value::as_str).unwrap_or("");
    let agent = record.get("agent_id").and_then(Value::as_str).unwrap_or("");
    let names: Vec<Value> = ctxgraph::extract_entities(text, &[agent])
        .into_iter()
        .map(|e| json!({"name": e.name, "entity_type": e.entity_type, "role": "object"}))
        .collect();
    if !names.is_empty() {
        record["entities"] = Value::Array(names);
    }
    record
}

/// New and duplicate facts, memories and documents.
struct Counts {
    facts: (u64, u64),
    memories: (u64, u64),
    docs: (u64, u64),
}

fn print_summary(
    cli: &Cli,
    report: &IngestReport,
    counts: &Counts,
    errors: &[Value],
    secs: f64,
) -> anyhow::Result<()> {
    let p = &report.progress;
    let Counts { facts, memories, docs } = counts;
    if cli.json {
        return print_json(&json!({
            "events": {"accepted": p.accepted, "duplicates": p.duplicates, "rejected": p.rejected,
                "rejections": report.rejections.iter().map(rejection_json).collect::<Vec<_>>()},
            "facts": {"accepted": facts.0, "duplicates": facts.1},
            "memories": {"accepted": memories.0, "duplicates": memories.1},
            "documents": {"accepted": docs.0, "duplicates": docs.1},
            "rejected": errors.len(), "rejections": errors,
            "seconds": secs,
        }));
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "events: {} accepted, {} duplicates, {} rejected; facts: {} accepted, {} duplicates; \
         memories: {} accepted, {} duplicates; documents: {} accepted, {} duplicates; \
         {} other records rejected  ({secs:.2}s)",
        p.accepted,
        p.duplicates,
        p.rejected,
        facts.0,
        facts.1,
        memories.0,
        memories.1,
        docs.0,
        docs.1,
        errors.len()
    )?;
    for r in report.rejections.iter().take(20) {
        writeln!(out, "item {}: rejected", r.line)?;
        for v in &r.violations {
            writeln!(out, "  - {v}")?;
        }
    }
    for e in errors.iter().take(20) {
        writeln!(out, "item {}: rejected: {}", e["item"], e["message"].as_str().unwrap_or(""))?;
    }
    Ok(())
}
