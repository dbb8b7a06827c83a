//! `--db` names a store file or a scale-out store (`redis://HOST:PORT/NAME`). On a scale-out
//! store the read commands, `ingest`, `forget` (events, sessions, memories) and `forgotten`,
//! the knowledge and decision-memory commands (`fact`, `doc`, `receipt`, `memory`, `evolution`,
//! `impact`, `rollup`, `entities`, `type`, `slot`, `checklist`, `goal`, `schema`),
//! `consolidate`, `eval locomo`, `eval traces`, `stats`, `worker`, `serve`, `mcp`, `bench ingest` and
//! `bench recall` run (`migrate` takes its stores as arguments); every other command, which
//! would write the graph in place, refuses the URL with what is true rather than take it for a
//! file path or pretend to run there (docs/scale-out.md says what exists).

use anyhow::{Context, bail};
use ctxgraph::{Engine, EngineOptions};
use ctxgraph_scaleout::{ScaleOutStore, StoreUrl};

use crate::args::{BenchCommand, Cli, Command, EvalCommand};

/// Refuse a `--db` that names a scale-out store for a command that cannot run on one, naming
/// the command; a malformed URL is refused with its field, value and rule.
pub(crate) fn refuse_scale_out(cli: &Cli) -> anyhow::Result<()> {
    // These take no store from --db.
    if matches!(cli.command, Command::Completions { .. } | Command::Migrate(_)) {
        return Ok(());
    }
    let Some(text) = cli.db.to_str() else { return Ok(()) };
    if !text.starts_with("redis://") {
        return Ok(());
    }
    let url = StoreUrl::parse(text).map_err(|e| anyhow::anyhow!("--db: {e}"))?;
    if runs_on_scale_out(&cli.command) {
        // `serve` authenticates for itself, and `mcp --data DIR --as NAME` reads the data
        // directory's registry: both take principals from there.
        let registry = matches!(&cli.command, Command::Serve(_))
            || matches!(&cli.command, Command::Mcp(args) if args.data.is_some());
        let refused = !registry && !takes_principal(&cli.command);
        if let Some(who) = cli.as_principal.as_ref().filter(|_| refused) {
            bail!(
                "--as `{who}`: command `{}` runs on {url} as the store's owner only, without \
                 --as; `ingest`, `forget`, `forgotten`, the knowledge commands and the reads take --as \
                 with the registry --principals names, and `mcp --data DIR --as NAME` reads the data \
                 directory's registry (rule: db.backend_unsupported)",
                command_name()
            );
        }
        return Ok(());
    }
    bail!(
        "backend redis:// is not yet supported by command `{}`: {url} names a scale-out store, \
         on which only `ingest`, the reads (`get`, `neighbors`, `session`, `chain`, `view`, \
         `log`, `recall`, `search`), `forget`, `forgotten`, the knowledge and memory commands \
         (`fact`, `doc`, `receipt`, `memory`, `evolution`, `impact`, `rollup`, `entities`, \
         `type`, `slot`, `checklist`, `goal`, `schema`), `consolidate`, `eval locomo`, `eval traces`, \
         `stats`, `worker`, `serve`, `mcp`, `bench ingest` and `bench recall` run yet \
         (docs/scale-out.md says what exists); pass a store file to --db \
         (rule: db.backend_unsupported)",
        command_name()
    )
}

/// The commands that run on a scale-out store: its own (`stats`, `worker`, `bench ingest`,
/// `bench recall`), `ingest` (appended; the workers fold), `forget` (the forget record and its
/// tombstones appended together, the graph folded through it, the append-only file rewritten),
/// `consolidate` (stage 3 in one watched transaction), `eval locomo` and `eval traces` (new
/// stores, their stages run in process), the reads, which see what the workers folded, and the servers (`serve`,
/// `mcp`), which do both.
fn runs_on_scale_out(command: &Command) -> bool {
    matches!(
        command,
        Command::Stats
            | Command::Worker(_)
            | Command::Serve(_)
            | Command::Mcp(_)
            | Command::Bench(BenchCommand::Ingest { .. })
            | Command::Bench(BenchCommand::Recall { .. })
            | Command::Consolidate(_)
            | Command::Eval(EvalCommand::Locomo { .. })
            | Command::Eval(EvalCommand::Traces { .. })
    ) || takes_principal(command)
}

/// The commands that take `--as` on a scale-out store: those that go through the engine, whose
/// `Reader` applies the principal's policy (`stats`, `worker` and the benchmarks read and write
/// the store directly, as its owner).
fn takes_principal(command: &Command) -> bool {
    matches!(
        command,
        Command::Ingest(_)
            | Command::Forget { .. }
            | Command::Forgotten
            | Command::Get { .. }
            | Command::Neighbors { .. }
            | Command::Session { .. }
            | Command::Chain { .. }
            | Command::View { .. }
            | Command::Log { .. }
            | Command::Recall(_)
            | Command::Search { .. }
    ) || knowledge_command(command)
}

/// The knowledge and decision-memory commands: on a scale-out store their writes are checked as
/// on a file, appended and waited for until the workers fold them (the workers index them and
/// derive links and entity candidates), and their reads go through the `Reader`, so they take
/// `--as` as the reads do.
fn knowledge_command(command: &Command) -> bool {
    matches!(
        command,
        Command::Fact(_)
            | Command::Doc(_)
            | Command::Receipt(_)
            | Command::Memory(_)
            | Command::Evolution { .. }
            | Command::Impact { .. }
            | Command::Rollup { .. }
            | Command::Entities(_)
            | Command::Type(_)
            | Command::Slot(_)
            | Command::Checklist(_)
            | Command::Goal(_)
            | Command::Schema(_)
    )
}

/// The engine on the scale-out store at `url`: reads see the graph as its projection workers
/// have folded it, and `ingest` appends to its log for them to fold.
pub(crate) fn open_remote(url: &StoreUrl, options: EngineOptions) -> anyhow::Result<Engine> {
    let store = ScaleOutStore::connect(url).with_context(|| format!("connecting to {url}"))?;
    Engine::open_remote(Box::new(store), options).with_context(|| format!("opening store {url}"))
}

/// The subcommand the process was started with, as typed.
fn command_name() -> String {
    let command = <Cli as clap::CommandFactory>::command();
    let names: Vec<String> = command.get_subcommands().map(|c| c.get_name().to_owned()).collect();
    std::env::args().skip(1).find(|a| names.contains(a)).unwrap_or_else(|| "this command".into())
}
