//! `init`, `backup` and `restore` on a scale-out store (`--db redis://HOST:PORT/NAME`): `init`
//! checks that the server answers and says what the store holds (a scale-out store's keys are
//! made by its first write, so there is nothing to create); `backup` writes a store file from
//! its log (`migrate`'s way back); `restore` fills an empty scale-out store from a backup (its
//! log copied as `migrate` copies it) or an exported log (ingested), then folds, enriches and
//! consolidates it in this process, as its workers would.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use ctxgraph::{Engine, EngineOptions, IngestOptions, OpenMode};
use ctxgraph_scaleout::{RedisLog, ScaleOutStore, StoreUrl};
use ctxgraph_store::RemoteStore;
use serde_json::json;

use crate::Outcome;
use crate::args::Cli;
use crate::output::print_json;

/// The first bytes of every SQLite file, so of every store and backup.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// `ctxgraph --db redis://… init`: the server answers, and the store is new or holds records.
pub(crate) fn init(cli: &Cli, url: &StoreUrl) -> anyhow::Result<Outcome> {
    let store = ScaleOutStore::connect(url).with_context(|| format!("connecting to {url}"))?;
    let (records, through) = {
        let read = store.begin_read()?;
        (read.head()?, read.projected_through()?)
    };
    if cli.json {
        print_json(&json!({"db": url.to_string(), "created": false, "backend": "scale-out",
            "records": records, "projected_through": through}))?;
    } else if records == 0 {
        println!(
            "{url} answers and the store is empty: nothing to create (its keys are made by its \
             first write; `ingest` appends, `ctxgraph worker` folds)"
        );
    } else {
        println!(
            "{url} is already a ctxgraph store ({records} records, its graph projected through \
             position {through})"
        );
    }
    Ok(Outcome::Done)
}

/// `ctxgraph --db redis://… backup FILE`: the store's log copied into a new store file, which
/// is then projected, enriched and consolidated (a backup holds what the log makes).
pub(crate) fn backup(cli: &Cli, url: &StoreUrl, file: &Path) -> anyhow::Result<Outcome> {
    if file.exists() {
        bail!(
            "backup: `{}` exists: a backup is written to a new file; pass a path that does not \
             exist (rule: backup.target_exists)",
            file.display()
        );
    }
    let started = Instant::now();
    let (copied, _, _, engine) = super::copy_back(cli, url, file)?;
    engine.checkpoint()?;
    drop(engine);
    let bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    let secs = started.elapsed().as_secs_f64();
    if cli.json {
        print_json(&json!({"backup": file, "bytes": bytes, "records": copied, "seconds": secs}))?;
    } else {
        println!(
            "backed up {url} ({copied} records) to {} ({bytes} bytes) in {secs:.2}s",
            file.display()
        );
    }
    Ok(Outcome::Done)
}

/// `ctxgraph --db redis://… restore FROM`: an empty scale-out store filled from a backup or an
/// exported log, then folded, enriched and consolidated.
pub(crate) fn restore(cli: &Cli, url: &StoreUrl, from: &Path) -> anyhow::Result<Outcome> {
    let mut head = [0_u8; 16];
    let n = File::open(from)
        .and_then(|mut f| f.read(&mut head))
        .with_context(|| format!("reading {}", from.display()))?;
    let mut log = RedisLog::connect(url).with_context(|| format!("connecting to {url}"))?;
    super::refuse_taken(
        url,
        "restore: --db",
        "restore builds a new store; pass --db naming an empty scale-out store \
         (rule: restore.target_not_empty)",
    )?;
    let started = Instant::now();
    let backup = n == head.len() && &head == SQLITE_MAGIC;
    let (kind, report) = if backup {
        // Opened from a copy: opening may bring an older format up to date, and the backup
        // stays as it was.
        let dir = tempfile::tempdir().context("making a temporary directory")?;
        let copy = dir.path().join("backup.ctxg");
        std::fs::copy(from, &copy)
            .with_context(|| format!("copying {} to {}", from.display(), copy.display()))?;
        let engine = Engine::open(&copy, OpenMode::MustExist, EngineOptions::default())
            .with_context(|| format!("{} is not a ctxgraph backup", from.display()))?;
        let copied = super::copy_log_to(cli, &engine, from, &mut log)?;
        ("backup", json!({"records": copied}))
    } else {
        let file = File::open(from).with_context(|| format!("opening {}", from.display()))?;
        let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
        let report = engine.ingest_jsonl(
            BufReader::with_capacity(1 << 20, file),
            &IngestOptions::default(),
            &mut |_| {},
        )?;
        let p = &report.progress;
        ("log", json!({"accepted": p.accepted, "duplicates": p.duplicates, "rejected": p.rejected}))
    };
    // Opened again, the engine loads the schema modules the log now holds; then what the
    // workers would do, here.
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let folded = engine.catch_up(&mut |_, _| {})?;
    crate::enrich::with_progress(&mut engine, true)?;
    engine.consolidate()?;
    let secs = started.elapsed().as_secs_f64();
    let rejected = report["rejected"].as_u64().unwrap_or(0);
    if cli.json {
        let mut out = json!({"restored": url.to_string(), "from": from, "kind": kind,
            "projected_through": folded.position, "seconds": secs});
        if let (Some(out), Some(counts)) = (out.as_object_mut(), report.as_object()) {
            out.extend(counts.clone());
        }
        print_json(&out)?;
    } else {
        println!(
            "restored {url} from the {kind} {}: {report}, folded, enriched and consolidated \
             through log position {} in {secs:.2}s",
            from.display(),
            folded.position
        );
    }
    Ok(if rejected == 0 { Outcome::Done } else { Outcome::Failed })
}
