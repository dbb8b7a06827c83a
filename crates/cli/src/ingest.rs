//! `ctxgraph ingest`: JSONL in, a summary of accepted, duplicate and rejected records out.

use std::fs::File;
use std::io::{BufReader, Write};
use std::time::Instant;

use anyhow::Context;
use ctxgraph::{EngineOptions, IngestOptions, IngestProgress, IngestReport, Limits, OpenMode};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use crate::Outcome;
use crate::args::{Cli, IngestArgs};
use crate::output::{count, print_json, rejection_json};

/// Rejections printed in the human summary; `--json` lists every kept one.
const SHOWN_REJECTIONS: usize = 20;

/// A progress bar on stderr, hidden when stderr is not a terminal or output is JSON.
pub(crate) fn progress_bar(total: u64, unit: &str, hidden: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if hidden {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    // Bytes read as KiB/MiB, and any rate as a whole number per second (not `5,067,865.9154/s`).
    let template = if unit == "bytes" {
        "{bar:40} {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, eta {eta})"
            .to_owned()
    } else {
        format!("{{bar:40}} {{human_pos}}/{{human_len}} {unit} ({{rate}}, eta {{eta}})")
    };
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            },
        ));
    }
    bar
}

pub(crate) fn run(cli: &Cli, args: &IngestArgs) -> anyhow::Result<Outcome> {
    let limits = Limits {
        max_record_bytes: args.max_record_bytes,
        max_entities: args.max_entities,
        ..Limits::default()
    };
    let options = EngineOptions { limits, ..EngineOptions::default() };
    // The input is opened first: a file that cannot be read leaves no store behind.
    let input = if args.file.as_os_str() == "-" {
        None
    } else {
        Some(File::open(&args.file).with_context(|| format!("opening {}", args.file.display()))?)
    };
    let remote = crate::scale_out::store_url(cli)?.is_some();
    let created = !remote && !cli.db.exists();
    let mut engine = crate::open(cli, OpenMode::CreateIfMissing, options)?;
    let options = IngestOptions {
        strict: args.strict,
        batch_size: args.batch_size.max(1),
        ..IngestOptions::default()
    };
    let started = Instant::now();
    let acks = args.progress_json;
    let ack = |p: &IngestProgress| {
        if acks {
            let line = json!({"lines": p.lines, "accepted": p.accepted, "duplicates": p.duplicates,
                "rejected": p.rejected, "last_position": p.last_position});
            // A closed stderr must not stop an ingestion that is otherwise fine.
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    };
    let report = if let Some(file) = input {
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let bar = progress_bar(size, "bytes", cli.json || args.quiet || acks);
        let report =
            engine.ingest_jsonl(BufReader::with_capacity(1 << 20, file), &options, &mut |p| {
                bar.set_position(p.bytes);
                ack(p);
            })?;
        bar.finish_and_clear();
        report
    } else {
        let stdin = std::io::stdin().lock();
        engine.ingest_jsonl(stdin, &options, &mut |p| ack(p))?
    };
    let secs = started.elapsed().as_secs_f64();
    if created && report.progress.accepted == 0 {
        // Nothing was written: the store this command created would only be an empty file to
        // mistake for data. Removed unless something else wrote to it meanwhile.
        if engine.owner_reader()?.checkpoints()?.log_length == 0 {
            drop(engine);
            remove_store(&cli.db);
            print_report(cli, &report, secs)?;
            return Ok(if report.progress.rejected == 0 { Outcome::Done } else { Outcome::Failed });
        }
    }
    print_report(cli, &report, secs)?;
    if remote {
        // The store's workers fold what was appended, then enrich and consolidate it.
        if !(cli.json || args.quiet || acks) && report.accepted > 0 {
            eprintln!(
                "appended to {}: its workers fold the records (`ctxgraph worker`), and reads \
                 see them once `stats` shows projected_through at their positions",
                cli.db.display()
            );
        }
    } else if !args.no_enrich {
        // Behind the acknowledgement: records are durable before enrichment starts.
        crate::enrich::after_load(&mut engine, cli.json || args.quiet || acks)?;
    }
    Ok(if report.progress.rejected == 0 { Outcome::Done } else { Outcome::Failed })
}

/// Remove a store file with its write-ahead log and shared-memory files; what cannot be
/// removed is left (the store is empty either way).
fn remove_store(db: &std::path::Path) {
    for suffix in ["-wal", "-shm", ""] {
        let mut path = db.as_os_str().to_owned();
        path.push(suffix);
        let _ = std::fs::remove_file(path);
    }
}

/// Print an ingestion summary (shared with `demo`).
pub(crate) fn print_report(cli: &Cli, report: &IngestReport, secs: f64) -> anyhow::Result<()> {
    let p = &report.progress;
    if cli.json {
        return print_json(&json!({
            "lines": p.lines, "accepted": p.accepted, "duplicates": p.duplicates, "rejected": p.rejected,
            "stopped_at_first_error": report.stopped,
            "positions": report.positions.map(|(a, b)| json!({"first": a, "last": b})),
            "seconds": secs,
            "rejections": report.rejections.iter().map(rejection_json).collect::<Vec<_>>(),
        }));
    }
    let mut out = std::io::stdout().lock();
    let rate = if secs > 0.0 { p.lines as f64 / secs } else { 0.0 };
    writeln!(
        out,
        "{}: {} accepted, {}, {} rejected  ({secs:.2}s, {rate:.0} lines/s)",
        count(p.lines, "line", "lines"),
        p.accepted,
        count(p.duplicates, "duplicate", "duplicates"),
        p.rejected
    )?;
    if let Some((a, b)) = report.positions {
        writeln!(out, "new records at log positions {a}..={b}, durable")?;
    }
    for r in report.rejections.iter().take(SHOWN_REJECTIONS) {
        let id = r.id.as_deref().map(|i| format!(" ({i})")).unwrap_or_default();
        writeln!(out, "line {}{id}: rejected", r.line)?;
        for v in &r.violations {
            writeln!(out, "  - {v}")?;
        }
    }
    if p.rejected as usize > SHOWN_REJECTIONS {
        writeln!(
            out,
            "... and {} more rejected lines (use --json to list them)",
            p.rejected as usize - SHOWN_REJECTIONS
        )?;
    }
    if report.stopped {
        writeln!(
            out,
            "stopped at the first bad record (--strict): it and the lines after it were not written"
        )?;
    }
    Ok(())
}
