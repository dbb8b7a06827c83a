//! The crate's error type.

/// What went wrong in a lexical-index operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Input out of order or out of range (the caller's error).
    #[error("{what}: {detail}")]
    Input {
        /// Which argument.
        what: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// A stored posting list does not decode. Service error: rebuild the index.
    #[error("corrupt posting list: {0}")]
    Corrupt(String),
}

impl Error {
    /// A stable machine code for the error, e.g. `lexical.corruption`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Input { .. } => "lexical.input",
            Error::Corrupt(_) => "lexical.corruption",
        }
    }
}
