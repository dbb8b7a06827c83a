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

/// Why an export or an import could not be made.
#[derive(Debug, thiserror::Error)]
pub enum InteropError {
    /// The input is not in the format named, at a place the message gives.
    #[error("{source_name}:{line}: {message} (rule: {code})")]
    Input {
        /// The file or stream read.
        source_name: String,
        /// 1-based line (or item) number; 0 when the whole input is at fault.
        line: usize,
        /// Stable machine code.
        code: &'static str,
        /// What is wrong: the field, the value and the rule.
        message: String,
    },
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
            InteropError::Input { code, .. } | InteropError::Unwritable { code, .. } => code,
        }
    }
}
