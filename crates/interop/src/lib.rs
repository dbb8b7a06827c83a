//! ctxgraph's exchange formats, as pure functions.
//!
//! [`export`] writes a part of the graph (nodes and edges read through a principal's view) as
//! W3C PROV-O (Turtle and JSON-LD), a Cypher script with the schema's index DDL, or GraphML,
//! using only the PROV-O classes and properties the schema modules declare. [`import`] reads
//! what other memory tools export (the MCP memory server's JSONL, episode lists, memory lists,
//! folders of Markdown notes) into ctxgraph records, which the caller ingests through the
//! normal validated path. Nothing here opens a file or a store.

pub mod export;
pub mod import;

/// Why an export could not be written (imports refuse items one by one instead, see
/// [`import::Refused`]).
#[derive(Debug, thiserror::Error)]
pub enum InteropError {
    /// Writing the output failed.
    #[error("writing the export: {0} (rule: export.io)")]
    Io(#[from] std::io::Error),
    /// A value of the graph cannot be written in the format (a non-finite number).
    #[error("{at}: {message} (rule: {code})")]
    Unwritable {
        /// The node or edge and property.
        at: String,
        /// Stable machine code.
        code: &'static str,
        /// Why.
        message: String,
    },
}

impl InteropError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            InteropError::Unwritable { code, .. } => code,
            InteropError::Io(_) => "export.io",
        }
    }
}
