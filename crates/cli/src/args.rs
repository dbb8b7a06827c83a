//! Command-line arguments: every command, flag and its help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `bench recall`'s throughput threads unless `--threads` says otherwise (the scale-out
/// bench, which times one thread per backend, refuses any other count).
pub(crate) const RECALL_THREADS: usize = 2;

/// ctxgraph: a local-first context graph, long-term memory for AI agents.
///
/// Agents write what happened as JSON records; ctxgraph keeps every record in an append-only log
/// and projects it into a typed property graph of events, entities and the edges between them.
/// Start with `ctxgraph demo`, then `ctxgraph recall "why did ... fail?"`.
///
/// Exit codes:
///   0  success
///   1  the query ran and found nothing: get, neighbors, session, chain, log, search, recall,
///      entities candidates, fact list, about and contradictions, doc show and list, memory show,
///      list and search, evolution, impact, receipt list, forgotten, principal list and remove,
///      the list commands of type, slot, checklist and goal, checklist next without a splitting
///      slot
///   2  an error, including an ingestion or import that rejected any record (the summary says
///      what was written and why each rejected line was refused)
#[derive(Debug, Parser)]
#[command(
    name = "ctxgraph",
    version,
    propagate_version = true,
    max_term_width = 100,
    verbatim_doc_comment
)]
pub(crate) struct Cli {
    /// The store file. Created by `init`, `ingest` and `demo` when missing. Or a scale-out
    /// store, redis://HOST:PORT/NAME, with the stores spread over several FalkorDB instances as
    /// redis://HOST:PORT,HOST:PORT/NAME (docs/scale-out.md).
    #[arg(long, global = true, env = "CTXGRAPH_DB", default_value = "ctxgraph.ctxg")]
    pub(crate) db: PathBuf,

    /// Print JSON instead of tables (every read command).
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// Show times in UTC instead of the local time zone. Either way, one output shows every time
    /// in one zone (JSON keeps times as stored).
    #[arg(long, global = true)]
    pub(crate) utc: bool,

    /// Print tables as wide as their content instead of fitting the terminal (100 columns when
    /// output goes to a file or a pipe), where long cells wrap.
    #[arg(long, global = true)]
    pub(crate) wide: bool,

    /// Act as this principal from the registry (see `--principals`): reads show only what its
    /// roles may see, writes need the writer or admin role, and commands that read the graph
    /// without the access policy are refused. Without it, the CLI acts as the store's owner.
    #[arg(long = "as", global = true, env = "CTXGRAPH_AS", value_name = "PRINCIPAL")]
    pub(crate) as_principal: Option<String>,

    /// The principal registry `--as` reads [default: principals.json beside the store, or the
    /// data directory's for a server's tenants/<tenant>.ctxg]. The principal's tenant must be
    /// the store's (`default` for a store outside a data directory).
    #[arg(long, global = true, env = "CTXGRAPH_PRINCIPALS", value_name = "FILE")]
    pub(crate) principals: Option<PathBuf>,

    /// Embed with an OpenAI-compatible endpoint instead of the built-in model, e.g.
    /// `http://127.0.0.1:11434/v1`. Its API key, if any, is read from CTXGRAPH_EMBED_API_KEY.
    #[arg(long, global = true, env = "CTXGRAPH_EMBED_URL", requires = "embed_model")]
    pub(crate) embed_url: Option<String>,

    /// The model to ask the endpoint for (with --embed-url).
    #[arg(long, global = true, env = "CTXGRAPH_EMBED_MODEL")]
    pub(crate) embed_model: Option<String>,

    /// Embed with the all-MiniLM-L6-v2 transformer, run in-process, instead of the built-in
    /// model: better vectors, far slower. DIR holds its `model.safetensors`, `tokenizer.json`
    /// and `config.json` (`crates/embed/models/fetch-minilm.sh DIR` fetches them).
    #[cfg(feature = "minilm")]
    #[arg(
        long,
        global = true,
        env = "CTXGRAPH_EMBED_MINILM",
        value_name = "DIR",
        conflicts_with = "embed_url"
    )]
    pub(crate) embed_minilm: Option<PathBuf>,

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
    /// Print a shell completion script for bash, zsh, fish, elvish or PowerShell.
    ///
    /// E.g. `ctxgraph completions bash > ~/.local/share/bash-completion/completions/ctxgraph`;
    /// zsh: a file `_ctxgraph` in a directory of `$fpath`; fish:
    /// `~/.config/fish/completions/ctxgraph.fish`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Ingest JSONL records (events, explicit edges, schema modules) from a file or `-` for stdin.
    Ingest(IngestArgs),
    /// Import conversations (chat messages as JSONL, or the LoCoMo benchmark's JSON) or an
    /// OpenTelemetry trace export (`import otlp`).
    ///
    /// Each message becomes an `observation.message` event (speaker as the agent, session order
    /// as FOLLOWS, reply_to as CAUSED_BY) with the names in its text as entities, extracted
    /// without an LLM. Importing the same input again finds every record stored. Exits 2 when
    /// any message was rejected (the summary says why).
    #[command(subcommand)]
    Import(ImportCommand),
    /// Show every node with this id (events, entities, summaries) and its edge counts.
    Get {
        /// The node id (an event id, an entity id such as `service:orders-db`, ...) or an entity's
        /// name (`orders-db`; `service:orders-db` chooses when several entity types have it).
        id: String,
    },
    /// List the edges of a node.
    Neighbors {
        /// The node id or an entity's name, as for `get`. A merged entity's edges include those
        /// of the entities merged with it.
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
    /// Export the graph, or the log, in another format: W3C PROV-O (Turtle or JSON-LD), a
    /// Cypher script (FalkorDB, Neo4j), GraphML (Gephi, yEd, networkx) or the log as JSONL.
    ///
    /// Reads through the access policy: under `--as` the export holds only what the principal
    /// may see, and no edge to anything else. `--session`, `--trace`, `--since` and `--until`
    /// select events (every condition given must hold); the export then holds those events,
    /// the entities, summaries and receipts one edge away, and the edges among them.
    Export(ExportArgs),
    /// Write a consistent copy of the store to a new file, while other processes (`serve`,
    /// `ingest`) go on writing. Owner only.
    Backup {
        /// The new file (refused when it exists).
        file: PathBuf,
    },
    /// Copy a store between a store file and the scale-out backend, its log at the same
    /// positions, ids, times and bodies (a redacted record stays redacted). FILE to
    /// redis://HOST:PORT/NAME (an empty store): the log is folded into the graph on FalkorDB;
    /// stages 2 and 3 (embeddings, similarity, summaries) do not run there yet.
    /// redis://… to FILE (a new file): the log is projected, enriched and consolidated.
    /// See docs/scale-out.md.
    Migrate(MigrateArgs),
    /// Delete a scale-out store (--db redis://HOST:PORT/NAME): every key of it on the instance
    /// that holds it (log, stream, graph, stages 2 and 3), then the server's append-only file or
    /// snapshot rewritten so that no file keeps it. For the copy a store leaves on the instance
    /// it moved from, and the stores a benchmark leaves. A store file is deleted as a file.
    Drop {
        /// Delete it: without this nothing is deleted.
        #[arg(long)]
        yes: bool,
    },
    /// Fold a scale-out store's log into its graph as records arrive (--db redis://…): one
    /// consumer of the store's projection group. Stops on Ctrl-C or SIGTERM after the round in
    /// hand, or with --once when the graph reaches the log's head.
    Worker(WorkerArgs),
    /// Rebuild a store at `--db` (a new file) from a backup or from a log exported with
    /// `export --format jsonl`: a backup is copied, a log is ingested, projected and enriched.
    Restore {
        /// A backup file or a JSONL log.
        #[arg(long)]
        from: PathBuf,
    },
    /// Show, check or add schema modules (the ontology is data).
    #[command(subcommand)]
    Schema(SchemaCommand),
    /// Entity resolution: list SAME_AS candidates, merge or reject a pair, resolve again.
    ///
    /// Resolution proposes SAME_AS candidates between entities of one type whose names are
    /// spelling variants (read_file, read-file, ReadFile), one-letter typos or plurals, or whose
    /// name embeddings have cosine >= 0.9, and RELATED_TO between versions of one family (gpt-4,
    /// gpt-4o, gpt-4-turbo). It never merges: a person decides, and the decision is a log record.
    #[command(subcommand)]
    Entities(EntitiesCommand),
    /// Types: declare a type, make an entity an instance of one, list them.
    #[command(subcommand)]
    Type(TypeCommand),
    /// Slots: record an entity's slot value with confidence and source, list an entity's slots.
    ///
    /// An entity keeps one HAS_SLOT edge per value: its confidence is the highest ever recorded
    /// and its sources accumulate, so nothing is overwritten and order does not matter.
    #[command(subcommand)]
    Slot(SlotCommand),
    /// Checklists: what must be known to answer a kind of question, what an entity still lacks,
    /// and which slot to ask about next to tell candidates apart.
    #[command(subcommand)]
    Checklist(ChecklistCommand),
    /// Goals: a user's long-term ambitions and the checklists they influence.
    #[command(subcommand)]
    Goal(GoalCommand),
    /// Facts: claims about entities with confidence, sources and validity (add, retract, list,
    /// about, contradictions).
    ///
    /// Names are forgiving: `alice`, `Alice`, `ReadFile` for read_file, or an alias find the
    /// entity; a one-letter typo, a close name embedding or part of a name is never attached (a
    /// new entity with --subject-type, proposed as a SAME_AS candidate; an error without); a name
    /// that matches several is an error listing them. Predicates are controlled: mentioned_in,
    /// decided_in, reports_to, depends_on, resolved_by, blocked_by, tagged, belongs_to,
    /// also_known_as (an alias) (and any a schema module adds). The same claim
    /// from another source raises the fact's confidence (noisy-or); a second object of a
    /// single-valued predicate (reports_to, decided_in, belongs_to) is kept as a contradiction.
    #[command(subcommand)]
    Fact(FactCommand),
    /// Source documents: text or Markdown split into sections, paragraphs and sentences that
    /// facts can cite (add, show, list).
    #[command(subcommand)]
    Doc(DocCommand),
    /// Forget events, sessions, entities or memories: their log records become tombstones (an
    /// entity's events are rewritten without it), everything derived from them (nodes, edges,
    /// embeddings, full-text and lexical index entries, summaries, links) is deleted, and a
    /// forget record per target (who, when, why, never the content) is the trace. Several ids
    /// are forgotten in one transaction; the store file is rewritten so the bytes are gone
    /// from disk.
    Forget {
        /// What to forget.
        #[arg(value_enum)]
        kind: ForgetKindArg,
        /// The ids (event ids, session ids, entity ids such as `user:ada` or a name that one
        /// entity type has, or memory ids).
        #[arg(required = true)]
        ids: Vec<String>,
        /// Why, in a few words (kept in the audit).
        #[arg(long)]
        reason: Option<String>,
        /// The principal forgetting it, as recorded in the audit.
        #[arg(long, default_value = "local")]
        by: String,
        /// Do not ask for confirmation. Without it, `forget` asks when standard input is a
        /// terminal (and goes ahead when it is not: a script or a pipe).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Decision receipts: add one from JSON, list them by task, actor, time window
    /// and policy result.
    #[command(subcommand)]
    Receipt(ReceiptCommand),
    /// The forget audit: what was forgotten, when, by whom and why, without the content.
    Forgotten,
    /// Rebuild the graph, then its enrichment and indexes, from the log (the only source of truth).
    ///
    /// Events that retention archived stay out of the graph unless --include-archive.
    Reproject {
        /// Bring archived events back into the graph (and forget that they were archived).
        #[arg(long)]
        include_archive: bool,
    },
    /// Enrich what is not enriched yet: keywords, importance, summary, embedding, full-text index.
    ///
    /// `ingest` and `demo` do this after acknowledging records; this command catches up by hand
    /// (after `ingest --no-enrich`, or a crash during enrichment).
    Enrich,
    /// Stage 3: rebuild summaries (per session, per day), the vector index and SIMILAR_TO edges.
    ///
    /// Deterministic and idempotent: running it twice gives the same graph. With --retention it
    /// first applies the retention tiers (see `ctxgraph retention --help`).
    Consolidate(ConsolidateArgs),
    /// Show the retention tiers of the events (hot, warm, cold, archive), or apply them.
    ///
    /// Ages are measured at --as-of, by default the newest event's time. hot < 24 h: everything
    /// stays; warm < 7 days: SIMILAR_TO edges of events with importance < 5 are pruned; cold < 30
    /// days: only events with importance >= 5 or access count >= 3 stay; older: archived. Archived
    /// events leave the graph but stay in the log (`reproject --include-archive` brings them back).
    Retention(RetentionArgs),
    /// Search: full text (BM25) over event text, summaries, entity names, memories, facts,
    /// document sentences, slot values and decision receipts, or by meaning (--semantic: nearest
    /// embeddings through the vector index).
    Search {
        /// Words to look for (any of them; more matches rank higher), or a sentence with --semantic.
        query: String,
        /// Show at most this many results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Rank by embedding similarity instead of BM25.
        #[arg(long)]
        semantic: bool,
    },
    /// The context an agent needs for a question: ranked items, each with the path that brought
    /// it in, the score's factors, provenance, the edges among the items and known unknowns.
    ///
    /// Candidates come from the vector index, BM25 and entity names in the question (fused by
    /// reciprocal rank), then a walk over the graph weighted by the question's intent (why:
    /// CAUSED_BY; when: FOLLOWS; who/what: REFERENCES, SAME_AS; related: SIMILAR_TO; overview:
    /// SUMMARIZES), then score = relevance × path weight × confidence × salience × focus
    /// (½ for an event by another actor than the ones the question names, ½ for one outside
    /// the dates it names).
    Recall(RecallArgs),
    /// Serve the HTTP API and MCP (streamable HTTP at /mcp) over a data directory.
    ///
    /// Prints `listening on http://ADDR` as its first line. Every route but /healthz, /readyz
    /// and /openapi.json needs `Authorization: Bearer <key>` (`ctxgraph principal add`);
    /// /metrics a principal with the `metrics` role. Stops on Ctrl-C or SIGTERM after finishing
    /// the requests in flight, or cutting them at the request deadline.
    Serve(ServeArgs),
    /// Open the web explorer on the store (--db): serve it on 127.0.0.1 and print its URL.
    ///
    /// The explorer asks questions (recall with each item's path), shows a node's neighbourhood,
    /// a session's timeline, a topic's decisions, an entity's facts and the store's health, in a
    /// browser, through the same HTTP API as `serve` (whose `/` serves it too). The URL printed
    /// carries a key made for this run (after `#`, so it is never sent in a request): it acts
    /// as the store's owner, or as the principal --as names. Serves until Ctrl-C.
    Ui(UiArgs),
    /// Serve the MCP tools over stdin/stdout, for an agent that starts ctxgraph itself.
    Mcp(McpArgs),
    /// Manage the principals (API keys, tenants, roles) of a data directory.
    #[command(subcommand)]
    Principal(PrincipalCommand),
    /// Decision memory: save memories, outcomes and links; show, list and search them.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// A topic's decision evolution chain: the decision in force, back through SUPERSEDES, with
    /// each decision's outcomes and the memories implementing it. Exits 1 when the topic has no
    /// decision.
    Evolution {
        /// The topic (matched after normalisation: case and spacing do not matter).
        topic: String,
        /// Decay link confidences as of this time (RFC 3339 or YYYY-MM-DD; default: now).
        #[arg(long)]
        as_of: Option<String>,
    },
    /// What happened after a memory: the memories implementing it, its results and the memories
    /// saved soon after it in its session (TEMPORAL), within a window. Exits 1 for an unknown
    /// memory.
    Impact {
        /// The memory id.
        memory: String,
        /// Follow memories saved at most this long after it: e.g. 7d, 12h, 90m.
        #[arg(long, default_value = "7d")]
        window: String,
        /// Decay link confidences as of this time (RFC 3339 or YYYY-MM-DD; default: now).
        #[arg(long)]
        as_of: Option<String>,
    },
    /// Weekly rollup of decision memory: decisions made and outcomes recorded in [since, until),
    /// open and blocked items at `until`, and suggested next actions.
    ///
    /// Blocked: not superseded, latest outcome failed or partial. Next actions, in order:
    /// supersede each blocked item; record the outcome of decisions open for 7 days or more;
    /// record progress on open decisions nothing implements.
    Rollup {
        /// Start of the window (RFC 3339 or YYYY-MM-DD; default: 7 days before --until).
        #[arg(long)]
        since: Option<String>,
        /// End of the window, exclusive (RFC 3339 or YYYY-MM-DD; default: now).
        #[arg(long)]
        until: Option<String>,
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
    /// Measure retrieval quality on labelled data.
    #[command(subcommand)]
    Eval(EvalCommand),
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
pub(crate) enum ImportCommand {
    /// Import chat messages: one JSON object per line (JSONL), from a file or `-` for stdin.
    ///
    /// {"speaker": "Caroline", "text": "I went to the LGBTQ support group.", "timestamp":
    /// "2023-05-08T13:56:00Z", "session": "s1"}
    ///
    /// Fields: speaker (required; an id without whitespace, becomes the event's agent), text
    /// (required), timestamp (required; RFC 3339 with an offset), session (required; an id),
    /// conversation (optional id; default: the session), id (optional; default
    /// `<session>:<n>`, n = the message's 1-based position in its session in the file), reply_to
    /// (optional; the id of the message answered), attributes (optional JSON object, kept in the
    /// payload; not `text` or `speaker`). Unknown fields are refused; every bad line is reported
    /// with its number, the path, the value and the rule.
    ///
    /// Names in the text (capitalised runs, acronyms) become `concept` entities, and a name of a
    /// speaker of the same conversation is that speaker's `agent` entity.
    Conversation(ConversationArgs),
    /// Import LoCoMo conversations (a JSON list of `{sample_id, conversation, qa, ...}`).
    ///
    /// Each turn becomes an event `<sample_id>:<dia_id>` in session `<sample_id>:S<n>`, at the
    /// session's date plus the turn's index in seconds, with an image's caption in the payload.
    /// Only the conversations are imported: questions, answers and annotations are not read.
    /// LoCoMo is CC BY-NC 4.0: use it for research, tests and benchmarks only (non-commercial).
    Locomo(LocomoArgs),
    /// Import an OTLP/HTTP traces export request (protobuf or OTLP/JSON): one event per span.
    ///
    /// GenAI spans map through the schema's OpenTelemetry mapping (`gen_ai.operation.name`:
    /// `invoke_agent` → agent.invoke, `chat` → llm.chat, `execute_tool` → tool.execute, ...);
    /// span → event id `<trace id>-<span id>`, parent span → parent_event_id,
    /// `gen_ai.conversation.id` → session (default: the trace), agent, tool, status and timing;
    /// every other attribute is kept in the payload. A span that cannot become an event is
    /// rejected under its number in the request (counted from 1); the others are imported.
    /// A body that is not an export request changes nothing.
    Otlp(OtlpArgs),
    /// Import an MCP memory server's knowledge graph file (`memory.jsonl`).
    ///
    /// Lines {"type":"entity","name","entityType","observations":[...]} and
    /// {"type":"relation","from","to","relationType"}. Each observation becomes an
    /// `observation.input` event about its entity (session `mcp-memory:<name>`, id derived from
    /// the entity and the text), an entity without observations one event naming it; entity
    /// types map onto ctxgraph's (`person` is `user`, unknown ones `concept`); each relation
    /// becomes a fact `from relationType to` (source `mcp-memory`), its type declared as a
    /// predicate when the schema lacks it. Importing the file again adds nothing.
    McpMemory(McpMemoryArgs),
    /// Import episodes: a JSON list (or {"episodes": [...]}) of {name, content or
    /// episode_body, source, source_description, reference_time, group_id, uuid}.
    ///
    /// Each episode becomes an event at its reference time (`observation.message` for source
    /// `message`, whose `Speaker: text` gives the agent; `observation.input` otherwise), in
    /// session `group_id` (default `episodes`), id its uuid or derived from its content.
    Episodes(ToolFileArgs),
    /// Import a memory-layer export: a JSON list (or {"results": [...]}) of {id, memory,
    /// user_id, agent_id, run_id, created_at, updated_at, metadata, categories}.
    ///
    /// Each memory becomes an `observation.input` event at its creation time, with its user
    /// and agent, in session `run_id` (default `mem0:<user>`), and a `context` memory with the
    /// same id (its first category as the topic); an updated memory is a new one of each.
    Mem0(ToolFileArgs),
    /// Import a folder of Markdown notes linked with [[wikilinks]].
    ///
    /// Each note becomes a document (split into sentences; names of known entities found in
    /// them are mentions), and each link [[Target]] in note N a fact `Target mentioned_in N`
    /// between the notes' `concept` entities, source the note's path.
    Markdown(MarkdownArgs),
}

#[derive(Debug, Args)]
pub(crate) struct McpMemoryArgs {
    /// The `memory.jsonl` file.
    pub(crate) file: PathBuf,
    /// The time given to observations, which the file does not keep (RFC 3339) [default:
    /// now]; an observation imported before keeps its first time.
    #[arg(long)]
    pub(crate) at: Option<String>,
    #[command(flatten)]
    pub(crate) import: ImportArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ToolFileArgs {
    /// The JSON file.
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) import: ImportArgs,
}

#[derive(Debug, Args)]
pub(crate) struct MarkdownArgs {
    /// The folder (read recursively; `.md` and `.markdown` files, hidden folders skipped).
    pub(crate) dir: PathBuf,
    #[command(flatten)]
    pub(crate) import: ImportArgs,
}

#[derive(Debug, Args)]
pub(crate) struct OtlpArgs {
    /// The request body as saved from an exporter, e.g. `trace.pb` or `trace.json`.
    pub(crate) file: PathBuf,
    /// The body's encoding; default: from the file's extension (`.json` or `.pb`).
    #[arg(long, value_enum)]
    pub(crate) format: Option<OtlpFormat>,
    #[command(flatten)]
    pub(crate) import: ImportArgs,
}

/// The two OTLP/HTTP body encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OtlpFormat {
    /// OTLP/JSON (`application/json`).
    Json,
    /// Binary protobuf (`application/x-protobuf`).
    Protobuf,
}

#[derive(Debug, Args)]
pub(crate) struct ConversationArgs {
    /// The JSONL file of messages, or `-` for standard input.
    #[arg(default_value = "-")]
    pub(crate) file: PathBuf,
    /// Stop at the first bad message; nothing of it (or after it) is written.
    #[arg(long)]
    pub(crate) strict: bool,
    #[command(flatten)]
    pub(crate) import: ImportArgs,
}

#[derive(Debug, Args)]
pub(crate) struct LocomoArgs {
    /// The LoCoMo JSON file (e.g. `locomo10.json`).
    pub(crate) file: PathBuf,
    /// Import only this conversation (its `sample_id`, e.g. `conv-26`); repeat for more.
    #[arg(long = "sample", value_name = "ID")]
    pub(crate) samples: Vec<String>,
    #[command(flatten)]
    pub(crate) import: ImportArgs,
}

/// Flags shared by the import commands.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// Do not show a progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Do not enrich after importing (run `ctxgraph enrich` later).
    #[arg(long)]
    pub(crate) no_enrich: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ConsolidateArgs {
    /// Most SIMILAR_TO edges an event chooses (its nearest events above the threshold).
    #[arg(long, default_value_t = 5)]
    pub(crate) similar_k: usize,
    /// Least cosine similarity for a SIMILAR_TO edge, in [0, 1].
    #[arg(long, default_value_t = 0.85)]
    pub(crate) similar_threshold: f32,
    /// Apply the retention tiers first (archive old and cold unimportant events).
    #[arg(long)]
    pub(crate) retention: bool,
    /// With --retention: the time ages are measured at (RFC 3339, or `now`); default: the newest
    /// event's time.
    #[arg(long, requires = "retention")]
    pub(crate) as_of: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RecallArgs {
    /// The question or task, in words.
    pub(crate) question: String,
    /// Items to return (1 to 100).
    #[arg(long, default_value_t = 10)]
    pub(crate) k: usize,
    /// Override the classified intent: why, when, who_what, related, overview or lookup.
    #[arg(long)]
    pub(crate) intent: Option<String>,
    /// Only events at or after this time (RFC 3339).
    #[arg(long)]
    pub(crate) since: Option<String>,
    /// Only events at or before this time (RFC 3339).
    #[arg(long)]
    pub(crate) until: Option<String>,
    /// Only events of this session.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// Only events by this agent.
    #[arg(long)]
    pub(crate) agent: Option<String>,
    /// Only events of this trace (a run, a conversation).
    #[arg(long)]
    pub(crate) trace: Option<String>,
    /// Only events and memories with one of these scope tags (repeatable).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
    /// Only events and memories whose scope location is this path or below it.
    #[arg(long)]
    pub(crate) location: Option<String>,
    /// Only node types (repeatable), e.g. --label Event; expansion still walks through others.
    #[arg(long)]
    pub(crate) label: Vec<String>,
    /// Keep the most valuable items whose text fits this many tokens.
    #[arg(long)]
    pub(crate) budget_tokens: Option<usize>,
    /// Diversify (maximal marginal relevance) with this λ in [0, 1]; 1 is no diversity.
    #[arg(long)]
    pub(crate) diversity: Option<f64>,
    /// Only paths whose least confidence is at least this, in [0, 1].
    #[arg(long, default_value_t = 0.0)]
    pub(crate) min_confidence: f64,
    /// The time salience is measured at (RFC 3339); default: the newest candidate's time.
    #[arg(long)]
    pub(crate) as_of: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RetentionArgs {
    /// The time ages are measured at (RFC 3339, or `now`); default: the newest event's time.
    #[arg(long)]
    pub(crate) as_of: Option<String>,
    /// Apply the tiers (without it, only show what would change).
    #[arg(long)]
    pub(crate) apply: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum FactCommand {
    /// Record a claim: SUBJECT PREDICATE OBJECT, e.g.
    /// `fact add Alice reports_to Bob --subject-type person --object-type person`.
    ///
    /// Subject and object name existing entities (an id, or a name matched forgivingly); a name no
    /// entity has needs its type (--subject-type, --object-type), which creates the entity. The
    /// object is an entity or, with --literal (or when the predicate allows either and no entity
    /// matches), a literal string. Exits 2, writing nothing, on any problem.
    Add(FactAddArgs),
    /// Retract a fact: it is not true from --at (default now) on. The claims stay in the log.
    Retract {
        /// The fact id, as `fact list` shows it.
        fact_id: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
        /// From when (RFC 3339 or YYYY-MM-DD); now by default.
        #[arg(long)]
        at: Option<String>,
    },
    /// List the facts true now (or on --as-of), with confidence, sources and contradictions.
    ///
    /// Exits 1 when there is none.
    List {
        /// True on this date instead of now (RFC 3339 or YYYY-MM-DD).
        #[arg(long, value_name = "DATE")]
        as_of: Option<String>,
        /// Only facts about this subject (a forgiving name or an entity id).
        #[arg(long)]
        subject: Option<String>,
        /// Only facts with this predicate.
        #[arg(long)]
        predicate: Option<String>,
        /// Also facts not true at that time (retracted, expired, not yet valid).
        #[arg(long)]
        all: bool,
        /// Only facts claimed (asserted, or asserted again) at or after this time (RFC 3339 or
        /// YYYY-MM-DD): what was learnt since then.
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
    },
    /// Every fact about an entity, as subject or object, true or not. Exits 1 when there is none.
    About {
        /// A name (forgiving) or an entity id.
        entity: String,
        /// The entity's type, when the name is ambiguous.
        #[arg(long = "type")]
        entity_type: Option<String>,
        /// Which facts count as true: on this date instead of now.
        #[arg(long, value_name = "DATE")]
        as_of: Option<String>,
    },
    /// Facts that contradict each other now (or on --as-of): one subject, one single-valued
    /// predicate, different objects. Exits 1 when there is none.
    Contradictions {
        /// On this date instead of now (RFC 3339 or YYYY-MM-DD).
        #[arg(long, value_name = "DATE")]
        as_of: Option<String>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct FactAddArgs {
    /// What the claim is about: a name (forgiving) or an entity id.
    pub(crate) subject: String,
    /// A controlled predicate, e.g. reports_to (case and `-` forgiven).
    pub(crate) predicate: String,
    /// An entity name or id, a literal (see --literal), a slot value (--object-slot) or a type
    /// (--object-is-type).
    pub(crate) object: String,
    /// The subject's type (person, project, decision, concept, source, or an event entity type such as service or tool):
    /// restricts matching, and creates the entity when no name matches.
    #[arg(long)]
    pub(crate) subject_type: Option<String>,
    /// The object's type, as --subject-type.
    #[arg(long, conflicts_with = "literal")]
    pub(crate) object_type: Option<String>,
    /// The object is a literal string, not an entity.
    #[arg(long)]
    pub(crate) literal: bool,
    /// The object is a slot value: OBJECT is the value of this slot (e.g. `--object-slot genre`
    /// with OBJECT `drama`).
    #[arg(long, value_name = "SLOT", conflicts_with_all = ["literal", "object_type", "object_is_type"])]
    pub(crate) object_slot: Option<String>,
    /// The object is a declared Type (`type add`), named by OBJECT.
    #[arg(long, conflicts_with_all = ["literal", "object_type"])]
    pub(crate) object_is_type: bool,
    /// How sure, from 0 to 1 (default 1).
    #[arg(long)]
    pub(crate) confidence: Option<f64>,
    /// Where the claim comes from: stored verbatim, never fetched.
    #[arg(long)]
    pub(crate) source: Option<String>,
    /// True from this date (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    pub(crate) valid_from: Option<String>,
    /// True until this date, exclusive.
    #[arg(long)]
    pub(crate) valid_to: Option<String>,
    /// The sentence the claim was read from (an id `doc show` prints, e.g. doc-…/t3).
    #[arg(long)]
    pub(crate) cites: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DocCommand {
    /// Ingest a text or Markdown file. The same URL and content again is a no-op; changed
    /// content under the same URL is the next version.
    Add {
        /// The file (`-` for stdin).
        file: PathBuf,
        /// The source URL or name stored with it (verbatim, never fetched); default: FILE as given.
        #[arg(long)]
        url: Option<String>,
        /// How to split it; default: markdown for .md and .markdown files, text otherwise.
        #[arg(long, value_enum)]
        format: Option<DocFormatArg>,
        /// A title (default: the first level-1 heading).
        #[arg(long)]
        title: Option<String>,
        /// Also turn capitalised names and acronyms found by the LLM-free extractor into
        /// `concept` entities that the sentences mention.
        #[arg(long)]
        extract: bool,
    },
    /// A document's sections, paragraphs and sentences (with ids to cite and the entities they
    /// mention). Exits 1 when there is no such document.
    Show {
        /// A document id, or a URL (its latest version).
        id: String,
    },
    /// Every document version. Exits 1 when there is none.
    List,
}

/// How a document is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DocFormatArg {
    /// Headings, lists and code fences.
    Markdown,
    /// Blank-line paragraphs.
    Text,
}

#[derive(Debug, Subcommand)]
pub(crate) enum EntitiesCommand {
    /// List SAME_AS pairs, best first: candidates (with the rules that fired) and decided pairs.
    ///
    /// Exits 1 when there is none.
    Candidates {
        /// Show at most this many pairs.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Which pairs: undecided candidates, merged, rejected, or all.
        #[arg(long, value_enum, default_value_t = CandidateStatusArg::Candidate)]
        status: CandidateStatusArg,
    },
    /// Decide that two entities are the same thing (recorded in the log; `reproject` keeps it).
    ///
    /// The pair's SAME_AS edge becomes decided with confidence 1.0, and resolution never proposes
    /// it again. A later `reject` of the pair replaces this decision.
    Merge(DecisionArgs),
    /// Decide that two entities are different things (recorded in the log; `reproject` keeps it).
    ///
    /// The pair's SAME_AS edge becomes decided with confidence 0.0, and resolution never proposes
    /// it again. A later `merge` of the pair replaces this decision.
    Reject(DecisionArgs),
    /// Recompute the SAME_AS candidates and RELATED_TO edges now (deterministic, idempotent);
    /// `consolidate` does this too, with the default settings.
    Resolve {
        /// Most candidates (and, separately, RELATED_TO edges) per entity.
        #[arg(long, default_value_t = 5)]
        max_per_entity: usize,
        /// Least name-embedding cosine for a candidate on that evidence alone, in [0, 1].
        #[arg(long, default_value_t = 0.9)]
        min_cosine: f32,
    },
}

/// How a write names an entity: an existing one, or one to create with `--entity-type`.
#[derive(Debug, Args)]
pub(crate) struct EntityRefArgs {
    /// The entity: an id such as `concept:alien` (`{entity_type}:{name}`), or a bare name when
    /// only one entity type has an entity of that name; with --entity-type, a name.
    pub(crate) entity: String,
    /// Create the entity with this entity type (such as concept, user, tool or service) when it
    /// does not exist; ENTITY is then its name. Without it, the entity must exist.
    #[arg(long)]
    pub(crate) entity_type: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TypeCommand {
    /// Declare a type (a lightweight class such as Film or CVE). Names are case-insensitive.
    Add {
        /// The type's name.
        name: String,
        /// What it is.
        #[arg(long)]
        description: Option<String>,
    },
    /// Record that an entity is an instance of a declared type (INSTANCE_OF).
    Instance {
        #[command(flatten)]
        entity: EntityRefArgs,
        /// The type's name (declared with `type add`).
        #[arg(value_name = "TYPE")]
        type_name: String,
    },
    /// List the declared types with their instances. Exits 1 when there is none.
    List,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SlotCommand {
    /// Record one observation of an entity's slot value (HAS_SLOT), e.g. `slot set alien genre
    /// "science fiction" --confidence 0.8 --source imdb`.
    Set {
        #[command(flatten)]
        entity: EntityRefArgs,
        /// The slot label, e.g. genre (case-insensitive).
        slot: String,
        /// The value, e.g. drama.
        value: String,
        /// How sure, in [0, 1]. The edge keeps the highest confidence ever recorded.
        #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
        confidence: f64,
        /// Where it comes from (kept verbatim, never fetched); sources accumulate.
        #[arg(long)]
        source: Option<String>,
    },
    /// List an entity's slot values and types. Exits 1 when it has none.
    List {
        /// The entity: an id such as `concept:alien`, or a bare name.
        entity: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ChecklistCommand {
    /// Define a checklist from a TOML or JSON file (`-` for stdin).
    ///
    /// The file holds `name`, `description` and `slots`, a list of slot specs `{name,
    /// expect_labels, relation = HAS_SLOT | INSTANCE_OF, required = true | false, cardinality =
    /// one | many}`; only `name` is needed in a spec (labels default to [name], relation to
    /// HAS_SLOT, required to true, cardinality to one). A checklist is immutable: defining it
    /// again differently is refused.
    Define {
        /// The checklist file, TOML or JSON (a file starting with `{` is JSON).
        file: PathBuf,
    },
    /// List the checklists with their slot specs. Exits 1 when there is none.
    List,
    /// Which slot specs of a checklist an entity satisfies, which are missing (required or
    /// optional), and which have more distinct values than their cardinality allows.
    Check {
        /// The checklist's name.
        name: String,
        /// The entity: an id such as `concept:alien`, or a bare name.
        entity: String,
    },
    /// The slot to ask about next: the spec whose answer best splits the candidates, per unit
    /// of its cost, and whether to ask the user or search the graph first.
    ///
    /// Expected information gain over equally likely candidates: log2 n minus the sum over
    /// answer groups of (n_g / k) log2 (n_g + u), where the u candidates without a value (unknown)
    /// are no answer and stay whatever the answer, and k = n − u. Goals influencing the checklist
    /// that prefer a slot value weigh the candidates holding it (x(1 + 1/(1 + priority))), and
    /// the same formula runs over the weighted prior. Specs are ranked by gain / cost; ties:
    /// fewer unknowns, then required first, then checklist order. When facts or events mention
    /// answers, searching first is worth gain x p_found / search-cost. Exits 1 when no slot
    /// splits the candidates.
    Next {
        /// The checklist's name.
        name: String,
        /// The candidate entities, comma-separated (ids or bare names).
        #[arg(long, value_delimiter = ',', required = true, num_args = 1..)]
        candidates: Vec<String>,
        /// An answer already known, SPEC=VALUE (repeatable): candidates whose value contradicts
        /// it are ruled out first (one without a value is kept).
        #[arg(long, value_name = "SPEC=VALUE")]
        known: Vec<String>,
        /// Only this user's goals bias the prior [default: every goal influencing the checklist].
        #[arg(long)]
        user: Option<String>,
        /// What a search of the graph costs, in units of one question.
        #[arg(long, default_value_t = ctxgraph::DEFAULT_SEARCH_COST)]
        search_cost: f64,
        /// Do not look for the answers in the graph's facts and events.
        #[arg(long)]
        no_search: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum GoalCommand {
    /// Add a user's goal, linked to the user (GOAL_OF) and the checklists it influences.
    Add {
        /// The goal, e.g. "watch the AFI top 100".
        name: String,
        /// The user: an id such as `user:alice` or a bare name of a user entity.
        #[arg(long)]
        user: String,
        /// Create the user entity when it does not exist (USER is then its name).
        #[arg(long)]
        create_user: bool,
        /// Checklists it influences, comma-separated (each must be defined).
        #[arg(long, value_delimiter = ',')]
        influences: Vec<String>,
        /// What it means.
        #[arg(long)]
        description: Option<String>,
        /// Its time horizon in words, e.g. "this year".
        #[arg(long)]
        horizon: Option<String>,
        /// Its priority, 0 the highest.
        #[arg(long)]
        priority: Option<u64>,
        /// A slot value it favours, SLOT=VALUE (repeatable): candidates holding it are more
        /// likely in `checklist next` of a checklist it influences.
        #[arg(long, value_name = "SLOT=VALUE")]
        prefers: Vec<String>,
    },
    /// List goals, of one user or all. Exits 1 when there is none.
    List {
        /// Only this user's goals (an id such as `user:alice`, or a bare name).
        #[arg(long)]
        user: Option<String>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct DecisionArgs {
    /// The first entity: an id such as `tool:read_file` (`{entity_type}:{name}`), or a bare name
    /// when only one entity type has an entity of that name.
    pub(crate) a: String,
    /// The second entity, likewise.
    pub(crate) b: String,
    /// Why, in words (kept in the log and shown in the edge's justification).
    #[arg(long)]
    pub(crate) reason: Option<String>,
    /// Who decides (an id without spaces, e.g. a user name).
    #[arg(long)]
    pub(crate) by: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CandidateStatusArg {
    /// Proposed by resolution, not decided yet.
    Candidate,
    /// Merged by a person.
    Merged,
    /// Rejected by a person.
    Rejected,
    /// Every pair.
    All,
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
pub(crate) enum EvalCommand {
    /// Evidence retrieval on LoCoMo conversations: recall_any@k and recall_all@k (k = 1, 5, 10,
    /// 20) and NDCG@10 per category and overall, for `recall` and for plain BM25 in the same run.
    ///
    /// Each conversation is ingested into a fresh temporary store; the QA annotations never reach
    /// it. The adversarial category (5) is left out unless --include-adversarial. LoCoMo is
    /// CC BY-NC 4.0 (non-commercial research use).
    Locomo {
        /// The LoCoMo JSON file (a list of conversations with `qa`).
        file: PathBuf,
        /// Items ranked per question (at least 20).
        #[arg(long, default_value_t = 20)]
        k: usize,
        /// Score the adversarial category too.
        #[arg(long)]
        include_adversarial: bool,
        /// Write the rankings as JSONL (`{"sample_id", "qa_index", "ranked": [dia_id, ...]}`).
        #[arg(long)]
        rankings: Option<PathBuf>,
        /// Only this conversation (its sample_id).
        #[arg(long)]
        sample: Option<String>,
    },
    /// Recall on agent runs: recall_any@k and recall_all@k (k = 1, 5, 10) and NDCG@10 per
    /// question family and overall, for `recall` and for plain BM25 in the same run.
    ///
    /// Generates a seeded trace (the generator of `ctxgraph generate`), delivers it out of order
    /// with some lines twice into a fresh store, writes decision memories and facts derived from
    /// it, enriches and consolidates, then asks question families whose answers are known from
    /// the trace (session_failure, user_request, after_failure, who_involved, outage, when_did,
    /// agent_activity, decision, fact), each phrased several ways, through `recall` with the
    /// question alone and k = 10.
    ///
    /// With --db redis://HOST:PORT/NAME the trace goes to the new scale-out store NAME-0 (a used
    /// one is refused), its later stages run in this process as the workers run them, and the
    /// report says `backend`: run it once on each backend to compare the scores side by side.
    Traces {
        /// Seed of the trace and of the questions asked.
        #[arg(long, default_value_t = 7)]
        seed: u64,
        /// Events in the trace.
        #[arg(long, default_value_t = 20_000)]
        events: usize,
        /// Questions asked per family (fewer when the trace has fewer cases).
        #[arg(long, default_value_t = 30)]
        per_family: usize,
        /// Build the store at this path (created when missing) instead of a temporary directory;
        /// writes are idempotent, so a store from an earlier run with the same --seed and
        /// --events is reused as it is.
        #[arg(long)]
        store: Option<PathBuf>,
        /// Write the rankings as JSONL (`{"family", "question", "anchors", "evidence": [key, ...],
        /// "ranked": [key, ...], "bm25": [key, ...]}`, keys `Label/id`).
        #[arg(long)]
        rankings: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Save a memory: a decision, checkpoint, insight or context.
    ///
    /// New memories are linked automatically to earlier ones: temporal (same session, within an
    /// hour), same topic (decisions), semantic (similar meaning). Prints the memory id.
    Save(MemorySaveArgs),
    /// Record the outcome of a memory: success, failed or partial, with the reason.
    Outcome {
        /// The memory id.
        memory: String,
        /// success, failed or partial (any letter case).
        #[arg(long)]
        outcome: String,
        /// Why it went that way.
        #[arg(long)]
        reason: String,
        /// Who says so: user, system or llm.
        #[arg(long, default_value = "user")]
        created_by: String,
        /// When (RFC 3339 or YYYY-MM-DD; default: now).
        #[arg(long)]
        at: Option<String>,
        /// The outcome id (default: derived from the content).
        #[arg(long)]
        id: Option<String>,
    },
    /// Link two memories explicitly.
    Link {
        /// Source memory id.
        from: String,
        /// Target memory id.
        to: String,
        /// supersedes, implements, outcome_of, relates_to or temporal.
        #[arg(long = "type")]
        link_type: String,
        /// Confidence in [0, 1].
        #[arg(long, default_value_t = 1.0)]
        confidence: f64,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
        /// Who links: user, system or llm.
        #[arg(long, default_value = "user")]
        created_by: String,
        /// Free-form metadata, a JSON object.
        #[arg(long)]
        metadata: Option<String>,
        /// When (RFC 3339 or YYYY-MM-DD; default: now).
        #[arg(long)]
        at: Option<String>,
    },
    /// Delete (or with --downvote, down-vote) the links of a type from one memory to another.
    ///
    /// A vote is a record: a deleted link stays out of every traversal, and each down-vote
    /// halves the link's confidence, after any rebuild.
    Unlink {
        /// Source memory id.
        from: String,
        /// Target memory id.
        to: String,
        /// supersedes, implements, outcome_of, relates_to or temporal.
        #[arg(long = "type")]
        link_type: String,
        /// Down-vote instead of deleting.
        #[arg(long)]
        downvote: bool,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
        /// When (RFC 3339 or YYYY-MM-DD; default: now).
        #[arg(long)]
        at: Option<String>,
    },
    /// Show a memory with its outcomes and live links. Exits 1 when there is none.
    Show {
        /// The memory id.
        id: String,
        /// Decay link confidences as of this time (RFC 3339 or YYYY-MM-DD; default: now).
        #[arg(long)]
        as_of: Option<String>,
    },
    /// List memories, newest first. Exits 1 when there is none.
    List {
        /// Only this kind: decision, checkpoint, insight or context.
        #[arg(long)]
        kind: Option<String>,
        /// Only this topic.
        #[arg(long)]
        topic: Option<String>,
        /// Show at most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Contextual search, and the decision history behind a question such as "Why did we abandon
    /// JWT?": the evolution chain of the decision it is about, the evidence and the outcomes.
    /// Exits 1 when no memory matches.
    Search {
        /// The question.
        query: String,
        /// The memory in context (its connected memories are boosted; default: the best match).
        #[arg(long)]
        context: Option<String>,
        /// Show at most this many matches.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Decay link confidences as of this time (RFC 3339 or YYYY-MM-DD; default: now).
        #[arg(long)]
        as_of: Option<String>,
    },
    /// Rebuild every memory's embedding, full-text entry and automatic links from the log (after
    /// `reproject` or a bulk `ingest` of memory records).
    Relink,
    /// Show, or switch on or off for this store, the automatic links between memories
    /// (temporal, same topic, semantic). The setting is kept in the store, so every later
    /// command and the server obey it; switching rebuilds the links (off removes the automatic
    /// ones; explicit links stay). `memory save --no-auto-link` does it for one memory.
    AutoLink {
        /// `on` or `off`; without it, shows the setting.
        #[arg(value_parser = ["on", "off"])]
        state: Option<String>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct MemorySaveArgs {
    /// decision, checkpoint, insight or context.
    #[arg(long)]
    pub(crate) kind: String,
    /// The topic (required for a decision).
    #[arg(long)]
    pub(crate) topic: Option<String>,
    /// The memory itself.
    #[arg(long)]
    pub(crate) content: String,
    /// Why.
    #[arg(long)]
    pub(crate) reasoning: Option<String>,
    /// The memory this one replaces.
    #[arg(long)]
    pub(crate) supersedes: Option<String>,
    /// A memory this one carries out (repeatable).
    #[arg(long)]
    pub(crate) implements: Vec<String>,
    /// How sure, in [0, 1].
    #[arg(long)]
    pub(crate) confidence: Option<f64>,
    /// Who saves it: user, system or llm.
    #[arg(long, default_value = "user")]
    pub(crate) created_by: String,
    /// The session it belongs to (temporal links stay inside one).
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// When (RFC 3339 or YYYY-MM-DD; default: now).
    #[arg(long)]
    pub(crate) at: Option<String>,
    /// The memory id (default: derived from the content).
    #[arg(long)]
    pub(crate) id: Option<String>,
    /// Link it to nothing automatically, now or when links are rebuilt (explicit links only).
    #[arg(long)]
    pub(crate) no_auto_link: bool,
}

#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// The store to copy: a store file, or a scale-out store `redis://HOST[:PORT]/NAME`.
    #[arg(value_name = "FROM")]
    pub(crate) from: String,
    /// Where to copy it: a scale-out store whose log is empty (from a file), or a store file
    /// that does not exist (from a scale-out store).
    #[arg(value_name = "TO")]
    pub(crate) to: String,
    /// To a scale-out store: copy the log only; `ctxgraph --db TO worker` folds it.
    #[arg(long)]
    pub(crate) no_fold: bool,
}

#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// This worker's name in the projection group [default: HOST-PID]: 1 to 64 characters of
    /// `A-Z a-z 0-9 _ -`, unique among the workers running (with `--stage enrich`, which joins
    /// no group, the name its messages give).
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Fold until the graph reaches the log's head, then exit (for scripts).
    #[arg(long)]
    pub(crate) once: bool,
    /// Take over the entries another worker read and left unacknowledged this many seconds
    /// (it died).
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub(crate) claim_after: u64,
    /// The stage this worker runs: `project` folds the log into the graph (in the consumer
    /// group `projection`); `enrich` enriches what the graph holds (keywords, summaries,
    /// importance, embeddings, full-text and lexical indexes) behind its own checkpoint, and
    /// with `--once` exits when it reaches the graph's checkpoint; `consolidate` runs stage 3
    /// (summaries, vector index, SIMILAR_TO, entity resolution) whenever stage 2 has moved
    /// since the last consolidation, and with `--once` looks once.
    #[arg(long, value_enum, default_value_t = WorkerStage::Project)]
    pub(crate) stage: WorkerStage,
}

/// What a `worker` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum WorkerStage {
    /// Stage 1: fold the log into the graph.
    Project,
    /// Stage 2: enrich the folded graph.
    Enrich,
    /// Stage 3: consolidate the enriched graph.
    Consolidate,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// A configuration file whose `[serve]` table sets any of these flags by name (`addr =
    /// "127.0.0.1:8377"`); a flag or environment variable given wins over it [default:
    /// ctxgraph.toml in the working directory, when it exists].
    #[arg(long, env = "CTXGRAPH_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The data directory: principals.json and one store per tenant under tenants/; with
    /// --db redis://HOST:PORT/NAME, principals.json only, and tenant T's store is NAME-T on
    /// that server [default: ctxgraph-data].
    #[arg(long, env = "CTXGRAPH_DATA")]
    pub(crate) data: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port (printed on the first line). Plain HTTP:
    /// an address other than loopback gets a warning, put a TLS proxy in front
    /// [default: 127.0.0.1:8377].
    #[arg(long)]
    pub(crate) addr: Option<String>,
    /// Longest question of a recall or search, in characters; longer ones are refused with 413
    /// `limit.question_chars` [default: 4096].
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) max_question_chars: Option<usize>,
    /// Most words in the question of a recall or search; more are refused with 413
    /// `limit.question_words` [default: 256].
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) max_question_words: Option<usize>,
    /// Deadline of one request's engine work, in seconds: past it the request is answered 503
    /// `request.deadline`. Also how long a shutdown waits for requests in flight [default: 30].
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) request_timeout: Option<u64>,
    /// Save memories without automatic links (temporal, same topic, semantic) in every store
    /// served; explicit links are kept. A request may also ask for it per memory (`auto_link`).
    /// The configuration file's `no_auto_link = true` does the same.
    #[arg(long)]
    pub(crate) no_auto_link: bool,
    /// Niceness (0-19) the threads running reads add to their own, so that under load the
    /// writer, which acknowledges every queued ingest at once, gets the CPU before the reads;
    /// the cores stay busy either way. 0 runs reads and writes at one priority. Linux only
    /// [default: 15].
    #[arg(long, env = "CTXGRAPH_READ_NICE", value_name = "N",
          value_parser = clap::value_parser!(u8).range(0..=19))]
    pub(crate) read_nice: Option<u8>,
    /// Reader engines each store served opens at most (1-64), each with its own connection;
    /// more concurrent reads wait for one. Reads are CPU work: engines beyond the cores only
    /// make each read last longer, and long reads keep the write-ahead log from starting over
    /// [default: the cores plus one].
    #[arg(long, env = "CTXGRAPH_READERS", value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=ctxgraph_server::MAX_READERS as i64))]
    pub(crate) readers: Option<u16>,
}

#[derive(Debug, Args)]
pub(crate) struct UiArgs {
    /// Port on 127.0.0.1 to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub(crate) port: u16,
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The data directory (with the global --as, naming a principal of its registry): the
    /// principal's tenant picks the store (with --db redis://HOST:PORT/NAME, tenant T's store
    /// is NAME-T on that server).
    #[arg(long, env = "CTXGRAPH_DATA", conflicts_with = "store", requires = "as_principal")]
    pub(crate) data: Option<PathBuf>,
    /// Serve one store file directly, acting as the local principal (admin, writer,
    /// pii_reviewer of tenant `default`). Without it and --data, the store --db names, which
    /// may be a scale-out store (redis://HOST:PORT/NAME).
    #[arg(long, value_name = "FILE")]
    pub(crate) store: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PrincipalCommand {
    /// Add a principal and print its API key (shown once; only its hash is stored).
    Add {
        /// Name, unique in the registry.
        name: String,
        /// Its tenant: the store it reads and writes.
        #[arg(long)]
        tenant: String,
        /// A role (repeat): writer, admin, pii_reviewer, or any role records name in their scope.
        #[arg(long = "role")]
        roles: Vec<String>,
        /// The data directory.
        #[arg(long, env = "CTXGRAPH_DATA", default_value = "ctxgraph-data")]
        data: PathBuf,
    },
    /// List principals (never their keys).
    List {
        /// The data directory.
        #[arg(long, env = "CTXGRAPH_DATA", default_value = "ctxgraph-data")]
        data: PathBuf,
    },
    /// Remove a principal; its key stops working at once.
    Remove {
        /// Name.
        name: String,
        /// The data directory.
        #[arg(long, env = "CTXGRAPH_DATA", default_value = "ctxgraph-data")]
        data: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Ingestion throughput: log append, stage-1 projection, end to end; bytes per event; open time.
    /// With `--db redis://HOST:PORT/NAME`: append through the Redis log and fold with
    /// `--workers` projection workers into new stores `NAME-0`, `NAME-1`, … (tenants); over
    /// several instances (`redis://A,B/NAME`), an equal share of the stores on each.
    Ingest {
        /// Number of synthetic events.
        #[arg(long, default_value_t = 100_000)]
        events: usize,
        /// Records per durable transaction (per append, on a scale-out store).
        #[arg(long, default_value_t = 2000)]
        batch_size: usize,
        /// Directory for the temporary stores (default: the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Scale-out only: projection workers (threads, each with its own connections).
        #[arg(long, default_value_t = 1)]
        workers: usize,
        /// Scale-out only: stores the events are spread over (default: the larger of 2 and
        /// --workers, so runs with 1 and 2 workers fold the same stores). One store's fold is
        /// ordered: workers share out stores, not one store's records.
        #[arg(long)]
        stores: Option<usize>,
    },
    /// Recall latency (p50, p95, p99, query embedding included) and throughput on a synthetic
    /// store (ingested, enriched and consolidated first).
    Recall {
        /// Number of synthetic events.
        #[arg(long, default_value_t = 100_000)]
        events: usize,
        /// Questions asked (each once to warm up, then timed).
        #[arg(long, default_value_t = 300)]
        queries: usize,
        /// Threads for the throughput measurement (one engine each; measured with the timed
        /// engine's caches shared, as a server's readers share theirs, and on fresh engines).
        #[arg(long, default_value_t = RECALL_THREADS)]
        threads: usize,
        /// Directory for the temporary store (default: the system temp dir).
        #[arg(long, conflicts_with = "store")]
        dir: Option<PathBuf>,
        /// Keep the built store at this path; when it exists, reuse it instead of building
        /// (it must have been built by this command with the same --events).
        #[arg(long)]
        store: Option<PathBuf>,
        /// Write each question's pack as JSONL (`{"question", "intent", "items": [{"key",
        /// "score", "factors", "found_by", "seed", "path"}], "edges", "unknowns", "candidates"}`),
        /// so two builds can be checked to return the same packs (`cmp` the files).
        #[arg(long)]
        rankings: Option<PathBuf>,
        /// With `--db redis://…`: run stage 2 on both backends before asking (the store file
        /// enriched and its lexical index built; the scale-out store enriched as `worker --stage
        /// enrich` does), so the packs compared use vectors and BM25 too.
        #[arg(long)]
        enrich: bool,
    },
    /// The semantic layer: embedding throughput, enrichment, consolidation (summaries, vector
    /// index build, SIMILAR_TO), vector query time and recall@10 against exact search, edges per
    /// event.
    Semantic {
        /// Number of synthetic events.
        #[arg(long, default_value_t = 100_000)]
        events: usize,
        /// Vector queries timed (and checked against exact search).
        #[arg(long, default_value_t = 200)]
        queries: usize,
        /// Directory for the temporary store (default: the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Forgetting: the time to forget 1, 10 and 100 events (one call per batch) in a
    /// consolidated synthetic store, by phase.
    Forget {
        /// Number of synthetic events in the store.
        #[arg(long, default_value_t = 100_000)]
        events: usize,
        /// Directory for the temporary stores (default: the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Keep the built store at this path and reuse it when it exists (the forgets run on
        /// a copy); it must have been built by this command or `bench recall` with the same
        /// --events.
        #[arg(long)]
        store: Option<PathBuf>,
    },
    /// Decision-memory traversals: evolution chain and impact latency (p50, p99) on a store of
    /// memories (optionally among background events), link building time and links per memory.
    Memory {
        /// Number of memories.
        #[arg(long, default_value_t = 10_000)]
        memories: usize,
        /// Synthetic background events loaded first.
        #[arg(long, default_value_t = 0)]
        events: usize,
        /// Traversals timed per kind.
        #[arg(long, default_value_t = 2_000)]
        queries: usize,
        /// Directory for the temporary store (default: the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Load on a server over loopback: rounds of N concurrent clients, each mixing batch
    /// ingestion (one request in five, 10 events) and recall for a bounded time; reports
    /// throughput, latency percentiles, errors, and the server's peak memory and CPU time per
    /// request. Starts its own `ctxgraph serve` on a free port unless --url is given (then
    /// neither of the last two is measured). Exits 2 if any request failed.
    Serve {
        /// Concurrent clients per round, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,8,64")]
        clients: Vec<usize>,
        /// Seconds per round.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Synthetic events loaded before the first round.
        #[arg(long, default_value_t = 5_000)]
        preload: usize,
        #[command(flatten)]
        target: ServerTargetArgs,
    },
    /// Crash safety: a writer (`ctxgraph ingest`, or `ctxgraph serve` fed by writer threads) is
    /// killed with SIGKILL at a random moment, again and again, over one store; then every
    /// acknowledged record must be in the log and the graph must equal its reprojection.
    /// Reports kills, acknowledged and lost records, and whether reprojection gave the same
    /// graph. Exits 2 if a record was lost or the graphs differ.
    Crash {
        /// How many times a writer is killed.
        #[arg(long, default_value_t = 100)]
        kills: usize,
        /// Fresh events each run writes.
        #[arg(long, default_value_t = 500)]
        events_per_run: usize,
        /// Which writer is killed: ingest, serve, or both in turn.
        #[arg(long, value_enum, default_value_t = CrashTarget::Both)]
        target: CrashTarget,
        /// Writer threads feeding the server.
        #[arg(long, default_value_t = 4)]
        writers: usize,
        /// Seed of the kill moments.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Directory for the temporary store (default: the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Sustained mixed load on a server over loopback: N clients cycle through ingest batches,
    /// recall, search, event by id and session timeline for a bounded time; reports requests/s,
    /// p50/p99 and errors per kind, and the server's resident memory sampled over time (warm,
    /// max, ratio) with its write-ahead log size. The same load runs for --warmup seconds
    /// first, unmeasured; the warm memory is the server's at the end of it. Starts its own
    /// `ctxgraph serve` on a free port unless --url is given (a server it did not start has no
    /// memory samples). Exits 2 if any request failed.
    Soak {
        /// Concurrent clients.
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// How long the measured load lasts, in seconds.
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Seconds of the same load before the measured part, whose end gives the warm memory.
        #[arg(long, default_value_t = 30.0)]
        warmup: f64,
        /// Synthetic events loaded before the load.
        #[arg(long, default_value_t = 5_000)]
        preload: usize,
        /// Seconds between two samples of the server's memory.
        #[arg(long, default_value_t = 5.0)]
        sample_every: f64,
        #[command(flatten)]
        target: ServerTargetArgs,
    },
}

/// The server a load benchmark drives: one it starts, or a running one.
#[derive(Debug, Args)]
pub(crate) struct ServerTargetArgs {
    /// Drive this running server instead of starting one, e.g. http://127.0.0.1:8080.
    #[arg(long, requires = "key")]
    pub(crate) url: Option<String>,
    /// The API key for --url (a principal with the writer role).
    #[arg(long, env = "CTXGRAPH_KEY", hide_env_values = true)]
    pub(crate) key: Option<String>,
    /// Data directory of the started server (default: a temporary directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
}

/// Which writer `bench crash` kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CrashTarget {
    /// `ctxgraph ingest` of a JSONL file.
    Ingest,
    /// `ctxgraph serve` taking HTTP ingest from writer threads.
    Serve,
    /// Each in turn.
    Both,
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

/// What `forget` removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ForgetKindArg {
    /// One event.
    Event,
    /// Every event of a session.
    Session,
    /// An entity: what is about it (facts, slots, types, decisions, explicit edges) goes, and
    /// the events, documents and receipts that name it are rewritten without it. An agent
    /// cannot be forgotten alone (forget.entity_required): forget its sessions.
    Entity,
    /// A memory with its outcomes and links.
    Memory,
}

/// `receipt` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ReceiptCommand {
    /// Add a decision receipt from a JSON file (or `-` for stdin): one object, or an array of
    /// them, in the receipt layout (task, actor, approvals, referenced_inputs, policies_checked,
    /// exceptions, action, outcome, timestamps). Cited events and entities must exist. Exits 2,
    /// writing nothing of a refused receipt, on any problem.
    Add {
        /// The JSON file, or `-` for stdin.
        #[arg(default_value = "-")]
        file: PathBuf,
    },
    /// List receipts, newest committed first. Exits 1 when none matches.
    List {
        /// Only receipts of this task.
        #[arg(long)]
        task: Option<String>,
        /// Only receipts by this actor.
        #[arg(long)]
        actor: Option<String>,
        /// Only receipts committed at or after this time (RFC 3339 or YYYY-MM-DD).
        #[arg(long)]
        since: Option<String>,
        /// Only receipts committed at or before this time (RFC 3339 or YYYY-MM-DD).
        #[arg(long)]
        until: Option<String>,
        /// Only receipts that checked this policy: ID, or ID=allow, ID=deny.
        #[arg(long, value_name = "ID[=allow|deny]")]
        policy: Option<String>,
        /// Show at most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The output format.
    #[arg(long, value_enum)]
    pub(crate) format: ExportFormat,
    /// Only the events of this session.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// Only the events of this trace.
    #[arg(long)]
    pub(crate) trace: Option<String>,
    /// Only events at or after this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    pub(crate) since: Option<String>,
    /// Only events before this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    pub(crate) until: Option<String>,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// W3C PROV-O as Turtle.
    ProvTtl,
    /// W3C PROV-O as JSON-LD.
    ProvJsonld,
    /// A Cypher script: index DDL, then CREATE statements.
    Cypher,
    /// GraphML.
    Graphml,
    /// The log records as JSONL, which `ingest` and `restore` read back.
    Jsonl,
}
