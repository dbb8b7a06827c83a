//! `export`, `backup` and `restore`: the graph and the log out in other formats, a live copy
//! of a store, and a store rebuilt from either.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use ctxgraph::access::{ExportFilter, ExportItem};
use ctxgraph::{EngineOptions, IngestOptions, OpenMode};
use ctxgraph_interop::export::{GraphWriter, cypher, graphml, prov};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, ExportArgs, ExportFormat};
use crate::output::print_json;

/// Log records read per page.
const LOG_PAGE: usize = 1000;
/// The first bytes of every SQLite file, so of every store and backup.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

pub(crate) fn export(cli: &Cli, args: &ExportArgs) -> anyhow::Result<Outcome> {
    let filter = ExportFilter {
        session: args.session.clone(),
        trace: args.trace.clone(),
        since_ns: args.since.as_deref().map(crate::memory::time_ns).transpose()?,
        until_ns: args.until.as_deref().map(crate::memory::time_ns).transpose()?,
    };
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let view = crate::reader(cli, &engine)?;
    let mut sink: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(BufWriter::new(
            File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let written =
        write_export(args, &filter, &view, view.schema(), &mut sink).and_then(|summary| {
            sink.flush()?;
            Ok(summary)
        });
    drop(sink);
    let mut summary = match (written, &args.output) {
        (Ok(summary), _) => summary,
        (Err(e), Some(path)) => {
            // Leave no half export under the name asked for.
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    };
    summary["format"] = format_name(args.format).into();
    // The summary goes to stdout only when the export did not.
    if let Some(path) = &args.output {
        if cli.json {
            print_json(&summary)?;
        } else {
            let what = match (summary.get("records"), summary.get("nodes")) {
                (Some(r), _) => format!("{r} log records"),
                (None, Some(n)) => format!("{n} nodes and {} edges", summary["edges"]),
                (None, None) => String::new(),
            };
            println!("exported {what} as {} to {}", format_name(args.format), path.display());
        }
    }
    Ok(Outcome::Done)
}

/// Write the export into `sink`; returns its counts.
fn write_export(
    args: &ExportArgs,
    filter: &ExportFilter,
    view: &ctxgraph::Reader<'_>,
    schema: &ctxgraph::Schema,
    mut sink: &mut dyn Write,
) -> anyhow::Result<Value> {
    Ok(match args.format {
        ExportFormat::Jsonl => {
            let (mut from, mut records) = (1, 0_u64);
            loop {
                let (entries, next) = view.export_log(from, LOG_PAGE, filter)?;
                for e in &entries {
                    sink.write_all(e.body.as_bytes())?;
                    sink.write_all(b"\n")?;
                    records += 1;
                }
                if next == from {
                    break;
                }
                from = next;
            }
            json!({"records": records})
        }
        ExportFormat::ProvTtl => {
            stream(view, filter, &mut prov::Writer::new(schema, &mut sink, prov::Syntax::Turtle)?)?
        }
        ExportFormat::ProvJsonld => {
            stream(view, filter, &mut prov::Writer::new(schema, &mut sink, prov::Syntax::JsonLd)?)?
        }
        ExportFormat::Cypher => stream(view, filter, &mut cypher::Writer::new(schema, &mut sink)?)?,
        ExportFormat::Graphml => {
            stream(view, filter, &mut graphml::Writer::new(schema, &mut sink)?)?
        }
    })
}

/// The graph (or the part the filter selects) as the principal sees it, item by item through
/// `writer`, then the document's end; returns the counts.
fn stream(
    view: &ctxgraph::Reader<'_>,
    filter: &ExportFilter,
    writer: &mut dyn GraphWriter,
) -> anyhow::Result<Value> {
    let (nodes, edges) = view.export_each(filter, &mut |item| -> anyhow::Result<()> {
        match &item {
            ExportItem::Node(n) => writer.node(n)?,
            ExportItem::Edge(e) => writer.edge(e)?,
        }
        Ok(())
    })?;
    writer.end()?;
    Ok(json!({"nodes": nodes, "edges": edges}))
}

fn format_name(f: ExportFormat) -> &'static str {
    match f {
        ExportFormat::ProvTtl => "prov-ttl",
        ExportFormat::ProvJsonld => "prov-jsonld",
        ExportFormat::Cypher => "cypher",
        ExportFormat::Graphml => "graphml",
        ExportFormat::Jsonl => "jsonl",
    }
}

pub(crate) fn backup(cli: &Cli, file: &Path) -> anyhow::Result<Outcome> {
    if let Some(url) = crate::scale_out::store_url(cli)? {
        return crate::scale_out::admin::backup(cli, &url, file);
    }
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let started = Instant::now();
    engine
        .backup(file)
        .with_context(|| format!("backing up {} to {}", cli.db.display(), file.display()))?;
    let bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    let secs = started.elapsed().as_secs_f64();
    if cli.json {
        print_json(&json!({"backup": file, "bytes": bytes, "seconds": secs}))?;
    } else {
        println!(
            "backed up {} to {} ({bytes} bytes) in {secs:.2}s",
            cli.db.display(),
            file.display()
        );
    }
    Ok(Outcome::Done)
}

pub(crate) fn restore(cli: &Cli, from: &Path) -> anyhow::Result<Outcome> {
    if let Some(url) = crate::scale_out::store_url(cli)? {
        return crate::scale_out::admin::restore(cli, &url, from);
    }
    if cli.db.exists() {
        bail!(
            "{} exists: restore builds a new store; pass --db with a path that does not exist",
            cli.db.display()
        );
    }
    let mut head = [0_u8; 16];
    let n = File::open(from)
        .and_then(|mut f| f.read(&mut head))
        .with_context(|| format!("reading {}", from.display()))?;
    let started = Instant::now();
    if n == head.len() && &head == SQLITE_MAGIC {
        std::fs::copy(from, &cli.db)
            .with_context(|| format!("copying {} to {}", from.display(), cli.db.display()))?;
        // Opening checks that it is a store (and migrates an older format).
        let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default());
        if let Err(e) = engine {
            let _ = std::fs::remove_file(&cli.db);
            return Err(e.context(format!("{} is not a ctxgraph backup", from.display())));
        }
        let secs = started.elapsed().as_secs_f64();
        if cli.json {
            print_json(
                &json!({"restored": cli.db, "from": from, "kind": "backup", "seconds": secs}),
            )?;
        } else {
            println!(
                "restored {} from the backup {} in {secs:.2}s",
                cli.db.display(),
                from.display()
            );
        }
        return Ok(Outcome::Done);
    }
    let file = File::open(from).with_context(|| format!("opening {}", from.display()))?;
    let mut engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let report = engine.ingest_jsonl(
        BufReader::with_capacity(1 << 20, file),
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    crate::enrich::with_progress(&mut engine, true)?;
    // The derived layers (summaries, the vector index, SIMILAR_TO, entity candidates) are a
    // function of the log: rebuild them as `consolidate` does.
    engine.consolidate()?;
    let secs = started.elapsed().as_secs_f64();
    let p = &report.progress;
    if cli.json {
        print_json(&json!({"restored": cli.db, "from": from, "kind": "log",
            "accepted": p.accepted, "duplicates": p.duplicates, "rejected": p.rejected, "seconds": secs}))?;
    } else {
        println!(
            "restored {} from the log {}: {} records, {} duplicates, {} rejected, in {secs:.2}s",
            cli.db.display(),
            from.display(),
            p.accepted,
            p.duplicates,
            p.rejected
        );
        for r in report.rejections.iter().take(10) {
            println!("  line {}: {}", r.line, r.code);
        }
    }
    Ok(if p.rejected == 0 { Outcome::Done } else { Outcome::Failed })
}
