//! The `ctxgraph` binary: argument parsing, dispatch and exit codes.

mod args;
mod bench;
mod chain;
mod demo;
mod enrich;
mod ingest;
mod output;
mod read;
mod schema;

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ctxgraph::{EmbedderChoice, Engine, EngineOptions, OpenMode};

use crate::args::{BenchCommand, Cli, Command};

/// How a successful command ended.
pub(crate) enum Outcome {
    /// Exit 0.
    Done,
    /// Exit 1: the query ran and found nothing.
    NotFound,
    /// Exit 2 without an error message of its own (the command already explained).
    Failed,
}

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
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Open the store named by `--db`, with the embedder chosen by `--embed-url`.
pub(crate) fn open(
    cli: &Cli,
    mode: OpenMode,
    mut options: EngineOptions,
) -> anyhow::Result<Engine> {
    if let (Some(url), Some(model)) = (&cli.embed_url, &cli.embed_model) {
        let key = std::env::var("CTXGRAPH_EMBED_API_KEY").ok();
        let embedder = ctxgraph_embed::HttpEmbedder::new(url, model, key)
            .with_context(|| format!("connecting to the embedding endpoint {url}"))?;
        options.embedder = EmbedderChoice::Custom(std::sync::Arc::new(embedder));
    }
    Engine::open(&cli.db, mode, options)
        .with_context(|| format!("opening store {}", cli.db.display()))
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match &cli.command {
        Command::Demo => demo::run(&cli),
        Command::Init => read::init(&cli),
        Command::Ingest(args) => ingest::run(&cli, args),
        Command::Get { id } => read::get(&cli, id),
        Command::Neighbors { id, edge, direction, label } => {
            read::neighbors(&cli, id, edge.as_deref(), *direction, label.as_deref())
        }
        Command::Session { id, limit } => read::session(&cli, id, *limit),
        Command::Chain { id } => chain::run(&cli, id),
        Command::View { view, limit } => read::view(&cli, *view, *limit),
        Command::Stats => read::stats(&cli),
        Command::Log { from, limit } => read::log(&cli, *from, *limit),
        Command::Schema(cmd) => schema::run(&cli, cmd),
        Command::Reproject => read::reproject(&cli),
        Command::Enrich => enrich::run(&cli, false),
        Command::Consolidate => enrich::consolidate(&cli),
        Command::Reembed => enrich::run(&cli, true),
        Command::Search { query, limit } => enrich::search(&cli, query, *limit),
        Command::Generate { events, seed } => read::generate(*events, *seed),
        Command::Bench(BenchCommand::Ingest { events, batch_size, dir }) => {
            bench::ingest(*events, *batch_size, dir.as_deref(), cli.json)
        }
    }
}
