//! `ctxgraph bench forget`: the time to forget 1, 10 and 100 events (each batch in one call)
//! in a consolidated synthetic store, by phase.

use std::io::Write;
use std::time::Instant;

use anyhow::Context;
use ctxgraph::{Engine, EngineOptions, ForgetKind, ForgetTarget, ForgetTimings, OpenMode};
use serde_json::{Value, json};

use super::{Place, build_consolidated, synthetic_jsonl, temp_dir};
use crate::Outcome;
use crate::output::{bytes, print_json, table};

/// Events forgotten per call, one call each.
const BATCHES: [usize; 3] = [1, 10, 100];

pub(crate) fn forget(events: usize, place: Place<'_>, json: bool) -> anyhow::Result<Outcome> {
    let tmp = temp_dir(match place {
        Place::Temp(dir) => dir,
        Place::Keep(_) => None,
    })?;
    let jsonl = synthetic_jsonl(events);
    let built = match place {
        Place::Keep(path) => path.to_path_buf(),
        Place::Temp(_) => tmp.path().join("built.ctxg"),
    };
    if built.exists() {
        eprintln!("reusing the store at {}", built.display());
    } else {
        build_consolidated(&built, &jsonl)?;
    }
    // Forgetting changes the store: work on a copy, so a kept store can be used again.
    let path = tmp.path().join("forget.ctxg");
    std::fs::copy(&built, &path)
        .with_context(|| format!("copying {} to {}", built.display(), path.display()))?;
    let ids: Vec<String> = jsonl
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("event_id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    drop(jsonl);
    let wanted: usize = BATCHES.iter().sum();
    anyhow::ensure!(ids.len() >= wanted, "the store has {} events, fewer than {wanted}", ids.len());
    // Events spread over the whole store, distinct across the batches.
    let stride = ids.len() / wanted;
    let mut picked = ids.iter().step_by(stride.max(1));
    let mut engine = Engine::open(&path, OpenMode::MustExist, EngineOptions::default())?;
    let size = engine.size_on_disk();
    let mut rows = Vec::new();
    for n in BATCHES {
        let targets: Vec<ForgetTarget> = picked
            .by_ref()
            .take(n)
            .map(|id| ForgetTarget { kind: ForgetKind::Event, id: id.clone() })
            .collect();
        eprintln!("forgetting {n} events ...");
        let started = Instant::now();
        let (reports, timings) = engine.forget_many_timed(&targets, "bench", None)?;
        let secs = started.elapsed().as_secs_f64();
        anyhow::ensure!(reports.len() == n, "{} of {n} events forgotten", reports.len());
        rows.push((n, secs, timings));
    }
    if json {
        let rows: Vec<Value> = rows
            .iter()
            .map(|(n, secs, t)| {
                json!({"events": n, "seconds": secs, "ms_per_event": secs * 1000.0 / *n as f64,
                    "phases_ms": phases(t).iter().map(|(k, v)| ((*k).to_owned(), json!(v)))
                        .collect::<serde_json::Map<_, _>>()})
            })
            .collect();
        print_json(&json!({"store_events": events, "store_bytes": size, "batches": rows}))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ctxgraph bench forget: {events}-event consolidated store ({}), one call per batch",
        bytes(size)
    )?;
    let mut header = vec!["events", "total", "per event"];
    header.extend(phases(&ForgetTimings::default()).iter().map(|(k, _)| *k));
    let mut t = table(&header);
    for (n, secs, timings) in &rows {
        let mut row = vec![
            n.to_string(),
            format!("{secs:.2} s"),
            format!("{:.0} ms", secs * 1000.0 / *n as f64),
        ];
        row.extend(phases(timings).iter().map(|(_, ms)| format!("{ms:.0} ms")));
        t.add_row(row);
    }
    writeln!(out, "{t}")?;
    Ok(Outcome::Done)
}

/// Each phase's time in milliseconds, in order.
fn phases(t: &ForgetTimings) -> [(&'static str, f64); 6] {
    let ms = |us: u64| us as f64 / 1000.0;
    [
        ("records", ms(t.records_us)),
        ("vectors", ms(t.vectors_us)),
        ("full-text merge", ms(t.full_text_us)),
        ("lexical", ms(t.lexical_us)),
        ("commit", ms(t.commit_us)),
        ("vacuum", ms(t.vacuum_us)),
    ]
}
