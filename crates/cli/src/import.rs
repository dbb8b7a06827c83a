//! `ctxgraph import conversation|locomo|otlp`: conversations in, one event per message, or an
//! OpenTelemetry trace export in, one event per span; with the same summary, exit codes and
//! enrichment as `ingest`.

use std::io::{Read, Write};
use std::time::Instant;

use anyhow::Context;
use ctxgraph::{
    Engine, EngineOptions, ImportBatch, IngestOptions, Limits, OpenMode, Rejection, Violation,
    locomo_conversations, parse_messages,
};
use ctxgraph_otlp::{Encoding, OtlpError};

use crate::Outcome;
use crate::args::{
    Cli, ConversationArgs, ImportArgs, ImportCommand, LocomoArgs, OtlpArgs, OtlpFormat,
};

pub(crate) fn run(cli: &Cli, cmd: &ImportCommand) -> anyhow::Result<Outcome> {
    match cmd {
        ImportCommand::Conversation(args) => conversation(cli, args),
        ImportCommand::Locomo(args) => locomo(cli, args),
        ImportCommand::Otlp(args) => otlp(cli, args),
        ImportCommand::McpMemory(_)
        | ImportCommand::Episodes(_)
        | ImportCommand::Mem0(_)
        | ImportCommand::Markdown(_) => crate::import_tools::run(cli, cmd),
    }
}

fn otlp(cli: &Cli, args: &OtlpArgs) -> anyhow::Result<Outcome> {
    let encoding = match args.format {
        Some(OtlpFormat::Json) => Encoding::Json,
        Some(OtlpFormat::Protobuf) => Encoding::Protobuf,
        None => match args.file.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("json") => Encoding::Json,
            Some(e) if e.eq_ignore_ascii_case("pb") => Encoding::Protobuf,
            _ => anyhow::bail!(
                "cannot tell the encoding of {} from its name: pass --format json or --format protobuf",
                args.file.display()
            ),
        },
    };
    let body =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    // Decode before opening the store: a body that is not an export request changes nothing.
    let request = ctxgraph_otlp::decode_request(&body, encoding)
        .with_context(|| format!("reading an OTLP export request from {}", args.file.display()))?;
    let engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    // The store's schema, with its extension modules: their OTel operations map too.
    let conversion = ctxgraph_otlp::convert(&request, engine.schema());
    let to_line = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let batch = ImportBatch {
        records: conversion.records.into_iter().map(|(n, r)| (to_line(n), r)).collect(),
        rejections: conversion
            .refused
            .into_iter()
            .map(|(n, e)| span_rejection(to_line(n), &e))
            .collect(),
    };
    import_into(cli, engine, &batch, &args.import, false)
}

/// A refused span as a report line: its number, and the field, value and rule.
fn span_rejection(line: u64, e: &OtlpError) -> Rejection {
    // Conversion refuses spans only with `OtlpError::Span`; anything else is reported whole.
    let violation = if let OtlpError::Span { at, field, value, rule } = e {
        Violation::with_text(field.clone(), Some(value), e.code(), format!("{rule} ({at})"))
    } else {
        Violation::with_text("$", None, e.code(), e.to_string())
    };
    Rejection { line, id: None, code: e.code(), violations: vec![violation] }
}

fn conversation(cli: &Cli, args: &ConversationArgs) -> anyhow::Result<Outcome> {
    let input = if args.file.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().lock().read_to_end(&mut buf).context("reading standard input")?;
        buf
    } else {
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?
    };
    let batch = parse_messages(&input, &Limits::default());
    import(cli, &batch, &args.import, args.strict)
}

fn locomo(cli: &Cli, args: &LocomoArgs) -> anyhow::Result<Outcome> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let mut conversations = locomo_conversations(&text)
        .with_context(|| format!("reading LoCoMo conversations from {}", args.file.display()))?;
    if !args.samples.is_empty() {
        for wanted in &args.samples {
            if !conversations.iter().any(|c| &c.sample_id == wanted) {
                let known: Vec<&str> = conversations.iter().map(|c| c.sample_id.as_str()).collect();
                anyhow::bail!(
                    "no conversation `{wanted}` in {} (it has {})",
                    args.file.display(),
                    known.join(", ")
                );
            }
        }
        conversations.retain(|c| args.samples.contains(&c.sample_id));
    }
    if !(cli.json || args.import.quiet) {
        let mut out = std::io::stdout().lock();
        for c in &conversations {
            writeln!(
                out,
                "{}: {} and {}, {} in {} ({} and the annotations are not imported)",
                c.sample_id,
                c.speakers[0],
                c.speakers[1],
                crate::output::count(c.records.len() as u64, "turn", "turns"),
                crate::output::count(c.sessions as u64, "session", "sessions"),
                crate::output::count(c.questions.len() as u64, "question", "questions")
            )?;
        }
    }
    let batch = ImportBatch::from_records(conversations.into_iter().flat_map(|c| c.records));
    import(cli, &batch, &args.import, false)
}

/// Ingest the batch, print the summary like `ingest`, then enrich.
fn import(
    cli: &Cli,
    batch: &ImportBatch,
    args: &ImportArgs,
    strict: bool,
) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    import_into(cli, engine, batch, args, strict)
}

/// [`import`] into an open store.
fn import_into(
    cli: &Cli,
    mut engine: Engine,
    batch: &ImportBatch,
    args: &ImportArgs,
    strict: bool,
) -> anyhow::Result<Outcome> {
    let options = IngestOptions { strict, ..IngestOptions::default() };
    let quiet = cli.json || args.quiet;
    let started = Instant::now();
    let bar = crate::ingest::progress_bar(batch.records.len() as u64, "messages", quiet);
    let report = engine.import(batch, &options, &mut |p| {
        bar.set_position(p.accepted + p.duplicates + p.rejected);
    })?;
    bar.finish_and_clear();
    crate::ingest::print_report(cli, &report, started.elapsed().as_secs_f64())?;
    // Behind the acknowledgement: messages are durable before enrichment starts.
    if !args.no_enrich {
        crate::enrich::after_load(&mut engine, quiet)?;
    }
    Ok(if report.progress.rejected == 0 { Outcome::Done } else { Outcome::Failed })
}
