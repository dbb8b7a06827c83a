//! A forget on the Redis log: the forget record and the tombstones of the records it redacts
//! written by one script (`forget.lua`), so no crash and no other writer comes between them.

use ctxgraph_ontology::ValidRecord;
use ctxgraph_store::{Appended, ForgetAppend, Redaction, StoreError};
use redis::Value;

use super::{RedisLog, position_of};

impl RedisLog {
    /// Append the forget `record` and replace each redaction's body with its tombstone or
    /// rewrite (and its id, when the redaction gives a new one), in one script: all of it is
    /// written or none. Nothing is written, and the answer is
    /// [`ForgetAppend::Changed`], when the head is no longer `head` or a record's body is not
    /// the one read (another writer came first: read again). A forget record already stored is
    /// a duplicate and redacts nothing; one whose id holds other content is
    /// [`StoreError::Conflict`].
    pub fn forget_append(
        &mut self,
        record: &ValidRecord,
        recorded_at: &str,
        head: u64,
        redactions: &[Redaction],
    ) -> Result<ForgetAppend, StoreError> {
        let mut call = self.scripts.forget.prepare_invoke();
        let k = &self.keys;
        for key in [&k.head, &k.key, &k.kind, &k.id, &k.at, &k.body, &k.bykind, &k.stream] {
            call.key(key);
        }
        call.arg(recorded_at)
            .arg(head.to_string())
            .arg(record.kind().as_str())
            .arg(record.id())
            .arg(record.canonical());
        for r in redactions {
            call.arg(r.position.to_string())
                .arg(&r.read)
                .arg(&r.tombstone)
                .arg(r.id.as_deref().unwrap_or(""));
        }
        let reply: Value = call.invoke(&mut *self.conn.borrow_mut()).map_err(|e| self.fail(&e))?;
        let pair = self.array(reply, "forget")?;
        let [Value::Int(outcome), Value::Int(p)] = pair.as_slice() else {
            return Err(self.odd("forget", "{outcome, position}"));
        };
        let position = position_of(*p);
        match outcome {
            0 => Ok(ForgetAppend::Done(Appended::New(position))),
            1 => Ok(ForgetAppend::Done(Appended::Duplicate(position))),
            2 => Err(StoreError::Conflict {
                kind: record.kind().as_str(),
                id: record.id().to_owned(),
                position,
            }),
            3 => Ok(ForgetAppend::Changed { position }),
            4 => Err(StoreError::Corruption(format!(
                "the new id of the record at log position {position} is taken by another \
                 record of its kind; nothing was written"
            ))),
            _ => Err(self.odd("forget", "an outcome from 0 to 4")),
        }
    }
}
