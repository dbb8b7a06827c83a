//! `ctxgraph import conversation|locomo`: conversations in, one event per message, with the
//! same summary, exit codes and enrichment as `ingest`.

use std::io::{Read, Write};
use std::time::Instant;

use anyhow::Context;
use ctxgraph::{
    EngineOptions, ImportBatch, IngestOptions, Limits, OpenMode, locomo_conversations,
    parse_messages,
};

use crate::Outcome;
use crate::args::{Cli, ConversationArgs, ImportArgs, ImportCommand, LocomoArgs};

pub(crate) fn run(cli: &Cli, cmd: &ImportCommand) -> anyhow::Result<Outcome> {
    match cmd {
        ImportCommand::Conversation(args) => conversation(cli, args),
        ImportCommand::Locomo(args) => locomo(cli, args),
    }
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
                "{}: {} and {}, {} turns in {} sessions ({} questions and the annotations are not imported)",
                c.sample_id,
                c.speakers[0],
                c.speakers[1],
                c.records.len(),
                c.sessions,
                c.questions.len()
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
    let mut engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
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
