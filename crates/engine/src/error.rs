//! The engine's error: every failure of the crates below, with a stable code.

use ctxgraph_embed::EmbedError;
use ctxgraph_ontology::{SchemaError, ValidationErrors};
use ctxgraph_projection::ProjectionError;
use ctxgraph_store::StoreError;

/// Any failure of an engine operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A record broke the envelope or schema rules (user error).
    ///
    /// Not a `source`: the message already lists every violation, and a report that prints the
    /// chain would list them twice.
    #[error("invalid record: {0}")]
    Validation(ValidationErrors),
    /// A schema module was refused (user error).
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// Storage failed, or a record conflicts with a stored one.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The projection failed (a bug or a damaged store).
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    /// The embedding model failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The store's vectors were made by another embedding model than the configured one.
    #[error(
        "the store's vectors were made by `{}` ({} dimensions) but the engine is configured with `{}` ({} dimensions): run `ctxgraph reembed` to re-embed with the configured model",
        .stored.0, .stored.1, .configured.0, .configured.1
    )]
    EmbeddingModel {
        /// Model id and dimension recorded in the store.
        stored: (String, usize),
        /// Model id and dimension configured.
        configured: (String, usize),
    },
    /// The vector index failed (a damaged index blob or a vector of the wrong dimension).
    #[error(transparent)]
    Index(#[from] ctxgraph_ann::Error),
    /// The lexical index failed (a damaged posting list).
    #[error(transparent)]
    TextIndex(#[from] ctxgraph_lexical::Error),
    /// Reading the input failed.
    #[error("reading input: {0}")]
    Input(#[from] std::io::Error),
    /// The target of a forget does not exist, or was forgotten already (user error); nothing
    /// was changed.
    #[error("no {kind} `{id}` to forget (rule: forget.unknown_target)")]
    UnknownForgetTarget {
        /// Event, session, entity or memory.
        kind: &'static str,
        /// The id given.
        id: String,
    },
    /// The entity cannot be forgotten on its own (user error): a record names it in a field
    /// that cannot be left out (an event's `agent_id`); forget those events or sessions.
    /// Nothing was changed.
    #[error(
        "entity `{id}` is the `{field}` of {kind} `{record}`: forget its events or sessions instead (rule: forget.entity_required)"
    )]
    ForgetEntityRequired {
        /// The entity id.
        id: String,
        /// The kind of the record naming it.
        kind: &'static str,
        /// That record's id.
        record: String,
        /// The field.
        field: &'static str,
    },
    /// The forget was committed (its records are redacted and everything derived is gone), but
    /// rewriting the store's files afterwards failed (the store file; a scale-out server's
    /// append-only file), so bytes of the forgotten content may remain in unused parts of them
    /// until the next forget rewrites them (service error).
    #[error(
        "the forget was committed, but rewriting the store's files failed: {source} (rule: forget.rewrite_failed)"
    )]
    ForgetRewrite {
        /// What failed.
        source: StoreError,
    },
    /// A stored record no longer validates: the log was damaged or written by something else.
    #[error("log record at position {position} does not decode: {reason}")]
    Corruption {
        /// Where.
        position: u64,
        /// Why.
        reason: String,
    },
    /// An access rule refused the request: a bad principal or tenant name, an unknown key, a
    /// missing role, a principal registry that does not parse.
    #[error("{message} ({code})")]
    Access {
        /// Stable code, e.g. `access.unknown_key`, `access.forbidden`.
        code: &'static str,
        /// What was refused, naming the value and the rule.
        message: String,
    },
    /// The operation writes the graph in place, which only the embedded store allows: on a
    /// remote store (the scale-out backend) the graph is folded by projection workers, and the
    /// engine only appends to the log and reads (user error). Nothing was changed.
    #[error(
        "{operation} is not supported on the remote store {location}: there the graph is folded by projection workers, and the engine only appends records and reads; run it on a store file (rule: db.backend_unsupported)"
    )]
    BackendUnsupported {
        /// The operation refused, e.g. `consolidate`.
        operation: String,
        /// The store, as a URL without credentials.
        location: String,
    },
    /// Indexes prepared from one store were given to the writer of another: they name that
    /// store's nodes. Nothing was changed.
    #[error(
        "the indexes were built from the store {built}, not from {store}: build them from a snapshot of this store (rule: index.other_store)"
    )]
    IndexBuildElsewhere {
        /// The store file the build read.
        built: String,
        /// The store file of the writer asked to install it.
        store: String,
    },
    /// A request is over a bound on the work it may ask for (user error): a question too long
    /// or with too many words. Nothing was done.
    #[error("{message} ({code})")]
    Limit {
        /// Stable code, e.g. `limit.question_chars`.
        code: &'static str,
        /// Which field, how large, and the limit.
        message: String,
    },
}

impl From<ValidationErrors> for Error {
    fn from(e: ValidationErrors) -> Self {
        Error::Validation(e)
    }
}

impl Error {
    /// Stable machine code, e.g. `envelope.required_field`, `log.conflict`, `store.io`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Validation(e) => e.code(),
            Error::Schema(e) => e.code(),
            Error::Store(e) => e.code(),
            Error::Projection(e) => e.code(),
            Error::Input(_) => "input.io",
            Error::Embed(e) => e.code(),
            Error::EmbeddingModel { .. } => "store.embedding_model_mismatch",
            Error::Corruption { .. } => "store.corruption",
            Error::Index(e) => e.code(),
            Error::TextIndex(e) => e.code(),
            Error::Access { code, .. } | Error::Limit { code, .. } => code,
            Error::UnknownForgetTarget { .. } => "forget.unknown_target",
            Error::ForgetEntityRequired { .. } => "forget.entity_required",
            Error::ForgetRewrite { .. } => "forget.rewrite_failed",
            Error::BackendUnsupported { .. } => "db.backend_unsupported",
            Error::IndexBuildElsewhere { .. } => "index.other_store",
        }
    }

    /// Whether the caller's input caused it (as opposed to the service failing).
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Validation(_) | Error::Schema(_) => true,
            Error::Store(e) => matches!(e, StoreError::Conflict { .. }),
            Error::EmbeddingModel { .. }
            | Error::Access { .. }
            | Error::Limit { .. }
            | Error::UnknownForgetTarget { .. }
            | Error::ForgetEntityRequired { .. }
            | Error::BackendUnsupported { .. } => true,
            Error::Projection(_)
            | Error::ForgetRewrite { .. }
            | Error::Input(_)
            | Error::Corruption { .. }
            | Error::Embed(_)
            | Error::Index(_)
            | Error::IndexBuildElsewhere { .. }
            | Error::TextIndex(_) => false,
        }
    }
}
