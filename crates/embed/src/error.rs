//! The crate's error type, with stable machine-readable codes.

use std::path::PathBuf;

/// Why an embedder could not be loaded or could not embed.
///
/// Match on [`EmbedError::code`] rather than on the message: codes are stable, messages are for
/// people.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A model file is missing a field, has the wrong size or magic number, or asks for
    /// something this crate does not implement.
    #[error("model format: {file}: {message}")]
    ModelFormat {
        /// The file at fault (`config.json`, `vocab.txt` or `embeddings.bin`).
        file: String,
        /// What is wrong with it.
        message: String,
    },
    /// A model file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file that could not be read.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The embedding backend failed while embedding (for embedders that can fail at that
    /// point; the built-in static model cannot).
    #[error("embedding backend: {message}")]
    Backend {
        /// What went wrong.
        message: String,
    },
}

impl EmbedError {
    /// A stable code naming the kind of error: `embed.model_format`, `embed.io` or
    /// `embed.backend`.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::ModelFormat { .. } => "embed.model_format",
            Self::Io { .. } => "embed.io",
            Self::Backend { .. } => "embed.backend",
        }
    }

    pub(crate) fn format(file: &str, message: impl Into<String>) -> Self {
        Self::ModelFormat { file: file.to_owned(), message: message.into() }
    }

    /// A backend failure with its message.
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "only remote backends fail at embedding time")
    )]
    pub(crate) fn backend(message: impl Into<String>) -> Self {
        Self::Backend { message: message.into() }
    }
}
