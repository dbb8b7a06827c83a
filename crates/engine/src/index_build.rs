//! Index builds off the writer: the vector index and the lexical index built from a read
//! snapshot ([`Engine::prepare_indexes`], on any engine of the store, on any thread), then
//! installed by the writer in one short transaction ([`Engine::install_indexes`]).
//!
//! Why: a build costs seconds of CPU (k-means, posting lists) but needs only reads, and a
//! writer that builds in place makes every write queued behind it wait. The result is what an
//! in-place build at the snapshot gives: the same centroids, lists and posting blobs, the
//! same vectors in the index. What was written after the snapshot stays outside the index,
//! searched exactly as between any two builds.
//!
//! What the install must not do is undo a removal: a build that saw a node which a forget,
//! retention pass, reprojection, re-embedding or consolidation deleted since would name it
//! again (and a vector replaced since would be filed under its old value). The store counts
//! such transactions (`GraphReader::removal_generation`); a build whose snapshot is older
//! than the last one is dropped at install, as is a part whose index another build or
//! deletion replaced since (its index generation moved), and the caller builds again.

use std::path::PathBuf;

use ctxgraph_store::GraphReader;

use crate::error::Error;
use crate::text_index::{self, BuiltText};
use crate::vector_index::{self, BuiltVectors};
use crate::{Engine, TextIndexReport};

/// Which indexes [`Engine::prepare_indexes`] builds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexParts {
    /// The vector index (IVF).
    pub vectors: bool,
    /// The lexical index (BM25 posting lists).
    pub text: bool,
}

/// Indexes built from one read snapshot of a store, waiting to be installed by its writer
/// ([`Engine::install_indexes`]). Holds the built blobs (the vector index's int8 codes, a
/// quarter of the vectors' size, and the posting lists), not the vectors.
pub struct PreparedIndexes {
    /// The store file it was built from.
    store: PathBuf,
    /// The snapshot's removal generation.
    removals: u64,
    /// The vector index's generation at the snapshot, and the build (`None`: not asked;
    /// `Some(None)`: the snapshot held no vector).
    vectors: Option<(u64, Option<BuiltVectors>)>,
    /// The lexical index's generation at the snapshot, and the build.
    text: Option<(u64, Option<BuiltText>)>,
}

impl std::fmt::Debug for PreparedIndexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedIndexes")
            .field("store", &self.store)
            .field("removals", &self.removals)
            .field("vectors", &self.vectors.as_ref().map(|(_, b)| b.as_ref().map(|b| b.nids.len())))
            .field("text", &self.text.as_ref().map(|(_, b)| b.as_ref().map(BuiltText::report)))
            .finish()
    }
}

impl PreparedIndexes {
    /// Vectors the prepared vector index files (0 when none was asked or there were none).
    pub fn vectors_indexed(&self) -> u64 {
        self.vectors.as_ref().and_then(|(_, b)| b.as_ref()).map_or(0, |b| b.nids.len() as u64)
    }
}

/// What happened to each part of a [`PreparedIndexes`] at install.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct InstallReport {
    /// Vectors the installed vector index files (`None`: no vector index was installed).
    pub vectors: Option<u64>,
    /// What the installed lexical index covers (`None`: none was installed).
    pub text: Option<TextIndexReport>,
    /// Parts dropped because the store changed under them since the snapshot (see the module
    /// docs): build them again from a newer snapshot.
    pub stale: IndexParts,
}

impl Engine {
    /// Build the indexes `parts` names from one read snapshot of this engine's store, without
    /// writing anything: the heavy part of [`Engine::index_vectors`] and
    /// [`Engine::index_text`], run on a reader engine (or any thread) while the writer goes on
    /// writing. [`Engine::install_indexes`] on the store's writer stores the result.
    ///
    /// Refused on a remote store (`db.backend_unsupported`): its indexes are kept by its
    /// workers.
    pub fn prepare_indexes(&self, parts: IndexParts) -> Result<PreparedIndexes, Error> {
        let store = self.backend.embedded("index build from a snapshot")?;
        let read = store.begin_read()?;
        let removals = removal_generation(&read, store.path())?;
        let threads = self.options().consolidate.threads.max(1);
        let vectors = match parts.vectors {
            true => Some((read.ann_generation()?, vector_index::build(&read, threads)?)),
            false => None,
        };
        let text = match parts.text {
            true => Some((read.text_generation()?, text_index::build(&read)?)),
            false => None,
        };
        Ok(PreparedIndexes { store: store.path().to_path_buf(), removals, vectors, text })
    }

    /// Store indexes [`Engine::prepare_indexes`] built, in one transaction, each part only if
    /// nothing it names was deleted or replaced since its snapshot and its index was not
    /// rebuilt since (else the part is dropped and reported `stale`). The stored index is then
    /// the one an in-place build at the snapshot would have left; what was written since stays
    /// outside it.
    ///
    /// Errors: `index.other_store` when `prepared` was built from another store file;
    /// `db.backend_unsupported` on a remote store; a store error leaves the indexes as they
    /// were.
    pub fn install_indexes(&mut self, prepared: PreparedIndexes) -> Result<InstallReport, Error> {
        let store = self.backend.embedded_mut("index install")?;
        if store.path() != prepared.store {
            return Err(Error::IndexBuildElsewhere {
                built: prepared.store.display().to_string(),
                store: store.path().display().to_string(),
            });
        }
        let mut w = store.begin_write()?;
        let removed = removal_generation(&w, &prepared.store)? != prepared.removals;
        let mut report = InstallReport::default();
        if let Some((generation, built)) = prepared.vectors {
            if removed || w.ann_generation()? != generation {
                report.stale.vectors = true;
            } else {
                // Every vector the stored index files was in the snapshot (no removal, no
                // other build since), so the build files each again.
                vector_index::store_refiled(&mut w, built.as_ref())?;
                report.vectors = Some(built.map_or(0, |b| b.nids.len() as u64));
            }
        }
        if let Some((generation, built)) = prepared.text {
            if removed || w.text_generation()? != generation {
                report.stale.text = true;
            } else {
                text_index::store(&mut w, built.as_ref())?;
                report.text = Some(built.map_or_else(TextIndexReport::default, |b| b.report()));
            }
        }
        if report.vectors.is_some() || report.text.is_some() {
            w.commit()?;
        }
        Ok(report)
    }
}

/// The store's removal generation (an embedded store always keeps one; one that does not
/// cannot tell whether a build went stale, so builds are refused there).
fn removal_generation(read: &dyn GraphReader, store: &std::path::Path) -> Result<u64, Error> {
    read.removal_generation()?.ok_or_else(|| Error::BackendUnsupported {
        operation: "index build from a snapshot".into(),
        location: store.display().to_string(),
    })
}
