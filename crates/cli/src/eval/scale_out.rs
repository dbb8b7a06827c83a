//! `eval locomo --db redis://HOST:PORT/NAME` and `eval traces --db redis://HOST:PORT/NAME`:
//! each conversation (or the trace) in a new scale-out store `NAME-i`, its later stages run in
//! this process as the workers run them (fold to the log's head, enrich, consolidate), so the
//! scores compare with a store file's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ctxgraph::{Engine, EngineOptions};
use ctxgraph_scaleout::{FalkorGraph, RedisLog, StoreUrl, catch_up, load_schema};

/// The engine on the new store `NAME-index` named after `base`; a store whose log is not empty
/// is refused (the evaluation writes to new stores only).
pub(crate) fn fresh(
    base: &StoreUrl,
    index: usize,
    options: EngineOptions,
) -> anyhow::Result<(StoreUrl, Engine)> {
    let name = format!("{}-{index}", base.name());
    let url = base.with_name(&name).map_err(|e| anyhow::anyhow!("eval: --db: {e}"))?;
    crate::scale_out::refuse_taken(
        &url,
        "eval: store",
        "the evaluation writes each conversation to a new store named after --db; choose \
         another NAME (rule: eval.target_not_empty)",
    )?;
    Ok((url.clone(), crate::backend::open_remote(&url, options)?))
}

/// Every stage after ingest, as the workers run them: fold the log into the graph to its head,
/// enrich, consolidate.
pub(crate) fn settle(engine: &mut Engine) -> anyhow::Result<()> {
    engine.catch_up(&mut |_, _| {})?;
    engine.enrich(&mut |_, _| {})?;
    engine.consolidate()?;
    Ok(())
}

/// Run `write` while a projection worker folds `url` on another thread of this process, as
/// a worker beside the writer would: the engine's knowledge writes wait for the fold of what
/// they append, and their checks read what the writes before them made.
pub(crate) fn with_folding<T>(
    url: &StoreUrl,
    write: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let worker = s.spawn(|| -> anyhow::Result<()> {
            let log = RedisLog::connect(url)?;
            let schema = load_schema(&log)?;
            let graph = FalkorGraph::connect(url, &schema)?;
            while !stop.load(Ordering::SeqCst) {
                if catch_up(&schema, &log, &graph, usize::MAX)? == 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            Ok(())
        });
        let written = write();
        stop.store(true, Ordering::SeqCst);
        let folded = worker.join().map_err(|_| anyhow::anyhow!("the folding thread panicked"))?;
        // The writes' own error first: a fold that failed made them wait, not fail.
        let written = written?;
        folded?;
        Ok(written)
    })
}
