//! `--db` names a store file or a scale-out store (`redis://HOST:PORT/NAME`). On a scale-out
//! store the read commands, `ingest`, `forget` and `forgotten`,
//! the knowledge and decision-memory commands (`fact`, `doc`, `receipt`, `memory`, `evolution`,
//! `impact`, `rollup`, `entities`, `type`, `slot`, `checklist`, `goal`, `schema`),
//! `reproject`, `enrich`, `reembed`, `export`, `import`, `init`,
//! `backup`, `restore`, `ui`, `demo`, `consolidate`, `retention`, `eval locomo`, `eval traces`, `stats`, `worker`, `serve`,
//! `mcp`, `bench ingest` and `bench recall` run (`migrate` takes its stores as arguments);
//! every other command refuses the URL with what is true
//! rather than take it for a file path or pretend to run there (docs/scale-out.md says what
//! exists).

use anyhow::{Context, bail};
use ctxgraph::{Engine, EngineOptions};
use ctxgraph_scaleout::{ScaleOutStore, StoreUrl};

use crate::args::{BenchCommand, Cli, Command, EvalCommand};

/// Refuse a `--db` that names a scale-out store for a command that cannot run on one, naming
/// the command; a malformed URL is refused with its field, value and rule.
pub(crate) fn refuse_scale_out(cli: &Cli) -> anyhow::Result<()> {
    // These take no store from --db.
    if matches!(
        cli.command,
        Command::Completions { .. }
            | Command::Migrate(_)
            | Command::Generate { .. }
            | Command::Principal(_)
    ) {
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
                 --as; `ingest`, `forget`, `forgotten`, the knowledge commands and the reads \
                 take --as with the registry --principals names, and `mcp --data DIR --as NAME` reads the data \
                 directory's registry (rule: db.backend_unsupported)",
                command_name()
            );
        }
        return Ok(());
    }
    if let Some((bench, why)) = embedded_only_bench(&cli.command) {
        bail!(
            "`bench {bench}` measures the embedded store only: {why}; it takes no scale-out \
             store ({url}); `bench ingest` and `bench recall` measure one (rule: \
             db.backend_unsupported)"
        );
    }
    bail!(
        "backend redis:// is not yet supported by command `{}`: {url} names a scale-out store, \
         on which only `ingest`, the reads (`get`, `neighbors`, `session`, `chain`, `view`, \
         `log`, `recall`, `search`), `forget`, `forgotten`, the knowledge and memory commands \
         (`fact`, `doc`, `receipt`, `memory`, `evolution`, `impact`, `rollup`, `entities`, \
         `type`, `slot`, `checklist`, `goal`, `schema`), `reproject`, `enrich`, `reembed`, \
         `export`, `import`, `init`, `backup`, `restore`, `ui`, \
         `demo`, `consolidate`, `retention`, `eval locomo`, `eval traces`, `stats`, `worker`, `drop`, `serve`, `mcp`, \
         `bench ingest` and `bench recall` run yet (docs/scale-out.md says what exists); pass \
         a store file to --db (rule: db.backend_unsupported)",
        command_name()
    )
}

/// The commands that run on a scale-out store: its own (`stats`, `worker`, `drop`, `bench
/// ingest`, `bench recall`), `ingest` (appended; the workers fold), `forget` (the forget record and its
/// tombstones appended together, the graph folded through it, the append-only file rewritten),
/// `consolidate` (stage 3 in one watched transaction), `eval locomo` (a new store per
/// conversation), the reads, which see what the workers folded, and the servers (`serve`,
/// `mcp`), which do both.
fn runs_on_scale_out(command: &Command) -> bool {
    matches!(
        command,
        Command::Stats
            | Command::Worker(_)
            | Command::Drop { .. }
            | Command::Serve(_)
            | Command::Mcp(_)
            | Command::Bench(BenchCommand::Ingest { .. })
            | Command::Bench(BenchCommand::Recall { .. })
            | Command::Consolidate(_)
            | Command::Eval(EvalCommand::Locomo { .. })
            | Command::Eval(EvalCommand::Traces { .. })
    ) || takes_principal(command)
        || runs_admin_on_scale_out(command)
}

/// The store-wide commands that run on a scale-out store: `reproject` (the graph and stages 2
/// and 3 reset in one transaction, then folded, enriched and consolidated again in this
/// process), `enrich` (stage 2 in watched transactions), `reembed` (stage 2's data dropped in
/// one transaction, then enriched again), `export` (through the `Reader`, so with `--as` too),
/// the imports (`import conversation|locomo|otlp` append for the workers to fold; `import
/// mcp-memory|episodes|mem0|markdown` write their facts, memories and documents as the knowledge
/// commands do, each waited for until folded), `init`
/// (the server answers; nothing is created), `backup` (the log into a new store file),
/// `restore` (a backup or an exported log into an empty scale-out store), `ui` (the explorer,
/// as the store's owner) and `demo` (the bundled trace appended, then folded, enriched and
/// consolidated in this process) and `retention` (one watched transaction: archived events
/// leave the graph, their marks stay beside it).
fn runs_admin_on_scale_out(command: &Command) -> bool {
    matches!(
        command,
        Command::Reproject { .. }
            | Command::Enrich
            | Command::Reembed
            | Command::Export(_)
            | Command::Init
            | Command::Ui(_)
            | Command::Demo
            | Command::Retention(_)
            | Command::Backup { .. }
            | Command::Restore { .. }
            | Command::Import(_)
    )
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
    ) || matches!(command, Command::Export(_))
        || knowledge_command(command)
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

/// The benchmarks that measure the embedded store only, each with why: its name and the reason
/// a scale-out store is refused (`bench ingest` and `bench recall` take one).
fn embedded_only_bench(command: &Command) -> Option<(&'static str, &'static str)> {
    let Command::Bench(bench) = command else { return None };
    Some(match bench {
        BenchCommand::Semantic { .. } => (
            "semantic",
            "it builds a store file of its own in --dir and times stage 2 and 3 and the vector \
             index there (on a scale-out store, `bench recall --enrich` runs stage 2 and \
             compares the packs)",
        ),
        BenchCommand::Forget { .. } => (
            "forget",
            "it times forgets on a store file of its own, whose phases (the file rewritten by \
             VACUUM) a scale-out store does not have",
        ),
        BenchCommand::Memory { .. } => {
            ("memory", "it builds a store file of memories of its own in --dir")
        }
        BenchCommand::Crash { .. } => (
            "crash",
            "it kills a writer again and again over one store file, whose graph commits with \
             its log; a scale-out store's writer only appends, and the tests of killed workers \
             cover its fold",
        ),
        BenchCommand::Serve { .. } | BenchCommand::Soak { .. } => (
            if matches!(bench, BenchCommand::Serve { .. }) { "serve" } else { "soak" },
            "the server it starts runs on a store file it builds; to load a server on a \
             scale-out store, start `ctxgraph --db redis://HOST:PORT/NAME serve` with its \
             workers and give its address to --url, with a store file (or none) as --db",
        ),
        BenchCommand::Ingest { .. } | BenchCommand::Recall { .. } => return None,
    })
}
