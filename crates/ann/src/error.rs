//! The crate's error type: bad input (shapes, configuration) and corrupt stored blobs.

/// What went wrong in an index operation.
///
/// Bad input (`Dimension`, `Shape`, `Config`, `Empty`) is the caller's error; `Corrupt` means a
/// stored blob (centroids or an inverted list) does not decode, which is a service error: the
/// index should be rebuilt.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A vector's length differs from the index dimension. User error.
    #[error("vector has {got} dimensions, the index has {expected}")]
    Dimension {
        /// The index dimension.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A flat buffer of vectors is not a whole number of rows, or parallel slices differ in
    /// length. User error.
    #[error("{what}: {detail}")]
    Shape {
        /// Which argument.
        what: &'static str,
        /// What does not fit.
        detail: String,
    },
    /// A configuration value is out of range (zero dimension, zero lists). User error.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// There is nothing to train on. User error.
    #[error("no vectors to train on")]
    Empty,
    /// A stored blob does not decode. Service error: rebuild the index.
    #[error("corrupt {what}: {detail}")]
    Corrupt {
        /// Which kind of blob (`centroids`, `inverted list`).
        what: &'static str,
        /// What is wrong with it.
        detail: String,
    },
}

impl Error {
    /// A stable machine code for the error, e.g. `ann.corruption`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Dimension { .. } => "ann.dimension",
            Error::Shape { .. } => "ann.shape",
            Error::Config(_) => "ann.config",
            Error::Empty => "ann.empty",
            Error::Corrupt { .. } => "ann.corruption",
        }
    }
}
