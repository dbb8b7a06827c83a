//! The posting-list blob: a term's documents grouped by impact, highest first.
//!
//! ```text
//! header    magic "CGPL" | version u32 | count u32 | segments u32 | avg_len f64 (the
//!           mean document length the impacts were computed at, for inspection)
//! segments  segments × (impact level u8 | postings u32 | end offset in the body u32 |
//!           highest document i64)
//! body      per segment, its documents ascending as LEB128 varint deltas (the first from 0)
//! ```
//!
//! Fixed-width numbers are little-endian. A posting's impact is the term-frequency part of
//! BM25 ([`Bm25::impact`]) at `avg_len`, quantized to one of 255 levels of `(0, k1 + 1]`
//! ([`level`]): the score a term adds to a document is `idf × impact`, so the postings worth
//! most come first and a search can stop early with the best of every list read ([`crate::top_k`]).

use crate::error::Error;
use crate::rank::Bm25;

const MAGIC: &[u8; 4] = b"CGPL";
const VERSION: u32 = 1;
const HEADER: usize = 24;
const SEGMENT: usize = 17;

/// One document of a term's list, as the build counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posting {
    /// The document (the store's node id), non-negative.
    pub doc: i64,
    /// How often the term occurs in it (at least 1).
    pub tf: u32,
    /// How many tokens the document has (at least `tf`).
    pub len: u32,
}

/// The quantized impact of a posting: `ceil(impact / (k1 + 1) × 255)`, in `1..=255`.
pub fn level(bm25: Bm25, tf: u32, len: u32, avg_len: f64) -> u8 {
    let fraction = bm25.impact(tf, len, avg_len) / (bm25.k1 + 1.0);
    (fraction * 255.0).ceil().clamp(1.0, 255.0) as u8
}

/// The impact a level stands for (the upper end of its interval).
pub fn impact_of(bm25: Bm25, level: u8) -> f64 {
    f64::from(level) / 255.0 * (bm25.k1 + 1.0)
}

/// Encode a term's postings, which must be in strictly ascending `doc` order with
/// non-negative ids and `1 ≤ tf ≤ len`; `bm25` and `avg_len` fix the impacts.
pub fn encode(postings: &[Posting], bm25: Bm25, avg_len: f64) -> Result<Vec<u8>, Error> {
    let input = |detail: String| Error::Input { what: "postings", detail };
    let count = u32::try_from(postings.len())
        .map_err(|_| input(format!("{} postings exceed a list's u32 count", postings.len())))?;
    let mut previous: Option<i64> = None;
    let mut by_level: Vec<Vec<i64>> = vec![Vec::new(); 256];
    for p in postings {
        if p.doc < 0 || previous.is_some_and(|prev| p.doc <= prev) {
            return Err(input(format!("document {} is negative or not after {previous:?}", p.doc)));
        }
        if p.tf == 0 || p.tf > p.len {
            return Err(input(format!("document {}: tf {} outside 1..={}", p.doc, p.tf, p.len)));
        }
        by_level[usize::from(level(bm25, p.tf, p.len, avg_len))].push(p.doc);
        previous = Some(p.doc);
    }
    encode_levels(&by_level, count, avg_len)
}

/// What [`without`] left of a list.
#[derive(Debug, Clone, PartialEq)]
pub enum Pruned {
    /// None of the documents was listed: the blob is unchanged.
    Unchanged,
    /// Every listed document went: the term has no list any more.
    Empty,
    /// The list without them.
    List(Vec<u8>),
}

/// What taking the documents `docs` out of an index does to the lists `lists` of their terms:
/// each term with what [`without`] leaves of its list, and how many of `docs` were found in
/// some list (a build counts only those, so its document count drops by as many). A store
/// writes each result back (or removes the term) and the count into its build.
pub fn without_docs<T>(
    lists: impl IntoIterator<Item = (T, Vec<u8>)>,
    docs: &std::collections::BTreeSet<i64>,
) -> Result<(Vec<(T, Pruned)>, u64), Error> {
    let found = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let gone = |doc: i64| {
        let hit = docs.contains(&doc);
        if hit {
            found.borrow_mut().insert(doc);
        }
        hit
    };
    let mut pruned = Vec::new();
    for (term, list) in lists {
        pruned.push((term, without(&list, &gone)?));
    }
    let found = found.borrow().len() as u64;
    Ok((pruned, found))
}

/// A blob without the documents for which `gone` holds: each remaining posting keeps its
/// impact level and the blob its `avg_len`, so the list equals one built with the same
/// statistics over the remaining documents. Costs a decode and an encode of the one list.
pub fn without(bytes: &[u8], gone: &dyn Fn(i64) -> bool) -> Result<Pruned, Error> {
    let view = ListView::parse(bytes)?;
    let avg_len = f64::from_le_bytes(bytes[16..24].try_into().unwrap_or([0; 8]));
    let mut by_level: Vec<Vec<i64>> = vec![Vec::new(); 256];
    let mut removed = 0u32;
    for s in 0..view.segments() {
        let docs = &mut by_level[usize::from(view.level(s))];
        view.for_each(s, &mut |doc| {
            if gone(doc) {
                removed += 1;
            } else {
                docs.push(doc);
            }
        })?;
    }
    let count = view.count - removed;
    Ok(match (removed, count) {
        (0, _) => Pruned::Unchanged,
        (_, 0) => Pruned::Empty,
        _ => Pruned::List(encode_levels(&by_level, count, avg_len)?),
    })
}

/// Encode documents grouped by impact level (each group ascending).
fn encode_levels(by_level: &[Vec<i64>], count: u32, avg_len: f64) -> Result<Vec<u8>, Error> {
    let input = |detail: String| Error::Input { what: "postings", detail };
    let mut table = Vec::new();
    let mut body = Vec::with_capacity(count as usize * 2);
    let mut segments = 0u32;
    for (lvl, docs) in by_level.iter().enumerate().rev().filter(|(_, d)| !d.is_empty()) {
        let mut base = 0;
        for &doc in docs {
            put_varint(&mut body, (doc - base) as u64);
            base = doc;
        }
        let end = u32::try_from(body.len())
            .map_err(|_| input(format!("{} bytes exceed a list's u32 offsets", body.len())))?;
        table.push(lvl as u8);
        table.extend_from_slice(&(docs.len() as u32).to_le_bytes());
        table.extend_from_slice(&end.to_le_bytes());
        table.extend_from_slice(&base.to_le_bytes());
        segments += 1;
    }
    let mut out = Vec::with_capacity(HEADER + table.len() + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&segments.to_le_bytes());
    out.extend_from_slice(&avg_len.to_le_bytes());
    out.extend_from_slice(&table);
    out.extend_from_slice(&body);
    Ok(out)
}

/// How many documents a blob lists (its term's document frequency), from the header alone.
pub fn count(bytes: &[u8]) -> Result<u32, Error> {
    Ok(ListView::parse(bytes)?.count)
}

/// Every `(document, impact level)` of a blob, in document order.
pub fn decode(bytes: &[u8]) -> Result<Vec<(i64, u8)>, Error> {
    let view = ListView::parse(bytes)?;
    let mut out = Vec::with_capacity(view.count as usize);
    for s in 0..view.segments() {
        let lvl = view.level(s);
        view.for_each(s, &mut |doc| out.push((doc, lvl)))?;
    }
    out.sort_unstable();
    Ok(out)
}

/// A parsed blob: header fields and the segment table, segments decoded on demand.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListView<'a> {
    pub(crate) count: u32,
    table: &'a [u8],
    body: &'a [u8],
}

impl<'a> ListView<'a> {
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<ListView<'a>, Error> {
        let header = bytes.get(..HEADER).ok_or_else(|| {
            Error::Corrupt(format!("{} bytes is shorter than the header", bytes.len()))
        })?;
        if &header[..4] != MAGIC {
            return Err(Error::Corrupt("wrong magic".to_owned()));
        }
        let version = u32_at(header, 4);
        if version != VERSION {
            return Err(Error::Corrupt(format!("unknown format version {version}")));
        }
        let count = u32_at(header, 8);
        let segments = u32_at(header, 12) as usize;
        let rest = &bytes[HEADER..];
        if segments > 255 || rest.len() < segments * SEGMENT {
            return Err(Error::Corrupt(format!("{segments} segments in {} bytes", rest.len())));
        }
        let (table, body) = rest.split_at(segments * SEGMENT);
        let view = ListView { count, table, body };
        let mut total: u64 = 0;
        let mut end = 0;
        for s in 0..segments {
            total += u64::from(view.len(s));
            if view.end(s) < end || (s > 0 && view.level(s) >= view.level(s - 1)) {
                return Err(Error::Corrupt(format!("segment {s} out of order")));
            }
            end = view.end(s);
        }
        if total != u64::from(count) || end != body.len() {
            return Err(Error::Corrupt(format!(
                "segments hold {total} postings in {end} bytes; the header says {count} in {}",
                body.len()
            )));
        }
        Ok(view)
    }

    pub(crate) fn segments(&self) -> usize {
        self.table.len() / SEGMENT
    }

    /// The impact level of segment `s` (levels strictly decrease along the table).
    pub(crate) fn level(&self, s: usize) -> u8 {
        self.table[s * SEGMENT]
    }

    /// Postings in segment `s`.
    pub(crate) fn len(&self, s: usize) -> u32 {
        u32_at(self.table, s * SEGMENT + 1)
    }

    fn end(&self, s: usize) -> usize {
        u32_at(self.table, s * SEGMENT + 5) as usize
    }

    /// The highest document of segment `s`, as its table entry says (decoding checks it).
    pub(crate) fn max_doc(&self, s: usize) -> i64 {
        let mut b = [0; 8];
        b.copy_from_slice(&self.table[s * SEGMENT + 9..s * SEGMENT + 17]);
        i64::from_le_bytes(b)
    }

    /// Call `visit` with every document of segment `s`, ascending.
    pub(crate) fn for_each(&self, s: usize, mut visit: impl FnMut(i64)) -> Result<(), Error> {
        let start = if s == 0 { 0 } else { self.end(s - 1) };
        let mut body = self
            .body
            .get(start..self.end(s))
            .ok_or_else(|| Error::Corrupt(format!("segment {s} lies outside the body")))?;
        let mut doc: i64 = 0;
        for i in 0..self.len(s) {
            let delta = take_varint(&mut body)?;
            if i > 0 && delta == 0 {
                return Err(Error::Corrupt(format!("segment {s}: ids not ascending")));
            }
            doc = i64::try_from(delta)
                .ok()
                .and_then(|d| doc.checked_add(d))
                .ok_or_else(|| Error::Corrupt(format!("segment {s}: id overflows")))?;
            visit(doc);
        }
        if !body.is_empty() || doc != self.max_doc(s) {
            return Err(Error::Corrupt(format!("segment {s} disagrees with its table entry")));
        }
        Ok(())
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take_varint(body: &mut &[u8]) -> Result<u64, Error> {
    // Most deltas of a long list fit one byte.
    if let Some((&byte, rest)) = body.split_first()
        && byte < 0x80
    {
        *body = rest;
        return Ok(u64::from(byte));
    }
    let mut v: u64 = 0;
    for (i, &byte) in body.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *body = &body[i + 1..];
            return Ok(v);
        }
    }
    Err(Error::Corrupt("truncated or overlong varint".to_owned()))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const B: Bm25 = Bm25::FTS5;

    #[test]
    fn round_trip_and_refusals() {
        let list = [
            Posting { doc: 0, tf: 1, len: 1 },
            Posting { doc: 300, tf: 2, len: 9 },
            Posting { doc: i64::MAX, tf: 1, len: 70_000 },
        ];
        let blob = encode(&list, B, 5.0).unwrap();
        let want: Vec<(i64, u8)> =
            list.iter().map(|p| (p.doc, level(B, p.tf, p.len, 5.0))).collect();
        assert_eq!(decode(&blob).unwrap(), want);
        assert_eq!(count(&blob).unwrap(), 3);
        // A short document with the word twice is worth more than a long one with it once.
        assert!(want[1].1 > want[2].1);
        assert!(impact_of(B, level(B, 2, 9, 5.0)) >= B.impact(2, 9, 5.0));
        let unsorted = [Posting { doc: 5, tf: 1, len: 1 }, Posting { doc: 5, tf: 1, len: 1 }];
        assert!(matches!(encode(&unsorted, B, 1.0), Err(Error::Input { .. })));
        let bad_tf = [Posting { doc: 1, tf: 3, len: 2 }];
        assert!(matches!(encode(&bad_tf, B, 1.0), Err(Error::Input { .. })));
        assert!(matches!(decode(&blob[..blob.len() - 1]), Err(Error::Corrupt(_))));
        assert!(matches!(decode(b"CGPL"), Err(Error::Corrupt(_))));
        let mut extra = blob.clone();
        extra.push(0);
        assert!(matches!(decode(&extra), Err(Error::Corrupt(_))));
    }

    #[test]
    fn without_docs_prunes_each_list_and_counts_the_documents_found() {
        let p = |doc| Posting { doc, tf: 1, len: 3 };
        let a = encode(&[p(1), p(2), p(3)], B, 3.0).unwrap();
        let b = encode(&[p(2)], B, 3.0).unwrap();
        let c = encode(&[p(4)], B, 3.0).unwrap();
        // Document 9 is in no list: a build never counted it.
        let docs: std::collections::BTreeSet<i64> = [2, 9].into();
        let (pruned, found) = without_docs([("a", a.clone()), ("b", b), ("c", c)], &docs).unwrap();
        assert_eq!(found, 1);
        let want_a = without(&a, &|d| d == 2).unwrap();
        assert_eq!(pruned, [("a", want_a), ("b", Pruned::Empty), ("c", Pruned::Unchanged)]);
    }

    proptest! {
        #[test]
        fn decode_inverts_encode(mut raw in proptest::collection::vec((0i64..1 << 40, 1u32..50, 0u32..500), 0..600)) {
            raw.sort_by_key(|r| r.0);
            raw.dedup_by_key(|r| r.0);
            let list: Vec<Posting> =
                raw.into_iter().map(|(doc, tf, extra)| Posting { doc, tf, len: tf + extra }).collect();
            let blob = encode(&list, B, 20.0).unwrap();
            let want: Vec<(i64, u8)> = list.iter().map(|p| (p.doc, level(B, p.tf, p.len, 20.0))).collect();
            prop_assert_eq!(decode(&blob).unwrap(), want);
        }

        #[test]
        fn without_equals_encoding_the_rest(
            mut raw in proptest::collection::vec((0i64..1 << 20, 1u32..50, 0u32..500), 1..300),
            gone_mod in 1i64..7,
        ) {
            raw.sort_by_key(|r| r.0);
            raw.dedup_by_key(|r| r.0);
            let list: Vec<Posting> =
                raw.into_iter().map(|(doc, tf, extra)| Posting { doc, tf, len: tf + extra }).collect();
            let gone = |doc: i64| doc % gone_mod == 0;
            let blob = encode(&list, B, 20.0).unwrap();
            let rest: Vec<Posting> = list.iter().copied().filter(|p| !gone(p.doc)).collect();
            let want = match (rest.len(), list.len()) {
                (0, _) => Pruned::Empty,
                (r, l) if r == l => Pruned::Unchanged,
                _ => Pruned::List(encode(&rest, B, 20.0).unwrap()),
            };
            prop_assert_eq!(without(&blob, &gone).unwrap(), want);
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
            let mut blob = b"CGPL\x01\0\0\0".to_vec();
            blob.extend_from_slice(&bytes);
            let _ = decode(&blob);
        }
    }
}
