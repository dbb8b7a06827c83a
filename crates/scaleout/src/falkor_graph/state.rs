//! A read view's state keys (the graph's counters, the settings, the embedding model, what
//! the full-text documents' keys say without a scan and the state of FalkorDB's own vector and
//! full-text indexes) read once: the first read of any of them
//! in a view reads them all, in one round trip (an `MGET` of every known counter, an `HGETALL`
//! of the settings and a few small reads, pipelined), and the view answers from that memo
//! until it ends. A view is a point in time anyway; the recall pipeline asks for several of
//! these keys (generations, checkpoints, settings) and each was a round trip of its own.
//!
//! Only a view holds a memo ([`FalkorGraph::hold_state`], by `ScaleOutStore`'s reads): a
//! worker's fold reads and watches its counters live. A counter not in the known list is read
//! on its first use and memoised too, so a key added later is still read once per view.

use std::collections::BTreeMap;

use ctxgraph_store::StoreError;

use super::{FalkorGraph, raw_remote};
use crate::reply::failure;

/// What a view has read of the state keys.
#[derive(Debug, Default)]
pub(crate) struct StateMemo {
    /// Counters by key (`None`: unset, which reads as 0); `None` until the first read.
    counters: Option<BTreeMap<String, Option<u64>>>,
    /// The settings hash, read with the counters.
    settings: BTreeMap<String, String>,
    /// Stage 2's embedding model and dimension, read with the counters.
    embedding: Embedding,
    /// The full-text documents and the lexical index's build, read with the counters.
    text: TextState,
    /// FalkorDB's own indexes' markers and the counts a search over them starts from, read
    /// with the counters.
    native: NativeState,
}

/// What a view knows of FalkorDB's own vector and full-text indexes (`native_index.rs`,
/// `native_text.rs`) without a further read: every vector search and full-text search
/// starts from these, and each was a round trip per search.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NativeState {
    /// The vector index's dimension (its marker), once every vector has its copy.
    pub(crate) vector_dimension: Option<usize>,
    /// How many vectors are stored (`vector_ids`).
    pub(crate) vectors: u64,
    /// How many of them the IVF index has filed (`vector_lists`).
    pub(crate) vectors_filed: u64,
    /// Whether every full-text document has its copy (the `native_texts` marker).
    pub(crate) texts: bool,
    /// The terms of every document (`text_tokens`), when counted.
    pub(crate) tokens: Option<i64>,
}

/// What a view knows of the full-text documents without a further read: the lexical index's
/// build (`through`, `docs`, `avg_len`, each unset before the first), how many documents
/// there are, and the least and greatest document numbers.
#[derive(Debug, Default, Clone)]
pub(crate) struct TextState {
    /// The build's `through`, `docs` and `avg_len` fields.
    pub(crate) build: (Option<i64>, Option<u64>, Option<f64>),
    /// How many documents (`text_ids`) there are.
    pub(crate) count: u64,
    /// The least document number, if any.
    pub(crate) first: Option<i64>,
    /// The greatest document number, if any.
    pub(crate) last: Option<i64>,
}

impl TextState {
    /// How many documents lie above `after`, when the state alone answers: none past the
    /// last, all below the first.
    pub(crate) fn docs_after(&self, after: i64) -> Option<u64> {
        match (self.first, self.last) {
            (_, None) => Some(0),
            (_, Some(last)) if last <= after => Some(0),
            (Some(first), _) if first > after => Some(self.count),
            _ => None,
        }
    }
}

/// A read of the state keys sent and not answered yet: the counters' keys, in the order asked.
pub(super) struct PendingState {
    keys: Vec<String>,
}

/// Stage 2's embedding model and dimension as the store holds them (either may be unset).
type Embedding = (Option<String>, Option<usize>);

impl FalkorGraph {
    /// Every counter key a read view may ask for: the graph's, the generations of stage 2's
    /// and stage 3's indexes, which recall's vector and lexical phases read first, and the
    /// enrichment epoch, which stage 2 reads with every chunk.
    fn state_keys(&self) -> Vec<String> {
        let mut keys = vec![
            self.checkpoint.clone(),
            self.generation.clone(),
            self.epoch.clone(),
            self.enriched.clone(),
        ];
        keys.extend(
            [
                "text_generation",
                "vector_generation",
                super::stage3::ANN_GENERATION,
                super::stage2::EPOCH,
            ]
            .map(|suffix| self.stage2_key(suffix)),
        );
        // The layout version: whether entities are looked up by name (`entity_names.rs`).
        keys.push(self.layout_key().to_owned());
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
        match self.send_state()? {
            Some(pending) => self.receive_state(pending),
            None => Ok(()),
        }
    }

    /// Send the read of every known counter and the settings, if the view holds a memo not
    /// read yet, without waiting for the reply: [`FalkorGraph::receive_state`] takes it, so a
    /// caller can wait for another connection's reply in between.
    pub(super) fn send_state(&self) -> Result<Option<PendingState>, StoreError> {
        let loaded = self.state.borrow().as_ref().is_none_or(|m| m.counters.is_some());
        if loaded {
            return Ok(None);
        }
        let keys = self.state_keys();
        let mut pipe = redis::pipe();
        pipe.cmd("MGET")
            .arg(&keys[..])
            .cmd("HGETALL")
            .arg(&self.settings)
            .cmd("HMGET")
            .arg(self.stage2_key(super::stage2::EMBEDDING))
            .arg("model")
            .arg("dimension")
            .cmd("HMGET")
            .arg(self.stage2_key("text_build"))
            .arg("through")
            .arg("docs")
            .arg("avg_len");
        let text_ids = self.stage2_key("text_ids");
        pipe.cmd("ZCARD").arg(&text_ids);
        pipe.cmd("ZRANGE").arg(&text_ids).arg(0).arg(0);
        pipe.cmd("ZRANGE").arg(&text_ids).arg(-1).arg(-1);
        pipe.cmd("GET").arg(self.stage2_key(super::native_index::NATIVE_VECTORS));
        pipe.cmd("ZCARD").arg(self.stage2_key("vector_ids"));
        pipe.cmd("HLEN").arg(self.stage2_key(super::stage3::VECTOR_LISTS));
        pipe.cmd("GET").arg(self.stage2_key(super::native_text::NATIVE_TEXTS));
        pipe.cmd("GET").arg(self.stage2_key(super::native_text::TEXT_TOKENS));
        self.raw
            .borrow_mut()
            .send_packed_command(&pipe.get_packed_pipeline())
            .map_err(|e| raw_remote(&self.url, &e))?;
        Ok(Some(PendingState { keys }))
    }

    /// Take the reply of [`FalkorGraph::send_state`] into the memo.
    pub(super) fn receive_state(&self, pending: PendingState) -> Result<(), StoreError> {
        let mut raw = self.raw.borrow_mut();
        // Every reply is read before any is judged, so the connection stays in step.
        let mut next = || {
            raw.recv_response()
                .and_then(redis::Value::extract_error)
                .map_err(|e| raw_remote(&self.url, &e))
        };
        let (values, settings, embedding) = (next(), next(), next());
        let (build, count, first, last) = (next(), next(), next(), next());
        let (vector_dimension, vectors, filed) = (next(), next(), next());
        let (texts, tokens) = (next(), next());
        drop(raw);
        let decode = |e: redis::ParsingError| failure("falkordb", &self.url, &e);
        let values: Vec<Option<u64>> = redis::from_redis_value(values?).map_err(decode)?;
        let settings: BTreeMap<String, String> =
            redis::from_redis_value(settings?).map_err(decode)?;
        let embedding: Embedding = redis::from_redis_value(embedding?).map_err(decode)?;
        let first: Vec<i64> = redis::from_redis_value(first?).map_err(decode)?;
        let last: Vec<i64> = redis::from_redis_value(last?).map_err(decode)?;
        let text = TextState {
            build: redis::from_redis_value(build?).map_err(decode)?,
            count: redis::from_redis_value(count?).map_err(decode)?,
            first: first.first().copied(),
            last: last.first().copied(),
        };
        let texts: Option<String> = redis::from_redis_value(texts?).map_err(decode)?;
        let native = NativeState {
            vector_dimension: redis::from_redis_value(vector_dimension?).map_err(decode)?,
            vectors: redis::from_redis_value(vectors?).map_err(decode)?,
            vectors_filed: redis::from_redis_value(filed?).map_err(decode)?,
            texts: texts.is_some(),
            tokens: redis::from_redis_value(tokens?).map_err(decode)?,
        };
        if let Some(at) = pending.keys.iter().position(|k| k == self.layout_key()) {
            self.note_layout(values.get(at).copied().flatten());
        }
        if let Some(memo) = self.state.borrow_mut().as_mut() {
            memo.counters = Some(pending.keys.into_iter().zip(values).collect::<BTreeMap<_, _>>());
            memo.settings = settings;
            memo.embedding = embedding;
            memo.text = text;
            memo.native = native;
        }
        Ok(())
    }

    /// Stage 2's embedding model and dimension as the held memo read them; `None` outside a
    /// read view.
    pub(crate) fn held_embedding(&self) -> Result<Option<Embedding>, StoreError> {
        self.load_state()?;
        Ok(self.state.borrow().as_ref().map(|m| m.embedding.clone()))
    }

    /// The full-text state as the held memo read it; `None` outside a read view.
    pub(crate) fn held_text(&self) -> Result<Option<TextState>, StoreError> {
        self.load_state()?;
        Ok(self.state.borrow().as_ref().map(|m| m.text.clone()))
    }

    /// FalkorDB's own indexes' state as the held memo read it; `None` outside a read view.
    pub(crate) fn held_native(&self) -> Result<Option<NativeState>, StoreError> {
        self.load_state()?;
        Ok(self.state.borrow().as_ref().map(|m| m.native))
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
