//! Where an engine keeps its log and graph: the embedded store, or a remote store whose graph
//! projection workers fold (the scale-out backend). Reads go through either; the writes that
//! change the graph in place need the embedded store, and [`Backend::embedded`] is the one
//! place that refuses them on a remote store (the file-only tuning calls in `engine.rs` do
//! nothing there). Enrichment (stage 2) is the exception: it runs on a remote store that offers
//! a stage-2 transaction (`RemoteStore::begin_enrich`), and is refused on one that does not.

use ctxgraph_store::{Embedded, RemoteStore, StoreRead};

use crate::error::Error;

/// An engine's store.
pub(crate) enum Backend {
    /// One SQLite file: the log and the graph commit together.
    Embedded(Embedded),
    /// A remote store: the engine appends to its log and reads its graph, which workers fold
    /// from the log later.
    Remote(Box<dyn RemoteStore>),
}

impl Backend {
    /// The embedded store, for `operation`; on a remote store the typed refusal
    /// ([`Error::BackendUnsupported`]), since `operation` writes the graph in place.
    pub(crate) fn embedded(&self, operation: &str) -> Result<&Embedded, Error> {
        match self {
            Backend::Embedded(store) => Ok(store),
            Backend::Remote(store) => Err(unsupported(operation, store.as_ref())),
        }
    }

    /// [`Backend::embedded`], for writing.
    pub(crate) fn embedded_mut(&mut self, operation: &str) -> Result<&mut Embedded, Error> {
        match self {
            Backend::Embedded(store) => Ok(store),
            Backend::Remote(store) => Err(unsupported(operation, store.as_ref())),
        }
    }

    /// A read of the log and the graph: one read transaction on the embedded store, the graph
    /// as its workers have folded it on a remote one.
    pub(crate) fn begin_read(&self) -> Result<Box<dyn StoreRead + '_>, Error> {
        Ok(match self {
            Backend::Embedded(store) => Box::new(store.begin_read()?),
            Backend::Remote(store) => store.begin_read()?,
        })
    }

    /// The refusal of `operation` on a remote store that lacks what it needs.
    pub(crate) fn unsupported_by(operation: &str, store: &dyn RemoteStore) -> Error {
        unsupported(operation, store)
    }

    /// Bytes the store occupies on this machine's disk (0 for a remote store, which keeps
    /// nothing here).
    pub(crate) fn size_on_disk(&self) -> u64 {
        match self {
            Backend::Embedded(store) => store.size_on_disk(),
            Backend::Remote(_) => 0,
        }
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Embedded(store) => store.fmt(f),
            Backend::Remote(store) => f.debug_tuple("Remote").field(&store.location()).finish(),
        }
    }
}

/// The refusal of `operation` on a remote store.
fn unsupported(operation: &str, store: &dyn RemoteStore) -> Error {
    Error::BackendUnsupported { operation: operation.to_owned(), location: store.location() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgraph_ontology::ValidRecord;
    use ctxgraph_store::{Appended, StoreError};

    #[derive(Debug)]
    struct Nowhere;

    impl RemoteStore for Nowhere {
        fn begin_read(&self) -> Result<Box<dyn StoreRead + '_>, StoreError> {
            Err(StoreError::Remote { backend: "test", detail: "no store here".into() })
        }
        fn append_batch(
            &self,
            _: &[&ValidRecord],
            _: &str,
        ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
            Err(StoreError::Remote { backend: "test", detail: "no store here".into() })
        }
        fn location(&self) -> String {
            "redis://127.0.0.1:1/nowhere".into()
        }
    }

    #[test]
    fn a_remote_store_refuses_in_place_writes_by_name() {
        let mut backend = Backend::Remote(Box::new(Nowhere));
        let e = backend.embedded_mut("consolidate").unwrap_err();
        assert_eq!(e.code(), "db.backend_unsupported");
        let text = e.to_string();
        assert!(text.contains("consolidate") && text.contains("redis://127.0.0.1:1/nowhere"));
        assert!(backend.embedded("backup").is_err());
        assert_eq!(backend.size_on_disk(), 0);
    }
}
