//! The `ctxgraph` binary: argument parsing, dispatch and exit codes.

mod access;
mod args;
mod backend;
mod bench;
mod chain;
mod config;
mod demo;
mod enrich;
mod entities;
mod eval;
mod forget;
mod import;
mod import_tools;
mod ingest;
mod interop;
mod knowledge;
mod memory;
mod names;
mod output;
mod read;
mod recall;
mod receipt;
mod scale_out;
mod schema;
mod serve;
mod slots;

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ctxgraph::{EmbedderChoice, Engine, EngineOptions, OpenMode};

use crate::args::{BenchCommand, Cli, Command, EvalCommand};

/// How a successful command ended.
pub(crate) enum Outcome {
    /// Exit 0.
    Done,
    /// Exit 1: the query ran and found nothing.
    NotFound,
    /// Exit 2 without an error message of its own (the command already explained).
    Failed,
}

/// jemalloc for every Rust allocation (SQLite's own still go to the C library's `malloc`).
///
/// glibc's allocator was a quarter to a third of a loaded server's CPU (`malloc_consolidate`,
/// `unlink_chunk`, arena locks that the writer waited on behind readers of lower priority), and
/// of a bulk load's and a projection worker's; with jemalloc's thread caches a server under 64
/// clients answered 1.6 times the requests at four fifths of the CPU per request, and a bulk
/// load took a seventh less CPU (`docs/benchmarks.md`). Unused pages go back to the system after
/// jemalloc's decay time (10 s); `_RJEM_MALLOC_CONF` tunes it.
#[cfg(unix)]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::NotFound) => ExitCode::from(1),
        Ok(Outcome::Failed) => ExitCode::from(2),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    // A JSON printer reports the pipe closing as its own error, wrapping the io error.
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().map(std::io::Error::kind).or_else(|| {
            c.downcast_ref::<serde_json::Error>().and_then(serde_json::Error::io_error_kind)
        }) == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// Open the store named by `--db`, with the embedder chosen by `--embed-url` or `--embed-minilm`.
pub(crate) fn open(cli: &Cli, mode: OpenMode, options: EngineOptions) -> anyhow::Result<Engine> {
    let options = with_embedder(cli, options)?;
    if let Some(url) = scale_out::store_url(cli)? {
        return backend::open_remote(&url, options);
    }
    // A store of an older format is migrated in place as it opens, which may rewrite whole
    // tables of a large store: say so before the wait.
    if let Some(version) = ctxgraph_store::Embedded::format_to_upgrade_at(&cli.db) {
        say_upgrading(&cli.db, version);
    }
    Engine::open(&cli.db, mode, options)
        .with_context(|| format!("opening store {}", cli.db.display()))
}

/// Tell the user, on stderr, that the store at `path`, of format `version`, is about to be
/// migrated to this build's format.
pub(crate) fn say_upgrading(path: &std::path::Path, version: u32) {
    eprintln!(
        "upgrading {} from store format {version} to {} (once; a large store takes a while) ...",
        path.display(),
        ctxgraph::FORMAT_VERSION
    );
}

/// What the CLI reads through: the `--as` principal's reader, or the store owner's without
/// `--as` (the engine has no other way to read).
pub(crate) fn reader<'e>(cli: &Cli, engine: &'e Engine) -> anyhow::Result<ctxgraph::Reader<'e>> {
    Ok(engine.reader(&access::principal(cli)?)?)
}

/// `options` with the embedder chosen by `--embed-url` (or `--embed-minilm`), loaded once.
pub(crate) fn with_embedder(
    cli: &Cli,
    mut options: EngineOptions,
) -> anyhow::Result<EngineOptions> {
    if let (Some(url), Some(model)) = (&cli.embed_url, &cli.embed_model) {
        let key = std::env::var("CTXGRAPH_EMBED_API_KEY").ok();
        let embedder = ctxgraph_embed::HttpEmbedder::new(url, model, key)
            .with_context(|| format!("connecting to the embedding endpoint {url}"))?;
        options.embedder = EmbedderChoice::Custom(std::sync::Arc::new(embedder));
    }
    #[cfg(feature = "minilm")]
    if let Some(dir) = &cli.embed_minilm {
        let embedder = ctxgraph_embed::MiniLmEmbedder::load(dir)
            .with_context(|| format!("loading the MiniLM model from {}", dir.display()))?;
        options.embedder = EmbedderChoice::Custom(std::sync::Arc::new(embedder));
    }
    Ok(options)
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    output::set_style(output::Style { utc: cli.utc, wide: cli.wide });
    backend::refuse_scale_out(&cli)?;
    access::gate(&cli)?;
    match &cli.command {
        Command::Demo => demo::run(&cli),
        Command::Init => read::init(&cli),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            // Written whole from memory: a closed pipe is then an error to report, not a panic.
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut command, "ctxgraph", &mut script);
            std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
            Ok(Outcome::Done)
        }
        Command::Ingest(args) => ingest::run(&cli, args),
        Command::Import(cmd) => import::run(&cli, cmd),
        Command::Get { id } => read::get(&cli, id),
        Command::Neighbors { id, edge, direction, label } => {
            read::neighbors(&cli, id, edge.as_deref(), *direction, label.as_deref())
        }
        Command::Session { id, limit } => read::session(&cli, id, *limit),
        Command::Chain { id } => chain::run(&cli, id),
        Command::View { view, limit } => read::view(&cli, *view, *limit),
        Command::Stats => match scale_out::store_url(&cli)? {
            Some(url) => scale_out::stats(&cli, &url),
            None => read::stats(&cli),
        },
        Command::Migrate(args) => scale_out::migrate(&cli, args),
        Command::Worker(args) => scale_out::worker(&cli, args),
        Command::Drop { yes } => scale_out::drop_store(&cli, *yes),
        Command::Log { from, limit } => read::log(&cli, *from, *limit),
        Command::Export(args) => interop::export(&cli, args),
        Command::Backup { file } => interop::backup(&cli, file),
        Command::Restore { from } => interop::restore(&cli, from),
        Command::Schema(cmd) => schema::run(&cli, cmd),
        Command::Entities(cmd) => entities::run(&cli, cmd),
        Command::Type(cmd) => slots::types(&cli, cmd),
        Command::Slot(cmd) => slots::slots(&cli, cmd),
        Command::Checklist(cmd) => slots::checklists(&cli, cmd),
        Command::Goal(cmd) => slots::goals(&cli, cmd),
        Command::Fact(cmd) => knowledge::fact(&cli, cmd),
        Command::Doc(cmd) => knowledge::doc(&cli, cmd),
        Command::Forget { kind, ids, reason, by, yes } => {
            forget::forget(&cli, *kind, ids, reason.as_deref(), by, *yes)
        }
        Command::Forgotten => forget::forgotten(&cli),
        Command::Receipt(cmd) => receipt::run(&cli, cmd),
        Command::Reproject { include_archive } => read::reproject(&cli, *include_archive),
        Command::Enrich => enrich::run(&cli, false),
        Command::Consolidate(args) => enrich::consolidate(&cli, args),
        Command::Retention(args) => enrich::retention(&cli, args),
        Command::Reembed => enrich::run(&cli, true),
        Command::Recall(args) => recall::run(&cli, args),
        Command::Memory(cmd) => memory::run(&cli, cmd),
        Command::Serve(args) => serve::serve(&cli, args),
        Command::Ui(args) => serve::ui(&cli, args),
        Command::Mcp(args) => serve::mcp(&cli, args),
        Command::Principal(cmd) => serve::principal(&cli, cmd),
        Command::Evolution { topic, as_of } => memory::evolution(&cli, topic, as_of.as_deref()),
        Command::Impact { memory, window, as_of } => {
            memory::impact(&cli, memory, window, as_of.as_deref())
        }
        Command::Rollup { since, until } => {
            memory::rollup(&cli, since.as_deref(), until.as_deref())
        }
        Command::Eval(EvalCommand::Locomo { file, k, include_adversarial, rankings, sample }) => {
            eval::locomo::run(&eval::locomo::EvalArgs {
                file,
                k: *k,
                include_adversarial: *include_adversarial,
                rankings: rankings.as_deref(),
                sample: sample.as_deref(),
                json: cli.json,
                options: with_embedder(&cli, EngineOptions::default())?,
                scale_out: crate::scale_out::store_url(&cli)?.as_ref(),
            })
        }
        Command::Eval(EvalCommand::Traces { seed, events, per_family, store, rankings }) => {
            eval::traces::run(&eval::traces::TracesArgs {
                seed: *seed,
                events: *events,
                per_family: *per_family,
                store: store.as_deref(),
                rankings: rankings.as_deref(),
                json: cli.json,
                options: with_embedder(&cli, EngineOptions::default())?,
                scale_out: crate::scale_out::store_url(&cli)?.as_ref(),
            })
        }
        Command::Search { query, limit, semantic } => {
            enrich::search(&cli, query, *limit, *semantic)
        }
        Command::Generate { events, seed } => read::generate(*events, *seed),
        Command::Bench(BenchCommand::Ingest { events, batch_size, dir, workers, stores }) => {
            match scale_out::store_url(&cli)? {
                Some(url) => {
                    let stores = stores.unwrap_or_else(|| (*workers).max(2));
                    let args = bench::ScaleOutIngest {
                        events: *events,
                        batch_size: *batch_size,
                        workers: *workers,
                        stores,
                    };
                    bench::ingest_scale_out(&url, args, cli.json)
                }
                None if *workers != 1 || stores.is_some() => anyhow::bail!(
                    "bench ingest: --workers and --stores fold a scale-out store; pass --db \
                     redis://HOST:PORT/NAME (rule: bench.backend)"
                ),
                None => bench::ingest(*events, *batch_size, dir.as_deref(), cli.json),
            }
        }
        Command::Bench(BenchCommand::Recall {
            events,
            queries,
            threads,
            dir,
            store,
            rankings,
            enrich,
        }) => {
            if let Some(url) = scale_out::store_url(&cli)? {
                if store.is_some() || rankings.is_some() || *threads != args::RECALL_THREADS {
                    anyhow::bail!(
                        "bench recall on a scale-out store builds new stores and times one \
                         thread on each backend: --store, --rankings and --threads do not apply \
                         (rule: bench.backend)"
                    );
                }
                let stages =
                    bench::RecallStages { events: *events, queries: *queries, enrich: *enrich };
                return bench::recall_scale_out(&url, stages, dir.as_deref(), cli.json);
            }
            if *enrich {
                anyhow::bail!(
                    "bench recall: --enrich runs stage 2 on both backends of a side-by-side run; \
                     pass --db redis://HOST:PORT/NAME (the store file bench recall builds \
                     otherwise is enriched and consolidated already) (rule: bench.backend)"
                );
            }
            let place = match store {
                Some(path) => bench::Place::Keep(path),
                None => bench::Place::Temp(dir.as_deref()),
            };
            bench::recall(*events, *queries, *threads, place, rankings.as_deref(), cli.json)
        }
        Command::Bench(BenchCommand::Semantic { events, queries, dir }) => {
            bench::semantic(*events, *queries, dir.as_deref(), cli.json)
        }
        Command::Bench(BenchCommand::Serve { clients, seconds, preload, target }) => {
            bench::serve(&bench::ServeArgs {
                clients,
                seconds: *seconds,
                preload: *preload,
                target,
                json: cli.json,
            })
        }
        Command::Bench(BenchCommand::Forget { events, dir, store }) => {
            let place = match store {
                Some(path) => bench::Place::Keep(path),
                None => bench::Place::Temp(dir.as_deref()),
            };
            bench::forget(*events, place, cli.json)
        }
        Command::Bench(BenchCommand::Memory { memories, events, queries, dir }) => {
            bench::memory(*memories, *events, *queries, dir.as_deref(), cli.json)
        }
        Command::Bench(BenchCommand::Crash {
            kills,
            events_per_run,
            target,
            writers,
            seed,
            dir,
        }) => bench::crash(&bench::CrashArgs {
            kills: *kills,
            events_per_run: *events_per_run,
            target: *target,
            writers: *writers,
            seed: *seed,
            dir: dir.as_deref(),
            json: cli.json,
        }),
        Command::Bench(BenchCommand::Soak {
            clients,
            seconds,
            warmup,
            preload,
            sample_every,
            target,
        }) => bench::soak(&bench::SoakArgs {
            clients: *clients,
            seconds: *seconds,
            warmup: *warmup,
            preload: *preload,
            sample_every: *sample_every,
            target,
            json: cli.json,
        }),
    }
}
