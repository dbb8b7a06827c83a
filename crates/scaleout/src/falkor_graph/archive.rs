//! Retention's archive marks on the scale-out backend: which events a retention pass moved out
//! of the graph, and when, kept beside the graph as the store file keeps its `archived` table.
//!
//! # Layout (under the store's hash tag)
//!
//! ```text
//! archived     hash: a node's key as JSON `[label, id]` → when it was archived (RFC 3339)
//! ```
//!
//! A reset of the graph (`reproject`) leaves the marks, so the rebuilt graph leaves the
//! archived events out again; only `reproject --include-archive` drops them.

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_store::{Archived, StoreError};

use super::FalkorGraph;

/// The hash of archive marks.
pub(super) const ARCHIVED: &str = "archived";

/// A node's key as a field of the hash.
fn field(key: &NodeKey) -> Result<String, StoreError> {
    serde_json::to_string(&(&key.label, &key.id))
        .map_err(|e| StoreError::Corruption(format!("a node key does not encode: {e}")))
}

impl FalkorGraph {
    /// [`ctxgraph_store::GraphReader::is_archived`].
    pub(crate) fn archive_mark_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        self.raw_query(redis::cmd("HEXISTS").arg(self.stage2_key(ARCHIVED)).arg(field(key)?))
    }

    /// [`ctxgraph_store::GraphReader::archived`]: the marks in key order after `after`, at most
    /// `limit`.
    pub(crate) fn archive_marks_after(
        &self,
        after: Option<&NodeKey>,
        limit: usize,
    ) -> Result<Vec<Archived>, StoreError> {
        Ok(self
            .archive_marks()?
            .into_iter()
            .filter(|(k, _)| after.is_none_or(|a| k > a))
            .take(limit)
            .map(|(key, archived_at)| Archived { key, archived_at })
            .collect())
    }

    /// Every archive mark, by node key.
    pub(crate) fn archive_marks(&self) -> Result<BTreeMap<NodeKey, String>, StoreError> {
        let raw: BTreeMap<String, String> =
            self.raw_query(redis::cmd("HGETALL").arg(self.stage2_key(ARCHIVED)))?;
        raw.into_iter()
            .map(|(f, at)| {
                let (label, id): (String, String) = serde_json::from_str(&f).map_err(|e| {
                    StoreError::Corruption(format!(
                        "{}: archive mark `{f}` is not a node key [label, id]: {e}",
                        self.url
                    ))
                })?;
                Ok((NodeKey { label, id }, at))
            })
            .collect()
    }

    /// The command that writes `marks` (none when there are none).
    pub(crate) fn put_archive_marks(
        &self,
        marks: &BTreeMap<NodeKey, String>,
    ) -> Result<Option<redis::Cmd>, StoreError> {
        if marks.is_empty() {
            return Ok(None);
        }
        let mut hset = redis::cmd("HSET");
        hset.arg(self.stage2_key(ARCHIVED));
        for (key, at) in marks {
            hset.arg(field(key)?).arg(at);
        }
        Ok(Some(hset))
    }

    /// Drop every archive mark (`reproject --include-archive`).
    pub fn drop_archive_marks(&self) -> Result<(), StoreError> {
        self.raw_query::<redis::Value>(redis::cmd("DEL").arg(self.stage2_key(ARCHIVED))).map(drop)
    }
}
