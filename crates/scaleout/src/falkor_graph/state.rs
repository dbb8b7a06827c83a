//! A read view's state keys (the graph's counters and the settings) read once: the first
//! read of any of them in a view reads them all, in one round trip (an `MGET` of every known
//! counter and an `HGETALL` of the settings, pipelined), and the view answers from that memo
//! until it ends. A view is a point in time anyway; the recall pipeline asks for several of
//! these keys (generations, checkpoints, settings) and each was a round trip of its own.
//!
//! Only a view holds a memo ([`FalkorGraph::hold_state`], by `ScaleOutStore`'s reads): a
//! worker's fold reads and watches its counters live. A counter not in the known list is read
//! on its first use and memoised too, so a key added later is still read once per view.

use std::collections::BTreeMap;

use ctxgraph_store::StoreError;

use super::{FalkorGraph, raw_remote};

/// What a view has read of the state keys.
#[derive(Debug, Default)]
pub(crate) struct StateMemo {
    /// Counters by key (`None`: unset, which reads as 0); `None` until the first read.
    counters: Option<BTreeMap<String, Option<u64>>>,
    /// The settings hash, read with the counters.
    settings: BTreeMap<String, String>,
    /// Stage 2's embedding model and dimension, read with the counters.
    embedding: Embedding,
}

/// Stage 2's embedding model and dimension as the store holds them (either may be unset).
type Embedding = (Option<String>, Option<usize>);

impl FalkorGraph {
    /// Every counter key a read view may ask for: the graph's, and the generations of stage 2's
    /// and stage 3's indexes, which recall's vector and lexical phases read first.
    fn state_keys(&self) -> Vec<String> {
        let mut keys =
            vec![self.checkpoint.clone(), self.generation.clone(), self.enriched.clone()];
        keys.extend(
            ["text_generation", "vector_generation", super::stage3::ANN_GENERATION]
                .map(|suffix| self.stage2_key(suffix)),
        );
        keys
    }

    /// Start a read view: state keys are read once, on first use, until
    /// [`FalkorGraph::release_state`].
    pub(crate) fn hold_state(&self) {
        *self.state.borrow_mut() = Some(StateMemo::default());
    }

    /// End a read view: state keys are read live again.
    pub(crate) fn release_state(&self) {
        *self.state.borrow_mut() = None;
    }

    /// Read every known counter and the settings into the held memo, if it has not been.
    fn load_state(&self) -> Result<(), StoreError> {
        let loaded = self.state.borrow().as_ref().is_none_or(|m| m.counters.is_some());
        if loaded {
            return Ok(());
        }
        let keys = self.state_keys();
        type State = (Vec<Option<u64>>, BTreeMap<String, String>, Embedding);
        let (values, settings, embedding): State = redis::pipe()
            .cmd("MGET")
            .arg(&keys[..])
            .cmd("HGETALL")
            .arg(&self.settings)
            .cmd("HMGET")
            .arg(self.stage2_key(super::stage2::EMBEDDING))
            .arg("model")
            .arg("dimension")
            .query(&mut *self.raw.borrow_mut())
            .map_err(|e| raw_remote(&self.url, &e))?;
        if let Some(memo) = self.state.borrow_mut().as_mut() {
            memo.counters = Some(keys.into_iter().zip(values).collect::<BTreeMap<_, _>>());
            memo.settings = settings;
            memo.embedding = embedding;
        }
        Ok(())
    }

    /// Stage 2's embedding model and dimension as the held memo read them; `None` outside a
    /// read view.
    pub(crate) fn held_embedding(&self) -> Result<Option<Embedding>, StoreError> {
        self.load_state()?;
        Ok(self.state.borrow().as_ref().map(|m| m.embedding.clone()))
    }

    /// A plain key's integer value; 0 when it is unset. Within a read view, from its memo.
    pub(crate) fn counter(&self, key: &str) -> Result<u64, StoreError> {
        self.load_state()?;
        let held =
            self.state.borrow().as_ref().and_then(|m| m.counters.as_ref()?.get(key).copied());
        if let Some(value) = held {
            return Ok(value.unwrap_or(0));
        }
        let value: Option<u64> = redis::cmd("GET")
            .arg(key)
            .query(&mut *self.raw.borrow_mut())
            .map_err(|e| raw_remote(&self.url, &e))?;
        if let Some(counters) = self.state.borrow_mut().as_mut().and_then(|m| m.counters.as_mut()) {
            counters.insert(key.to_owned(), value);
        }
        Ok(value.unwrap_or(0))
    }

    /// Set the store setting `name`, or remove it (`None`): one `HSET` or `HDEL` of the
    /// settings hash, seen by every read view begun after it.
    pub(crate) fn set_setting(&self, name: &str, value: Option<&str>) -> Result<(), StoreError> {
        let cmd = match value {
            Some(value) => {
                let mut c = redis::cmd("HSET");
                c.arg(&self.settings).arg(name).arg(value);
                c
            }
            None => {
                let mut c = redis::cmd("HDEL");
                c.arg(&self.settings).arg(name);
                c
            }
        };
        cmd.query::<()>(&mut *self.raw.borrow_mut()).map_err(|e| raw_remote(&self.url, &e))
    }

    /// A store setting. Within a read view, from its memo.
    pub(crate) fn setting_value(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.load_state()?;
        if let Some(memo) = self.state.borrow().as_ref() {
            return Ok(memo.settings.get(key).cloned());
        }
        redis::cmd("HGET")
            .arg(&self.settings)
            .arg(key)
            .query(&mut *self.raw.borrow_mut())
            .map_err(|e| raw_remote(&self.url, &e))
    }
}
