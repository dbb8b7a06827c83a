//! Command-line arguments: every command, flag and its help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// ctxgraph: a local-first context graph, long-term memory for AI agents.
///
/// Agents write what happened as JSON records; ctxgraph keeps every record in an append-only log
/// and projects it into a typed property graph of events, entities and the edges between them.
///
/// Exit codes: 0 success; 1 nothing found (get, neighbors, session, chain); 2 error, including an
/// ingestion that rejected any record.
#[derive(Debug, Parser)]
#[command(name = "ctxgraph", version, propagate_version = true, max_term_width = 100)]
pub(crate) struct Cli {
    /// The store file. Created by `init`, `ingest` and `demo` when missing.
    #[arg(long, global = true, env = "CTXGRAPH_DB", default_value = "ctxgraph.ctxg")]
    pub(crate) db: PathBuf,

    /// Print JSON instead of tables (every read command).
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// Embed with an OpenAI-compatible endpoint instead of the built-in model, e.g.
    /// `http://127.0.0.1:11434/v1`. Its API key, if any, is read from CTXGRAPH_EMBED_API_KEY.
    #[arg(long, global = true, env = "CTXGRAPH_EMBED_URL", requires = "embed_model")]
    pub(crate) embed_url: Option<String>,

    /// The model to ask the endpoint for (with --embed-url).
    #[arg(long, global = true, env = "CTXGRAPH_EMBED_MODEL")]
    pub(crate) embed_model: Option<String>,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Ingest a bundled multi-agent trace into the store and explain a failure from the graph.
    ///
    /// Running it twice shows idempotency: the second run finds every record already stored.
    Demo,
    /// Create an empty store.
    Init,
    /// Ingest JSONL records (events, explicit edges, schema modules) from a file or `-` for stdin.
    Ingest(IngestArgs),
    /// Show every node with this id (events, entities, summaries) and its edge counts.
    Get {
        /// The node id, e.g. an event id or an entity id such as `service:orders-db`.
        id: String,
    },
    /// List the edges of a node.
    Neighbors {
        /// The node id.
        id: String,
        /// Only edges of this type, e.g. CAUSED_BY.
        #[arg(long)]
        edge: Option<String>,
        /// Which edges: out of the node, into it, or both.
        #[arg(long, value_enum, default_value_t = DirectionArg::Both)]
        direction: DirectionArg,
        /// The node's type when the id is ambiguous (Event, Entity, Summary, ...).
        #[arg(long)]
        label: Option<String>,
    },
    /// A session's timeline in time order, with causal links.
    Session {
        /// The session id.
        id: String,
        /// Show at most this many events.
        #[arg(long, default_value_t = 1000)]
        limit: usize,
    },
    /// The causal chain behind an event, what it caused, and the entities involved.
    Chain {
        /// The event id.
        id: String,
    },
    /// List the edges of one of the five views of the graph.
    View {
        /// temporal (FOLLOWS), causal (CAUSED_BY), entity (REFERENCES), semantic (SIMILAR_TO),
        /// hierarchical (SUMMARIZES).
        #[arg(value_enum)]
        view: ViewArg,
        /// Show at most this many edges.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Counts per node and edge type, log length, projection lag, file size.
    Stats,
    /// Print log records from a position.
    Log {
        /// First position to print (positions start at 1).
        #[arg(long, default_value_t = 1)]
        from: u64,
        /// Print at most this many records.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Show, check or add schema modules (the ontology is data).
    #[command(subcommand)]
    Schema(SchemaCommand),
    /// Rebuild the graph, then its enrichment and indexes, from the log (the only source of truth).
    Reproject,
    /// Enrich what is not enriched yet: keywords, importance, summary, embedding, full-text index.
    ///
    /// `ingest` and `demo` do this after acknowledging records; this command catches up by hand
    /// (after `ingest --no-enrich`, or a crash during enrichment).
    Enrich,
    /// Rebuild the summaries (one per session, one per day over its sessions) and SUMMARIZES edges.
    Consolidate,
    /// Full-text search (BM25) over event text, summaries and entity names.
    Search {
        /// Words to look for (any of them; more matches rank higher).
        query: String,
        /// Show at most this many results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Re-embed every event with the configured model (after the embedding model changed).
    Reembed,
    /// Write a deterministic synthetic agent trace as JSONL to stdout.
    Generate {
        /// Number of events.
        #[arg(long, default_value_t = 400)]
        events: usize,
        /// Random seed: the same seed gives the same trace.
        #[arg(long, default_value_t = 7)]
        seed: u64,
    },
    /// Measure ctxgraph and print a table.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Debug, Args)]
pub(crate) struct IngestArgs {
    /// The JSONL file, or `-` for standard input.
    #[arg(default_value = "-")]
    pub(crate) file: PathBuf,
    /// Stop at the first bad record; nothing of it (or after it) is written.
    #[arg(long)]
    pub(crate) strict: bool,
    /// Records per durable transaction.
    #[arg(long, default_value_t = 2000)]
    pub(crate) batch_size: usize,
    /// Largest accepted record in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub(crate) max_record_bytes: usize,
    /// Most entity references per event.
    #[arg(long, default_value_t = 256)]
    pub(crate) max_entities: usize,
    /// Do not show a progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Do not enrich after ingesting (run `ctxgraph enrich` later).
    #[arg(long)]
    pub(crate) no_enrich: bool,
    /// After every durable batch, print one JSON line to stderr: lines, accepted, duplicates,
    /// rejected, and last_position (the last acknowledged log position).
    #[arg(long)]
    pub(crate) progress_json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SchemaCommand {
    /// Print the effective schema (PG-Schema notation; --json for the structure).
    Show,
    /// Check an extension file against the store's schema without adding it.
    Check {
        /// The TOML extension file.
        file: PathBuf,
    },
    /// Add an extension module to the store (recorded in the log).
    Add {
        /// The TOML extension file.
        file: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Ingestion throughput: log append, stage-1 projection, end to end; bytes per event; open time.
    Ingest {
        /// Number of synthetic events.
        #[arg(long, default_value_t = 100_000)]
        events: usize,
        /// Records per durable transaction.
        #[arg(long, default_value_t = 2000)]
        batch_size: usize,
        /// Directory for the temporary stores (default: the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum DirectionArg {
    /// Edges out of the node.
    Out,
    /// Edges into the node.
    In,
    /// Both.
    Both,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ViewArg {
    /// FOLLOWS edges: when did this happen?
    Temporal,
    /// CAUSED_BY edges: why did this happen?
    Causal,
    /// REFERENCES edges: who or what was involved?
    Entity,
    /// SIMILAR_TO edges: what else is related?
    Semantic,
    /// SUMMARIZES edges: what is the high-level picture?
    Hierarchical,
}
