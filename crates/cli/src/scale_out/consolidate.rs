//! `ctxgraph worker --stage consolidate`: stage 3 on a scale-out store, run again whenever
//! stage 2 has moved past the position the last consolidation covered.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ctxgraph::EngineOptions;
use ctxgraph_scaleout::{FalkorGraph, StoreUrl};
use ctxgraph_store::GraphReader;
use serde_json::json;

use crate::Outcome;
use crate::args::{Cli, WorkerArgs};
use crate::output::print_json;

/// How a consolidation worker stands: the stage-2 checkpoint, and the one the last
/// consolidation covered.
fn positions(graph: &FalkorGraph) -> anyhow::Result<(u64, u64)> {
    Ok((GraphReader::enriched_through(graph)?, graph.consolidated_through()?))
}

/// Consolidate `url` each time stage 2 moves on, until Ctrl-C or SIGTERM (or, with `--once`,
/// after one look). A consolidation over a graph that moved meanwhile applies nothing and the
/// engine runs it again, so several of these workers never apply one twice over.
pub(crate) fn consolidate_worker(
    cli: &Cli,
    args: &WorkerArgs,
    url: &StoreUrl,
    name: &str,
) -> anyhow::Result<Outcome> {
    // Before any connection: the threads started from here on keep the signals off too.
    let stop = super::stop_on_signal()?;
    let graph = FalkorGraph::connect_read(url)?;
    if !cli.json {
        eprintln!("worker {name} consolidating {url}; Ctrl-C stops it");
    }
    let started = Instant::now();
    let (mut runs, mut rounds) = (0u64, 0u64);
    let mut last = None;
    while !stop.load(Ordering::SeqCst) {
        let (enriched, consolidated) = positions(&graph)?;
        rounds += 1;
        // Nothing enriched yet, or nothing new since the last consolidation.
        if enriched > consolidated {
            // A schema module may have come since: the engine reads them when it opens.
            let mut engine = crate::backend::open_remote(url, EngineOptions::default())?;
            let report = engine.consolidate()?;
            runs += 1;
            if !cli.json {
                eprintln!(
                    "consolidated through {enriched}: {} session and {} day summaries, {} \
                     vectors indexed, {} SIMILAR_TO edges",
                    report.sessions, report.days, report.indexed_vectors, report.similar_edges
                );
            }
            last = Some(report);
        }
        if args.once {
            break;
        }
        if enriched <= consolidated {
            for _ in 0..10 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    let (enriched, consolidated) = positions(&graph)?;
    let secs = started.elapsed().as_secs_f64();
    if cli.json {
        print_json(&json!({
            "name": name, "stage": "consolidate", "consolidations": runs, "rounds": rounds,
            "seconds": secs, "enriched_through": enriched, "consolidated_through": consolidated,
            "summaries": last.as_ref().map(|r| r.sessions + r.days),
            "similar_edges": last.as_ref().map(|r| r.similar_edges),
            "indexed_vectors": last.as_ref().map(|r| r.indexed_vectors),
            "stopped_by_signal": stop.load(Ordering::SeqCst),
        }))?;
    } else {
        println!(
            "worker {name}: {runs} consolidations in {secs:.1} s; consolidated through \
             {consolidated} of enriched through {enriched}"
        );
    }
    Ok(Outcome::Done)
}
