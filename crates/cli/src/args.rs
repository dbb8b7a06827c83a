//! Command-line arguments: every command, flag and its help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// ctxgraph: a local-first context graph, long-term memory for AI agents.
///
/// Agents write what happened as JSON records; ctxgraph keeps every record in an append-only log
/// and projects it into a typed property graph of events, entities and the edges between them.
///
/// Exit codes: 0 success; 1 nothing found (get, neighbors, session, chain, entities candidates,
/// fact list, about and contradictions, doc show and list);
/// 2 error, including an ingestion that rejected any record.
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
    /// Ingest JSONL records (events, explicit edges, schema modules) from a file or `-` for stdin.
    Ingest(IngestArgs),
    /// Import conversations: chat messages as JSONL, or the LoCoMo benchmark's JSON.
    ///
    /// Each message becomes an `observation.message` event (speaker as the agent, session order
    /// as FOLLOWS, reply_to as CAUSED_BY) with the names in its text as entities, extracted
    /// without an LLM. Importing the same input again finds every record stored. Exits 2 when
    /// any message was rejected (the summary says why).
    #[command(subcommand)]
    Import(ImportCommand),
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
    /// Entity resolution: list SAME_AS candidates, merge or reject a pair, resolve again.
    ///
    /// Resolution proposes SAME_AS candidates between entities of one type whose names are
    /// spelling variants (read_file, read-file, ReadFile), one-letter typos or plurals, or whose
    /// name embeddings have cosine >= 0.9, and RELATED_TO between versions of one family (gpt-4,
    /// gpt-4o, gpt-4-turbo). It never merges: a person decides, and the decision is a log record.
    #[command(subcommand)]
    Entities(EntitiesCommand),
    /// Facts: claims about entities with confidence, sources and validity (add, retract, list,
    /// about, contradictions).
    ///
    /// Names are forgiving: `alice`, `Alice`, `ReadFile` for read_file, a one-letter typo or a
    /// close name embedding all find the entity; a name that matches several is an error listing
    /// them. Predicates are controlled: mentioned_in, decided_in, reports_to, depends_on,
    /// resolved_by, blocked_by, tagged, belongs_to (and any a schema module adds). The same claim
    /// from another source raises the fact's confidence (noisy-or); a second object of a
    /// single-valued predicate (reports_to, decided_in, belongs_to) is kept as a contradiction.
    #[command(subcommand)]
    Fact(FactCommand),
    /// Source documents: text or Markdown split into sections, paragraphs and sentences that
    /// facts can cite (add, show, list).
    #[command(subcommand)]
    Doc(DocCommand),
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
    /// Search: full text (BM25) over event text, summaries and entity names, or by meaning
    /// (--semantic: nearest embeddings through the vector index).
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
    /// SUMMARIZES), then score = relevance × path weight × confidence × salience.
    Recall(RecallArgs),
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
    /// Items to return.
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
    /// Only node types (repeatable), e.g. --label Event; expansion still walks through others.
    #[arg(long)]
    pub(crate) label: Vec<String>,
    /// Keep the most valuable items whose text fits this many tokens.
    #[arg(long)]
    pub(crate) budget_tokens: Option<usize>,
    /// Diversify (maximal marginal relevance) with this λ in [0, 1]; 1 is no diversity.
    #[arg(long)]
    pub(crate) diversity: Option<f64>,
    /// Only paths whose least confidence is at least this.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) min_confidence: f64,
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
    /// Record a claim: SUBJECT PREDICATE OBJECT, e.g. `fact add alice reports_to bob`.
    ///
    /// The object is an entity or, with --literal (or when the predicate allows either and no
    /// entity matches), a literal string. Exits 2, writing nothing, on any problem.
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
    /// An entity name or id, or a literal (see --literal).
    pub(crate) object: String,
    /// The subject's type (person, project, decision, concept, source, or a seed-000 type):
    /// restricts matching, and creates the entity when no name matches.
    #[arg(long)]
    pub(crate) subject_type: Option<String>,
    /// The object's type, as --subject-type.
    #[arg(long, conflicts_with = "literal")]
    pub(crate) object_type: Option<String>,
    /// The object is a literal string, not an entity.
    #[arg(long)]
    pub(crate) literal: bool,
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
    /// Recall latency (p50, p95, p99, query embedding included) and throughput on a synthetic
    /// store (ingested, enriched and consolidated first).
    Recall {
        /// Number of synthetic events.
        #[arg(long, default_value_t = 100_000)]
        events: usize,
        /// Questions asked (each once to warm up, then timed).
        #[arg(long, default_value_t = 300)]
        queries: usize,
        /// Threads for the throughput measurement (one engine each).
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// Directory for the temporary store (default: the system temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
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
