//! A posting list decoded once, for a cache that searches it again and again.

use crate::error::Error;
use crate::postings::ListView;

/// A term's posting list with its segments decoded: per segment its impact level and its
/// documents ascending. Searching it ([`crate::top_k_decoded`]) gives what searching its blob
/// gives ([`crate::top_k`]), to the bit, without decoding varints on every search; it takes
/// about three times the blob's memory (four bytes a posting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Per segment: its level, and where its documents end in `docs`.
    segments: Vec<(u8, usize)>,
    docs: Vec<u32>,
}

impl Decoded {
    /// Decode a blob written by [`crate::encode`]. Documents must fit `u32` (the builder
    /// refuses larger ids).
    pub fn new(bytes: &[u8]) -> Result<Decoded, Error> {
        let view = ListView::parse(bytes)?;
        let mut docs = Vec::with_capacity(view.count as usize);
        let mut segments = Vec::with_capacity(view.segments());
        let mut wide = None;
        for s in 0..view.segments() {
            view.for_each(s, |doc| match u32::try_from(doc) {
                Ok(d) => docs.push(d),
                Err(_) => wide = Some(doc),
            })?;
            segments.push((view.level(s), docs.len()));
        }
        if let Some(doc) = wide {
            return Err(Error::Input {
                what: "postings",
                detail: format!("document {doc} does not fit a decoded list's u32 ids"),
            });
        }
        Ok(Decoded { segments, docs })
    }

    /// How many documents the list holds (its term's document frequency).
    pub fn count(&self) -> u32 {
        // As many as the blob's count: parsing checks that its segments add up to it.
        u32::try_from(self.docs.len()).unwrap_or(u32::MAX)
    }

    /// Bytes of memory the list takes (for a cache's bound).
    pub fn heap_bytes(&self) -> usize {
        self.docs.capacity() * 4 + self.segments.capacity() * std::mem::size_of::<(u8, usize)>()
    }

    pub(crate) fn segments(&self) -> usize {
        self.segments.len()
    }

    pub(crate) fn level(&self, s: usize) -> u8 {
        self.segments[s].0
    }

    /// The documents of segment `s`, ascending.
    pub(crate) fn docs(&self, s: usize) -> &[u32] {
        let start = if s == 0 { 0 } else { self.segments[s - 1].1 };
        &self.docs[start..self.segments[s].1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bm25, Posting, decode, encode};

    #[test]
    fn holds_what_the_blob_holds_and_refuses_wide_ids() {
        let list = [
            Posting { doc: 3, tf: 1, len: 4 },
            Posting { doc: 70_000, tf: 3, len: 4 },
            Posting { doc: 90_000, tf: 1, len: 40 },
        ];
        let blob = encode(&list, Bm25::FTS5, 6.0).unwrap();
        let decoded = Decoded::new(&blob).unwrap();
        assert_eq!(decoded.count(), 3);
        let mut pairs: Vec<(i64, u8)> = (0..decoded.segments())
            .flat_map(|s| decoded.docs(s).iter().map(move |&d| (i64::from(d), s)))
            .map(|(d, s)| (d, decoded.level(s)))
            .collect();
        pairs.sort_unstable();
        assert_eq!(pairs, decode(&blob).unwrap());
        assert!(decoded.heap_bytes() >= 12);
        let wide = encode(&[Posting { doc: 1 << 32, tf: 1, len: 1 }], Bm25::FTS5, 1.0).unwrap();
        assert!(matches!(Decoded::new(&wide), Err(Error::Input { .. })));
        assert!(matches!(Decoded::new(&blob[..blob.len() - 1]), Err(Error::Corrupt(_))));
    }
}
